/* CDBus shim: libdbus-1 macros as typed constants (Swift does not import them). Variadic
 * calls (dbus_message_append_args/get_args) are avoided; the Swift side uses iterators.
 * Everything here is prefixed peerlink_dbus_. */
#ifndef PEERLINK_CDBUS_SHIM_H
#define PEERLINK_CDBUS_SHIM_H

#include <dbus/dbus.h>

static const int peerlink_dbus_type_invalid = DBUS_TYPE_INVALID;
static const int peerlink_dbus_type_byte = DBUS_TYPE_BYTE;
static const int peerlink_dbus_type_boolean = DBUS_TYPE_BOOLEAN;
static const int peerlink_dbus_type_int16 = DBUS_TYPE_INT16;
static const int peerlink_dbus_type_uint16 = DBUS_TYPE_UINT16;
static const int peerlink_dbus_type_int32 = DBUS_TYPE_INT32;
static const int peerlink_dbus_type_uint32 = DBUS_TYPE_UINT32;
static const int peerlink_dbus_type_int64 = DBUS_TYPE_INT64;
static const int peerlink_dbus_type_uint64 = DBUS_TYPE_UINT64;
static const int peerlink_dbus_type_double = DBUS_TYPE_DOUBLE;
static const int peerlink_dbus_type_string = DBUS_TYPE_STRING;
static const int peerlink_dbus_type_object_path = DBUS_TYPE_OBJECT_PATH;
static const int peerlink_dbus_type_signature = DBUS_TYPE_SIGNATURE;
static const int peerlink_dbus_type_unix_fd = DBUS_TYPE_UNIX_FD;
static const int peerlink_dbus_type_array = DBUS_TYPE_ARRAY;
static const int peerlink_dbus_type_variant = DBUS_TYPE_VARIANT;
static const int peerlink_dbus_type_struct = DBUS_TYPE_STRUCT;
static const int peerlink_dbus_type_dict_entry = DBUS_TYPE_DICT_ENTRY;
static const int peerlink_dbus_message_type_error = DBUS_MESSAGE_TYPE_ERROR;
static const int peerlink_dbus_message_type_method_call = DBUS_MESSAGE_TYPE_METHOD_CALL;
static const int peerlink_dbus_message_type_method_return = DBUS_MESSAGE_TYPE_METHOD_RETURN;
static const int peerlink_dbus_message_type_signal = DBUS_MESSAGE_TYPE_SIGNAL;

/* A DBusError on the heap-free Swift side: init, test, read and free. */
static inline void peerlink_dbus_error_init(DBusError *e) { dbus_error_init(e); }
static inline int peerlink_dbus_error_is_set(const DBusError *e) { return dbus_error_is_set(e) ? 1 : 0; }
static inline const char *peerlink_dbus_error_name(const DBusError *e) { return e->name ? e->name : ""; }
static inline const char *peerlink_dbus_error_message(const DBusError *e) { return e->message ? e->message : ""; }

#endif
