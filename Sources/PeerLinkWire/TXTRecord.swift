/// DNS TXT RDATA (RFC 6763 §6): a sequence of length-prefixed strings, read as a dictionary.
package enum TXTRecord {
    /// Encodes `key=value` entries; throws if one is longer than 255 bytes.
    package static func encode(_ dict: [String: String]) throws -> [UInt8] {
        var out: [UInt8] = []
        for k in dict.keys.sorted() {
            let entry = Array("\(k)=\(dict[k] ?? "")".utf8)
            guard entry.count <= 255 else {
                throw WireError.limitExceeded(field: "TXT entry '\(k)' in bytes", value: entry.count, limit: 255)
            }
            out.append(UInt8(entry.count))
            out.append(contentsOf: entry)
        }
        return out
    }

    /// Decodes RDATA. Per RFC 6763: empty strings are skipped, an entry without `=` is a
    /// key with an empty value, only the first occurrence of a key counts, keys are
    /// compared case-insensitively. Entries that are not UTF-8 are rejected.
    package static func decode(_ rdata: [UInt8]) throws -> [String: String] {
        var r = WireReader(rdata)
        var entries: [[UInt8]] = []
        while !r.isAtEnd {
            let n = Int(try r.u8("TXT entry length"))
            entries.append(try r.take(n, "TXT entry"))
        }
        return try decode(entries: entries)
    }

    /// Decodes entries as handed over by a resolver (one byte string per entry).
    package static func decode(entries: [[UInt8]]) throws -> [String: String] {
        var out: [String: String] = [:]
        var seen: Set<String> = []
        for e in entries where !e.isEmpty {
            guard e.count <= 255 else { throw WireError.limitExceeded(field: "TXT entry in bytes", value: e.count, limit: 255) }
            let eq = e.firstIndex(of: UInt8(ascii: "=")) ?? e.endIndex
            guard eq > 0 else { continue }  // RFC 6763: an entry starting with '=' is ignored
            guard let key = String(validating: e[..<eq], as: UTF8.self) else {
                throw WireError.invalid(field: "TXT key", reason: "not valid UTF-8")
            }
            let valueBytes = eq < e.endIndex ? e[(eq + 1)...] : []
            guard let value = String(validating: valueBytes, as: UTF8.self) else {
                throw WireError.invalid(field: "TXT value of '\(key)'", reason: "not valid UTF-8")
            }
            if seen.insert(key.lowercased()).inserted { out[key] = value }
        }
        return out
    }
}
