import PeerLink
/// The part of the kernel's Bluetooth management protocol (mgmt, `doc/mgmt-api.txt` in BlueZ)
/// that PeerLink reads: Read Controller Information and the settings it reports. No I/O:
/// `ManagementSocket` sends what `command` encodes and hands what it reads to `reply`.
public enum ManagementCodec {
    /// Read Controller Information.
    static let readInfo: UInt16 = 0x0004
    static let commandComplete: UInt16 = 0x0001
    static let commandStatus: UInt16 = 0x0002
    static let headerSize = 6
    /// Address 6, version 1, manufacturer 2, supported 4, current 4, class 3, name 249, short name 11.
    static let infoSize = 280

    /// A command: opcode, controller index, parameter length (little-endian), parameters.
    static func command(_ opcode: UInt16, index: UInt16, parameters: [UInt8] = []) -> [UInt8] {
        var out: [UInt8] = []
        for v in [opcode, index, UInt16(parameters.count)] { out += [UInt8(v & 0xff), UInt8(v >> 8)] }
        return out + parameters
    }

    /// What one packet read from the socket says about the command `opcode` on `index`:
    /// nil when the packet is about something else (events for other commands or controllers
    /// arrive on the same socket).
    static func reply(to opcode: UInt16, index: UInt16, packet: [UInt8]) throws -> ArraySlice<UInt8>? {
        guard packet.count >= headerSize else { throw ManagementError.malformed("a \(packet.count)-byte packet") }
        let event = le16(packet, 0), from = le16(packet, 2), length = Int(le16(packet, 4))
        guard packet.count == headerSize + length else {
            throw ManagementError.malformed("event 0x\(hex(event)) says \(length) bytes of parameters, carries \(packet.count - headerSize)")
        }
        guard event == commandComplete || event == commandStatus, from == index else { return nil }
        guard length >= 3 else { throw ManagementError.malformed("a command reply of \(length) bytes") }
        guard le16(packet, 6) == opcode else { return nil }
        let status = packet[8]
        if status != 0 { throw ManagementError.status(status) }
        guard event == commandComplete else { return nil }  // a status without the result: wait for it
        return packet[(headerSize + 3)...]
    }

    /// Parses Read Controller Information's result.
    static func controllerInfo(_ p: ArraySlice<UInt8>) throws -> ControllerInfo {
        guard p.count >= infoSize else { throw ManagementError.malformed("controller information of \(p.count) bytes (\(infoSize) expected)") }
        let b = Array(p)
        let address = b[0..<6].reversed().map { hex2($0) }.joined(separator: ":")
        let name = b[20..<269].prefix { $0 != 0 }
        return ControllerInfo(address: address,
                              supported: ControllerSettings(rawValue: le32(b, 9)),
                              current: ControllerSettings(rawValue: le32(b, 13)),
                              name: String(decoding: name, as: UTF8.self))
    }

    private static func le16<C: RandomAccessCollection>(_ b: C, _ i: Int) -> UInt16 where C.Element == UInt8, C.Index == Int {
        UInt16(b[b.startIndex + i]) | UInt16(b[b.startIndex + i + 1]) << 8
    }
    private static func le32(_ b: [UInt8], _ i: Int) -> UInt32 {
        (0..<4).reduce(0) { $0 | UInt32(b[i + $1]) << (8 * $1) }
    }
    private static func hex(_ v: UInt16) -> String { String(v, radix: 16) }
    private static func hex2(_ v: UInt8) -> String { (v < 16 ? "0" : "") + String(v, radix: 16, uppercase: true) }
}

/// A controller's settings as the kernel keeps them (mgmt's settings bit field).
public struct ControllerSettings: OptionSet, Sendable, Hashable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// The controller is powered on.
    public static let powered = ControllerSettings(rawValue: 1 << 0)
    /// Accepts connections from any device (BR/EDR page scan), not only paired ones.
    public static let connectable = ControllerSettings(rawValue: 1 << 1)
    /// Other devices can find it (BR/EDR inquiry scan).
    public static let discoverable = ControllerSettings(rawValue: 1 << 3)
    /// It accepts new pairings and stores their keys.
    public static let bondable = ControllerSettings(rawValue: 1 << 4)
    /// Secure Simple Pairing is on (`ssp`).
    public static let secureSimplePairing = ControllerSettings(rawValue: 1 << 6)
    /// Bluetooth Classic (BR/EDR) is on (`br/edr`).
    public static let bredr = ControllerSettings(rawValue: 1 << 7)
    /// Bluetooth Low Energy is on (`le`).
    public static let lowEnergy = ControllerSettings(rawValue: 1 << 9)

    /// btmgmt's words for the settings PeerLink reads, in bit order.
    public var names: [String] {
        [(Self.powered, "powered"), (.connectable, "connectable"), (.discoverable, "discoverable"), (.bondable, "bondable"),
         (.secureSimplePairing, "ssp"), (.bredr, "br/edr"), (.lowEnergy, "le")].filter { contains($0.0) }.map(\.1)
    }
}

/// One controller as Read Controller Information reports it.
public struct ControllerInfo: Sendable, Equatable {
    /// The controller's address, `AA:BB:CC:DD:EE:FF`.
    public var address: String
    /// The settings the controller can have.
    public var supported: ControllerSettings
    /// The settings it has now.
    public var current: ControllerSettings
    /// The controller's name (its local name as other devices see it); may be empty.
    public var name: String

    /// Whether a device that is not paired can open an RFCOMM or L2CAP BR/EDR channel to it.
    public var acceptsBREDRConnections: Bool { current.isSuperset(of: [.powered, .bredr, .connectable]) }
}

/// A failure talking to the kernel's Bluetooth management interface (mgmt), behind
/// `BluetoothReachability.info()`.
public enum ManagementError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The kernel answered with a mgmt status code (0x11: no such controller).
    case status(UInt8)
    /// The kernel's reply could not be parsed; the text says what was wrong with it.
    case malformed(String)
    /// The mgmt socket could not be used, or the adapter has no mgmt index; the text says why.
    case system(String)

    public var description: String {
        switch self {
        case .status(0x11): return "no such Bluetooth controller (mgmt: invalid index)"
        case .status(0x14): return "not permitted (mgmt: permission denied)"
        case let .status(s): return "the kernel refused the mgmt command (status 0x\(String(s, radix: 16)))"
        case let .malformed(what): return "malformed mgmt reply: \(what)"
        case let .system(what): return what
        }
    }
}
