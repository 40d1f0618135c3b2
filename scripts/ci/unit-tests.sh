#!/usr/bin/env bash
# The unit suite (unit, loopback TCP, in-memory sessions, Avahi in namespaces) on the host,
# judged by scripts/ci/xctest_verdict.py: a crash, a hang, an unexpected skip, a test that
# never ran or a missing closing summary fails it, naming the test. Ends with
# "N passed, M failed"; exit status 0 only when nothing failed.
#
#   scripts/ci/unit-tests.sh [--timeout S] [BUNDLE]
#     BUNDLE     the XCTest bundle (default: the debug build's PeerLinkPackageTests.xctest)
#     --timeout  limit for the run in seconds (default 900); a run that outlives it has its
#                threads' stacks printed and is killed
# Environment: PEERLINK_TEST_LOG (keep XCTest's whole output there; default a temporary file).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
LIMIT=900
[[ ${1:-} == --timeout ]] && { LIMIT=${2:?--timeout needs seconds}; shift 2; }
BUNDLE=${1:-$(cd "$root" && swift build --show-bin-path)/PeerLinkPackageTests.xctest}
[[ -x $BUNDLE ]] || { echo "unit-tests: no test bundle at $BUNDLE (swift build --build-tests first)"; echo "0 passed, 1 failed"; exit 1; }
LOG=${PEERLINK_TEST_LOG:-$(mktemp "${TMPDIR:-/tmp}/peerlink-unit.XXXXXX")}
LIST=$(mktemp "${TMPDIR:-/tmp}/peerlink-tests.XXXXXX")
trap 'rm -f "$LIST"' EXIT

"$BUNDLE" --list-tests >"$LIST" 2>/dev/null || { echo "unit-tests: $BUNDLE --list-tests failed"; echo "0 passed, 1 failed"; exit 1; }
echo "[unit-tests] $(grep -c / "$LIST") tests; XCTest's output: $LOG"
"$here/xctest-groups.sh" --timeout "$LIMIT" "$BUNDLE" all >"$LOG" 2>&1
status=$?
# Show what failed as it is told, not the whole run.
grep -E "^\[xctest\] (stacks|no gdb)|^(Thread|#[0-9])" "$LOG" | head -80
python3 "$here/xctest_verdict.py" --log "$LOG" --where host --status "$status" --list "$LIST" \
    --skips "$root/Tests/expected-skips.txt" --groups "$root/Tests/lab-groups.txt"
