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
PACKAGES=(pkg-config libssl-dev libavahi-client-dev libdbus-1-dev libbluetooth-dev avahi-daemon avahi-utils dbus
          iproute2 nftables iperf3 ca-certificates)

log() { printf '[setup] %s\n' "$*" >&2; }
[ "$(id -u)" = 0 ] || { log "run as root: the labs create network namespaces and install packages"; exit 1; }

missing=()
for p in "${PACKAGES[@]}"; do
    [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)" = "install ok installed" ] || missing+=("$p")
done
if ((${#missing[@]})); then
    log "installing: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q --no-install-recommends "${missing[@]}"
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
