/// PeerLink's release, as a semantic version (`CHANGELOG.md` lists what each one holds).
public enum PeerLinkVersion {
    /// "MAJOR.MINOR.PATCH" of this build.
    public static let string = "0.9.0"
}
