import Foundation
import PeerLink

/// Whether new interfaces (the Wi-Fi Direct group interfaces wpa_supplicant creates) get
/// optimistic IPv6 link-local addresses (RFC 4429). Without them duplicate address detection
/// on a group interface takes a random delay of up to a second, then a second of probing: the
/// joiner waits for it before it dials, and the host, which hands its address out at once, is
/// reachable only after its own. With them the host is reachable at once, and the joiner's
/// detection starts without the random delay; the joiner still waits for it to end, as the
/// kernel resolves no neighbour from an optimistic address
/// (`IPv6InterfaceAddress.isUsableLinkLocal`).
///
/// Only the machine's administrator can turn it on (`sysctl`); PeerLink reads the settings
/// so that `peerlink doctor` can say what they cost and how to change them. The rule is the
/// kernel's (`addrconf_add_linklocal`, CONFIG_IPV6_OPTIMISTIC_DAD): a new interface's
/// link-local address is optimistic when `optimistic_dad` is set in `all` or in `default`
/// (which the new interface copies), unless `all.forwarding` is on.
public struct OptimisticDAD: Sendable, Equatable {
    /// `net.ipv6.conf.all.optimistic_dad`; nil when the file is missing (a kernel built
    /// without optimistic DAD, or without IPv6).
    public var allOptimistic: Bool?
    /// `net.ipv6.conf.default.optimistic_dad`.
    public var defaultOptimistic: Bool?
    /// `net.ipv6.conf.all.forwarding`: a router gets no optimistic addresses.
    public var forwarding: Bool

    /// The lines for `/etc/sysctl.d/`: optimistic addresses for interfaces created from now
    /// on, preferred as source addresses (`use_optimistic`).
    public static let sysctlLines = ["net.ipv6.conf.default.optimistic_dad = 1", "net.ipv6.conf.default.use_optimistic = 1"]

    /// Whether group interfaces created now get optimistic link-local addresses.
    public var isOn: Bool {
        !forwarding && (allOptimistic == true || defaultOptimistic == true)
    }

    /// Reads the settings under `root` (`/proc/sys/net/ipv6/conf`).
    public static func read(root: String = "/proc/sys/net/ipv6/conf") -> OptimisticDAD {
        func flag(_ path: String) -> Bool? {
            guard let text = try? String(contentsOfFile: "\(root)/\(path)", encoding: .utf8),
                  let value = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) else { return nil }
            return value != 0
        }
        return OptimisticDAD(allOptimistic: flag("all/optimistic_dad"), defaultOptimistic: flag("default/optimistic_dad"),
                             forwarding: flag("all/forwarding") ?? false)
    }

    /// `peerlink doctor`'s line. Never a failure: without it every set-up still works, each
    /// side only waits for DAD; the fix is then a hint.
    public var doctorCheck: DoctorCheck {
        let name = "IPv6 optimistic DAD"
        let waits = "a Wi-Fi joiner waits 1–2 s for duplicate address detection, and the host is reachable only after its own"
        if allOptimistic == nil && defaultOptimistic == nil {
            return DoctorCheck(name: name, ok: true,
                               detail: "not in this kernel (no net.ipv6.conf.*.optimistic_dad): \(waits)",
                               fix: nil)
        }
        if isOn {
            return DoctorCheck(name: name, ok: true,
                               detail: "on: a Wi-Fi host is reachable on its group address at once, and the joiner's duplicate address detection takes 1 s instead of 1–2 s",
                               fix: nil)
        }
        if forwarding {
            return DoctorCheck(name: name, ok: true,
                               detail: "off while IPv6 forwarding is on (net.ipv6.conf.all.forwarding = 1): \(waits)",
                               fix: nil)
        }
        return DoctorCheck(name: name, ok: true,
                           detail: "off: \(waits)",
                           fix: "to save up to a second per set-up, as root: printf '%s\\n' '\(Self.sysctlLines.joined(separator: "' '"))' > /etc/sysctl.d/60-peerlink-wifi.conf && sysctl --system (affects interfaces created afterwards)")
    }
}
