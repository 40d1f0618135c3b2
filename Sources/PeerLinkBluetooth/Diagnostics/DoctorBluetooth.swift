import CPeerLinkSys
import Foundation
import PeerLink
import PeerLinkDBus
#if canImport(Glibc)
import Glibc
#endif

/// `peerlink doctor`'s Bluetooth report: the kernel, adapters, rfkill, bluetoothd, BlueZ
/// discovery, pairings that refuse PeerLink, and when a lost peer is reported.
package enum DoctorBluetooth {
    package static func report() -> MediumReport {
        var checks: [DoctorCheck] = []
        let afBluetooth: Int32 = 31, btprotoL2CAP: Int32 = 0
        let fd = socket(afBluetooth, Int32(SOCK_SEQPACKET.rawValue), btprotoL2CAP)
        if fd < 0 {
            let e = errno
            let (detail, fix): (String, String) = switch e {
            case EAFNOSUPPORT: ("the kernel has no Bluetooth support (socket(AF_BLUETOOTH) fails: address family not supported)",
                                "load it with `modprobe bluetooth`; on a kernel built without it, use another machine or the VM lab (scripts/bt-lab.sh)")
            case EPERM, EACCES: ("not permitted to open Bluetooth sockets", "run as a user with access to Bluetooth (or root)")
            default: ("socket(AF_BLUETOOTH) failed: \(String(cString: strerror(e)))", "check the kernel's Bluetooth modules")
            }
            checks.append(DoctorCheck(name: "kernel Bluetooth support", ok: false, detail: detail, fix: fix))
        } else {
            close(fd)
            checks.append(DoctorCheck(name: "kernel Bluetooth support", ok: true, detail: "AF_BLUETOOTH sockets work", fix: nil))
        }
        let adapters = ((try? FileManager.default.contentsOfDirectory(atPath: "/sys/class/bluetooth")) ?? [])
            .filter { $0.hasPrefix("hci") && !$0.contains(":") }.sorted()
        if adapters.isEmpty {
            checks.append(DoctorCheck(name: "adapter", ok: false, detail: "no Bluetooth adapter in /sys/class/bluetooth",
                                      fix: "plug in a Bluetooth adapter (a USB dongle works); `rfkill list` shows radios"))
        } else {
            checks.append(DoctorCheck(name: "adapter", ok: true, detail: adapters.joined(separator: ", "), fix: nil))
            let up = poweredAdapters()
            for a in adapters {
                let powered = up[a] ?? false
                checks.append(DoctorCheck(name: "\(a) power", ok: powered, detail: powered ? "powered on" : "powered off (or state unknown)",
                                          fix: powered ? nil : "power it on: `bluetoothctl power on` or `btmgmt --index \(a.dropFirst(3)) power on`"))
                if powered, let index = ManagementSocket.index(of: a) { checks.append(reachabilityCheck(a, info: Result { try ManagementSocket.controllerInfo(index: index) })) }
            }
        }
        for (name, blocked) in rfkillBluetooth() where blocked {
            checks.append(DoctorCheck(name: "rfkill \(name)", ok: false, detail: "Bluetooth radio is blocked", fix: "rfkill unblock bluetooth"))
        }
        let daemon = processID("bluetoothd")
        let running = daemon != nil
        checks.append(DoctorCheck(name: "bluetoothd", ok: running, detail: running ? "running" : "not running",
                                  fix: running ? nil : "apt-get install bluez, then systemctl start bluetooth"))
        checks.append(blueZDiscoveryCheck())
        if running { checks.append(contentsOf: pairingChecks()) }
        if let daemon { checks.append(lostDelayCheck(bluetoothdPID: daemon)) }
        return MediumReport(medium: "bluetooth", usable: checks.allSatisfy(\.ok), checks: checks)
    }

    /// Whether `--media bluetooth` can browse and advertise: bluetoothd on the bus at
    /// `busAddress` (nil = the system bus), with a powered adapter that offers LE advertising
    /// (`org.bluez.LEAdvertisingManager1`).
    static func blueZDiscoveryCheck(busAddress: String? = nil) -> DoctorCheck {
        let name = "PeerLink Bluetooth discovery"
        let objects: [String: [String: [String: DBusValue]]]
        do {
            let bus: DBusConnection
            do { bus = try DBusConnection(address: busAddress) } catch let f as DBusFailure { throw BlueZError(f) }
            objects = try BlueZObjects.managedObjects(bus)
        } catch {
            return DoctorCheck(name: name, ok: false, detail: "\(error)", fix: "start bluetoothd (systemctl start bluetooth); until then use --media ip")
        }
        let adapters = objects.compactMap { path, ifaces -> (BlueZAdapter, Bool)? in
            guard let a = ifaces["org.bluez.Adapter1"] else { return nil }
            let adapter = BlueZAdapter(path: path, address: a["Address"]?.string ?? "", powered: a["Powered"]?.bool ?? false)
            return (adapter, ifaces["org.bluez.LEAdvertisingManager1"] != nil)
        }.sorted { $0.0.path < $1.0.path }
        let summary = adapters.map { "\($0.0.name) \($0.0.address) \($0.0.powered ? "powered" : "off")\($0.1 ? ", LE advertising" : "")" }
            .joined(separator: "; ")
        guard !adapters.isEmpty else {
            return DoctorCheck(name: name, ok: false, detail: "bluetoothd runs but manages no adapter", fix: "plug in a Bluetooth adapter; `btmgmt info` lists controllers")
        }
        guard let ready = adapters.first(where: { $0.0.powered && $0.1 }) else {
            let anyPowered = adapters.contains { $0.0.powered }
            return DoctorCheck(name: name, ok: false,
                               detail: anyPowered ? "no powered adapter offers LE advertising (\(summary)); PeerLink finds peers through LE adverts" : "every adapter is powered off (\(summary))",
                               fix: anyPowered ? "use an adapter with Bluetooth Low Energy (4.0 or later) and BlueZ ≥ 5.48" : "power one on: `bluetoothctl power on`")
        }
        return DoctorCheck(name: name, ok: true,
                           detail: "bluetoothd on D-Bus (\(summary)): --media bluetooth browses and advertises on \(ready.0.name) by default", fix: nil)
    }

    /// Pairings that make BlueZ refuse connections with a peer (`BluetoothPairingProblem`):
    /// one failing check per problem, else one passing check; nothing when bluetoothd's device
    /// list cannot be read (the discovery check says why).
    static func pairingChecks(busAddress: String? = nil) -> [DoctorCheck] {
        guard let bus = try? DBusConnection(address: busAddress), let objects = try? BlueZObjects.managedObjects(bus) else { return [] }
        return pairingChecks(objects)
    }

    static func pairingChecks(_ objects: [String: [String: [String: DBusValue]]]) -> [DoctorCheck] {
        let problems = BluetoothPairingProblem.find(in: objects)
        guard problems.isEmpty else {
            return problems.map { DoctorCheck(name: "\($0.adapter) pairing with \($0.address)", ok: false, detail: "\($0)", fix: $0.fix) }
        }
        let bonds = BluetoothPairingProblem.bondCount(in: objects)
        let others = bonds == 0 ? "no bonds" : "\(bonds) bonded device\(bonds == 1 ? "" : "s"), none advertising PeerLink"
        return [DoctorCheck(name: "Bluetooth pairings", ok: true,
                            detail: "\(others): nothing refuses PeerLink connections (PeerLink pairs afresh, unbonded, on every link)", fix: nil)]
    }

    /// Whether unpaired peers can open BR/EDR channels to adapter `name`, from its mgmt settings.
    static func reachabilityCheck(_ name: String, info: Result<ControllerInfo, Error>) -> DoctorCheck {
        let check = "\(name) reachable"
        let index = name.dropFirst(3)
        switch info {
        case let .failure(e):
            return DoctorCheck(name: check, ok: false, detail: "cannot read its settings: \(e)", fix: "`btmgmt --index \(index) info` shows them")
        case let .success(i) where !i.current.contains(.bredr):
            return DoctorCheck(name: check, ok: false, detail: "BR/EDR is off (settings: \(i.current.names.joined(separator: " "))): peers cannot connect over RFCOMM or L2CAP BR/EDR",
                               fix: "`btmgmt --index \(index) bredr on` (with the adapter powered off)")
        case let .success(i) where i.current.contains(.connectable):
            return DoctorCheck(name: check, ok: true, detail: "connectable: unpaired peers can connect", fix: nil)
        case .success:
            return DoctorCheck(name: check, ok: true,
                               detail: "not connectable now (bluetoothd turns it off): unpaired peers cannot connect until a PeerLink advertiser (receive, advertise) turns it on through bluetoothd, which it does while it advertises",
                               fix: nil)
        }
    }

    /// Adapters and their HCI_UP flag from the kernel (HCIGETDEVLIST on a raw HCI socket).
    static func poweredAdapters() -> [String: Bool] {
        let fd = socket(31, Int32(SOCK_RAW.rawValue), 1)  // AF_BLUETOOTH, BTPROTO_HCI
        guard fd >= 0 else { return [:] }
        defer { close(fd) }
        // struct hci_dev_list_req { u16 dev_num; struct hci_dev_req { u16 dev_id; u32 dev_opt; } dev_req[16]; }
        var buf = [UInt8](repeating: 0, count: 4 + 16 * 8)
        buf[0] = 16
        let hciGetDevList: UInt = 0x800448d2
        let r = buf.withUnsafeMutableBytes { peerlink_ioctl_ptr(fd, hciGetDevList, $0.baseAddress) }
        guard r == 0 else { return [:] }
        let count = Int(buf[0]) | Int(buf[1]) << 8
        var out: [String: Bool] = [:]
        for i in 0..<min(count, 16) {
            let o = 4 + i * 8
            let id = Int(buf[o]) | Int(buf[o + 1]) << 8
            let opt = UInt32(buf[o + 4]) | UInt32(buf[o + 5]) << 8 | UInt32(buf[o + 6]) << 16 | UInt32(buf[o + 7]) << 24
            out["hci\(id)"] = opt & 1 != 0
        }
        return out
    }

    static func rfkillBluetooth() -> [(String, Bool)] {
        let base = "/sys/class/rfkill"
        return ((try? FileManager.default.contentsOfDirectory(atPath: base)) ?? []).compactMap { d in
            func read(_ f: String) -> String? {
                (try? String(contentsOfFile: "\(base)/\(d)/\(f)", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
            }
            guard read("type") == "bluetooth" else { return nil }
            return (d, read("soft") == "1" || read("hard") == "1")
        }
    }

    /// Informational: how long after a peer's last advert bluetoothd drops its device, which
    /// is when a browser reports the peer lost (see `BlueZMainConf`).
    static func lostDelayCheck(bluetoothdPID pid: String) -> DoctorCheck {
        let cmdline = (try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/cmdline"))) ?? Data()
        let args = cmdline.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
        let path = BlueZMainConf.path(bluetoothdArguments: args)
        let conf = (try? String(contentsOfFile: path, encoding: .utf8)).map { BlueZMainConf(text: $0) }
        return DoctorCheck(name: "lost-peer delay", ok: true, detail: lostDelayDetail(conf, path: path), fix: nil)
    }

    /// What `lostDelayCheck` says for the configuration read from `path` (nil: not readable).
    static func lostDelayDetail(_ conf: BlueZMainConf?, path: String) -> String {
        let seconds = conf?.effectiveTemporaryTimeout ?? BlueZMainConf.defaultTemporaryTimeout
        let source = switch conf {
        case nil: "bluetoothd's default assumed; \(path) is not readable"
        case let c? where c.temporaryTimeout == nil: "bluetoothd's default; \(path) does not set TemporaryTimeout"
        default: "TemporaryTimeout in \(path)"
        }
        if seconds == 0 {
            return "bluetoothd never forgets a device (TemporaryTimeout = 0 in \(path)), so a Bluetooth peer that goes away is "
                + "never reported lost; set it under [General] (e.g. 10) and restart bluetoothd"
        }
        let hint = seconds > 10 ? "; to hear of it sooner, set TemporaryTimeout under [General] in \(path) and restart bluetoothd" : ""
        return "a Bluetooth peer that goes away is reported lost \(seconds) s after its last advert (\(source))\(hint)"
    }

    /// The PID of a running process named `name`, if any.
    static func processID(_ name: String) -> String? {
        let pids = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return pids.first { pid in
            guard pid.allSatisfy(\.isNumber) else { return false }
            return (try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) == name
        }
    }
}
