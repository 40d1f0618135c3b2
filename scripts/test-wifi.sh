#!/usr/bin/env bash
# Runs PeerLink's Wi-Fi Direct and soft-AP tests on real components in the lab VM, and the
# upgrade end to end (a Bluetooth session negotiating a Wi-Fi Direct group for a file,
# WiFiDirectUpgradeLabTests, with bluetoothd and two btvirt controllers as well), and a radio
# a real NetworkManager manages (NetworkManagerLabTests, Hardware/bt-lab/guest-nm.sh): two
# mac80211_hwsim radios, each with its own wpa_supplicant on D-Bus started as Debian's
# wpa_supplicant.service starts it (scripts/bt-lab.sh --radios 2, Hardware/bt-lab/
# guest-wifi.sh). Builds the test bundle on the host, boots the VM, runs the Wi-Fi lab XCTest
# classes inside and prints a closing line "N passed, M failed". The figures the tests
# measure (formation, join, address, copy throughput) land in RESULTS/wifi-figures.txt.
#
# Usage: scripts/test-wifi.sh [--filter TEST] [--results DIR]
#   --filter T    one XCTest filter instead of the default classes
#   --results D   keep the lab's results (logs, wpa_supplicant.log, wifi-figures.txt) in D
# Environment: SCRATCH (build dir, default .build-bt, shared with test-bt.sh), WIFI_TIMEOUT
# (seconds, default 600). Only one lab VM runs at a time: wrap it in
# `flock /tmp/peerlink-vm.lock` when others use the machine.
# Exit status: 0 all passed; 1 a test failed; 125 the lab failed; 124 timeout; 2 usage.
set -uo pipefail
cd "$(dirname "$0")/.."

SCRATCH=${SCRATCH:-.build-bt}
TIMEOUT=${WIFI_TIMEOUT:-600}
FILTER="PeerLinkTests.WiFiDirectLabTests,PeerLinkTests.WiFiSetupFailureLabTests,PeerLinkTests.DoctorWiFiLabTests,PeerLinkTests.WiFiDirectUpgradeLabTests,PeerLinkTests.NetworkManagerLabTests"
LAB_ARGS=()
while [[ $# -gt 0 ]]; do
    case $1 in
        --filter) FILTER=${2:?--filter needs a test name}; shift ;;
        --results) LAB_ARGS+=(--results "${2:?--results needs a directory}"); shift ;;
        -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "test-wifi: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done

echo "[test-wifi] building the test bundle (swift build --build-tests --scratch-path $SCRATCH)"
if ! swift build --build-tests --scratch-path "$SCRATCH"; then
    echo "[test-wifi] build failed"
    echo "0 passed, 1 failed"
    exit 1
fi
BUNDLE=$(swift build --scratch-path "$SCRATCH" --show-bin-path)/PeerLinkPackageTests.xctest
[[ -x $BUNDLE ]] || { echo "[test-wifi] no test bundle at $BUNDLE"; echo "0 passed, 1 failed"; exit 1; }

OUT=$(mktemp "${TMPDIR:-/tmp}/peerlink-test-wifi.XXXXXX")
trap 'rm -f "$OUT"' EXIT
# Two controllers (the upgrade tests' Bluetooth session); no btmon (it costs CPU in the VM).
scripts/bt-lab.sh run --controllers 2 --radios 2 --no-trace --timeout "$TIMEOUT" "${LAB_ARGS[@]}" -- \
    "$BUNDLE" "$FILTER" 2>&1 | tee "$OUT"
STATUS=${PIPESTATUS[0]}

PASSED=$(grep -cE "^Test Case '.*' passed" "$OUT" || true)
FAILED_CASES=$(grep -cE "^Test Case '.*' failed" "$OUT" || true)
SKIPPED=$(grep -cE "^Test Case '.*' skipped" "$OUT" || true)
if ! grep -qE 'Executed [0-9]+ tests?, with' "$OUT"; then
    echo "[test-wifi] no XCTest summary (lab exit status $STATUS)"
    echo "0 passed, 1 failed"
    exit $(( STATUS == 0 ? 1 : STATUS ))
fi
if (( STATUS != 0 && FAILED_CASES == 0 )); then FAILED_CASES=1; fi
[[ $SKIPPED -gt 0 ]] && echo "[test-wifi] $SKIPPED skipped"
echo "$PASSED passed, $FAILED_CASES failed"
if (( STATUS == 124 || STATUS == 125 )); then exit $STATUS; fi
(( FAILED_CASES == 0 && STATUS == 0 )) && exit 0
exit 1
