import Crypto
import Foundation
import PeerLink
#if canImport(Glibc)
import Glibc
import PeerLinkCore
import PeerLinkWire
#endif

/// The CPU work no implementation of PeerLink's protocol can skip, per GiB, measured in this
/// process: sealing and opening every byte with the links' own ChaCha20-Poly1305 cipher
/// states (in records as large as a Noise message allows), SHA-256 of every byte, and for a
/// file, reading it and writing the copy through user space (encrypted bytes cannot be
/// spliced). Added to raw TCP's own CPU per GiB, these are the floors the `cpu` mode compares
/// PeerLink with.
enum WorkFloor {
    /// CPU seconds per GiB to seal and open `bytes` bytes, both ends of a link.
    static func cipherSecondsPerGiB(bytes: Int) throws -> Double {
        var initiator = NoiseHandshakeXX(role: .initiator, staticKey: Identity().privateKey, prologue: PeerLinkProtocol.prologue)
        var responder = NoiseHandshakeXX(role: .responder, staticKey: Identity().privateKey, prologue: PeerLinkProtocol.prologue)
        _ = try responder.readMessage(try initiator.writeMessage(payload: []))
        _ = try initiator.readMessage(try responder.writeMessage(payload: []))
        _ = try responder.readMessage(try initiator.writeMessage(payload: []))
        var sender = try initiator.split().send
        var receiver = try responder.split().receive
        let record = [UInt8](repeating: 0x42, count: Noise.maxPlaintextLength)
        let records = max(1, bytes / record.count)
        let cpu = processCPUSeconds()
        var opened = 0
        for _ in 0..<records { opened += try receiver.decrypt(try sender.encrypt(record)).count }
        return (processCPUSeconds() - cpu) / (Double(opened) / 1_073_741_824)
    }

    /// CPU seconds per GiB to SHA-256 `bytes` bytes twice (the sender's pass and the
    /// receiver's), from memory: no file I/O counted.
    static func twoHashesSecondsPerGiB(bytes: Int) -> Double {
        let chunk = [UInt8](repeating: 0x33, count: 1 << 20)
        let chunks = max(1, bytes >> 20)
        let cpu = processCPUSeconds()
        for _ in 0..<2 {
            var hasher = SHA256()
            for _ in 0..<chunks { hasher.update(data: chunk) }
            _ = hasher.finalize()
        }
        return (processCPUSeconds() - cpu) / (Double(chunks << 20) / 1_073_741_824)
    }

    /// CPU seconds per GiB to read a file of `bytes` bytes in 1 MiB steps and write each step
    /// to a new file, as a sender and a receiver must; making the source file is not counted.
    /// The copy runs twice and the second is timed: in a VM the first touch of memory the
    /// host has not backed yet costs several times a copy (0.3–2 s per GiB for `dd` here),
    /// and a floor is the best case.
    static func fileCopySecondsPerGiB(bytes: Int) throws -> Double {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("peerlink-floor-\(UUID())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        _ = FileManager.default.createFile(atPath: dir + "/blob", contents: Data(repeating: 0x33, count: bytes))
        _ = try copy(dir + "/blob", to: dir + "/warm-up")
        try FileManager.default.removeItem(atPath: dir + "/warm-up")
        let cpu = processCPUSeconds()
        let moved = try copy(dir + "/blob", to: dir + "/copy")
        return (processCPUSeconds() - cpu) / (Double(max(moved, 1)) / 1_073_741_824)
    }

    /// Copies `source` to a new file `target` through a 1 MiB buffer; the bytes copied.
    private static func copy(_ source: String, to target: String) throws -> Int {
        let from = open(source, O_RDONLY | O_CLOEXEC)
        let to = open(target, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        defer { close(from); close(to) }
        guard from >= 0, to >= 0 else { throw CocoaError(.fileNoSuchFile) }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var moved = 0
        while true {
            let n = buffer.withUnsafeMutableBytes { pread(from, $0.baseAddress, $0.count, off_t(moved)) }
            guard n > 0 else { return moved }
            let w = buffer.withUnsafeBytes { pwrite(to, $0.baseAddress, n, off_t(moved)) }
            guard w == n else { throw CocoaError(.fileWriteUnknown) }
            moved += n
        }
    }
}
