/// One check of `peerlink doctor`: what was looked at, whether it is fine, and if not, what to do.
/// Declared here so that each medium's target can report on itself (PeerLinkWiFiDirect's
/// `DoctorWiFi`, PeerLinkBluetooth's checks) without depending on the doctor.
public struct DoctorCheck: Sendable, Codable, Equatable {
    /// What was checked, in a few words.
    public var name: String
    /// True when the check passed.
    public var ok: Bool
    /// What was found.
    public var detail: String
    /// What to do to make the check pass; nil when there is nothing to do.
    public var fix: String?

    package init(name: String, ok: Bool, detail: String, fix: String?) {
        self.name = name; self.ok = ok; self.detail = detail; self.fix = fix
    }
}

/// Whether a medium can be used on this machine, and why not.
public struct MediumReport: Sendable, Codable, Equatable {
    /// The medium's name (e.g. "rfcomm").
    public var medium: String
    /// True when the medium can be used on this machine.
    public var usable: Bool
    /// The checks behind the verdict, in the order they were made.
    public var checks: [DoctorCheck]

    package init(medium: String, usable: Bool, checks: [DoctorCheck]) {
        self.medium = medium; self.usable = usable; self.checks = checks
    }
}
