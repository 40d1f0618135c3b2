#!/bin/bash
# Throughput baseline between the lab's virtual controllers; runs INSIDE the lab VM:
#
#   scripts/bt-lab.sh baseline [-- --runs N --bytes B]
#
# BlueZ's own test tools move a fixed amount of data from hci0 to hci1:
#   rctest   RFCOMM stream, 4 KiB writes (emulator quirk: keep RFCOMM writes <= 8 KiB)
#   l2test   L2CAP basic mode over BR/EDR, SOCK_SEQPACKET, 672-byte packets (default MTU)
#   l2cap_bench.py  L2CAP ERTM over BR/EDR, 672-byte SDUs and 4144-byte ones (the size of PeerLink's 4 KiB fragments) (l2test 5.66 cannot
#            select ERTM, see l2cap_bench.py); PeerLink's L2CAP links run in ERTM
#   l2test   L2CAP LE credit-based channel (hci1 advertising), 672-byte SDUs
# and prints MB/s (10^6 bytes per second) for each, measured by the receiver. These figures
# are the denominator for PeerLink's own benchmarks run in the same lab: compare ratios
# measured in one run, never absolute figures (TCG emulation sets the pace).
#
# Each tool runs --runs times (default 1) with --bytes each (default 4 MiB); the median is
# printed with the min-max range. Every run also goes to $PEERLINK_LAB_RESULTS/baseline.txt
# as "<name> <MB/s> <bytes> <seconds>", and the medians as "<name>-median <MB/s>".
set -uo pipefail

BYTES=4194304 RUNS=1
while (($#)); do
    case $1 in
        --runs) RUNS=$2; shift 2 ;;
        --bytes) BYTES=$2; shift 2 ;;
        *) echo "usage: baseline.sh [--runs N] [--bytes B]" >&2; exit 2 ;;
    esac
done
HCI0=${PEERLINK_LAB_HCI0:?run inside the lab: scripts/bt-lab.sh baseline}
HCI1=${PEERLINK_LAB_HCI1:?}
# LE runs on its own pair of controllers when there is one (bt-lab.sh baseline boots four):
# LE and BR/EDR links between the SAME two emulated controllers interfere (see drop_le_link).
LE_TX=${PEERLINK_LAB_HCI2:-$HCI0} LE_RX=${PEERLINK_LAB_HCI3:-$HCI1}
# ERTM likewise on hci6 -> hci7 when booted with eight: a third BR/EDR connection between the
# same two controllers in one boot is often refused (EACCES, re-pairing without an agent).
ERTM_TX=${PEERLINK_LAB_HCI6:-$HCI0} ERTM_RX=${PEERLINK_LAB_HCI7:-$HCI1}
LE_RX_INDEX=1 LE_TX_INDEX=0
[[ -n ${PEERLINK_LAB_HCI3:-} ]] && LE_RX_INDEX=3 LE_TX_INDEX=2
LAB_DIR=$(cd "$(dirname "$0")" && pwd)
OUT=${PEERLINK_LAB_RESULTS:-/tmp}/baseline.txt
WORK=$(mktemp -d)
BLOCK=262144            # receiver reports once per 256 KiB: enough to time with 10 ms resolution
: >"$OUT"
failures=0

# mgmt helper (btmgmt prints nothing and may not act when stdin is at EOF)
mgmt() { timeout 10 btmgmt "$@" < <(sleep 15); }

# Emulator quirk: while an LE link between hci0 and hci1 is up (bluetoothd keeps it for
# GATT after l2test is gone), a new BR/EDR link between the same two controllers gets its
# Auth Complete on the LE link's handle and stalls (EACCES / ECONNRESET after ~30 s).
# So drop the LE link before the next BR/EDR test.
drop_le_link() {
    mgmt --index "$LE_TX_INDEX" disconnect -t 1 "$LE_RX" >/dev/null
    for _ in $(seq 50); do
        hcitool -i "hci$LE_TX_INDEX" con 2>/dev/null | grep -q ' LE ' || return 0
        sleep 0.1
    done
    echo "warning: LE link $LE_TX -> $LE_RX still up"
}

# run_one NAME TIMEOUT "RECEIVER ARGS" "SENDER ARGS"
run_one() {
    local name=$1 limit=$2 rx_args=$3 tx_args=$4 rx_pid tx_rc
    local rx_log="$WORK/$name.rx" tx_log="$WORK/$name.tx"
    # shellcheck disable=SC2086
    setsid $rx_args >"$rx_log" 2>&1 </dev/null &
    rx_pid=$!
    for _ in $(seq 150); do grep -q 'Waiting for connection' "$rx_log" && break; sleep 0.1; done
    # shellcheck disable=SC2086
    timeout -k 5 "$limit" $tx_args >"$tx_log" 2>&1 </dev/null
    tx_rc=$?
    # the receiver reports each full block; give it a moment for the last one
    sleep 1
    kill -- -"$rx_pid" 2>/dev/null; wait "$rx_pid" 2>/dev/null
    local bytes secs mismatches
    read -r bytes secs < <(awk '/ bytes in .* sec/ {
            for (i = 1; i < NF; i++) { if ($(i + 1) == "bytes") b += $i; if ($(i + 1) == "sec,") s += $i }
        } END {printf "%d %.2f\n", b, s}' "$rx_log")
    mismatches=$(grep -c 'missmatch' "$rx_log")
    if ((tx_rc != 0)) || ((bytes < BYTES / 2)) || [[ $secs == 0.00 ]] || ((mismatches)); then
        printf 'FAIL %-28s sender rc=%d, %d bytes timed at the receiver, %d mismatches\n' \
            "$name" "$tx_rc" "$bytes" "$mismatches"
        sed 's/^/    rx: /' "$rx_log" | tail -n 5
        sed 's/^/    tx: /' "$tx_log" | tail -n 5
        failures=$((failures + 1))
        return
    fi
    local mbps
    mbps=$(awk -v b="$bytes" -v s="$secs" 'BEGIN {printf "%.3f", b / s / 1e6}')
    printf '  %-28s %8s MB/s  (%d bytes in %s s)\n' "$name" "$mbps" "$bytes" "$secs"
    echo "$name $mbps $bytes $secs" >>"$OUT"
}

# summary NAME: median and range of the runs recorded for NAME
summary() {
    local name=$1 values
    values=$(awk -v n="$name" '$1 == n {print $2}' "$OUT" | sort -g | tr '\n' ' ')
    [[ -n $values ]] || { printf '%-30s   FAILED (no successful run)\n' "$name"; return; }
    awk -v n="$name" -v v="$values" 'BEGIN {
        k = split(v, a, " ")
        med = (k % 2) ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
        printf "%-30s %8.3f MB/s  median of %d (min %.3f, max %.3f)\n", n, med, k, a[1], a[k]
    }'
    awk -v n="$name" -v v="$values" 'BEGIN {
        k = split(v, a, " "); med = (k % 2) ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
        printf "%s-median %.3f\n", n, med }' >>"$OUT"
}

echo "baseline: BR/EDR $HCI0 -> $HCI1, ERTM $ERTM_TX -> $ERTM_RX, LE $LE_TX -> $LE_RX, $BYTES bytes per tool and run, $RUNS runs"

for ((run = 1; run <= RUNS; run++)); do
    echo "run $run/$RUNS"
    frames=$((BYTES / 4096))
    run_one rctest-rfcomm 120 \
        "rctest -r -i $HCI1 -P 10 -b $BLOCK" \
        "rctest -s -i $HCI0 -P 10 -b 4096 -N $frames $HCI1"

    frames=$((BYTES / 672 + 1))
    run_one l2test-bredr-basic 120 \
        "l2test -r -i $HCI1 -P 4113 -b $BLOCK" \
        "l2test -s -i $HCI0 -P 4113 -b 672 -N $frames $HCI1"

    # ERTM, what PeerLink runs: the same 672-byte SDUs, and 4144-byte ones (a PeerLink 4 KiB fragment as sent).
    run_one l2cap-bredr-ertm 120 \
        "/usr/bin/python3 $LAB_DIR/l2cap_bench.py rx $ERTM_RX 4115 --mode ertm --block $BLOCK" \
        "/usr/bin/python3 $LAB_DIR/l2cap_bench.py tx $ERTM_TX 4115 $ERTM_RX --mode ertm --size 672 --count $frames"
    run_one l2cap-bredr-ertm-4k 120 \
        "/usr/bin/python3 $LAB_DIR/l2cap_bench.py rx $ERTM_RX 4117 --mode ertm --mtu 65535 --block $BLOCK" \
        "/usr/bin/python3 $LAB_DIR/l2cap_bench.py tx $ERTM_TX 4117 $ERTM_RX --mode ertm --size 4144 --count $((BYTES / 4144 + 1))"

    # LE: the listening controller must advertise connectably for the initiator to find it.
    mgmt --index "$LE_RX_INDEX" advertising on >/dev/null
    run_one l2test-le-coc 180 \
        "l2test -r -V le_public -i $LE_RX -P 129 -b $BLOCK" \
        "l2test -s -V le_public -i $LE_TX -P 129 -b 672 -N $frames $LE_RX"
    mgmt --index "$LE_RX_INDEX" advertising off >/dev/null
    drop_le_link
done

echo "summary (MB/s = 10^6 bytes/s, receiver-timed):"
for name in rctest-rfcomm l2test-bredr-basic l2cap-bredr-ertm l2cap-bredr-ertm-4k l2test-le-coc; do summary "$name"; done
rm -rf "$WORK"
echo "results: $OUT"
exit $((failures > 0))
