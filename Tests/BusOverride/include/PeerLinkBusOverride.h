#ifndef PEERLINK_BUS_OVERRIDE_H
#define PEERLINK_BUS_OVERRIDE_H
/* Linking this target makes libavahi-client's bus connections go through PeerLink's bus
 * selector (AvahiBus.swift), so tests can pass `busAddress` to publishers and browsers. */
int peerlink_bus_override_linked(void);
#endif
