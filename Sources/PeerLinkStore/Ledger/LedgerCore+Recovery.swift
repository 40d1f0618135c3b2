/// What opening a ledger finished after an earlier crash.
public struct RecoveryReport: Sendable, Equatable {
    /// Final items whose payload was moved aside at open.
    public var settled: [ItemID] = []
    /// Landings finished at open (record written before the crash, file renamed now).
    public var landed: [ItemID] = []
    /// Records dropped because neither their partial nor their final file existed.
    public var dropped: [ItemID] = []

    /// True when opening had nothing to finish.
    public var isEmpty: Bool { settled.isEmpty && landed.isEmpty && dropped.isEmpty }
}

extension LedgerCore {
    /// Converges the files with the ledger: every step a crash interrupted is finished.
    func recover(now: Timestamp) throws -> RecoveryReport {
        var report = RecoveryReport()
        let unsettled = try db.query("SELECT \(Self.outboundColumns) FROM outbound WHERE settled = 0 ORDER BY id", map: outbound)
        for item in unsettled {
            _ = try settle(item, now: now)
            report.settled.append(item.id)
        }
        let landing = try db.query("SELECT id FROM inbound WHERE landed = 0 ORDER BY id") { try itemID(try $0.blob(0)) }
        for id in landing {
            if try finishLanding(id) == nil { report.dropped.append(id) } else { report.landed.append(id) }
        }
        return report
    }
}
