import Foundation
import PeerLink
import PeerLinkCore
import PeerLinkWire

/// DNS-SD discovery through avahi-daemon: publishes `_<service>._tcp` with the
/// advertisement in TXT, and turns browse results into peers (one per peer ID, all
/// interfaces merged).
public struct AvahiDiscovery: Discovery {
    /// D-Bus system bus address; nil for the default (or `DBUS_SYSTEM_BUS_ADDRESS`).
    public var busAddress: String?

    /// Uses avahi-daemon on the D-Bus at `busAddress`, or on the system bus when nil.
    public init(busAddress: String? = nil) { self.busAddress = busAddress }

    /// The instance name: the display name plus the start of the peer ID, so two nodes with
    /// the same display name do not collide.
    static func instanceName(_ ad: Advertisement) -> String {
        let suffix = " (\(ad.peerID.short))"
        var name = ad.displayName
        while name.utf8.count + suffix.utf8.count > 63 { name.removeLast() }
        return name + suffix
    }

    public func publish(_ ad: Advertisement, service: ServiceType, ports: [Medium: UInt16],
                        notices: @escaping @Sendable (String) -> Void) throws -> DiscoveryHandle {
        guard let port = ports[.tcp] else {
            throw TransportError.unsupported("DNS-SD publishes the TCP port, and the node does not listen on TCP")
        }
        let publisher = try AvahiPublisher(type: service.dnssdTCP, name: AvahiDiscovery.instanceName(ad), port: port,
                                           txt: ad.txt, busAddress: busAddress)
        let task = Task {
            for await e in publisher.events {
                switch e {
                case let .registered(name): notices("published as '\(name)'")
                case let .renamed(from, to): notices("name '\(from)' is taken on the network; renamed to '\(to)'")
                case let .daemonUnavailable(why): notices("avahi-daemon unavailable (\(why)); will publish again when it returns")
                case let .failed(why): notices("publishing failed: \(why)")
                }
            }
        }
        return AvahiHandle(stopAction: { publisher.stop(); task.cancel() })
    }

    public func browse(_ service: ServiceType, handler: @escaping @Sendable (DiscoveryEvent) -> Void) throws -> DiscoveryHandle {
        let browser = try AvahiBrowser(type: service.dnssdTCP, busAddress: busAddress)
        let task = Task {
            var peerOfName: [String: PeerID] = [:]
            var namesOfPeer: [PeerID: Set<String>] = [:]
            for await e in browser.events {
                switch e {
                case let .found(s), let .updated(s):
                    let ad: Advertisement
                    do {
                        ad = try Advertisement(txt: s.txt)
                    } catch {
                        handler(.notice("ignored service '\(s.name)': \(error)"))
                        continue
                    }
                    guard ad.protocolVersion == PeerLinkProtocol.major else {
                        handler(.notice("ignored '\(s.name)': it speaks PeerLink protocol \(ad.protocolVersion), this node \(PeerLinkProtocol.major)"))
                        continue
                    }
                    let endpoints = s.endpoints.map { ep -> TransportEndpoint in
                        let host = ep.host.hasPrefix("fe80:") ? "\(ep.host)%\(ep.interfaceIndex)" : ep.host
                        return TransportEndpoint(medium: .tcp, host: host, port: ep.port)
                    }
                    let info = PeerInfo(peerID: ad.peerID, displayName: ad.displayName, info: ad.info.entries, endpoints: endpoints)
                    let known = namesOfPeer[ad.peerID] != nil
                    peerOfName[s.name] = ad.peerID
                    namesOfPeer[ad.peerID, default: []].insert(s.name)
                    handler(known ? .updated(info) : .found(info))
                case let .lost(name):
                    guard let peer = peerOfName.removeValue(forKey: name) else { continue }
                    namesOfPeer[peer]?.remove(name)
                    if namesOfPeer[peer]?.isEmpty ?? true {
                        namesOfPeer[peer] = nil
                        handler(.lost(peer))
                    }
                case let .daemonUnavailable(why):
                    handler(.notice("avahi-daemon unavailable (\(why)); browsing resumes when it returns"))
                case .daemonAvailable:
                    handler(.notice("avahi-daemon is back; browsing again"))
                }
            }
        }
        return AvahiHandle(stopAction: { browser.stop(); task.cancel() })
    }
}

struct AvahiHandle: DiscoveryHandle {
    let stopAction: @Sendable () -> Void
    func stop() { stopAction() }
}
