// libFuzzer target: the 2-byte length-prefixed stream framing used for Noise on TCP/RFCOMM.
// Build: swiftc -sanitize=fuzzer,address -parse-as-library -O Sources/PeerLinkWire/*.swift Fuzz/DeframerFuzz.swift -o Fuzz/bin/DeframerFuzz
//
// The first input byte picks how the rest is cut into read() chunks. Invariants:
//  - next() only throws WireError, and only when the next length prefix is zero;
//  - no message is empty or longer than 65535 bytes;
//  - re-framing the messages reproduces exactly the consumed prefix of the stream;
//  - pendingBytes equals the bytes fed but not yet returned (until a zero length);
//  - the result does not depend on how the stream was chunked (compared with one big append).

fileprivate func check(_ ok: Bool, _ what: @autoclosure () -> String) {
    if !ok { fatalError("invariant violated: \(what())") }
}

fileprivate struct Outcome: Equatable {
    var messages: [[UInt8]] = []
    var failed = false
    var pending = 0
}

fileprivate func run(_ stream: [UInt8], chunkSeed: UInt8) -> Outcome {
    var d = LengthPrefixedDeframer()
    var out = Outcome()
    var fed = 0, returned = 0
    var seed = UInt32(chunkSeed) | 1
    while fed < stream.count && !out.failed {
        // A deterministic chunk size between 1 and 64 (or everything when the seed is 0).
        seed = seed &* 1_103_515_245 &+ 12345
        let n = chunkSeed == 0 ? stream.count : Int(seed >> 16 & 63) + 1
        let end = min(fed + n, stream.count)
        d.append(Array(stream[fed..<end]))
        fed = end
        while true {
            do {
                guard let m = try d.next() else { break }
                check(!m.isEmpty && m.count <= WireLimits.noiseMessage, "message of \(m.count) bytes")
                out.messages.append(m)
                returned += 2 + m.count
            } catch let e as WireError {
                check(!e.description.isEmpty, "empty error description")
                check(stream.count >= returned + 2 && stream[returned] == 0 && stream[returned + 1] == 0,
                      "error without a zero length prefix at \(returned): \(e)")
                out.failed = true
                break
            } catch {
                fatalError("next() threw a non-WireError: \(error)")
            }
        }
        // After a zero length the rest of the stream is dropped, not pending.
        check(out.failed || d.pendingBytes == fed - returned, "pendingBytes \(d.pendingBytes), expected \(fed - returned)")
    }
    // Re-framing reproduces the consumed input.
    var reframed: [UInt8] = []
    for m in out.messages {
        guard let f = try? LengthPrefixedDeframer.frame(m) else { fatalError("frame() rejected a deframed message") }
        reframed += f
    }
    check(reframed == Array(stream.prefix(returned)), "re-framed output differs from the consumed input")
    out.pending = out.failed ? -1 : d.pendingBytes
    return out
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    let stream = Array(input.dropFirst())
    let chunked = run(stream, chunkSeed: input[0])
    let whole = run(stream, chunkSeed: 0)
    check(chunked == whole, "chunking changed the result")
    return 0
}
