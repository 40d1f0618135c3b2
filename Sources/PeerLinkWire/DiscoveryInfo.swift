/// Application key/value pairs published with a node's advertisement.
///
/// Rules: keys are non-empty printable ASCII, unique ignoring case, contain no `=`, and do
/// not start with `_` (reserved for the
/// framework's own keys); each `key=value` entry is at most 255 bytes of UTF-8; all entries
/// together, each counted with its one length byte, are at most 400 bytes.
public struct DiscoveryInfo: Hashable, Sendable, Sequence {
    public private(set) var entries: [String: String]

    public static let maxEntryBytes = 255
    public static let maxTotalBytes = 400

    /// No entries.
    public init() { entries = [:] }

    public init(_ entries: [String: String]) throws {
        var total = 0
        var folded: Set<String> = []
        for (k, v) in entries {
            guard folded.insert(k.lowercased()).inserted else {
                throw WireError.invalid(field: "discovery info key '\(k)'", reason: "keys differing only in case collide in DNS-SD")
            }
            try DiscoveryInfo.validate(key: k, value: v)
            total += 1 + k.utf8.count + 1 + v.utf8.count
        }
        guard total <= DiscoveryInfo.maxTotalBytes else {
            throw WireError.limitExceeded(field: "discovery info size in bytes", value: total, limit: DiscoveryInfo.maxTotalBytes)
        }
        self.entries = entries
    }

    /// Parses `key=value` command-line arguments; a repeated key is an error.
    public init(arguments: [String]) throws {
        var dict: [String: String] = [:]
        for arg in arguments {
            guard let eq = arg.firstIndex(of: "=") else {
                throw WireError.invalid(field: "discovery info '\(arg)'", reason: "expected key=value")
            }
            let key = String(arg[..<eq])
            guard dict[key] == nil else {
                throw WireError.invalid(field: "discovery info key '\(key)'", reason: "given more than once")
            }
            dict[key] = String(arg[arg.index(after: eq)...])
        }
        try self.init(dict)
    }

    static func validate(key: String, value: String) throws {
        guard !key.isEmpty else { throw WireError.invalid(field: "discovery info key", reason: "keys may not be empty") }
        guard !key.contains("=") else { throw WireError.invalid(field: "discovery info key '\(key)'", reason: "keys may not contain '='") }
        guard key.utf8.allSatisfy({ $0 >= 0x20 && $0 <= 0x7E }) else {
            throw WireError.invalid(field: "discovery info key '\(key)'", reason: "keys must be printable ASCII (DNS-SD)")
        }
        guard !key.hasPrefix("_") else {
            throw WireError.invalid(field: "discovery info key '\(key)'", reason: "keys starting with '_' are reserved for PeerLink")
        }
        let n = key.utf8.count + 1 + value.utf8.count
        guard n <= maxEntryBytes else {
            throw WireError.limitExceeded(field: "discovery info entry '\(key)=…' in bytes", value: n, limit: maxEntryBytes)
        }
    }

    public subscript(key: String) -> String? { entries[key] }
    public func makeIterator() -> Dictionary<String, String>.Iterator { entries.makeIterator() }
    public var isEmpty: Bool { entries.isEmpty }
}
