/* CAvahi shim: the parts of libavahi-client that Swift cannot import directly (macros,
 * variadic functions, function-pointer fields) wrapped as typed constants and inline
 * functions. Everything here is prefixed peerlink_avahi_. */
#ifndef PEERLINK_CAVAHI_SHIM_H
#define PEERLINK_CAVAHI_SHIM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/time.h>
#include <avahi-client/client.h>
#include <avahi-client/lookup.h>
#include <avahi-client/publish.h>
#include <avahi-common/address.h>
#include <avahi-common/alternative.h>
#include <avahi-common/defs.h>
#include <avahi-common/domain.h>
#include <avahi-common/error.h>
#include <avahi-common/malloc.h>
#include <avahi-common/simple-watch.h>
#include <avahi-common/strlst.h>
#include <avahi-common/timeval.h>
#include <avahi-common/watch.h>

/* Typed constants (the enum values import as Int). */
static const AvahiIfIndex peerlink_avahi_if_unspec = AVAHI_IF_UNSPEC;
static const AvahiProtocol peerlink_avahi_proto_unspec = AVAHI_PROTO_UNSPEC;
static const AvahiProtocol peerlink_avahi_proto_inet = AVAHI_PROTO_INET;
static const AvahiProtocol peerlink_avahi_proto_inet6 = AVAHI_PROTO_INET6;
static const int peerlink_avahi_err_collision = AVAHI_ERR_COLLISION;
static const int peerlink_avahi_err_disconnected = AVAHI_ERR_DISCONNECTED;
static const int peerlink_avahi_err_no_daemon = AVAHI_ERR_NO_DAEMON;
static const int peerlink_avahi_address_str_max = AVAHI_ADDRESS_STR_MAX;

/* Timeouts through the poll vtable (function-pointer fields). */
static inline AvahiTimeout *peerlink_avahi_timeout_new(const AvahiPoll *api, unsigned msec,
                                                       AvahiTimeoutCallback callback, void *userdata) {
    struct timeval tv;
    if (!api || !api->timeout_new) return NULL;
    avahi_elapse_time(&tv, msec, 0);
    return api->timeout_new(api, &tv, callback, userdata);
}

static inline void peerlink_avahi_timeout_free(const AvahiPoll *api, AvahiTimeout *t) {
    if (api && api->timeout_free && t) api->timeout_free(t);
}

/* Bus selection support (see AvahiBus.swift). libdbus caches the system bus address the
 * first time it is used in a process, so setting DBUS_SYSTEM_BUS_ADDRESS before
 * avahi_client_new only works once. PeerLink therefore exports its own
 * dbus_bus_get_private in test binaries (the only libdbus entry point libavahi-client uses);
 * these helpers open a private connection to an explicit address, or forward to libdbus's
 * real implementation. libdbus is reached with dlsym so no dbus headers are needed. */
extern void *dlsym(void *handle, const char *symbol);

typedef void *(*peerlink_dbus_bus_get_private_fn)(int type, void *error);

static inline void *peerlink_dbus_real_bus_get_private(int type, void *error) {
    static peerlink_dbus_bus_get_private_fn real = NULL;
    if (!real) real = (peerlink_dbus_bus_get_private_fn)dlsym((void *)-1L /* RTLD_NEXT */, "dbus_bus_get_private");
    if (!real) return NULL;
    return real(type, error);
}

static inline void *peerlink_dbus_open_private(const char *address, void *error) {
    typedef void *(*open_fn)(const char *, void *);
    typedef unsigned int (*register_fn)(void *, void *);
    typedef void (*conn_fn)(void *);
    typedef void (*exit_fn)(void *, unsigned int);
    open_fn open = (open_fn)dlsym((void *)0 /* RTLD_DEFAULT */, "dbus_connection_open_private");
    register_fn reg = (register_fn)dlsym((void *)0, "dbus_bus_register");
    conn_fn close_ = (conn_fn)dlsym((void *)0, "dbus_connection_close");
    conn_fn unref = (conn_fn)dlsym((void *)0, "dbus_connection_unref");
    exit_fn set_exit = (exit_fn)dlsym((void *)0, "dbus_connection_set_exit_on_disconnect");
    if (!open || !reg || !close_ || !unref) return NULL;
    void *conn = open(address, error);
    if (!conn) return NULL;
    if (set_exit) set_exit(conn, 0);
    if (!reg(conn, error)) {
        close_(conn);
        unref(conn);
        return NULL;
    }
    return conn;
}

/* Implemented in PeerLink (AvahiBus.swift). A test-only C target (Tests/BusOverride) exports
 * `dbus_bus_get_private` forwarding here, so one test process can reach several buses. */
extern void *peerlink_avahi_bus_get_private_hook(int type, void *error);

/* DBusError starts with `const char *name; const char *message;` (stable public ABI). */
static inline const char *peerlink_dbus_error_message(const void *error) {
    if (!error) return NULL;
    return ((const char *const *)error)[1];
}
static inline const char *peerlink_dbus_error_name(const void *error) {
    if (!error) return NULL;
    return ((const char *const *)error)[0];
}

#endif
