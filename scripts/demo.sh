#!/usr/bin/env bash
# PeerLink's main job, shown on one machine: two nodes ("alpha" and "beta") in their own
# network namespaces, each with its own avahi-daemon, find each other over mDNS, authenticate
# with Noise, chat, and transfer a file with a SHA-256 check. Run as root on Debian 12:
#   scripts/demo.sh
#   scripts/demo.sh --radios   the real thing on the lab VM's radios: found over Bluetooth,
#                              session on Bluetooth, a file that moves to Wi-Fi Direct, and the
#                              links' timeline (Hardware/bt-lab/demo-radios.sh)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
cd "$root"
if [ "${1:-}" = "--radios" ]; then
    "$here/setup.sh" --bt-lab || exit 1
    command -v swift >/dev/null || export PATH=/opt/swift/usr/bin:$PATH
    echo "[demo] building peerlink (the first build takes a few minutes)…"
    swift build --product peerlink >/tmp/peerlink-demo-build.log 2>&1 || { tail -30 /tmp/peerlink-demo-build.log; exit 1; }
    exec "$here/bt-lab.sh" run --controllers 2 --radios 2 --no-trace --timeout 600 -- \
        "$root/Hardware/bt-lab/demo-radios.sh" "$(swift build --show-bin-path)/peerlink"
fi
"$here/setup.sh" || exit 1
command -v swift >/dev/null || export PATH=/opt/swift/usr/bin:$PATH
echo "[demo] building peerlink (the first build takes a few minutes)…"
swift build --product peerlink >/tmp/peerlink-demo-build.log 2>&1 || { tail -30 /tmp/peerlink-demo-build.log; exit 1; }
bin="$(swift build --show-bin-path)/peerlink"
lab="$here/lab/iplab.sh"
work=$(mktemp -d /tmp/peerlink-demo.XXXXXX); chmod 755 "$work"
export IPLAB_PREFIX=pldemo
A=${IPLAB_PREFIX}a; B=${IPLAB_PREFIX}b
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; exec 7>&- 2>/dev/null; "$lab" down "$work/lab" >/dev/null 2>&1; rm -rf "$work"; }
trap cleanup EXIT
on() { local h=$1; shift; "$lab" exec "$h" env PEERLINK_CONFIG_DIR="$work/cfg-$h" "$bin" "$@"; }
say() { printf '\n\033[1m[demo] %s\033[0m\n' "$*"; }

say "starting two hosts in network namespaces, each with dbus-daemon and avahi-daemon"
"$lab" up "$work/lab" 2 >/dev/null || { echo "lab failed to start"; exit 1; }
say "alpha's identity (created on first use)"
on "$A" id --set-name alpha
on "$B" id --set-name beta >/dev/null

say "alpha advertises 'field-demo' with discovery info and accepts invitations"
mkfifo "$work/in-a"; exec 7<>"$work/in-a"
on "$A" chat --service field-demo --accept-all --info role=sensor --info site=north <"$work/in-a" >"$work/alpha.log" 2>&1 &
pids+=($!)
on "$A" receive --service field-files --dir "$work/inbox" --accept-all --count 1 >"$work/alpha-files.log" 2>&1 &
pids+=($!)
sleep 1.5

say "beta browses for 3 seconds"
on "$B" browse --service field-demo --timeout 3 2>/dev/null

say "beta invites alpha and sends two lines; alpha answers"
( echo "hello alpha, this is beta"; sleep 1.5; echo "all good on the north site?"; sleep 2.5 ) |
    on "$B" chat --service field-demo --peer alpha --context "demo" 2>&1 &
chat=$!
sleep 2.5; echo "yes, sensors are green" >&7
wait $chat
echo "--- alpha's side:"; sed 's/^/    /' "$work/alpha.log"

say "beta sends a 5 MiB file; alpha verifies its SHA-256 before it takes its final name"
head -c 5242880 /dev/urandom >"$work/readings.bin"
on "$B" send "$work/readings.bin" --service field-files --to alpha
sleep 0.5
echo "--- alpha's side:"; sed 's/^/    /' "$work/alpha-files.log"
if cmp -s "$work/readings.bin" "$work/inbox/readings.bin"; then say "the received file is identical ✔"; else say "the received file differs ✘"; exit 1; fi
