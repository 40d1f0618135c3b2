// libFuzzer target: the UDP datagram envelope (DatagramEnvelope.decode).
// Build: swiftc -sanitize=fuzzer,address -parse-as-library -O Sources/PeerLinkWire/*.swift Fuzz/DatagramFuzz.swift -o Fuzz/bin/DatagramFuzz
//
// Invariants beyond "no crash": only WireErrors; an accepted envelope has the magic, an 8-byte
// token and at least a tag's worth of ciphertext, and re-encodes to exactly the input.

fileprivate func check(_ ok: Bool, _ what: @autoclosure () -> String) {
    if !ok { fatalError("invariant violated: \(what())") }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    let env: DatagramEnvelope
    do {
        env = try DatagramEnvelope.decode(input)
    } catch let e as WireError {
        check(!e.description.isEmpty, "empty error description")
        return 0
    } catch {
        fatalError("DatagramEnvelope.decode threw a non-WireError: \(error)")
    }
    check(input.first == DatagramEnvelope.magic, "accepted without the magic byte")
    check(env.token.count == 8, "token of \(env.token.count) bytes")
    check(env.ciphertext.count >= 16, "ciphertext shorter than a tag")
    check(env.encode() == input, "re-encoding differs from the input")
    check((try? DatagramEnvelope.decode(env.encode())) == env, "decode(encode(e)) != e")
    return 0
}
