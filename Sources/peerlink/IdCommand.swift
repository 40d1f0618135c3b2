import ArgumentParser
import Foundation
import PeerLink

struct IdCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "id",
        abstract: "Show this node's identity, creating the key on first use.",
        discussion: "The peer ID is derived from the public key (SHA-256, first 20 bytes, base32), so it is the same on every radio and cannot be claimed without the key. The display name is only a label.")

    @Option(name: .long, help: "Directory holding the identity key and trust store.")
    var configDir: String?

    @Option(name: .long, help: "Store a new display name (1-63 bytes).")
    var setName: String?

    @Flag(name: .long, help: "Print JSON.")
    var json = false

    @Flag(name: .long, help: "Also draw the peer ID as a QR code, for a phone to read off the screen (for `peerlink trust add` on another device).")
    var qr = false

    @Flag(name: .long, help: "With --qr: dark modules as blocks, for a terminal with a light background.")
    var lightBackground = false

    func validate() throws {
        if qr, json { throw ValidationError("--qr draws for a terminal; --json prints the ID as text") }
        if lightBackground, !qr { throw ValidationError("--light-background goes with --qr") }
    }

    func run() throws {
        let store = IdentityStore(directory: configDir)
        let (identity, created) = try store.loadOrCreate()
        if let setName {
            do { try store.setDisplayName(setName) } catch { throw ValidationError("--set-name: \(error)") }
        }
        let out = Output(json: json)
        out.emit("""
            peer ID:      \(identity.peerID)
            display name: \(store.displayName())
            public key:   \(Data(identity.publicKey).base64EncodedString())
            key file:     \(store.keyPath) (mode 0600, \(created ? "created now" : "existing"))
            """,
            ["peer": identity.peerID.description, "name": store.displayName(), "keyFile": store.keyPath,
             "publicKey": Data(identity.publicKey).base64EncodedString(), "created": created])
        if qr {
            // The bare ID: what `peerlink trust add` and `trust verify` take. Medium error
            // correction: a screen photographed at an angle still reads.
            let code = try QRCode(bytes: Array(identity.peerID.description.utf8), errorCorrection: .medium)
            print("\n" + code.terminalText(invert: lightBackground) + "\n")
        }
    }
}
