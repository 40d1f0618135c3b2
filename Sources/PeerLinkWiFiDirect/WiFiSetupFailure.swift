import PeerLink
/// Why wpa_supplicant says a set-up (soft-AP start, station join, P2P group formation or
/// join) failed, in words a user can act on, with the signal or property that said so.
public enum WiFiSetupFailure: Error, Equatable, Sendable, CustomStringConvertible {
    /// The 4-way handshake failed the way a wrong key makes it fail; `evidence` says how
    /// wpa_supplicant told: its `PskMismatch` signal (2.11 and later), or, as 2.10 reports it
    /// on D-Bus, a `DisconnectReason` while the interface was in `4way_handshake` (the very
    /// test behind its log line "pre-shared key may be incorrect").
    case wrongPassphrase(evidence: String)
    /// Attempts the other side refused or broke off (`AuthStatusCode`, `AssocStatusCode`,
    /// `DisconnectReason`), the last one named; wpa_supplicant retries after each.
    case attemptsFailed(count: Int, last: Attempt)
    /// `P2PDevice.GroupFormationFailure` with wpa_supplicant's reason text.
    case groupFormation(String)
    /// `P2PDevice.GONegotiationFailure` with its P2P status code.
    case goNegotiation(status: Int)
    /// `P2PDevice.InvitationResult` with a non-zero P2P status code.
    case invitation(status: Int)
    /// `P2PDevice.WpsFailed` (WPS configuration error code, when given).
    case wps(configError: Int?)
    /// The interface went to `interface_disabled` (radio switched off, rfkill, driver gone).
    case interfaceDisabled
    /// wpa_supplicant left the bus.
    case supplicantStopped

    /// One failed attempt as wpa_supplicant reports it.
    public enum Attempt: Equatable, Sendable, CustomStringConvertible {
        /// The access point or group owner refused authentication with this IEEE 802.11 status code
        /// (`AuthStatusCode`).
        case authenticationRejected(status: Int)
        /// The access point or group owner refused association with this IEEE 802.11 status code
        /// (`AssocStatusCode`).
        case associationRejected(status: Int)
        /// The link was broken off with this IEEE 802.11 reason code (`DisconnectReason`).
        case disconnected(reason: Int)

        public var description: String {
            switch self {
            case let .authenticationRejected(s): return "authentication rejected (AuthStatusCode \(s)\(Self.statusName(s)))"
            case let .associationRejected(s): return "association rejected (AssocStatusCode \(s)\(Self.statusName(s)))"
            case let .disconnected(r): return "disconnected by the other side (DisconnectReason \(r)\(Self.reasonName(r)))"
            }
        }

        /// IEEE 802.11 status codes a peer's access point or group owner may answer with.
        static func statusName(_ s: Int) -> String {
            switch s {
            case 1: return ": unspecified failure"
            case 10: return ": capabilities not supported"
            case 13: return ": authentication algorithm not supported"
            case 15: return ": challenge failure"
            case 17: return ": the access point is full"
            case 30: return ": rejected temporarily, try again later"
            case 43, 44, 45: return ": cipher or key management refused"
            default: return ""
            }
        }

        /// IEEE 802.11 reason codes (the ones a group member sees).
        static func reasonName(_ r: Int) -> String {
            switch r {
            case 1: return ": unspecified"
            case 2: return ": previous authentication no longer valid"
            case 3: return ": the other side is leaving"
            case 4: return ": inactivity"
            case 5: return ": the access point is busy"
            case 6, 7: return ": frame from a non-associated station"
            case 8: return ": the other side left"
            case 14: return ": message integrity failure"
            case 15: return ": 4-way handshake timeout (wrong passphrase?)"
            case 16: return ": group key handshake timeout"
            case 23: return ": 802.1X authentication failed"
            default: return ""
            }
        }
    }

    public var description: String {
        switch self {
        case let .wrongPassphrase(evidence): return "wrong passphrase (\(evidence))"
        case let .attemptsFailed(count, last): return "\(count) attempts failed, the last: \(last)"
        case let .groupFormation(reason):
            return "the group did not form (GroupFormationFailure\(reason.isEmpty ? "" : " \(reason)")): wrong passphrase, or the other side is gone or out of range"
        case let .goNegotiation(status): return "group owner negotiation failed (GONegotiationFailure, P2P status \(status)\(Self.p2pStatusName(status)))"
        case let .invitation(status): return "the invitation failed (InvitationResult, P2P status \(status)\(Self.p2pStatusName(status)))"
        case let .wps(code): return "WPS provisioning failed (WpsFailed\(code.map { ", config error \($0)" } ?? ""))"
        case .interfaceDisabled: return "the radio was disabled (interface_disabled: switched off, rfkill or driver gone)"
        case .supplicantStopped: return "wpa_supplicant stopped"
        }
    }

    /// Wi-Fi P2P status codes (Wi-Fi P2P specification, table 8).
    static func p2pStatusName(_ s: Int) -> String {
        switch s {
        case 1: return ": information unavailable"
        case 2: return ": incompatible parameters"
        case 3: return ": limit reached"
        case 4: return ": invalid parameters"
        case 5: return ": unable to accommodate"
        case 6: return ": previous protocol error"
        case 7: return ": no common channels"
        case 8: return ": unknown P2P group"
        case 9: return ": both want to be group owner"
        case 10: return ": incompatible provisioning method"
        case 11: return ": rejected by the user"
        default: return ""
        }
    }
}
