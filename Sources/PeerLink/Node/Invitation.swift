import Foundation
import Synchronization
import PeerLinkCore
import PeerLinkWire

/// An invitation from a remote peer, handed to the application by an `Advertiser`.
/// Answer it once with `accept(into:)` or `decline()`; unanswered, it is declined when its
/// timeout passes.
public final class Invitation: Sendable {
    /// The inviting peer; its ID is authenticated by the handshake.
    public let peer: PeerID
    /// The name the inviter announced; metadata only.
    public let displayName: String
    /// Opaque data the inviter attached (at most ``maxContextBytes``).
    public let context: [UInt8]
    /// The most bytes of context an invitation carries.
    public static let maxContextBytes = WireLimits.inviteContext
    /// How long the inviter waits for an answer; unanswered, the invitation is declined then.
    public let timeout: Duration
    private let answer = OneShot<Session?>()

    init(peer: PeerID, displayName: String, context: [UInt8], timeout: Duration) {
        self.peer = peer; self.displayName = displayName; self.context = context; self.timeout = timeout
    }

    /// Accepts: the peer joins `session`.
    public func accept(into session: Session) {
        // Counted until the link has joined, so that a `disconnect()` right after waits for it.
        session.joining.begin()
        if !answer.fulfil(session) { session.joining.end() }
    }
    /// Declines: the inviter's `invite` fails with `invitationDeclined`. Only the first answer
    /// counts.
    public func decline() { answer.fulfil(nil) }

    /// Waits for the answer, or declines after the timeout.
    func decision() async -> Session? {
        let timer = Task { [answer, timeout] in
            try await Runtime.sleep(nanoseconds: UInt64(timeout.inSeconds * 1e9))
            answer.fulfil(nil)
        }
        defer { timer.cancel() }
        return await answer.value()
    }
}

/// A value set once and awaited by one or more tasks.
final class OneShot<T: Sendable>: Sendable {
    private let state = Mutex<(result: T?, done: Bool, waiters: [CheckedContinuation<T, Never>])>((nil, false, []))

    /// Sets the value; returns false (and changes nothing) if it was set before.
    @discardableResult
    func fulfil(_ v: T) -> Bool {
        let w: [CheckedContinuation<T, Never>]? = state.withLock { s in
            guard !s.done else { return nil }
            s.done = true
            s.result = v
            defer { s.waiters.removeAll() }
            return s.waiters
        }
        guard let w else { return false }
        for c in w { c.resume(returning: v) }
        return true
    }

    func value() async -> T {
        await withCheckedContinuation { c in
            let v: T?? = state.withLock { s in
                if s.done { return .some(s.result) }
                s.waiters.append(c)
                return .none
            }
            if case let .some(r) = v, let r { c.resume(returning: r) }
        }
    }
}
