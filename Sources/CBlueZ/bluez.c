#define _GNU_SOURCE 1
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>
#include <bluetooth/bluetooth.h>
#include <bluetooth/hci.h>
#include <bluetooth/hci_lib.h>
#include <bluetooth/l2cap.h>
#include <bluetooth/rfcomm.h>
#include "CBlueZ.h"

_Static_assert(sizeof(peerlink_bdaddr) == sizeof(bdaddr_t), "bdaddr_t layout");
_Static_assert(PEERLINK_BT_SECURITY_LOW == BT_SECURITY_LOW && PEERLINK_BT_SECURITY_MEDIUM == BT_SECURITY_MEDIUM &&
               PEERLINK_BT_SECURITY_HIGH == BT_SECURITY_HIGH, "BT_SECURITY levels");

static bdaddr_t to_ba(peerlink_bdaddr a) {
    bdaddr_t b;
    memcpy(&b, &a, sizeof b);
    return b;
}

static void from_ba(const bdaddr_t *b, peerlink_bdaddr *a) {
    memcpy(a, b, sizeof *a);
}

peerlink_bdaddr peerlink_bt_any(void) {
    peerlink_bdaddr a;
    memset(&a, 0, sizeof a);
    return a;
}

static int hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

int peerlink_bt_parse_address(const char *s, peerlink_bdaddr *out) {
    if (s == NULL || out == NULL || strlen(s) != 17) return -1;
    for (int i = 0; i < 6; i++) {
        int hi = hex(s[3 * i]), lo = hex(s[3 * i + 1]);
        if (hi < 0 || lo < 0) return -1;
        if (i < 5 && s[3 * i + 2] != ':') return -1;
        out->b[5 - i] = (unsigned char)(hi << 4 | lo);  /* bdaddr_t is little-endian */
    }
    return 0;
}

void peerlink_bt_format_address(const peerlink_bdaddr *a, char *out) {
    static const char digits[] = "0123456789ABCDEF";
    for (int i = 0; i < 6; i++) {
        unsigned char v = a->b[5 - i];
        out[3 * i] = digits[v >> 4];
        out[3 * i + 1] = digits[v & 15];
        out[3 * i + 2] = i < 5 ? ':' : '\0';
    }
}

int peerlink_bt_rfcomm_socket(void) {
    return socket(AF_BLUETOOTH, SOCK_STREAM | SOCK_CLOEXEC, BTPROTO_RFCOMM);
}

int peerlink_bt_l2cap_socket(void) {
    return socket(AF_BLUETOOTH, SOCK_SEQPACKET | SOCK_CLOEXEC, BTPROTO_L2CAP);
}

/* ---- RFCOMM ---- */

static struct sockaddr_rc rc_addr(peerlink_bdaddr a, unsigned char channel) {
    struct sockaddr_rc sa;
    memset(&sa, 0, sizeof sa);
    sa.rc_family = AF_BLUETOOTH;
    sa.rc_bdaddr = to_ba(a);
    sa.rc_channel = channel;
    return sa;
}

int peerlink_bt_rfcomm_bind(int fd, peerlink_bdaddr local, unsigned char channel) {
    struct sockaddr_rc sa = rc_addr(local, channel);
    return bind(fd, (struct sockaddr *)&sa, sizeof sa);
}

int peerlink_bt_rfcomm_connect(int fd, peerlink_bdaddr remote, unsigned char channel) {
    struct sockaddr_rc sa = rc_addr(remote, channel);
    return connect(fd, (struct sockaddr *)&sa, sizeof sa);
}

int peerlink_bt_rfcomm_accept(int fd, peerlink_bdaddr *remote) {
    struct sockaddr_rc sa;
    socklen_t len = sizeof sa;
    memset(&sa, 0, sizeof sa);
    int c = accept4(fd, (struct sockaddr *)&sa, &len, SOCK_CLOEXEC);
    if (c >= 0 && remote) from_ba(&sa.rc_bdaddr, remote);
    return c;
}

int peerlink_bt_rfcomm_local(int fd, unsigned char *channel) {
    struct sockaddr_rc sa;
    socklen_t len = sizeof sa;
    memset(&sa, 0, sizeof sa);
    if (getsockname(fd, (struct sockaddr *)&sa, &len) < 0) return -1;
    *channel = sa.rc_channel;
    return 0;
}

/* ---- L2CAP ---- */

static struct sockaddr_l2 l2_addr(peerlink_bdaddr a, int le, unsigned short psm) {
    struct sockaddr_l2 sa;
    memset(&sa, 0, sizeof sa);
    sa.l2_family = AF_BLUETOOTH;
    sa.l2_bdaddr = to_ba(a);
    sa.l2_bdaddr_type = le ? BDADDR_LE_PUBLIC : BDADDR_BREDR;
    sa.l2_psm = htobs(psm);
    return sa;
}

int peerlink_bt_l2cap_bind(int fd, peerlink_bdaddr local, int le, unsigned short psm) {
    struct sockaddr_l2 sa = l2_addr(local, le, psm);
    return bind(fd, (struct sockaddr *)&sa, sizeof sa);
}

int peerlink_bt_l2cap_connect(int fd, peerlink_bdaddr remote, int le, unsigned short psm) {
    struct sockaddr_l2 sa = l2_addr(remote, le, psm);
    return connect(fd, (struct sockaddr *)&sa, sizeof sa);
}

int peerlink_bt_l2cap_accept(int fd, peerlink_bdaddr *remote) {
    struct sockaddr_l2 sa;
    socklen_t len = sizeof sa;
    memset(&sa, 0, sizeof sa);
    int c = accept4(fd, (struct sockaddr *)&sa, &len, SOCK_CLOEXEC);
    if (c >= 0 && remote) from_ba(&sa.l2_bdaddr, remote);
    return c;
}

int peerlink_bt_l2cap_local(int fd, unsigned short *psm) {
    struct sockaddr_l2 sa;
    socklen_t len = sizeof sa;
    memset(&sa, 0, sizeof sa);
    if (getsockname(fd, (struct sockaddr *)&sa, &len) < 0) return -1;
    *psm = btohs(sa.l2_psm);
    return 0;
}

int peerlink_bt_l2cap_configure(int fd, int le, unsigned short mtu, int ertm) {
    if (le) {
        uint16_t m = mtu;
        return setsockopt(fd, SOL_BLUETOOTH, BT_RCVMTU, &m, sizeof m);
    }
    struct l2cap_options o;
    socklen_t len = sizeof o;
    memset(&o, 0, sizeof o);
    if (getsockopt(fd, SOL_L2CAP, L2CAP_OPTIONS, &o, &len) < 0) return -1;
    o.imtu = mtu;
    if (ertm) {
        o.mode = L2CAP_MODE_ERTM;
        if (o.max_tx < 10) o.max_tx = 10;  /* retransmissions before the channel is dropped */
    }
    return setsockopt(fd, SOL_L2CAP, L2CAP_OPTIONS, &o, sizeof o);
}

int peerlink_bt_l2cap_mode(int fd) {
    struct l2cap_options o;
    socklen_t len = sizeof o;
    memset(&o, 0, sizeof o);
    if (getsockopt(fd, SOL_L2CAP, L2CAP_OPTIONS, &o, &len) < 0) return -1;
    return o.mode;
}

int peerlink_bt_grow_receive_buffer(int fd, int bytes) {
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &bytes, sizeof bytes) == 0) return 0;
    return setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
}

int peerlink_bt_l2cap_get_mtu(int fd, unsigned short *imtu, unsigned short *omtu) {
    uint16_t i = 0, o = 0;
    socklen_t len = sizeof i;
    if (getsockopt(fd, SOL_BLUETOOTH, BT_RCVMTU, &i, &len) == 0) {
        len = sizeof o;
        if (getsockopt(fd, SOL_BLUETOOTH, BT_SNDMTU, &o, &len) == 0) {
            *imtu = i;
            *omtu = o;
            return 0;
        }
    }
    struct l2cap_options opts;
    len = sizeof opts;
    memset(&opts, 0, sizeof opts);
    if (getsockopt(fd, SOL_L2CAP, L2CAP_OPTIONS, &opts, &len) < 0) return -1;
    *imtu = opts.imtu;
    *omtu = opts.omtu;
    return 0;
}

int peerlink_bt_l2cap_set_le_flowctl(int fd) {
    uint8_t mode = BT_MODE_LE_FLOWCTL;
    return setsockopt(fd, SOL_BLUETOOTH, BT_MODE, &mode, sizeof mode);
}

int peerlink_bt_set_security(int fd, int level) {
    struct bt_security s;
    memset(&s, 0, sizeof s);
    s.level = (uint8_t)level;
    return setsockopt(fd, SOL_BLUETOOTH, BT_SECURITY, &s, sizeof s);
}

/* ---- adapters ---- */

int peerlink_bt_adapter_state(const peerlink_bdaddr *address, int *index) {
    int s = socket(AF_BLUETOOTH, SOCK_RAW | SOCK_CLOEXEC, BTPROTO_HCI);
    if (s < 0) return -1;
    struct hci_dev_list_req *list = calloc(1, sizeof(*list) + HCI_MAX_DEV * sizeof(struct hci_dev_req));
    if (list == NULL) { close(s); errno = ENOMEM; return -1; }
    list->dev_num = HCI_MAX_DEV;
    if (ioctl(s, HCIGETDEVLIST, (void *)list) < 0) {
        int e = errno;
        free(list);
        close(s);
        errno = e;
        return -1;
    }
    bdaddr_t want;
    if (address) want = to_ba(*address);
    int result = -2;
    for (int i = 0; i < list->dev_num; i++) {
        struct hci_dev_info di;
        memset(&di, 0, sizeof di);
        di.dev_id = list->dev_req[i].dev_id;
        if (ioctl(s, HCIGETDEVINFO, (void *)&di) < 0) continue;
        int up = hci_test_bit(HCI_UP, &di.flags) ? 1 : 0;
        if (address == NULL) {
            if (index) *index = di.dev_id;
            result = up;
            if (up) break;
        } else if (bacmp(&di.bdaddr, &want) == 0) {
            if (index) *index = di.dev_id;
            result = up;
            break;
        }
    }
    free(list);
    close(s);
    return result;
}

int peerlink_bt_mgmt_socket(void) {
    int fd = socket(AF_BLUETOOTH, SOCK_RAW | SOCK_CLOEXEC, BTPROTO_HCI);
    if (fd < 0) return -1;
    struct sockaddr_hci addr;
    memset(&addr, 0, sizeof(addr));
    addr.hci_family = AF_BLUETOOTH;
    addr.hci_dev = HCI_DEV_NONE;
    addr.hci_channel = HCI_CHANNEL_CONTROL;
    if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}
