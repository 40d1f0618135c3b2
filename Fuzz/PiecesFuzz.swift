// libFuzzer target: link-level pieces (PieceJoiner, FramePieces.split; PROTOCOL §6.3).
// Build: swiftc -sanitize=fuzzer,address -parse-as-library -O Sources/PeerLinkWire/*.swift Fuzz/PiecesFuzz.swift -o Fuzz/bin/PiecesFuzz
//
// The input is a sequence of link messages, each as `length u16 | bytes` (a cut-short last
// one is taken as it is), fed to one joiner in order. Invariants beyond "no crash":
//  - accept either returns nil (a piece was kept), the bytes of a whole frame, or throws a
//    WireError with a non-empty description;
//  - a joined frame never exceeds WireLimits.frame, and a non-piece message passes through
//    unchanged while nothing is being joined;
//  - splitting the whole input at a size taken from its first byte and joining the pieces
//    gives the input back.

fileprivate func check(_ ok: Bool, _ what: @autoclosure () -> String) {
    if !ok { fatalError("invariant violated: \(what())") }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    var joiner = PieceJoiner()
    var offset = 0
    while offset < input.count {
        let declared = offset + 1 < input.count ? Int(input[offset]) << 8 | Int(input[offset + 1]) : 0
        let start = min(offset + 2, input.count)
        let end = min(start + declared, input.count)
        let message = Array(input[start..<end])
        offset = end == start ? input.count : end
        let wasJoining = joiner.isJoining
        do {
            if let whole = try joiner.accept(message) {
                check(whole.count <= WireLimits.frame, "joined frame of \(whole.count) bytes")
                if message.first != FramePieces.kind {
                    check(!wasJoining && whole == message, "a whole message did not pass through unchanged")
                }
            }
        } catch let e as WireError {
            check(!e.description.isEmpty, "empty error description")
            joiner = PieceJoiner()  // the link is closed on any error
        } catch {
            fatalError("accept threw a non-WireError: \(error)")
        }
    }

    if let first = input.first, input.count <= WireLimits.frame {
        let limit = Int(first) + 1
        var j = PieceJoiner()
        var joined: [[UInt8]] = []
        for piece in FramePieces.split(input, maxFrame: limit) {
            do {
                if let w = try j.accept(piece) { joined.append(w) }
            } catch {
                // A whole frame (it fit) that itself starts with the PIECE type byte is a piece
                // to the joiner: that is not a frame the session ever sends.
                check(input.count <= limit && input.first == FramePieces.kind, "split pieces refused: \(error)")
                return 0
            }
        }
        if !(input.count <= limit && input.first == FramePieces.kind) {
            check(joined == [input], "split then joined differs from the input (limit \(limit))")
        }
    }
    return 0
}
