#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <time.h>
#include <malloc.h>
#include <stdio.h>
#include <sys/epoll.h>
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

_Static_assert(PEERLINK_EPOLLIN == EPOLLIN && PEERLINK_EPOLLOUT == EPOLLOUT && PEERLINK_EPOLLERR == EPOLLERR
               && PEERLINK_EPOLLHUP == EPOLLHUP && PEERLINK_EPOLLRDHUP == EPOLLRDHUP, "epoll event bits");
_Static_assert(PEERLINK_EPOLL_ADD == EPOLL_CTL_ADD && PEERLINK_EPOLL_DEL == EPOLL_CTL_DEL && PEERLINK_EPOLL_MOD == EPOLL_CTL_MOD,
               "epoll_ctl operations");

int peerlink_epoll_create(void) {
    return epoll_create1(EPOLL_CLOEXEC);
}

int peerlink_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t token) {
    struct epoll_event ev;
    memset(&ev, 0, sizeof ev);
    ev.events = events;
    ev.data.u64 = token;
    return epoll_ctl(epfd, op, fd, &ev);
}

int peerlink_epoll_wait(int epfd, uint32_t *events, uint64_t *tokens, int max, int timeout_ms) {
    struct epoll_event ev[256];
    if (max > 256) max = 256;
    int n = epoll_wait(epfd, ev, max, timeout_ms);
    for (int i = 0; i < n; i++) {
        events[i] = ev[i].events;
        tokens[i] = ev[i].data.u64;
    }
    return n;
}

int peerlink_heap_thresholds(int trim_bytes, int mmap_bytes) {
    return mallopt(M_MMAP_THRESHOLD, mmap_bytes) == 1 && mallopt(M_TRIM_THRESHOLD, trim_bytes) == 1;
}

int peerlink_poll_one_us(int fd, short events, short *revents, int64_t timeout_us) {
    struct pollfd p = { .fd = fd, .events = events, .revents = 0 };
    struct timespec limit = { .tv_sec = timeout_us / 1000000, .tv_nsec = (timeout_us % 1000000) * 1000 };
    int n = ppoll(&p, 1, timeout_us < 0 ? NULL : &limit, NULL);
    *revents = p.revents;
    return n;
}
