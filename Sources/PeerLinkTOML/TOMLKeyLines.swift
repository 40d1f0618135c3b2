/// Where each key of a TOML text is set, found by reading the text line by line: `[table]` and
/// `[[array]]` headers and `key = value` lines (bare, quoted or dotted keys). TOMLKit does not
/// report positions of values, and an error about a value should name its line. Keys inside
/// inline tables are found under their table's line.
struct TOMLKeyLines: Sendable {
    private var lineOfPath: [String: Int] = [:]

    init(_ text: String) {
        var prefix = ""
        var arrayCounts: [String: Int] = [:]
        var inMultiline: String?  // the closing quote of a multi-line string being skipped
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let number = index + 1
            var line = Substring(raw)
            if let close = inMultiline {
                if line.contains(close) { inMultiline = nil }
                continue
            }
            line = line.drop(while: { $0 == " " || $0 == "\t" })
            if line.hasPrefix("[[") {
                let name = Self.keyPath(line.dropFirst(2).prefix(while: { $0 != "]" }))
                arrayCounts[name, default: 0] += 1
                prefix = "\(name)[\(arrayCounts[name] ?? 1)]"
                lineOfPath[prefix] = number
                lineOfPath[name] = lineOfPath[name] ?? number
            } else if line.hasPrefix("[") {
                prefix = Self.keyPath(line.dropFirst().prefix(while: { $0 != "]" }))
                lineOfPath[prefix] = number
            } else if let eq = Self.assignment(line) {
                let key = Self.keyPath(line[..<eq])
                guard !key.isEmpty else { continue }
                lineOfPath[prefix.isEmpty ? key : "\(prefix).\(key)"] = number
                let value = line[line.index(after: eq)...].drop(while: { $0 == " " || $0 == "\t" })
                for quote in ["\"\"\"", "'''"] where value.hasPrefix(quote) && !value.dropFirst(3).contains(quote) {
                    inMultiline = quote
                }
            }
        }
    }

    func line(of path: String) -> Int? {
        if let n = lineOfPath[path] { return n }
        // A key inside an inline table or an array item: the line of its nearest parent.
        var p = Substring(path)
        while let cut = p.lastIndex(where: { $0 == "." || $0 == "[" }) {
            p = p[..<cut]
            if let n = lineOfPath[String(p)] { return n }
        }
        return nil
    }

    /// The `=` of a `key = value` line, outside quotes; nil for comments and other lines.
    private static func assignment(_ line: Substring) -> Substring.Index? {
        guard let first = line.first, first != "#" else { return nil }
        var quote: Character?
        for i in line.indices {
            let c = line[i]
            if let q = quote { if c == q { quote = nil }; continue }
            if c == "\"" || c == "'" { quote = c } else if c == "=" { return i } else if c == "#" { return nil }
        }
        return nil
    }

    /// `a . "b c" . d` → `a.b c.d`.
    private static func keyPath(_ text: Substring) -> String {
        var parts: [String] = []
        var current = ""
        var quote: Character?
        for c in text {
            if let q = quote {
                if c == q { quote = nil } else { current.append(c) }
            } else if c == "\"" || c == "'" {
                quote = c
            } else if c == "." {
                parts.append(current); current = ""
            } else if c != " " && c != "\t" {
                current.append(c)
            }
        }
        parts.append(current)
        return parts.joined(separator: ".")
    }
}
