#!/usr/bin/env bash
# The transport-selection harness in the IP lab: each scenario runs between two PeerLink nodes
# in two network namespaces over kernel TCP (`peerlink-harness run --backend iplab`), one at a
# time. Needs root. Bluetooth links are emulated by IP paths, and a link's one-way delay is
# added by a userspace relay (see docs/HARNESS.md, "IP-lab backend").
#
#   scripts/harness-iplab.sh [PEERLINK_HARNESS_BINARY]
#   SCENARIOS="wifi-only bt-dies-stay-wifi" REPEAT=3 OUT=results/harness-iplab scripts/harness-iplab.sh
#
# Prints one "ok"/"FAIL" line per run (with its largest delivery gap) and a closing
# "summary: N passed, M failed" line; exit status 1 when a run failed, 2 when it cannot start.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
bin=${1:-$root/.build/debug/peerlink-harness}
[ -x "$bin" ] || { echo "harness-iplab: no peerlink-harness binary at $bin (run swift build)" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "harness-iplab: needs root (network namespaces, veth, nftables, tc)" >&2; exit 2; }
scenarios=${SCENARIOS:-both-from-start bt-dies-stay-wifi bt-only flapping-at-half-rate flapping-under-load loss-5pct-preferred silent-cut-with-copies wifi-appears-upgrade wifi-dies-mid-transfer wifi-only}
repeat=${REPEAT:-1}
out=${OUT:-$root/results/harness-iplab}
mkdir -p "$out"
passed=0; failed=0
for ((i = 1; i <= repeat; i++)); do
    for s in $scenarios; do
        file="$root/scenarios/$s.toml"
        [ -f "$file" ] || { echo "FAIL $s: no file $file"; failed=$((failed + 1)); continue; }
        # Per step: the scenario's own duration plus a minute for setup, agents and teardown.
        dur=$(sed -n 's/^duration *= *\([0-9_]*\).*/\1/p' "$file" | tr -d _)
        limit=$(( ${dur:-30000} / 1000 + 60 ))
        log="$out/$s.$i.txt"
        start=$(date +%s%N)
        timeout --signal=INT --kill-after=10 "$limit" "$bin" run --backend iplab --out "$out" "$file" >"$log" 2>&1
        rc=$?
        secs=$(( ($(date +%s%N) - start) / 1000000 ))
        gap=$(sed -n 's/.*largest delivery gap \([0-9]* ms\).*/\1/p' "$log" | head -n 1)
        if [ "$rc" = 0 ]; then
            echo "ok   $s (run $i, ${secs} ms, largest gap ${gap:-n/a})"; passed=$((passed + 1))
        else
            echo "FAIL $s (run $i, exit $rc$([ "$rc" = 124 ] && echo ", timed out after ${limit} s"))"; failed=$((failed + 1))
            grep -E "FAIL|Error" "$log" | sed 's/^/     /' | head -n 8
        fi
    done
done
# A run that was killed must not leave its namespaces behind.
leftover=$(ip netns list | grep -c '^plh-' || true)
[ "$leftover" = 0 ] || { echo "FAIL namespaces left behind: $(ip netns list | grep '^plh-' | tr '\n' ' ')"; failed=$((failed + 1)); }
echo "summary: $passed passed, $failed failed"
[ "$failed" = 0 ]
