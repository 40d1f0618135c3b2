#!/usr/bin/env bash
# Installs what PeerLink needs to build and to run its IP tests on Debian 12: C libraries for
# the discovery and Bluetooth edges, and the daemons and tools of the namespace lab.
# Idempotent; takes about a second when everything is present. Starts no daemon (the labs
# start their own, inside namespaces or the VM).
#
#   scripts/setup.sh            # build + IP lab packages
#   scripts/setup.sh --bt-lab   # also the Bluetooth VM lab (qemu, kernel, bluez, virtme-ng)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# openssh-server and -client are for peerlink-bench's file comparison only: the bench starts
# its own sshd on 127.0.0.1 with throwaway keys; the machine's sshd is never started or enabled
# by this script (below). gdb prints the threads' stacks of a test or lab process that hangs.
PACKAGES=(pkg-config libssl-dev libsqlite3-dev libavahi-client-dev libdbus-1-dev libbluetooth-dev avahi-daemon avahi-utils dbus
          iproute2 nftables iperf3 ca-certificates openssh-server openssh-client gdb)

log() { printf '[setup] %s\n' "$*" >&2; }
[ "$(id -u)" = 0 ] || { log "run as root: the labs create network namespaces and install packages"; exit 1; }

missing=()
for p in "${PACKAGES[@]}"; do
    [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)" = "install ok installed" ] || missing+=("$p")
done
if ((${#missing[@]})); then
    log "installing: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    # Packages must not start their services here (openssh-server's sshd above all): Debian's
    # policy-rc.d hook, only for this install and only if the machine has none of its own.
    policy=
    if [ ! -e /usr/sbin/policy-rc.d ]; then
        printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d && policy=added
    fi
    apt-get update -q
    apt-get install -y -q --no-install-recommends "${missing[@]}"
    [ -z "$policy" ] || rm -f /usr/sbin/policy-rc.d
    if [[ " ${missing[*]} " == *" openssh-server "* ]]; then
        # Installed by this script, for the benchmark: not started at boot either.
        systemctl disable --quiet ssh.service ssh.socket 2>/dev/null || true
    fi
else
    log "packages present"
fi

if ! command -v swift >/dev/null; then
    for d in /opt/swift/usr/bin /usr/share/swift/usr/bin; do [ -x "$d/swift" ] && export PATH="$d:$PATH"; done
fi
command -v swift >/dev/null || { log "no Swift toolchain on PATH (need Swift 6; this machine's is at /opt/swift)"; exit 1; }

if [ "${1:-}" = "--bt-lab" ]; then
    "$here/setup-bt-lab.sh"
fi
