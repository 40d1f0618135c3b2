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

# shellcheck source=bench-lib.sh
source "$LAB_DIR/bench-lib.sh"

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
