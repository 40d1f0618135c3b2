import Foundation
import PeerLink

/// What bluetoothd's configuration says about how long a vanished device stays known.
///
/// bluetoothd forgets a device that is neither paired nor connected `TemporaryTimeout` seconds
/// after it last heard an advert from it (`[General] TemporaryTimeout`, default 30); only then
/// does the device object go from D-Bus, and only then does a PeerLink browser report the
/// peer lost. Lowering it in `/etc/bluetooth/main.conf` makes lost events come sooner; 0
/// turns the timer off, and such a device is never forgotten.
public struct BlueZMainConf: Sendable, Equatable {
    /// bluetoothd's built-in value when the file does not set one.
    public static let defaultTemporaryTimeout = 30
    /// Where Debian's bluetoothd reads its configuration unless started with `-f`.
    public static let defaultPath = "/etc/bluetooth/main.conf"

    /// Seconds, or nil when the file does not set it (bluetoothd then uses the default).
    public var temporaryTimeout: Int?

    /// The seconds bluetoothd uses.
    public var effectiveTemporaryTimeout: Int { temporaryTimeout ?? Self.defaultTemporaryTimeout }

    /// Reads the GLib key file text of a main.conf: the `TemporaryTimeout` key of `[General]`.
    /// Comments, other sections and a value that is not a whole number are ignored (bluetoothd
    /// ignores such a value too and keeps its default).
    public init(text: String) {
        var section = ""
        for raw in text.split(whereSeparator: \.isNewline) {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("["), line.hasSuffix("]") {
                section = String(line.dropFirst().dropLast()).trimmingCharacters(in: .whitespaces)
                continue
            }
            guard section == "General", let eq = line.firstIndex(of: "=") else { continue }
            let key = line[..<eq].trimmingCharacters(in: .whitespaces)
            let value = line[line.index(after: eq)...].trimmingCharacters(in: .whitespaces)
            if key == "TemporaryTimeout", let n = Int(value), n >= 0 { temporaryTimeout = n }
        }
    }

    /// The configuration file a running bluetoothd uses: its `-f`/`--configfile` argument
    /// (read from `/proc/PID/cmdline`), else `defaultPath`.
    public static func path(bluetoothdArguments args: [String]) -> String {
        for (i, a) in args.enumerated() {
            if (a == "-f" || a == "--configfile"), i + 1 < args.count { return args[i + 1] }
            if a.hasPrefix("--configfile=") { return String(a.dropFirst("--configfile=".count)) }
            if a.hasPrefix("-f"), a.count > 2 { return String(a.dropFirst(2)) }
        }
        return defaultPath
    }
}
