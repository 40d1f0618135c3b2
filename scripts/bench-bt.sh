#!/usr/bin/env bash
# Bluetooth benchmark (not a test): in ONE boot of the lab VM, BlueZ's rctest/l2test measure
# the raw baseline (Hardware/bt-lab/baseline.sh, controllers hci0 -> hci1), then PeerLink
# sessions move the same kind of traffic over RFCOMM and L2CAP on another controller pair
# (hci4 -> hci5: btvirt mixes up links when one controller talks to several others, and
# repeated pairings between the same two controllers fail after a few). Prints MB/s and the
# ratio to the baseline. Emulation sets the pace: only the ratios mean anything.
#
#   scripts/bench-bt.sh [MIB [L2CAP-FRAGMENTS]]   (default 2 MiB; fragments e.g. 600,4096,16384,
#                                                  default the session's 16 KiB)
#   scripts/bench-bt.sh --paired [ROUNDS [MIB]]   (6 controllers a round; each round runs the baselines
#                                                  and PeerLink back to back: Hardware/bt-lab/paired-bench.sh;
#                                                  1 or 2 rounds of 2 MiB, default 2)
# The emulated radios slow down for ten seconds or more at random moments, so figures taken a
# minute apart disagree by up to 2x; --paired is the one to quote. Both modes boot without the
# btmon tracer (--no-trace): it took a quarter of the guest's CPU, from PeerLink and baselines alike.
set -uo pipefail
cd "$(dirname "$0")/.."
echo "[bench-bt] building peerlink-bench (release)"
swift build -c release --product peerlink-bench >/tmp/peerlink-bench-build.log 2>&1 || { tail -20 /tmp/peerlink-bench-build.log; exit 1; }
BIN=$(swift build -c release --show-bin-path)/peerlink-bench
if [[ ${1:-} == --paired ]]; then
    ROUNDS=${2:-2}
    ((ROUNDS >= 1 && ROUNDS <= 2)) || { echo "bench-bt: --paired runs 1 or 2 rounds per boot (6 controllers a round; the lab has at most 16)"; exit 2; }
    exec scripts/bt-lab.sh run --no-trace --controllers $((ROUNDS * 6)) --timeout 1200 -- \
        /bin/bash Hardware/bt-lab/paired-bench.sh "$BIN" "$ROUNDS" "${3:-2}"
fi
MIB=${1:-2}
FRAGS=${2:-}
exec scripts/bt-lab.sh run --no-trace --controllers 8 --timeout 600 -- /bin/sh -c \
    "Hardware/bt-lab/baseline.sh --bytes $((MIB * 1048576)); \
     $BIN bluetooth \"\$PEERLINK_LAB_HCI4\" \"\$PEERLINK_LAB_HCI5\" \"\$PEERLINK_LAB_RESULTS/baseline.txt\" $MIB $FRAGS"
