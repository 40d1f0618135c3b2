#!/usr/bin/env bash
# The same two Bluetooth nodes meeting again and again (BluetoothRepeatSessionLabTests) in the
# lab VM: ten sessions in a row over RFCOMM, over L2CAP BR/EDR and over L2CAP LE, and sessions
# after a bluetoothd restart and after one side removed the other's device, each with the CLI
# in fresh processes. One boot with four controllers (hci0 -> hci1 BR/EDR, hci2 -> hci3 LE);
# about 7 minutes on a 2-core TCG host (2026-11-27: 390 s of tests, 419 s with boot). Runs
# the `repeat` lines of Tests/lab-groups.txt through scripts/test-bt.sh --repeat, which judges
# the output and prints a closing plain line "N passed, M failed".
#
# Usage: scripts/test-bt-repeat.sh [--part 1|2] [--filter TEST] [--results DIR] [--keep-trace]
#   --part 1      RFCOMM and L2CAP BR/EDR series only; --part 2 the LE series, the bluetoothd
#                 restart and the removal
#   --filter T    one XCTest filter, e.g. PeerLinkTests.BluetoothRepeatSessionLabTests/test3TenLESessionsBetweenTheSamePair
# Environment: SCRATCH (build dir, default .build-bt), BT_TIMEOUT (seconds, default 840),
#   PEERLINK_LAB_BTVIRT (scripts/bt-lab.sh: `btvirt` runs Debian's packaged emulator).
# Exit status: 0 all passed; 1 a test failed; 125 the lab failed; 124 timeout; 2 usage.
set -uo pipefail
cd "$(dirname "$0")/.."
ARGS=()
while [[ $# -gt 0 ]]; do
    case $1 in
        --part)
            line=$(awk '!/^[[:space:]]*(#|$)/ && $1 == "repeat" {print $2}' Tests/lab-groups.txt | sed -n "${2:-x}p")
            [[ -n $line ]] || { echo "test-bt-repeat: --part takes 1 or 2" >&2; exit 2; }
            ARGS+=(--filter "$line"); shift ;;
        -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) ARGS+=("$1") ;;
    esac
    shift
done
exec scripts/test-bt.sh --repeat "${ARGS[@]}"
