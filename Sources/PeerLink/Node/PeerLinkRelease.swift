/// PeerLink's release, as a semantic version (`CHANGELOG.md` lists what each one holds).
public enum PeerLinkRelease {
    /// "MAJOR.MINOR.PATCH" of this build.
    public static let version = "0.9.0"
}
