#!/bin/bash
# Runs INSIDE the lab VM: one CI step's work in one boot, in this order, each part between
# "[lab-step] PART start" and "[lab-step] PART end: exit=RC" markers that the host-side runner
# (scripts/test-bt.sh, scripts/test-wifi.sh) reads:
#   1. --smoke L R           the smoke suite (smoke.py) on controllers hciL and hciR, a pair no
#                            test uses, so its raw-socket pairings leave the tests' pairs fresh
#   2. the XCTest groups     scripts/ci/xctest-groups.sh with the arguments after --
#   3. --harness F BIN FILE  the harness scenario FILE on controllers hciF/hciF+1 (peerlink-harness
#                            run --backend btlab), reports in $PEERLINK_LAB_RESULTS/harness
#
#   lab-step.sh [--smoke L R] [--harness F BIN FILE] -- [--timeout S] BUNDLE FILTER [FILTER ...]
# Exit status: 1 when any part exited non-zero, else 0.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
SMOKE=() HARNESS=()
while [[ $# -gt 0 ]]; do
    case $1 in
        --smoke) SMOKE=("$2" "$3"); shift 3 ;;
        --harness) HARNESS=("$2" "$3" "$4"); shift 4 ;;
        --) shift; break ;;
        *) echo "lab-step: unknown option $1" >&2; exit 2 ;;
    esac
done
status=0
part() {  # part NAME CMD... — runs CMD between markers
    local name=$1 rc t=$SECONDS; shift
    echo "[lab-step] $name start"
    "$@"
    rc=$?
    echo "[lab-step] $name end: exit=$rc seconds=$((SECONDS - t))"
    ((rc == 0)) || status=1
}
if ((${#SMOKE[@]})); then
    part smoke env SMOKE_PAIR="${SMOKE[0]} ${SMOKE[1]}" /usr/bin/python3 -u "$here/smoke.py"
fi
if (($#)); then
    part xctest "$root/scripts/ci/xctest-groups.sh" --after "$here/check-btvirt.sh" "$@"
fi
if ((${#HARNESS[@]})); then
    part harness env PEERLINK_HARNESS_TRACE="${PEERLINK_HARNESS_TRACE:-0}" "${HARNESS[1]}" run --backend btlab \
        --first-controller "${HARNESS[0]}" --out "$PEERLINK_LAB_RESULTS/harness" "${HARNESS[2]}"
fi
exit $status
