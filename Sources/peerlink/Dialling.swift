import ArgumentParser
import Foundation
import PeerLink

/// A node that browses for one peer and invites it into a session, reconnecting on demand.
final class Dialling: @unchecked Sendable {
    let node: Node
    let session: Session
    let directory: PeerDirectory
    let output: Output
    let selector: PeerSelector
    let service: ServiceType
    let lookupTimeout: Double
    let context: [UInt8]
    private(set) var peer: PeerInfo?

    init(_ options: NodeOptions, command: String, peer text: String, lookupTimeout: Double, context: [UInt8],
         config: SessionConfig = SessionConfig()) async throws {
        service = try options.serviceType()
        let (n, _, plan) = try await options.makeNode()
        node = n
        output = Output(json: options.json)
        for note in plan.notes { output.note(note) }
        session = Session(node: n, config: config, policy: try options.linkPolicy())
        let browser = Browser(node: n, service: service, discoveries: plan.discoveries(for: n))
        do {
            directory = try await PeerDirectory(browser: browser, output: output)
        } catch {
            throw RuntimeFailure("cannot browse: \(error) (run `peerlink doctor`)")
        }
        selector = PeerSelector(text: text)
        self.lookupTimeout = lookupTimeout
        self.context = context
        let s = session
        session.follow(browser)
        _ = ControlServer.start(command: command, node: n, session: s, output: output)
        installSignalHandlers { await s.disconnect() }
    }

    /// Finds the peer and invites it; throws after `lookupTimeout` without a match.
    func connect() async throws -> PeerInfo {
        output.note("looking for '\(selector.text)' on '\(service)'…")
        let p = try await directory.find(selector, service: service.name, timeout: lookupTimeout)
        peer = p
        output.emit("inviting \(describe(p))", ["event": "inviting"].merging(json(p)) { a, _ in a })
        try await node.invite(p, to: session, context: context, timeout: .seconds(30))
        return p
    }

    /// Tries to invite the peer again until it accepts (after a link loss). Uses the latest
    /// discovery record; mDNS may never report the old one as lost.
    func reconnect() async -> Bool {
        var attempt = 0
        while !Task.isCancelled {
            attempt += 1
            if let p = (directory.all.first { $0.peerID == peer?.peerID }) ?? peer {
                do {
                    try await node.invite(p, to: session, context: context, timeout: .seconds(10))
                    return true
                } catch {
                    if attempt == 1 || attempt % 10 == 0 {
                        output.note("reconnecting to \(p.displayName): \(error)")
                    }
                }
            }
            try? await Task.sleep(nanoseconds: 1_000_000_000)
        }
        return false
    }
}
