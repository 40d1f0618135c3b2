#!/usr/bin/env bash
# An app that uses only the `PeerLink` library links no medium's system library: checks the
# TCP-only example (Examples/tcp-chat, product peerlink-tcp-chat) with ldd, then runs it on
# loopback (one process listens, another connects and sends a line, the listener must print it).
# Ends with "N passed, M failed"; exit status 0 only when nothing failed.
#
#   scripts/ci/check-example-links.sh BIN_DIR     (BIN_DIR: swift build --show-bin-path)
set -uo pipefail
BIN_DIR=${1:?usage: check-example-links.sh BIN_DIR}
EXAMPLE=$BIN_DIR/peerlink-tcp-chat
passed=0; failed=0
ok() { echo "ok   $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1"; failed=$((failed + 1)); }
finish() { echo "$passed passed, $failed failed"; ((failed == 0)); exit; }

if [[ ! -x $EXAMPLE ]]; then
    fail "no example binary at $EXAMPLE (swift build --build-tests builds it)"
    finish
fi

# 1. What it links.
if ! libs=$(ldd "$EXAMPLE" 2>&1); then
    fail "ldd $EXAMPLE failed: $libs"
else
    banned=$(grep -E "lib(dbus-1|avahi-client|avahi-common|bluetooth)\.so" <<<"$libs" | awk '{print $1}' | paste -sd ' ')
    if [[ -n $banned ]]; then
        fail "peerlink-tcp-chat uses only PeerLink yet links ${banned}: a medium's code (or its C module) reached the PeerLink target"
    else
        ok "peerlink-tcp-chat links none of libdbus-1, libavahi-client, libavahi-common, libbluetooth"
    fi
fi

# 2. A line really crosses TCP on loopback.
work=$(mktemp -d /tmp/peerlink-tcp-chat.XXXXXX)
listener=
cleanup() { [[ -n $listener ]] && kill "$listener" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
line="hello from the example $$-$RANDOM"
for attempt in 1 2 3; do  # a port taken by someone else: try another
    port=$((20000 + RANDOM % 40000))
    timeout 30 "$EXAMPLE" --listen "$port" --name listener </dev/null >"$work/listener.log" 2>&1 &
    listener=$!
    for _ in $(seq 50); do  # up to 5 s for the listener to say it listens
        grep -qs "^listening on port" "$work/listener.log" && break
        kill -0 "$listener" 2>/dev/null || break
        sleep 0.1
    done
    grep -q "^listening on port" "$work/listener.log" && break
    kill "$listener" 2>/dev/null; wait "$listener" 2>/dev/null; listener=
done
if [[ -z $listener ]]; then
    fail "the listener did not start; its output:"; sed 's/^/    /' "$work/listener.log"
    finish
fi
printf '%s\n' "$line" | timeout 20 "$EXAMPLE" --connect "127.0.0.1:$port" --name sender >"$work/sender.log" 2>&1
rc=$?
for _ in $(seq 50); do grep -qxF "$line" "$work/listener.log" && break; sleep 0.1; done
if ((rc != 0)); then
    fail "the connecting side exited with status $rc (124: timed out); its output:"; sed 's/^/    /' "$work/sender.log"
elif grep -qxF "$line" "$work/listener.log"; then
    ok "a line sent by --connect 127.0.0.1:$port arrived at --listen $port"
else
    fail "the line did not arrive at the listener within 5 s; listener's output:"; sed 's/^/    /' "$work/listener.log"
    echo "    sender's output:"; sed 's/^/    /' "$work/sender.log"
fi
sleep 0.3  # the sender has left: the listener must outlive that
if kill -0 "$listener" 2>/dev/null; then
    ok "the listener still runs after the sender left"
else
    wait "$listener"; status=$?; listener=
    fail "the listener exited with status $status after the sender left; its output:"; sed 's/^/    /' "$work/listener.log"
fi
finish
