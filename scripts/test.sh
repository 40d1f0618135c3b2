#!/usr/bin/env bash
# PeerLink's whole test suite, on a fresh Debian 12 machine (run as root):
#   1. installs packages (scripts/setup.sh), builds everything, checks that every lab test is
#      run by a lab step (scripts/ci/check_lab_coverage.py)
#   2. unit and loopback tests, and the Avahi tests in namespaces (scripts/ci/unit-tests.sh)
#   3. the two-host end-to-end test with the real CLI in namespaces (scripts/e2e-twohost.sh),
#      the same over two network paths per host pair (scripts/e2e-twopath.sh), two field
#      daemons storing and forwarding through kill -9 (scripts/e2e-daemon.sh),
#      the scenario library of the transport-selection harness (scenarios/, reports in results/harness),
#      the same library in the IP lab (scripts/harness-iplab.sh, reports in results/harness-iplab),
#      the CLI's answers to bad input (scripts/cli-checks.sh), and that the TCP-only example
#      links no medium's system library and chats on loopback (scripts/ci/check-example-links.sh)
#   4. the Bluetooth lab in two VMs at once, unless PEERLINK_SKIP_BT_LAB=1: the smoke suite and
#      the Bluetooth tests (scripts/test-bt.sh --smoke), and the same two nodes meeting again
#      and again with the CLI in fresh processes (scripts/test-bt.sh --repeat)
#   5. the Wi-Fi lab in a VM (scripts/test-wifi.sh --harness): Wi-Fi Direct and soft-AP
#      through wpa_supplicant on two hwsim radios, set-ups that fail, doctor's Wi-Fi section,
#      the upgrade end to end, and the harness's upgrade scenario on the lab's radios; beside
#      it, every fuzz target for a bounded time (scripts/fuzz.sh)
#
# A step passes only when its command exits 0 within its time limit AND ends with a line
# "N passed, 0 failed". XCTest runs are judged by scripts/ci/xctest_verdict.py: a crash, a
# hang, a skip Tests/expected-skips.txt does not list, a test that never ran or a missing
# closing summary fails the step, naming the test. Ends with "summary: N passed, M failed"
# counting test cases across the steps, and each step's time.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
cd "$root"
FUZZ_SECONDS=${PEERLINK_FUZZ_SECONDS:-20}
logs=$(mktemp -d /tmp/peerlink-test.XXXXXX)
passed=0; failed=0; steps_failed=(); times=()
T0=$SECONDS

# run_step NAME LIMIT SHOW CMD... — runs CMD under LIMIT seconds with its output in
# $logs/NAME.log, prints the lines matching the regex SHOW (all when empty), and counts its
# closing "N passed, M failed" line. A timeout, a non-zero exit or a missing result line fails
# the step whatever the counts say.
run_step() {
    local name=$1 limit=$2 show=$3; shift 3
    local t=$SECONDS
    if [[ -n $show ]]; then
        timeout --kill-after=20 "$limit" "$@" 2>&1 | tee "$logs/$name.log" | grep --line-buffered -E -- "$show"
    else
        timeout --kill-after=20 "$limit" "$@" 2>&1 | tee "$logs/$name.log"
    fi
    echo "${PIPESTATUS[0]}" >"$logs/$name.rc"
    echo $((SECONDS - t)) >"$logs/$name.secs"
    judge_step "$name" "$limit"
}

# run_together NAME:LIMIT:SHOW CMD... -- NAME:LIMIT:SHOW CMD... — runs steps at the same time
# (a lab VM uses one core of the emulated CPU; the other step uses the other core), then shows
# and judges each in turn as run_step does. Each step is its name, limit and SHOW regex joined
# by the first two colons, then its command; steps are separated by `--`.
run_together() {
    local names=() specs=() spec="" cmd=()
    launch() {
        local name=${spec%%:*} rest=${spec#*:}
        local limit=${rest%%:*} show=${rest#*:}
        names+=("$name"); specs+=("$limit" "$show")
        (
            t=$SECONDS
            timeout --kill-after=20 "$limit" "${cmd[@]}" >"$logs/$name.log" 2>&1
            echo $? >"$logs/$name.rc"
            echo $((SECONDS - t)) >"$logs/$name.secs"
        ) &
    }
    spec=$1; shift
    while [[ $# -gt 0 ]]; do
        if [[ $1 == -- ]]; then launch; cmd=(); shift; spec=$1; shift; continue; fi
        cmd+=("$1"); shift
    done
    launch
    echo "[test] running together: ${names[*]} (outputs follow when all have ended)"
    wait
    local i
    for i in "${!names[@]}"; do
        step "${names[$i]} (ran together with the others)"
        local show=${specs[$((2 * i + 1))]}
        if [[ -n $show ]]; then grep -E -- "$show" "$logs/${names[$i]}.log"; else cat "$logs/${names[$i]}.log"; fi
        judge_step "${names[$i]}" "${specs[$((2 * i))]}"
    done
}

# judge_step NAME LIMIT — counts a finished step from $logs/NAME.{log,rc,secs}.
judge_step() {
    local name=$1 limit=$2 log="$logs/$1.log" rc line
    rc=$(cat "$logs/$name.rc" 2>/dev/null || echo 255)
    times+=("$(printf '%-16s %4d s (limit %d s)' "$name" "$(cat "$logs/$name.secs" 2>/dev/null || echo 0)" "$limit")")
    line=$(grep -E "^(summary: )?[0-9]+ passed, [0-9]+ failed" "$log" | tail -1 | sed 's/^summary: //')
    if ((rc == 124 || rc == 137)); then
        add_fail "$name" "timed out after $limit s; its last lines:" "$log"
        [[ -n $line ]] && { set -- $line; passed=$((passed + $1)); failed=$((failed + $3)); }
        return
    fi
    if [[ -z $line ]]; then add_fail "$name" "no result line (exit status $rc); its last lines:" "$log"; return; fi
    set -- $line
    passed=$((passed + $1)); failed=$((failed + $3))
    if (($3 != 0)); then steps_failed+=("$name")
    elif ((rc != 0)); then add_fail "$name" "exited with status $rc although it counted no failure; its last lines:" "$log"
    fi
}
add_fail() {
    echo "[test] step $1 FAILED: $2" | tee -a "$logs/failures.log"
    tail -8 "$3" | sed 's/^/    /'
    failed=$((failed + 1)); steps_failed+=("$1")
}
step() { printf '\n==== %s\n' "$*"; }

step "setup"
bt_flag=--bt-lab; [ "${PEERLINK_SKIP_BT_LAB:-0}" = 1 ] && bt_flag=
"$here/setup.sh" $bt_flag || { echo "setup failed"; echo "summary: 0 passed, 1 failed"; exit 1; }
command -v swift >/dev/null || export PATH=/opt/swift/usr/bin:$PATH

step "build"
t=$SECONDS
if ! swift build --build-tests >"$logs/build.log" 2>&1; then
    grep -E "error" "$logs/build.log" | head -40; tail -20 "$logs/build.log"
    echo "summary: 0 passed, 1 failed"; exit 1
fi
times+=("$(printf '%-16s %4d s' build $((SECONDS - t)))")
BIN=$(swift build --show-bin-path)
echo "build took $((SECONDS - t)) s"

step "lab coverage: every test that skips on the host runs in a lab step, every lab filter selects a test"
"$BIN/PeerLinkPackageTests.xctest" --list-tests >"$logs/tests.list" 2>/dev/null
if python3 "$here/ci/check_lab_coverage.py" --list "$logs/tests.list"; then :; else
    failed=$((failed + 1)); steps_failed+=("lab-coverage"); fi

step "unit tests (unit, loopback TCP, in-memory sessions, Avahi in namespaces)"
PEERLINK_TEST_LOG="$logs/xctest-unit.log" run_step unit 1100 "" "$here/ci/unit-tests.sh" --timeout 1000 "$BIN/PeerLinkPackageTests.xctest"

step "two-host end-to-end in network namespaces"
run_step e2e 300 "" "$here/e2e-twohost.sh" "$BIN/peerlink"

step "two hosts, two network paths: link manager, peerlink links, path loss without message loss"
run_step e2e-twopath 240 "" "$here/e2e-twopath.sh" "$BIN/peerlink"

step "field daemons in network namespaces: store and forward, kill -9 of either side, expiry, SIGTERM"
run_step e2e-daemon 420 "" "$here/e2e-daemon.sh" "$BIN/peerlink"

step "transport-selection harness: the scenario library on the in-memory medium, in virtual time"
mkdir -p "$root/results/harness"
run_step harness 300 "" "$BIN/peerlink-harness" run scenarios/*.toml scenarios/upgrade/*.toml scenarios/mesh/*.toml --out "$root/results/harness"
echo "reports (JSON + SVG timelines): results/harness/"

step "transport-selection harness: the scenario library in the IP lab (namespaces, kernel TCP)"
run_step harness-iplab 480 "^(PASS|FAIL|  FAIL|summary)|passed, " "$here/harness-iplab.sh" "$BIN/peerlink-harness"
echo "reports: results/harness-iplab/"

step "CLI: bad input gets a clear error"
run_step cli 150 "^(FAIL|fail)|passed, " "$here/cli-checks.sh" "$BIN/peerlink"

step "a TCP-only app links no D-Bus, Avahi or BlueZ library, and chats on loopback (Examples/tcp-chat)"
run_step example-links 60 "" "$here/ci/check-example-links.sh" "$BIN"

step "the CLI, the harness and the example use only the public API (no package access, no internal modules)"
run_step public-api-users 60 "" "$here/ci/check-public-api-users.sh"

step "docs: every relative link and anchor in README.md and docs/ resolves"
run_step doc-links 60 "^FAIL|passed, " python3 "$here/ci/check-doc-links.py"

step "API reference: DocC builds with every symbol link resolved, no public symbol added undocumented"
run_step docs 240 "^(ok|FAIL|doc coverage: [0-9])|passed, " "$here/ci/build-docs.sh" "$root/.build/docs"

FUZZ_SHOW="^(ok|FAIL|fail)|passed, |crash|ERROR"
if [ "${PEERLINK_SKIP_BT_LAB:-0}" != 1 ]; then
    # The lab VMs run under software emulation on one core each: two at a time, then the
    # last one beside the fuzzers.
    step "the Bluetooth lab in two VMs at once: (1) smoke suite, transports, power-off, BlueZ browsing/advertising, discovery and the CLI over Bluetooth alone, bluetoothd restart; (2) the same two nodes meeting again and again, CLI in fresh processes"
    run_together "bt:1080:^(FAIL|ok |fail )|^\[xctest\] group|skipped as expected|passed, |\[bt-lab\] (FAILED|timings)|\[test-bt\]" \
            env SCRATCH=.build "$here/test-bt.sh" --smoke -- \
        "bt-repeat:1320:^(FAIL|fail )|^\[xctest\] group|skipped as expected|passed, |\[bt-lab\] (FAILED|timings)|\[test-bt\]" \
            env SCRATCH=.build BT_GROUP_TIMEOUT=540 BT_TIMEOUT=1140 "$here/test-bt.sh" --repeat

    # The field daemons' weeks-long hazards (mostly waiting) run beside them too.
    step "Wi-Fi in the VM (Wi-Fi Direct and soft-AP through wpa_supplicant, the upgrade end to end, the harness on the radios), beside the fuzzers (${FUZZ_SECONDS} s per target), the field daemons through avahi-daemon restarts, a network change, a full disk and a flood, and a field daemon's adapter unplugged and plugged in again (a Bluetooth VM of its own)"
    run_together "wifi:1080:^(FAIL|PASS)|^\[xctest\] group|figure:|skipped as expected|passed, |\[bt-lab\] (FAILED|timings)|\[test-wifi\]" \
            env SCRATCH=.build "$here/test-wifi.sh" --harness -- \
        "fuzz:1200:$FUZZ_SHOW" "$here/fuzz.sh" "$FUZZ_SECONDS" -- \
        "e2e-daemon-weeks:480:" "$here/e2e-daemon-weeks.sh" "$BIN/peerlink" -- \
        "bt-replug:600:^(FAIL|fail )|^\[xctest\] group|skipped as expected|passed, |\[bt-lab\] (FAILED|timings)|\[test-bt\]" \
            env SCRATCH=.build "$here/test-bt.sh" --replug
else
    step "fuzzing (${FUZZ_SECONDS} s per target)"
    run_step fuzz 1200 "$FUZZ_SHOW" "$here/fuzz.sh" "$FUZZ_SECONDS"
    step "field daemons through avahi-daemon restarts, a network change, a full disk and a flood"
    run_step e2e-daemon-weeks 240 "" "$here/e2e-daemon-weeks.sh" "$BIN/peerlink"
fi

echo
echo "step times (total $((SECONDS - T0)) s):"
printf '  %s\n' "${times[@]}"
if [ ${#steps_failed[@]} != 0 ]; then
    # The steps above print only some lines; name every failure again here, at the end,
    # where a CI excerpt of the output's tail still shows it.
    echo "failures (from $logs/*.log):"
    grep -h -E "^FAIL |^\[test-(bt|wifi)\] FAIL|^(  )?FAIL|^fail |\[bt-lab\] FAILED|^\[test\] step" \
        "$logs"/*.log 2>/dev/null | cut -c1-400 | head -40
    echo "failed steps: ${steps_failed[*]} (logs in $logs)"
fi
echo "summary: $passed passed, $failed failed"
[ ${#steps_failed[@]} = 0 ]
