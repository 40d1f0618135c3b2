import Foundation
import PeerLink

/// The JSON-lines protocol between the IP-lab coordinator (`peerlink-harness run --backend
/// iplab`) and its node agents (`peerlink-harness agent`, one per namespace): one JSON object
/// per line, each way.
public enum AgentProtocol {
    /// One of the scenario's links as the agent's node sees it.
    public struct LinkSetup: Sendable, Codable, Equatable {
        public var name: String
        public var kind: Scenario.LinkSpec.Kind
        /// This node's address on the link (its transport binds there).
        public var local: String
        public var subnetPrefix: String
        public init(name: String, kind: Scenario.LinkSpec.Kind, local: String, subnetPrefix: String) {
            self.name = name; self.kind = kind; self.local = local; self.subnetPrefix = subnetPrefix
        }
    }

    /// Coordinator → agent.
    public enum Command: Sendable, Codable, Equatable {
        /// Build the node and listen on `port` on every link; answer `ready`.
        case setup(scenario: Scenario, links: [LinkSetup], port: UInt16)
        /// The run starts at `t0` (monotonic nanoseconds, shared by all namespaces). The dialler
        /// invites `peer` over `endpoints` (the links up at 0) and adds each of `later` at its time.
        case go(t0: UInt64, peer: PeerID?, endpoints: [TransportEndpoint], later: [LaterEndpoint])
        /// Stop and answer `result`.
        case finish
    }

    /// Where the listener's delaying relay for a link listens, given the nodes' port: the
    /// dialler reaches a link with `delay > 0` there (DelayRelay), others at `port` itself.
    public static func relayPort(for port: UInt16) -> UInt16 { port &+ 100 }

    /// An endpoint that comes in range at `at` ms.
    public struct LaterEndpoint: Sendable, Codable, Equatable {
        public var at: Int
        public var link: String
        public var endpoint: TransportEndpoint
        public init(at: Int, link: String, endpoint: TransportEndpoint) { self.at = at; self.link = link; self.endpoint = endpoint }
    }

    /// What an agent observed by the end of the run. The dialler fills the spans and what it
    /// sent, the listener what arrived.
    public struct Result: Sendable, Codable, Equatable {
        public var upSpans: [RunRecord.Span] = []
        public var carrierSpans: [RunRecord.Span] = []
        public var sent: [RunRecord.MessageStream] = []
        public var received: [RunRecord.MessageStream] = []
        public var resources: [RunRecord.ResourceOutcome] = []
        public init() {}
    }

    /// Agent → coordinator.
    public enum Report: Sendable, Codable, Equatable {
        case ready(peer: PeerID)
        /// Something to put on the run's timeline (carrier changes, link attempts, errors).
        case mark(RunRecord.Mark)
        case result(Result)
        /// The agent cannot go on.
        case failed(String)
    }

    /// One line (without the newline).
    public static func encode<T: Encodable>(_ value: T) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    /// Decodes one line; a bad line is an error naming what was wrong.
    public static func decode<T: Decodable>(_ type: T.Type, from line: String) throws -> T {
        do {
            return try JSONDecoder().decode(type, from: Data(line.utf8))
        } catch {
            throw AgentError("bad agent line (\(line.prefix(120))): \(error)")
        }
    }
}

/// A failure of the IP lab or one of its agents.
public struct AgentError: Error, CustomStringConvertible, Equatable {
    public var description: String
    public init(_ d: String) { description = d }
}

/// Splits a byte stream into lines.
struct LineSplitter {
    private var buffer: [UInt8] = []
    mutating func feed(_ bytes: some Sequence<UInt8>) -> [String] {
        buffer.append(contentsOf: bytes)
        var lines: [String] = []
        while let i = buffer.firstIndex(of: 0x0a) {
            lines.append(String(decoding: buffer[..<i], as: UTF8.self))
            buffer.removeSubrange(...i)
        }
        return lines
    }
}
