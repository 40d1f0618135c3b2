import Foundation
import PeerLink
import PeerLinkTOML
import PeerLinkCore
import PeerLinkWire

/// What `peerlink daemon` runs with, read from a TOML file (docs/CONFIG.md lists every key
/// with its default). Reading checks every value it can without touching the machine's
/// radios or disks; a file with an unknown key or a value out of its domain is refused with
/// the key, its line and what is allowed.
public struct DaemonConfig: Sendable, Equatable {
    /// Who may start a session with this node.
    public enum Accept: String, Sendable, CaseIterable {
        /// Peers in the trust store; others wait in the pending list until the owner answers.
        case known
        /// Everyone.
        case all
        /// Nobody: the node only dials peers it has work for.
        case none
    }

    /// swift-log's levels, by their names.
    public static let logLevels = ["trace", "debug", "info", "notice", "warning", "error", "critical"]
    /// The media names `--media` takes.
    public static let mediaNames = ["auto", "ip", "bluetooth", "wifi-direct", "all"]
    public static let bluetoothTransportNames = ["rfcomm", "l2cap", "le"]

    public var service = "peerlink"
    /// Display name; nil: the stored name, else the host name.
    public var name: String?
    public var media = ["auto"]
    public var policy = LinkPolicy.Kind.bluetoothFirst
    public var adapter: String?
    public var bluetoothTransports = ["rfcomm", "l2cap"]
    public var wifi: String?
    /// Where the daemon keeps its ledger; relative paths in the file are relative to the file.
    public var stateDirectory = "/var/lib/peerlink"
    public var inbox = "/var/lib/peerlink/inbox"
    public var outbox = "/var/lib/peerlink/outbox"
    public var accept = Accept.known
    /// Free space the inbox's file system keeps: offers that would eat into it are refused.
    public var keepFree: UInt64 = 64 << 20
    /// Most bytes one peer's items may hold on this node (received, not yet taken away).
    public var quota: UInt64 = 4 << 30
    /// How long an outgoing item waits for its peer before it expires (seconds).
    public var ttlSeconds = 7 * 86400
    /// Command run with each delivered file: argv, or one string run by `/bin/sh -c`.
    public var onReceive: [String]?
    public var logLevel = "info"
    /// `host:port` for the Prometheus text endpoint; nil: none.
    public var metrics: String?
    /// Where the API socket (`daemon.sock`) is made; nil: by `DaemonPaths`' rule
    /// (`$PEERLINK_RUNTIME_DIR`, else `/run/peerlink` for root, else `$XDG_RUNTIME_DIR/peerlink`).
    public var runtimeDirectory: String?

    public init() {}
}

/// A configuration file that cannot be used.
public struct DaemonConfigError: Error, Equatable, CustomStringConvertible {
    public let file: String
    public let line: Int?
    public let key: String?
    public let message: String

    public var description: String { "\(file)\(line.map { ":\($0)" } ?? ""): \(message)" }
}

extension DaemonConfig {
    /// Reads the file at `path`.
    public static func load(path: String) throws -> DaemonConfig {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw DaemonConfigError(file: path, line: nil, key: nil, message: "cannot read the configuration: \(error.localizedDescription)")
        }
        let base = ((path as NSString).deletingLastPathComponent as NSString).standardizingPath
        return try parse(text, file: path, baseDirectory: base.isEmpty ? FileManager.default.currentDirectoryPath : base)
    }

    /// Reads configuration text; relative paths are taken relative to `baseDirectory`.
    public static func parse(_ text: String, file: String, baseDirectory: String) throws -> DaemonConfig {
        do {
            return try read(TOMLFields(TOMLDocument(parsing: text), unknownKeyHint: "docs/CONFIG.md lists the keys"), base: baseDirectory)
        } catch let e as TOMLError {
            throw DaemonConfigError(file: file, line: e.line, key: nil, message: e.message)
        } catch let e as TOMLFieldError {
            throw DaemonConfigError(file: file, line: e.line, key: e.key, message: e.message)
        }
    }

    private static func read(_ fields: TOMLFields, base: String) throws -> DaemonConfig {
        var f = fields
        var c = DaemonConfig()
        func path(_ p: String) -> String {
            ((p.hasPrefix("/") ? p : (base as NSString).appendingPathComponent(p)) as NSString).standardizingPath
        }
        if let s = try f.string("service") {
            do { _ = try ServiceType(s) } catch { throw f.error("service", "service = \"\(s)\": \(error)") }
            c.service = s
        }
        if let n = try f.string("name") {
            guard !n.isEmpty, n.utf8.count <= 63 else { throw f.error("name", "name must be 1 to 63 bytes of UTF-8") }
            c.name = n
        }
        if let m = try stringOrList(&f, "media") {
            for name in m where !mediaNames.contains(name) {
                throw f.error("media", "media: \"\(name)\" is not a medium; use one of: " + mediaNames.joined(separator: ", "))
            }
            guard !m.isEmpty else { throw f.error("media", "media must name at least one medium") }
            c.media = m
        }
        if let p = try f.choice("policy", LinkPolicy.Kind.allCases.map(\.rawValue)), let kind = LinkPolicy.Kind(rawValue: p) {
            c.policy = kind
        }
        c.adapter = try f.string("adapter")
        if let t = try f.strings("bluetooth_transports") {
            for name in t where !bluetoothTransportNames.contains(name) {
                throw f.error("bluetooth_transports", "bluetooth_transports: \"\(name)\" is not one; use: " + bluetoothTransportNames.joined(separator: ", "))
            }
            guard !t.isEmpty, Set(t).count == t.count else {
                throw f.error("bluetooth_transports", "bluetooth_transports must name each transport once, at least one")
            }
            c.bluetoothTransports = t
        }
        c.wifi = try f.string("wifi")
        if let s = try f.string("state_dir") { c.stateDirectory = path(s) }
        c.inbox = try f.string("inbox").map(path) ?? (c.stateDirectory as NSString).appendingPathComponent("inbox")
        c.outbox = try f.string("outbox").map(path) ?? (c.stateDirectory as NSString).appendingPathComponent("outbox")
        guard c.inbox != c.outbox else { throw f.error("outbox", "inbox and outbox must be different directories") }
        if let a = try f.choice("accept", Accept.allCases.map(\.rawValue)), let accept = Accept(rawValue: a) { c.accept = accept }
        if let k = try size(&f, "keep_free") { c.keepFree = k }
        if let q = try size(&f, "quota") {
            guard q > 0 else { throw f.error("quota", "quota must be more than 0 bytes") }
            c.quota = q
        }
        if let t = try duration(&f, "ttl") {
            guard t >= 1 else { throw f.error("ttl", "ttl must be at least 1s") }
            c.ttlSeconds = t
        }
        c.onReceive = try command(&f, "on_receive")
        if let l = try f.choice("log_level", logLevels) { c.logLevel = l }
        c.metrics = try metrics(&f)
        if let r = try f.string("runtime_dir") {
            guard !r.isEmpty else { throw f.error("runtime_dir", "runtime_dir is empty") }
            let dir = path(r), socket = DaemonPaths.socket(in: dir)
            guard socket.utf8.count <= 107 else {
                throw f.error("runtime_dir", "runtime_dir: the socket path \(socket) is \(socket.utf8.count) bytes; a Unix socket's path is at most 107")
            }
            c.runtimeDirectory = dir
        }
        try f.noOtherKeys()
        return c
    }

    private static func stringOrList(_ f: inout TOMLFields, _ key: String) throws -> [String]? {
        switch f.table[key] {
        case .string?: return try f.string(key).map { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } }
        default: return try f.strings(key)
        }
    }

    private static func size(_ f: inout TOMLFields, _ key: String) throws -> UInt64? {
        switch f.table[key] {
        case .integer?:
            return try f.int(key, min: 0, max: .max).map { UInt64($0) }
        case let .string(s)?:
            _ = try f.string(key)
            guard let n = ConfigValues.bytes(s) else {
                throw f.error(key, "\(key) = \"\(s)\" is not a size; write bytes, or a number with K, M, G or T (powers of 1024), e.g. \"64M\"")
            }
            return n
        case let v?:
            throw f.error(key, "\(key) must be a size (\"64M\" or a number of bytes), not a \(v.typeName)")
        case nil:
            _ = try f.string(key)
            return nil
        }
    }

    private static func duration(_ f: inout TOMLFields, _ key: String) throws -> Int? {
        switch f.table[key] {
        case .integer?:
            return try f.int(key, min: 0, max: 100 * 365 * 86400)
        case let .string(s)?:
            _ = try f.string(key)
            guard let n = ConfigValues.seconds(s) else {
                throw f.error(key, "\(key) = \"\(s)\" is not a duration; write a number of seconds, or numbers with s, m, h, d or w, e.g. \"7d\" or \"1d12h\"")
            }
            return n
        case let v?:
            throw f.error(key, "\(key) must be a duration (\"7d\" or a number of seconds), not a \(v.typeName)")
        case nil:
            _ = try f.string(key)
            return nil
        }
    }

    private static func command(_ f: inout TOMLFields, _ key: String) throws -> [String]? {
        switch f.table[key] {
        case .string?:
            guard let s = try f.string(key) else { return nil }
            guard !s.trimmingCharacters(in: .whitespaces).isEmpty else { throw f.error(key, "\(key) is empty") }
            return ["/bin/sh", "-c", s]
        default:
            guard let argv = try f.strings(key) else { return nil }
            guard let first = argv.first, first.hasPrefix("/") else {
                throw f.error(key, "\(key) as a list is argv: its first item must be an absolute path to the program")
            }
            return argv
        }
    }

    private static func metrics(_ f: inout TOMLFields) throws -> String? {
        switch f.table["metrics"] {
        case .bool?:
            guard try f.bool("metrics") == true else { return nil }
            return "127.0.0.1:9464"
        default:
            guard let s = try f.string("metrics") else { return nil }
            guard let address = MetricsAddress(parsing: s), address.port != 0, !address.host.isEmpty else {
                throw f.error("metrics", "metrics = \"\(s)\" is not host:port (e.g. \"127.0.0.1:9464\" or \"[::1]:9464\"), true or false")
            }
            return s
        }
    }
}
