import Foundation
import PeerLink
import PeerLinkAvahi
import PeerLinkBluetooth
#if canImport(Glibc)
import Glibc
#endif

/// Looks at this machine for what each medium needs.
public enum Doctor {
    /// Runs every check. `busAddress` overrides the D-Bus system bus (as `DBUS_SYSTEM_BUS_ADDRESS`).
    public static func run(busAddress: String? = nil) -> [MediumReport] {
        [ip(busAddress: busAddress), DoctorBluetooth.report()]
    }

    /// `run` on a thread of its own, for async callers: its D-Bus round trips may take seconds.
    public static func report(busAddress: String? = nil) async -> [MediumReport] {
        await BlockingCall.run("pl.doctor") { run(busAddress: busAddress) }
    }

    static func ip(busAddress: String?) -> MediumReport {
        var checks: [DoctorCheck] = []
        let ifaces = interfacesWithAddresses()
        checks.append(ifaces.isEmpty
            ? DoctorCheck(name: "network interface", ok: false, detail: "no interface besides loopback is up with an address",
                          fix: "connect Wi-Fi or Ethernet (ip -br addr shows what there is)")
            : DoctorCheck(name: "network interface", ok: true, detail: ifaces.joined(separator: ", "), fix: nil))
        let bus = busAddress ?? ProcessInfo.processInfo.environment["DBUS_SYSTEM_BUS_ADDRESS"] ?? "unix:path=/var/run/dbus/system_bus_socket"
        let busCheck = checkBus(bus)
        checks.append(busCheck)
        if busCheck.ok {
            switch AvahiProbe.check(busAddress: busAddress) {
            case let .success(version):
                checks.append(DoctorCheck(name: "avahi-daemon", ok: true, detail: "running (\(version))", fix: nil))
            case let .failure(e):
                checks.append(DoctorCheck(name: "avahi-daemon", ok: false, detail: "\(e)",
                                          fix: "apt-get install avahi-daemon, then systemctl start avahi-daemon"))
            }
        } else {
            checks.append(DoctorCheck(name: "avahi-daemon", ok: false, detail: "not checked: it needs the D-Bus system bus",
                                      fix: "start D-Bus first, then avahi-daemon"))
        }
        do {
            let l = try TCPTransport().listen(port: 0) { $0.close() }
            checks.append(DoctorCheck(name: "TCP listen", ok: true, detail: "can listen (tried port \(l.port))", fix: nil))
            l.close()
        } catch {
            checks.append(DoctorCheck(name: "TCP listen", ok: false, detail: "\(error)", fix: "check firewall and socket permissions"))
        }
        return MediumReport(medium: "ip", usable: checks.allSatisfy(\.ok), checks: checks)
    }

    static func checkBus(_ address: String) -> DoctorCheck {
        let name = "D-Bus system bus"
        guard let pathPart = address.split(separator: ",").first(where: { $0.hasPrefix("unix:path=") }) else {
            return DoctorCheck(name: name, ok: true, detail: "\(address) (not a unix path; not probed)", fix: nil)
        }
        let path = String(pathPart.dropFirst("unix:path=".count))
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return DoctorCheck(name: name, ok: false, detail: "cannot create a socket", fix: nil) }
        defer { close(fd) }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: addr.sun_path) else {
            return DoctorCheck(name: name, ok: false, detail: "socket path too long: \(path)", fix: nil)
        }
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            for (i, b) in bytes.enumerated() { raw[i] = b }
        }
        let r = withUnsafePointer(to: &addr) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        if r == 0 { return DoctorCheck(name: name, ok: true, detail: "reachable at \(path)", fix: nil) }
        let why = String(cString: strerror(errno))
        let fix = errno == EACCES ? "run as a user allowed on the system bus" : "apt-get install dbus, then systemctl start dbus"
        return DoctorCheck(name: name, ok: false, detail: "cannot connect to \(path): \(why)", fix: fix)
    }

    static func interfacesWithAddresses() -> [String] {
        var head: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&head) == 0 else { return [] }
        defer { freeifaddrs(head) }
        var names: Set<String> = []
        var p = head
        while let cur = p {
            let flags = Int32(cur.pointee.ifa_flags)
            if let addr = cur.pointee.ifa_addr, flags & Int32(IFF_UP) != 0, flags & Int32(IFF_LOOPBACK) == 0,
               addr.pointee.sa_family == sa_family_t(AF_INET) || addr.pointee.sa_family == sa_family_t(AF_INET6) {
                names.insert(String(cString: cur.pointee.ifa_name))
            }
            p = cur.pointee.ifa_next
        }
        return names.sorted()
    }
}
