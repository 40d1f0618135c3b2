#!/usr/bin/env bash
# PeerLink's whole test suite, on a fresh Debian 12 machine (run as root):
#   1. installs packages (scripts/setup.sh), builds everything
#   2. unit and loopback tests, and the Avahi tests in namespaces (swift test)
#   3. the two-host end-to-end test with the real CLI in namespaces (scripts/e2e-twohost.sh),
#      the same over two network paths per host pair (scripts/e2e-twopath.sh),
#      the scenario library of the transport-selection harness (scenarios/, reports in results/harness),
#      the same library in the IP lab (scripts/harness-iplab.sh, reports in results/harness-iplab),
#      and the CLI's answers to bad input (scripts/cli-checks.sh)
#   4. every fuzz target for a bounded time (scripts/fuzz.sh)
#   5. the Bluetooth lab smoke suite in a VM (scripts/bt-lab.sh smoke), unless PEERLINK_SKIP_BT_LAB=1
#   6. the Bluetooth lab tests in the VM (scripts/test-bt.sh): transports, sessions, remote
#      power-off, BlueZ browsing and advertising, discovery and the CLI over Bluetooth alone,
#      adapter removal and bluetoothd restarts; same condition
#   7. the Wi-Fi lab tests in the VM (scripts/test-wifi.sh): Wi-Fi Direct and soft-AP through
#      wpa_supplicant on two hwsim radios, set-ups that fail, doctor's Wi-Fi section, the
#      upgrade end to end; same condition
#   8. the harness's upgrade scenario on the lab's radios (scripts/harness-btlab.sh
#      scenarios/radios/*.toml, debug build, one VM boot of about 2.5 min); same condition
# Ends with one line "summary: N passed, M failed" counting test cases across the steps.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
cd "$root"
FUZZ_SECONDS=${PEERLINK_FUZZ_SECONDS:-20}
logs=$(mktemp -d /tmp/peerlink-test.XXXXXX)
passed=0; failed=0; steps_failed=()
step() { printf '\n==== %s\n' "$*"; }
add() { passed=$((passed + $1)); failed=$((failed + $2)); }

step "setup"
bt_flag=--bt-lab; [ "${PEERLINK_SKIP_BT_LAB:-0}" = 1 ] && bt_flag=
"$here/setup.sh" $bt_flag || { echo "setup failed"; exit 1; }
command -v swift >/dev/null || export PATH=/opt/swift/usr/bin:$PATH

step "build"
t=$(date +%s)
if ! swift build --build-tests >"$logs/build.log" 2>&1; then
    grep -E "error" "$logs/build.log" | head -40; tail -20 "$logs/build.log"
    echo "summary: 0 passed, 1 failed"; exit 1
fi
echo "build took $(( $(date +%s) - t )) s"

step "swift test (unit, loopback TCP, in-memory sessions, Avahi in namespaces)"
timeout --kill-after=10 900 swift test --skip-build --disable-swift-testing 2>&1 | tee "$logs/swift-test.log" | grep -E "error:|failed|Executed [0-9]+ tests" | tail -40
# "Executed N tests, with M failures" or "Executed N tests, with K tests skipped and M failures"
line=$(grep -E "Executed [0-9]+ tests?, with .*[0-9]+ failures?" "$logs/swift-test.log" | tail -1)
n=$(echo "$line" | sed -E 's/.*Executed ([0-9]+) tests?.*/\1/')
k=$(echo "$line" | sed -nE 's/.* ([0-9]+) tests? skipped.*/\1/p'); k=${k:-0}
f=$(echo "$line" | sed -E 's/.* ([0-9]+) failures?.*/\1/')
if [ -z "$line" ]; then add 0 1; steps_failed+=("swift test (no result line)")
else add $((n - k - f)) "$f"; [ "$f" = 0 ] || steps_failed+=("swift test"); [ "$k" = 0 ] || echo "($k tests skipped: they need the Bluetooth VM and run there)"; fi

step "two-host end-to-end in network namespaces"
timeout --kill-after=10 300 "$here/e2e-twohost.sh" "$(swift build --show-bin-path)/peerlink" 2>&1 | tee "$logs/e2e.log"
line=$(grep -E "^[0-9]+ passed, [0-9]+ failed" "$logs/e2e.log" | tail -1)
if [ -z "$line" ]; then add 0 1; steps_failed+=("e2e"); else
    set -- $line; add "$1" "$3"; [ "$3" = 0 ] || steps_failed+=("e2e"); fi

step "two hosts, two network paths: link manager, peerlink links, path loss without message loss"
timeout --kill-after=10 180 "$here/e2e-twopath.sh" "$(swift build --show-bin-path)/peerlink" 2>&1 | tee "$logs/e2e-twopath.log"
line=$(grep -E "^[0-9]+ passed, [0-9]+ failed" "$logs/e2e-twopath.log" | tail -1)
if [ -z "$line" ]; then add 0 1; steps_failed+=("e2e-twopath"); else
    set -- $line; add "$1" "$3"; [ "$3" = 0 ] || steps_failed+=("e2e-twopath"); fi

step "transport-selection harness: the scenario library on the in-memory medium"
mkdir -p "$root/results/harness"
timeout --kill-after=10 300 "$(swift build --show-bin-path)/peerlink-harness" run scenarios/*.toml scenarios/upgrade/*.toml --out "$root/results/harness" 2>&1 | tee "$logs/harness.log"
line=$(grep -E "^[0-9]+ passed, [0-9]+ failed" "$logs/harness.log" | tail -1)
if [ -z "$line" ]; then add 0 1; steps_failed+=("harness"); else
    set -- $line; add "$1" "$3"; [ "$3" = 0 ] || steps_failed+=("harness"); fi
echo "reports (JSON + SVG timelines): results/harness/"

step "transport-selection harness: the scenario library in the IP lab (namespaces, kernel TCP)"
timeout --kill-after=10 480 "$here/harness-iplab.sh" "$(swift build --show-bin-path)/peerlink-harness" 2>&1 | tee "$logs/harness-iplab.log" | grep -vE "^\[trace"
line=$(grep -E "^summary: [0-9]+ passed, [0-9]+ failed" "$logs/harness-iplab.log" | tail -1)
if [ -z "$line" ]; then add 0 1; steps_failed+=("harness-iplab"); else
    set -- $line; add "$2" "$4"; [ "$4" = 0 ] || steps_failed+=("harness-iplab"); fi
echo "reports: results/harness-iplab/"

step "CLI: bad input gets a clear error"
timeout --kill-after=10 120 "$here/cli-checks.sh" "$(swift build --show-bin-path)/peerlink" 2>&1 | tee "$logs/cli.log" | grep -vE "^ok "
line=$(grep -E "^[0-9]+ passed, [0-9]+ failed" "$logs/cli.log" | tail -1)
if [ -z "$line" ]; then add 0 1; steps_failed+=("cli"); else set -- $line; add "$1" "$3"; [ "$3" = 0 ] || steps_failed+=("cli"); fi

if [ -x "$here/fuzz.sh" ]; then
    step "fuzzing (${FUZZ_SECONDS} s per target)"
    timeout --kill-after=10 1200 "$here/fuzz.sh" "$FUZZ_SECONDS" 2>&1 | tee "$logs/fuzz.log" | grep -vE "^#[0-9]+|INFO:|Cannot export local symbol" | tail -30
    line=$(grep -E "^[0-9]+ passed, [0-9]+ failed" "$logs/fuzz.log" | tail -1)
    if [ -z "$line" ]; then add 0 1; steps_failed+=("fuzz"); else set -- $line; add "$1" "$3"; [ "$3" = 0 ] || steps_failed+=("fuzz"); fi
fi

if [ "${PEERLINK_SKIP_BT_LAB:-0}" != 1 ]; then
    step "Bluetooth lab smoke suite (VM with virtual controllers)"
    timeout --kill-after=10 600 "$here/bt-lab.sh" smoke --quiet 2>&1 | tee "$logs/bt-lab.log" | tail -30
    line=$(grep -E "^[0-9]+ passed, [0-9]+ failed" "$logs/bt-lab.log" | tail -1)
    if [ -z "$line" ]; then add 0 1; steps_failed+=("bt-lab"); else set -- $line; add "$1" "$3"; [ "$3" = 0 ] || steps_failed+=("bt-lab"); fi
fi

if [ "${PEERLINK_SKIP_BT_LAB:-0}" != 1 ]; then
    step "Bluetooth in the VM: transports, power-off, BlueZ browsing/advertising, discovery and the CLI over Bluetooth alone, bluetoothd restart"
    SCRATCH=.build timeout --kill-after=10 900 "$here/test-bt.sh" 2>&1 | tee "$logs/bt-transports.log" | grep -E "^Test Case|error:|passed|failed|skipped|\[bt-lab\] (FAILED|timings)|\[test-bt\] FAILED" | tail -40
    line=$(grep -E "^[0-9]+ passed, [0-9]+ failed" "$logs/bt-transports.log" | tail -1)
    if [ -z "$line" ]; then add 0 1; steps_failed+=("bt-transports"); else set -- $line; add "$1" "$3"; [ "$3" = 0 ] || steps_failed+=("bt-transports"); fi
fi

if [ "${PEERLINK_SKIP_BT_LAB:-0}" != 1 ]; then
    step "Wi-Fi in the VM: Wi-Fi Direct group and soft-AP through wpa_supplicant, TCP over the air, doctor"
    SCRATCH=.build timeout --kill-after=10 900 "$here/test-wifi.sh" 2>&1 | tee "$logs/wifi.log" | grep -E "^Test Case|error:|figure:|passed|failed|skipped|\[bt-lab\] (FAILED|timings)|\[test-bt\] FAILED" | tail -40
    line=$(grep -E "^[0-9]+ passed, [0-9]+ failed" "$logs/wifi.log" | tail -1)
    if [ -z "$line" ]; then add 0 1; steps_failed+=("wifi"); else set -- $line; add "$1" "$3"; [ "$3" = 0 ] || steps_failed+=("wifi"); fi
fi

if [ "${PEERLINK_SKIP_BT_LAB:-0}" != 1 ]; then
    step "harness on the lab's radios: Bluetooth session, Wi-Fi Direct upgrade, group torn down mid-transfer"
    SCRATCH=.build CONFIG=debug timeout --kill-after=10 600 "$here/harness-btlab.sh" scenarios/radios/*.toml 2>&1 | tee "$logs/harness-radios.log" | grep -E "^(PASS|FAIL|  FAIL)|passed, |\[harness-btlab\]" | tail -20
    line=$(grep -E "^[0-9]+ passed, [0-9]+ failed" "$logs/harness-radios.log" | tail -1)
    if [ -z "$line" ]; then add 0 1; steps_failed+=("harness-radios"); else set -- $line; add "$1" "$3"; [ "$3" = 0 ] || steps_failed+=("harness-radios"); fi
    echo "reports: results/harness-btlab/"
fi

echo
if [ ${#steps_failed[@]} != 0 ]; then
    # The steps above print only their last lines; name every failure again here, at the end,
    # where a CI excerpt of the output's tail still shows it.
    echo "failures (from $logs/*.log):"
    grep -h -E "^Test Case '.*' failed|: error: |^(  )?FAIL |^FAIL|^fail |\[bt-lab\] FAILED|\[test-bt\] FAILED" "$logs"/*.log 2>/dev/null | grep -v "^Test Case '.*' passed" | cut -c1-400 | head -30
    echo "failed steps: ${steps_failed[*]} (logs in $logs)"
fi
echo "summary: $passed passed, $failed failed"
[ ${#steps_failed[@]} = 0 ]
