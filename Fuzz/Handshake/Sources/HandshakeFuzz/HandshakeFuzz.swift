// libFuzzer target: the Noise XX handshake (and the first transport message) reading hostile
// bytes. Built by scripts/fuzz.sh through Fuzz/Handshake/Package.swift (it needs swift-crypto).
//
// The first input byte picks where the hostile bytes (the rest of the input) are injected:
//   0: as message 1, read by a responder (then the responder must write message 2 or throw);
//   1: as message 2, read by an initiator that sent an honest message 1;
//   2: as message 3, read by a responder after an honest exchange of messages 1 and 2;
//   3: as the first transport message after an honest handshake.
// Invariants beyond "no crash":
//  - readMessage/decrypt throw only NoiseError;
//  - nothing other than the honest bytes is accepted as message 2, message 3 or a transport
//    message (no forgery), and a message-1 payload is returned exactly as sent;
//  - a rejected message leaves the handshake (or cipher) unchanged: the honest message is
//    still accepted afterwards and the handshake completes with matching keys and peer IDs;
//  - the hello carried in messages 2 and 3 decodes.
@preconcurrency import Crypto
import PeerLinkCore
import PeerLinkWire
#if canImport(Glibc)
import Glibc
#endif

fileprivate func check(_ ok: Bool, _ what: @autoclosure () -> String) {
    if !ok { fatalError("invariant violated: \(what())") }
}

fileprivate func key(_ seed: UInt8) -> Curve25519.KeyAgreement.PrivateKey {
    try! Curve25519.KeyAgreement.PrivateKey(rawRepresentation: (0..<32).map { UInt8(truncatingIfNeeded: Int($0) * 7 + Int(seed)) })
}

fileprivate let initiatorStatic = key(1), responderStatic = key(2)
fileprivate let initiatorEphemeral = key(3), responderEphemeral = key(4)
fileprivate let token: [UInt8] = Array(0..<16)
fileprivate let helloI = Hello(displayName: "initiator", sessionToken: token).encode()
fileprivate let helloR = Hello(displayName: "responder", sessionToken: token).encode()

fileprivate func initiator() -> NoiseHandshakeXX {
    NoiseHandshakeXX(role: .initiator, staticKey: initiatorStatic, prologue: PeerLinkProtocol.prologue, ephemeralKey: initiatorEphemeral)
}
fileprivate func responder() -> NoiseHandshakeXX {
    NoiseHandshakeXX(role: .responder, staticKey: responderStatic, prologue: PeerLinkProtocol.prologue, ephemeralKey: responderEphemeral)
}

/// Runs `body`, which must succeed.
fileprivate func must<T>(_ what: String, _ body: () throws -> T) -> T {
    do { return try body() } catch { fatalError("honest step failed: \(what): \(error)") }
}

/// Runs a read of hostile bytes: returns the payload or nil when rejected with a NoiseError.
fileprivate func hostile(_ body: () throws -> [UInt8]) -> [UInt8]? {
    do { return try body() } catch is NoiseError { return nil } catch {
        fatalError("non-Noise error from hostile input: \(error)")
    }
}

/// Checks that a completed handshake agrees on both sides and yields working transport keys.
fileprivate func verifyComplete(_ i: NoiseHandshakeXX, _ r: NoiseHandshakeXX) {
    check(i.isComplete && r.isComplete, "handshake incomplete")
    check(i.remoteStaticKey == Array(responderStatic.publicKey.rawRepresentation), "initiator learned the wrong static key")
    check(r.remoteStaticKey == Array(initiatorStatic.publicKey.rawRepresentation), "responder learned the wrong static key")
    check(i.handshakeHash == r.handshakeHash, "handshake hashes differ")
    var (iSend, _) = must("split i") { try i.split() }
    var (_, rRecv) = must("split r") { try r.split() }
    let c = must("encrypt") { try iSend.encrypt([1, 2, 3]) }
    check(must("decrypt") { try rRecv.decrypt(c) } == [1, 2, 3], "transport round trip")
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    let bad = Array(input.dropFirst())
    switch input[0] % 4 {
    case 0:
        var r = responder()
        guard let payload = hostile({ try r.readMessage(bad) }) else {
            check(r.messageIndex == 0, "rejected message 1 changed the state")
            var i = initiator()
            let m1 = must("write 1") { try i.writeMessage(payload: []) }
            check(must("read honest 1") { try r.readMessage(m1) } == [], "message 1 payload")
            let m2 = must("write 2") { try r.writeMessage(payload: helloR) }
            check(must("read 2") { try i.readMessage(m2) } == helloR, "message 2 payload")
            let m3 = must("write 3") { try i.writeMessage(payload: helloI) }
            check(must("read 3") { try r.readMessage(m3) } == helloI, "message 3 payload")
            verifyComplete(i, r)
            return 0
        }
        check(bad.count >= 32 && payload == Array(bad.dropFirst(32)), "message 1 payload not returned as sent")
        // A low-order ephemeral key may make the DH fail: that must be a NoiseError, not a crash.
        do { _ = try r.writeMessage(payload: helloR) } catch is NoiseError {} catch {
            fatalError("non-Noise error writing message 2: \(error)")
        }
    case 1:
        var i = initiator(), r = responder()
        let m1 = must("write 1") { try i.writeMessage(payload: []) }
        _ = must("read 1") { try r.readMessage(m1) }
        let m2 = must("write 2") { try r.writeMessage(payload: helloR) }
        if let p = hostile({ try i.readMessage(bad) }) {
            check(bad == m2 && p == helloR, "forged message 2 accepted")
            return 0
        }
        check(i.messageIndex == 1, "rejected message 2 changed the state")
        let p = must("read honest 2") { try i.readMessage(m2) }
        check((try? Hello.decode(p)) != nil, "hello in message 2 does not decode")
        let m3 = must("write 3") { try i.writeMessage(payload: helloI) }
        _ = must("read 3") { try r.readMessage(m3) }
        verifyComplete(i, r)
    case 2:
        var i = initiator(), r = responder()
        let m1 = must("write 1") { try i.writeMessage(payload: []) }
        _ = must("read 1") { try r.readMessage(m1) }
        let m2 = must("write 2") { try r.writeMessage(payload: helloR) }
        _ = must("read 2") { try i.readMessage(m2) }
        let m3 = must("write 3") { try i.writeMessage(payload: helloI) }
        if let p = hostile({ try r.readMessage(bad) }) {
            check(bad == m3 && p == helloI, "forged message 3 accepted")
            return 0
        }
        check(r.messageIndex == 2, "rejected message 3 changed the state")
        let p = must("read honest 3") { try r.readMessage(m3) }
        check((try? Hello.decode(p)) != nil, "hello in message 3 does not decode")
        verifyComplete(i, r)
    default:
        var i = initiator(), r = responder()
        let m1 = must("write 1") { try i.writeMessage(payload: []) }
        _ = must("read 1") { try r.readMessage(m1) }
        let m2 = must("write 2") { try r.writeMessage(payload: helloR) }
        _ = must("read 2") { try i.readMessage(m2) }
        let m3 = must("write 3") { try i.writeMessage(payload: helloI) }
        _ = must("read 3") { try r.readMessage(m3) }
        var (iSend, _) = must("split i") { try i.split() }
        var (_, rRecv) = must("split r") { try r.split() }
        let honest = must("encrypt") { try iSend.encrypt(Frame.ping(token: 1).encode()) }
        // The same bytes decrypted in two arrays (a link's path for large payloads) are
        // refused alike, and leave the nonce alone too.
        let split = { (first: [UInt8]) in Frame.payloadLayout(first).map { ($0.offset, 16) } }
        if let p = hostile({ let parts = try rRecv.decrypt(bad, peek: Frame.payloadPeek, split: split); return parts.head + (parts.tail ?? []) }) {
            check(bad == honest && p == Frame.ping(token: 1).encode(), "forged transport message accepted in two arrays")
            return 0
        }
        check(rRecv.nonce == 0, "rejected transport message advanced the nonce (two arrays)")
        if let p = hostile({ try rRecv.decrypt(bad) }) {
            check(bad == honest && p == Frame.ping(token: 1).encode(), "forged transport message accepted")
            return 0
        }
        check(rRecv.nonce == 0, "rejected transport message advanced the nonce")
        let p = must("decrypt honest") { try rRecv.decrypt(honest) }
        check((try? Frame.decode(p)) == .ping(token: 1), "transport payload")
    }
    return 0
}

// SwiftPM links an executable target's entry point as `<module>_main`, so libFuzzer's own
// `main` cannot be used; this entry point hands control to libFuzzer's driver instead.
@_silgen_name("LLVMFuzzerRunDriver")
fileprivate func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<Int32>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: @convention(c) (UnsafePointer<UInt8>, Int) -> CInt
) -> CInt

@main
enum HandshakeFuzzMain {
    static func main() {
        // `HandshakeFuzz --write-seeds DIR`: writes the honest messages as a seed corpus.
        if CommandLine.arguments.count == 3, CommandLine.arguments[1] == "--write-seeds" {
            writeSeeds(to: CommandLine.arguments[2])
            return
        }
        var argc = CommandLine.argc
        var argv = CommandLine.unsafeArgv
        exit(LLVMFuzzerRunDriver(&argc, &argv, { data, size in fuzz(data, size) }))
    }
}

fileprivate func writeSeeds(to dir: String) {
    var i = initiator(), r = responder()
    let m1 = must("write 1") { try i.writeMessage(payload: []) }
    _ = must("read 1") { try r.readMessage(m1) }
    let m2 = must("write 2") { try r.writeMessage(payload: helloR) }
    _ = must("read 2") { try i.readMessage(m2) }
    let m3 = must("write 3") { try i.writeMessage(payload: helloI) }
    _ = must("read 3") { try r.readMessage(m3) }
    var (send, _) = must("split") { try i.split() }
    let t = must("encrypt") { try send.encrypt(Frame.ping(token: 1).encode()) }
    for (n, bytes) in [[0] + m1, [1] + m2, [2] + m3, [3] + t].enumerated() {
        guard let f = fopen("\(dir)/seed-\(n)", "wb") else { fatalError("cannot write seeds to \(dir)") }
        _ = bytes.withUnsafeBufferPointer { fwrite($0.baseAddress, 1, $0.count, f) }
        fclose(f)
    }
}
