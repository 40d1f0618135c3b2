/// Protocol limits. Anything above them from the network is rejected with a clear error.
package enum WireLimits {
    /// Largest Noise message (2-byte length prefix on stream links).
    package static let noiseMessage = 65535
    /// Largest frame: a Noise message minus the 16-byte AEAD tag.
    package static let frame = noiseMessage - 16
    /// Largest invitation context.
    package static let inviteContext = 4096
    /// Largest stream or resource name.
    package static let name = 255
    /// Largest close reason text.
    package static let reasonText = 255
}
