// libFuzzer target: the store-and-forward service's records and their stream framing
// (docs/PROTOCOL.md §16), which a field node reads from any peer in its session.
// Build: swiftc -sanitize=fuzzer,address -parse-as-library -O Sources/PeerLinkWire/*.swift Fuzz/StoreForwardFuzz.swift -o Fuzz/bin/StoreForwardFuzz
//
// The first input byte picks how the rest is cut into chunks. Invariants:
//  - decoding throws only WireError;
//  - a decoded record encodes back to exactly the bytes it was read from (one encoding per value);
//  - ids are 16 bytes, digests 32, names 1-255 bytes, texts at most 255;
//  - the records do not depend on how the stream was chunked.

fileprivate func check(_ ok: Bool, _ what: @autoclosure () -> String) {
    if !ok { fatalError("invariant violated: \(what())") }
}

fileprivate func run(_ stream: [UInt8], chunkSeed: UInt8) -> (records: [StoreForwardRecord], failed: Bool) {
    var d = StoreForwardDeframer()
    var out: [StoreForwardRecord] = []
    var fed = 0
    var seed = UInt32(chunkSeed) | 1
    while fed < stream.count {
        seed = seed &* 1_103_515_245 &+ 12345
        let n = chunkSeed == 0 ? stream.count : Int(seed >> 16 & 63) + 1
        let end = min(fed + n, stream.count)
        d.append(Array(stream[fed..<end]))
        fed = end
        do {
            while let r = try d.next() { out.append(r) }
        } catch is WireError {
            return (out, true)
        } catch {
            fatalError("next() threw a non-WireError: \(error)")
        }
    }
    return (out, false)
}

fileprivate func checkRecord(_ r: StoreForwardRecord) {
    switch r {
    case let .item(id, _, digest, _, name):
        check(id.count == 16 && digest.count == 32, "item sizes")
        check(!name.isEmpty && name.utf8.count <= 255, "item name of \(name.utf8.count) bytes")
    case let .have(id, _, digest, _):
        check(id.count == 16 && digest.count == 32, "receipt sizes")
    case let .want(id):
        check(id.count == 16, "want id")
    case let .refuse(id, _, text):
        check(id.count == 16 && text.utf8.count <= 255, "refusal sizes")
    case let .message(id, _, bytes):
        check(id.count == 16 && !bytes.isEmpty && bytes.count <= StoreForwardRecord.maxMessage, "message sizes")
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    let body = Array(input.dropFirst())
    // One record's bytes, decoded directly.
    do {
        let r = try StoreForwardRecord.decode(body)
        checkRecord(r)
        check(r.encoded() == body, "re-encoding differs from the decoded bytes")
    } catch is WireError {
    } catch {
        fatalError("decode threw a non-WireError: \(error)")
    }
    // The same bytes as a stream, chunked two ways.
    let chunked = run(body, chunkSeed: input[0])
    let whole = run(body, chunkSeed: 0)
    check(chunked.records == whole.records && chunked.failed == whole.failed, "chunking changed the result")
    for r in whole.records { checkRecord(r) }
    return 0
}
