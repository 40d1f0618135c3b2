// libFuzzer target: the hello carried in Noise handshake messages 2 and 3 (Hello.decode).
// Build: swiftc -sanitize=fuzzer,address -parse-as-library -O Sources/PeerLinkWire/*.swift Fuzz/HelloFuzz.swift -o Fuzz/bin/HelloFuzz
//
// Invariants checked beyond "no crash":
//  - decode either returns a hello or throws a WireError;
//  - an accepted hello satisfies the documented rules (major == PeerLinkProtocol.major, a valid
//    display name of 1-63 bytes, a 16-byte token, maxFrame >= 1024);
//  - decode -> encode -> decode is stable, and encode of the result is a fixed point.

fileprivate func check(_ ok: Bool, _ what: @autoclosure () -> String) {
    if !ok { fatalError("invariant violated: \(what())") }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    let hello: Hello
    do {
        hello = try Hello.decode(input)
    } catch let e as WireError {
        check(!e.description.isEmpty, "empty error description")
        return 0
    } catch {
        fatalError("Hello.decode threw a non-WireError: \(error)")
    }
    check(Int(hello.major) == PeerLinkProtocol.major, "accepted major \(hello.major)")
    check(hello.sessionToken.count == 16, "token of \(hello.sessionToken.count) bytes")
    check(hello.maxFrame >= 1024, "maxFrame \(hello.maxFrame)")
    let n = hello.displayName.utf8.count
    check(n >= 1 && n <= Advertisement.maxDisplayNameBytes, "display name of \(n) bytes")
    do { try Advertisement.validate(displayName: hello.displayName) } catch {
        fatalError("accepted display name fails validation: \(error)")
    }

    let enc = hello.encode()
    do {
        let again = try Hello.decode(enc)
        check(again == hello, "decode(encode(h)) != h: \(again) vs \(hello)")
        check(again.encode() == enc, "encode is not a fixed point")
    } catch {
        fatalError("re-encoded hello does not decode: \(error) for \(hello)")
    }
    return 0
}
