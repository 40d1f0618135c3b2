/// Why a receiver refuses or stops a resource (RESOURCE_ERROR, docs/PROTOCOL.md §9.9). The
/// sender shows it as the reason its transfer failed.
public enum ResourceError: Equatable, Sendable, CustomStringConvertible {
    /// Refused before any byte moved: `needed` bytes do not fit in the `available` bytes the
    /// receiver may fill (its free space less the margin it keeps free and less what transfers
    /// it accepted earlier will still write). `margin` is that margin (`peerlink receive
    /// --keep-free`) when the receiver says it (code 04, protocol minor 3); nil from a receiver
    /// that predates it or talks to a peer that does.
    case noSpace(needed: UInt64, available: UInt64, margin: UInt64? = nil)
    /// The receiver's disk filled up after it held `held` of `size` bytes; it keeps them for a resume.
    case diskFull(held: UInt64, size: UInt64)
    /// Writing failed for another reason after `held` of `size` bytes (kept for a resume).
    case writeFailed(held: UInt64, size: UInt64, reason: String)

    enum Code: UInt8 { case noSpace = 1, diskFull = 2, writeFailed = 3, noSpaceKeeping = 4 }

    public var description: String {
        switch self {
        case let .noSpace(needed, available, margin):
            // Both sides print this: the receiver when it refuses, the sender as the reason.
            let keeping = margin.map { $0 > 0 ? " (keeping \(ByteCount.text($0)) free: --keep-free)" : "" } ?? ""
            return "not enough space on the receiver: \(ByteCount.text(needed)) offered, \(ByteCount.text(available)) free\(keeping)"
        case let .diskFull(held, size):
            return "the receiver's disk is full after \(ByteCount.text(held)) of \(ByteCount.text(size)); it keeps the partial file to resume"
        case let .writeFailed(held, size, reason):
            return "the receiver could not write after \(ByteCount.text(held)) of \(ByteCount.text(size)) (\(reason)); it keeps the partial file to resume"
        }
    }

    /// This error as a peer that speaks protocol minor `minor` can read: code 04 (no space,
    /// with the margin) needs minor 3; older peers get code 01 without the margin.
    public func readable(byMinor minor: UInt8) -> ResourceError {
        if minor < 3, case let .noSpace(needed, available, _) = self { return .noSpace(needed: needed, available: available) }
        return self
    }

    func encode(into w: inout WireWriter) {
        switch self {
        case let .noSpace(needed, available, nil):
            w.u8(Code.noSpace.rawValue); w.u64(needed); w.u64(available); w.string16("")
        case let .noSpace(needed, available, margin?):
            w.u8(Code.noSpaceKeeping.rawValue); w.u64(needed); w.u64(available); w.string16(""); w.u64(margin)
        case let .diskFull(held, size):
            w.u8(Code.diskFull.rawValue); w.u64(held); w.u64(size); w.string16("")
        case let .writeFailed(held, size, reason):
            w.u8(Code.writeFailed.rawValue); w.u64(held); w.u64(size); w.string16(reason.utf8Prefix(WireLimits.reasonText))
        }
    }

    static func decode(_ r: inout WireReader) throws -> ResourceError {
        let raw = try r.u8("resource error code")
        let a = try r.u64("resource error amount"), b = try r.u64("resource error limit")
        let text = try r.string16("resource error text", limit: WireLimits.reasonText)
        // One encoding per value: only a write failure carries text.
        if raw != Code.writeFailed.rawValue, !text.isEmpty {
            throw WireError.invalid(field: "resource error text", reason: "only a write failure (code 3) carries text")
        }
        switch Code(rawValue: raw) {
        case .noSpace: return .noSpace(needed: a, available: b)
        case .noSpaceKeeping: return .noSpace(needed: a, available: b, margin: try r.u64("resource error margin"))
        case .diskFull: return .diskFull(held: a, size: b)
        case .writeFailed: return .writeFailed(held: a, size: b, reason: text)
        case nil: throw WireError.unknownType(context: "resource error code", value: raw)
        }
    }
}

/// Byte counts as people read them: "512 B", "16.0 MiB".
public enum ByteCount {
    public static func text(_ n: UInt64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var v = Double(n), i = 0
        while v >= 1024, i < units.count - 1 { v /= 1024; i += 1 }
        if i == 0 { return "\(n) B" }
        let tenths = (v * 10).rounded() / 10
        return "\(tenths) \(units[i])"
    }
}
