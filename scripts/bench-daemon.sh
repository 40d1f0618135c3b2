#!/usr/bin/env bash
# bench-daemon.sh — what a field daemon costs and how soon it delivers: a hub `peerlink daemon`
# in namespace A and N peer daemons in namespace B, each peer holding one small item for the
# hub. Prints (1) for each peer, the time from its start to the hub's receipt of its item
# (start-up, discovery, invitation, handshake, item exchange); (2) once all N are delivered
# and their sessions idle, the hub's CPU over S seconds (utime + stime from /proc, % of one
# core), threads and RSS; (3) the same for the hub alone before any peer started.
#
#   scripts/bench-daemon.sh [--peers N] [--seconds S] [--binary PATH]
#       --peers N      peer daemons (default 16)
#       --seconds S    each measuring window (default 30)
#       --binary PATH  peerlink binary (default .build/release/peerlink; build it with
#                      `swift build -c release --product peerlink`)
# Needs root and the IP lab's packages (scripts/setup.sh). A benchmark, not a test: not in CI.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
die() { echo "bench-daemon: $*" >&2; failed=1; exit 2; }
peers=16 seconds=30 bin=$root/.build/release/peerlink
while [ $# -gt 0 ]; do
    case "$1" in
        --peers) peers=${2:?}; shift 2 ;;
        --seconds) seconds=${2:?}; shift 2 ;;
        --binary) bin=${2:?}; shift 2 ;;
        -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown argument '$1' (see --help)" ;;
    esac
done
[[ $peers =~ ^[0-9]+$ && $peers -ge 1 ]] || die "--peers must be a whole number ≥ 1"
[ "$(id -u)" = 0 ] || die "needs root (network namespaces)"
[ -x "$bin" ] || die "no peerlink binary at $bin (run: swift build -c release --product peerlink)"
lab="$here/lab/iplab.sh"
work=$(mktemp -d /tmp/peerlink-bench-daemon.XXXXXX)
chmod 755 "$work"
export IPLAB_PREFIX=${IPLAB_PREFIX:-plbd}
A=${IPLAB_PREFIX}a B=${IPLAB_PREFIX}b NAME=bench-daemon
# shellcheck source=lab/e2e-lib.sh
. "$here/lab/e2e-lib.sh"
trap e2e_cleanup EXIT
[ -z "${KEEP:-}" ] || failed=1  # KEEP=1: keep the logs (shown and left in the work directory)

config() {  # NAME → $work/NAME.toml
    printf 'service = "benchd"\nname = "%s"\nmedia = "ip"\naccept = "all"\nstate_dir = "%s"\nruntime_dir = "%s"\nkeep_free = 0\n' "$1" "$work/state-$1" "$work/run-$1" >"$work/$1.toml"
}
start() {  # HOST NAME
    "$lab" exec "$1" env PEERLINK_CONFIG_DIR="$work/cfg-$2" "$bin" daemon --config "$work/$2.toml" >>"$work/$2.log" 2>&1 &
    pids+=($!)
}
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
measure() {  # PID LABEL
    local pid=$1 hz t0 t1
    hz=$(getconf CLK_TCK)
    t0=$(cpu_ticks "$pid"); sleep "$seconds"; t1=$(cpu_ticks "$pid")
    printf '%-28s CPU %5.2f %% of a core   threads %3s   RSS %6.1f MiB\n' "$2" \
        "$(echo "scale=4; ($t1 - $t0) * 100 / $hz / $seconds" | bc)" \
        "$(awk '/^Threads/ {print $2}' "/proc/$pid/status")" \
        "$(awk '/^VmRSS/ {print $2 / 1024}' "/proc/$pid/status")"
}

"$lab" up "$work/lab" 2 >"$work/lab-up.log" 2>&1 || { cat "$work/lab-up.log" >&2; die "lab setup failed"; }
config hub
hub_id=$("$lab" exec "$A" env PEERLINK_CONFIG_DIR="$work/cfg-hub" "$bin" id --json | sed -n 's/.*"peer":"\([A-Za-z2-7]*\)".*/\1/p')
start "$A" hub
wait_for "$work/hub.log" "running" 20 || die "the hub did not start (see $work/hub.log)"
hub_pid=$(pgrep -f "^$bin daemon --config $work/hub.toml" | head -1)
sleep 5
echo "== $(date -u +%F) $(nproc) cores, $(basename "$bin") $("$bin" --version 2>/dev/null || echo '')"
measure "$hub_pid" "hub alone, idle"

for i in $(seq 1 "$peers"); do
    config "p$i"
    mkdir -p "$work/state-p$i/outbox/$hub_id"
    head -c 1024 /dev/urandom >"$work/state-p$i/outbox/$hub_id/.item-$i.tmp"
    mv "$work/state-p$i/outbox/$hub_id/.item-$i.tmp" "$work/state-p$i/outbox/$hub_id/item-$i.bin"
done
for i in $(seq 1 "$peers"); do
    date +%s.%N >"$work/p$i.start"
    start "$B" "p$i"
done
for i in $(seq 1 "$peers"); do
    wait_for "$work/hub.log" "item received .*item-$i.bin" 120 || die "peer $i's item did not arrive (see $work/p$i.log)"
done
# The peers' "delivered" lines carry millisecond stamps.
python3 - "$work" "$peers" <<'PY'
import re, sys, datetime, statistics
work, n = sys.argv[1], int(sys.argv[2])
times = []
for i in range(1, n + 1):
    start = float(open(f"{work}/p{i}.start").read())
    for line in open(f"{work}/p{i}.log"):
        if " delivered " in line:
            t = datetime.datetime.fromisoformat(line.split()[0].replace("Z", "+00:00")).timestamp()
            times.append(t - start); break
times.sort()
print(f"start of a peer daemon → its item's receipt (1 KiB, {len(times)} peers started at once): "
      f"median {statistics.median(times):.1f} s, min {times[0]:.1f} s, max {times[-1]:.1f} s")
PY
sleep 10
measure "$hub_pid" "hub with $peers peers, idle"
echo "sessions: $(grep -c 'peer connected' "$work/hub.log") connected, $(grep -c 'peer left' "$work/hub.log") left"
