// libFuzzer target: the daemon API's HTTP/1.1 request reader (Sources/PeerLinkDaemon/API/
// HTTPRequestParser.swift, pure Swift with no imports, compiled alone with the fuzz target).
// Build: swiftc -sanitize=fuzzer,address -parse-as-library -O Sources/PeerLinkWire/*.swift Sources/PeerLinkDaemon/API/HTTPRequestParser.swift Fuzz/HTTPFuzz.swift -o Fuzz/bin/HTTPFuzz
//
// Invariants checked beyond "no crash":
//  - the same bytes give the same outcome whether pushed at once or split at any point
//    (the first byte of the input chooses the split);
//  - errors carry a 4xx/5xx status from the documented set and a message;
//  - an accepted request respects the limits, its body is exactly Content-Length bytes, it has
//    at most one Content-Length and no Transfer-Encoding, its names are lowercase tokens,
//    and its values hold no CR or LF.

fileprivate func check(_ ok: Bool, _ what: @autoclosure () -> String) {
    if !ok { fatalError("invariant violated: \(what())") }
}

fileprivate func outcome(_ chunks: [ArraySlice<UInt8>], limits: HTTPRequestParser.Limits) -> Result<HTTPRequest?, HTTPParseError> {
    var p = HTTPRequestParser(limits: limits)
    for c in chunks {
        do {
            if let r = try p.push(c) { return .success(r) }
        } catch {
            return .failure(error)
        }
    }
    return .success(nil)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    guard let first = input.first else { return 0 }
    let bytes = input.dropFirst()
    var limits = HTTPRequestParser.Limits()
    limits.headerBytes = 1024; limits.headerCount = 8; limits.bodyBytes = 512

    let whole = outcome([bytes], limits: limits)
    let cut = bytes.startIndex + Int(first) % (bytes.count + 1)
    let split = outcome([bytes[..<cut], bytes[cut...]], limits: limits)
    switch (whole, split) {
    case let (.success(a), .success(b)):
        check(a == b, "split at \(cut) changed the request")
    case let (.failure(a), .failure(b)):
        // A split may reveal a limit or a bare line end earlier; both must still refuse.
        check([400, 413, 431, 501, 505].contains(a.status) && [400, 413, 431, 501, 505].contains(b.status), "status \(a) / \(b)")
        check(!a.message.isEmpty && !b.message.isEmpty, "empty message")
    case let (.success(r), .failure(e)), let (.failure(e), .success(r)):
        // Fed in one push the reader may stop at a complete request before it sees trailing
        // bytes; only a refusal after the request is complete is allowed to differ.
        check(r == nil, "accepted one way, refused the other (\(e))")
    }
    if case let .success(r?) = whole {
        check(r.headers.count <= limits.headerCount, "too many headers accepted")
        check(r.body.count <= limits.bodyBytes, "body over the limit")
        check(r.headers.filter { $0.name == "content-length" }.count <= 1, "two Content-Length accepted")
        check(!r.headers.contains { $0.name == "transfer-encoding" }, "Transfer-Encoding accepted")
        check(Int(r.header("content-length") ?? "0") == r.body.count, "body is not Content-Length bytes")
        for h in r.headers {
            check(!h.name.isEmpty && h.name == h.name.lowercased() && h.name.utf8.allSatisfy(HTTPRequestParser.isTokenByte), "bad name \(h.name)")
            check(!h.value.utf8.contains(13) && !h.value.utf8.contains(10), "CR or LF in a value")
        }
        check(r.target.hasPrefix("/") && r.path.hasPrefix("/"), "target not a path")
    }
    return 0
}
