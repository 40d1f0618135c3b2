import Foundation
import PeerLink

/// `peerlink doctor`'s Wi-Fi Direct report: whether this machine can set up a Wi-Fi link
/// with no router (Wi-Fi Direct, or a soft-AP as fallback), and if not, why and what to do.
/// `peerlink doctor` shows it after the IP and Bluetooth reports; the checks come from
/// `WiFiDirect.probe`.
public enum DoctorWiFi {
    /// The medium's name in doctor output.
    public static let medium = "wifi-direct"

    /// Probes every radio (or only `interface`) through wpa_supplicant on `busAddress` (nil:
    /// the system bus). Runs its blocking work on threads of its own.
    public static func report(busAddress: String? = nil, interface: String? = nil) async -> MediumReport {
        let wifi = WiFiDirect(busAddress: busAddress)
        let radios = await wifi.radios()
        var reports: [WiFiRadioReport] = []
        var missing: String?
        let names = interface.map { [$0] } ?? radios.map(\.interface)
        for name in names {
            do { reports.append(try await wifi.probe(interface: name)) } catch { missing = "\(error)" }
        }
        return report(radios: radios, reports: reports, missing: missing, asked: interface, dad: OptimisticDAD.read())
    }

    /// The report from probe results and the machine's DAD settings (nil: not looked at).
    /// Pure, so each failure case is checked on the host.
    static func report(radios: [WiFiRadio], reports: [WiFiRadioReport], missing: String?, asked: String?,
                       dad: OptimisticDAD? = nil) -> MediumReport {
        var checks: [DoctorCheck] = []
        if radios.isEmpty {
            checks.append(DoctorCheck(name: "Wi-Fi radio", ok: false, detail: WiFiError.noRadio.description,
                                      fix: "plug in a Wi-Fi adapter whose driver supports P2P (`iw list` shows P2P-GO); until then Bluetooth carries everything"))
            return MediumReport(medium: medium, usable: false, checks: checks)
        }
        if let missing {
            checks.append(DoctorCheck(name: "Wi-Fi radio", ok: false, detail: missing,
                                      fix: "pick one of: \(radios.map(\.interface).joined(separator: ", ")) (--wifi IFACE)"))
        } else {
            checks.append(DoctorCheck(name: "Wi-Fi radio", ok: true,
                                      detail: radios.map { "\($0.interface) (\($0.phy))" }.joined(separator: ", ") + (asked.map { "; using \($0)" } ?? ""),
                                      fix: nil))
        }
        if let first = reports.first {
            let ok = first.supplicantRunning && first.supplicantAllowed
            checks.append(DoctorCheck(name: "wpa_supplicant", ok: ok,
                                      detail: ok ? "running on D-Bus (fi.w1.wpa_supplicant1)" : first.supplicant,
                                      fix: ok ? nil : (first.p2p.fix ?? first.softAP.fix)))
        }
        for r in reports {
            checks.append(DoctorCheck(name: "\(r.interface) Wi-Fi Direct", ok: r.p2p.available, detail: r.p2p.detail, fix: r.p2p.fix))
            let needed = !r.p2p.available
            checks.append(DoctorCheck(name: "\(r.interface) soft-AP fallback", ok: r.softAP.available || !needed,
                                      detail: r.softAP.available || needed ? r.softAP.detail : "\(r.softAP.detail) (not needed while Wi-Fi Direct works)",
                                      fix: r.softAP.available || !needed ? nil : r.softAP.fix))
            checks.append(DoctorCheck(name: "\(r.interface) NetworkManager", ok: true, detail: networkManagerNote(r), fix: nil))
        }
        let usable = reports.contains { $0.p2p.available || $0.softAP.available }
        if usable, let dad { checks.append(dad.doctorCheck) }
        return MediumReport(medium: medium, usable: usable, checks: checks)
    }

    /// What NetworkManager's presence means for PeerLink on this radio (informational).
    static func networkManagerNote(_ r: WiFiRadioReport) -> String {
        switch r.networkManager {
        case .notRunning: return "not running: PeerLink and wpa_supplicant alone decide"
        case .unmanaged: return "runs and leaves \(r.interface) unmanaged"
        case let .managed(state):
            return "manages \(r.interface) (\(state)): PeerLink leaves the radio to it (NetworkManager takes down Wi-Fi Direct groups it did not start; a soft-AP or station join would take the radio from it)"
        case let .unknown(why): return "could not be asked (\(why))"
        }
    }
}
