// libFuzzer target: discovery records — TXT RDATA, advertisements, and the text validators
// (ServiceType, PeerID, Base32, DiscoveryInfo command-line arguments).
// Build: swiftc -sanitize=fuzzer,address -parse-as-library -O Sources/PeerLinkWire/*.swift Fuzz/TXTFuzz.swift -o Fuzz/bin/TXTFuzz
//
// Invariants checked beyond "no crash":
//  - TXTRecord.decode: only WireErrors; keys are non-empty, contain no '=', and are unique
//    case-insensitively; when the dictionary re-encodes, it decodes back to itself;
//  - Advertisement(txt:): an accepted advertisement round-trips through .txt and RDATA;
//  - ServiceType accepts exactly the documented rule set (checked by an independent predicate);
//  - Base32.decode accepts only canonical text (re-encoding gives the lowercased input);
//  - PeerID(parsing:) round-trips through its description;
//  - DiscoveryInfo(arguments:) results re-validate, fit in a TXT record and read back unchanged;
//  - BluetoothAdvert.decode (LE service data from the air): only WireErrors; accepted adverts
//    re-encode to exactly the input.

fileprivate func check(_ ok: Bool, _ what: @autoclosure () -> String) {
    if !ok { fatalError("invariant violated: \(what())") }
}

fileprivate func wire<T>(_ what: String, _ body: () throws -> T) -> T? {
    do { return try body() } catch let e as WireError {
        check(!e.description.isEmpty, "empty error description")
        return nil
    } catch {
        fatalError("\(what) threw a non-WireError: \(error)")
    }
}

/// The service-type rule from DESIGN.md, written independently of ServiceType.init.
fileprivate func isValidServiceType(_ u: [UInt8]) -> Bool {
    guard (1...15).contains(u.count) else { return false }
    let lower = UInt8(ascii: "a")...UInt8(ascii: "z"), digit = UInt8(ascii: "0")...UInt8(ascii: "9")
    let hyphen = UInt8(ascii: "-")
    guard u.allSatisfy({ lower.contains($0) || digit.contains($0) || $0 == hyphen }) else { return false }
    guard u.contains(where: { lower.contains($0) }) else { return false }
    guard u.first != hyphen, u.last != hyphen else { return false }
    for i in 1..<u.count where u[i] == hyphen && u[i - 1] == hyphen { return false }
    return true
}

fileprivate func lowerASCII(_ s: String) -> String {
    String(decoding: s.utf8.map { (0x41...0x5a).contains($0) ? $0 + 0x20 : $0 }, as: UTF8.self)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = Array(UnsafeBufferPointer(start: data, count: size))

    // 1. TXT RDATA and advertisements.
    if let dict = wire("TXTRecord.decode", { try TXTRecord.decode(input) }) {
        var lowered = Set<String>()
        for k in dict.keys {
            check(!k.isEmpty && !k.contains("="), "bad key \(k.debugDescription)")
            check(lowered.insert(k.lowercased()).inserted, "keys equal ignoring case: \(k.debugDescription)")
        }
        if let enc = try? TXTRecord.encode(dict) {
            guard let back = wire("TXTRecord.decode of encode", { try TXTRecord.decode(enc) }) else {
                fatalError("encoded TXT does not decode: \(dict)")
            }
            check(back == dict, "TXT round trip changed \(dict) into \(back)")
        }
        if let ad = wire("Advertisement(txt:)", { try Advertisement(txt: dict) }) {
            guard let again = wire("Advertisement(txt: ad.txt)", { try Advertisement(txt: ad.txt) }) else {
                fatalError("advertisement's own TXT is rejected: \(ad)")
            }
            check(again == ad, "advertisement round trip via .txt")
            guard let rdata = wire("TXTRecord.encode(ad.txt)", { try TXTRecord.encode(ad.txt) }),
                  let d2 = wire("TXTRecord.decode(ad rdata)", { try TXTRecord.decode(rdata) }),
                  let viaRDATA = wire("Advertisement(rdata)", { try Advertisement(txt: d2) }) else {
                fatalError("advertisement does not survive RDATA: \(ad)")
            }
            check(viaRDATA == ad, "advertisement round trip via RDATA")
        }
    }

    // 1b. The same bytes as Bluetooth LE service data.
    if let advert = wire("BluetoothAdvert.decode", { try BluetoothAdvert.decode(input) }) {
        check(advert.encode() == input, "Bluetooth advert does not re-encode to its input")
    }

    // 2. The same bytes as text, for the validators.
    guard let text = String(validating: input, as: UTF8.self) else { return 0 }

    let st = wire("ServiceType", { try ServiceType(text) })
    check((st != nil) == isValidServiceType(Array(text.utf8)), "ServiceType disagrees with the rule for \(text.debugDescription)")

    if let b = Base32.decode(text) {
        check(Base32.encode(b) == lowerASCII(text), "non-canonical base32 accepted: \(text.debugDescription)")
    }

    if let id = wire("PeerID(parsing:)", { try PeerID(parsing: text) }) {
        check(id.description == lowerASCII(text), "peer ID text not canonical")
        check((try? PeerID(parsing: id.description)) == id, "peer ID round trip")
    }

    let args = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    if let info = wire("DiscoveryInfo(arguments:)", { try DiscoveryInfo(arguments: args) }) {
        check((try? DiscoveryInfo(info.entries)) == info, "DiscoveryInfo does not re-validate")
        guard let rdata = wire("TXTRecord.encode(info)", { try TXTRecord.encode(info.entries) }) else {
            fatalError("valid discovery info does not fit a TXT record")
        }
        check(rdata.count <= DiscoveryInfo.maxTotalBytes, "discovery info RDATA of \(rdata.count) bytes")
        // What is published is what a browser reads back (keys are unique ignoring case).
        check((try? TXTRecord.decode(rdata)) == info.entries, "discovery info changed through TXT: \(info.entries)")
    }
    return 0
}
