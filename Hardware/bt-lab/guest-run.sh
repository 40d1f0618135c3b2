#!/bin/bash
# Runs INSIDE the lab VM as the VM's only job (scripts/bt-lab.sh starts it with vng --exec):
# sets the lab up (guest-setup.sh), runs the command the host wrote to
# RESULTS_DIR/.lab/command.sh under a timeout while btmon records HCI traffic, collects
# logs, and writes the command's exit status to RESULTS_DIR/exit-code.
#
#   guest-run.sh RESULTS_DIR N_CONTROLLERS TIMEOUT_S KEEP_TRACE(0|1) TRACE(0|1) [N_RADIOS [BTVIRT]]
#
# Lines starting with '@@bt-lab ' on stdout are stage markers that the host timestamps.
set -uo pipefail

RESULTS=$1 N=$2 TIMEOUT=$3 KEEP_TRACE=${4:-0} TRACE=${5:-1} RADIOS=${6:-0} BTVIRT=${7:-btvirt}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
RUN=/run/bt-lab
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
mkdir -p "$RUN"

marker() { printf '@@bt-lab %s\n' "$*"; }

collect_logs() {
    marker stage collect
    dmesg > "$RESULTS/dmesg.log" 2>&1
    ((RADIOS > 0)) && bash "$HERE/guest-wifi.sh" stop
    # stop bluetoothd so that its log is complete, then btvirt
    for d in bluetoothd btvirt; do
        pid=$(cat "$RUN/$d.pid" 2>/dev/null) || continue
        kill "$pid" 2>/dev/null
        for _ in $(seq 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    done
    sync
}

marker stage guest-start
echo "[bt-lab] guest up: $(uname -r), $(nproc) CPUs, $(awk '/MemTotal/ {print int($2/1024) " MiB"}' /proc/meminfo)"

marker stage setup
if ! bash "$HERE/guest-setup.sh" "$RESULTS" "$N" "$BTVIRT"; then
    collect_logs
    marker stage setup-failed
    exit 125
fi

# Addresses for the command: PEERLINK_LAB_HCI<i>=<bdaddr>
for ((i = 0; i < N; i++)); do
    export "PEERLINK_LAB_HCI$i=$(cat "$RUN/hci$i.addr")"
done
export PEERLINK_LAB=1 PEERLINK_LAB_CONTROLLERS=$N PEERLINK_LAB_RESULTS=$RESULTS

# Virtual Wi-Fi radios and wpa_supplicant (guest-wifi.sh), when asked for (--radios N)
if ((RADIOS > 0)); then
    marker stage wifi
    if ! bash "$HERE/guest-wifi.sh" start "$RESULTS" "$RADIOS"; then
        collect_logs
        marker stage setup-failed
        exit 125
    fi
    set -a; . "$RESULTS/.lab/wifi.env"; set +a
fi

marker stage btmon
TRACE_FILE="$RESULTS/btmon.btsnoop"
BTMON=""
if ((TRACE)); then
    # btmon also decodes every packet to stdout; nobody reads that (btmon -r decodes the
    # file). BlueZ 5.66's btmon occasionally segfaults while decoding: a supervisor restarts
    # it into btmon-2.btsnoop, btmon-3.btsnoop, ... so that the rest is still recorded.
    (
        trap 'kill -INT $child 2>/dev/null; wait $child; exit 0' TERM
        n=1 file=$TRACE_FILE
        while :; do
            btmon -w "$file" >/dev/null 2>>"$RESULTS/btmon.log" </dev/null &
            child=$!
            wait $child
            rc=$?
            echo "btmon exited with status $rc; restarting it into btmon-$((n + 1)).btsnoop" >>"$RESULTS/btmon.log"
            echo "[bt-lab] warning: btmon died (status $rc), trace continues in btmon-$((n + 1)).btsnoop"
            n=$((n + 1)) file="$RESULTS/btmon-$n.btsnoop"
            ((n > 20)) && exit 1
        done
    ) &
    BTMON=$!
    for _ in $(seq 50); do [[ -s $TRACE_FILE ]] && break; sleep 0.1; done   # header first
    [[ -s $TRACE_FILE ]] || echo "[bt-lab] warning: btmon has not started writing $TRACE_FILE"
fi

marker stage command
timeout -k 10 "$TIMEOUT" bash "$RESULTS/.lab/command.sh"
rc=$?
marker stage command-done rc=$rc
((rc == 124)) && echo "[bt-lab] FAILED step command: timed out after ${TIMEOUT}s"

if [[ -n $BTMON ]]; then
    kill -TERM "$BTMON" 2>/dev/null          # the supervisor stops btmon with SIGINT
    for _ in $(seq 50); do kill -0 "$BTMON" 2>/dev/null || break; sleep 0.1; done
    pkill -9 -P "$BTMON" 2>/dev/null; kill -9 "$BTMON" 2>/dev/null
    if ((rc == 0 && KEEP_TRACE == 0)); then rm -f "$TRACE_FILE" "$RESULTS"/btmon-*.btsnoop; fi
fi

collect_logs
echo "$rc" > "$RESULTS/exit-code"
sync
marker stage done
exit "$rc"
