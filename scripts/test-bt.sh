#!/usr/bin/env bash
# Runs PeerLink's Bluetooth tests against the real Linux Bluetooth stack in the lab VM
# (Hardware/bt-lab, scripts/bt-lab.sh): builds the test bundle on the host, boots the VM with
# virtual controllers, runs the lab's XCTest classes inside in groups whose order matters
# (below), and prints a closing plain line "N passed, M failed". Controller pairs: hci0↔hci1
# transports, hci2↔hci3 LE and remote power-off, hci4↔hci5 and hci6↔hci7 discovery over
# Bluetooth only, hci8↔hci9 the CLI over Bluetooth, hci10↔hci11 and hci12↔hci13 the RFCOMM and
# L2CAP session tests (fresh pairs: a re-paired ACL has its links reset) (btvirt crosses ACL handles when one
# controller has links to two others, so each scenario has its own pair).
#
# Usage: scripts/test-bt.sh [--no-le] [--measure] [--filter TEST] [--controllers N] [--results DIR] [--keep-trace]
#   --no-le       leave out the L2CAP LE test (test6; it runs by default since session 5,
#                 when its later dialers started waiting for the first peer to leave)
#   --measure     also run test9L2CAPMessageSizes (which SDU sizes the emulator delivers)
#   --filter T    one XCTest filter instead of the ordered default groups, e.g.
#                 PeerLinkTests.BluetoothLabTests/test1RFCOMMNodesOverVirtualRadios
#   --controllers N  boot N controllers (default 14; the discovery tests skip with fewer)
# Environment: SCRATCH (build dir, default .build-bt), BT_TIMEOUT (seconds, default 600).
# Exit status: 0 all passed; 1 a test failed; 125 the lab failed; 124 timeout; 2 usage.
set -uo pipefail
cd "$(dirname "$0")/.."

SCRATCH=${SCRATCH:-.build-bt}
TIMEOUT=${BT_TIMEOUT:-600}
P=PeerLinkTests
# Tests run in groups, one XCTest run per group, in this order (Hardware/bt-lab/xctest-in-order.sh):
# in the emulator a power cycle or a bluetoothd restart can leave later BR/EDR connections of
# the same boot refused or hung, so tests that only connect go first and the ones that change
# adapter or daemon state go last, the bluetoothd restarts at the very end. (XCTest alone would
# run them by class and method name: BlueZLabTests' power cycles first.)
GROUPS_RUN=(
    "$P.BluetoothLabTests"
    "$P.BluetoothDiscoveryLabTests/test0DoctorReportsBluetoothUsable,$P.BluetoothDiscoveryLabTests/test7DiscoverOverBluetoothOnlyL2CAP,$P.BluetoothCLILabTests"
    "$P.BlueZLabTests/testBrowserFindsServiceDataAdvertAndSurvivesAdapterPowerCycle"
    "$P.BluetoothDiscoveryLabTests/test6DiscoverOverBluetoothOnlyRFCOMMWithRemotePowerCycle"
    "$P.BluetoothDiscoveryLabTests/test10AdapterRemovedAndAddedAgain,$P.BluetoothDiscoveryLabTests/test11AdapterResetBetweenPollsResumesDiscovery,$P.BluetoothDiscoveryLabTests/test12AdvertiserRegistersAgainAfterAPowerCycleBetweenPolls"
    "$P.BlueZLabTests/testAdvertiserIsFoundAndSurvivesPowerCycleAndBluetoothdRestart"
    "$P.BluetoothDiscoveryLabTests/test8BluetoothdRestartWhileAdvertisingAndBrowsing"
)
CONTROLLERS=14
MEASURE=0
LE=1
LAB_ARGS=()
while [[ $# -gt 0 ]]; do
    case $1 in
        --measure) MEASURE=1 ;;
        --le) LE=1 ;;  # the default; kept so older command lines still work
        --no-le) LE=0 ;;
        --filter) GROUPS_RUN=("${2:?--filter needs a test name}"); shift ;;
        --controllers) CONTROLLERS=${2:?--controllers needs a number}; shift ;;
        --results) LAB_ARGS+=(--results "${2:?--results needs a directory}"); shift ;;
        --keep-trace) LAB_ARGS+=(--keep-trace) ;;
        -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "test-bt: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done

echo "[test-bt] building the test bundle (swift build --build-tests --scratch-path $SCRATCH)"
if ! swift build --build-tests --scratch-path "$SCRATCH"; then
    echo "[test-bt] build failed"
    echo "0 passed, 1 failed"
    exit 1
fi
BUNDLE=$(swift build --scratch-path "$SCRATCH" --show-bin-path)/PeerLinkPackageTests.xctest
[[ -x $BUNDLE ]] || { echo "[test-bt] no test bundle at $BUNDLE"; echo "0 passed, 1 failed"; exit 1; }

OUT=$(mktemp "${TMPDIR:-/tmp}/peerlink-test-bt.XXXXXX")
trap 'rm -f "$OUT"' EXIT
scripts/bt-lab.sh run --controllers "$CONTROLLERS" --timeout "$TIMEOUT" "${LAB_ARGS[@]}" -- \
    /usr/bin/env PEERLINK_LAB_MEASURE=$MEASURE PEERLINK_LAB_LE=$LE Hardware/bt-lab/xctest-in-order.sh "$BUNDLE" "${GROUPS_RUN[@]}" 2>&1 | tee "$OUT"
STATUS=${PIPESTATUS[0]}

# One XCTest run per group: count the test cases of all runs.
PASSED=$(grep -cE "^Test Case '.*' passed" "$OUT" || true)
FAILED_CASES=$(grep -cE "^Test Case '.*' failed" "$OUT" || true)
SKIPPED=$(grep -cE "^Test Case '.*' skipped" "$OUT" || true)
RUNS=$(grep -cE 'Executed [0-9]+ tests?, with' "$OUT" || true)
if (( RUNS == 0 )); then
    echo "[test-bt] no XCTest summary (lab exit status $STATUS)"
    echo "0 passed, 1 failed"
    exit $(( STATUS == 0 ? 1 : STATUS ))
fi
# A run that crashed prints no "failed" line for the test it was in: count it as one failure.
if (( STATUS != 0 && FAILED_CASES == 0 )); then FAILED_CASES=1; fi
[[ $SKIPPED -gt 0 ]] && echo "[test-bt] $SKIPPED skipped"
echo "$PASSED passed, $FAILED_CASES failed"
if (( STATUS == 124 || STATUS == 125 )); then exit $STATUS; fi
(( FAILED_CASES == 0 && STATUS == 0 )) && exit 0
exit 1
