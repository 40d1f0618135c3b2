import PeerLink
/// Generic netlink messages as bytes: building requests and reading replies and their
/// attributes. Pure (no sockets), so the parsers are tested with malformed input on the host.
enum NetlinkMessages {
    static let requestFlag: UInt16 = 0x1, ackFlag: UInt16 = 0x4, dumpFlags: UInt16 = 0x300
    static let typeError: UInt16 = 2, typeDone: UInt16 = 3
    static let controlFamily: UInt16 = 16           // GENL_ID_CTRL
    static let controlGetFamily: UInt8 = 3          // CTRL_CMD_GETFAMILY
    static let controlFamilyID: UInt16 = 1, controlFamilyName: UInt16 = 2

    /// One attribute: its type (flag bits removed) and payload.
    struct Attribute: Equatable, Sendable {
        var type: UInt16
        var payload: [UInt8]

        var u32: UInt32? { payload.count >= 4 ? le(payload, 0, 4).map(UInt32.init) : nil }
        var u16: UInt16? { payload.count >= 2 ? le(payload, 0, 2).map(UInt16.init) : nil }
        var u64: UInt64? { payload.count >= 8 ? le(payload, 0, 8) : nil }
        /// A NUL-terminated string (the terminator and anything after it dropped).
        var string: String? {
            let body = payload.prefix { $0 != 0 }
            return String(validating: body, as: UTF8.self)
        }
        /// The attributes nested inside this one.
        var nested: [Attribute] { NetlinkMessages.attributes(payload[...]) }

        static func u32(_ type: UInt16, _ v: UInt32) -> Attribute { Attribute(type: type, payload: bytesLE(UInt64(v), 4)) }
        static func string(_ type: UInt16, _ s: String) -> Attribute { Attribute(type: type, payload: Array(s.utf8) + [0]) }
        static func flag(_ type: UInt16) -> Attribute { Attribute(type: type, payload: []) }
        static func bytes(_ type: UInt16, _ b: [UInt8]) -> Attribute { Attribute(type: type, payload: b) }
    }

    /// One message of a reply: netlink header fields and the payload after the generic
    /// netlink header (for `typeError`, the error code instead).
    struct Message: Equatable, Sendable {
        var type: UInt16
        var flags: UInt16
        var sequence: UInt32
        var command: UInt8
        var attributes: [Attribute]
        /// For an error message: 0 (an ack) or a negative errno.
        var errorCode: Int32?
    }

    /// A request: nlmsghdr + genlmsghdr + attributes.
    static func request(family: UInt16, command: UInt8, flags: UInt16, sequence: UInt32, attributes: [Attribute]) -> [UInt8] {
        var body: [UInt8] = [command, 1, 0, 0]
        for a in attributes { body += encode(a) }
        let length = 16 + body.count
        var out = bytesLE(UInt64(length), 4) + bytesLE(UInt64(family), 2) + bytesLE(UInt64(requestFlag | flags), 2)
        out += bytesLE(UInt64(sequence), 4) + bytesLE(0, 4)
        return out + body
    }

    static func encode(_ a: Attribute) -> [UInt8] {
        let len = 4 + a.payload.count
        var out = bytesLE(UInt64(len), 2) + bytesLE(UInt64(a.type), 2) + a.payload
        out += [UInt8](repeating: 0, count: (4 - len % 4) % 4)
        return out
    }

    /// The attributes in `bytes`, stopping at the first one whose length does not fit.
    static func attributes(_ bytes: ArraySlice<UInt8>) -> [Attribute] {
        var out: [Attribute] = []
        var i = bytes.startIndex
        while bytes.endIndex - i >= 4 {
            let len = Int(bytes[i]) | Int(bytes[i + 1]) << 8
            let type = (UInt16(bytes[i + 2]) | UInt16(bytes[i + 3]) << 8) & 0x3fff
            guard len >= 4, i + len <= bytes.endIndex else { break }
            out.append(Attribute(type: type, payload: Array(bytes[(i + 4)..<(i + len)])))
            i += (len + 3) & ~3
        }
        return out
    }

    /// The messages in one datagram, stopping at the first truncated one.
    static func messages(_ bytes: [UInt8]) -> [Message] {
        var out: [Message] = []
        var i = 0
        while bytes.count - i >= 16 {
            guard let len32 = le(bytes, i, 4), let type = le(bytes, i + 4, 2), let flags = le(bytes, i + 6, 2),
                  let seq = le(bytes, i + 8, 4) else { break }
            let len = Int(len32)
            guard len >= 16, i + len <= bytes.count else { break }
            let payload = bytes[(i + 16)..<(i + len)]
            if UInt16(type) == typeError {
                let code = payload.count >= 4 ? le(Array(payload), 0, 4).map { Int32(bitPattern: UInt32($0)) } : nil
                out.append(Message(type: UInt16(type), flags: UInt16(flags), sequence: UInt32(seq), command: 0, attributes: [], errorCode: code ?? -1))
            } else if payload.count >= 4 {
                out.append(Message(type: UInt16(type), flags: UInt16(flags), sequence: UInt32(seq), command: payload[payload.startIndex],
                                   attributes: attributes(payload.dropFirst(4)), errorCode: nil))
            } else {
                out.append(Message(type: UInt16(type), flags: UInt16(flags), sequence: UInt32(seq), command: 0, attributes: [], errorCode: nil))
            }
            i += (len + 3) & ~3
        }
        return out
    }

    /// Little-endian (host order on every platform PeerLink runs on) unsigned integer of
    /// `count` bytes at `offset`, nil when out of range.
    static func le(_ b: [UInt8], _ offset: Int, _ count: Int) -> UInt64? {
        guard offset >= 0, count <= 8, offset + count <= b.count else { return nil }
        var v: UInt64 = 0
        for k in 0..<count { v |= UInt64(b[offset + k]) << (8 * UInt64(k)) }
        return v
    }

    static func bytesLE(_ v: UInt64, _ count: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: v >> (8 * UInt64($0))) }
    }
}
