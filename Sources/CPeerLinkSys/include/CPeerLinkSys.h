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
#endif
