import Foundation
@preconcurrency import Crypto
import PeerLinkCore
import PeerLinkWire

/// A link after a successful Noise XX handshake: both sides know each other's peer ID for
/// certain, and every frame is encrypted and authenticated.
public final class SecureLink: @unchecked Sendable {
    public let connection: MessageConnection
    public let remotePeer: PeerID
    public let remoteHello: Hello
    /// Unique within this process; names the link in a session.
    public let id: LinkID
    public var medium: Medium { connection.medium }

    private let lock = NSLock()
    private var sendCipher: NoiseCipherState
    private var receiveCipher: NoiseCipherState  // used by the single reader only

    private static let counter = LinkCounter()

    private init(connection: MessageConnection, remotePeer: PeerID, remoteHello: Hello,
                 send: NoiseCipherState, receive: NoiseCipherState) {
        self.connection = connection
        self.remotePeer = remotePeer
        self.remoteHello = remoteHello
        self.sendCipher = send
        self.receiveCipher = receive
        self.id = SecureLink.counter.next()
    }

    /// Runs the handshake as initiator (dialler) or responder. `expecting` closes the link
    /// when the remote's key is not that peer's. On any failure the connection is closed.
    public static func establish(over connection: MessageConnection, initiator: Bool, identity: Identity,
                                 hello: Hello, expecting: PeerID? = nil, timeout: Double = 10) async throws -> SecureLink {
        let fired = Flag()
        let watchdog = Task {
            try await Task.sleep(nanoseconds: UInt64(timeout * 1e9))
            fired.set()
            connection.close()
        }
        defer { watchdog.cancel() }
        do {
            var hs = NoiseHandshakeXX(role: initiator ? .initiator : .responder, staticKey: identity.privateKey,
                                      prologue: PeerLinkProtocol.prologue)
            func next() async throws -> [UInt8] {
                guard let m = try await connection.receive() else { throw LinkError.closedByRemote }
                return m
            }
            let remoteHello: Hello
            if initiator {
                connection.enqueue(try hs.writeMessage(payload: []))
                let payload = try hs.readMessage(try await next())
                try check(hs, expecting: expecting)
                remoteHello = try Hello.decode(payload)
                connection.enqueue(try hs.writeMessage(payload: hello.encode()))
            } else {
                // Message 1 is unauthenticated; PeerLink's is exactly an ephemeral key.
                guard try hs.readMessage(try await next()).isEmpty else {
                    throw LinkError.handshakeFailed("handshake message 1 must have an empty payload")
                }
                connection.enqueue(try hs.writeMessage(payload: hello.encode()))
                remoteHello = try Hello.decode(try hs.readMessage(try await next()))
                try check(hs, expecting: expecting)
            }
            guard let key = hs.remoteStaticKey else { throw LinkError.handshakeFailed("no remote static key") }
            let ciphers = try hs.split()
            return SecureLink(connection: connection, remotePeer: PeerID(publicKey: key), remoteHello: remoteHello,
                              send: ciphers.send, receive: ciphers.receive)
        } catch {
            connection.close()
            if fired.isSet { throw LinkError.timedOut("secure handshake with \(connection.remoteDescription)") }
            switch error {
            case let e as LinkError: throw e
            case let e as NoiseError: throw LinkError.handshakeFailed("\(e)")
            case let e as WireError: throw LinkError.handshakeFailed("bad hello: \(e)")
            default: throw error
            }
        }
    }

    private static func check(_ hs: NoiseHandshakeXX, expecting: PeerID?) throws {
        guard let expecting, let key = hs.remoteStaticKey else { return }
        let actual = PeerID(publicKey: key)
        if actual != expecting { throw LinkError.unexpectedPeer(expected: expecting, actual: actual) }
    }

    /// Encrypts and queues a frame. Frames are sent in the order of calls.
    public func send(_ frame: Frame) {
        lock.lock()
        defer { lock.unlock() }
        do {
            connection.enqueue(try sendCipher.encrypt(frame.encode()))
        } catch {
            connection.close()
        }
    }

    /// The next frame; nil when the link closed cleanly. Throws on undecryptable or malformed
    /// input (the caller closes the link). Only one task may call this.
    public func receive() async throws -> Frame? {
        guard let message = try await connection.receive() else { return nil }
        let plaintext: [UInt8]
        do {
            plaintext = try receiveCipher.decrypt(message)
        } catch {
            throw LinkError.protocolError("a message failed authentication (\(error))")
        }
        do {
            return try Frame.decode(plaintext)
        } catch {
            throw LinkError.protocolError("\(error)")
        }
    }

    public func close() { connection.close() }
}

/// Hands out process-unique link numbers.
final class LinkCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var value: LinkID = 0
    func next() -> LinkID { lock.withLock { value += 1; return value } }
}

/// A one-way flag shared between tasks.
final class Flag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    func set() { lock.withLock { value = true } }
    var isSet: Bool { lock.withLock { value } }
}
