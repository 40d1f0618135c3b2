// swift-tools-version: 6.0
import PackageDescription

let package = Package(
    name: "PeerLink",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "PeerLink", targets: ["PeerLink"]),
        .library(name: "PeerLinkDBus", targets: ["PeerLinkDBus"]),
        .library(name: "PeerLinkAvahi", targets: ["PeerLinkAvahi"]),
        .library(name: "PeerLinkBluetooth", targets: ["PeerLinkBluetooth"]),
        .library(name: "PeerLinkWiFiDirect", targets: ["PeerLinkWiFiDirect"]),
        .library(name: "PeerLinkDoctor", targets: ["PeerLinkDoctor"]),
        .library(name: "PeerLinkTesting", targets: ["PeerLinkTesting"]),
        .executable(name: "peerlink-tcp-chat", targets: ["peerlink-tcp-chat"]),
        .executable(name: "peerlink", targets: ["peerlink"]),
        .executable(name: "peerlink-harness", targets: ["peerlink-harness"]),
        .library(name: "PeerLinkStore", targets: ["PeerLinkStore"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto.git", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        // TOML 1.0 for configuration and scenario files (toml++ underneath; ~10 s of a cold build).
        .package(url: "https://github.com/LebJe/TOMLKit.git", from: "0.6.0"),
        // The daemon's log lines (journald priorities under systemd).
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        // The daemon's metrics (GET /metrics, Prometheus text format): swift-metrics' API with
        // swift-prometheus' registry. 9-14 s of a cold build on CI's two cores (docs/METRICS.md).
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
    ],
    targets: [
        // Codecs and validation rules for everything that crosses the wire. No dependencies,
        // so the fuzz targets can compile it directly with the sanitizer flags.
        .target(name: "PeerLinkWire"),
        // Sans-I/O core: identity, Noise, session and transfer state machines.
        .target(
            name: "PeerLinkCore",
            dependencies: [
                "PeerLinkWire",
                "COpenSSL",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // libcrypto's ChaCha20-Poly1305 for the transport ciphers: output written in place,
        // one context per key (ChaChaPolyContext).
        .systemLibrary(
            name: "COpenSSL",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]
        ),
        // The system's SQLite (libsqlite3-dev; scripts/setup.sh installs it) for the ledger: a
        // few tables do not justify a package build on CI's two cores.
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        // The durable store-and-forward ledger (docs/STORE.md): SQLite plus crash-safe file
        // moves, with named crash points. No networking: kept free of the PeerLink I/O target.
        .target(
            name: "PeerLinkStore",
            dependencies: ["CSQLite", "PeerLinkWire", .product(name: "Crypto", package: "swift-crypto")]
        ),
        // Crash tests' workload: a sender and a receiver ledger exchanging items through files,
        // killed at the crash points and at random moments by PeerLinkStoreTests.
        .executableTarget(name: "peerlink-store-torture", dependencies: ["PeerLinkStore", "PeerLinkWire"]),
        // C wrappers for system calls Swift cannot call directly.
        .target(name: "CPeerLinkSys"),
        .systemLibrary(
            name: "CAvahi",
            pkgConfig: "avahi-client",
            providers: [.apt(["libavahi-client-dev"])]
        ),
        // libdbus-1 for BlueZ's D-Bus API (discovery): macros wrapped as constants.
        .systemLibrary(
            name: "CDBus",
            pkgConfig: "dbus-1",
            providers: [.apt(["libdbus-1-dev"])]
        ),
        // BlueZ kernel socket API (RFCOMM/L2CAP sockaddrs, L2CAP options) for the Bluetooth
        // transports; needs libbluetooth-dev's headers at build time only.
        .target(name: "CBlueZ"),
        // The medium-neutral public async API and its I/O edges: TCP, UDP, memory, the I/O loop,
        // runtime, files. No D-Bus, Avahi or BlueZ: an app that only uses TCP links none of them.
        .target(
            name: "PeerLink",
            dependencies: ["PeerLinkCore", "PeerLinkWire", "CPeerLinkSys"]
        ),
        // The D-Bus client (libdbus-1) that BlueZ and wpa_supplicant are reached through.
        .target(name: "PeerLinkDBus", dependencies: ["PeerLink", "CDBus"]),
        // DNS-SD discovery through avahi-daemon (libavahi-client).
        .target(name: "PeerLinkAvahi", dependencies: ["PeerLink", "CAvahi"]),
        // Bluetooth: RFCOMM and L2CAP transports, BlueZ discovery and advertising, the
        // management socket.
        .target(name: "PeerLinkBluetooth", dependencies: ["PeerLink", "PeerLinkDBus", "CBlueZ", "CPeerLinkSys"]),
        // Wi-Fi Direct and soft-AP through wpa_supplicant, nl80211, the upgrader.
        .target(name: "PeerLinkWiFiDirect", dependencies: ["PeerLink", "PeerLinkDBus"]),
        // `peerlink doctor`: what IP and Bluetooth need on this machine (the Wi-Fi Direct report
        // is DoctorWiFi, in PeerLinkWiFiDirect).
        // Virtual time for tests of code built on PeerLink (the harness's memory backend).
        .target(name: "PeerLinkTesting", dependencies: ["PeerLink"]),
        .target(name: "PeerLinkDoctor", dependencies: ["PeerLink", "PeerLinkAvahi", "PeerLinkBluetooth"]),
        // A TCP-only chat: shows that an app using only the neutral API links no D-Bus, Avahi or
        // BlueZ library (scripts/ci/check-example-links.sh).
        .executableTarget(name: "peerlink-tcp-chat", dependencies: ["PeerLink"], path: "Examples/tcp-chat", packageAccess: false),
        .executableTarget(
            name: "peerlink",
            dependencies: [
                "PeerLink",
                "PeerLinkAvahi",
                "PeerLinkBluetooth",
                "PeerLinkWiFiDirect",
                "PeerLinkDoctor",
                "PeerLinkDaemon",
                "PeerLinkStore",
                "CPeerLinkSys",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            packageAccess: false
        ),
        // Benchmarks: throughput, latency, CPU and handshake time against baselines measured in the
        // same run (PeerLinkHarness for its delaying relay).
        .executableTarget(name: "peerlink-bench", dependencies: ["PeerLink", "PeerLinkBluetooth", "PeerLinkHarness", "CPeerLinkSys",
                                                             .product(name: "Crypto", package: "swift-crypto")]),
        // TOML files (configuration, scenarios) read through TOMLKit, with typed fields that
        // name the key and its line in every error.
        .target(name: "PeerLinkTOML", dependencies: [.product(name: "TOMLKit", package: "TOMLKit")]),
        // The field daemon's parts that need no radio: its configuration, and (later) its
        // store-and-forward rules.
        .target(name: "PeerLinkDaemon", dependencies: ["PeerLink", "PeerLinkStore", "PeerLinkTOML",
                                                 .product(name: "Logging", package: "swift-log"),
                                                 .product(name: "Metrics", package: "swift-metrics"),
                                                 .product(name: "Prometheus", package: "swift-prometheus"),
                                                 .product(name: "Crypto", package: "swift-crypto")]),
        // The transport-selection harness: scenario files, runners, JSON and SVG reports.
        .target(name: "PeerLinkHarness", dependencies: ["PeerLink", "PeerLinkTesting", "PeerLinkBluetooth", "PeerLinkWiFiDirect", "PeerLinkTOML", "CPeerLinkSys",
                                                  "PeerLinkDaemon", "PeerLinkStore", .product(name: "Logging", package: "swift-log"),
                                                  .product(name: "Crypto", package: "swift-crypto")],
                packageAccess: false),
        .executableTarget(
            name: "peerlink-harness",
            dependencies: ["PeerLinkHarness", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            packageAccess: false
        ),
        // VirtualTime through the public API only, as an app's tests would use it.
        .testTarget(name: "PeerLinkTestingTests", dependencies: ["PeerLinkTesting", "PeerLink"], packageAccess: false),
        .testTarget(name: "PeerLinkHarnessTests", dependencies: ["PeerLinkHarness", "PeerLinkTOML", "TestKit"]),
        // Test-only: reads the hex vectors of docs/PROTOCOL.md for both test targets below.
        .target(name: "DocVectors", path: "Tests/DocVectors"),
        // Test-only: bounded waits and replayable random inputs for every test target.
        .target(name: "TestKit", path: "Tests/TestKit"),
        .testTarget(name: "PeerLinkTOMLTests", dependencies: ["PeerLinkTOML"]),
        .testTarget(name: "PeerLinkDaemonTests", dependencies: ["PeerLinkDaemon", "PeerLinkStore", "TestKit",
                                                               .product(name: "Logging", package: "swift-log")]),
        .testTarget(name: "PeerLinkWireTests", dependencies: ["PeerLinkWire", "DocVectors", "TestKit"]),
        .testTarget(
            name: "PeerLinkStoreTests",
            dependencies: ["PeerLinkStore", "CSQLite", "TestKit", .product(name: "Crypto", package: "swift-crypto")]
        ),
        .testTarget(name: "PeerLinkCoreTests", dependencies: ["PeerLinkCore", "DocVectors", "TestKit"]),
        // Test-only: exports dbus_bus_get_private so one test process can use several D-Bus
        // system buses (one per namespace host). Never linked into the library or the CLI.
        .target(
            name: "PeerLinkBusOverride",
            path: "Tests/BusOverride",
            linkerSettings: [.linkedLibrary("dbus-1")]
        ),
        .testTarget(name: "PeerLinkTests", dependencies: ["PeerLink", "PeerLinkDBus", "PeerLinkAvahi", "PeerLinkBluetooth",
                                                         "PeerLinkWiFiDirect", "PeerLinkDoctor", "PeerLinkBusOverride", "TestKit"]),
    ]
)
