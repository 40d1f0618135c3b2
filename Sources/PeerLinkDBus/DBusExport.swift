import CDBus
import Foundation
import PeerLink

/// An object PeerLink exports on the bus: read-only properties per interface (answered
/// through `org.freedesktop.DBus.Properties`) and method handlers keyed `"interface.Method"`.
package struct DBusExportedObject: Sendable {
    /// A method's reply values, or the D-Bus error to answer with.
    package typealias Method = @Sendable (_ args: [DBusValue]) -> Result<[DBusValue], DBusFailure>

    /// interface → property name → value (not wrapped in a variant).
    package var properties: [String: [String: DBusValue]]
    /// `"interface.Method"` → handler.
    package var methods: [String: Method]

    package init(properties: [String: [String: DBusValue]], methods: [String: Method]) {
        self.properties = properties
        self.methods = methods
    }
}

/// A private bus connection that serves exported objects and makes calls of its own, with one
/// dispatch thread reading every incoming message: method calls to exported paths are
/// answered there, replies to `call` are matched by serial and handed to the waiting caller.
///
/// Because the thread keeps answering while a caller waits, a call whose callee calls back
/// into an exported object works (bluetoothd reads the advertisement's properties before it
/// answers `RegisterAdvertisement`). `call` must not be used from a method handler.
package final class DBusObjectServer: @unchecked Sendable {
    private let raw: OpaquePointer
    private let lock = NSLock()
    private var objects: [String: DBusExportedObject] = [:]
    private var pending: [UInt32: Pending] = [:]
    private var stopping = false
    private var disconnected = false
    private let finished = DispatchSemaphore(value: 0)
    private var running = false
    /// Wakes the dispatch thread's poll (nil: it falls back to 100 ms timed reads).
    private let wakeup = DBusWakeup()

    private final class Pending: @unchecked Sendable {
        let done = DispatchSemaphore(value: 0)
        var result: Result<[DBusValue], DBusFailure>?
    }

    /// This connection's unique bus name (`:1.42`).
    package let uniqueName: String

    /// Connects to the bus at `address` (nil: the system bus) and starts the dispatch thread.
    package init(address: String? = nil) throws {
        raw = try DBusConnection.open(address: address)
        uniqueName = dbus_bus_get_unique_name(raw).map { String(cString: $0) } ?? ""
        wakeup?.install(on: raw)
        running = true
        let thread = Thread { [self] in loop() }
        thread.name = "peerlink-dbus-dispatch"
        thread.start()
    }

    deinit {
        stop()
        dbus_connection_unref(raw)
    }

    /// Whether the bus connection is gone (the dispatch thread has ended).
    package var isDisconnected: Bool { lock.withLock { disconnected } }

    /// Signals this connection receives (see `addMatch`): path, interface, member, arguments.
    /// Called on the dispatch thread; must not call `call`.
    package typealias SignalHandler = @Sendable (_ path: String, _ interface: String, _ member: String, _ args: [DBusValue]) -> Void
    private var signalHandler: SignalHandler?

    /// Asks the bus for the signals `rule` matches (a D-Bus match rule) and hands each to
    /// `handler`, replacing any earlier handler. The `AddMatch` call goes through `call`, so
    /// its reply is matched by serial like any other: libdbus's blocking `dbus_bus_add_match`
    /// lost the race for its reply to this connection's dispatch thread, which popped and
    /// dropped it, and the caller waited out the 25 s default timeout.
    package func addMatch(_ rule: String, handler: @escaping SignalHandler) throws {
        lock.withLock { signalHandler = handler }
        _ = try call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "AddMatch", [.string(rule)])
    }

    /// Serves `object` at `path` (replacing what was there).
    package func export(_ path: String, _ object: DBusExportedObject) { lock.withLock { objects[path] = object } }

    /// Stops serving `path`; calls to it then get `UnknownObject`.
    package func unexport(_ path: String) { _ = lock.withLock { objects.removeValue(forKey: path) } }

    /// Ends the dispatch thread, fails waiting calls and closes the connection. Idempotent;
    /// not to be called from a method handler.
    package func stop() {
        let wait: Bool = lock.withLock {
            let w = running && !stopping
            stopping = true
            return w
        }
        wakeup?.poke()
        if wait { finished.wait() }
    }

    /// Calls `method` and waits for its reply (delivered by the dispatch thread).
    package func call(_ destination: String, _ path: String, _ interface: String, _ method: String,
              _ args: [DBusValue] = [], timeoutMillis: Int = 5000) throws -> [DBusValue] {
        guard let msg = dbus_message_new_method_call(destination, path, interface, method) else {
            throw DBusFailure.call(name: "org.peerlink.InvalidArgs", message: "cannot build the call \(interface).\(method) on \(path)")
        }
        defer { dbus_message_unref(msg) }
        var it = DBusMessageIter()
        dbus_message_iter_init_append(msg, &it)
        for a in args { try DBusConnection.append(a, &it) }
        let p = Pending()
        var serial: UInt32 = 0
        // Registered under the lock before the dispatch thread can see the reply.
        let sent: Bool = lock.withLock {
            guard !stopping, !disconnected, dbus_connection_send(raw, msg, &serial) != 0 else { return false }
            pending[serial] = p
            return true
        }
        guard sent else { throw DBusFailure.busUnavailable("the connection is closed") }
        // No flush here: libdbus wrote the message already, or it wakes the dispatch thread
        // (DBusWakeup), which writes it.
        if p.done.wait(timeout: .now() + .milliseconds(timeoutMillis)) == .timedOut {
            let late: Bool = lock.withLock { pending.removeValue(forKey: serial) == nil }
            if late { p.done.wait() } else {
                throw DBusFailure.call(name: "org.freedesktop.DBus.Error.NoReply", message: "no reply to \(interface).\(method) within \(timeoutMillis) ms")
            }
        }
        switch p.result {
        case let .success(v)?: return v
        case let .failure(f)?: throw f
        case nil: throw DBusFailure.busUnavailable("the connection closed before \(interface).\(method) was answered")
        }
    }

    // MARK: - Dispatch thread

    private func loop() {
        var fd: Int32 = -1
        let pollable = wakeup != nil && dbus_connection_get_unix_fd(raw, &fd) != 0 && fd >= 0
        while !lock.withLock({ stopping }) {
            while let msg = dbus_connection_pop_message(raw) {
                handle(msg)
                dbus_message_unref(msg)
            }
            if pollable, let wakeup {
                // Sleep outside libdbus, so other threads can write while nothing happens.
                wakeup.wait(socket: fd, connection: raw, timeoutMillis: 1000)
                if lock.withLock({ stopping }) { break }
                if dbus_connection_read_write(raw, 0) == 0 { break }  // disconnected
            } else if dbus_connection_read_write(raw, 100) == 0 {
                break  // disconnected
            }
        }
        wakeup?.uninstall(from: raw)
        let waiting: [Pending] = lock.withLock {
            disconnected = true
            stopping = true
            let w = Array(pending.values)
            pending.removeAll()
            return w
        }
        for p in waiting { p.done.signal() }  // result nil: "connection closed"
        dbus_connection_close(raw)
        finished.signal()
    }

    private func handle(_ msg: OpaquePointer) {
        let type = dbus_message_get_type(msg)
        if type == peerlink_dbus_message_type_method_return || type == peerlink_dbus_message_type_error {
            let serial = dbus_message_get_reply_serial(msg)
            guard let p = lock.withLock({ pending.removeValue(forKey: serial) }) else { return }
            var values: [DBusValue] = []
            var it = DBusMessageIter()
            if dbus_message_iter_init(msg, &it) != 0 { values = DBusValue.readAll(&it) }
            if type == peerlink_dbus_message_type_error {
                let name = dbus_message_get_error_name(msg).map { String(cString: $0) } ?? "org.freedesktop.DBus.Error.Failed"
                p.result = .failure(.call(name: name, message: values.first?.string ?? ""))
            } else {
                p.result = .success(values)
            }
            p.done.signal()
        } else if type == peerlink_dbus_message_type_method_call {
            answer(msg)
        } else if type == peerlink_dbus_message_type_signal, let handler = lock.withLock({ signalHandler }) {
            func text(_ p: UnsafePointer<CChar>?) -> String { p.map { String(cString: $0) } ?? "" }
            var args: [DBusValue] = []
            var it = DBusMessageIter()
            if dbus_message_iter_init(msg, &it) != 0 { args = DBusValue.readAll(&it) }
            handler(text(dbus_message_get_path(msg)), text(dbus_message_get_interface(msg)), text(dbus_message_get_member(msg)), args)
        }
    }

    private func answer(_ msg: OpaquePointer) {
        let path = dbus_message_get_path(msg).map { String(cString: $0) } ?? ""
        let interface = dbus_message_get_interface(msg).map { String(cString: $0) }
        let member = dbus_message_get_member(msg).map { String(cString: $0) } ?? ""
        var args: [DBusValue] = []
        var it = DBusMessageIter()
        if dbus_message_iter_init(msg, &it) != 0 { args = DBusValue.readAll(&it) }
        let result: Result<[DBusValue], DBusFailure>
        if let object = lock.withLock({ objects[path] }) {
            result = Self.invoke(object, interface: interface, member: member, args: args)
        } else {
            result = .failure(.call(name: "org.freedesktop.DBus.Error.UnknownObject", message: "no object at \(path)"))
        }
        guard dbus_message_get_no_reply(msg) == 0 else { return }
        var reply: OpaquePointer?
        switch result {
        case let .success(values):
            reply = dbus_message_new_method_return(msg)
            if let r = reply {
                var out = DBusMessageIter()
                dbus_message_iter_init_append(r, &out)
                do { for v in values { try DBusConnection.append(v, &out) } } catch {
                    dbus_message_unref(r)
                    reply = dbus_message_new_error(msg, "org.freedesktop.DBus.Error.Failed", "cannot write the reply")
                }
            }
        case let .failure(f):
            let (name, text): (String, String) = switch f {
            case let .call(n, m): (n, m)
            case let .busUnavailable(m): ("org.freedesktop.DBus.Error.Failed", m)
            }
            reply = dbus_message_new_error(msg, name, text)
        }
        guard let reply else { return }
        _ = dbus_connection_send(raw, reply, nil)
        dbus_message_unref(reply)
    }

    /// What an exported object answers to `interface.member(args)`: the standard Properties
    /// methods from its property table, its own methods, else `UnknownMethod`.
    package static func invoke(_ object: DBusExportedObject, interface: String?, member: String,
                       args: [DBusValue]) -> Result<[DBusValue], DBusFailure> {
        func invalid(_ m: String) -> Result<[DBusValue], DBusFailure> { .failure(.call(name: "org.freedesktop.DBus.Error.InvalidArgs", message: m)) }
        if interface == "org.freedesktop.DBus.Properties" || (interface == nil && ["Get", "GetAll", "Set"].contains(member)) {
            switch member {
            case "GetAll":
                guard args.count == 1, case let .string(iface) = args[0] else { return invalid("GetAll takes one string (the interface)") }
                guard let props = object.properties[iface] else { return invalid("no interface \(iface) on this object") }
                return .success([.propertyDictionary(props)])
            case "Get":
                guard args.count == 2, case let .string(iface) = args[0], case let .string(name) = args[1] else {
                    return invalid("Get takes two strings (interface, property)")
                }
                guard let props = object.properties[iface] else { return invalid("no interface \(iface) on this object") }
                guard let v = props[name] else {
                    return .failure(.call(name: "org.freedesktop.DBus.Error.UnknownProperty", message: "no property \(iface).\(name)"))
                }
                return .success([.variant(v)])
            case "Set":
                return .failure(.call(name: "org.freedesktop.DBus.Error.PropertyReadOnly", message: "the properties of this object are read-only"))
            default: break
            }
        }
        let handler = interface.flatMap { object.methods["\($0).\(member)"] }
            ?? (interface == nil ? object.methods.first { $0.key.hasSuffix(".\(member)") }?.value : nil)
        guard let handler else {
            return .failure(.call(name: "org.freedesktop.DBus.Error.UnknownMethod",
                                  message: "no method \(interface.map { "\($0)." } ?? "")\(member) on this object"))
        }
        return handler(args)
    }
}
