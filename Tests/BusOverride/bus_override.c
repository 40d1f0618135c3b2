#include "PeerLinkBusOverride.h"

/* PeerLink's bus selector (Sources/PeerLinkAvahi/AvahiBus.swift). */
extern void *peerlink_avahi_bus_get_private_hook(int type, void *error);

/* Interposes libdbus's dbus_bus_get_private for this executable only. The selector forwards
 * every call it does not own to the real function (RTLD_NEXT). No dbus header is included,
 * so the prototype uses plain pointers with the same ABI. */
__attribute__((visibility("default"), used))
void *dbus_bus_get_private(int type, void *error) {
    return peerlink_avahi_bus_get_private_hook(type, error);
}

int peerlink_bus_override_linked(void) { return 1; }
