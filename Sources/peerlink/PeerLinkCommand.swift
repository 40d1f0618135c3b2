import ArgumentParser
import Foundation
import PeerLink

@main
struct PeerLinkCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "peerlink",
        abstract: "Nearby peer-to-peer messaging, files and streams over Bluetooth and Wi-Fi, with no server.",
        discussion: """
        Every node has a key pair; its peer ID is derived from the public key and shown by \
        `peerlink id`. Nodes find each other per service type (`--service`, 1-15 lowercase \
        letters, digits, hyphens), authenticate every link with Noise XX, and exchange data \
        inside sessions. Start with `peerlink doctor` to see which media work here.

        Environment: PEERLINK_CONFIG_DIR overrides where the key is kept \
        (default $XDG_CONFIG_HOME/peerlink, else ~/.config/peerlink).
        """,
        version: PeerLinkRelease.version,
        subcommands: [IdCommand.self, DoctorCommand.self, BrowseCommand.self, AdvertiseCommand.self,
                      ChatCommand.self, SendCommand.self, ReceiveCommand.self, LinksCommand.self, TrustCommand.self,
                      DaemonCommand.self, StatusCommand.self, PendingCommand.self]
    )

    static func main() async {
        HeapTuning.keepFreedHeap()  // bulk transfers fault pages in again otherwise
        await main(nil)
    }
}
