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

/// A private bus connection that serves exported objects and makes calls of its own. The
/// bus socket is watched on the process's I/O loop (no thread of its own): when it is
/// readable the loop reads what came, hands each reply to `call` to its waiting caller at
/// once, and queues method calls to exported paths and signals on this connection's lane of
/// the blocking pool, where they are answered and handled one at a time, in order.
///
/// Because replies do not wait behind handlers, a call whose callee calls back into an
/// exported object works (bluetoothd reads the advertisement's properties before it answers
/// `RegisterAdvertisement`). `call` must not be used from a method or signal handler.
package final class DBusObjectServer: @unchecked Sendable {
    private let raw: OpaquePointer
    private let lock = NSLock()
    private var objects: [String: DBusExportedObject] = [:]
    private var pending: [UInt32: Pending] = [:]
    private var stopping = false
    private var disconnected = false
    /// The bus socket on the I/O loop; nil once the connection is torn down.
    private var watch: IOWatch?
    /// Method calls and signals, handled in order.
    private let lane = BlockingPool.Lane("pl.dbus")

    private final class Pending: @unchecked Sendable {
        let done = DispatchSemaphore(value: 0)
        var result: Result<[DBusValue], DBusFailure>?
    }

    /// A received message on its way to the lane (its reference is released there).
    private struct Received: @unchecked Sendable { let message: OpaquePointer }

    /// This connection's unique bus name (`:1.42`).
    package let uniqueName: String

    /// Connects to the bus at `address` (nil: the system bus) and watches it on the I/O loop.
    package init(address: String? = nil) throws {
        raw = try DBusConnection.open(address: address)
        uniqueName = dbus_bus_get_unique_name(raw).map { String(cString: $0) } ?? ""
        var fd: Int32 = -1
        let watch: IOWatch
        do {
            guard dbus_connection_get_unix_fd(raw, &fd) != 0, fd >= 0 else {
                throw DBusFailure.busUnavailable("the bus connection has no socket to watch")
            }
            watch = try IOWatch(fd: fd, events: .readable) { [weak self] _ in self?.serviceSocket() }
        } catch {
            dbus_connection_close(raw)
            dbus_connection_unref(raw)
            throw error as? DBusFailure ?? .busUnavailable("cannot watch the bus socket: \(error)")
        }
        lock.withLock { self.watch = watch }
        // A message another thread queued but could not write whole: the loop writes the
        // rest once the socket has room. libdbus calls this with its connection lock held,
        // so it only asks for writability (the next turn drops it again when all is out).
        let box = Unmanaged.passRetained(WeakWatch(watch)).toOpaque()
        dbus_connection_set_wakeup_main_function(raw, { data in
            guard let data else { return }
            Unmanaged<WeakWatch>.fromOpaque(data).takeUnretainedValue().watch?.update([.readable, .writable])
        }, box, { data in
            guard let data else { return }
            Unmanaged<WeakWatch>.fromOpaque(data).release()
        })
        // Bytes that arrived before the watch (the bus's NameAcquired) are read on its
        // first turn; messages libdbus already holds are handed out now.
        watch.update([.readable, .writable])
    }

    private final class WeakWatch: @unchecked Sendable {
        weak var watch: IOWatch?
        init(_ watch: IOWatch) { self.watch = watch }
    }

    deinit {
        stop()
        dbus_connection_unref(raw)
    }

    /// Whether the bus connection is gone (the watch has ended).
    package var isDisconnected: Bool { lock.withLock { disconnected } }

    /// Signals this connection receives (see `addMatch`): path, interface, member, arguments.
    /// Called on the connection's lane, in order; must not call `call`.
    package typealias SignalHandler = @Sendable (_ path: String, _ interface: String, _ member: String, _ args: [DBusValue]) -> Void
    private var signalHandler: SignalHandler?

    /// Asks the bus for the signals `rule` matches (a D-Bus match rule) and hands each to
    /// `handler`, replacing any earlier handler. The `AddMatch` call goes through `call`, so
    /// its reply is matched by serial like any other: libdbus's blocking `dbus_bus_add_match`
    /// would race this connection's reader for its reply, which would pop and drop it, and
    /// the caller would wait out the 25 s default timeout.
    package func addMatch(_ rule: String, handler: @escaping SignalHandler) throws {
        lock.withLock { signalHandler = handler }
        _ = try call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "AddMatch", [.string(rule)])
    }

    /// Serves `object` at `path` (replacing what was there).
    package func export(_ path: String, _ object: DBusExportedObject) { lock.withLock { objects[path] = object } }

    /// Stops serving `path`; calls to it then get `UnknownObject`.
    package func unexport(_ path: String) { _ = lock.withLock { objects.removeValue(forKey: path) } }

    /// Stops watching the bus, fails waiting calls and closes the connection. Idempotent;
    /// not to be called from a method or signal handler.
    package func stop() {
        let w: IOWatch? = lock.withLock {
            stopping = true
            return watch
        }
        w?.cancel()  // a turn that is reading the socket has ended when this returns
        tearDown()
    }

    /// Calls `method` and waits for its reply (handed over by the I/O loop).
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
        // Registered under the lock before the loop can see the reply.
        let sent: Bool = lock.withLock {
            guard !stopping, !disconnected, dbus_connection_send(raw, msg, &serial) != 0 else { return false }
            pending[serial] = p
            return true
        }
        guard sent else { throw DBusFailure.busUnavailable("the connection is closed") }
        // No flush here: libdbus wrote the message already, or its wake-up asked the loop to.
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

    // MARK: - On the I/O loop

    /// One turn for the bus socket: read and write what can be without blocking, hand out
    /// what came, and ask for writability only while output waits.
    private func serviceSocket() {
        var connected = dbus_connection_read_write(raw, 0) != 0
        var queued: [Received] = []
        while let msg = dbus_connection_pop_message(raw) {
            if !deliverReply(msg) {
                queued.append(Received(message: msg))
                continue
            }
            dbus_message_unref(msg)
        }
        // libdbus closes its socket when the bus goes; the watch's copy would keep reporting it.
        if dbus_connection_get_is_connected(raw) == 0 { connected = false }
        if !queued.isEmpty {
            lane.post { [self, queued] in
                for r in queued {
                    handle(r.message)
                    dbus_message_unref(r.message)
                }
            }
        }
        guard connected, !lock.withLock({ stopping }) else {
            if !connected { tearDown() }
            return
        }
        let out: IOWatch.Events = dbus_connection_has_messages_to_send(raw) != 0 ? .writable : []
        lock.withLock { watch }?.update(out.union(.readable))
    }

    /// Ends the watch, fails waiting calls and closes the connection (once).
    private func tearDown() {
        let (w, waiting): (IOWatch?, [Pending]) = lock.withLock {
            guard !disconnected else { return (nil, []) }
            disconnected = true
            stopping = true
            defer { watch = nil; pending.removeAll() }
            return (watch, Array(pending.values))
        }
        guard let w else { return }
        w.cancel()  // from its own handler (bus gone) it does not wait
        dbus_connection_set_wakeup_main_function(raw, nil, nil, nil)
        for p in waiting { p.done.signal() }  // result nil: "connection closed"
        dbus_connection_close(raw)
    }

    /// Hands a method return or error to its waiting caller; false for any other message.
    private func deliverReply(_ msg: OpaquePointer) -> Bool {
        let type = dbus_message_get_type(msg)
        guard type == peerlink_dbus_message_type_method_return || type == peerlink_dbus_message_type_error else { return false }
        let serial = dbus_message_get_reply_serial(msg)
        guard let p = lock.withLock({ pending.removeValue(forKey: serial) }) else { return true }
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
        return true
    }

    // MARK: - On the lane

    /// Answers a method call or hands a signal to the signal handler.
    private func handle(_ msg: OpaquePointer) {
        let type = dbus_message_get_type(msg)
        if type == peerlink_dbus_message_type_method_call {
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
