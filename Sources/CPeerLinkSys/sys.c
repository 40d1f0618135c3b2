#include <stdio.h>
#include <sys/ioctl.h>
#include "CPeerLinkSys.h"

int peerlink_ioctl_ptr(int fd, unsigned long request, void *arg) {
    return ioctl(fd, request, arg);
}

void peerlink_line_buffer_stdout(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
}
