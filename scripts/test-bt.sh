#!/usr/bin/env bash
# Runs PeerLink's Bluetooth tests against the real Linux Bluetooth stack in the lab VM
# (Hardware/bt-lab, scripts/bt-lab.sh): builds the test bundle on the host, boots the VM with
# ten virtual controllers (pairs: hci0↔hci1 transports, hci2↔hci3 LE and remote power-off,
# hci4↔hci5 and hci6↔hci7 discovery over Bluetooth only, hci8↔hci9 the CLI over Bluetooth;
# the emulator refuses BR/EDR connections after a few within one pair), runs the XCTest classes PeerLinkTests.BlueZLabTests (BlueZ
# D-Bus browsing and advertising), PeerLinkTests.BluetoothLabTests (transports, sessions) and
# PeerLinkTests.BluetoothDiscoveryLabTests (two nodes over Bluetooth alone) inside, and prints
# a closing plain line "N passed, M failed".
#
# Usage: scripts/test-bt.sh [--all] [--le] [--measure] [--filter TEST] [--results DIR] [--keep-trace]
#   --all         also the tests that do not pass in the emulator yet (listed in this script)
#   --le          also run the L2CAP LE test (flaky under emulation: LE connects time out
#                 or are refused in about one run of three; CI leaves it out)
#   --measure     also run test9L2CAPMessageSizes (which SDU sizes the emulator delivers)
#   --filter T    XCTest filter (default: the classes above, less the tests --all adds), e.g.
#                 PeerLinkTests.BluetoothLabTests/test1RFCOMMNodesOverVirtualRadios
# Environment: SCRATCH (build dir, default .build-bt), BT_TIMEOUT (seconds, default 600).
# Exit status: 0 all passed; 1 a test failed; 125 the lab failed; 124 timeout; 2 usage.
set -uo pipefail
cd "$(dirname "$0")/.."

SCRATCH=${SCRATCH:-.build-bt}
TIMEOUT=${BT_TIMEOUT:-600}
ALL=PeerLinkTests.BlueZLabTests,PeerLinkTests.BluetoothLabTests,PeerLinkTests.BluetoothDiscoveryLabTests,PeerLinkTests.BluetoothCLILabTests
# The default set is the one that has passed in every CI rehearsal (four controllers). The
# Bluetooth-only discovery tests (BluetoothDiscoveryLabTests, BluetoothCLILabTests) and the
# advertiser's power-cycle test need ten controllers and do not pass reliably in the emulator
# yet — advert not seen again after a power cycle, EACCES after a bluetoothd restart (no
# agent to pair again), one CLI run that found no peer, and one boot where test1/test2 were
# refused after them — so they run only with --all.
FILTER=PeerLinkTests.BlueZLabTests/testBrowserFindsServiceDataAdvertAndSurvivesAdapterPowerCycle,PeerLinkTests.BluetoothLabTests
CONTROLLERS=4
MEASURE=0
LE=0
LAB_ARGS=()
while [[ $# -gt 0 ]]; do
    case $1 in
        --measure) MEASURE=1 ;;
        --le) LE=1 ;;
        --filter) FILTER=${2:?--filter needs a test name}; shift ;;
        --all) FILTER=$ALL; CONTROLLERS=10 ;;
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
    /usr/bin/env PEERLINK_LAB_MEASURE=$MEASURE PEERLINK_LAB_LE=$LE "$BUNDLE" "$FILTER" 2>&1 | tee "$OUT"
STATUS=${PIPESTATUS[0]}

# XCTest's summary of the outermost suite: "Executed N tests, with [K tests skipped and] M failures".
SUMMARY=$(grep -E 'Executed [0-9]+ tests?, with' "$OUT" | tail -n 1)
if [[ -z $SUMMARY ]]; then
    echo "[test-bt] no XCTest summary (lab exit status $STATUS)"
    echo "0 passed, 1 failed"
    exit $(( STATUS == 0 ? 1 : STATUS ))
fi
EXECUTED=$(sed -E 's/.*Executed ([0-9]+) tests?.*/\1/' <<<"$SUMMARY")
SKIPPED=$(grep -oE '[0-9]+ tests? skipped' <<<"$SUMMARY" | grep -oE '^[0-9]+' || echo 0)
FAILURES=$(sed -E 's/.* ([0-9]+) failures?.*/\1/' <<<"$SUMMARY")
# XCTest counts failed assertions; count failed test cases for the "failed" figure.
FAILED_CASES=$(grep -cE "^Test Case '.*' failed" "$OUT" || true)
(( FAILED_CASES == 0 && FAILURES > 0 )) && FAILED_CASES=$FAILURES
PASSED=$(( EXECUTED - SKIPPED - FAILED_CASES ))
(( PASSED < 0 )) && PASSED=0
[[ $SKIPPED -gt 0 ]] && echo "[test-bt] $SKIPPED skipped"
echo "$PASSED passed, $FAILED_CASES failed"
if (( STATUS == 124 || STATUS == 125 )); then exit $STATUS; fi
(( FAILED_CASES == 0 && STATUS == 0 )) && exit 0
exit 1
