import Foundation
import PeerLink

/// Discovery for a run of daemons: a node finds another while a `[[link]]` joins them and is
/// up, with the other's addresses on the links that are up, and loses it when the last one
/// goes (`off`, or not yet `up_at`). A `cut` is silent: discovery still sees the peer, as
/// mDNS records linger after a radio goes out of range.
final class RangeDiscovery: @unchecked Sendable {
    private let lock = NSLock()
    private let links: [Scenario.LinkSpec]
    private var up: Set<String>
    private var published: [String: Advertisement] = [:]
    private var browsers: [String: @Sendable (DiscoveryEvent) -> Void] = [:]

    init(_ links: [Scenario.LinkSpec]) {
        self.links = links
        up = Set(links.filter { $0.upAt == 0 }.map(\.name))
    }

    /// The discovery backend of node `name`.
    func view(for name: String) -> Discovery { View(range: self, node: name) }

    /// Link `name` comes into range or goes out of it: both its nodes are told.
    func set(_ name: String, up isUp: Bool) {
        guard let l = links.first(where: { $0.name == name }) else { return }
        let pairs = [(l.between[0], l.between[1]), (l.between[1], l.between[0])]
        var tell: [(@Sendable (DiscoveryEvent) -> Void, DiscoveryEvent)] = []
        lock.withLock {
            let before = pairs.map { seen(by: $0.0, $0.1) }
            if isUp { up.insert(name) } else { up.remove(name) }
            for (i, (a, b)) in pairs.enumerated() {
                guard let handler = browsers[a], let ad = published[b] else { continue }
                let now = seen(by: a, b)
                switch (before[i].isEmpty, now.isEmpty) {
                case (true, false): tell.append((handler, .found(info(ad, now))))
                case (false, true): tell.append((handler, .lost(ad.peerID)))
                case (false, false) where before[i] != now: tell.append((handler, .updated(info(ad, now))))
                default: break
                }
            }
        }
        for (h, e) in tell { h(e) }
    }

    /// The links up between `a` and `b`, as seen by `a`: `b`'s addresses on them.
    private func seen(by a: String, _ b: String) -> [TransportEndpoint] {
        links.filter { up.contains($0.name) && Set($0.between) == [a, b] }.map {
            TransportEndpoint(medium: Self.medium(of: $0), host: MeshRun.address(b, $0), port: 0)
        }
    }

    /// The medium of `link`'s memory transports: one per link, with the traits of the medium it
    /// emulates (Bluetooth or Wi-Fi). A node listens once per medium, so a laptop with two
    /// Bluetooth links needs two media to be reachable on both.
    static func medium(of link: Scenario.LinkSpec) -> Medium {
        let base = MemoryRunNetwork.medium(link)
        return Medium.register("\(base.rawValue)-\(link.name)", traits: base.traits)
    }

    private func info(_ ad: Advertisement, _ endpoints: [TransportEndpoint]) -> PeerInfo {
        PeerInfo(peerID: ad.peerID, displayName: ad.displayName, info: ad.info.entries, endpoints: endpoints)
    }

    private struct Handle: DiscoveryHandle {
        let onStop: @Sendable () -> Void
        func stop() { onStop() }
    }

    private struct View: Discovery {
        let range: RangeDiscovery
        let node: String

        func publish(_ ad: Advertisement, service: ServiceType, ports: [Medium: UInt16],
                     notices: @escaping @Sendable (String) -> Void) throws -> DiscoveryHandle {
            let tell: [(@Sendable (DiscoveryEvent) -> Void, DiscoveryEvent)] = range.lock.withLock {
                range.published[node] = ad
                return range.browsers.sorted { $0.key < $1.key }.compactMap { other, handler in
                    let e = range.seen(by: other, node)
                    return e.isEmpty || other == node ? nil : (handler, .found(range.info(ad, e)))
                }
            }
            for (h, e) in tell { h(e) }
            let r = range, n = node
            return Handle { r.lock.withLock { _ = r.published.removeValue(forKey: n) } }
        }

        func browse(_ service: ServiceType, handler: @escaping @Sendable (DiscoveryEvent) -> Void) throws -> DiscoveryHandle {
            let found: [PeerInfo] = range.lock.withLock {
                range.browsers[node] = handler
                return range.published.sorted { $0.key < $1.key }.compactMap { other, ad in
                    let e = range.seen(by: node, other)
                    return e.isEmpty || other == node ? nil : range.info(ad, e)
                }
            }
            for p in found { handler(.found(p)) }
            let r = range, n = node
            return Handle { r.lock.withLock { _ = r.browsers.removeValue(forKey: n) } }
        }
    }
}
