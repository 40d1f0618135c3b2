extension NoiseHandshakeXX {
    /// A 32-byte secret derived from the completed handshake's chaining key for `label`
    /// (HKDF-SHA256 with the label as input key material). Both sides derive the same value;
    /// it is independent of the transport keys and of other labels. Used for datagram paths.
    package func exportKey(label: String) throws -> [UInt8] {
        guard isComplete else { throw NoiseError.wrongState("keys can be exported only after the handshake") }
        return NoiseSymmetricState.hkdf2(chainingKey: symmetric.chainingKey, inputKeyMaterial: Array("peerlink export \(label)".utf8)).0
    }
}
