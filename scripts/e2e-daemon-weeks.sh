#!/usr/bin/env bash
# What a field node meets when it runs for weeks unattended, tested for real: three nodes in
# network namespaces (each with its own dbus-daemon and avahi-daemon), running `peerlink
# daemon` as a Pi runs it, with A as the hub.
#  1. avahi-daemon restarts (stopped, then started, as a distribution restarts it) on the
#     receiver's side and on the holder's side, while the daemons run: new items still arrive.
#  2. A network change: the hub's interface goes down while an item is in flight, its address
#     changes, it comes up again: the item arrives once and intact, and a new one arrives too.
#  3. A full disk: C's inbox is a small tmpfs, filled up; an item bigger than the free space
#     (less keep_free) waits at its holder (not expired, not lost) and both logs say why; once
#     space is freed it arrives intact, once.
#     The disk fills during a transfer (another file takes the space): the transfer stops
#     with the reason, nothing partial shows in the inbox, the holder keeps the item, and it
#     resumes (the receiver's peerlink_wire_bytes_total shows only the rest crossed) and
#     arrives once, intact, when the file is removed.
#  4. A flood: B queues 300 items for the hub (files in its outbox and messages through its
#     API); C's one file, queued while the flood is under way, arrives before the flood has
#     drained; every flood item arrives exactly once.
#
#   scripts/e2e-daemon-weeks.sh [PEERLINK_BINARY] [--flood N]
# Prints one "ok"/"FAIL" line per check and a closing "N passed, M failed" line.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
bin=$root/.build/debug/peerlink
flood=300
while [ $# -gt 0 ]; do
    case $1 in
        --flood) flood=$2; shift 2 ;;
        -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
        *) bin=$1; shift ;;
    esac
done
[ -x "$bin" ] || { echo "e2e-daemon-weeks: no peerlink binary at $bin (run swift build)" >&2; exit 2; }
lab="$here/lab/iplab.sh"
work=$(mktemp -d /tmp/peerlink-weeks.XXXXXX)
chmod 755 "$work"
export IPLAB_PREFIX=${IPLAB_PREFIX:-plwk}
A=${IPLAB_PREFIX}a
B=${IPLAB_PREFIX}b
C=${IPLAB_PREFIX}c
NAME=e2e-daemon-weeks
# shellcheck source=lab/e2e-lib.sh
. "$here/lab/e2e-lib.sh"
# shellcheck source=lab/daemon-lib.sh
. "$here/lab/daemon-lib.sh"
small_inbox="$work/inbox-$C"
cleanup() {
    mountpoint -q "$small_inbox" && umount -l "$small_inbox"
    e2e_cleanup
}
trap cleanup EXIT

# wire_received HOST — bytes HOST's links read on the wire so far, every medium (its metrics)
wire_received() {
    "$lab" exec "$1" curl -s --max-time 5 http://127.0.0.1:9464/metrics |
        awk '/^peerlink_wire_bytes_total\{direction="received"/ { n += $2 } END { printf "%d\n", n }'
}
# arrives HOST REGEX SECONDS WHAT — waits for a line of HOST's log; says what did not come
arrives() {
    wait_for "$work/$1.log" "$2" "$3" && return 0
    echo "     no $4 in $1's log within $3 s (no line matching /$2/ in $work/$1.log)"
    return 1
}
# intact FILE ORIGINAL — same bytes; says which differ
intact() {
    [ -f "$1" ] || { echo "     $1 is missing"; return 1; }
    [ "$(sha "$1")" = "$(sha "$2")" ] || { echo "     $1 differs from what was sent"; return 1; }
}
# once DIR NAME — exactly one file in DIR carries NAME (a second delivery would be ID-NAME)
once() {
    local n; n=$(find "$1" -maxdepth 1 -type f -name "*$2" | wc -l)
    [ "$n" = 1 ] || { echo "     $n copies of $2 in $1"; return 1; }
}
# items HOST STATES — HOST's outbound items in STATES (GET /v1/items), one JSON line each
items() {
    PYTHONPATH="$root/Examples/python" python3 -c '
import json, sys
from peerlink_client import PeerLinkDaemon
for item in PeerLinkDaemon(sys.argv[1]).items(sys.argv[2]):
    print(json.dumps(item))' "$work/run-$1/daemon.sock" "$2"
}

t0=$(date +%s)
if ! "$lab" up "$work/lab" 3 >"$work/lab-up.log" 2>&1; then
    cat "$work/lab-up.log" >&2
    echo "FAIL lab setup (see above)"; echo "0 passed, 1 failed"; exit 1
fi
echo "lab up in $(( $(date +%s) - t0 )) s"
id_a=$(peerid "$A"); id_b=$(peerid "$B"); id_c=$(peerid "$C")

# C's inbox is a 16 MiB tmpfs (a small SD card), keeping 1 MiB free (section 3).
mkdir -p "$small_inbox"
mount -t tmpfs -o size=16m,mode=0755 tmpfs "$small_inbox" || { echo "FAIL a tmpfs for $C's inbox"; echo "0 passed, 1 failed"; exit 1; }
config "$A"; config "$B"
keep_free='"1M"' config "$C" "inbox = \"$small_inbox\"" 'metrics = "127.0.0.1:9464"'
start "$A"; start "$B"; start "$C"
for h in "$A" "$B" "$C"; do arrives "$h" "running" 20 "start of the daemon" || { echo "FAIL $h's daemon started"; exit 1; }; done
sleep 1  # the three find each other; no items yet, so no sessions

# 1. avahi-daemon restarts. No session exists yet: each item needs discovery through the
# restarted avahi-daemon (the holder must find the receiver's service again).
t=$(date +%s)
"$lab" restart-avahi "$A" >>"$work/avahi.log" 2>&1
check "the receiver's avahi-daemon restarts while the daemons run; its daemon notices and browses again" \
    arrives "$A" "avahi-daemon is back" 15 "notice that avahi-daemon is back"
drop "$B" "$id_a" after-receiver-avahi.bin 1
check "…a new item for it still arrives" arrives "$A" "item received .*after-receiver-avahi.bin" 30 "item after the receiver's avahi restart"
check "…intact, once" bash -c "$(declare -f intact once sha); intact '$work/state-$A/inbox/after-receiver-avahi.bin' '$work/original-after-receiver-avahi.bin' && once '$work/state-$A/inbox' after-receiver-avahi.bin"
"$lab" restart-avahi "$C" >>"$work/avahi.log" 2>&1
check "the holder's avahi-daemon restarts while the daemons run; its daemon notices and browses again" \
    arrives "$C" "avahi-daemon is back" 15 "notice that avahi-daemon is back"
drop "$C" "$id_a" after-holder-avahi.bin 1
check "…a new item from it still arrives" arrives "$A" "item received .*after-holder-avahi.bin" 30 "item after the holder's avahi restart"
check "…intact, once" bash -c "$(declare -f intact once sha); intact '$work/state-$A/inbox/after-holder-avahi.bin' '$work/original-after-holder-avahi.bin' && once '$work/state-$A/inbox' after-holder-avahi.bin"
echo "     avahi restarts: $(( $(date +%s) - t )) s"

# 2. A network change on the hub while B's item is in flight (B's side held to 16 Mbit/s so
# that it is): A's interface goes down, its address changes, it comes up again 5 s later.
t=$(date +%s)
"$lab" exec "$B" tc qdisc add dev lab0 root tbf rate 16mbit burst 64kb latency 100ms
drop "$B" "$id_a" in-flight.bin 16
partial="$work/state-$A/inbox/.peerlink-staging/$id_b/.peerlink-partial"
held=0
for _ in $(seq 1 300); do
    held=$(find "$partial" -name '*.part' -printf '%s\n' 2>/dev/null | sort -n | tail -1)
    [ "${held:-0}" -gt 2097152 ] && break
    sleep 0.1
done
check "the item is in flight (over 2 MiB of 16 held by the receiver)" \
    bash -c "[ '${held:-0}' -gt 2097152 ] || { echo '     the receiver held ${held:-0} bytes after 30 s'; exit 1; }"
old=$("$lab" addr "$A"); new=${old%.*}.$(( ${old##*.} + 100 ))
"$lab" cut "$A"
ip -n "$A" addr del "$old/24" dev lab0 && ip -n "$A" addr add "$new/24" dev lab0
sleep 5
"$lab" restore "$A"
echo "     $A down for 5 s with $held bytes held; its address changed from $old to $new"
check "the item in flight arrives after the link comes back with another address" \
    arrives "$A" "item received .*in-flight.bin" 90 "item that was in flight"
check "…intact" intact "$work/state-$A/inbox/in-flight.bin" "$work/original-in-flight.bin"
sleep 2
check "…exactly once" once "$work/state-$A/inbox" in-flight.bin
check "…and settled once on the holder" bash -c "
    [ \$(grep -c 'delivered .*size=16777216' '$work/$B.log') = 1 ] || { echo '     the holder settled it \$(grep -c 'delivered .*size=16777216' '$work/$B.log') times'; exit 1; }"
"$lab" exec "$B" tc qdisc del dev lab0 root
drop "$C" "$id_a" after-network-change.bin 1
check "a new item for the hub arrives at its new address" \
    arrives "$A" "item received .*after-network-change.bin" 60 "item after the network change"
check "…intact" intact "$work/state-$A/inbox/after-network-change.bin" "$work/original-after-network-change.bin"
echo "     network change: $(( $(date +%s) - t )) s"

# 3. A full disk on the receiving side: C's 16 MiB inbox is filled to leave under 3 MiB free
# (1 MiB of it kept free by keep_free); B's 6 MiB item for C waits at B, and both say why.
t=$(date +%s)
free=$(df -B1 --output=avail "$small_inbox" | tail -1)
head -c "$((free - 3 * 1048576))" /dev/zero >"$small_inbox/filler"
drop "$B" "$id_c" too-big.bin 6
check "the receiver refuses the item for now and says why (no space beyond keep_free)" \
    arrives "$C" "item refused for now: it does not fit in the inbox.*why=no space in the inbox: 6M needed, .* free beyond keep_free \(1M\)" 30 "refusal for want of space"
check "…the holder says why it keeps it" \
    arrives "$B" "peer refused an item for now; trying again later .*why=no space in the inbox: 6M needed" 10 "holder's note of the refusal"
sleep 4
check "…and keeps it queued (not expired, not failed, not delivered)" bash -c "
    $(declare -f items); export root='$root' work='$work'
    q=\$(items '$B' queued,sending | grep -c 'too-big.bin'); x=\$(items '$B' expired,failed,delivered | grep -c 'too-big.bin')
    [ \"\$q\" = 1 ] && [ \"\$x\" = 0 ] || { echo \"     the holder's ledger: \$q queued, \$x settled\"; exit 1; }"
check "…nothing of it in the receiver's inbox" test ! -e "$small_inbox/too-big.bin"
rm -f "$small_inbox/filler"
check "once space is freed it arrives" arrives "$C" "item received .*too-big.bin" 30 "item after space was freed"
check "…intact" intact "$small_inbox/too-big.bin" "$work/original-too-big.bin"
check "…and the holder settles it" arrives "$B" "delivered .*peer=$id_c size=6291456" 20 "settlement of the item"
sleep 1
check "…once" once "$small_inbox" too-big.bin
echo "     full disk: $(( $(date +%s) - t )) s"

# 3b. The disk fills during a transfer: B's 7 MiB item for C is moving (B held to 16 Mbit/s)
# when another file takes all of C's free space. The transfer stops and both say why; nothing
# of it shows in the inbox; B keeps the item; once the filler is gone it resumes and lands once.
t=$(date +%s)
"$lab" exec "$B" tc qdisc add dev lab0 root tbf rate 16mbit burst 64kb latency 100ms
drop "$B" "$id_c" mid-fill.bin 7
partial="$small_inbox/.peerlink-staging/$id_b/.peerlink-partial"
held=0
for _ in $(seq 1 300); do
    held=$(find "$partial" -name '*.part' -printf '%s\n' 2>/dev/null | sort -n | tail -1)
    [ "${held:-0}" -gt 1048576 ] && break
    sleep 0.1
done
check "the item is moving (over 1 MiB of 7 held by the receiver)" \
    bash -c "[ '${held:-0}' -gt 1048576 ] && [ '${held:-0}' -lt 7340032 ] || { echo '     the receiver held ${held:-0} bytes'; exit 1; }"
cat /dev/zero >"$small_inbox/filler" 2>/dev/null
echo "     the filler took the rest of the receiver's disk with ${held:-0} bytes of the item held"
check "the receiver stops the transfer and says why (its disk is full)" \
    arrives "$C" "item transfer stopped; the partial file is kept to resume .*why=the disk is full after" 30 "note that the disk filled"
check "…the holder says why it stopped" \
    arrives "$B" "item transfer stopped; it resumes when the peer is back .*disk is full" 10 "holder's note of the full disk"
sleep 4
check "…nothing of it in the receiver's inbox" bash -c "
    n=\$(find '$small_inbox' -maxdepth 1 -name '*mid-fill*' | wc -l); [ \$n = 0 ] || { echo \"     \$n files named *mid-fill* in the inbox\"; exit 1; }"
check "…the bytes it held are kept, hidden, to resume" bash -c "
    h=\$(find '$partial' -name '*.part' -printf '%s\n' 2>/dev/null | sort -n | tail -1)
    [ \"\${h:-0}\" -gt 1048576 ] || { echo \"     the receiver's part file holds \${h:-0} bytes\"; exit 1; }"
check "…and the holder keeps it queued (not expired, not failed, not delivered)" bash -c "
    $(declare -f items); export root='$root' work='$work'
    q=\$(items '$B' queued,sending | grep -c 'mid-fill.bin'); x=\$(items '$B' expired,failed,delivered | grep -c 'mid-fill.bin')
    [ \"\$q\" = 1 ] && [ \"\$x\" = 0 ] || { echo \"     the holder's ledger: \$q queued, \$x settled\"; exit 1; }"
held=$(find "$partial" -name '*.part' -printf '%s\n' 2>/dev/null | sort -n | tail -1)
wire_before=$(wire_received "$C")
rm -f "$small_inbox/filler"
check "once the filler is removed the item resumes and arrives" arrives "$C" "item received .*mid-fill.bin" 60 "item after the filler was removed"
wire_after=$(wire_received "$C")
resent=$((wire_after - wire_before))
echo "     after the filler went: ${resent} bytes read on the wire for the 7340032-byte item (${held:-0} held)"
check "…resumed from the bytes it held, not sent again from the start" \
    bash -c "[ '${wire_before:-0}' -gt 0 ] && [ $resent -lt $((7340032 - ${held:-0} / 2)) ] || { echo '     $resent bytes read since the filler went (${wire_before:-0} before)'; exit 1; }"
check "…intact" intact "$small_inbox/mid-fill.bin" "$work/original-mid-fill.bin"
check "…and the holder settles it" arrives "$B" "delivered .*peer=$id_c size=7340032" 20 "settlement of the item"
sleep 1
check "…once" once "$small_inbox" mid-fill.bin
check "…settled once" bash -c "
    [ \$(grep -c 'delivered .*size=7340032' '$work/$B.log') = 1 ] || { echo '     the holder settled it \$(grep -c 'delivered .*size=7340032' '$work/$B.log') times'; exit 1; }"
"$lab" exec "$B" tc qdisc del dev lab0 root
echo "     disk filling during a transfer: $(( $(date +%s) - t )) s"

# 4. A flood: B queues $flood items for the hub, two thirds files dropped in its outbox at
# once and the rest messages through its API; C's one file is queued once the hub has taken
# 20 of them; it must arrive while B's items are still coming, and each of B's exactly once.
t=$(date +%s)
files=$((flood * 2 / 3)); messages=$((flood - files))
stage="$work/state-$B/outbox/.flood"
mkdir -p "$stage"
for i in $(seq 1 "$files"); do head -c 32768 /dev/urandom >"$stage/flood-$i.bin"; done
received_from_b() { grep -cE "(item|message) received .*peer=$id_b" "$work/$A.log"; }
before=$(received_from_b)
PYTHONPATH="$root/Examples/python" python3 -c '
import sys
from peerlink_client import PeerLinkDaemon
api = PeerLinkDaemon(sys.argv[1])
for i in range(int(sys.argv[3])):
    api.send_message(sys.argv[2], "flood message %d" % i)' "$work/run-$B/daemon.sock" "$id_a" "$messages" >"$work/flood-api.out" 2>&1 &
flooder=$!; pids+=($!)
mv "$stage"/flood-*.bin "$work/state-$B/outbox/$id_a/"
for _ in $(seq 1 300); do [ $(( $(received_from_b) - before )) -ge 20 ] && break; sleep 0.1; done
head -c 100000 /dev/urandom >"$work/single.bin"
check "while the flood is under way (the hub took 20 of $flood), the other peer queues one file" bash -c "
    [ $(( $(received_from_b) - before )) -ge 20 ] || { echo '     the hub took $(( $(received_from_b) - before )) flood items in 30 s'; exit 1; }
    PEERLINK_RUNTIME_DIR='$work/run-$C' '$bin' send '$work/single.bin' --to '$id_a' >'$work/single.out' 2>&1"
check "…its file arrives" arrives "$A" "item received .*single.bin" 60 "other peer's file"
line=$(grep -n "item received .*single.bin" "$work/$A.log" | head -1 | cut -d: -f1)
taken=$(head -n "${line:-0}" "$work/$A.log" | grep -cE "(item|message) received .*peer=$id_b")
taken=$((taken - before))
echo "     the other peer's file arrived after $taken of the $flood flood items"
check "…before the flood drained (fewer than $flood of its items had arrived)" \
    bash -c "[ $taken -lt $flood ] || { echo '     all $flood flood items arrived first'; exit 1; }"
wait "$flooder"
check "the flood's messages were all queued through the API" \
    bash -c "[ \$(grep -c . '$work/flood-api.out') = 0 ] || { cat '$work/flood-api.out'; exit 1; }"
check "every flood item arrives" bash -c "
    $(declare -f wait_for); for _ in \$(seq 1 900); do [ \$(( \$(grep -cE '(item|message) received .*peer=$id_b' '$work/$A.log') - $before )) -ge $flood ] && exit 0; sleep 0.1; done
    echo \"     \$(( \$(grep -cE '(item|message) received .*peer=$id_b' '$work/$A.log') - $before )) of $flood flood items in 90 s\"; exit 1"
sleep 2
check "…each exactly once (files by name and content, messages by text)" bash -c "
    cd '$work/state-$A/inbox' || exit 1
    n=\$(ls | grep -c 'flood-'); m=\$(awk 1 message-*.txt 2>/dev/null | grep -c '^flood message')
    u=\$(awk 1 message-*.txt 2>/dev/null | sort -u | grep -c '^flood message')
    d=\$(sha256sum flood-*.bin | cut -d' ' -f1 | sort -u | wc -l)
    [ \"\$n\" = $files ] && [ \"\$d\" = $files ] && [ \"\$m\" = $messages ] && [ \"\$u\" = $messages ] ||
        { echo \"     files: \$n named flood-* (\$d distinct), messages: \$m (\$u distinct); expected $files and $messages\"; exit 1; }
    for i in \$(seq 1 $files); do [ -f flood-\$i.bin ] || { echo \"     flood-\$i.bin missing\"; exit 1; }; done"
check "…and the holder settles each once (none left queued)" bash -c "
    $(declare -f items); export root='$root' work='$work'
    for _ in \$(seq 1 50); do [ \$(items '$B' queued,sending | wc -l) = 0 ] && break; sleep 0.2; done
    q=\$(items '$B' queued,sending | wc -l)
    [ \"\$q\" = 0 ] || { echo \"     \$q still queued at the holder\"; exit 1; }"
echo "     flood: $(( $(date +%s) - t )) s"

for h in "$A" "$B" "$C"; do
    check "$h's daemon ran throughout (one start in its log)" bash -c "[ \$(grep -c ' running ' '$work/$h.log') = 1 ] && kill -0 $(pid_of "$h")"
done

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
