/// Every metric the daemon exports: its name, Prometheus type, labels and help text, in one
/// table. docs/METRICS.md lists the same names (a test checks it), and `DaemonMetrics`
/// registers nothing that is not here.
public enum MetricsCatalogue {
    public enum Kind: String, Sendable { case counter, gauge }

    public struct Entry: Sendable, Equatable {
        public let name: String
        public let kind: Kind
        public let labels: [String]
        public let help: String
    }

    // Build and lifetime.
    public static let buildInfo = Entry(name: "peerlink_build_info", kind: .gauge, labels: ["version", "arch", "os"],
                                        help: "Always 1; the labels say what runs.")
    public static let startTime = Entry(name: "peerlink_start_time_seconds", kind: .gauge, labels: [],
                                        help: "When the daemon started, in seconds since 1970.")
    public static let uptime = Entry(name: "peerlink_uptime_seconds", kind: .gauge, labels: [],
                                     help: "Seconds since the daemon started (monotonic clock).")

    // Peers and links (read at scrape time, except the counters).
    public static let peersConnected = Entry(name: "peerlink_peers_connected", kind: .gauge, labels: [],
                                             help: "Peers with a session now.")
    public static let peersFound = Entry(name: "peerlink_peers_found", kind: .gauge, labels: [],
                                         help: "Peers discovery sees now (in range, connected or not).")
    public static let peersSeen = Entry(name: "peerlink_peers_seen", kind: .gauge, labels: [],
                                        help: "Distinct peers that had a session since the daemon started.")
    public static let sessions = Entry(name: "peerlink_peer_sessions_total", kind: .counter, labels: [],
                                       help: "Sessions with peers that started (a peer connected).")
    public static let linksUp = Entry(name: "peerlink_links_up", kind: .gauge, labels: ["medium"],
                                      help: "Links up now, per medium.")
    public static let linkChanges = Entry(name: "peerlink_link_changes_total", kind: .counter, labels: ["medium", "change"],
                                          help: "Links that came up or went down, per medium.")
    /// Bytes on the wire per direction and medium (`Session.wireBytes()`).
    public static let wireBytes = Entry(name: "peerlink_wire_bytes_total", kind: .counter, labels: ["direction", "medium"],
                                        help: "Bytes links moved on the wire (handshake, ciphertext, framing): sent or received, per medium.")
    public static let handovers = Entry(name: "peerlink_handovers_total", kind: .counter, labels: ["role"],
                                        help: "A role's traffic moved to another link (policy choice or fallback).")
    public static let upgrades = Entry(name: "peerlink_link_upgrade_steps_total", kind: .counter, labels: ["medium", "step"],
                                       help: "Steps of negotiating a set-up medium (Wi-Fi Direct): proposed, link-up, failed, ...")

    // Items.
    public static let itemsPending = Entry(name: "peerlink_items", kind: .gauge, labels: ["peer", "state"],
                                           help: "Outbound items waiting now, per peer and state (queued, sending).")
    public static let itemsQueued = Entry(name: "peerlink_items_queued_total", kind: .counter, labels: ["peer"],
                                          help: "Outbound items queued (outbox scan or API).")
    public static let itemsDelivered = Entry(name: "peerlink_items_delivered_total", kind: .counter, labels: ["peer"],
                                             help: "Outbound items the peer confirmed with a receipt.")
    public static let itemsExpired = Entry(name: "peerlink_items_expired_total", kind: .counter, labels: ["peer"],
                                           help: "Outbound items whose time to live ran out before delivery.")
    public static let itemsFailed = Entry(name: "peerlink_items_failed_total", kind: .counter, labels: ["peer"],
                                          help: "Outbound items given up (unreadable payload, refused for good).")
    public static let itemsReceived = Entry(name: "peerlink_items_received_total", kind: .counter, labels: ["peer"],
                                            help: "Inbound items landed in the inbox.")
    public static let filesReceived = Entry(name: "peerlink_files_received_total", kind: .counter, labels: ["peer"],
                                            help: "Plain files (not items) received into the inbox.")
    public static let itemBytes = Entry(name: "peerlink_item_bytes_total", kind: .counter, labels: ["direction"],
                                        help: "Payload bytes of items and files completed: sent (delivered) or received.")

    // Trouble.
    public static let errors = Entry(name: "peerlink_errors_total", kind: .counter, labels: ["kind"],
                                     help: "Errors the daemon logged, by kind: ledger, stream, outbox, inbox, on_receive.")

    public static let all: [Entry] = [
        buildInfo, startTime, uptime,
        peersConnected, peersFound, peersSeen, sessions, linksUp, linkChanges, wireBytes, handovers, upgrades,
        itemsPending, itemsQueued, itemsDelivered, itemsExpired, itemsFailed, itemsReceived, filesReceived, itemBytes,
        errors,
    ]
}
