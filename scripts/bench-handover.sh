#!/usr/bin/env bash
# Handover-gap benchmark (not a test): the largest delivery gap of a fixed-rate reliable
# message stream when the path carrying it is cut, PeerLink (a session with a TCP link on each
# of two paths) against kernel MPTCP (one connection, a subflow on each path), in the same run
# and the same namespaces.
#
#   scripts/bench-handover.sh [RUNS] [RATE]      (defaults: 3 runs per case, 200 messages/s)
#
# Two hosts (network namespaces) joined by two veth pairs: path 1 10.81.0.0/24, path 2
# 10.82.0.0/24. Each run streams 64-byte messages from A to B for 6 s and cuts path 1 after 3 s:
#   down      ip link set down on both ends (the kernel knows the path is gone)
#   blackhole nftables drops everything arriving on path 1 at both ends (silent)
# PeerLink runs twice: peerlink (default policy: one carrier, the other link on standby) and
# peerlink-copy (LinkPolicy.copyMessages: the second link also gets a copy of each message).
# MPTCP runs twice: mptcp-backup (the second subflow is a backup, used when the first fails:
# the same job as PeerLink's carrier + standby link) and mptcp-active (both subflows carry data;
# the counterpart of peerlink-copy). SYSTEMS="..." and VARIANTS="..." pick a subset.
# Prints per case the largest gap (min / median / max over the runs), messages missing,
# duplicated and reordered, and each PeerLink median gap as a ratio of each MPTCP one (target ≤ 0.5).
# A run is judged against the sender's own report: every message it was to send must arrive,
# and the largest gap counts from the start of the stream (to the first arrival) as well as
# between arrivals. A run that does not deliver everything is a failed run, not a figure: the
# script says which and exits 1.
# Needs root. Creates and always removes namespaces plhoa/plhob.
set -uo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-3}
RATE=${2:-200}
SECONDS_SEND=6
CUT_AFTER=3
A=plhoa; B=plhob; PORT=7400; MPORT=7401
[ "$(id -u)" = 0 ] || { echo "bench-handover: run as root (network namespaces)" >&2; exit 2; }
work=$(mktemp -d /tmp/peerlink-handover.XXXXXX)
chmod 755 "$work"

cleanup() {
    ip netns del "$A" 2>/dev/null; ip netns del "$B" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

echo "[bench-handover] building peerlink-bench (release)"
swift build -c release --product peerlink-bench >"$work/build.log" 2>&1 || { tail -20 "$work/build.log"; exit 1; }
BIN=$(swift build -c release --show-bin-path)/peerlink-bench

cleanup 2>/dev/null; mkdir -p "$work"; chmod 755 "$work"
ip netns add "$A" && ip netns add "$B" || exit 1
for n in 1 2; do
    ip link add "ho$n-a" type veth peer name "ho$n-b"
    ip link set "ho$n-a" netns "$A" name "p$n"; ip link set "ho$n-b" netns "$B" name "p$n"
    ip -n "$A" addr add "10.8$n.0.1/24" dev "p$n"; ip -n "$B" addr add "10.8$n.0.2/24" dev "p$n"
    ip -n "$A" link set "p$n" up; ip -n "$B" link set "p$n" up
done
ip -n "$A" link set lo up; ip -n "$B" link set lo up
ip netns exec "$A" sysctl -qw net.mptcp.enabled=1; ip netns exec "$B" sysctl -qw net.mptcp.enabled=1
ip -n "$A" mptcp limits set subflow 2 add_addr_accepted 2
ip -n "$B" mptcp limits set subflow 2 add_addr_accepted 2
mptcp_mode() {  # active|backup — the second path's subflow carries data, or only when the first fails
    ip -n "$A" mptcp endpoint flush
    ip -n "$A" mptcp endpoint add 10.82.0.1 dev p2 subflow $([ "$1" = backup ] && echo backup)
}

cut() {  # VARIANT on|off
    case "$1/$2" in
        down/on)  ip -n "$A" link set p1 down; ip -n "$B" link set p1 down ;;
        down/off) ip -n "$A" link set p1 up; ip -n "$B" link set p1 up ;;
        blackhole/on)
            for h in "$A" "$B"; do
                ip netns exec "$h" nft -f - <<'NFT'
table netdev plho {
    chain in {
        type filter hook ingress device "p1" priority 0; policy drop;
    }
}
NFT
            done ;;
        blackhole/off) for h in "$A" "$B"; do ip netns exec "$h" nft delete table netdev plho 2>/dev/null; done ;;
    esac
}

run_once() {  # SYSTEM VARIANT → prints {"send": sender's report, "recv": receiver's report}
    local sys=$1 variant=$2 total=$((SECONDS_SEND + 4))
    rm -f "$work/id" "$work/recv.json" "$work/send.json"
    # Both ends are bounded: a sender whose stream cannot move any more must not hold the run.
    if [ "${sys%-copy}" = peerlink ]; then
        local copy=; [ "$sys" = peerlink-copy ] && copy=copy
        ip netns exec "$B" timeout $((total + 5)) "$BIN" handover-recv 0.0.0.0 "$PORT" "$work/id" "$total" $copy >"$work/recv.json" 2>"$work/recv.err" &
        local rpid=$!
        for _ in $(seq 50); do [ -s "$work/id" ] && break; sleep 0.1; done
        ip netns exec "$A" timeout $((total + 5)) "$BIN" handover-send "$work/id" 10.81.0.2 10.82.0.2 "$PORT" "$RATE" "$SECONDS_SEND" $copy >"$work/send.json" 2>"$work/send.err" &
    else
        mptcp_mode "${sys#mptcp-}"
        ip netns exec "$B" timeout $((total + 5)) python3 scripts/bench/mptcp_stream.py recv 0.0.0.0 "$MPORT" "$total" >"$work/recv.json" 2>"$work/recv.err" &
        local rpid=$!
        sleep 0.3
        ip netns exec "$A" timeout $((total + 5)) python3 scripts/bench/mptcp_stream.py send 10.81.0.2 "$MPORT" "$RATE" "$SECONDS_SEND" >"$work/send.json" 2>"$work/send.err" &
    fi
    local spid=$!
    sleep "$CUT_AFTER"
    cut "$variant" on
    wait "$spid" 2>/dev/null
    wait "$rpid" 2>/dev/null
    cut "$variant" off
    sleep 1
    [ -n "${BENCH_DEBUG:-}" ] && cat "$work/send.err" "$work/recv.err" >&2 && tail -n 1 "$work/recv.json" >&2
    local send recv
    send=$(grep -m1 '^{' "$work/send.json" 2>/dev/null) || send='{"error":"the sender reported nothing (killed at its time limit, or failed)"}'
    recv=$(tail -n 1 "$work/recv.json" 2>/dev/null | grep '^{') || recv='{"error":"the receiver reported nothing"}'
    [ "$send$recv" = "${send%error*}${recv%error*}" ] || tail -n 3 "$work/recv.err" "$work/send.err" >&2
    echo "{\"send\":$send,\"recv\":$recv}"
}

# judge — reads run_once lines; prints "MEDIAN-GAP summary" (MEDIAN-GAP "failed" when a run
# did not deliver everything). A run's largest gap is the largest of: stream start → first
# arrival, and every gap between arrivals; a run that lost messages has no gap figure.
judge() {
    python3 -c '
import json, statistics, sys
runs = [json.loads(l) for l in sys.stdin if l.strip()]
gaps, failures, dups, reord = [], [], 0, 0
for n, r in enumerate(runs, 1):
    s, v = r["send"], r["recv"]
    if "count" not in s or "unique" not in v:
        failures.append("run %d: %s" % (n, s.get("error") or v.get("error") or "no report"))
        continue
    dups += v["duplicates"]; reord += v["reordered"]
    missing = s["count"] - v["unique"]
    if "error" in s or s["sent"] < s["count"] or missing > 0:
        silent = (v["end_us"] - v["last_us"]) / 1000 if v["last_us"] else float("nan")
        why = ("; the sender stopped: " + s["error"]) if "error" in s else ""
        failures.append("run %d: %d of %d delivered (%d sent), nothing for the last %.0f ms%s" % (n, v["unique"], s["count"], s["sent"], silent, why))
        continue
    head = (v["first_us"] - s["start_us"]) / 1000
    gaps.append(max(head, v["max_gap_ms"]))
if failures:
    print("failed FAILED: " + "; ".join(failures))
else:
    g = sorted(gaps)
    print("%.1f %.1f/%.1f/%.1f, missing 0, duplicates %d, reordered %d" % (statistics.median(g), g[0], statistics.median(g), g[-1], dups, reord))
'
}

printf '%-10s %-13s %s\n' variant system "largest gap ms (min/median/max), missing, duplicates, reordered"
declare -A median
failed=0
for variant in ${VARIANTS:-down blackhole}; do
    for sys in ${SYSTEMS:-peerlink peerlink-copy mptcp-backup mptcp-active}; do
        results=()
        for r in $(seq "$RUNS"); do results+=("$(run_once "$sys" "$variant")"); done
        summary=$(printf '%s\n' "${results[@]}" | judge)
        median["$variant/$sys"]=${summary%% *}
        [ "${summary%% *}" = failed ] && failed=1
        printf '%-10s %-13s %s\n' "$variant" "$sys" "${summary#* }"
    done
done
for variant in down blackhole; do
    for pl in peerlink peerlink-copy; do
        for base in mptcp-backup mptcp-active; do
            [ -n "${median[$variant/$pl]:-}" ] && [ -n "${median[$variant/$base]:-}" ] || continue
            [ "${median[$variant/$pl]}" != failed ] && [ "${median[$variant/$base]}" != failed ] || continue
            python3 -c "
p, m = float('${median[$variant/$pl]}'), float('${median[$variant/$base]}')
print('ratio %-9s %-13s / %-12s median gap = %s (target <= 0.5)' % ('$variant', '$pl', '$base', ('%.2f' % (p / m)) if m > 0 else 'n/a'))"
        done
    done
done
echo "(the send interval, $(python3 -c "print('%.1f' % (1000 / $RATE))") ms, is the smallest gap any system can show)"
if [ "$failed" = 1 ]; then
    echo "bench-handover: FAILED: a run did not deliver every message (see above); its gap is not a figure" >&2
    exit 1
fi
