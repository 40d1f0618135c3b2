#!/usr/bin/env bash
# Two field nodes in network namespaces (each with its own dbus-daemon and avahi-daemon)
# running `peerlink daemon` as a Pi runs it: a file dropped in one's outbox for the other
# while the other is not running arrives once it starts; a larger item survives `kill -9` of
# the receiver and of the sender at random moments and arrives exactly once, intact; an item
# whose peer never comes expires and is moved aside with its reason; the local API answers
# `peerlink status` and a Python client (Examples/python/peerlink_client.py) that queues an
# item and follows the event stream until it is delivered; `peerlink send` queues through a
# running daemon (and --wait follows the item until delivered); a third node with
# accept = "known" lists the unknown holder as pending until the owner accepts it with
# `peerlink pending accept`, and the item then arrives; the metrics endpoint
# (docs/METRICS.md) counts deliveries and expiries; SIGTERM stops cleanly.
#
#   scripts/e2e-daemon.sh [PEERLINK_BINARY] [--kills N] [--mib M] [--seed S]
# Prints one "ok"/"FAIL" line per check and a closing "N passed, M failed" line.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
bin=$root/.build/debug/peerlink
kills=3; mib=48; seed=${PEERLINK_TEST_SEED:-$RANDOM}
while [ $# -gt 0 ]; do
    case $1 in
        --kills) kills=$2; shift 2 ;;
        --mib) mib=$2; shift 2 ;;
        --seed) seed=$2; shift 2 ;;
        -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
        *) bin=$1; shift ;;
    esac
done
[ -x "$bin" ] || { echo "e2e-daemon: no peerlink binary at $bin (run swift build)" >&2; exit 2; }
lab="$here/lab/iplab.sh"
work=$(mktemp -d /tmp/peerlink-daemon.XXXXXX)
chmod 755 "$work"
export IPLAB_PREFIX=${IPLAB_PREFIX:-pldmn}
A=${IPLAB_PREFIX}a
B=${IPLAB_PREFIX}b
C=${IPLAB_PREFIX}c
NAME=e2e-daemon
# shellcheck source=lab/e2e-lib.sh
. "$here/lab/e2e-lib.sh"
trap e2e_cleanup EXIT
echo "seed $seed (repeat with --seed $seed)"
RANDOM=$seed

# shellcheck source=lab/daemon-lib.sh
. "$here/lab/daemon-lib.sh"

# metric_positive HOST NAME — true when HOST's GET /metrics (scraped inside HOST's namespace)
# answers in the text format with a sample of NAME above 0
metrics_port=19464
metric_positive() {
    "$lab" exec "$1" python3 - "$2" "$metrics_port" <<'PY'
import sys, time, urllib.request
name, port = sys.argv[1], sys.argv[2]
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
for attempt in range(10):  # the counter moves just after the log line the caller waited for
    with opener.open(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4"), r.headers["Content-Type"]
        body = r.read().decode()
    values = [float(l.rsplit(" ", 1)[1]) for l in body.splitlines() if l.startswith(name + "{") or l.startswith(name + " ")]
    if values and max(values) > 0:
        sys.exit(0)
    time.sleep(0.5)
print(f"no {name} above 0 in:\n{body}", file=sys.stderr)
sys.exit(1)
PY
}

t0=$(date +%s)
if ! "$lab" up "$work/lab" 3 >"$work/lab-up.log" 2>&1; then
    cat "$work/lab-up.log" >&2
    echo "FAIL lab setup (see above)"; echo "0 passed, 1 failed"; exit 1
fi
echo "lab up in $(( $(date +%s) - t0 )) s"
id_a=$(peerid "$A"); id_b=$(peerid "$B"); id_c=$(peerid "$C")

# 0. A configuration with a typo is refused with its line, before anything starts.
printf 'service = "x"\nacept = "all"\n' >"$work/bad.toml"
"$bin" daemon --check-config "$work/bad.toml" >/dev/null 2>"$work/bad.err"; rc=$?
check "check-config refuses an unknown key with its line (exit 78)" \
    test "$rc" = 78 -a "$(grep -c 'bad.toml:2: unknown key acept' "$work/bad.err")" = 1

# 1. A holds a file for B while B is not running; B starts later and gets it.
config "$A" "metrics = \"127.0.0.1:$metrics_port\""; config "$B"
start "$A"
drop "$A" "$id_b" first.bin 2
check "the holder queues the outbox file for its peer" wait_for "$work/$A.log" "queued .*file=.*first.bin" 15
sleep 2
start "$B"
check "the file arrives once the peer starts" wait_for "$work/$B.log" "item received .*first.bin" 60
check "…intact, in the inbox under its name" test "$(sha "$work/state-$B/inbox/first.bin" 2>/dev/null)" = "$(sha "$work/original-first.bin")"
check "…and the holder settles it on the receipt" wait_for "$work/$A.log" "delivered " 20
check "…and its metrics endpoint counts it (peerlink_items_delivered_total > 0)" metric_positive "$A" peerlink_items_delivered_total
check "…moving it to sent/ with the receipt" \
    bash -c "ls '$work/state-$A/sent/'*-first.bin >/dev/null && grep -q receivedAt '$work/state-$A/sent/'*.json && [ -z \"\$(ls -A '$work/state-$A/outbox/$id_b')\" ]"

# 2. A larger item survives kill -9 of either side at random moments, and arrives once. A's
# side of the link is held to 64 Mbit/s (tc tbf) so that the kills land while bytes move.
dev=$("$lab" exec "$A" ip -o link show | awk -F': ' '$2 !~ /^lo/ {sub(/@.*/, "", $2); print $2; exit}')
"$lab" exec "$A" tc qdisc add dev "$dev" root tbf rate 64mbit burst 256kb latency 100ms
drop "$A" "$id_b" big.bin "$mib"
staged="$work/state-$B/inbox/.peerlink-staging/$id_a/.peerlink-partial"
killed=0
part_bytes() { find "$staged" -name '*.part' -printf '%s\n' 2>/dev/null | head -1; }
last=0
for ((k = 1; k <= 2 * kills; k++)); do
    # Wait until the transfer has moved on since the last kill (resumed, 1 MiB further),
    # then kill one side after a random 0.2-1.0 s.
    moved=
    for _ in $(seq 1 600); do
        [ -f "$work/state-$B/inbox/big.bin" ] && break
        b=$(part_bytes); [ -n "$b" ] && [ "$b" -gt $((last + 1048576)) ] && { moved=1; break; }
        sleep 0.1
    done
    [ -n "$moved" ] || break
    sleep "$(printf '0.%03d' $((200 + RANDOM % 800)))"
    [ -f "$work/state-$B/inbox/big.bin" ] && break  # finished before the kill
    if ((k % 2)); then victim=$B; else victim=$A; fi
    kill9 "$victim"
    killed=$((killed + 1))
    last=$(part_bytes); last=${last:-0}
    echo "     kill -9 $victim with $last of $((mib * 1048576)) bytes held"
    start "$victim"
done
check "the big item arrives after the kills" wait_for "$work/$B.log" "item received .*big.bin" 180
check "…intact" test "$(sha "$work/state-$B/inbox/big.bin" 2>/dev/null)" = "$(sha "$work/original-big.bin")"
sleep 3
check "…exactly once (one file, no second copy in the inbox)" \
    test "$(find "$work/state-$B/inbox" -maxdepth 1 -type f -name '*big.bin*' | wc -l)" = 1
check "…and settled once on the holder" wait_for "$work/$A.log" "delivered .*size=$((mib * 1048576))" 20
check "…nothing partial left visible in the inbox" test -z "$(find "$work/state-$B/inbox" -maxdepth 1 -name '*.part')"
check "…after $((2 * kills)) kills" test "$killed" -ge "$((2 * kills))"
# What crossed A's side of the link for this item (file, Noise and TCP/IP overhead, and what
# was sent again after the kills): compare with a run with --kills 0 for the bytes resent.
sent_bytes=$("$lab" exec "$A" tc -s qdisc show dev "$dev" | sed -n 's/.*Sent \([0-9]*\) bytes.*/\1/p' | head -1)
echo "     link bytes from the holder: ${sent_bytes:-?} for $((mib * 1048576)) bytes of item after $killed kills"
"$lab" exec "$A" tc qdisc del dev "$dev" root

# 3. An item for a peer that never comes expires and is moved aside with its reason.
ghost=$("$bin" id --config-dir "$work/ghost" --json | sed -n 's/.*"peer":"\([A-Za-z2-7]*\)".*/\1/p')
kill "$(pid_of "$A")"; wait "${daemon_pid[$A]}" 2>/dev/null
config "$A" 'ttl = "3s"' "metrics = \"127.0.0.1:$metrics_port\""
start "$A"
drop "$A" "$ghost" late.bin 1
check "an item whose peer never comes expires, with the reason" wait_for "$work/$A.log" "expired before its peer came" 20
check "…counted by the metrics (peerlink_items_expired_total > 0)" metric_positive "$A" peerlink_items_expired_total
check "…and is moved to expired/ with a note" \
    bash -c "ls '$work/state-$A/expired/'*-late.bin >/dev/null && grep -qi 'time to live' '$work/state-$A/expired/'*.json"

# 4. The local API: `peerlink status`, and a Python client that queues an item for B through
# A's socket and follows A's events until it is delivered, then resumes with no duplicate.
sock_a="$work/run-$A/daemon.sock"
check "peerlink status answers through the socket" bash -c "
    '$bin' status --socket '$sock_a' --json >'$work/status.json' && grep -q '\"peer\":\"$id_a\"' '$work/status.json'"
check "…and says clearly when no daemon runs (exit 1)" bash -c "
    '$bin' status --socket '$work/none.sock' 2>&1 >/dev/null | grep -q 'no daemon at $work/none.sock (start one with' ; [ \${PIPESTATUS[0]} = 1 ]"
check "the socket is mode 0660" test "$(stat -c %a "$sock_a")" = 660
head -c 300000 /dev/urandom >"$work/api-item.bin"
check "a Python client reads the status, queues an item, sees it delivered, resumes with no duplicate" \
    timeout 90 python3 "$root/Examples/python/peerlink_client.py" --socket "$sock_a" send-and-wait "$id_b" "$work/api-item.bin" --timeout 60
check "…and the item arrives intact" bash -c "
    for _ in \$(seq 1 50); do [ -f '$work/state-$B/inbox/api-item.bin' ] && break; sleep 0.2; done
    [ \"\$(sha256sum <'$work/state-$B/inbox/api-item.bin')\" = \"\$(sha256sum <'$work/api-item.bin')\" ]"
check "a message item queued through the API lands once in the peer's inbox" bash -c "
    python3 '$root/Examples/python/peerlink_client.py' --socket '$sock_a' message '$id_b' 'level=1.2m' >'$work/message.json' &&
    for _ in \$(seq 1 100); do ls '$work/state-$B/inbox/'message-*.txt >/dev/null 2>&1 && break; sleep 0.2; done
    [ \"\$(cat '$work/state-$B/inbox/'message-*.txt)\" = level=1.2m ] && [ \$(ls '$work/state-$B/inbox/'message-*.txt | wc -l) = 1 ]"

# 5. `peerlink send` while a daemon runs queues through its socket (found by
# PEERLINK_RUNTIME_DIR, as `peerlink status` finds it); --wait follows until delivered. A runs
# again with the default ttl (section 3 gave it 3 s).
kill "$(pid_of "$A")"; wait "${daemon_pid[$A]}" 2>/dev/null
config "$A"
listening=$(grep -c "API listening" "$work/$A.log")  # the log holds earlier runs' lines too
start "$A"
for _ in $(seq 1 150); do [ "$(grep -c "API listening" "$work/$A.log")" -gt "$listening" ] && break; sleep 0.1; done
head -c 200000 /dev/urandom >"$work/cli-item.bin"
head -c 100000 /dev/urandom >"$work/cli-wait.bin"
check "peerlink send queues through the daemon (no radios of its own) and says so" bash -c "
    PEERLINK_RUNTIME_DIR='$work/run-$A' '$bin' send '$work/cli-item.bin' --to '$id_b' >'$work/send.out' 2>'$work/send.err' &&
    grep -q \"queued 'cli-item.bin' .* for $id_b (item [0-9a-f]*); the daemon delivers it when $id_b is in range\" '$work/send.out'"
check "…and the item arrives intact" bash -c "
    for _ in \$(seq 1 150); do [ -f '$work/state-$B/inbox/cli-item.bin' ] && break; sleep 0.2; done
    [ \"\$(sha256sum <'$work/state-$B/inbox/cli-item.bin')\" = \"\$(sha256sum <'$work/cli-item.bin')\" ]"
check "peerlink send --wait exits 0 once the daemon says delivered" bash -c "
    PEERLINK_RUNTIME_DIR='$work/run-$A' timeout 90 '$bin' send '$work/cli-wait.bin' --to '$id_b' --wait >'$work/send-wait.out' 2>'$work/send-wait.err' &&
    grep -q \"delivered 'cli-wait.bin' to $id_b (1 of 1)\" '$work/send-wait.out' && [ -f '$work/state-$B/inbox/cli-wait.bin' ]"
sed 's/^/     | /' "$work/send-wait.out"
check "…--json prints one object per step" bash -c "
    PEERLINK_RUNTIME_DIR='$work/run-$A' timeout 90 '$bin' send '$work/cli-wait.bin' --to '$id_b' --wait --json >'$work/send-json.out' &&
    grep -q '\"event\":\"queued\"' '$work/send-json.out' && grep -q '\"event\":\"delivered\"' '$work/send-json.out'"

# 6. The pending list: C takes only trusted peers and does not trust A. A holds an item for C;
# C lists A as pending; the owner accepts it and the item arrives (A invites again while it
# holds the item, every 10 s).
accept=known config "$C"
start "$C"
sock_c="$work/run-$C/daemon.sock"
drop "$A" "$id_c" forc.bin 1
check "an unknown peer that asks is listed as pending (peerlink pending --json)" bash -c "
    for _ in \$(seq 1 60); do
        '$bin' pending --socket '$sock_c' --json 2>/dev/null | grep -q '\"peer\":\"$id_a\"' && exit 0; sleep 1
    done; exit 1"
check "…with its name and asks in the text listing" bash -c "
    '$bin' pending --socket '$sock_c' | grep -q '^$A \[$id_a\] asked '"
"$bin" pending --socket "$sock_c" | sed 's/^/     | /'
check "…and nothing of it is received before the owner answers" test ! -e "$work/state-$C/inbox/forc.bin"
check "peerlink pending accept trusts the peer" bash -c "
    '$bin' pending accept '$id_a' --name 'field laptop' --socket '$sock_c' >'$work/accept.out' &&
    grep -q 'trusted and accepted $A \[$id_a\]' '$work/accept.out' &&
    grep -q '^$id_a field laptop\$' '$work/cfg-$C/trusted-peers'"
check "…and the held item arrives" wait_for "$work/$C.log" "item received .*forc.bin" 60
check "…intact" test "$(sha "$work/state-$C/inbox/forc.bin" 2>/dev/null)" = "$(sha "$work/original-forc.bin")"
check "…and the pending list is empty again" bash -c "
    '$bin' pending --socket '$sock_c' --json | grep -q '\"pending\":\\[\\]'"

# The owner manages the daemon's trust store with `peerlink trust` (it lives with the daemon's
# key, not in the caller's configuration directory).
check "peerlink trust list shows the daemon's store, with how each peer came in" bash -c "
    '$bin' trust list --socket '$sock_c' --json | grep -q '\"note\":\"field laptop\",\"peer\":\"$id_a\",\"verification\":\"first-use\"'"
check "peerlink trust verify through the daemon: the code both nodes compute, recorded on --confirm" bash -c "
    here=\$('$bin' trust verify '$id_a' --socket '$sock_c' --json --confirm | sed -n 's/.*\"code\":\"\\([0-9 ]*\\)\".*/\\1/p' | head -1)
    there=\$('$bin' trust verify '$id_c' --socket '$sock_a' --json | sed -n 's/.*\"code\":\"\\([0-9 ]*\\)\".*/\\1/p')
    test -n \"\$here\" -a \"\$here\" = \"\$there\" && grep -q 'verification=code' '$work/cfg-$C/trusted-peers'"
check "peerlink trust remove through the daemon takes the peer out of its store" bash -c "
    '$bin' trust add '$id_b' 'spare' --socket '$sock_c' >/dev/null && grep -q '^$id_b spare\$' '$work/cfg-$C/trusted-peers' &&
    '$bin' trust remove spare --socket '$sock_c' >/dev/null && ! grep -q '$id_b' '$work/cfg-$C/trusted-peers'"

check "peerlink browse through the daemon lists the peers its browser sees (no radios of its own)" bash -c "
    '$bin' browse --socket '$sock_a' --timeout 2 --json 2>'$work/browse.err' >'$work/browse.json' &&
    grep -q '\"event\":\"found\".*\"peer\":\"$id_c\"' '$work/browse.json' ||
    { cat '$work/browse.json' '$work/browse.err'; false; }"
check "…in text too, saying it browses through the daemon" bash -c "
    '$bin' browse --socket '$sock_a' --timeout 1 >'$work/browse.txt' 2>&1 &&
    grep -q 'through the daemon at $sock_a' '$work/browse.txt' && grep -q '^found   $C \[$id_c\] at tcp://' '$work/browse.txt'"
check "…and refuses a service the daemon does not browse, saying --direct" bash -c "
    ! '$bin' browse --socket '$sock_a' --service other --timeout 1 2>&1 | grep -v '^\$' >'$work/browse2.out'; grep -q 'use --direct' '$work/browse2.out'"

# `peerlink chat` through the daemons: C shows what arrives; a line typed at A goes as a
# message item and is shown at C.
(sleep 30 | "$bin" chat --socket "$sock_c" --json >"$work/chat-c.json" 2>&1) &
chat_c=$!
sleep 1
printf 'hello from the hub\n' | "$bin" chat --socket "$sock_a" --peer "$id_c" --json >"$work/chat-a.json" 2>&1
check "peerlink chat through the daemon queues each line as a message item" grep -q '"event":"queued".*"text":"hello from the hub"' "$work/chat-a.json"
check "…and the peer's chat shows it when its daemon receives it" wait_for "$work/chat-c.json" '"event":"message".*"text":"hello from the hub"' 60
kill "$chat_c" 2>/dev/null; pkill -f "chat --socket $sock_c" 2>/dev/null

check "peerlink links shows the daemon's session too (read from /v1/status)" bash -c "
    '$bin' links --socket '$sock_a' --json >'$work/links.json' && grep -q '\"command\" : \"daemon\"' '$work/links.json' &&
    grep -qE '$id_b|$id_c' '$work/links.json'"

# 7. SIGTERM stops the daemon cleanly.
p=$(pid_of "$B"); kill -TERM "$p"
for _ in $(seq 1 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
check "SIGTERM stops the daemon within 10 s, saying so" bash -c "! kill -0 $p 2>/dev/null && grep -q 'stopping' '$work/$B.log'"

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
