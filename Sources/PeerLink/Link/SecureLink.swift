import Foundation
@preconcurrency import Crypto
import PeerLinkCore
import PeerLinkWire
import Synchronization

/// A link after a successful Noise XX handshake: both sides know each other's peer ID for
/// certain, and every frame is encrypted and authenticated.
package final class SecureLink: @unchecked Sendable {
    /// The connection the encrypted frames travel on.
    public let connection: MessageConnection
    /// The remote's peer ID, proved by the handshake.
    public let remotePeer: PeerID
    /// What the remote announced in its hello: display name, largest frame, session token, UDP
    /// port, discovery info.
    public let remoteHello: Hello
    /// Unique within this process; names the link in a session.
    public let id: LinkID
    /// The medium of the underlying connection.
    public var medium: Medium { connection.medium }

    private let lock = NSLock()
    private var sendCipher: NoiseCipherState
    /// The UDP path for unreliable frames, when both nodes offer UDP on an IP link.
    private var datagram: DatagramPath?
    private let udp: UDPSocket?
    private let datagramTarget: (host: String, port: UInt16)?
    /// What crossed this link's UDP path (under `lock`).
    private var datagramTally = DatagramCounts()
    private var receiveCipher: NoiseCipherState  // used by the single reader only
    /// An error met behind good frames of a batch, reported by the next receive (reader only).
    private var deferredError: Error?
    /// Joins the pieces of frames the remote split for this link (reader only).
    private var joiner = PieceJoiner()
    /// The largest plaintext sent in one message on this link: what the remote's hello asked
    /// for, when it speaks minor 2 and so joins pieces (PROTOCOL §6.3); nil sends whole frames.
    public let pieceLimit: Int?
    /// Bytes on the wire so far, the handshake's included (atomics; no lock on the data path).
    private let tally: WireTally

    private static let counter = LinkCounter()

    private init(connection: MessageConnection, remotePeer: PeerID, remoteHello: Hello,
                 send: NoiseCipherState, receive: NoiseCipherState,
                 datagram: DatagramPath?, udp: UDPSocket?, datagramTarget: (host: String, port: UInt16)?,
                 handshakeBytes: WireBytes) {
        self.tally = WireTally(handshakeBytes)
        self.datagram = datagram
        self.udp = udp
        self.datagramTarget = datagramTarget
        self.connection = connection
        self.remotePeer = remotePeer
        self.remoteHello = remoteHello
        self.sendCipher = send
        self.receiveCipher = receive
        self.id = SecureLink.counter.next()
        pieceLimit = remoteHello.minor >= 2 ? max(FramePieces.minimumPayload + FramePieces.overhead,
                                                  min(Int(remoteHello.maxFrame), WireLimits.frame)) : nil
    }

    /// Runs the handshake as initiator (dialler) or responder. `expecting` closes the link
    /// when the remote's key is not that peer's; `expectingPrefix` when its peer ID does not
    /// start with those bytes (a device seen in a Bluetooth advert, PROTOCOL §14.3). On any
    /// failure the connection is closed.
    public static func establish(over connection: MessageConnection, initiator: Bool, identity: Identity,
                                 hello: Hello, expecting: PeerID? = nil, expectingPrefix: [UInt8]? = nil,
                                 timeout: Duration = .seconds(10), udp: UDPSocket? = nil) async throws -> SecureLink {
        let fired = Flag()
        let watchdog = Task {
            try await Runtime.sleep(for: timeout)
            fired.set()
            connection.close()
        }
        defer { watchdog.cancel() }
        do {
            // The handshake's messages count as the link's first bytes on the wire.
            let prefix = connection.lengthPrefixSize
            var handshakeBytes = WireBytes()
            func send(_ message: [UInt8]) {
                handshakeBytes.sent += UInt64(message.count + prefix)
                connection.enqueue(message)
            }
            var hs = NoiseHandshakeXX(role: initiator ? .initiator : .responder, staticKey: identity.privateKey,
                                      prologue: PeerLinkProtocol.prologue)
            func next() async throws -> [UInt8] {
                guard let m = try await connection.receive() else { throw LinkError.closedByRemote }
                handshakeBytes.received += UInt64(m.count + prefix)
                return m
            }
            let remoteHello: Hello
            if initiator {
                send(try hs.writeMessage(payload: []))
                let payload = try hs.readMessage(try await next())
                try check(hs, expecting: expecting, prefix: expectingPrefix)
                remoteHello = try Hello.decode(payload)
                send(try hs.writeMessage(payload: hello.encode()))
            } else {
                // Message 1 is unauthenticated; PeerLink's is exactly an ephemeral key.
                guard try hs.readMessage(try await next()).isEmpty else {
                    throw LinkError.handshakeFailed("handshake message 1 must have an empty payload")
                }
                send(try hs.writeMessage(payload: hello.encode()))
                remoteHello = try Hello.decode(try hs.readMessage(try await next()))
                try check(hs, expecting: expecting, prefix: expectingPrefix)
            }
            guard let key = hs.remoteStaticKey else { throw LinkError.handshakeFailed("no remote static key") }
            let ciphers = try hs.split()
            var path: DatagramPath?
            var target: (String, UInt16)?
            if udp != nil, hello.datagramPort != nil, let port = remoteHello.datagramPort, let host = connection.remoteHost {
                path = try DatagramPath(handshake: hs, initiator: initiator)
                target = (host, port)
            }
            return SecureLink(connection: connection, remotePeer: PeerID(publicKey: key), remoteHello: remoteHello,
                              send: ciphers.send, receive: ciphers.receive,
                              datagram: path, udp: path == nil ? nil : udp, datagramTarget: target,
                              handshakeBytes: handshakeBytes)
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

    private static func check(_ hs: NoiseHandshakeXX, expecting: PeerID?, prefix: [UInt8]?) throws {
        guard let key = hs.remoteStaticKey else { return }
        let actual = PeerID(publicKey: key)
        if let expecting, actual != expecting { throw LinkError.unexpectedPeer(expected: expecting, actual: actual) }
        if let prefix, !actual.bytes.starts(with: prefix) {
            throw LinkError.unexpectedPeerPrefix(expected: prefix, actual: actual)
        }
    }

    /// Encrypts and queues a frame, in pieces when it is larger than this link takes in one
    /// message. Frames are sent in the order of calls; a frame's pieces are never interleaved.
    public func send(_ frame: Frame) { send([frame]) }

    /// Encrypts and queues frames in order, handed to the connection together (one write
    /// where the medium allows). Each message is built once, its length prefix (on a byte
    /// stream) written in front of it here.
    public func send(_ frames: [Frame]) {
        let prefix = connection.lengthPrefixSize
        lock.lock()
        defer { lock.unlock() }
        var messages: [[UInt8]] = []
        messages.reserveCapacity(frames.count)
        do {
            for frame in frames {
                // A frame that fits one message is sealed from its head and payload in place.
                if let parts = frame.encodedParts(), pieceLimit.map({ parts.head.count + parts.payload.count <= $0 }) ?? true,
                   parts.head.count + parts.payload.count <= WireLimits.frame {
                    messages.append(try seal(parts.head, parts.payload, prefix: prefix))
                    continue
                }
                let encoded = frame.encode()
                if let pieceLimit, encoded.count > pieceLimit {
                    for piece in FramePieces.split(encoded, maxFrame: pieceLimit) {
                        messages.append(try seal(piece, prefix: prefix))
                    }
                } else {
                    messages.append(try seal(encoded, prefix: prefix))
                }
            }
        } catch {
            connection.close()
            return
        }
        var bytes = 0
        for m in messages { bytes += m.count }
        tally.sent(bytes)
        connection.enqueue(prefixed: messages)
    }

    /// One encrypted message after `prefix` bytes of its big-endian length (lock held).
    private func seal(_ plaintext: [UInt8], _ tail: ArraySlice<UInt8> = [], prefix: Int) throws -> [UInt8] {
        var message = try sendCipher.encrypt(plaintext, tail, headroom: prefix)
        let length = message.count - prefix
        for i in 0..<prefix { message[i] = UInt8(truncatingIfNeeded: length >> (8 * (prefix - 1 - i))) }
        return message
    }

    /// The next frame; nil when the link closed cleanly. Throws on undecryptable or malformed
    /// input (the caller closes the link). Only one task may call this.
    public func receive() async throws -> Frame? {
        try await receiveBatch(limit: 1)?.first
    }

    /// The next frames (at least one, at most `limit`: what the connection already holds);
    /// nil when the link closed cleanly. Frames before a bad message are returned first, and
    /// the error comes with the next call. Only one task may call this.
    public func receiveBatch(limit: Int = 64) async throws -> [Frame]? {
        if let e = deferredError { deferredError = nil; throw e }
        var frames: [Frame] = []
        // Pieces of a frame may fill a whole batch: read on until a frame is complete.
        while frames.isEmpty {
            guard let messages = try await connection.receiveBatch(limit: limit) else {
                if joiner.isJoining { throw LinkError.protocolError("the link closed in the middle of a frame's pieces") }
                return nil
            }
            frames.reserveCapacity(messages.count)
            var bytes = messages.count * connection.lengthPrefixSize
            for m in messages { bytes += m.count }
            tally.received(bytes)
            for message in messages {
                do {
                    if let frame = try open(message) { frames.append(frame) }
                } catch {
                    if frames.isEmpty { throw error }
                    deferredError = error
                    return frames
                }
            }
        }
        return frames
    }

    /// Messages at least this long have their payload decrypted apart from the frame's head
    /// (below it, copying a payload costs less than a second allocation).
    static let payloadApart = 4096
    /// Spare capacity after an unfinished message part's payload.
    static let roomForLastPart = 4096

    /// The frame `message` completes: nil when it is a piece of one still being joined.
    private func open(_ message: [UInt8]) throws -> Frame? {
        let plaintext: [UInt8]
        do {
            if message.count >= Self.payloadApart, !joiner.isJoining {
                // A large payload is decrypted into an array of its own, which reaches the
                // application as it is; an unfinished message part gets room for a short last
                // part (a 64 KiB message is a full record and 49 bytes), joined without a copy.
                let parts = try receiveCipher.decrypt(message, peek: Frame.payloadPeek) { first in
                    Frame.payloadLayout(first).map { ($0.offset, $0.unfinishedPart ? Self.roomForLastPart : 0) }
                }
                if let payload = parts.tail {
                    do { return try Frame.decode(head: parts.head, payload: payload) } catch { throw LinkError.protocolError("\(error)") }
                }
                plaintext = parts.head
            } else {
                plaintext = try receiveCipher.decrypt(message)
            }
        } catch let e as LinkError {
            throw e
        } catch {
            throw LinkError.protocolError("a message failed authentication (\(error))")
        }
        do {
            guard let whole = try joiner.accept(plaintext) else { return nil }
            return try Frame.decode(whole)
        } catch {
            throw LinkError.protocolError("\(error)")
        }
    }

    /// Bytes this link moved on its connection so far (`WireBytes`); read at any time.
    public var wireBytes: WireBytes { tally.value }

    /// Closes the connection and stops its UDP path, if any.
    public func close() {
        if let token = lock.withLock({ datagram?.receiveToken }) { udp?.unregister(token) }
        connection.close()
    }

    /// Where unreliable frames go over UDP, e.g. "udp://10.0.0.2:5353"; nil when not available.
    public var datagramDescription: String? {
        datagramTarget.map { "udp://\($0.host):\($0.port)" }
    }

    /// Sends an unreliable frame as a datagram if this link has a UDP path and the frame fits;
    /// returns false when the caller should send it on the link instead.
    public func sendDatagram(_ frame: Frame) -> Bool {
        guard let udp, let target = datagramTarget else { return false }
        let encoded = frame.encode()
        guard encoded.count <= DatagramPath.maxFrame else { return false }
        let sealed: [UInt8]? = lock.withLock { try? datagram?.seal(encoded) }
        guard let sealed else { return false }
        udp.send(sealed, to: target.host, port: target.port)
        lock.withLock { datagramTally.sent += 1 }
        return true
    }

    /// Datagrams sent on this link's UDP path, and those received for it: delivered, or
    /// refused (did not authenticate, replayed, or not a frame). Nil without a UDP path.
    public var datagramCounts: DatagramCounts? {
        guard udp != nil, datagramTarget != nil else { return nil }
        return lock.withLock { datagramTally }
    }

    /// The token this side's datagrams carry (tests forge datagrams with it).
    var datagramSendToken: [UInt8]? { lock.withLock { datagram?.sendToken } }

    /// Delivers authenticated datagram frames to `handler` until the link closes. Forged,
    /// replayed and malformed datagrams are dropped.
    public func receiveDatagrams(_ handler: @escaping @Sendable (Frame) -> Void) {
        guard let udp, let token = lock.withLock({ datagram?.receiveToken }) else { return }
        udp.register(token) { [weak self] envelope in
            guard let self else { return }
            let plain: [UInt8]? = self.lock.withLock { try? self.datagram?.open(envelope) }
            guard let plain, let frame = try? Frame.decode(plain) else {
                self.lock.withLock { self.datagramTally.refused += 1 }
                return
            }
            self.lock.withLock { self.datagramTally.delivered += 1 }
            handler(frame)
        }
    }
}

/// Datagrams of one link's UDP path.
public struct DatagramCounts: Sendable, Codable, Equatable {
    /// Datagrams handed to the UDP socket (a send the socket had no room for included).
    public var sent = 0
    /// Received, authenticated and handed on.
    public var delivered = 0
    /// Received with this path's token but refused: forged, replayed or malformed.
    public var refused = 0
}

/// Hands out process-unique link numbers.
final class LinkCounter: Sendable {
    private let value = Atomic<LinkID>(0)
    func next() -> LinkID { value.wrappingAdd(1, ordering: .relaxed).newValue }
}

/// A one-way flag shared between tasks.
final class Flag: Sendable {
    private let value = Atomic<Bool>(false)
    func set() { value.store(true, ordering: .releasing) }
    var isSet: Bool { value.load(ordering: .acquiring) }
}
