/// Protocol limits. Anything above them from the network is rejected with a clear error.
public enum WireLimits {
    /// Largest Noise message (2-byte length prefix on stream links).
    public static let noiseMessage = 65535
    /// Largest frame: a Noise message minus the 16-byte AEAD tag.
    public static let frame = noiseMessage - 16
    /// Largest invitation context.
    public static let inviteContext = 4096
    /// Largest stream or resource name.
    public static let name = 255
    /// Largest close reason text.
    public static let reasonText = 255
}
