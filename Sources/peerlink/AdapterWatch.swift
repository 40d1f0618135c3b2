import Foundation
import PeerLinkBluetooth

/// A daemon that started without Bluetooth because bluetoothd had no powered adapter yet (a
/// Raspberry Pi's UART controller attached after the daemon started, a dongle plugged in
/// later, bluetoothd itself late) looks again every `interval` (10 s: one D-Bus call). When a powered adapter is
/// there, `appeared` runs once: the daemon restarts itself in place to take it up. Its state
/// is all on disk (ledger, partial files), so a restart loses nothing.
enum AdapterWatch {
    static func start(interval: Duration = .seconds(10),
                      probe: @escaping @Sendable () -> [BlueZAdapter] = { (try? BlueZProbe.adapters()) ?? [] },
                      appeared: @escaping @Sendable (BlueZAdapter) async -> Void) -> Task<Void, Never> {
        Task.detached {
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                if Task.isCancelled { return }
                if let adapter = probe().first(where: \.powered) {
                    await appeared(adapter)
                    return
                }
            }
        }
    }
}

/// Replaces this process with a fresh run of the same binary and arguments (same PID, so
/// systemd keeps supervising it). Returns only when `execv` fails, with its error.
func restartInPlace() -> String {
    let arguments = CommandLine.arguments
    var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) }
    argv.append(nil)
    execv("/proc/self/exe", &argv)
    let why = String(cString: strerror(errno))
    for p in argv { free(p) }
    return why
}
