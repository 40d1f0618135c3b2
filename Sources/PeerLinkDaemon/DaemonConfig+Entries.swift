extension DaemonConfig {
    /// Every setting as the file would write it, in the order docs/CONFIG.md lists them, for
    /// `peerlink daemon --check-config` (unset optional settings say "(none)").
    public var entries: [(key: String, value: String)] {
        func quoted(_ s: String) -> String { "\"\(s)\"" }
        func list(_ l: [String]) -> String { "[" + l.map(quoted).joined(separator: ", ") + "]" }
        return [
            ("service", quoted(service)),
            ("name", name.map(quoted) ?? "(the stored name, else the host name)"),
            ("media", list(media)),
            ("policy", quoted(policy.rawValue)),
            ("adapter", adapter.map(quoted) ?? "(the first powered adapter)"),
            ("bluetooth_transports", list(bluetoothTransports)),
            ("wifi", wifi.map(quoted) ?? "(the first radio that can do Wi-Fi Direct)"),
            ("state_dir", quoted(stateDirectory)),
            ("inbox", quoted(inbox)),
            ("outbox", quoted(outbox)),
            ("accept", quoted(accept.rawValue)),
            ("keep_free", quoted(ConfigValues.bytesText(keepFree))),
            ("quota", quoted(ConfigValues.bytesText(quota))),
            ("ttl", quoted(ConfigValues.durationText(ttlSeconds))),
            ("on_receive", onReceive.map(list) ?? "(none)"),
            ("log_level", quoted(logLevel)),
            ("metrics", metrics.map(quoted) ?? "false"),
            ("runtime_dir", runtimeDirectory.map(quoted) ?? "(PEERLINK_RUNTIME_DIR, else /run/peerlink as root, else XDG_RUNTIME_DIR/peerlink)"),
        ]
    }

    /// The settings as JSON values (absent optional settings are null).
    public var jsonObject: [String: Any] {
        [
            "service": service, "name": name as Any, "media": media, "policy": policy.rawValue, "adapter": adapter as Any,
            "bluetooth_transports": bluetoothTransports, "wifi": wifi as Any, "state_dir": stateDirectory,
            "inbox": inbox, "outbox": outbox, "accept": accept.rawValue, "keep_free": keepFree, "quota": quota,
            "ttl_seconds": ttlSeconds, "on_receive": onReceive as Any, "log_level": logLevel, "metrics": metrics as Any,
            "runtime_dir": runtimeDirectory as Any,
        ]
    }
}
