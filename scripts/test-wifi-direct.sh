#!/usr/bin/env bash
# Runs the Wi-Fi Direct upgrade end to end in the lab VM: two btvirt controllers and two
# mac80211_hwsim radios, stock bluetoothd and one wpa_supplicant per radio (D-Bus only, as
# Debian's wpa_supplicant.service starts it), no access point and no shared IP network. The
# session comes up over RFCOMM; a file starts the negotiation; the bytes cross the simulated
# air (Tests/PeerLinkTests/WiFiDirectUpgradeLabTests.swift). Prints "N passed, M failed".
#
# Usage: scripts/test-wifi-direct.sh [--filter TEST] [--results DIR]
# Environment: SCRATCH (build dir, default .build-bt), WFD_TIMEOUT (seconds, default 900).
set -uo pipefail
cd "$(dirname "$0")/.."
SCRATCH=${SCRATCH:-.build-bt}
TIMEOUT=${WFD_TIMEOUT:-900}
FILTER=PeerLinkTests.WiFiDirectUpgradeLabTests
LAB_ARGS=()
while [[ $# -gt 0 ]]; do
    case $1 in
        --filter) FILTER=${2:?--filter needs a test name}; shift ;;
        --results) LAB_ARGS+=(--results "${2:?--results needs a directory}"); shift ;;
        -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "test-wifi-direct: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
echo "[test-wifi-direct] building the test bundle (swift build --build-tests --scratch-path $SCRATCH)"
swift build --build-tests --scratch-path "$SCRATCH" || { echo "0 passed, 1 failed"; exit 1; }
BUNDLE=$(swift build --scratch-path "$SCRATCH" --show-bin-path)/PeerLinkPackageTests.xctest
OUT=$(mktemp "${TMPDIR:-/tmp}/peerlink-test-wfd.XXXXXX")
trap 'rm -f "$OUT"' EXIT
scripts/bt-lab.sh run --controllers 2 --radios 2 --no-trace --timeout "$TIMEOUT" "${LAB_ARGS[@]}" -- \
    Hardware/bt-lab/xctest-in-order.sh "$BUNDLE" "$FILTER" 2>&1 | tee "$OUT"
STATUS=${PIPESTATUS[0]}
PASSED=$(grep -cE "^Test Case '.*' passed" "$OUT" || true)
FAILED=$(grep -cE "^Test Case '.*' failed" "$OUT" || true)
SKIPPED=$(grep -cE "^Test Case '.*' skipped" "$OUT" || true)
if ! grep -qE 'Executed [0-9]+ tests?, with' "$OUT"; then
    echo "[test-wifi-direct] no XCTest summary (lab exit status $STATUS)"; echo "0 passed, 1 failed"
    exit $(( STATUS == 0 ? 1 : STATUS ))
fi
if (( STATUS != 0 && FAILED == 0 )); then FAILED=1; fi
(( SKIPPED > 0 )) && echo "[test-wifi-direct] $SKIPPED skipped (no radios in this boot?)"
echo "$PASSED passed, $FAILED failed"
(( FAILED == 0 && STATUS == 0 ))
