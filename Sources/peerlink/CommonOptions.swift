import ArgumentParser
import Foundation
import PeerLink
import PeerLinkBluetooth

/// Options every networking command takes.
struct NodeOptions: ParsableArguments {
    @Option(name: .long, help: "Service type shared by the nodes that should find each other.")
    var service: String = NodeOptions.defaultService

    @Option(name: .long, help: "Directory holding the identity key and trust store.")
    var configDir: String?

    @Option(name: .long, help: "Display name for this run (default: the stored name, else the host name).")
    var name: String?

    @Option(name: .long, help: "Media to use: auto (IP, plus Bluetooth when bluetoothd has a powered adapter, plus Wi-Fi Direct upgrades when a radio can do them), ip (TCP found through mDNS/DNS-SD), bluetooth (RFCOMM/L2CAP found through BlueZ LE adverts), wifi-direct (a Wi-Fi Direct group negotiated inside a session when a file or stream starts on Bluetooth), all (IP and Bluetooth, Bluetooth must work, plus Wi-Fi Direct). A list such as bluetooth,wifi-direct picks several; leave wifi-direct out to exclude it.")
    var media: String = "auto"

    @Option(name: .long, help: "Bluetooth adapter to use, by name (hci1) or address (default: the first powered one).")
    var adapter: String?

    @Option(name: .long, help: ArgumentHelp("Bluetooth transports to listen and dial on, in order: rfcomm, l2cap (L2CAP over BR/EDR), le (L2CAP over Bluetooth LE instead of BR/EDR; the peer must choose le too). Default: rfcomm,l2cap.", valueName: "list"))
    var bluetoothTransports: String?

    @Option(name: .long, help: ArgumentHelp("Wi-Fi radio for Wi-Fi Direct upgrades (default: the first one that can do P2P or soft-AP; `peerlink doctor` says which can). While the command runs, the radio stays under the system's wpa_supplicant (added when it was not, removed on exit), so an upgrade does not wait for it; a radio another wpa_supplicant or hostapd drives, or NetworkManager manages, is never used (NetworkManager takes down groups it did not start; `peerlink doctor` says how to hand a radio over).", valueName: "iface"))
    var wifi: String?

    @Option(name: .long, help: "Link policy when a peer has several links: bluetooth-first, wifi-first, lowest-latency, bluetooth-only, ip-only.")
    var policy: String = LinkPolicy.Kind.bluetoothFirst.rawValue

    @Option(name: .long, help: ArgumentHelp("Medium to use only when nothing else is up: ip (e.g. metered Wi-Fi) or bluetooth. Repeatable.", valueName: "medium"))
    var avoid: [String] = []

    @Flag(name: .long, help: "Also send reliable messages on a second link while one is up (up to a quarter of its throughput), so a link that fails silently delays nothing; costs sending them twice.")
    var copyMessages = false

    @Flag(name: .long, help: "Print one JSON object per line instead of text.")
    var json = false

    func linkPolicy() throws -> LinkPolicy {
        guard let kind = LinkPolicy.Kind(rawValue: policy) else {
            throw ValidationError("--policy '\(policy)' is not known; use one of: " + LinkPolicy.Kind.allCases.map(\.rawValue).joined(separator: ", "))
        }
        var p = LinkPolicy(kind)
        p.copyMessages = copyMessages
        for a in avoid {
            switch a {
            case "ip", "wifi", "tcp": p.avoid.insert(.ip)
            case "bluetooth", "bt": p.avoid.insert(.bluetooth)
            default: throw ValidationError("--avoid '\(a)' is not known; use ip or bluetooth")
            }
        }
        return p
    }

    /// The service type when `--service` is not given.
    static let defaultService = "peerlink"

    func serviceType() throws -> ServiceType {
        do { return try ServiceType(service) } catch { throw ValidationError("--service: \(error)") }
    }

    /// Loads (or creates) the identity and builds a node on the chosen media; returns the
    /// plan too, for the discovery backends that go with it. The key file and the display name
    /// are read on a thread of their own while bluetoothd is asked for its adapters: neither
    /// waits for the other.
    func makeNode() async throws -> (Node, IdentityStore, MediaPlan) {
        let store = IdentityStore(directory: configDir)
        let wanted = name
        async let local = BlockingCall.run("pl.identity") { () throws -> (Identity, String) in
            (try store.loadOrCreate().identity, wanted ?? store.displayName())
        }
        let (media, adapter, wifi, links) = (self.media, self.adapter, self.wifi, bluetoothTransports)
        // bluetoothd answers its adapter list at once when it is well; when it is not, the
        // command says what it waits for instead of staying silent until the call gives up.
        let out = Output(json: json)
        let waiting = Task {
            try await Task.sleep(for: .seconds(3))
            let text = "still waiting for bluetoothd to list its adapters (3 s so far; given up after 25 s)"
            out.emit("note: \(text)", ["event": "notice", "text": text])
        }
        defer { waiting.cancel() }
        let plan = try await BlockingCall.run("pl.media") {
            try MediaPlan.make(media: media, adapter: adapter, wifi: wifi, bluetooth: links)
        }
        let (identity, display) = try await local
        do {
            return (try Node(identity: identity, displayName: display, transports: plan.transports, upgraders: plan.upgraders), store, plan)
        } catch {
            throw ValidationError("--name: \(error)")
        }
    }
}

/// Options of commands that answer invitations.
struct AcceptOptions: ParsableArguments {
    @Flag(name: .long, help: "Accept every invitation without asking.")
    var acceptAll = false

    @Flag(name: .long, help: "Accept invitations from peers in the trust store (see `peerlink trust`); decline others.")
    var acceptKnown = false

    func validate() throws {
        if acceptAll && acceptKnown { throw ValidationError("use either --accept-all or --accept-known, not both") }
    }
}

/// Exit cleanly (after telling peers) on Ctrl-C or SIGTERM.
func installSignalHandlers(_ onSignal: @escaping @Sendable () async -> Void) {
    for sig in [SIGINT, SIGTERM] {
        signal(sig, SIG_IGN)
        let src = DispatchSource.makeSignalSource(signal: sig, queue: .main)
        src.setEventHandler {
            Task {
                await onSignal()
                exit(sig == SIGINT ? 130 : 143)
            }
        }
        src.resume()
        SignalSources.keep(src)
    }
}

enum SignalSources {
    nonisolated(unsafe) static var sources: [DispatchSourceSignal] = []
    static func keep(_ s: DispatchSourceSignal) { sources.append(s) }
}
