#include <errno.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <string.h>
#include "CPeerLinkSys.h"

int peerlink_ioctl_ptr(int fd, unsigned long request, void *arg) {
    return ioctl(fd, request, arg);
}

void peerlink_line_buffer_stdout(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
}

int peerlink_netlink_route_open(void) {
    int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
    if (fd < 0) return -1;
    struct sockaddr_nl addr;
    memset(&addr, 0, sizeof addr);
    addr.nl_family = AF_NETLINK;
    addr.nl_groups = RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR;
    if (bind(fd, (struct sockaddr *)&addr, sizeof addr) != 0) { int e = errno; close(fd); errno = e; return -1; }
    return fd;
}

int peerlink_name_this_thread(const char *name) {
    return prctl(PR_SET_NAME, (unsigned long)name, 0, 0, 0);
}
