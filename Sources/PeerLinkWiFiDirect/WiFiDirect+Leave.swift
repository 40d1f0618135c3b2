import Foundation
import PeerLink

extension WiFiDirect {
    /// Tears down what set up `group`: the P2P group (`Disconnect` on its interface), or the
    /// soft-AP / station network (`RemoveNetwork`, re-enabling the networks it displaced),
    /// and the radio's wpa_supplicant interface when PeerLink added it and no other group
    /// uses it. Idempotent; the group's event streams end with `.left`.
    public func leave(_ group: WiFiGroup) async {
        _ = try? await offThePool { self.leaveBlocking(group.id) }
    }

    /// Leaves every group this `WiFiDirect` set up (a node that stops).
    public func leaveAll() async {
        let ids = state.withLock { Array($0.live.keys) }
        _ = try? await offThePool { for id in ids { self.leaveBlocking(id) } }
    }

    /// Whether `group` is still set up (not left by this node; it may have ended otherwise).
    public func isActive(_ group: WiFiGroup) -> Bool { state.withLock { $0.live[group.id] != nil } }

    func leaveBlocking(_ id: WiFiGroupID) {
        guard let g = state.withLock({ $0.live.removeValue(forKey: id) }) else { return }
        let streams = state.withLock { $0.sinks.removeValue(forKey: id).map { Array($0.values) } ?? [] }
        for s in streams { s.yield(.ended(.left)); s.finish() }
        guard let bus = try? connection() else { return }
        if let groupInterface = g.groupInterfacePath {
            // Wait for the group interface to leave wpa_supplicant (it sends GroupFinished
            // first), so that releasing the radio below does not see it as a running group.
            let separate = groupInterface != g.radioPath
            let gone = bus.signals.expect { s in
                guard let e = WiFiGroupEvents.classify(s, g.watch) else { return false }
                switch e {
                case .ended(.interfaceRemoved), .ended(.supplicantStopped): return true
                case .ended: return !separate
                default: return false
                }
            }
            do {
                _ = try bus.call(groupInterface, WPASupplicantBus.p2pAPI, "Disconnect")
                _ = gone.wait(seconds: 5)
            } catch {
                gone.cancel()  // already gone
            }
        }
        if let network = g.networkPath {
            _ = try? bus.call(g.radioPath, WPASupplicantBus.interfaceAPI, "RemoveNetwork", [.objectPath(network)])
            restore(bus, g.reenable)
        }
        releaseRadios(bus)
    }

    /// What happens to `group` from now on: peers joining and leaving, and its end (after
    /// which the stream finishes). Subscribe right after forming or joining.
    public func events(of group: WiFiGroup) -> AsyncStream<WiFiGroupEvent> {
        AsyncStream { continuation in
            guard let g = state.withLock({ $0.live[group.id] }) else {
                continuation.yield(.ended(.left))
                continuation.finish()
                return
            }
            let bus: WPASupplicantBus
            do { bus = try connection() } catch {
                continuation.yield(.ended(.supplicantStopped))
                continuation.finish()
                return
            }
            let watch = g.watch
            let key: Int = state.withLock { s in
                s.nextSink += 1
                s.sinks[group.id, default: [:]][s.nextSink] = continuation
                return s.nextSink
            }
            let sub = bus.signals.subscribe { s in
                guard let e = WiFiGroupEvents.classify(s, watch) else { return }
                continuation.yield(e)
                if case .ended = e { continuation.finish() }
            }
            continuation.onTermination = { [weak self] _ in
                bus.signals.unsubscribe(sub)
                self?.state.withLock { _ = $0.sinks[group.id]?.removeValue(forKey: key) }
            }
        }
    }
}
