import Foundation
import PeerLinkCore
import Synchronization

/// The kind of radio or network a link runs over: a name ("tcp", "rfcomm", "wifi-direct") and
/// the traits its plug-in declared. Media are open: a new medium declares itself with
/// `Medium.register(_:traits:)` in its own folder, and nothing that handles media switches over
/// a closed list (docs/ADDING-A-MEDIUM.md).
public struct Medium: Hashable, Sendable, Codable, CustomStringConvertible {
    /// The medium's name as written in endpoints, reports and on the command line.
    public let rawValue: String

    /// The medium named `rawValue`, registered or not; an unregistered name gets
    /// `MediumTraits.unknown`.
    public init(rawValue: String) { self.rawValue = rawValue }

    public init(from decoder: Decoder) throws { rawValue = try decoder.singleValueContainer().decode(String.self) }
    public func encode(to encoder: Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(rawValue)
    }

    public var description: String { rawValue }

    /// What this medium declared about itself (defaults for a name nobody registered).
    public var traits: MediumTraits { MediumRegistry.shared.traits(of: rawValue) }
    /// How the link policy classifies this medium.
    public var linkClass: LinkClass { traits.linkClass }
    /// True for Bluetooth media.
    public var isBluetooth: Bool { traits.linkClass == .bluetooth }

    /// Declares a medium and its traits; returns it. Registering a name again replaces its traits.
    @discardableResult
    public static func register(_ name: String, traits: MediumTraits) -> Medium {
        MediumRegistry.shared.register(name, traits)
        return Medium(rawValue: name)
    }

    /// Every registered medium, in registration order.
    public static var registered: [Medium] { MediumRegistry.shared.names().map(Medium.init(rawValue:)) }

    // The media of this target. They are declared here so that a name read from the network
    // resolves before any transport of that medium was created; a medium of another target
    // (`rfcomm`, `l2cap` in PeerLinkBluetooth, `wifi-direct` in PeerLinkWiFiDirect) declares
    // itself there and resolves once that target named it.
    /// TCP over any IP network.
    public static let tcp = register("tcp", traits: MediumTraits(linkClass: .ip, typicalBytesPerSecond: 10_000_000, endpoint: .ipAddress))
    /// UDP datagrams beside a TCP link (unreliable sends).
    public static let udp = register("udp", traits: MediumTraits(linkClass: .ip, typicalBytesPerSecond: 10_000_000, endpoint: .ipAddress))
    /// In-process links for tests and the harness.
    public static let memory = register("memory", traits: MediumTraits(linkClass: .other, typicalBytesPerSecond: 10_000_000, endpoint: .name))
}

/// What a medium declares about itself: enough for the policy, path selection, discovery and
/// the CLI to handle it without knowing it by name.
public struct MediumTraits: Sendable, Equatable {
    /// How endpoints of the medium are written and compared.
    public enum EndpointSyntax: Sendable, Equatable {
        /// An IP address (IPv6 in brackets in URLs) and a port.
        case ipAddress
        /// A Bluetooth device address and a channel or PSM; one path per remote device.
        case bluetoothAddress
        /// An opaque name (in-memory media).
        case name
    }

    /// Class for the link policy (Bluetooth first, Wi-Fi first, ...).
    public var linkClass: LinkClass
    /// Throughput assumed before a link's own measurement exists, in bytes per second.
    public var typicalBytesPerSecond: Int
    /// Largest frame worth sending on one link of the medium (nil: the wire maximum).
    public var maxFrame: Int?
    /// True when a link of this medium only exists after the two peers negotiate it inside an
    /// existing session (e.g. a Wi-Fi Direct group): it is never dialled from discovery alone.
    public var negotiated: Bool
    /// How the medium's endpoints are written and compared.
    public var endpoint: EndpointSyntax

    /// Declares the traits; `typicalBytesPerSecond` is in bytes per second and `maxFrame` in bytes
    /// (nil for the wire maximum).
    public init(linkClass: LinkClass, typicalBytesPerSecond: Int, maxFrame: Int? = nil, negotiated: Bool = false,
                endpoint: EndpointSyntax) {
        self.linkClass = linkClass
        self.typicalBytesPerSecond = typicalBytesPerSecond
        self.maxFrame = maxFrame
        self.negotiated = negotiated
        self.endpoint = endpoint
    }

    /// Traits of a name no plug-in registered (e.g. a medium a newer peer advertises).
    public static let unknown = MediumTraits(linkClass: .other, typicalBytesPerSecond: 1_000_000, endpoint: .name)
}

/// The process-wide table of declared media.
final class MediumRegistry: Sendable {
    static let shared = MediumRegistry()
    private let state = Mutex<(table: [String: MediumTraits], order: [String])>(([:], []))

    func register(_ name: String, _ traits: MediumTraits) {
        state.withLock { s in
            if s.table.updateValue(traits, forKey: name) == nil { s.order.append(name) }
        }
    }

    func traits(of name: String) -> MediumTraits {
        if let t = state.withLock({ $0.table[name] }) { return t }
        // The built-ins register when first named; make sure they have been.
        _ = (Medium.tcp, Medium.udp, Medium.memory)
        return state.withLock { $0.table[name] } ?? .unknown
    }

    func names() -> [String] {
        _ = (Medium.tcp, Medium.udp, Medium.memory)
        return state.withLock { $0.order }
    }
}
