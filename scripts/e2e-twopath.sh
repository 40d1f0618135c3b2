#!/usr/bin/env bash
# Two hosts joined by TWO network paths (two veth pairs: lab0 10.77.0.0/24 and lab1
# 10.78.0.0/24, like a dock's Ethernet plus Wi-Fi), each host with its own dbus-daemon and
# avahi-daemon on both interfaces, running the real `peerlink` CLI:
# one invitation → the link manager opens a TCP link on each path (no second question to the
# app) → `peerlink links` shows both, the second one getting copies of beta's messages (beta
# runs with --copy-messages) → the carrying path goes down mid-stream → every message arrives
# once, in order, over the other path → the path comes back → it is redialled.
#
#   scripts/e2e-twopath.sh [PEERLINK_BINARY]
# Prints one "ok"/"FAIL" line per check and a closing "N passed, M failed" line.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
bin=${1:-$root/.build/debug/peerlink}
[ -x "$bin" ] || { echo "e2e-twopath: no peerlink binary at $bin (run swift build)" >&2; exit 2; }
lab="$here/lab/iplab.sh"
work=$(mktemp -d /tmp/peerlink-twopath.XXXXXX)
chmod 755 "$work"
export IPLAB_PREFIX=${IPLAB_PREFIX:-pl2p}
export PEERLINK_RUNTIME_DIR="$work/run"
A=${IPLAB_PREFIX}a
B=${IPLAB_PREFIX}b
SERVICE=two-paths
NAME=e2e-twopath
# shellcheck source=lab/e2e-lib.sh
. "$here/lab/e2e-lib.sh"
trap e2e_cleanup EXIT

# tcp_links REPORT-JSON NAME — number (and remotes) of the TCP links of the node called NAME.
tcp_links() {
    python3 - "$1" "$2" <<'PY'
import json, sys
reports = [r for r in json.load(open(sys.argv[1])) if r["name"] == sys.argv[2]]
links = [l for r in reports for p in r["peers"] for l in p["links"] if l["medium"] == "tcp"]
print(len(links), " ".join(sorted(l["remote"] for l in links)))
PY
}

# wait_links NAME N SECONDS — until `peerlink links` shows N TCP links for node NAME.
wait_links() {
    local cmd=$1 n=$2 secs=$3 end
    end=$(( $(date +%s) + secs ))
    while [ "$(date +%s)" -lt "$end" ]; do
        "$bin" links --json >"$work/links.json" 2>/dev/null
        [ "$(tcp_links "$work/links.json" "$cmd" | cut -d' ' -f1)" = "$n" ] && return 0
        sleep 0.3
    done
    return 1
}

t0=$(date +%s)
if ! "$lab" up "$work/lab" 2 >"$work/lab-up.log" 2>&1; then
    cat "$work/lab-up.log" >&2
    echo "FAIL lab setup (see above)"; echo "0 passed, 1 failed"; exit 1
fi
# The second path: another veth pair, another subnet, and avahi on both interfaces.
ip link add "${A}-l1" type veth peer name "${B}-l1" &&
    ip link set "${A}-l1" netns "$A" name lab1 && ip link set "${B}-l1" netns "$B" name lab1 &&
    ip -n "$A" addr add 10.78.0.1/24 dev lab1 && ip -n "$B" addr add 10.78.0.2/24 dev lab1 &&
    ip -n "$A" link set lab1 up && ip -n "$B" link set lab1 up || { echo "FAIL second path"; echo "0 passed, 1 failed"; exit 1; }
for h in "$A" "$B"; do
    sed -i 's/^allow-interfaces=.*/allow-interfaces=lab0,lab1/' "$work/lab/$h/avahi.conf"
    "$lab" restart-avahi "$h" >>"$work/lab-up.log" 2>&1 || { echo "FAIL avahi restart on $h"; echo "0 passed, 1 failed"; exit 1; }
done
echo "lab with two paths up in $(( $(date +%s) - t0 )) s"

mkfifo "$work/in-a" "$work/in-b"
exec 7<>"$work/in-a" 8<>"$work/in-b"
"$lab" exec "$A" env PEERLINK_CONFIG_DIR="$work/cfg-a" "$bin" chat --service $SERVICE --name alpha \
    --accept-all --json <"$work/in-a" >"$work/chat-a.out" 2>"$work/chat-a.err" &
pids+=($!)
wait_for "$work/chat-a.out" '"event":"advertising"' 10
"$lab" exec "$B" env PEERLINK_CONFIG_DIR="$work/cfg-b" "$bin" chat --service $SERVICE --name beta \
    --peer alpha --copy-messages --json <"$work/in-b" >"$work/chat-b.out" 2>"$work/chat-b.err" &
pids+=($!)
check "beta connects to alpha" wait_for "$work/chat-b.out" '"state":"connected"' 15
check "the link manager opens a TCP link on each path" wait_links beta 2 15
read -r n remotes < <(tcp_links "$work/links.json" beta)
echo "beta's links to alpha: $remotes"
check "…to both of alpha's addresses" sh -c "echo '$remotes' | grep -q '10.77.0.1' && echo '$remotes' | grep -q '10.78.0.1'"
check "alpha's application answered one invitation" test "$(grep -c '"event":"invitation"' "$work/chat-a.out")" = 1

# Which path carries beta's reliable messages? Cut that one mid-stream.
carrier=$(python3 - "$work/links.json" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1])):
    for p in r["peers"]:
        for l in p["links"]:
            if r["name"] == "beta" and "reliable" in l["carries"]:
                print("lab1" if l["remote"].startswith("10.78.") else "lab0")
PY
)
carrier=$(echo "$carrier" | head -1)
echo "reliable messages travel on ${carrier:-?}"
# beta runs with --copy-messages: its other link gets a copy of each message, and alpha must
# still see each message once.
copy_path() {
    python3 - "$1" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1])):
    for p in r["peers"]:
        for l in p["links"]:
            if r["name"] == "beta" and "reliable-copy" in l["carries"] and "reliable" not in l["carries"]:
                print("lab1" if l["remote"].startswith("10.78.") else "lab0")
PY
}
copies=$(copy_path "$work/links.json")
for _ in $(seq 20); do
    [ -n "$copies" ] && break
    sleep 0.25; "$bin" links --json >"$work/links-copy.json" 2>/dev/null; copies=$(copy_path "$work/links-copy.json")
done
check "beta's other path gets copies of its messages (reliable-copy in peerlink links)" \
    test -n "$copies" -a "$(echo "$copies" | head -1)" != "${carrier:-none}"
# The link on the other path: the one that must carry the messages once the carrier dies.
survivor=$(python3 - "$work/links.json" "${carrier:-lab0}" <<'PY'
import json, sys
dead = "10.78." if sys.argv[2] == "lab1" else "10.77."
for r in json.load(open(sys.argv[1])):
    for p in r["peers"]:
        for l in p["links"]:
            if r["name"] == "beta" and l["medium"] == "tcp" and not l["remote"].startswith(dead):
                print(l["id"], l["remote"])
PY
)
read -r survivor_id survivor_remote <<<"$(echo "$survivor" | head -1)"
echo "the other path's link: ${survivor_id:-?} to ${survivor_remote:-?}"

# carrier_after LINE LINK SECONDS — beta reported, after line LINE of its output, that its
# reliable messages now go on link LINK (with a reason).
carrier_after() {
    local from=$1 link=$2 secs=$3 end
    end=$(( $(date +%s) + secs ))
    while [ "$(date +%s)" -le "$end" ]; do
        tail -n +"$((from + 1))" "$work/chat-b.out" | python3 -c '
import json, sys
want = sys.argv[1]
for line in sys.stdin:
    try:
        e = json.loads(line)
    except ValueError:
        continue
    if e.get("event") == "carrier" and e.get("role") == "reliable" and str(e.get("link")) == want and e.get("reason"):
        print(line.strip()); sys.exit(0)
sys.exit(1)' "$link" >"$work/carrier-after-cut.txt" && return 0
        sleep 0.2
    done
    return 1
}

for i in $(seq 1 150); do echo "m $i" >&8; done
wait_for "$work/chat-a.out" '"text":"m 150"' 15
cut_at=$(wc -l <"$work/chat-b.out")
ip -n "$A" link set "${carrier:-lab0}" down
for i in $(seq 151 300); do echo "m $i" >&8; sleep 0.01; done
check "300 messages arrive across the path loss" wait_for "$work/chat-a.out" '"text":"m 300"' 20
order=$(grep -o '"text":"m [0-9]*"' "$work/chat-a.out" | grep -o '[0-9]*' | tr '\n' ' ')
check "…exactly once and in order" test "$order" = "$(seq 1 300 | tr '\n' ' ')"
check "after the cut, beta moves its reliable messages to the other path's link (${survivor_id:-?} to ${survivor_remote:-?}) and says why" \
    carrier_after "$cut_at" "${survivor_id:-none}" 10
[ -s "$work/carrier-after-cut.txt" ] && echo "  $(cat "$work/carrier-after-cut.txt")"
check "alpha stays connected (no not-connected event)" test "$(grep -c '"state":"not-connected"' "$work/chat-a.out")" = 0
check "the dead path's link is dropped" wait_links beta 1 10
check "alpha closed its link at once: the kernel reported the interface down" \
    grep -qE '"event":"link".*"reason":"the path is gone: network interface [a-z0-9]+ is down".*"up":false' "$work/chat-a.out"
ip -n "$A" link set "${carrier:-lab0}" up
check "the path is redialled when it comes back" wait_links beta 2 40

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
