#!/bin/bash
# Runs INSIDE the lab VM: starts bluetoothd the lab's way and waits until it is usable.
# guest-setup.sh starts the lab's bluetoothd with it, and tests that restart bluetoothd use
# it again, so that every bluetoothd of a boot looks the same to the tests.
#
#   start-bluetoothd.sh LOG_FILE
#
# It
# - runs bluetoothd as Debian's bluetooth.service does, with Debian's /etc/bluetooth/main.conf
#   (the host's, shared read-only; nothing of it is changed), log appended to LOG_FILE, pid in
#   /run/bt-lab/bluetoothd.pid;
# - waits (up to 30 s) until every controller in /sys/class/bluetooth is on D-Bus.
#
# It changes nothing after bluetoothd has started: bluetoothd turns 'connectable' off when it
# takes an adapter over, as it does on every Debian and Raspberry Pi OS machine, and PeerLink
# must reach peers in that state (it makes an adapter connectable through bluetoothd's D-Bus
# API while it advertises). Raw-socket tests that need a connectable adapter without PeerLink
# say so themselves.
#
# BT_LAB_BLUETOOTHD_ARGS adds options (e.g. -d for a debug log).
#
# Exit status 0 when ready; 1 with the reason on stderr.
set -uo pipefail
LOG=${1:?usage: start-bluetoothd.sh LOG_FILE}
RUN=/run/bt-lab
mkdir -p "$RUN"
die() { echo "start-bluetoothd: $*" >&2; exit 1; }

B=/usr/libexec/bluetooth/bluetoothd
[[ -x $B ]] || B=$(command -v bluetoothd) || die "bluetoothd not installed"
# shellcheck disable=SC2086  # BT_LAB_BLUETOOTHD_ARGS is a list of options
setsid -f "$B" -n ${BT_LAB_BLUETOOTHD_ARGS:-} >>"$LOG" 2>&1 </dev/null
for _ in $(seq 50); do
    pid=$(pidof bluetoothd) && break
    sleep 0.1
done
[[ -n ${pid:-} ]] || die "bluetoothd did not start (see $LOG)"
echo "$pid" > "$RUN/bluetoothd.pid"

mapfile -t controllers < <(ls /sys/class/bluetooth 2>/dev/null | grep -E '^hci[0-9]+$' | sort -V)
adapters_on_dbus() {
    local out c
    out=$(timeout 5 dbus-send --system --print-reply --dest=org.bluez / \
        org.freedesktop.DBus.ObjectManager.GetManagedObjects 2>/dev/null) || return 1
    for c in "${controllers[@]}"; do
        grep -q "object path \"/org/bluez/$c\"" <<<"$out" || return 1
    done
}
ok=0
for _ in $(seq 60); do    # up to ~30 s
    kill -0 "$pid" 2>/dev/null || die "bluetoothd exited (see $LOG)"
    if adapters_on_dbus; then ok=1; break; fi
    sleep 0.5
done
((ok)) || die "controllers ${controllers[*]} not all on D-Bus (org.bluez) after 30 s"

exit 0
