import CDBus
import Foundation
import PeerLink

/// Why a D-Bus operation failed.
public enum DBusFailure: Error, Equatable, Sendable, CustomStringConvertible {
    /// No bus at the address (no dbus-daemon, or no permission).
    case busUnavailable(String)
    /// The call returned a D-Bus error (name and message as sent by the callee or the bus).
    case call(name: String, message: String)

    public var description: String {
        switch self {
        case let .busUnavailable(why): return "D-Bus system bus unavailable: \(why)"
        case let .call(name, message): return "\(name): \(message)"
        }
    }

    /// True when the destination is not on the bus (the daemon is not running).
    public var isServiceUnknown: Bool {
        if case let .call(name, _) = self {
            return name == "org.freedesktop.DBus.Error.ServiceUnknown" || name == "org.freedesktop.DBus.Error.NameHasNoOwner"
        }
        return false
    }
}

/// A private libdbus connection used for blocking method calls with timeouts. Calls are
/// serialised by a lock; callers run them off the cooperative thread pool.
package final class DBusConnection: @unchecked Sendable {
    private let raw: OpaquePointer
    private let lock = NSLock()

    /// Connects to the bus at `address`, or to the system bus (`DBUS_SYSTEM_BUS_ADDRESS` or the
    /// default socket) when nil.
    package init(address: String? = nil) throws {
        raw = try Self.open(address: address)
    }

    /// Opens a private, registered connection (the caller closes and unrefs it).
    package static func open(address: String?) throws -> OpaquePointer {
        // Connections are shared between the I/O loop, a lane and callers; libdbus needs its
        // thread support initialised (newer versions do this themselves; it is idempotent).
        _ = dbus_threads_init_default()
        var err = DBusError()
        peerlink_dbus_error_init(&err)
        defer { dbus_error_free(&err) }
        var conn: OpaquePointer?
        if let address {
            conn = dbus_connection_open_private(address, &err)
            if let c = conn, dbus_bus_register(c, &err) == 0 {
                dbus_connection_close(c)
                dbus_connection_unref(c)
                conn = nil
            }
        } else {
            conn = dbus_bus_get_private(DBUS_BUS_SYSTEM, &err)
        }
        guard let c = conn else {
            let why = peerlink_dbus_error_is_set(&err) != 0 ? String(cString: peerlink_dbus_error_message(&err)) : "unknown error"
            throw DBusFailure.busUnavailable(why)
        }
        dbus_connection_set_exit_on_disconnect(c, 0)
        return c
    }

    deinit {
        dbus_connection_close(raw)
        dbus_connection_unref(raw)
    }

    /// Calls `method` and returns the reply's values; a D-Bus error reply or a timeout throws.
    package func call(_ destination: String, _ path: String, _ interface: String, _ method: String,
              _ args: [DBusValue] = [], timeoutMillis: Int32 = 5000) throws -> [DBusValue] {
        guard let msg = dbus_message_new_method_call(destination, path, interface, method) else {
            throw DBusFailure.call(name: "org.peerlink.InvalidArgs", message: "cannot build the call \(interface).\(method) on \(path)")
        }
        defer { dbus_message_unref(msg) }
        var it = DBusMessageIter()
        dbus_message_iter_init_append(msg, &it)
        for a in args { try Self.append(a, &it) }
        var err = DBusError()
        peerlink_dbus_error_init(&err)
        defer { dbus_error_free(&err) }
        let reply = lock.withLock { dbus_connection_send_with_reply_and_block(raw, msg, timeoutMillis, &err) }
        guard let reply else {
            throw DBusFailure.call(name: String(cString: peerlink_dbus_error_name(&err)), message: String(cString: peerlink_dbus_error_message(&err)))
        }
        defer { dbus_message_unref(reply) }
        var rit = DBusMessageIter()
        guard dbus_message_iter_init(reply, &rit) != 0 else { return [] }
        return DBusValue.readAll(&rit)
    }

    /// Whether `name` currently has an owner on the bus.
    package func nameHasOwner(_ name: String) throws -> Bool {
        let r = try call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "NameHasOwner", [.string(name)])
        return r.first?.bool ?? false
    }

    /// Appends basic values, variants and containers. An array's element signature is taken
    /// from its first element; an empty `.array([])` is written as `as`, so write other empty
    /// arrays as `.emptyArray(elementSignature:)` (e.g. `"{sv}"` for an empty `a{sv}`).
    package static func append(_ v: DBusValue, _ it: inout DBusMessageIter) throws {
        func basic<T>(_ type: Int32, _ value: T) {
            var x = value
            _ = withUnsafeBytes(of: &x) { dbus_message_iter_append_basic(&it, type, $0.baseAddress) }
        }
        switch v {
        case let .byte(x): basic(peerlink_dbus_type_byte, x)
        case let .bool(x): basic(peerlink_dbus_type_boolean, UInt32(x ? 1 : 0))
        case let .int16(x): basic(peerlink_dbus_type_int16, x)
        case let .uint16(x): basic(peerlink_dbus_type_uint16, x)
        case let .int32(x): basic(peerlink_dbus_type_int32, x)
        case let .uint32(x): basic(peerlink_dbus_type_uint32, x)
        case let .int64(x): basic(peerlink_dbus_type_int64, x)
        case let .uint64(x): basic(peerlink_dbus_type_uint64, x)
        case let .double(x): basic(peerlink_dbus_type_double, x)
        case let .unixFD(x): basic(peerlink_dbus_type_unix_fd, x)
        case let .string(s), let .objectPath(s), let .signature(s):
            let type = v == .string(s) ? peerlink_dbus_type_string : v == .objectPath(s) ? peerlink_dbus_type_object_path : peerlink_dbus_type_signature
            s.withCString { p in basic(type, p) }
        case let .variant(inner):
            try container(peerlink_dbus_type_variant, signature(inner), &it) { sub in try append(inner, &sub) }
        case let .array(items):
            try container(peerlink_dbus_type_array, items.first.map(signature) ?? "s", &it) { sub in
                for i in items { try append(i, &sub) }
            }
        case let .emptyArray(elementSignature):
            try container(peerlink_dbus_type_array, elementSignature, &it) { _ in }
        case let .structure(items):
            try container(peerlink_dbus_type_struct, nil, &it) { sub in for i in items { try append(i, &sub) } }
        case let .dictEntry(k, val):
            try container(peerlink_dbus_type_dict_entry, nil, &it) { sub in try append(k, &sub); try append(val, &sub) }
        }
    }

    private static func container(_ type: Int32, _ sig: String?, _ it: inout DBusMessageIter,
                                  _ body: (inout DBusMessageIter) throws -> Void) throws {
        var sub = DBusMessageIter()
        let ok: UInt32 = if let sig { sig.withCString { dbus_message_iter_open_container(&it, type, $0, &sub) } }
                         else { dbus_message_iter_open_container(&it, type, nil, &sub) }
        guard ok != 0 else { throw DBusFailure.call(name: "org.peerlink.NoMemory", message: "cannot open a D-Bus container") }
        try body(&sub)
        dbus_message_iter_close_container(&it, &sub)
    }

    /// The D-Bus signature of one value.
    package static func signature(_ v: DBusValue) -> String {
        switch v {
        case .byte: "y"
        case .bool: "b"
        case .int16: "n"
        case .uint16: "q"
        case .int32: "i"
        case .uint32: "u"
        case .int64: "x"
        case .uint64: "t"
        case .double: "d"
        case .unixFD: "h"
        case .string: "s"
        case .objectPath: "o"
        case .signature: "g"
        case .variant: "v"
        case let .array(items): "a" + (items.first.map(signature) ?? "s")
        case let .emptyArray(element): "a" + element
        case let .structure(items): "(" + items.map(signature).joined() + ")"
        case let .dictEntry(k, val): "{" + signature(k) + signature(val) + "}"
        }
    }
}
