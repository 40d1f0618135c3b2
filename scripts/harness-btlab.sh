#!/usr/bin/env bash
# Runs transport-selection scenarios on the Bluetooth lab backend (docs/HARNESS.md): builds
# peerlink-harness on the host, boots the lab VM (scripts/bt-lab.sh) with two virtual
# controllers once per scenario, and runs `peerlink-harness run --backend btlab` inside, where a
# `bluetooth` link is real RFCOMM between two controllers, a `wifi` link is TCP over a
# dummy interface cut with nftables, and a `wifi-direct` link is a group the nodes negotiate
# over their session on two hwsim radios (the lab boots them, with one wpa_supplicant each,
# for a scenario that has such a link). Reports (JSON + SVG) go to results/harness-btlab/.
#
# Usage: scripts/harness-btlab.sh [SCENARIO.toml ...]
#   (default: every scenario in scenarios/ that this backend can run, and scenarios/radios/;
#    loss-5pct-preferred needs loss on a Bluetooth link, which a real radio here cannot produce)
# Environment: SCRATCH (build dir, default .build-bt), CONFIG (release or debug, default
#   release: the emulated CPU is the bottleneck in the VM, and a debug build cannot carry
#   flapping-under-load's 1000 messages/s there), BT_TIMEOUT (seconds, default 600),
#   PEERLINK_HARNESS_TRACE=1 (progress of each run on stderr).
# Ends with one line "N passed, M failed". Exit status: 0 all passed, 1 a scenario failed,
# 124 timeout, 125 the lab failed.
set -uo pipefail
cd "$(dirname "$0")/.."
SCRATCH=${SCRATCH:-.build-bt}
TIMEOUT=${BT_TIMEOUT:-600}
CONFIG=${CONFIG:-release}
case ${1:-} in -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
if (($#)); then
    FILES=("$@")
else
    FILES=()
    for f in scenarios/*.toml; do
        [[ $(basename "$f") == loss-5pct-preferred.toml ]] && continue
        FILES+=("$f")
    done
    FILES+=(scenarios/radios/*.toml)
fi
echo "[harness-btlab] building peerlink-harness (swift build -c $CONFIG --scratch-path $SCRATCH)"
if ! swift build -c "$CONFIG" --scratch-path "$SCRATCH" --product peerlink-harness; then
    echo "[harness-btlab] build failed"; echo "0 passed, ${#FILES[@]} failed"; exit 1
fi
BIN=$(swift build -c "$CONFIG" --scratch-path "$SCRATCH" --show-bin-path)/peerlink-harness
OUT=results/harness-btlab
mkdir -p "$OUT"
LOG=$(mktemp "${TMPDIR:-/tmp}/peerlink-harness-btlab.XXXXXX")
trap 'rm -f "$LOG"' EXIT
# One boot per scenario: after a controller was powered off mid-session, the emulator has
# hung the next scenario's RFCOMM connect on another controller pair in the same boot.
passed=0 failed=0 worst=0
for f in "${FILES[@]}"; do
    name=$(basename "$f" .toml)
    LAB=$(mktemp -d "${TMPDIR:-/tmp}/peerlink-harness-btlab-$name.XXXXXX")
    # A wifi-direct link needs the lab's Wi-Fi radios too.
    radios=(); grep -qE '^medium *= *"wifi-direct"' "$f" && radios=(--radios 2)
    echo "[harness-btlab] $name: booting the lab${radios:+ with two Wi-Fi radios}"
    # The repository is read-only inside the VM: reports go to the lab's results directory.
    scripts/bt-lab.sh run --controllers 2 "${radios[@]}" --timeout "$TIMEOUT" --results "$LAB" -- \
        /usr/bin/env PEERLINK_HARNESS_TRACE="${PEERLINK_HARNESS_TRACE:-0}" \
        /bin/sh -c '"$0" run --backend btlab --out "$PEERLINK_LAB_RESULTS/harness" "$1"' "$BIN" "$f" >"$LOG" 2>&1
    status=$?
    grep -vE '^Instance (added|removed)' "$LOG" | sed -n '/stage command$/,/stage command-done/p' | grep -v '^\[bt-lab\]'
    cp "$LAB"/harness/* "$OUT"/ 2>/dev/null
    if grep -qE '^1 passed, 0 failed$' "$LOG"; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        grep -E '^\[bt-lab\] (FAILED|timings)' "$LOG"
        echo "[harness-btlab] $name: FAILED (lab exit status $status; logs in $LAB)"
        ((status > worst)) && worst=$status
    fi
done
echo "[harness-btlab] reports in $OUT"
echo "$passed passed, $failed failed"
((failed == 0)) && exit 0
((worst >= 124)) && exit "$worst"
exit 1
