#!/usr/bin/env bash
# bench-idle-node.sh — what one real node costs while its peers are connected and quiet: one
# `peerlink chat --accept-all` in namespace A, N `peerlink chat --peer ID` processes (each its
# own identity, so N peers) in namespace B; once all N are connected, the accept-all node's
# CPU over S seconds (utime + stime from /proc/PID/stat, as % of one core), its threads
# (/proc/PID/status Threads) and RSS (VmRSS), and the same for the N peers together.
#
#   scripts/bench-idle-node.sh [--peers N] [--seconds S] [--settle S] [--binary PATH] [--keep]
#       --peers N      peers connected to the node (default 64)
#       --seconds S    measuring window (default 60)
#       --settle S     quiet time after the last peer connected, before the window (default 10)
#       --binary PATH  peerlink binary (default .build/release/peerlink; build it with
#                      `swift build -c release --product peerlink`)
#       --keep         keep the work directory (the nodes' output) afterwards
#
# "Connected" is checked, not assumed: the node's control socket (`peerlink links --pid`) must
# list N peers in state connected before the window and still after it, and every peer
# process must still be running; otherwise the script says which and exits 1.
# Discovery is the real one (mDNS through each namespace's avahi-daemon, scripts/lab/iplab.sh);
# no message is sent during the window (the chats' stdin is a FIFO this script holds open and
# never writes to). Needs root, the IP lab's packages (scripts/setup.sh) and python3.
# A benchmark, not a test: not run by CI.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
die() { echo "bench-idle-node: $*" >&2; exit 2; }

peers=64 seconds=60 settle=10 bin=$root/.build/release/peerlink keep=""
while [ $# -gt 0 ]; do
    case "$1" in
        --peers) peers=${2:?--peers needs a value}; shift 2 ;;
        --seconds) seconds=${2:?--seconds needs a value}; shift 2 ;;
        --settle) settle=${2:?--settle needs a value}; shift 2 ;;
        --binary) bin=${2:?--binary needs a value}; shift 2 ;;
        --keep) keep=1; shift ;;
        -h|--help) usage; exit 0 ;;
        *) usage >&2; die "unknown argument '$1'" ;;
    esac
done
[[ $peers =~ ^[0-9]+$ ]] && [ "$peers" -ge 1 ] || die "--peers must be a whole number ≥ 1"
[[ $seconds =~ ^[0-9]+$ ]] && [ "$seconds" -ge 1 ] || die "--seconds must be a whole number ≥ 1"
[[ $settle =~ ^[0-9]+$ ]] || die "--settle must be a whole number of seconds"
[ "$(id -u)" = 0 ] || die "needs root (network namespaces)"
[ -x "$bin" ] || die "no peerlink binary at $bin (run: swift build -c release --product peerlink)"
command -v python3 >/dev/null || die "python3 not found"

lab="$here/lab/iplab.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/peerlink-bench-idle.XXXXXX")
chmod 755 "$work"  # avahi-daemon drops root and must reach the bus sockets inside
export IPLAB_PREFIX=${IPLAB_PREFIX:-plbi}
export IPLAB_SUBNET=${IPLAB_SUBNET:-10.78.0}
A=${IPLAB_PREFIX}a  # the accept-all node
B=${IPLAB_PREFIX}b  # its peers
SERVICE=bench-idle
NAME=bench-idle-node
# shellcheck source=lab/e2e-lib.sh
. "$here/lab/e2e-lib.sh"
hub="" peer_pids=()
cleanup() {
    set +e
    [ -z "$hub" ] || kill "$hub" 2>/dev/null
    for p in "${peer_pids[@]}"; do kill "$p" 2>/dev/null; done
    if [ -n "$keep" ]; then
        exec 7>&- 8>&- 2>/dev/null
        "$lab" down "$work/lab" >/dev/null 2>&1
        echo "output kept in $work" >&2
    else
        e2e_cleanup
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

tck=$(getconf CLK_TCK)
cpu_ticks() { awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"; }  # utime + stime
status_kb() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }
alive() { [ -r "/proc/$1/stat" ] && ! grep -q '^State:[[:space:]]*[ZX]' "/proc/$1/status" 2>/dev/null; }
connected_count() {  # how many peers the node's control socket reports connected
    PEERLINK_RUNTIME_DIR="$work/run-hub" "$bin" links --json --pid "$hub" 2>/dev/null |
        python3 -c 'import json, sys; r = json.load(sys.stdin); print(sum(p["state"] == "connected" for x in r for p in x["peers"]))' 2>/dev/null ||
        echo 0
}
explain_missing() {  # names the peer processes that are gone or never reported connected
    local i
    for i in "${!peer_pids[@]}"; do
        if ! alive "${peer_pids[i]}"; then
            echo "  peer $i (pid ${peer_pids[i]}) exited: $(tail -n 2 "$work/peer-$i.err" 2>/dev/null | tr '\n' ' ')" >&2
        elif ! grep -q '"state":"connected"' "$work/peer-$i.out"; then
            echo "  peer $i (pid ${peer_pids[i]}) never reported connected: $(tail -n 2 "$work/peer-$i.err" 2>/dev/null | tr '\n' ' ')" >&2
        fi
    done
}

echo "binary: $bin"
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
"$lab" up "$work/lab" 2 >"$work/lab-up.log" 2>&1 || { cat "$work/lab-up.log" >&2; failed=1; die "lab setup failed"; }
bus_a=$("$lab" env "$A")
bus_b=$("$lab" env "$B")

mkfifo "$work/in-hub" "$work/in-peers"
exec 7<>"$work/in-hub" 8<>"$work/in-peers"  # held open, never written: the chats never see EOF
"$lab" exec "$A" env PEERLINK_CONFIG_DIR="$work/cfg-hub" "$bin" id --json >"$work/id-hub.json"
id_hub=$(sed -n 's/.*"peer":"\([a-z2-7]*\)".*/\1/p' "$work/id-hub.json")
[ -n "$id_hub" ] || { failed=1; die "could not read the node's peer ID ($work/id-hub.json)"; }

# The node: started by `ip netns exec`, which execs, so $! is the peerlink process itself.
PEERLINK_RUNTIME_DIR="$work/run-hub" ip netns exec "$A" env DBUS_SYSTEM_BUS_ADDRESS="$bus_a" \
    PEERLINK_CONFIG_DIR="$work/cfg-hub" "$bin" chat --service $SERVICE --name hub --media ip --accept-all --json \
    <"$work/in-hub" >"$work/hub.out" 2>"$work/hub.err" &
hub=$!
wait_for "$work/hub.out" '"event":"advertising"' 15 || { failed=1; die "the node did not advertise within 15 s: $(tail -n 3 "$work/hub.err")"; }
[ "$(cat "/proc/$hub/comm")" = peerlink ] || { failed=1; die "pid $hub is $(cat "/proc/$hub/comm"), not peerlink"; }
threads_alone=$(status_kb "$hub" Threads)
rss_alone=$(status_kb "$hub" VmRSS)

# The peers, in batches of 8 so that 64 Swift processes do not all start on 2 cores at once.
t0=$(date +%s)
for ((i = 0; i < peers; i++)); do
    PEERLINK_RUNTIME_DIR="$work/run-peers" ip netns exec "$B" env DBUS_SYSTEM_BUS_ADDRESS="$bus_b" \
        PEERLINK_CONFIG_DIR="$work/cfg-peer-$i" "$bin" chat --service $SERVICE --name "peer$i" --media ip \
        --peer "$id_hub" --timeout 120 --json <"$work/in-peers" >"$work/peer-$i.out" 2>"$work/peer-$i.err" &
    peer_pids+=($!)
    if (( (i + 1) % 8 == 0 )); then sleep 0.5; fi
done
deadline=$(( $(date +%s) + 120 ))
n=0
while [ "$(date +%s)" -lt "$deadline" ]; do
    n=$(connected_count)
    [ "$n" -lt "$peers" ] || break
    sleep 1
done
if [ "$n" -lt "$peers" ]; then
    failed=1
    echo "FAIL only $n of $peers peers connected to the node within 120 s" >&2
    explain_missing
    exit 1
fi
echo "all $peers peers connected in $(( $(date +%s) - t0 )) s; quiet for $settle s before measuring"
sleep "$settle"

# The window.
c0=$(cpu_ticks "$hub"); w0=$(date +%s%N)
threads_max=0 rss_max=0
declare -A pc0
for p in "${peer_pids[@]}"; do pc0[$p]=$(cpu_ticks "$p"); done
end=$(( $(date +%s) + seconds ))
while [ "$(date +%s)" -lt "$end" ]; do
    alive "$hub" || { failed=1; die "the node (pid $hub) exited during the window: $(tail -n 3 "$work/hub.err")"; }
    t=$(status_kb "$hub" Threads); r=$(status_kb "$hub" VmRSS)
    [ "$t" -le "$threads_max" ] || threads_max=$t
    [ "$r" -le "$rss_max" ] || rss_max=$r
    sleep 1
done
c1=$(cpu_ticks "$hub"); w1=$(date +%s%N)
peer_ticks=0 peer_rss=0
for p in "${peer_pids[@]}"; do
    alive "$p" || { failed=1; echo "FAIL peer pid $p exited during the window" >&2; explain_missing; exit 1; }
    peer_ticks=$(( peer_ticks + $(cpu_ticks "$p") - pc0[$p] ))
    peer_rss=$(( peer_rss + $(status_kb "$p" VmRSS) ))
done
n_after=$(connected_count)
[ "$n_after" = "$peers" ] || { failed=1; echo "FAIL $n_after of $peers peers connected after the window" >&2; explain_missing; exit 1; }
drops=$(grep -c '"state":"not-connected"' "$work/hub.out" || true)

python3 - "$c0" "$c1" "$w0" "$w1" "$tck" "$peers" "$threads_alone" "$threads_max" "$rss_alone" "$rss_max" "$peer_ticks" "$peer_rss" "$drops" <<'PY'
import sys
c0, c1, w0, w1, tck, n, th0, th, rss0, rss, pt, prss, drops = (int(x) for x in sys.argv[1:])
wall = (w1 - w0) / 1e9
print(f"\nidle node with {n} connected peers, over {wall:.1f} s:")
print(f"  CPU      {100 * (c1 - c0) / tck / wall:.2f} % of one core ({(c1 - c0) / tck:.2f} CPU s; clock tick {1000 / tck:.0f} ms)")
print(f"  threads  {th} (alone, before any peer: {th0})")
print(f"  RSS      {rss / 1024:.1f} MiB (alone: {rss0 / 1024:.1f} MiB; {(rss - rss0) / n:.0f} KiB per peer)")
print(f"  its {n} peers together: {100 * pt / tck / wall:.2f} % of one core, RSS {prss / 1024:.0f} MiB "
      f"({100 * pt / tck / wall / n:.3f} % and {prss / 1024 / n:.1f} MiB each)")
print(f"  peers lost by the node while the script ran: {drops}")
PY
echo "machine load now: $(cut -d' ' -f1-3 /proc/loadavg)"
