/// The framework's hello, carried as the payload of Noise handshake messages 2 and 3.
///
/// Layout: `major u8 | minor u8 | TLV*` where each TLV is `type u8 | length u16 | value`.
/// Unknown TLV types are skipped (so later minors can add fields); a repeated type is an error.
package struct Hello: Equatable, Sendable {
    package var major: UInt8
    package var minor: UInt8
    /// Display name (metadata only), UTF-8, at most 63 bytes.
    package var displayName: String
    /// The largest frame this node accepts.
    package var maxFrame: UInt32
    /// 16 random bytes naming the session this link belongs to (several links, one session).
    package var sessionToken: [UInt8]
    /// The UDP port this node receives unreliable datagrams on, if it offers UDP.
    package var datagramPort: UInt16?
    /// What the node publishes as discovery info while it advertises, so a browser that found
    /// it without DNS-SD (over Bluetooth) learns it from the handshake (PROTOCOL §6, §14.3).
    package var discoveryInfo: DiscoveryInfo?

    enum Field: UInt8 { case displayName = 1, maxFrame = 2, sessionToken = 3, datagramPort = 4, discoveryInfo = 5 }

    package init(displayName: String, maxFrame: UInt32 = UInt32(WireLimits.frame), sessionToken: [UInt8],
                datagramPort: UInt16? = nil, discoveryInfo: DiscoveryInfo? = nil,
                major: UInt8 = UInt8(PeerLinkProtocol.major), minor: UInt8 = UInt8(PeerLinkProtocol.minor)) {
        self.major = major; self.minor = minor; self.displayName = displayName
        self.maxFrame = maxFrame; self.sessionToken = sessionToken; self.datagramPort = datagramPort
        self.discoveryInfo = discoveryInfo
    }

    package func encode() -> [UInt8] {
        var w = WireWriter()
        w.u8(major); w.u8(minor)
        let name = Array(displayName.utf8Prefix(Advertisement.maxDisplayNameBytes).utf8)
        w.u8(Field.displayName.rawValue); w.u16(UInt16(name.count)); w.append(name)
        w.u8(Field.maxFrame.rawValue); w.u16(4); w.u32(maxFrame)
        w.u8(Field.sessionToken.rawValue); w.u16(UInt16(sessionToken.count)); w.append(sessionToken)
        if let datagramPort { w.u8(Field.datagramPort.rawValue); w.u16(2); w.u16(datagramPort) }
        // DiscoveryInfo's limits keep every entry ≤ 255 bytes, so encoding cannot fail.
        if let discoveryInfo, let txt = try? TXTRecord.encode(discoveryInfo.entries) {
            w.u8(Field.discoveryInfo.rawValue); w.u16(UInt16(txt.count)); w.append(txt)
        }
        return w.bytes
    }

    package static func decode(_ bytes: [UInt8]) throws -> Hello {
        var r = WireReader(bytes)
        let major = try r.u8("hello major version"), minor = try r.u8("hello minor version")
        guard Int(major) == PeerLinkProtocol.major else {
            throw WireError.invalid(field: "hello", reason: "protocol major version \(major), this node speaks \(PeerLinkProtocol.major)")
        }
        var name: String?, maxFrame: UInt32?, token: [UInt8]?, udp: UInt16?, info: DiscoveryInfo?
        var seen: Set<UInt8> = []
        while !r.isAtEnd {
            let t = try r.u8("hello field type")
            let n = Int(try r.u16("hello field length"))
            let v = try r.take(n, "hello field")
            guard seen.insert(t).inserted else { throw WireError.invalid(field: "hello", reason: "field \(t) appears twice") }
            switch Field(rawValue: t) {
            case .displayName:
                guard let s = String(validating: v, as: UTF8.self) else { throw WireError.invalid(field: "hello display name", reason: "not valid UTF-8") }
                try Advertisement.validate(displayName: s)
                name = s
            case .maxFrame:
                guard n == 4 else { throw WireError.invalid(field: "hello max frame", reason: "length \(n), expected 4") }
                var fr = WireReader(v)
                let m = try fr.u32("max frame")
                guard m >= 1024 else { throw WireError.invalid(field: "hello max frame", reason: "\(m) is below the minimum of 1024") }
                maxFrame = m
            case .sessionToken:
                guard n == 16 else { throw WireError.invalid(field: "hello session token", reason: "length \(n), expected 16") }
                token = v
            case .datagramPort:
                guard n == 2 else { throw WireError.invalid(field: "hello datagram port", reason: "length \(n), expected 2") }
                var pr = WireReader(v)
                let port = try pr.u16("datagram port")
                guard port != 0 else { throw WireError.invalid(field: "hello datagram port", reason: "port 0") }
                udp = port
            case .discoveryInfo:
                do { info = try DiscoveryInfo(TXTRecord.decode(v)) } catch {
                    throw WireError.invalid(field: "hello discovery info", reason: "\(error)")
                }
            case nil:
                continue
            }
        }
        guard let name else { throw WireError.invalid(field: "hello", reason: "no display name") }
        guard let token else { throw WireError.invalid(field: "hello", reason: "no session token") }
        return Hello(displayName: name, maxFrame: maxFrame ?? UInt32(WireLimits.frame), sessionToken: token, datagramPort: udp,
                     discoveryInfo: info, major: major, minor: minor)
    }
}
