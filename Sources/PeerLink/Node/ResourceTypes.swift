import Foundation
import PeerLinkCore
import PeerLinkWire

/// A file a peer offers to send.
public struct ResourceOffer: Sendable, Hashable {
    /// The peer that offers the file.
    public let peer: PeerID
    /// The number of the stream the sender carries the file on.
    public let stream: UInt32
    /// The name as the sender gave it (already reduced to a safe file name).
    public let name: String
    /// The file's size in bytes.
    public let size: UInt64
    /// SHA-256 of the file's content (32 bytes), checked by the receiver before it keeps the
    /// file. Nil when the sender sends it after the last byte (a sender that had not hashed the
    /// file yet): the receiver checks it all the same before it keeps the file.
    public let sha256: [UInt8]?
    /// The sender's name for the content when its SHA-256 follows the bytes (keys the
    /// partial file, PROTOCOL §11.7).
    let contentKey: [UInt8]?

    init(peer: PeerID, stream: UInt32, name: String, size: UInt64, sha256: [UInt8]?, contentKey: [UInt8]? = nil) {
        self.peer = peer; self.stream = stream; self.name = name; self.size = size
        self.sha256 = sha256; self.contentKey = contentKey
    }
}

/// Progress of a resource in either direction.
public struct ResourceProgress: Sendable, Hashable, Codable {
    /// Whether this node sends the resource or receives it.
    public enum Direction: String, Sendable, Codable { /** `sending`: this node sends; `receiving`: it receives. */ case sending, receiving }
    /// What the bytes count: the sender hashing its file before offering it (or, when its
    /// SHA-256 follows the data, hashing the part a resuming receiver holds), the receiver
    /// reading back a partial file it resumes, or the transfer itself.
    public enum Stage: String, Sendable, Codable { /** `hashing`, `verifying` or `transferring`, as above. */ case hashing, verifying, transferring }
    /// The peer the resource goes to or comes from.
    public let peer: PeerID
    /// The resource's file name (as offered, made safe).
    public let name: String
    /// Whether this node sends or receives the resource.
    public let direction: Direction
    /// Bytes done, counting the bytes a resumed transfer already had.
    public let completed: UInt64
    /// The resource's size in bytes.
    public let total: UInt64
    /// Where this run started (non-zero when resuming).
    public let resumedFrom: UInt64
    /// What `completed` counts: hashing, verifying or transferring.
    public let stage: Stage

    /// Makes a progress report; `completed`, `total` and `resumedFrom` are in bytes.
    public init(peer: PeerID, name: String, direction: Direction, completed: UInt64, total: UInt64, resumedFrom: UInt64,
                stage: Stage = .transferring) {
        self.peer = peer; self.name = name; self.direction = direction; self.completed = completed; self.total = total
        self.resumedFrom = resumedFrom; self.stage = stage
    }
}

/// An incoming byte stream. Read it to the end; reading returns credit to the sender, so a
/// slow reader slows the sender instead of growing memory.
public final class IncomingStream: Sendable {
    /// The peer that opened the stream.
    public let peer: PeerID
    /// The name the sender gave the stream.
    public let name: String
    let id: UInt32
    let buffer = StreamBuffer()
    let channel: PeerChannel

    init(peer: PeerID, name: String, id: UInt32, channel: PeerChannel) {
        self.peer = peer; self.name = name; self.id = id; self.channel = channel
    }

    /// The next chunk, or nil at the end of the stream. Throws if the sender cancelled.
    public func read() async throws -> [UInt8]? {
        let chunk = try await buffer.next()
        if let chunk { await channel.consumed(chunk.count, of: id) }
        return chunk
    }

    /// Stops reading: the sender is told and further bytes are dropped.
    public func cancel() async { await channel.cancelStream(id) }
}

/// An outgoing byte stream.
public final class OutgoingStream: Sendable {
    /// The peer the stream goes to.
    public let peer: PeerID
    /// The stream's name, as the receiver sees it.
    public let name: String
    let id: UInt32
    let channel: PeerChannel

    init(peer: PeerID, name: String, id: UInt32, channel: PeerChannel) {
        self.peer = peer; self.name = name; self.id = id; self.channel = channel
    }

    /// Writes bytes, waiting for the receiver's credit as needed.
    public func write(_ bytes: [UInt8]) async throws { try await channel.writeStream(id, bytes) }
    /// Ends the stream normally.
    public func close() async { await channel.closeStream(id, cancel: false) }
    /// Aborts the stream.
    public func cancel() async { await channel.closeStream(id, cancel: true) }
}

/// Where a received file lands (its name made safe by `ResourceName.safe`).
enum SafeFileName {
    /// `dir/name`, or `dir/name (2)`… when that exists.
    static func unique(in dir: String, name: String) -> String {
        let fm = FileManager.default
        var candidate = (dir as NSString).appendingPathComponent(name)
        var n = 2
        let ext = (name as NSString).pathExtension, base = (name as NSString).deletingPathExtension
        while fm.fileExists(atPath: candidate) {
            candidate = (dir as NSString).appendingPathComponent(ext.isEmpty ? "\(base) (\(n))" : "\(base) (\(n)).\(ext)")
            n += 1
        }
        return candidate
    }
}
