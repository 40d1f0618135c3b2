#!/bin/bash
# Runs INSIDE the lab VM (as root): brings up N linked virtual Bluetooth controllers
# (btvirt), configures them with btmgmt, starts the system D-Bus and bluetoothd, and waits
# until every adapter is on D-Bus. Returns 0 when the lab is ready.
#
#   guest-setup.sh RESULTS_DIR [N_CONTROLLERS [BTVIRT]]
#
# BTVIRT is the controller emulator (default: btvirt from PATH, Debian's packaged one;
# scripts/bt-lab.sh passes the lab's patched build, see README.md "The emulator's pairing
# state").
#
# Daemons keep running after this script returns; their pids are in /run/bt-lab/*.pid.
# Logs go to RESULTS_DIR (btvirt.log, bluetoothd.log, setup.log).
# Every step runs under a timeout; on failure the failing step is printed as
#   [bt-lab] FAILED step <name>: <reason>
# and recorded in RESULTS_DIR/failed-step, and the script exits 1.
set -uo pipefail

RESULTS=${1:?usage: guest-setup.sh RESULTS_DIR [N_CONTROLLERS]}
N=${2:-2}
BTVIRT=${3:-btvirt}
RUN=/run/bt-lab
mkdir -p "$RUN" "$RESULTS"
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
SETUP_LOG="$RESULTS/setup.log"
T0=${EPOCHREALTIME/./}

elapsed() { local now=${EPOCHREALTIME/./}; printf '%d.%02d' $(((now - T0) / 1000000)) $(((now - T0) / 10000 % 100)); }
say() { printf '[bt-lab] %6ss %s\n' "$(elapsed)" "$*" | tee -a "$SETUP_LOG" >&2; }
fail() {
    local name=$1; shift
    say "FAILED step $name: $*"
    printf '%s: %s\n' "$name" "$*" > "$RESULTS/failed-step"
    exit 1
}

# btmgmt quits before printing anything when its stdin is at EOF (e.g. /dev/null), and may
# hang forever on a dead controller. Give every call a stdin that never delivers data nor EOF
# (a pipe held open by a sleeper) and a timeout.
exec 9< <(exec sleep 100000)
HOLDER=$!
trap 'kill $HOLDER 2>/dev/null' EXIT
mgmt() { timeout -k 2 "${MGMT_TIMEOUT:-10}" btmgmt "$@" <&9; }

# ---- kernel modules -------------------------------------------------------------------
say "step modules"
timeout 30 modprobe bluetooth enable_ecred=1 || fail modules "modprobe bluetooth enable_ecred=1"
# btvirt's controllers use kernel crypto (AES-CMAC for SMP, ECDH); without these preloaded
# an early controller sometimes never finishes initialising.
# One modprobe for all: each process start costs ~1 s under TCG.
MODULES=(af_alg algif_hash algif_skcipher cmac ecdh_generic hci_vhci rfcomm)
timeout 60 modprobe -a "${MODULES[@]}" || fail modules "modprobe -a ${MODULES[*]}"
ecred=$(cat /sys/module/bluetooth/parameters/enable_ecred 2>/dev/null || echo '?')
[[ $ecred == Y ]] || say "warning: bluetooth enable_ecred=$ecred (LE enhanced credit mode unavailable)"
[[ -c /dev/vhci ]] || fail modules "/dev/vhci missing after modprobe hci_vhci"

# ---- virtual controllers --------------------------------------------------------------
controllers_up() {   # all of hci0..hci(N-1) listed by btmgmt info
    local out i
    out=$(MGMT_TIMEOUT=5 mgmt info 2>&1) || return 1
    for ((i = 0; i < N; i++)); do
        grep -q "^hci$i:" <<<"$out" || return 1
    done
}

start_btvirt() {
    say "step btvirt (attempt $1): $BTVIRT -l$N"
    setsid "$BTVIRT" -l"$N" >>"$RESULTS/btvirt.log" 2>&1 </dev/null &
    echo $! > "$RUN/btvirt.pid"
}

stop_btvirt() {
    local pid; pid=$(cat "$RUN/btvirt.pid" 2>/dev/null) || return 0
    kill "$pid" 2>/dev/null
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null
    # the kernel removes the vhci controllers when btvirt closes /dev/vhci
    for _ in $(seq 50); do [[ -z $(ls /sys/class/bluetooth 2>/dev/null) ]] && break; sleep 0.1; done
}

# Normally both controllers are listed ~1.5 s after btvirt starts. The known flake: a
# controller's HCI Reset times out in the kernel ("hciN: Opcode 0x0c03 failed: -110" after
# 10 s) and it never initialises; restarting btvirt fixes it.
command -v "$BTVIRT" >/dev/null || fail btvirt "no controller emulator '$BTVIRT' (scripts/setup-bt-lab.sh builds the lab's)"
ok=0
for attempt in 1 2 3; do
    dmesg_mark=$(dmesg | wc -l)
    start_btvirt "$attempt"
    deadline=$((SECONDS + 20))
    while ((SECONDS < deadline)); do
        if controllers_up; then ok=1; break; fi
        if dmesg | tail -n +"$((dmesg_mark + 1))" | grep -q 'hci[0-9]*: Opcode 0x0c03 failed'; then
            say "btvirt attempt $attempt: $(dmesg | tail -n +"$((dmesg_mark + 1))" | grep -m1 'Opcode 0x0c03 failed' | sed 's/^\[[^]]*\] //')"
            break
        fi
        sleep 0.5
    done
    ((ok)) && break
    say "btvirt attempt $attempt: not all $N controllers initialised; restarting btvirt"
    { echo "--- btmgmt info after attempt $attempt"; MGMT_TIMEOUT=5 mgmt info; } >>"$SETUP_LOG" 2>&1
    stop_btvirt
done
((ok)) || fail btvirt "controllers hci0..hci$((N - 1)) never all appeared in 'btmgmt info' (3 attempts)"

# ---- controller settings --------------------------------------------------------------
for ((i = 0; i < N; i++)); do
    say "step configure hci$i"
    for setting in le bredr ssp power; do
        out=$(mgmt --index "$i" "$setting" on 2>&1) ||
            fail "configure-hci$i" "btmgmt --index $i $setting on: rc=$? ${out//$'\n'/ }"
        printf 'hci%d %s on: %s\n' "$i" "$setting" "${out//$'\n'/ }" >>"$SETUP_LOG"
    done
done
# "current settings:" line of hciI from one 'btmgmt info' output
settings_of() { awk -v h="hci$1:" '$1 == h {f = 1; next} /^hci[0-9]+:/ {f = 0} f && /current settings:/ {sub(/.*current settings: */, ""); print}' <<<"$2"; }
addr_of() { awk -v h="hci$1:" '$1 == h {f = 1; next} /^hci[0-9]+:/ {f = 0} f && $1 == "addr" {print $2}' <<<"$2"; }

# ---- D-Bus and bluetoothd -------------------------------------------------------------
say "step dbus"
mkdir -p /run/dbus
rm -f /run/dbus/pid /run/dbus/system_bus_socket
timeout 20 dbus-daemon --system --fork --print-pid=3 3>"$RUN/dbus.pid" ||
    fail dbus "dbus-daemon --system --fork failed"
# Ready when it answers, not when its socket file exists (it may not accept yet).
bus_answers() { timeout 2 dbus-send --system --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus.ListNames >/dev/null 2>&1; }
for _ in $(seq 50); do bus_answers && break; sleep 0.1; done
bus_answers || fail dbus "the system bus gave no answer to ListNames within 5 s"

say "step bluetoothd"
# As Debian starts it (its /etc/bluetooth/main.conf); waits until every adapter is on D-Bus.
# bluetoothd's own changes stay (it turns connectable off): what users have.
out=$(bash "$(dirname "${BASH_SOURCE[0]}")/start-bluetoothd.sh" "$RESULTS/bluetoothd.log" 2>&1) ||
    fail bluetoothd "${out:-start-bluetoothd.sh failed}"

info=$(mgmt info 2>&1) || fail verify "btmgmt info failed: $info"
{ echo "--- btmgmt info when ready"; echo "$info"; } >>"$SETUP_LOG"
for ((i = 0; i < N; i++)); do
    cur=" $(settings_of "$i" "$info") "
    for want in powered ssp br/edr le; do
        [[ $cur == *" $want "* ]] || fail verify "hci$i lacks '$want' (current settings:$cur)"
    done
    addr=$(addr_of "$i" "$info")
    echo "$addr" > "$RUN/hci$i.addr"
    say "  hci$i $addr:$cur"
done
say "ready: $N controllers, bluetoothd on D-Bus"
exit 0
