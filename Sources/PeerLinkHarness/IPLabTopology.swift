/// The network plan of one IP-lab run: a namespace per node, a veth pair per `[[link]]` with
/// its own /24, and the commands (argv arrays, run in the root namespace) that set it up,
/// apply scenario events and tear it down. Pure: nothing here runs a command.
public struct IPLabTopology: Sendable, Equatable {
    /// One `[[link]]` as a veth pair.
    public struct Link: Sendable, Equatable {
        public var name: String
        public var kind: Scenario.LinkSpec.Kind
        /// Interface names in the dialler's (a) and the listener's (b) namespace.
        public var vethA: String
        public var vethB: String
        public var addressA: String
        public var addressB: String
        /// The link's subnet prefix ("10.77.1."), to tell which link a remote address is on.
        public var subnetPrefix: String
        public var bandwidth: Int
    }

    public var nsA: String
    public var nsB: String
    public var links: [Link]

    /// - Parameter tag: unique per run (the coordinator's pid), kept short: interface names
    ///   are at most 15 bytes.
    public init(scenario: Scenario, tag: Int) {
        nsA = "plh-\(tag)-a"
        nsB = "plh-\(tag)-b"
        let short = tag % 1_000_000
        links = scenario.links.enumerated().map { i, l in
            Link(name: l.name, kind: l.kind, vethA: "plh\(short)a\(i)", vethB: "plh\(short)b\(i)",
                 addressA: "10.77.\(i + 1).1", addressB: "10.77.\(i + 1).2", subnetPrefix: "10.77.\(i + 1).", bandwidth: l.bandwidth)
        }
    }

    public func link(_ name: String) -> Link? { links.first { $0.name == name } }

    /// The link a remote description ("10.77.2.2:47000", with or without a scheme) is on.
    public func linkName(forRemote remote: String) -> String? {
        let host = remote.range(of: "://").map { remote[$0.upperBound...] } ?? remote[...]
        return links.first { host.hasPrefix($0.subnetPrefix) }?.name
    }

    /// Namespaces, veths (up, addressed), bandwidth limits and an empty nftables ingress chain
    /// per veth end (where cuts and loss go).
    public var setupCommands: [[String]] {
        var c: [[String]] = [["ip", "netns", "add", nsA], ["ip", "netns", "add", nsB],
                             ["ip", "-n", nsA, "link", "set", "lo", "up"], ["ip", "-n", nsB, "link", "set", "lo", "up"]]
        for l in links {
            c.append(["ip", "link", "add", l.vethA, "type", "veth", "peer", "name", l.vethB])
            c.append(["ip", "link", "set", l.vethA, "netns", nsA])
            c.append(["ip", "link", "set", l.vethB, "netns", nsB])
            for (ns, dev, addr) in [(nsA, l.vethA, l.addressA), (nsB, l.vethB, l.addressB)] {
                c.append(["ip", "-n", ns, "addr", "add", "\(addr)/24", "dev", dev])
                c.append(["ip", "-n", ns, "link", "set", dev, "up"])
                if l.bandwidth > 0 { c.append(["ip", "netns", "exec", ns] + Self.tbf(dev: dev, bytesPerSecond: l.bandwidth)) }
                c.append(["ip", "netns", "exec", ns, "nft", "add", "table", "netdev", Self.table(dev)])
                c.append(["ip", "netns", "exec", ns, "nft", "add", "chain", "netdev", Self.table(dev), "ingress",
                          "{ type filter hook ingress device \(dev) priority 0 ; policy accept ; }"])
            }
        }
        return c
    }

    /// Deleting the namespaces removes their veths, qdiscs and nftables tables.
    public var teardownCommands: [[String]] { [["ip", "netns", "del", nsA], ["ip", "netns", "del", nsB]] }

    /// The state of one link's faults; events change it, `commands` makes the kernel match it.
    public struct Faults: Sendable, Equatable {
        public var down = false
        public var cut = false
        /// Percent of packets dropped on ingress (0…100).
        public var lossPercent = 0
        public init(down: Bool = false, cut: Bool = false, lossPercent: Int = 0) {
            self.down = down; self.cut = cut; self.lossPercent = lossPercent
        }

        /// The state after a scenario event.
        public func applying(_ action: Scenario.TimedEvent.Action, loss: Double?) -> Faults {
            var f = self
            switch action {
            case .off: f.down = true
            case .cut: f.cut = true
            case .restore: f.down = false; f.cut = false
            case .loss: f.lossPercent = Int(((loss ?? 0) * 100).rounded())
            }
            return f
        }
    }

    /// Commands taking `link` from `old` to `new` faults, on both ends: `ip link set down|up`
    /// for off, and the ingress chain rewritten (flush, then `drop` for a cut, a `numgen`
    /// rule for loss). Ingress drops are silent: the sender is told nothing.
    public func commands(for link: Link, from old: Faults, to new: Faults) -> [[String]] {
        var c: [[String]] = []
        let ends = [(nsA, link.vethA), (nsB, link.vethB)]
        if old.down != new.down {
            for (ns, dev) in ends { c.append(["ip", "-n", ns, "link", "set", dev, new.down ? "down" : "up"]) }
        }
        if old.cut != new.cut || old.lossPercent != new.lossPercent {
            for (ns, dev) in ends {
                c.append(["ip", "netns", "exec", ns, "nft", "flush", "chain", "netdev", Self.table(dev), "ingress"])
                if new.cut {
                    c.append(["ip", "netns", "exec", ns, "nft", "add", "rule", "netdev", Self.table(dev), "ingress", "drop"])
                } else if new.lossPercent > 0 {
                    c.append(["ip", "netns", "exec", ns, "nft", "add", "rule", "netdev", Self.table(dev), "ingress",
                              "numgen", "random", "mod", "100", "<", "\(new.lossPercent)", "drop"])
                }
            }
        }
        return c
    }

    static func table(_ dev: String) -> String { "t_\(dev)" }

    /// A token bucket of `bytesPerSecond` on `dev`'s egress: a burst of at least 16 KB (and 1/50
    /// of the rate), packets waiting at most 100 ms before they are dropped.
    static func tbf(dev: String, bytesPerSecond: Int) -> [String] {
        let burst = max(16_000, bytesPerSecond / 50)
        return ["tc", "qdisc", "add", "dev", dev, "root", "tbf", "rate", "\(bytesPerSecond * 8)bit", "burst", "\(burst)", "latency", "100ms"]
    }
}
