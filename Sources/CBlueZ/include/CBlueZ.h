/* CBlueZ: the BlueZ kernel socket API (AF_BLUETOOTH RFCOMM and L2CAP sockets, as declared
 * by libbluetooth-dev's <bluetooth/...h>) behind plain functions Swift can call.
 *
 * This header deliberately includes no system header: BlueZ's headers pull in
 * <sys/socket.h>, and a Clang module that re-exports it hides Glibc's SOCK_* constants from
 * Swift files that do not import this module. The implementation (bluez.c) includes them.
 * Only the headers are used; nothing links against libbluetooth.so.
 * Every function returns -1 with errno set on failure unless documented otherwise. */
#ifndef PEERLINK_CBLUEZ_H
#define PEERLINK_CBLUEZ_H

/* A device address in BlueZ's byte order (bdaddr_t: least significant byte first). */
typedef struct peerlink_bdaddr {
    unsigned char b[6];
} peerlink_bdaddr;

/* BT_SECURITY levels (bluetooth.h). */
enum {
    PEERLINK_BT_SECURITY_LOW = 1,
    PEERLINK_BT_SECURITY_MEDIUM = 2,
    PEERLINK_BT_SECURITY_HIGH = 3,
};

/* The wildcard address BDADDR_ANY (any local controller). */
peerlink_bdaddr peerlink_bt_any(void);

/* Parses exactly "XX:XX:XX:XX:XX:XX" (hex, either case). Returns 0, or -1 for anything else
 * (stricter than str2ba, which accepts malformed strings). */
int peerlink_bt_parse_address(const char *text, peerlink_bdaddr *out);

/* Writes "XX:XX:XX:XX:XX:XX" plus NUL into out (18 bytes), like ba2str. */
void peerlink_bt_format_address(const peerlink_bdaddr *address, char *out);

/* socket(AF_BLUETOOTH, SOCK_STREAM | SOCK_CLOEXEC, BTPROTO_RFCOMM). */
int peerlink_bt_rfcomm_socket(void);
/* socket(AF_BLUETOOTH, SOCK_SEQPACKET | SOCK_CLOEXEC, BTPROTO_L2CAP). */
int peerlink_bt_l2cap_socket(void);

/* sockaddr_rc wrappers. Channel 0 at bind: the kernel picks the first free channel 1…30 at
 * listen(); peerlink_bt_rfcomm_local then reports it. */
int peerlink_bt_rfcomm_bind(int fd, peerlink_bdaddr local, unsigned char channel);
int peerlink_bt_rfcomm_connect(int fd, peerlink_bdaddr remote, unsigned char channel);
int peerlink_bt_rfcomm_accept(int fd, peerlink_bdaddr *remote);
int peerlink_bt_rfcomm_local(int fd, unsigned char *channel);

/* sockaddr_l2 wrappers; le != 0 uses the LE public address type, else BR/EDR. PSM 0 at bind:
 * the kernel picks a free dynamic PSM (BR/EDR from 0x1001 in steps of 2, LE from 0x0080;
 * L2CAPTransport binds odd LE PSMs itself). */
int peerlink_bt_l2cap_bind(int fd, peerlink_bdaddr local, int le, unsigned short psm);
int peerlink_bt_l2cap_connect(int fd, peerlink_bdaddr remote, int le, unsigned short psm);
int peerlink_bt_l2cap_accept(int fd, peerlink_bdaddr *remote);
int peerlink_bt_l2cap_local(int fd, unsigned short *psm);

/* Before connect/listen: asks for an incoming MTU — L2CAP_OPTIONS.imtu (BR/EDR) or BT_RCVMTU
 * (LE) — and for BR/EDR with ertm != 0 requires Enhanced Retransmission Mode (L2CAP_OPTIONS.mode;
 * reliable and flow-controlled, unlike basic mode, which drops SDUs when the receive buffer
 * is full). */
int peerlink_bt_l2cap_configure(int fd, int le, unsigned short mtu, int ertm);
/* The channel's L2CAP mode (L2CAP_OPTIONS.mode: 0 basic, 3 ERTM, 4 streaming, 0x80 LE flowctl…). */
int peerlink_bt_l2cap_mode(int fd);
/* SO_RCVBUFFORCE (privileged), else SO_RCVBUF (capped by net.core.rmem_max). */
int peerlink_bt_grow_receive_buffer(int fd, int bytes);
/* The negotiated MTUs of a connected L2CAP socket (BT_RCVMTU/BT_SNDMTU, else L2CAP_OPTIONS). */
int peerlink_bt_l2cap_get_mtu(int fd, unsigned short *imtu, unsigned short *omtu);
/* BT_MODE = BT_MODE_LE_FLOWCTL (after bind; needs bluetooth.enable_ecred=1 on 6.1 kernels). */
int peerlink_bt_l2cap_set_le_flowctl(int fd);

/* BT_SECURITY level (PEERLINK_BT_SECURITY_*). */
int peerlink_bt_set_security(int fd, int level);

/* State of a local controller: 1 up (powered), 0 present but down, -2 no such controller
 * (address NULL: no controller at all), -1 error with errno (EAFNOSUPPORT: the kernel has no
 * Bluetooth). address NULL means any controller: 1 when at least one is up. *index receives
 * the controller's hciN number when found (index may be NULL). */
int peerlink_bt_adapter_state(const peerlink_bdaddr *address, int *index);

/* A Bluetooth management socket (BTPROTO_HCI bound to HCI_CHANNEL_CONTROL, any controller):
 * the kernel's mgmt API, which bluetoothd itself uses. Unprivileged callers may send its
 * read-only commands (Read Controller Information among them). */
int peerlink_bt_mgmt_socket(void);

#endif
