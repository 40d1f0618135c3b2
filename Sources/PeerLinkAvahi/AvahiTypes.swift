import CAvahi
import PeerLink
import PeerLinkWire

/// One way to reach a resolved DNS-SD service: a numeric address, a port and the interface
/// it was seen on.
public struct ServiceEndpoint: Sendable, Hashable {
    /// Numeric IPv4 or IPv6 address. IPv6 link-local addresses come unscoped (`fe80::…`);
    /// use `interfaceIndex` as the scope.
    public var host: String
    /// The service's TCP port, from its SRV record.
    public var port: UInt16
    /// Kernel interface index the service was found on.
    public var interfaceIndex: Int32

    /// Makes an endpoint; `host` is a numeric address, unscoped for IPv6 link-local.
    public init(host: String, port: UInt16, interfaceIndex: Int32) {
        self.host = host
        self.port = port
        self.interfaceIndex = interfaceIndex
    }
}

/// A service instance as the browser reports it: every interface/protocol on which the
/// same service name was seen is merged into one value.
public struct ResolvedService: Sendable, Hashable {
    /// The DNS-SD instance name (for example "Alice's laptop").
    public var name: String
    /// TXT record as a dictionary; entries without `=` have the value "".
    public var txt: [String: String]
    /// Union of the endpoints of every interface/protocol instance, sorted (IPv4 first).
    public var endpoints: [ServiceEndpoint]

    /// Makes a resolved service from its instance name, TXT entries and endpoints.
    public init(name: String, txt: [String: String], endpoints: [ServiceEndpoint]) {
        self.name = name
        self.txt = txt
        self.endpoints = endpoints
    }
}

/// Events of an ``AvahiBrowser``.
public enum AvahiBrowseEvent: Sendable {
    /// A service name was resolved for the first time.
    case found(ResolvedService)
    /// Its endpoints or TXT changed.
    case updated(ResolvedService)
    /// The last interface/protocol instance of the service went away (or the daemon did,
    /// see ``daemonUnavailable(_:)``).
    case lost(name: String)
    /// avahi-daemon (or the D-Bus bus) is gone; the browser keeps retrying. Every known
    /// service is reported `lost` right after this event.
    case daemonUnavailable(String)
    /// The daemon is back after `daemonUnavailable`; browsing has restarted.
    case daemonAvailable
}

/// Events of an ``AvahiPublisher``.
public enum AvahiPublishEvent: Sendable {
    /// The service is announced under `name` (again after every daemon restart).
    case registered(name: String)
    /// The name collided with another service on the network; the publisher now uses `to`.
    case renamed(from: String, to: String)
    /// avahi-daemon (or the D-Bus bus) is gone; the publisher re-registers when it is back.
    case daemonUnavailable(String)
    /// Registration failed for another reason.
    case failed(String)
}

/// Errors of the Avahi discovery edge. `description` is a complete sentence.
public enum AvahiError: Error, CustomStringConvertible, Sendable, Equatable {
    /// Nothing accepts D-Bus connections at `address`.
    case noSystemBus(address: String, detail: String)
    /// The bus works but nobody owns `org.freedesktop.Avahi` on it.
    case daemonNotRunning(address: String)
    /// `busAddress` was given but this process cannot select a bus (see AvahiBus.swift).
    case busSelectionUnavailable(address: String)
    /// An argument (service type, name, TXT) is invalid.
    case invalidArgument(String)
    /// libavahi-client reported an error.
    case client(code: Int32, message: String)
    /// The object was stopped.
    case stopped

    public var description: String {
        switch self {
        case let .noSystemBus(address, detail):
            return "no D-Bus system bus at \(address) (\(detail))"
        case let .daemonNotRunning(address):
            return "avahi-daemon is not running (nothing owns org.freedesktop.Avahi on the D-Bus system bus at \(address)); start it, e.g. `systemctl start avahi-daemon`"
        case let .busSelectionUnavailable(address):
            return "cannot use the D-Bus bus \(address): this executable does not export PeerLink's dbus_bus_get_private override, so libavahi-client can only reach the process's default system bus"
        case let .invalidArgument(message):
            return "invalid argument: \(message)"
        case let .client(code, message):
            return "avahi client error \(code): \(message)"
        case .stopped:
            return "the Avahi publisher or browser has been stopped"
        }
    }
}

// MARK: - TXT helpers

enum AvahiTXT {
    /// Checks a TXT dictionary the way DNS-SD requires (RFC 6763 §6).
    static func validate(_ txt: [String: String]) throws {
        var total = 0
        for (key, value) in txt {
            guard !key.isEmpty else { throw AvahiError.invalidArgument("TXT keys must not be empty") }
            guard !key.contains("="), key.utf8.allSatisfy({ $0 >= 0x20 && $0 <= 0x7e }) else {
                throw AvahiError.invalidArgument("TXT key \"\(key)\" must be printable ASCII without '='")
            }
            let length = key.utf8.count + 1 + value.utf8.count
            guard length <= 255 else {
                throw AvahiError.invalidArgument("TXT entry \"\(key)\" is \(length) bytes; the limit is 255")
            }
            total += length + 1
        }
        guard total <= 8900 else { throw AvahiError.invalidArgument("TXT record is \(total) bytes; keep it under 8900") }
    }

    /// Builds an AvahiStringList ("key=value" entries, sorted by key). Caller frees it with
    /// `avahi_string_list_free`. Returns nil for an empty dictionary.
    static func makeList(_ txt: [String: String]) -> UnsafeMutablePointer<AvahiStringList>? {
        var list: UnsafeMutablePointer<AvahiStringList>? = nil
        for key in txt.keys.sorted().reversed() {  // avahi prepends
            let value = txt[key] ?? ""
            list = avahi_string_list_add_pair(list, key, value)
        }
        return list
    }

    /// The raw entries of an AvahiStringList, in list order.
    static func entries(_ list: UnsafeMutablePointer<AvahiStringList>?) -> [[UInt8]] {
        var out: [[UInt8]] = []
        var node = list
        while let current = node {
            if let text = avahi_string_list_get_text(current) {
                out.append(Array(UnsafeBufferPointer(start: text, count: Int(avahi_string_list_get_size(current)))))
            }
            node = avahi_string_list_get_next(current)
        }
        return out
    }

    /// Parses an AvahiStringList into a dictionary with PeerLink's one TXT parser
    /// (`TXTRecord.decode(entries:)`, RFC 6763 §6: first occurrence of a key wins, ignoring
    /// case; entries without '=' map to ""). A record that breaks the rules (not UTF-8, an
    /// entry over 255 bytes) reads as empty, so the service is ignored as not a PeerLink one.
    static func parse(_ list: UnsafeMutablePointer<AvahiStringList>?) -> [String: String] {
        (try? TXTRecord.decode(entries: entries(list))) ?? [:]
    }
}

func avahiErrorString(_ code: Int32) -> String {
    guard let text = avahi_strerror(code) else { return "error \(code)" }
    return String(cString: text)
}

/// Validates a DNS-SD service type such as "_field-demo._tcp".
func avahiValidateType(_ type: String) throws {
    guard avahi_is_valid_service_type_strict(type) != 0 else {
        if type.hasPrefix("_"), let dot = type.firstIndex(of: "."), type.distance(from: type.startIndex, to: dot) == 2 {
            throw AvahiError.invalidArgument("avahi-daemon refuses one-character service types such as \"\(type)\"; use a service type of 2-15 characters")
        }
        throw AvahiError.invalidArgument("\"\(type)\" is not a DNS-SD service type like \"_name._tcp\" or \"_name._udp\"")
    }
}
