import PeerLinkWire

/// The receiver's space check for an offer it is about to accept (PROTOCOL §9.7, §9.9).
package enum ResourceAdmission: Sendable, Equatable {
    /// Accept, reserving `reserve` bytes on the disk until they are written.
    case accept(reserve: UInt64)
    /// Refuse, telling the sender why.
    case refuse(ResourceError)

    /// Whether the bytes still to come fit. `free` is the disk's free space (nil when it cannot be
    /// read: the offer is accepted and a full disk is met as it comes), `keepFree` the margin the
    /// user keeps free, `promised` what transfers accepted earlier will still write to the same
    /// disk.
    package static func decide(size: UInt64, held: UInt64, free: UInt64?, keepFree: UInt64, promised: UInt64) -> ResourceAdmission {
        let needed = size - min(held, size)
        guard let free else { return .accept(reserve: needed) }
        let (reserved, overflow) = keepFree.addingReportingOverflow(promised)
        let usable = overflow || free <= reserved ? 0 : free - reserved
        guard needed <= usable else { return .refuse(.noSpace(needed: needed, available: usable, margin: keepFree)) }
        return .accept(reserve: needed)
    }
}
