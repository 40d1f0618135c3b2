#!/bin/bash
# Paired Bluetooth benchmark; runs INSIDE the lab VM booted with 6 controllers per round:
#
#   scripts/bench-bt.sh --paired [ROUNDS [MIB]]
#
# The emulated radios' pace drifts within one boot (phases of ten seconds or more at about
# half speed, at any time), so a baseline measured a minute before PeerLink says little about
# PeerLink. Each round here measures baselines and PeerLink back to back, on three controller
# pairs of their own (a third BR/EDR connection between two emulated controllers is often
# refused): rctest (RFCOMM, 4 KiB writes), PeerLink over RFCOMM, raw ERTM with 4144-byte SDUs
# (l2cap_bench.py; a PeerLink 4 KiB fragment as sent), PeerLink over L2CAP, and BlueZ's
# l2test in basic mode (672-byte packets; l2test 5.66 cannot select ERTM). It prints each
# round's ratios and the median ratio over the rounds, and PeerLink's CPU per MiB (both nodes,
# getrusage in peerlink-bench); every run goes to $PEERLINK_LAB_RESULTS/paired.txt as
# "<name> <MB/s> ..." (and "<name>-cpu <ms per MiB>").
set -uo pipefail
BIN=${1:?usage: paired-bench.sh PEERLINK-BENCH [ROUNDS [MIB]]}
ROUNDS=${2:-4}
MIB=${3:-2}
BYTES=$((MIB * 1048576))
LAB_DIR=$(cd "$(dirname "$0")" && pwd)
OUT=${PEERLINK_LAB_RESULTS:-/tmp}/paired.txt
WORK=$(mktemp -d)
BLOCK=262144
: >"$OUT"
failures=0
# shellcheck source=bench-lib.sh
source "$LAB_DIR/bench-lib.sh"

addr() { local v="PEERLINK_LAB_HCI$1"; echo "${!v:-}"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0 && b > 0) printf "%.2f", a / b; else print "-" }'; }
peerlink() {  # peerlink NAME MEDIUM TX RX
    local v cpu
    timeout -k 5 120 "$BIN" bluetooth-one "$2" "$3" "$4" "$MIB" >"$WORK/$1.out" 2>"$WORK/$1.err"
    v=$(tail -n 1 "$WORK/$1.out")
    cpu=$(awk '$1 == "cpu_ms_per_mib" {print $2}' "$WORK/$1.out")
    if [[ $v =~ ^[0-9.]+$ ]]; then
        printf '  %-28s %8s MB/s   CPU %s ms/MiB (both ends)\n' "$1" "$v" "${cpu:--}"
        echo "$1 $v $BYTES" >>"$OUT"
        [[ -n $cpu ]] && echo "$1-cpu $cpu" >>"$OUT"
    else
        printf 'FAIL %-28s %s\n' "$1" "$(tail -n 2 "$WORK/$1.err" | tr '\n' ' ')"
        failures=$((failures + 1))
    fi
}

[[ -n $(addr $((ROUNDS * 6 - 1))) ]] || { echo "paired-bench: $ROUNDS rounds need $((ROUNDS * 6)) controllers"; exit 2; }
echo "paired benchmark: $ROUNDS rounds of $MIB MiB; each round: rctest, PeerLink RFCOMM, raw ERTM 4144 B, PeerLink L2CAP, l2test basic"
: >"$WORK/ratios-rfcomm"; : >"$WORK/ratios-l2cap"; : >"$WORK/ratios-basic"
for ((r = 0; r < ROUNDS; r++)); do
    atx=$(addr $((6 * r))) arx=$(addr $((6 * r + 1))) ptx=$(addr $((6 * r + 2))) prx=$(addr $((6 * r + 3)))
    ltx=$(addr $((6 * r + 4))) lrx=$(addr $((6 * r + 5)))
    echo "round $((r + 1)): baselines $atx -> $arx and $ltx -> $lrx, PeerLink $ptx -> $prx"
    start=$(wc -l <"$OUT")
    run_one rctest-rfcomm 120 \
        "rctest -r -i $arx -P 10 -b $BLOCK" \
        "rctest -s -i $atx -P 10 -b 4096 -N $((BYTES / 4096)) $arx"
    peerlink peerlink-rfcomm rfcomm "$ptx" "$prx"
    run_one l2cap-bredr-ertm-4k 120 \
        "/usr/bin/python3 $LAB_DIR/l2cap_bench.py rx $arx 4117 --mode ertm --mtu 65535 --block $BLOCK" \
        "/usr/bin/python3 $LAB_DIR/l2cap_bench.py tx $atx 4117 $arx --mode ertm --size 4144 --count $((BYTES / 4144 + 1))"
    peerlink peerlink-l2cap l2cap "$ptx" "$prx"
    run_one l2test-bredr-basic 120 \
        "l2test -r -i $lrx -P 4113 -b $BLOCK" \
        "l2test -s -i $ltx -P 4113 -b 672 -N $((BYTES / 672 + 1)) $lrx"
    # This round's figures only (a failed run has no line, and its ratio is "-").
    fig() { tail -n +$((start + 1)) "$OUT" | awk -v n="$1" '$1 == n {print $2}'; }
    rr=$(ratio "$(fig peerlink-rfcomm)" "$(fig rctest-rfcomm)")
    rl=$(ratio "$(fig peerlink-l2cap)" "$(fig l2cap-bredr-ertm-4k)")
    rb=$(ratio "$(fig peerlink-l2cap)" "$(fig l2test-bredr-basic)")
    echo "  ratios: RFCOMM $rr   L2CAP/ERTM-4144 $rl   L2CAP/l2test-basic $rb"
    echo "$rr" >>"$WORK/ratios-rfcomm"
    echo "$rl" >>"$WORK/ratios-l2cap"
    echo "$rb" >>"$WORK/ratios-basic"
done
echo "summary (MB/s = 10^6 bytes/s, receiver-timed):"
for name in rctest-rfcomm peerlink-rfcomm l2cap-bredr-ertm-4k peerlink-l2cap l2test-bredr-basic; do summary "$name"; done
for name in peerlink-rfcomm-cpu peerlink-l2cap-cpu; do  # PeerLink's CPU per MiB, both nodes (getrusage)
    awk -v n="$name" '$1 == n {print $2}' "$OUT" | sort -g | awk -v n="$name" '{a[NR] = $1} END {
        if (NR == 0) printf "%-30s   no figure\n", n
        else printf "%-30s %8.1f ms CPU per MiB  median of %d (min %.1f, max %.1f)\n", n,
            (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2, NR, a[1], a[NR] }'
done
median() {  # median FILE: the median of the numeric lines, and how many there were
    sort -g "$1" | grep -v '^-' | awk '{a[NR] = $1} END {
        if (NR == 0) print "- (0 rounds)"; else printf "%.2f (%d rounds)\n", (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2, NR }'
}
echo "median ratio, PeerLink / baseline of the same round: RFCOMM $(median "$WORK/ratios-rfcomm"), L2CAP / ERTM-4144 $(median "$WORK/ratios-l2cap"), L2CAP / l2test basic $(median "$WORK/ratios-basic")"
rm -rf "$WORK"
exit $((failures > 0))
