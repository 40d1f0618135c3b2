// swift-tools-version: 6.0
// The Noise handshake and core fuzz targets. They need swift-crypto, so it cannot be compiled straight from
// the sources like the other fuzz targets; this small package builds the real PeerLinkWire and
// PeerLinkCore sources and libcrypto's module map (symlinked from the main package) with the fuzz target as an executable.
// Built and run by scripts/fuzz.sh; by hand:
//   swift build --package-path Fuzz/Handshake -c release \
//     -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library
import PackageDescription

let package = Package(
    name: "PeerLinkHandshakeFuzz",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto.git", from: "3.12.3"),
    ],
    targets: [
        .target(name: "PeerLinkWire", path: "Sources/PeerLinkWire"),
        .systemLibrary(name: "COpenSSL", path: "Sources/COpenSSL", pkgConfig: "libcrypto"),
        .target(
            name: "PeerLinkCore",
            dependencies: ["PeerLinkWire", "COpenSSL", .product(name: "Crypto", package: "swift-crypto")],
            path: "Sources/PeerLinkCore"
        ),
        .executableTarget(
            name: "HandshakeFuzz",
            dependencies: ["PeerLinkCore", "PeerLinkWire", .product(name: "Crypto", package: "swift-crypto")],
            path: "Sources/HandshakeFuzz"
        ),
        // The session core, invitation desk and path upkeep driven by hostile programs.
        .executableTarget(
            name: "CoreFuzz",
            dependencies: ["PeerLinkCore", "PeerLinkWire"],
            path: "Sources/CoreFuzz"
        ),
    ]
)
