#!/usr/bin/env bash
# Runs PeerLink's Wi-Fi Direct and soft-AP tests on real components in the lab VM, and the
# upgrade end to end (a Bluetooth session negotiating a Wi-Fi Direct group for a file,
# WiFiDirectUpgradeLabTests, with bluetoothd and btvirt controllers as well), and a radio a
# real NetworkManager manages (NetworkManagerLabTests, Hardware/bt-lab/guest-nm.sh): two
# mac80211_hwsim radios, each with its own wpa_supplicant on D-Bus started as Debian's
# wpa_supplicant.service starts it (scripts/bt-lab.sh --radios 2, Hardware/bt-lab/
# guest-wifi.sh). Builds on the host, boots the VM once, runs the `wifi` lines of
# Tests/lab-groups.txt there and, with --harness, then the harness's upgrade scenario on the
# same radios (scenarios/radios/, controllers hci2/hci3; reports in results/harness-btlab/).
# The host judges the whole output (scripts/ci/xctest_verdict.py) and prints a closing line
# "N passed, M failed". The figures the tests measure land in RESULTS/wifi-figures.txt.
#
# Usage: scripts/test-wifi.sh [--harness] [--filter TEST] [--results DIR]
#   --harness     also run scenarios/radios/*.toml in the same boot, after the tests
#   --filter T    one XCTest filter instead of the groups
#   --results D   keep the lab's results (logs, wpa_supplicant.log, wifi-figures.txt) in D
# Environment: SCRATCH (build dir, default .build-bt, shared with test-bt.sh), WIFI_TIMEOUT
# (seconds for everything in the VM, default 840), WIFI_GROUP_TIMEOUT (per XCTest group,
# default 600). Only one lab VM runs at a time: wrap it in `flock /tmp/peerlink-vm.lock` when
# others use the machine.
# Exit status: 0 all passed; 1 a test failed; 125 the lab failed; 124 timeout; 2 usage.
set -uo pipefail
cd "$(dirname "$0")/.."

SCRATCH=${SCRATCH:-.build-bt}
TIMEOUT=${WIFI_TIMEOUT:-840}
GROUP_TIMEOUT=${WIFI_GROUP_TIMEOUT:-600}
mapfile -t GROUPS_RUN < <(awk '!/^[[:space:]]*(#|$)/ && $1 == "wifi" {print $2}' Tests/lab-groups.txt)
HARNESS=0
RESULTS=""
while [[ $# -gt 0 ]]; do
    case $1 in
        --harness) HARNESS=1 ;;
        --filter) GROUPS_RUN=("${2:?--filter needs a test name}"); shift ;;
        --results) RESULTS=${2:?--results needs a directory}; shift ;;
        -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "test-wifi: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
((${#GROUPS_RUN[@]})) || { echo "test-wifi: no wifi groups in Tests/lab-groups.txt"; echo "0 passed, 1 failed"; exit 1; }

echo "[test-wifi] building the test bundle and the harness (swift build --build-tests --scratch-path $SCRATCH)"
if ! swift build --build-tests --scratch-path "$SCRATCH"; then
    echo "[test-wifi] build failed"
    echo "0 passed, 1 failed"
    exit 1
fi
BIN=$(swift build --scratch-path "$SCRATCH" --show-bin-path)
BUNDLE=$BIN/PeerLinkPackageTests.xctest
[[ -x $BUNDLE ]] || { echo "[test-wifi] no test bundle at $BUNDLE"; echo "0 passed, 1 failed"; exit 1; }

OUT=$(mktemp "${TMPDIR:-/tmp}/peerlink-test-wifi.XXXXXX")
LIST=$(mktemp "${TMPDIR:-/tmp}/peerlink-tests.XXXXXX")
trap 'rm -f "$OUT" "$LIST"' EXIT
"$BUNDLE" --list-tests >"$LIST" 2>/dev/null
[[ -n $RESULTS ]] || RESULTS=$(mktemp -d "${TMPDIR:-/tmp}/peerlink-test-wifi-lab.XXXXXX")
STEP=(Hardware/bt-lab/lab-step.sh)
PARTS=()
if ((HARNESS)); then
    # The radios scenario after the tests, on a controller pair of its own (hci2/hci3): the
    # tests end with both wpa_supplicants as they found them (each test asserts it).
    scenario=$(ls scenarios/radios/*.toml | head -1)
    STEP+=(--harness 2 "$BIN/peerlink-harness" "$scenario")
    PARTS+=(--part harness)
fi
# Four controllers (the upgrade tests' Bluetooth session on hci0/hci1, the harness on
# hci2/hci3); no btmon (it costs CPU in the VM).
scripts/bt-lab.sh run --controllers 4 --radios 2 --no-trace --timeout "$TIMEOUT" --results "$RESULTS" -- \
    "${STEP[@]}" -- --timeout "$GROUP_TIMEOUT" "$BUNDLE" "${GROUPS_RUN[@]}" 2>&1 | tee "$OUT"
STATUS=${PIPESTATUS[0]}
if ((HARNESS)); then
    mkdir -p results/harness-btlab && cp "$RESULTS"/harness/* results/harness-btlab/ 2>/dev/null
    echo "[test-wifi] harness reports in results/harness-btlab/"
fi

EXPECT=()
for g in "${GROUPS_RUN[@]}"; do EXPECT+=(--expect "$g"); done
python3 scripts/ci/xctest_verdict.py --log "$OUT" --where vm --status "$STATUS" --list "$LIST" \
    --skips Tests/expected-skips.txt "${EXPECT[@]}" "${PARTS[@]}" | sed 's/^FAIL /[test-wifi] FAIL /; s/^skipped/[test-wifi] skipped/'
VERDICT=${PIPESTATUS[0]}
if (( STATUS == 124 || STATUS == 125 )); then exit $STATUS; fi
exit $VERDICT
