#ifndef CPEERLINKSYS_H
#define CPEERLINKSYS_H
/* Small wrappers for C APIs Swift cannot call directly (variadic functions). */
int peerlink_ioctl_ptr(int fd, unsigned long request, void *arg);
/* Makes stdout line-buffered so pipes see each line at once. */
void peerlink_line_buffer_stdout(void);
/* A rtnetlink socket that receives link and address change notifications (IPv4 and IPv6);
   -1 with errno on failure. */
int peerlink_netlink_route_open(void);
/* Names the calling thread for debuggers and top -H (prctl PR_SET_NAME: the first 15 bytes). */
int peerlink_name_this_thread(const char *name);
/* epoll for the I/O loop (IOLoop.swift), with plain integer types: Glibc's Swift module does
   not export sys/epoll.h, and epoll_event is packed on x86_64. */
#include <stdint.h>
#define PEERLINK_EPOLLIN 0x001u
#define PEERLINK_EPOLLOUT 0x004u
#define PEERLINK_EPOLLERR 0x008u
#define PEERLINK_EPOLLHUP 0x010u
#define PEERLINK_EPOLLRDHUP 0x2000u
#define PEERLINK_EPOLL_ADD 1
#define PEERLINK_EPOLL_DEL 2
#define PEERLINK_EPOLL_MOD 3
/* epoll_create1(EPOLL_CLOEXEC): the descriptor, or -1 with errno. */
int peerlink_epoll_create(void);
/* epoll_ctl with level-triggered `events` and `token` as the event's data: 0, or -1 with errno. */
int peerlink_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t token);
/* epoll_wait into two arrays of `max` (at most 256) entries: the count, or -1 with errno. */
int peerlink_epoll_wait(int epfd, uint32_t *events, uint64_t *tokens, int max, int timeout_ms);
/* mallopt(M_MMAP_THRESHOLD, mmap_bytes) then mallopt(M_TRIM_THRESHOLD, trim_bytes): 1 when both took. */
int peerlink_heap_thresholds(int trim_bytes, int mmap_bytes);
/* poll of one descriptor with a timeout in microseconds (negative: none) by ppoll, which
   Glibc's Swift module does not export: as poll returns, or -1 with errno. */
int peerlink_poll_one_us(int fd, short events, short *revents, int64_t timeout_us);
#endif
