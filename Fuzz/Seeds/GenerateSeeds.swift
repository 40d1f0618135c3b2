// Writes seed corpora for the fuzz targets from valid encodings made by the real encoders.
// Built without sanitizers by scripts/fuzz.sh:
//   swiftc -parse-as-library -O Sources/PeerLinkWire/*.swift Fuzz/Seeds/GenerateSeeds.swift -o Fuzz/bin/GenerateSeeds
//   Fuzz/bin/GenerateSeeds <Target> <directory>
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@main
struct GenerateSeeds {
    static func write(_ bytes: [UInt8], to path: String) {
        guard let f = fopen(path, "wb") else { fatalError("cannot write \(path)") }
        _ = bytes.withUnsafeBufferPointer { fwrite($0.baseAddress, 1, $0.count, f) }
        fclose(f)
    }

    static let sha: [UInt8] = (0..<32).map { UInt8($0 * 5 & 0xff) }
    static let token: [UInt8] = Array(100..<116)

    static var frames: [[UInt8]] {
        let fs: [Frame] = [
            .invite(id: 1, timeoutMillis: 30_000, context: Array("join my game".utf8)),
            .inviteReply(id: 1, answer: .accepted),
            .reliable(seq: 1, record: .messagePart(final: true, bytes: Array("hello".utf8)[...])),
            .reliable(seq: 2, record: .messagePart(final: false, bytes: [1, 2, 3])),
            .reliable(seq: 3, record: .streamOpen(stream: 1, name: "chat")),
            .reliable(seq: 4, record: .streamData(stream: 1, bytes: [9, 9])),
            .reliable(seq: 5, record: .streamCredit(stream: 1, bytes: 262_144)),
            .reliable(seq: 6, record: .streamClose(stream: 1, status: .finished)),
            .reliable(seq: 7, record: .resourceOffer(stream: 3, size: 1 << 20, sha256: sha, name: "photo.jpg")),
            .reliable(seq: 8, record: .resourceAccept(stream: 3, offset: 0, credit: 65_536)),
            .reliable(seq: 9, record: .resourceResult(stream: 3, ok: true)),
            .reliable(seq: 10, record: .resourceError(stream: 3, error: .noSpace(needed: 32 << 20, available: 16 << 20))),
            .bulk(seq: 2, record: .resourceError(stream: 3, error: .writeFailed(held: 5, size: 9, reason: "Input/output error"))),
            .reliable(seq: 11, record: .linkSetup(LinkSetup(id: 1, step: .propose, medium: "wifi-direct", parameters: [.init("roles", [3])], text: "file"))),
            .reliable(seq: 12, record: .linkSetup(LinkSetup(id: 1, step: .ready, medium: "wifi-direct",
                parameters: [.init("ssid", string: "DIRECT-pl"), .init("psk", string: "0123456789abcdef"), .init("freq", [0x09, 0x99])]))),
            .ack(upTo: 9),
            .unreliable(payload: [1, 2, 3, 4]),
            .ping(token: 12_345),
            .pong(token: 12_345),
            .close(reason: .leaving, text: "bye"),
            .inviteReply(id: 2, answer: .crossed),
            .bulk(seq: 1, record: .streamData(stream: 3, bytes: [7, 7, 7])),
            .bulk(seq: 2, record: .streamClose(stream: 3, status: .finished)),
            .bulkAck(upTo: 2),
            .reliable(seq: 13, record: .resourceOfferKeyed(stream: 5, size: 1 << 30, key: sha, name: "disk.img")),
            .bulk(seq: 3, record: .resourceDigest(stream: 5, sha256: sha)),
        ]
        return fs.map { $0.encode() }
    }

    static var hellos: [[UInt8]] {
        var withUnknown = Hello(displayName: "Bob", sessionToken: token).encode()
        withUnknown += [9, 0, 3, 1, 2, 3]
        return [
            Hello(displayName: "Alice's laptop", sessionToken: token).encode(),
            Hello(displayName: "Zoë 📱", maxFrame: 1024, sessionToken: token, minor: 3).encode(),
            withUnknown,
            Hello(displayName: "Pi", sessionToken: token, datagramPort: 40_000,
                  discoveryInfo: try? DiscoveryInfo(["room": "lab", "v": "2"])).encode(),
        ]
    }

    static var txt: [[UInt8]] {
        var out: [[UInt8]] = []
        let id = try! PeerID(bytes: Array(0..<20))
        let ad = try! Advertisement(peerID: id, displayName: "Alice", info: try! DiscoveryInfo(["room": "kitchen", "v": "2"]))
        out.append(try! TXTRecord.encode(ad.txt))
        out.append([3] + Array("a=1".utf8) + [0] + [4] + Array("flag".utf8) + [5] + Array("A=two".utf8))
        out.append(Array("field-demo".utf8))
        out.append(Array(id.description.utf8))
        out.append(Array("mzxw6ytboi".utf8))
        out.append(Array("room=kitchen\nv=2\nempty=".utf8))
        return out
    }

    static var streams: [[UInt8]] {
        let msgs: [[UInt8]] = [[1], Array(0..<40), [UInt8](repeating: 7, count: 300)]
        let stream = msgs.flatMap { try! LengthPrefixedDeframer.frame($0) }
        return [[0] + stream, [5] + stream, [200] + stream + [0], [3, 0, 0, 0, 1, 1]]
    }

    static var datagrams: [[UInt8]] {
        [DatagramEnvelope(token: Array(1...8), nonce: 7, ciphertext: [UInt8](repeating: 0xcc, count: 16 + 9)).encode(),
         DatagramEnvelope(token: [UInt8](repeating: 0, count: 8), nonce: .max, ciphertext: [UInt8](repeating: 1, count: 16)).encode()]
    }

    /// Link messages as `length u16 | bytes`: a frame in pieces, with a whole frame between.
    static var pieces: [[UInt8]] {
        func msgs(_ m: [[UInt8]]) -> [UInt8] { m.flatMap { [UInt8($0.count >> 8), UInt8($0.count & 0xff)] + $0 } }
        let frame = Frame.unreliable(payload: Array(repeating: 0x61, count: 700)).encode()
        let pieces = FramePieces.split(frame, maxFrame: 256)
        return [msgs(pieces), msgs([pieces[0], Frame.ping(token: 1).encode()] + pieces.dropFirst()), msgs([Frame.ack(upTo: 3).encode()])]
    }

    /// Store-and-forward streams: the first byte cuts, then framed records.
    static var storeForward: [[UInt8]] {
        let id = [UInt8](repeating: 7, count: 16), digest = [UInt8](repeating: 9, count: 32)
        let records: [StoreForwardRecord] = [
            .item(id: id, size: 1 << 20, digest: digest, expiresAt: 1_800_000_000_000, name: "survey.csv"),
            .have(id: id, size: 1 << 20, digest: digest, receivedAt: 1_790_000_000_000),
            .want(id: id),
            .refuse(id: id, reason: .quota, text: "quota: 4G of 4G held for this peer"),
            .message(id: id, expiresAt: 1_800_000_000_000, bytes: Array("water level 1.2 m".utf8)),
        ]
        return [[3] + records.flatMap { $0.framed() }, [0] + records[0].framed()]
    }

    static func main() {
        let args = CommandLine.arguments
        guard args.count == 3 else { fatalError("usage: GenerateSeeds <Target> <directory>") }
        let seeds: [[UInt8]]
        switch args[1] {
        case "FrameFuzz": seeds = frames
        case "HelloFuzz": seeds = hellos
        case "TXTFuzz": seeds = txt + [try! BluetoothAdvert(version: 1, peerIDPrefix: [1, 2, 3, 4, 5, 6], rfcommChannel: 3, l2capPSM: 0x1001).encode()]
        case "DeframerFuzz": seeds = streams
        case "DatagramFuzz": seeds = datagrams
        case "PiecesFuzz": seeds = pieces
        case "StoreForwardFuzz": seeds = storeForward
        // The first byte chooses where HTTPFuzz splits the rest.
        case "HTTPFuzz": seeds = [
            "\u{10}GET /v1/status HTTP/1.1\r\nHost: localhost\r\n\r\n",
            "\u{20}POST /v1/items HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 27\r\n\r\n{\"peer\":\"p\",\"path\":\"/a/b\"}",
            "\u{05}GET /v1/events?after=12 HTTP/1.1\r\nHost: x\r\nLast-Event-ID: 3\r\n\r\n",
            "\u{30}POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\nabc",
        ].map { Array($0.utf8) }
        default: seeds = []  // a target without generated seeds starts from an empty corpus
        }
        for (i, s) in seeds.enumerated() { write(s, to: "\(args[2])/seed-\(i)") }
    }
}
