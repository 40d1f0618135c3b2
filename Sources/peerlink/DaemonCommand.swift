import ArgumentParser
import Foundation
import Logging
import PeerLink
import PeerLinkDaemon
import PeerLinkStore

struct DaemonCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "daemon",
        abstract: "Run a field node: deliver the outbox to peers as they come into range, receive into the inbox.",
        discussion: """
        A file placed in OUTBOX/<peer>/ (the peer's ID, an ID prefix of 8 or more characters, \
        or a name in the trust store) is an item for that peer: the daemon invites the peer \
        when it comes into range, sends the file (resuming across disconnects and restarts of \
        either end), and moves it to STATE/sent/ with the peer's receipt once the peer has \
        recorded it. Each item arrives exactly once, even when either side is killed. Write \
        files into the outbox under a name starting with '.' or ending in .part or .tmp, then \
        rename them: such names are never picked up. Items the peer does not collect within \
        their time to live move to STATE/expired/ with the reason.

        Configuration: a TOML file (docs/CONFIG.md lists every key and its default); \
        `--check-config FILE` reads it and prints the settings without starting anything. \
        Under systemd (Type=notify) the daemon reports readiness and keeps the watchdog; \
        SIGTERM stops it cleanly, leaving resumable state.
        """)

    @Option(name: .long, help: ArgumentHelp("The configuration file to run with.", valueName: "file"))
    var config: String?

    @Option(name: .customLong("check-config"), help: ArgumentHelp("Read the configuration file, print its settings (defaults filled in) and exit: 0 when usable, 78 when not.", valueName: "file"))
    var checkConfig: String?

    @Option(name: .long, help: "Directory holding the identity key and trust store (default: PEERLINK_CONFIG_DIR, else ~/.config/peerlink).")
    var configDir: String?

    @Flag(name: .long, help: "Print --check-config's settings as JSON.")
    var json = false

    func validate() throws {
        if (config == nil) == (checkConfig == nil) { throw ValidationError("give either --config FILE (run) or --check-config FILE (check)") }
    }

    func run() async throws {
        if let checkConfig {
            let c = try Self.load(checkConfig)
            let out = Output(json: json)
            out.emit("\(checkConfig): usable\n" + c.entries.map { "  \($0.key) = \($0.value)" }.joined(separator: "\n"),
                     ["file": checkConfig, "usable": true, "settings": c.jsonObject])
            return
        }
        guard let config else { return }
        try await FieldNodeRunner(config: Self.load(config), configDir: configDir).run()
    }

    /// The configuration, or exit 78 (EX_CONFIG) with the file, line and reason on stderr.
    static func load(_ path: String) throws -> DaemonConfig {
        do {
            return try DaemonConfig.load(path: path)
        } catch {
            stderrLine("peerlink daemon: \(error)")
            throw ExitCode(78)
        }
    }
}

/// Builds the daemon's node from its configuration and runs it until SIGTERM or SIGINT.
struct FieldNodeRunner {
    let config: DaemonConfig
    let configDir: String?

    func run() async throws {
        let level = Logger.Level(rawValue: config.logLevel) ?? .info
        LoggingSystem.bootstrap { JournalLogHandler(label: $0, level: level) }
        let log = Logger(label: "peerlink.daemon")
        let notify = SystemdNotify()

        var args = ["--service", config.service, "--media", config.media.joined(separator: ","), "--policy", config.policy.rawValue]
        if !Set(config.media).isDisjoint(with: ["auto", "all", "bluetooth"]) {
            args += ["--bluetooth-transports", config.bluetoothTransports.joined(separator: ",")]
        }
        if let name = config.name { args += ["--name", name] }
        if let adapter = config.adapter { args += ["--adapter", adapter] }
        if let wifi = config.wifi { args += ["--wifi", wifi] }
        if let configDir { args += ["--config-dir", configDir] }
        let options = try NodeOptions.parse(args)
        let service = try options.serviceType()
        for dir in [config.stateDirectory, config.inbox, config.outbox] {
            do {
                try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            } catch {
                throw RuntimeFailure("cannot create \(dir): \(error.localizedDescription)")
            }
        }
        let (node, store, plan) = try await options.makeNode()
        for note in plan.notes { log.notice("\(note)") }
        let state = config.stateDirectory
        let location = LedgerLocation(database: state + "/ledger.sqlite", sent: state + "/sent", expired: state + "/expired",
                                      failed: state + "/failed", inbox: config.inbox)
        let ledger: Ledger
        do {
            ledger = try Ledger(location: location, now: Timestamp(millisecondsSince1970: Int64(Date().timeIntervalSince1970 * 1000)))
        } catch {
            throw RuntimeFailure("cannot open the ledger in \(state): \(error)")
        }
        if !ledger.recovery.isEmpty {
            log.notice("finished what a crash interrupted", metadata: ["settled": "\(ledger.recovery.settled.count)",
                                                                       "landed": "\(ledger.recovery.landed.count)",
                                                                       "dropped": "\(ledger.recovery.dropped.count)"])
        }
        let session = Session(node: node, policy: try options.linkPolicy())
        let advertiser = Advertiser(node: node, service: service, info: DiscoveryInfo(), discoveries: plan.discoveries(for: node))
        let browser = Browser(node: node, service: service, discoveries: plan.discoveries(for: node))
        let daemon = try FieldDaemon(config: config, parts: .init(node: node, session: session, advertiser: advertiser,
                                                                  browser: browser, trust: store),
                                     ledger: ledger, log: log)
        await daemon.start()
        let api = try startAPI(daemon, log: log)
        let metrics = startMetrics(daemon, log: log)
        do {
            try await advertiser.start()
            try await browser.start()
        } catch {
            throw RuntimeFailure("cannot advertise or browse: \(error) (run `peerlink doctor`)")
        }
        log.info("running", metadata: ["peer": "\(node.peerID)", "name": "\(node.displayName)", "service": "\(service)",
                                       "media": "\(plan.summary(service))", "inbox": "\(config.inbox)", "outbox": "\(config.outbox)"])
        notify.send("READY=1\nSTATUS=advertising '\(service)' as \(node.displayName)")
        // The watchdog beats only while the daemon's actor answers: a daemon stuck in a call
        // stops beating and systemd restarts it.
        let watchdog = Task { await notify.keepWatchdog(healthy: { await daemon.heartbeat() }) }
        let stop: @Sendable () async -> Void = {
            watchdog.cancel()
            api.stop()
            metrics?.stop()
            await daemon.stop()
        }
        installSignalHandlers {
            notify.send("STOPPING=1")
            log.info("stopping")
            await stop()
        }
        if plan.bluetoothAwaited {
            log.notice("no Bluetooth adapter yet: looking again every 10 s, and restarting to use one when it is there")
            _ = AdapterWatch.start { adapter in
                log.notice("a Bluetooth adapter is there now: restarting to use it", metadata: ["adapter": "\(adapter.name)"])
                notify.send("RELOADING=1\nSTATUS=restarting to use Bluetooth adapter \(adapter.name)")
                await stop()
                let why = restartInPlace()
                log.error("could not restart to use Bluetooth: \(why); exiting so that the service manager starts it again")
                exit(75)
            }
        }
        while true { try? await Task.sleep(for: .seconds(3600)) }
    }

    /// Serves `GET /metrics` at the configured `metrics` address (docs/METRICS.md), when set;
    /// swift-metrics' global API goes to the same registry.
    func startMetrics(_ daemon: FieldDaemon, log: Logger) -> MetricsEndpoint? {
        guard let text = config.metrics else { return nil }
        guard let address = MetricsAddress(parsing: text) else {
            log.error("metrics not served: \(text) is not host:port")
            return nil
        }
        daemon.metrics.bootstrapSwiftMetrics()
        return MetricsEndpoint(address: address, log: log) { await daemon.metricsText() }
    }

    /// Serves the local API (docs/API.md) on `daemon.sock` in the runtime directory.
    func startAPI(_ daemon: FieldDaemon, log: Logger) throws -> UnixHTTPServer {
        let access = APIAccess.forThisProcess()
        let directory = DaemonPaths.runtimeDirectory(configured: config.runtimeDirectory)
        let path = DaemonPaths.socket(in: directory)
        let api = DaemonAPI(backend: daemon)
        do {
            try DaemonPaths.prepare(directory, groupID: access.groupID)
            let server = try UnixHTTPServer(path: path, access: access) { request, caller in
                await api.handle(request, caller: caller)
            }
            server.start()
            log.info("API listening", metadata: ["socket": "\(path)",
                                                 "group": "\(access.groupID.map { _ in APIAccess.groupName } ?? "(none)")"])
            return server
        } catch {
            throw RuntimeFailure("cannot serve the API at \(path): \(error) (set runtime_dir in the configuration, or PEERLINK_RUNTIME_DIR)")
        }
    }
}
