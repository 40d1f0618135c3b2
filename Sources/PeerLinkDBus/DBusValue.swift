import CDBus
import PeerLink

/// A value read from (or written to) a D-Bus message, with its D-Bus type.
package indirect enum DBusValue: Equatable, Sendable {
    case byte(UInt8), bool(Bool), int16(Int16), uint16(UInt16), int32(Int32), uint32(UInt32)
    case int64(Int64), uint64(UInt64), double(Double)
    case string(String), objectPath(String), signature(String)
    case array([DBusValue]), dictEntry(DBusValue, DBusValue), structure([DBusValue]), variant(DBusValue)
    /// A file descriptor (only its number is kept; the reader owns a duplicate and closes it).
    case unixFD(Int32)
    /// An array with no elements, written with the given element signature (`"{sv}"` for an
    /// empty `a{sv}`): an empty `.array([])` has no element to take its type from. Only
    /// written, never read (the reader gives `.array([])`).
    case emptyArray(elementSignature: String)

    /// An `a{sv}` dictionary (keys sorted, values wrapped in variants); empty gives a typed
    /// empty array.
    package static func propertyDictionary(_ entries: [String: DBusValue]) -> DBusValue {
        guard !entries.isEmpty else { return .emptyArray(elementSignature: "{sv}") }
        return .array(entries.keys.sorted().compactMap { k in entries[k].map { .dictEntry(.string(k), .variant($0)) } })
    }

    /// Bytes as an `ay` array.
    package static func bytes(_ b: [UInt8]) -> DBusValue {
        b.isEmpty ? .emptyArray(elementSignature: "y") : .array(b.map { .byte($0) })
    }

    package var string: String? {
        switch self {
        case let .string(s), let .objectPath(s), let .signature(s): return s
        case let .variant(v): return v.string
        default: return nil
        }
    }

    package var bytes: [UInt8]? {
        guard case let .array(items) = unwrapped else {
            if case .emptyArray("y") = unwrapped { return [] }
            return nil
        }
        var out: [UInt8] = []
        for case let .byte(b) in items { out.append(b) }
        return out.count == items.count ? out : nil
    }

    package var bool: Bool? {
        switch self {
        case let .bool(b): return b
        case let .variant(v): return v.bool
        default: return nil
        }
    }

    /// An `a{..}` array as a dictionary keyed by string keys (later duplicates ignored).
    package var dictionary: [String: DBusValue] {
        guard case let .array(items) = unwrapped else { return [:] }
        var out: [String: DBusValue] = [:]
        for case let .dictEntry(k, v) in items { if let key = k.string, out[key] == nil { out[key] = v } }
        return out
    }

    package var unwrapped: DBusValue {
        if case let .variant(v) = self { return v.unwrapped }
        return self
    }

    /// Reads every value from `iter` to the end of its container.
    package static func readAll(_ iter: inout DBusMessageIter) -> [DBusValue] {
        var out: [DBusValue] = []
        while dbus_message_iter_get_arg_type(&iter) != peerlink_dbus_type_invalid {
            out.append(read(&iter))
            if dbus_message_iter_next(&iter) == 0 { break }
        }
        return out
    }

    private static func basic<T>(_ iter: inout DBusMessageIter, _ zero: T) -> T {
        var v = zero
        withUnsafeMutableBytes(of: &v) { dbus_message_iter_get_basic(&iter, $0.baseAddress) }
        return v
    }

    package static func read(_ iter: inout DBusMessageIter) -> DBusValue {
        let t = dbus_message_iter_get_arg_type(&iter)
        switch t {
        case peerlink_dbus_type_byte: return .byte(basic(&iter, UInt8(0)))
        case peerlink_dbus_type_boolean: return .bool(basic(&iter, UInt32(0)) != 0)
        case peerlink_dbus_type_int16: return .int16(basic(&iter, Int16(0)))
        case peerlink_dbus_type_uint16: return .uint16(basic(&iter, UInt16(0)))
        case peerlink_dbus_type_int32: return .int32(basic(&iter, Int32(0)))
        case peerlink_dbus_type_uint32: return .uint32(basic(&iter, UInt32(0)))
        case peerlink_dbus_type_int64: return .int64(basic(&iter, Int64(0)))
        case peerlink_dbus_type_uint64: return .uint64(basic(&iter, UInt64(0)))
        case peerlink_dbus_type_double: return .double(basic(&iter, Double(0)))
        case peerlink_dbus_type_unix_fd: return .unixFD(basic(&iter, Int32(-1)))
        case peerlink_dbus_type_string, peerlink_dbus_type_object_path, peerlink_dbus_type_signature:
            let p = basic(&iter, UnsafePointer<CChar>?.none)
            let s = p.map { String(cString: $0) } ?? ""
            return t == peerlink_dbus_type_string ? .string(s) : t == peerlink_dbus_type_object_path ? .objectPath(s) : .signature(s)
        case peerlink_dbus_type_array, peerlink_dbus_type_struct, peerlink_dbus_type_variant, peerlink_dbus_type_dict_entry:
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iter, &sub)
            let items = readAll(&sub)
            switch t {
            case peerlink_dbus_type_array: return .array(items)
            case peerlink_dbus_type_struct: return .structure(items)
            case peerlink_dbus_type_variant: return .variant(items.first ?? .array([]))
            default: return .dictEntry(items.first ?? .string(""), items.count > 1 ? items[1] : .string(""))
            }
        default:
            return .array([])  // a type this client does not read
        }
    }
}
