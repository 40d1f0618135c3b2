// libFuzzer target: session frames (Frame.decode / Record.decode).
// Build: swiftc -sanitize=fuzzer,address -parse-as-library -O Sources/PeerLinkWire/*.swift Fuzz/FrameFuzz.swift -o Fuzz/bin/FrameFuzz
//
// Invariants checked beyond "no crash":
//  - decode either returns a frame or throws a WireError (nothing else);
//  - a rejected input yields an error whose description is a non-empty sentence;
//  - an accepted frame re-encodes to exactly the input bytes (the codec is canonical), except
//    that an unknown close-reason byte is normalised to 0 (`unspecified`);
//  - the re-encoding decodes to an equal frame and never exceeds WireLimits.frame;
//  - a frame's encodedParts (head, payload), where it has them, join into its encoding;
//  - split where payloadLayout says (as a link decrypting a payload apart does), the input
//    decodes through decode(head:payload:) to the same frame or the same kind of failure,
//    and the offset is where encodedParts cuts;
//  - limits hold on accepted frames (invite context, names, close text, seq > 0).

fileprivate func check(_ ok: Bool, _ what: @autoclosure () -> String) {
    if !ok { fatalError("invariant violated: \(what())") }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    let apart = Frame.payloadLayout(Array(input.prefix(Frame.payloadPeek))).flatMap { layout -> Result<Frame, Error>? in
        guard layout.offset <= input.count else { return nil }
        return Result { try Frame.decode(head: Array(input[..<layout.offset]), payload: Array(input[layout.offset...])) }
    }
    let frame: Frame
    do {
        frame = try Frame.decode(input)
    } catch let e as WireError {
        check(!e.description.isEmpty, "empty error description")
        if case let .success(f)? = apart { fatalError("decoded apart as \(f) but whole it fails: \(e)") }
        return 0
    } catch {
        fatalError("Frame.decode threw a non-WireError: \(error)")
    }

    let encoded = frame.encode()
    var expected = input
    if input.count >= 2, input[0] == Frame.Kind.close.rawValue, CloseReason(rawValue: input[1]) == nil {
        expected[1] = CloseReason.unspecified.rawValue
    }
    check(encoded == expected, "re-encoding differs from the accepted input: \(frame)")
    check(encoded.count <= WireLimits.frame, "re-encoding longer than the frame limit")
    if let parts = frame.encodedParts() {
        check(parts.head + parts.payload == encoded, "encodedParts do not join into the encoding of \(frame)")
    }
    if let apart {
        guard case let .success(f) = apart else { fatalError("decodes whole as \(frame) but not apart: \(apart)") }
        check(f == frame, "decoded apart as \(f), whole as \(frame)")
        check(frame.encodedParts()?.head.count == Frame.payloadLayout(Array(input.prefix(Frame.payloadPeek)))?.offset,
              "payloadLayout and encodedParts cut \(frame) at different places")
    } else {
        check(frame.encodedParts() == nil, "\(frame) has encodedParts but no payloadLayout")
    }
    do {
        let again = try Frame.decode(encoded)
        check(again == frame, "decode(encode(f)) != f for \(frame)")
    } catch {
        fatalError("re-encoded frame does not decode: \(error) for \(frame)")
    }

    switch frame {
    case let .invite(_, _, context):
        check(context.count <= WireLimits.inviteContext, "invite context over the limit")
    case let .reliable(seq, record):
        check(seq > 0, "reliable frame with seq 0")
        switch record {
        case let .streamOpen(_, name):
            check(name.utf8.count <= WireLimits.name, "stream name over the limit")
        case let .resourceOffer(_, _, sha, name):
            check(sha.count == 32, "hash not 32 bytes")
            check(name.utf8.count <= WireLimits.name, "resource name over the limit")
        case let .resourceOfferKeyed(_, _, key, name):
            check(key.count == 32, "content key not 32 bytes")
            check(name.utf8.count <= WireLimits.name, "resource name over the limit")
        case let .resourceDigest(_, sha):
            check(sha.count == 32, "hash not 32 bytes")
        default: break
        }
    case let .close(_, text):
        check(text.utf8.count <= WireLimits.reasonText, "close text over the limit")
    default: break
    }
    return 0
}
