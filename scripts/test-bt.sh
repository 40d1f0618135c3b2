#!/usr/bin/env bash
# Runs PeerLink's Bluetooth tests against the real Linux Bluetooth stack in the lab VM
# (Hardware/bt-lab, scripts/bt-lab.sh): builds the test bundle on the host, boots the VM with
# virtual controllers once, and runs there, in order: with --smoke the smoke suite on a pair
# of its own (hci14/hci15), then the lab's XCTest groups (the `bt` lines of
# Tests/lab-groups.txt, one XCTest run per line, in the order that file gives and explains).
# The host then judges the whole output (scripts/ci/xctest_verdict.py): a test that crashed or
# hung (named, with its threads' stacks), a selected test that never ran, a filter that
# selects nothing, a skip Tests/expected-skips.txt does not list, or a failed smoke check fails
# the step. Prints a closing line "N passed, M failed".
#
# Controller pairs: hci0↔hci1 transports, hci2↔hci3 LE and remote power-off, hci4↔hci5 and
# hci6↔hci7 discovery over Bluetooth only, hci8↔hci9 the CLI over Bluetooth, hci10↔hci11 and
# hci12↔hci13 the RFCOMM and L2CAP session tests, hci14↔hci15 the smoke suite (btvirt crosses
# ACL handles when one controller has links to two others, so each scenario has its own pair).
#
# With --repeat it runs the `repeat` lines instead, in a boot of their own with four
# controllers: the same two nodes meeting again and again with the CLI in fresh processes
# (BluetoothRepeatSessionLabTests; scripts/test-bt-repeat.sh runs it so). With --replug the
# `replug` lines, in another boot of four controllers: an adapter unplugged and plugged in
# again under a running field daemon.
#
# Usage: scripts/test-bt.sh [--smoke | --repeat | --replug] [--no-le] [--measure] [--filter TEST] [--controllers N] [--results DIR] [--keep-trace]
#   --smoke       also run the smoke suite (Hardware/bt-lab/smoke.py) in the same boot, first
#   --repeat      the repeat-session lines of Tests/lab-groups.txt (four controllers)
#   --replug      the replug lines of Tests/lab-groups.txt (four controllers)
#   --no-le       leave out the L2CAP LE test
#   --measure     also run test9L2CAPMessageSizes (which SDU sizes the emulator delivers)
#   --filter T    one XCTest filter instead of the groups, e.g.
#                 PeerLinkTests.BluetoothLabTests/test1RFCOMMNodesOverVirtualRadios
#   --controllers N  boot N controllers (default 16; the discovery tests skip with fewer)
# Environment: SCRATCH (build dir, default .build-bt), BT_TIMEOUT (seconds for everything in
# the VM, default 840), BT_GROUP_TIMEOUT (seconds per XCTest group, default 420).
# Exit status: 0 all passed; 1 a test failed; 125 the lab failed; 124 timeout; 2 usage.
set -uo pipefail
cd "$(dirname "$0")/.."

SCRATCH=${SCRATCH:-.build-bt}
TIMEOUT=${BT_TIMEOUT:-840}
GROUP_TIMEOUT=${BT_GROUP_TIMEOUT:-420}
STEP=bt
CONTROLLERS=16
MEASURE=0
LE=1
SMOKE=()
PARTS=()
LAB_ARGS=()
while [[ $# -gt 0 ]]; do
    case $1 in
        --smoke) SMOKE=(--smoke 14 15); PARTS+=(--part smoke) ;;
        --repeat) STEP=repeat; CONTROLLERS=4 ;;
        --replug) STEP=replug; CONTROLLERS=4 ;;
        --measure) MEASURE=1 ;;
        --le) LE=1 ;;  # the default; kept so older command lines still work
        --no-le) LE=0 ;;
        --filter) FILTER=${2:?--filter needs a test name}; shift ;;
        --controllers) CONTROLLERS=${2:?--controllers needs a number}; shift ;;
        --results) LAB_ARGS+=(--results "${2:?--results needs a directory}"); shift ;;
        --keep-trace) LAB_ARGS+=(--keep-trace) ;;
        -h|--help) sed -n '2,34p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "test-bt: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
if [[ -n ${FILTER:-} ]]; then GROUPS_RUN=("$FILTER"); else
    mapfile -t GROUPS_RUN < <(awk -v step="$STEP" '!/^[[:space:]]*(#|$)/ && $1 == step {print $2}' Tests/lab-groups.txt)
fi
((${#GROUPS_RUN[@]})) || { echo "test-bt: no $STEP groups in Tests/lab-groups.txt"; echo "0 passed, 1 failed"; exit 1; }
if ((${#SMOKE[@]})) && ((CONTROLLERS < 16)); then echo "test-bt: --smoke needs 16 controllers"; exit 2; fi

echo "[test-bt] building the test bundle (swift build --build-tests --scratch-path $SCRATCH)"
if ! swift build --build-tests --scratch-path "$SCRATCH"; then
    echo "[test-bt] build failed"
    echo "0 passed, 1 failed"
    exit 1
fi
BUNDLE=$(swift build --scratch-path "$SCRATCH" --show-bin-path)/PeerLinkPackageTests.xctest
[[ -x $BUNDLE ]] || { echo "[test-bt] no test bundle at $BUNDLE"; echo "0 passed, 1 failed"; exit 1; }

OUT=$(mktemp "${TMPDIR:-/tmp}/peerlink-test-bt.XXXXXX")
LIST=$(mktemp "${TMPDIR:-/tmp}/peerlink-tests.XXXXXX")
trap 'rm -f "$OUT" "$LIST"' EXIT
"$BUNDLE" --list-tests >"$LIST" 2>/dev/null
run_lab() {
    scripts/bt-lab.sh run --controllers "$CONTROLLERS" --timeout "$TIMEOUT" "${LAB_ARGS[@]}" -- \
        /usr/bin/env PEERLINK_LAB_MEASURE=$MEASURE PEERLINK_LAB_LE=$LE \
        Hardware/bt-lab/lab-step.sh "${SMOKE[@]}" -- --timeout "$GROUP_TIMEOUT" "$BUNDLE" "${GROUPS_RUN[@]}" 2>&1 | tee "$OUT"
    STATUS=${PIPESTATUS[0]}
}
run_lab
# The controller emulator (BlueZ's btvirt) is lab equipment, not PeerLink: when it crashes
# (a general protection fault during an inquiry was seen once), the controllers vanish and
# every later test fails for want of them. Such a boot is reported with the kernel's line and
# run once more; a second crash fails the step like any other failure.
emulator_crash() {
    local results
    results=$(sed -n 's/.* results=\([^ ]*\).*/\1/p' "$OUT" | head -n 1)
    [[ -n $results ]] && grep -m 1 -E 'btvirt\[[0-9]+\].*(general protection|segfault|trap)' "$results/dmesg.log" 2>/dev/null
}
if crash=$(emulator_crash); then
    echo "[test-bt] the controller emulator crashed in the VM, so this boot's results say nothing of PeerLink:"
    echo "[test-bt]   $crash"
    echo "[test-bt]   (its results: $(grep -E '^[0-9]+ passed, [0-9]+ failed' "$OUT" | tail -n 1)); booting the lab once more"
    run_lab
    if crash=$(emulator_crash); then echo "[test-bt] the controller emulator crashed again: $crash"; fi
fi

EXPECT=()
for g in "${GROUPS_RUN[@]}"; do EXPECT+=(--expect "$g"); done
python3 scripts/ci/xctest_verdict.py --log "$OUT" --where vm --status "$STATUS" --list "$LIST" \
    --skips Tests/expected-skips.txt "${EXPECT[@]}" "${PARTS[@]}" | sed 's/^FAIL /[test-bt] FAIL /; s/^skipped/[test-bt] skipped/'
VERDICT=${PIPESTATUS[0]}
if (( STATUS == 124 || STATUS == 125 )); then exit $STATUS; fi
exit $VERDICT
