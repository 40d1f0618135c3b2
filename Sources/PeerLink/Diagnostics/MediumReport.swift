/// One check of `peerlink doctor`: what was looked at, whether it is fine, and if not, what to do.
/// Declared here so that each medium's target can report on itself (PeerLinkWiFiDirect's
/// `DoctorWiFi`, PeerLinkBluetooth's checks) without depending on the doctor.
public struct DoctorCheck: Sendable, Codable, Equatable {
    public var name: String
    public var ok: Bool
    public var detail: String
    public var fix: String?

    package init(name: String, ok: Bool, detail: String, fix: String?) {
        self.name = name; self.ok = ok; self.detail = detail; self.fix = fix
    }
}

/// Whether a medium can be used on this machine, and why not.
public struct MediumReport: Sendable, Codable, Equatable {
    public var medium: String
    public var usable: Bool
    public var checks: [DoctorCheck]

    package init(medium: String, usable: Bool, checks: [DoctorCheck]) {
        self.medium = medium; self.usable = usable; self.checks = checks
    }
}
