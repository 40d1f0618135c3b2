#!/usr/bin/env bash
# Inside the lab VM (scripts/demo.sh --radios): two PeerLink CLIs, each with its own Bluetooth
# controller and Wi-Fi radio and no IP network in common, find each other over Bluetooth,
# start a session there, and move a file that makes them negotiate a Wi-Fi Direct group.
# Prints both sides' output with times, then the links' timeline.
#   demo-radios.sh PEERLINK_BINARY
set -uo pipefail
bin=${1:?peerlink binary}
work=$(mktemp -d /tmp/peerlink-radios.XXXXXX)
t0=$(date +%s%N)
stamp() { while IFS= read -r line; do printf '%6.2f s  %s\n' "$(( $(date +%s%N) - t0 ))e-9" "$line"; done; }
say() { printf '\n\033[1m[demo] %s\033[0m\n' "$*"; }
export PEERLINK_RUNTIME_DIR=$work/run
mkdir -p "$work/run" && chmod 700 "$work/run"
# Every stage line-buffered (tr too: a pipe would buffer it by the block), so each line is
# stamped when peerlink prints it; progress bars (\r) become lines.
alpha() { env PEERLINK_CONFIG_DIR="$work/cfg-a" PEERLINK_WPA_SUPPLICANT_BUS="$PEERLINK_LAB_WIFI0_BUS" stdbuf -oL "$bin" "$@"; }
beta() { env PEERLINK_CONFIG_DIR="$work/cfg-b" PEERLINK_WPA_SUPPLICANT_BUS="$PEERLINK_LAB_WIFI1_BUS" stdbuf -oL "$bin" "$@"; }
tidy() { stdbuf -oL tr '\r' '\n' | grep --line-buffered -v '^\s*$' | grep --line-buffered -vE '\] +[0-9]+% '; }
alpha id --set-name alpha >/dev/null; beta id --set-name beta >/dev/null

say "what each node can do (peerlink doctor, Wi-Fi part)"
alpha doctor --wifi "$PEERLINK_LAB_WIFI0" 2>&1 | sed -n '/^wifi-direct/,$p'
say "no IP network in common: $(ip -br addr | grep -c 'UP.*inet ') interfaces with an IPv4 address besides loopback"

say "alpha receives over Bluetooth (hci1) with Wi-Fi Direct upgrades on $PEERLINK_LAB_WIFI0"
alpha receive --service radios --media bluetooth,wifi-direct --adapter hci1 --wifi "$PEERLINK_LAB_WIFI0" \
    --dir "$work/inbox" --accept-all --count 1 2>&1 | tidy | stamp >"$work/alpha.log" &
rx=$!
head -c $((32 << 20)) /dev/urandom >"$work/survey.bin"
sleep 3
say "beta sends 32 MiB over Bluetooth (hci0) with Wi-Fi Direct upgrades on $PEERLINK_LAB_WIFI1"
beta send "$work/survey.bin" --to alpha --service radios --media bluetooth,wifi-direct --adapter hci0 --wifi "$PEERLINK_LAB_WIFI1" \
    2>&1 | tidy | stamp | tee "$work/beta.log"
wait "$rx"
say "alpha's side"
cat "$work/alpha.log"
say "timeline (which link carried what, when, and why)"
grep -hE "link [0-9]+ to .* (up|down)|traffic to .* now on link|wifi-direct with" "$work/beta.log" | sed 's/^/  /'
if cmp -s "$work/survey.bin" "$work/inbox/survey.bin"; then say "the received file is identical ✔"; else say "the received file differs ✘"; exit 1; fi
