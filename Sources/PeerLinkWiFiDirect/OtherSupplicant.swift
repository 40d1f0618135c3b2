import Foundation
import PeerLink

/// A program other than the D-Bus wpa_supplicant that drives a radio: a wpa_supplicant of its
/// own (dhcpcd's hook on Raspberry Pi OS Bullseye, ifupdown's `wpa-conf`,
/// `wpa_supplicant@wlan0.service`) or hostapd.
///
/// PeerLink must never add such a radio to the D-Bus wpa_supplicant: `CreateInterface` cuts
/// the other program's Wi-Fi even when it fails. Found in the lab (2026-11-26): the D-Bus
/// wpa_supplicant deletes the interface's group keys before it finds the control socket taken
/// and gives up ("couldn't grab this interface"); the station stays associated and its own
/// wpa_supplicant still says COMPLETED, but the radio hears no broadcast or multicast
/// (ARP, IPv6 neighbour discovery, mDNS) until the access point's next group rekey.
struct OtherSupplicant: Sendable, Equatable {
    /// "wpa_supplicant" or "hostapd".
    var program: String
    /// What shows it: the control socket's path and/or the process (pid and command line).
    var evidence: [String]

    /// Why PeerLink leaves `radio` alone, for errors and `peerlink doctor`.
    func why(_ radio: String) -> String {
        let what = program == "hostapd" ? "hostapd" : "a wpa_supplicant other than the one on D-Bus that PeerLink uses"
        return "\(radio) is driven by \(what) (\(evidence.joined(separator: "; "))); PeerLink leaves it alone, since adding it to the D-Bus wpa_supplicant as well would cut that program's Wi-Fi"
    }

    /// What to do about it.
    func fix(_ radio: String) -> String {
        let instead = program == "hostapd"
            ? "stop hostapd on \(radio) while PeerLink should use it"
            : "stop the wpa_supplicant of its own on \(radio) (dhcpcd's hook, ifupdown's wpa-conf, wpa_supplicant@\(radio)) so that PeerLink adds \(radio) to the D-Bus one (moving \(radio) to NetworkManager does not help: it takes down groups it did not start; docs/WIFI-DIRECT.md)"
        return instead + ", or give PeerLink a radio nothing else uses (--wifi)"
    }
}

/// Finds an `OtherSupplicant` from what `/proc` shows to any user: live Unix sockets bound
/// under a control directory (`/proc/net/unix`; a file left by a killed process is not
/// listed) and wpa_supplicant processes started with `-i RADIO`. Call it only for a radio
/// the D-Bus wpa_supplicant does not manage (its own sockets look the same).
enum OtherSupplicantScan {
    /// The first program found driving `radio`, if any. `excludingPID`: the D-Bus
    /// wpa_supplicant's process, whose command line may name interfaces it since dropped.
    static func find(_ radio: String, excludingPID: Int32? = nil, proc: String = "/proc") -> OtherSupplicant? {
        let unix = (try? String(contentsOfFile: "\(proc)/net/unix", encoding: .utf8)) ?? ""
        var found: OtherSupplicant?
        for path in controlSockets(for: radio, procNetUnix: unix) {
            let program = program(ofControlSocket: path) ?? "wpa_supplicant"
            if found == nil { found = OtherSupplicant(program: program, evidence: []) }
            found?.evidence.append("control socket \(path)")
        }
        for (pid, argv) in processes(named: "wpa_supplicant", proc: proc) where pid != excludingPID && interfaces(inArguments: argv).contains(radio) {
            if found == nil { found = OtherSupplicant(program: "wpa_supplicant", evidence: []) }
            found?.evidence.append("pid \(pid): \(argv.joined(separator: " "))")
        }
        return found
    }

    /// The paths of live sockets in `/proc/net/unix` text that are `radio`'s control socket
    /// of a wpa_supplicant or hostapd (`…/wpa_supplicant/wlan0`, `/var/run/hostapd/wlan0`).
    static func controlSockets(for radio: String, procNetUnix text: String) -> [String] {
        guard !radio.isEmpty else { return [] }
        var out: [String] = []
        for line in text.split(separator: "\n").dropFirst() {
            // Num RefCount Protocol Flags Type St Inode [Path]
            let fields = line.split(separator: " ", maxSplits: 7, omittingEmptySubsequences: true)
            guard fields.count == 8, fields[7].hasPrefix("/") else { continue }
            let path = String(fields[7])
            let parts = path.split(separator: "/")
            guard parts.count >= 2, parts[parts.count - 1] == radio, program(ofControlSocket: path) != nil else { continue }
            if !out.contains(path) { out.append(path) }
        }
        return out
    }

    /// "wpa_supplicant" or "hostapd" when the socket's directory is named for one.
    static func program(ofControlSocket path: String) -> String? {
        let parts = path.split(separator: "/")
        guard parts.count >= 2 else { return nil }
        let dir = parts[parts.count - 2]
        if dir.contains("wpa_supplicant") { return "wpa_supplicant" }
        if dir.contains("hostapd") { return "hostapd" }
        return nil
    }

    /// The interfaces a wpa_supplicant command line drives (`-i wlan0`, `-iwlan0`; each `-N`
    /// starts another interface's options).
    static func interfaces(inArguments argv: [String]) -> [String] {
        var out: [String] = []
        var i = 1
        while i < argv.count {
            let a = argv[i]
            if a == "-i", i + 1 < argv.count {
                if !argv[i + 1].isEmpty { out.append(argv[i + 1]) }
                i += 2
                continue
            }
            if a.hasPrefix("-i"), a.count > 2 { out.append(String(a.dropFirst(2))) }
            i += 1
        }
        return out
    }

    /// The argument vector of a NUL-separated `/proc/PID/cmdline`.
    static func arguments(ofCmdline bytes: [UInt8]) -> [String] {
        bytes.split(separator: 0, omittingEmptySubsequences: false)
            .map { String(decoding: $0, as: UTF8.self) }
            .reversed().drop { $0.isEmpty }.reversed()
    }

    /// Processes whose `comm` is `name`, with their arguments (readable ones only).
    private static func processes(named name: String, proc: String) -> [(Int32, [String])] {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: proc) else { return [] }
        var out: [(Int32, [String])] = []
        for e in entries {
            guard let pid = Int32(e),
                  let comm = try? String(contentsOfFile: "\(proc)/\(e)/comm", encoding: .utf8),
                  comm.trimmingCharacters(in: .whitespacesAndNewlines) == name,
                  let data = FileManager.default.contents(atPath: "\(proc)/\(e)/cmdline") else { continue }
            out.append((pid, arguments(ofCmdline: [UInt8](data))))
        }
        return out
    }
}
