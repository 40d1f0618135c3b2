import Foundation
import PeerLink

/// Radios kept under wpa_supplicant between groups (a session standing by).
extension WiFiDirect {
    /// Puts `interface` under wpa_supplicant when it is not yet and keeps it there, through
    /// groups formed and left, until `releaseRadio(interface:)` has been called as many
    /// times: a node that expects to form or join groups pays for `CreateInterface` (1.3–2.6 s
    /// in the lab) before a negotiation instead of during it; should wpa_supplicant restart
    /// meanwhile (a package upgrade restarts it), held radios are added to the new one.
    /// Returns how long adding took (zero when wpa_supplicant already had the radio); the
    /// hold stands even when it throws.
    public func holdRadio(interface: String) async throws -> Duration {
        state.withLock { $0.holds[interface, default: 0] += 1 }
        return try await offThePool {
            self.watchForRestarts(try self.connection())
            return try self.addRadio(interface)
        }
    }

    /// Ends one `holdRadio(interface:)`; after the last, the radio leaves wpa_supplicant if
    /// PeerLink added it and no group uses it (as `leave` does).
    public func releaseRadio(interface: String) async {
        let last: Bool = state.withLock { s in
            guard let n = s.holds[interface] else { return false }
            s.holds[interface] = n > 1 ? n - 1 : nil
            return n == 1
        }
        if last { await releaseUnusedRadios() }
    }

    /// `CreateInterface` for `interface` unless wpa_supplicant has it; how long that took.
    func addRadio(_ interface: String) throws -> Duration {
        try WiFiRadios.require(interface, sysClassNet: sysClassNet)
        let bus = try connection()
        try requireSupplicant(bus)
        var timings = StepTimings()
        _ = try ensureInterface(bus, interface, timings: &timings)
        return timings.steps.first?.duration ?? .zero
    }

    /// Once per bus connection: when wpa_supplicant leaves the bus, the interfaces PeerLink
    /// added went with it; when it is back, those of them still held are added again (off the
    /// bus's thread), each checked as on first use. A held radio PeerLink did not add
    /// (NetworkManager's) is left to its owner, who adds it again itself: adding it first
    /// would make it PeerLink's to remove.
    func watchForRestarts(_ bus: WPASupplicantBus) {
        let first: Bool = state.withLock { s in
            guard s.restartWatch !== bus else { return false }
            s.restartWatch = bus
            return true
        }
        guard first else { return }
        _ = bus.signals.subscribe { [weak self] s in
            guard let self, let present = s.supplicantPresence else { return }
            guard present else {
                self.state.withLock { s in
                    s.addedBeforeRestart.formUnion(s.created.keys)
                    s.created.removeAll()
                }
                return
            }
            let held: [String] = self.state.withLock { s in
                defer { s.addedBeforeRestart = [] }
                return s.addedBeforeRestart.filter { s.holds[$0] != nil }
            }
            guard !held.isEmpty else { return }
            BlockingCall.detach("pl.wifi.rehold") {
                for radio in held.sorted() where self.state.withLock({ $0.holds[radio] != nil }) { _ = try? self.addRadio(radio) }
            }
        }
    }
}
