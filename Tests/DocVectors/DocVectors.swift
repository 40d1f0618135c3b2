import Foundation

/// The machine-readable vectors of docs/PROTOCOL.md: fenced blocks whose info string is
/// `hex <name>` (hex bytes separated by white space) or `text <name>` (an exact string).
public struct DocVectors {
    public enum Kind: String { case hex, text }
    public private(set) var blocks: [String: (kind: Kind, body: String)] = [:]
    public private(set) var names: [String] = []
    public private(set) var duplicates: [String] = []

    public struct Missing: Error, CustomStringConvertible {
        public let description: String
    }

    public static var documentURL: URL {
        URL(fileURLWithPath: #filePath)  // Tests/DocVectors/DocVectors.swift
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("docs/PROTOCOL.md")
    }

    public static func load() throws -> DocVectors {
        DocVectors(markdown: try String(contentsOf: documentURL, encoding: .utf8))
    }

    public init(markdown: String) {
        enum State { case outside, vector(Kind, String, [String]), otherBlock }
        var state = State.outside
        for line in markdown.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            let fence = line.hasPrefix("```")
            switch state {
            case .outside:
                guard fence else { continue }
                let info = line.dropFirst(3).split(separator: " ")
                if info.count == 2, let kind = Kind(rawValue: String(info[0])) {
                    state = .vector(kind, String(info[1]), [])
                } else {
                    state = .otherBlock  // diagrams, grammar: skipped up to their closing fence
                }
            case let .vector(kind, name, lines):
                if fence {
                    if blocks[name] != nil { duplicates.append(name) }
                    blocks[name] = (kind, lines.joined(separator: "\n"))
                    names.append(name)
                    state = .outside
                } else {
                    state = .vector(kind, name, lines + [line])
                }
            case .otherBlock:
                if fence { state = .outside }
            }
        }
    }

    public func hex(_ name: String) throws -> [UInt8] {
        guard let b = blocks[name], b.kind == .hex else { throw Missing(description: "no ```hex \(name)``` block in docs/PROTOCOL.md") }
        guard let bytes = DocVectors.bytes(fromHex: b.body) else { throw Missing(description: "block \(name) is not valid hex") }
        return bytes
    }

    public func text(_ name: String) throws -> String {
        guard let b = blocks[name], b.kind == .text else { throw Missing(description: "no ```text \(name)``` block in docs/PROTOCOL.md") }
        return b.body.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    public static func bytes(fromHex text: String) -> [UInt8]? {
        let digits = Array(text.unicodeScalars.filter { !$0.properties.isWhitespace })
        guard digits.count % 2 == 0, digits.allSatisfy(\.properties.isASCIIHexDigit) else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(digits.count / 2)
        var i = 0
        while i < digits.count {
            guard let b = UInt8(String(digits[i]) + String(digits[i + 1]), radix: 16) else { return nil }
            out.append(b)
            i += 2
        }
        return out
    }
}
