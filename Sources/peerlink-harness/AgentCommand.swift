import ArgumentParser
import PeerLinkHarness

extension HarnessCommand {
    /// One node of an IP-lab run; started by `run --backend iplab` inside a namespace.
    struct Agent: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "A node of an IP-lab run (internal: JSON lines on stdin/stdout).",
            shouldDisplay: false
        )

        @Option(name: .long, help: "dialer (sends the traffic) or listener (accepts, records arrivals).")
        var role: String

        func run() async throws {
            guard let r = IPLabAgent.Role(rawValue: role) else { throw ValidationError("--role must be dialer or listener") }
            await IPLabAgent(role: r).run()
        }
    }
}
