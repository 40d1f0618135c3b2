// A chat between two processes over TCP that uses only the `PeerLink` library: no discovery
// daemon, no D-Bus, no Bluetooth. One side listens on a port, the other is told the address.
// Every line typed is sent to the other side, and every line received is printed.
//
//   peerlink-tcp-chat --listen PORT [--name NAME]
//   peerlink-tcp-chat --connect HOST:PORT [--name NAME]
//
// The listener runs until it is stopped; the connecting side leaves the session when its input
// ends. scripts/ci/check-example-links.sh builds nothing itself: it checks with ldd that this
// binary links none of libdbus-1, libavahi-client, libavahi-common, libbluetooth, and runs it
// on loopback.
import Foundation
import PeerLink

enum Mode {
    case listen(port: UInt16)
    case connect(host: String, port: UInt16)
}

func usage(_ why: String) -> Never {
    FileHandle.standardError.write(Data("peerlink-tcp-chat: \(why)\nusage: peerlink-tcp-chat --listen PORT | --connect HOST:PORT [--name NAME]\n".utf8))
    exit(2)
}

func parse(_ args: [String]) -> (Mode, String) {
    var mode: Mode?
    var name = "tcp-chat-\(getpid())"
    var i = 0
    while i < args.count {
        let value = i + 1 < args.count ? args[i + 1] : nil
        switch args[i] {
        case "--listen":
            guard let v = value, let port = UInt16(v) else { usage("--listen needs a port") }
            mode = .listen(port: port)
        case "--connect":
            guard let v = value, let colon = v.lastIndex(of: ":"), let port = UInt16(v[v.index(after: colon)...]) else {
                usage("--connect needs HOST:PORT")
            }
            let host = String(v[..<colon]).trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
            mode = .connect(host: host, port: port)
        case "--name":
            guard let v = value else { usage("--name needs a name") }
            name = v
        default:
            usage("unknown argument \(args[i])")
        }
        i += 2
    }
    guard let mode else { usage("say --listen or --connect") }
    return (mode, name)
}

/// Standard input's lines, read on a thread of their own (never on the cooperative pool).
func inputLines() -> AsyncStream<String> {
    let (lines, sink) = AsyncStream.makeStream(of: String.self)
    Thread.detachNewThread {
        while let line = readLine() { sink.yield(line) }
        sink.finish()
    }
    return lines
}

/// Writes a line to standard output at once (unbuffered, so a pipe sees it).
func say(_ text: String) {
    FileHandle.standardOutput.write(Data((text + "\n").utf8))
}

/// Prints the session's messages and peer changes; returns when the events end.
func printEvents(of session: Session, connected: AsyncStream<PeerID>.Continuation? = nil) async {
    for await event in session.events {
        switch event {
        case let .peerStateChanged(peer, name, state):
            say("* \(name) (\(peer)) \(state.rawValue)")
            if state == .connected { connected?.yield(peer) }
        case let .message(_, bytes, _):
            say(String(decoding: bytes, as: UTF8.self))
        default:
            break
        }
    }
}

let (mode, name) = parse(Array(CommandLine.arguments.dropFirst()))
let service = try ServiceType("tcp-chat")

switch mode {
case let .listen(port):
    let node = try Node(identity: Identity(), displayName: name, transports: [TCPTransport()])
    _ = try await node.start(port: port)
    let session = Session(node: node)
    let advertiser = Advertiser(node: node, service: service)
    try await advertiser.start()
    say("listening on port \(port) as \(node.peerID)")
    Task { await printEvents(of: session) }
    Task {
        for await invitation in advertiser.invitations { invitation.accept(into: session) }
    }
    for await line in inputLines() {
        let peers = await session.connectedPeers()
        if !peers.isEmpty { try? await session.send(Array(line.utf8), to: peers) }
    }
    // Input ended (e.g. started with </dev/null): keep serving until stopped.
    while true { try await Task.sleep(for: .seconds(3600)) }

case let .connect(host, port):
    let node = try Node(identity: Identity(), displayName: name, transports: [TCPTransport()])
    _ = try await node.start()
    let endpoint = TransportEndpoint(medium: .tcp, host: host, port: port)
    // Ask the listener who it is (any peer ID), then invite it into a session.
    let peer = try await node.resolve([endpoint], expectingPrefix: [])
    let session = Session(node: node)
    let (connected, connectedSink) = AsyncStream.makeStream(of: PeerID.self)
    Task { await printEvents(of: session, connected: connectedSink) }
    try await node.invite(peer, to: session)
    var iterator = connected.makeAsyncIterator()
    _ = await iterator.next()
    for await line in inputLines() {
        try await session.send(Array(line.utf8), to: [peer.peerID])
    }
    await session.disconnect()
    await node.stop()
}
