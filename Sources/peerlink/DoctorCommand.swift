import ArgumentParser
import Foundation
import PeerLink
import PeerLinkWiFiDirect
import PeerLinkDoctor

struct DoctorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "doctor",
        abstract: "Say which media work on this machine and, for each that does not, why and what to do.",
        discussion: "Media: ip, bluetooth, and wifi-direct (can this machine form or join a Wi-Fi Direct group, or a soft-AP, through wpa_supplicant for upgrades negotiated over Bluetooth). Exits 0 when at least one medium is usable, 1 otherwise.")

    @Flag(name: .long, help: "Print JSON.")
    var json = false

    @Option(name: .long, help: ArgumentHelp("Check only this Wi-Fi radio for Wi-Fi Direct (default: every radio).", valueName: "iface"))
    var wifi: String?

    func run() async throws {
        let reports = await Doctor.report() + [await DoctorWiFi.report(busAddress: MediaPlan.wpaSupplicantBus, interface: wifi)]
        let out = Output(json: json)
        if json {
            let data = try JSONEncoder().encode(reports)
            print(String(decoding: data, as: UTF8.self))
        } else {
            for r in reports {
                out.emit("\(r.medium): \(r.usable ? "usable" : "NOT usable")", [:])
                for c in r.checks {
                    print("  \(c.ok ? "ok  " : "FAIL") \(c.name): \(c.detail)")
                    // A passing check may still know how to do better (a hint, not a fix).
                    if let fix = c.fix { print("       \(c.ok ? "hint" : "fix"): \(fix)") }
                }
            }
        }
        if !reports.contains(where: \.usable) { throw ExitCode(1) }
    }
}
