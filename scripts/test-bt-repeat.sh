#!/usr/bin/env bash
# The same two Bluetooth nodes meeting again and again (BluetoothRepeatSessionLabTests) in the
# lab VM: ten sessions in a row over RFCOMM, over L2CAP BR/EDR and over L2CAP LE, and sessions
# after a bluetoothd restart and after one side removed the other's device, each with the CLI
# in fresh processes. One boot with four controllers (hci0 -> hci1 BR/EDR, hci2 -> hci3 LE);
# about 7 minutes on a 2-core TCG host (2026-11-27: 390 s of tests, 419 s with boot), or two
# steps of about 3.5 minutes each with --part. Prints a closing plain line "N passed, M failed".
#
# Usage: scripts/test-bt-repeat.sh [--part 1|2] [--filter TEST] [--results DIR] [--keep-trace]
#   --part 1      RFCOMM and L2CAP BR/EDR series only; --part 2 the LE series, the bluetoothd
#                 restart and the removal (each part boots the VM once)
#   --filter T    one XCTest filter, e.g. PeerLinkTests.BluetoothRepeatSessionLabTests/test3TenLESessionsBetweenTheSamePair
# Environment: SCRATCH (build dir, default .build-bt), BT_TIMEOUT (seconds, default 480),
#   PEERLINK_LAB_BTVIRT (scripts/bt-lab.sh: `btvirt` runs Debian's packaged emulator).
# Exit status: 0 all passed; 1 a test failed; 125 the lab failed; 124 timeout; 2 usage.
set -uo pipefail
cd "$(dirname "$0")/.."

SCRATCH=${SCRATCH:-.build-bt}
TIMEOUT=${BT_TIMEOUT:-480}
FILTER=PeerLinkTests.BluetoothRepeatSessionLabTests
LAB_ARGS=()
while [[ $# -gt 0 ]]; do
    case $1 in
        --filter) FILTER=${2:?--filter needs a test name}; shift ;;
        --part)
            C=PeerLinkTests.BluetoothRepeatSessionLabTests
            case ${2:-} in
                1) FILTER="$C/test1TenRFCOMMSessionsBetweenTheSamePair,$C/test2TenL2CAPSessionsBetweenTheSamePair" ;;
                2) FILTER="$C/test3TenLESessionsBetweenTheSamePair,$C/test4SessionsAfterBluetoothdRestart,$C/test5SessionsAfterOneSideRemovesTheOther" ;;
                *) echo "test-bt-repeat: --part takes 1 or 2" >&2; exit 2 ;;
            esac
            shift ;;
        --results) LAB_ARGS+=(--results "${2:?--results needs a directory}"); shift ;;
        --keep-trace) LAB_ARGS+=(--keep-trace) ;;
        -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "test-bt-repeat: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done

echo "[test-bt-repeat] building the test bundle (swift build --build-tests --scratch-path $SCRATCH)"
if ! swift build --build-tests --scratch-path "$SCRATCH"; then
    echo "[test-bt-repeat] build failed"
    echo "0 passed, 1 failed"
    exit 1
fi
BUNDLE=$(swift build --scratch-path "$SCRATCH" --show-bin-path)/PeerLinkPackageTests.xctest
[[ -x $BUNDLE ]] || { echo "[test-bt-repeat] no test bundle at $BUNDLE"; echo "0 passed, 1 failed"; exit 1; }

OUT=$(mktemp "${TMPDIR:-/tmp}/peerlink-test-bt-repeat.XXXXXX")
trap 'rm -f "$OUT"' EXIT
scripts/bt-lab.sh run --controllers 4 --timeout "$TIMEOUT" "${LAB_ARGS[@]}" -- "$BUNDLE" "$FILTER" 2>&1 | tee "$OUT"
STATUS=${PIPESTATUS[0]}

PASSED=$(grep -cE "^Test Case '.*' passed" "$OUT" || true)
FAILED=$(grep -cE "^Test Case '.*' failed" "$OUT" || true)
SKIPPED=$(grep -cE "^Test Case '.*' skipped" "$OUT" || true)
if ! grep -qE 'Executed [0-9]+ tests?, with' "$OUT"; then
    echo "[test-bt-repeat] no XCTest summary (lab exit status $STATUS)"
    echo "0 passed, 1 failed"
    exit $(( STATUS == 0 ? 1 : STATUS ))
fi
# A run that crashed prints no "failed" line for the test it was in: count it as one failure.
if (( STATUS != 0 && FAILED == 0 )); then FAILED=1; fi
(( SKIPPED > 0 )) && echo "[test-bt-repeat] $SKIPPED skipped"
echo "$PASSED passed, $FAILED failed"
if (( STATUS == 124 || STATUS == 125 )); then exit $STATUS; fi
(( FAILED == 0 && STATUS == 0 )) && exit 0
exit 1
