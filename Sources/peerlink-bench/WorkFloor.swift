import Crypto
import Foundation
import PeerLink

/// The CPU work no implementation of PeerLink's protocol can skip, per GiB, measured in this
/// process: sealing and opening every byte with the links' own ChaCha20-Poly1305 cipher
/// states (in records as large as a Noise message allows), and SHA-256 of every byte. Added to
/// raw TCP's own CPU per GiB, these are the floors the `cpu` mode compares PeerLink with.
enum WorkFloor {
    /// CPU seconds per GiB to seal and open `bytes` bytes, both ends of a link.
    static func cipherSecondsPerGiB(bytes: Int) throws -> Double {
        var initiator = NoiseHandshakeXX(role: .initiator, staticKey: Identity().privateKey, prologue: PeerLinkProtocol.prologue)
        var responder = NoiseHandshakeXX(role: .responder, staticKey: Identity().privateKey, prologue: PeerLinkProtocol.prologue)
        _ = try responder.readMessage(try initiator.writeMessage(payload: []))
        _ = try initiator.readMessage(try responder.writeMessage(payload: []))
        _ = try responder.readMessage(try initiator.writeMessage(payload: []))
        var seal = try initiator.split().send
        var open = try responder.split().receive
        let record = [UInt8](repeating: 0x42, count: Noise.maxPlaintextLength)
        let records = max(1, bytes / record.count)
        let cpu = processCPUSeconds()
        var opened = 0
        for _ in 0..<records { opened += try open.decrypt(try seal.encrypt(record)).count }
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
}
