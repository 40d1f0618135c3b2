import PeerLinkWire

/// The links of one peer of a session as the policy sees them, and what follows from them:
/// which link carries each role (the `LinkPolicy` applied to the session core), the frame
/// sizes of each lane, the reasons the application is told, when a carrier change is worth
/// an event, and whether bulk starting now should propose a faster link. Sans-I/O: the peer's
/// driver (`PeerChannel`) owns the sockets and calls this with what happened.
package struct LinkSet: Sendable {
    /// What the policy needs to know of a link, fixed when it comes up.
    package struct Link: Sendable, Equatable {
        package var id: LinkID
        package var linkClass: LinkClass
        /// Whether its medium counts as fast for frame sizes (typically ≥ 1 MB/s).
        package var fast: Bool
        /// A link the peers negotiated for bulk (a Wi-Fi Direct group).
        package var negotiated: Bool
        /// The largest frame the peer accepts on it (its hello).
        package var maxFrame: Int

        package init(id: LinkID, linkClass: LinkClass, fast: Bool, negotiated: Bool, maxFrame: Int) {
            self.id = id; self.linkClass = linkClass; self.fast = fast; self.negotiated = negotiated; self.maxFrame = maxFrame
        }
    }

    /// A carrier change to tell the application about.
    package struct CarrierChange: Sendable, Equatable {
        package var role: LinkRole
        package var link: LinkID
        package var reason: CarrierReason
    }

    package let policy: LinkPolicy
    package private(set) var links: [LinkID: Link] = [:]
    /// The policy's latest choice.
    package private(set) var choice = LinkChoice()
    /// When the policy last ran (ms): while there is a choice of links, it runs again after
    /// `reevaluateAfter` (links age past its dwell time, measurements change without events).
    package private(set) var lastPolicyRun: UInt64 = 0
    package static let reevaluateAfter: UInt64 = 250
    private var reported: [LinkRole: LinkID] = [:]
    /// How long each suspected link had been silent with data in flight (ms).
    private var suspectSilence: [LinkID: UInt64] = [:]

    package init(policy: LinkPolicy) { self.policy = policy }

    package var isEmpty: Bool { links.isEmpty }
    package var count: Int { links.count }

    // MARK: links

    package mutating func add(_ link: Link) { links[link.id] = link }

    /// Removes a link; true only the first time (a link's death is handled once, whichever of
    /// its reader, the keepalive or a set-up's teardown notices it first).
    package mutating func remove(_ id: LinkID) -> Bool {
        suspectSilence[id] = nil
        return links.removeValue(forKey: id) != nil
    }

    /// The session core suspects `id` (records in flight, nothing back for `silentFor` ms).
    package mutating func suspected(_ id: LinkID, silentFor: UInt64) {
        suspectSilence[id] = silentFor
    }

    package mutating func recovered(_ id: LinkID) { suspectSilence[id] = nil }

    /// Why `id` is suspected, while it is.
    package func suspicion(of id: LinkID) -> String? {
        suspectSilence[id].map { "link \(id): nothing acknowledged or answered for \($0) ms with data in flight" }
    }

    // MARK: the policy

    /// Runs the policy on the links' measurements and gives its choice to `core`: each lane's
    /// carrier, the copy link and its rate, and the lanes' frame sizes.
    package mutating func apply(to core: inout SessionCore, now: UInt64) {
        let metrics = links.values.sorted { $0.id < $1.id }.map { l in
            let st = core.stats(of: l.id, now: now)
            return LinkMetrics(id: l.id, linkClass: l.linkClass, age: st?.age ?? 0, rttMillis: st?.rttMillis, loss: st?.loss ?? 0,
                               throughput: st?.throughput, maxFrame: l.maxFrame, negotiated: l.negotiated)
        }
        lastPolicyRun = now
        core.observe(now: now)
        choice = policy.choose(metrics, previous: choice)
        if core.preferredLink != choice.carrier[.reliable] { core.preferredLink = choice.carrier[.reliable] }
        if core.preferredBulkLink != choice.carrier[.bulk] { core.preferredBulkLink = choice.carrier[.bulk] }
        core.preferredUnreliableLink = choice.carrier[.unreliable]
        core.preferredCopyLink = choice.messageCopy
        if let rate = choice.messageCopyRate { core.copyBytesPerSecond = rate }
        // Large message fragments only while no slow link could end up carrying one (a lane
        // moves on handover): on Bluetooth a small message would wait behind it for a third of
        // a second. Bulk bytes get large fragments while their own carrier is fast; should it
        // go, those already queued cross the slow link in pieces.
        core.fastLinksOnly = !links.isEmpty && links.values.allSatisfy(\.fast)
        core.fastBulkCarrier = choice.carrier[.bulk].flatMap { links[$0] }?.fast ?? false
    }

    /// When the policy should run again (nil: one link or none, nothing to choose).
    package func nextPolicyRun(now: UInt64) -> UInt64? {
        links.count > 1 ? max(lastPolicyRun + LinkSet.reevaluateAfter, now) : nil
    }

    /// The link that really carries `role` now (the core may avoid a suspected link).
    package func carrier(of role: LinkRole, in core: SessionCore) -> LinkID? {
        switch role {
        case .control, .reliable: return core.carrier(of: .main)
        case .bulk: return core.carrier(of: .bulk)
        case .unreliable: return core.unreliableLink
        }
    }

    /// Why `role` is on `link`: the policy's reason, or the suspected carrier it avoids.
    package func reason(for role: LinkRole, on link: LinkID) -> CarrierReason {
        if let chosen = choice.carrier[role], chosen != link, let silence = suspectSilence[chosen] {
            return CarrierReason(.carrierSuspected(link: chosen, silence: .milliseconds(clamping: silence), movedTo: link))
        }
        return choice.reason[role] ?? CarrierReason(.oldestLiveLink)
    }

    /// The carriers that changed since they were last reported, with their reasons.
    package mutating func carrierChanges(in core: SessionCore) -> [CarrierChange] {
        var out: [CarrierChange] = []
        for role in [LinkRole.reliable, .bulk, .unreliable] {
            guard let link = carrier(of: role, in: core), reported[role] != link else { continue }
            reported[role] = link
            out.append(CarrierChange(role: role, link: link, reason: reason(for: role, on: link)))
        }
        return out
    }

    // MARK: the upgrade trigger

    /// Whether bulk starting now should propose a faster, negotiated link: the peer speaks a
    /// minor that negotiates, and every link is Bluetooth.
    package func bulkWantsFasterLink(sharedMinor: UInt8) -> Bool {
        sharedMinor >= 1 && !links.isEmpty && links.values.allSatisfy { $0.linkClass == .bluetooth }
    }
}
