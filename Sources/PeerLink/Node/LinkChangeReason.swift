/// Why a link to a peer came up or went away (`Session.Event.linkChanged`).
public enum LinkChangeReason: Equatable, Sendable, CustomStringConvertible {
    /// Up: the secure handshake authenticated the peer over this link; `remote` is the
    /// transport's address of the other end.
    case authenticated(remote: String)
    /// Down: the peer closed the link.
    case closedByRemote
    /// Down: the link's connection failed; `cause` is the transport's or the link's error.
    case failed(DialFailure.Cause)
    /// Down: nothing arrived on the link for `silence` (the keepalive's limit, `deadAfter`).
    case silent(for: Duration)
    /// Down: the negotiated medium's set-up (a Wi-Fi Direct group) was taken down.
    case setUpTakenDown(medium: Medium)

    /// The reason in the words `peerlink` prints after "link N to NAME over MEDIUM up/down: ".
    public var description: String {
        switch self {
        case let .authenticated(remote): return "authenticated link to \(remote)"
        case .closedByRemote: return "closed by the remote"
        case let .failed(cause): return cause.description
        case let .silent(silence): return "nothing received for \(Self.seconds(silence)) s (keepalive)"
        case let .setUpTakenDown(medium): return "the \(medium.rawValue) set-up was taken down"
        }
    }

    /// Seconds as the user configured them: "10", "0.6", "0.25".
    private static func seconds(_ d: Duration) -> String {
        let s = d.inSeconds
        return s == s.rounded() && abs(s) < 1e15 ? String(Int(s)) : "\(s)"
    }
}
