#!/usr/bin/env bash
# Runs an XCTest bundle once per filter, in the order given, each run under a time limit, on the
# host or inside the lab VM. Prints XCTest's output between markers that
# scripts/ci/xctest_verdict.py reads:
#   [xctest] group K/N start: FILTER
#   [xctest] group K/N end: exit=RC seconds=S [timeout after T s]
# A run that outlives its limit has the stacks of all its threads printed (gdb, when present)
# and is killed, so the verdict can name the test that hung and what its threads waited in;
# the next group still runs.
#
#   xctest-groups.sh [--timeout S] [--after CMD] BUNDLE FILTER [FILTER ...]
#     FILTER   an XCTest filter (Module.Class or Module.Class/method, comma-separated), or
#              "all" for every test in one run
#     --timeout S   limit per group in seconds (default 900)
#     --after CMD   a shell command run after each group (the lab checks its emulator with it)
# Exit status: 0 when every run exited 0, 1 otherwise, 2 for usage errors. Whether the runs
# really passed is the verdict's to say, not this exit status.
set -uo pipefail
LIMIT=900
AFTER=""
while [[ $# -gt 0 ]]; do
    case $1 in
        --timeout) LIMIT=${2:?--timeout needs seconds}; shift 2 ;;
        --after) AFTER=${2:?--after needs a command}; shift 2 ;;
        -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) break ;;
    esac
done
BUNDLE=${1:?usage: xctest-groups.sh [--timeout S] [--after CMD] BUNDLE FILTER [FILTER ...]}
shift
(($# > 0)) || { echo "xctest-groups: no filter given" >&2; exit 2; }
[[ $LIMIT =~ ^[0-9]+$ ]] || { echo "xctest-groups: --timeout must be whole seconds" >&2; exit 2; }
[[ -x $BUNDLE ]] || { echo "xctest-groups: no test bundle at $BUNDLE" >&2; exit 2; }

# The stacks of every thread of PID, bounded in time and length (gdb is slow to attach to a
# large Swift binary, much slower in the emulated VM).
stacks() {
    local pid=$1
    if command -v gdb >/dev/null; then
        echo "[xctest] stacks of the hung run (pid $pid):"
        timeout -k 5 90 gdb -p "$pid" -batch -nx -ex "set pagination off" -ex "thread apply all bt 12" 2>/dev/null |
            grep -E '^(Thread|#)' | cut -c1-220 | head -200
    else
        echo "[xctest] no gdb here: stacks of the hung run not shown"
    fi
}

status=0
total=$#
k=0
for filter in "$@"; do
    k=$((k + 1))
    echo "[xctest] group $k/$total start: $([[ $filter == all ]] || echo "$filter")"
    t0=$SECONDS
    if [[ $filter == all ]]; then "$BUNDLE" & else "$BUNDLE" "$filter" & fi
    pid=$!
    note=""
    while kill -0 "$pid" 2>/dev/null; do
        if ((SECONDS - t0 >= LIMIT)); then
            stacks "$pid"
            kill -KILL "$pid" 2>/dev/null
            note=" timeout after $LIMIT s"
            break
        fi
        sleep 0.5
    done
    wait "$pid"
    rc=$?
    [[ -n $note ]] && rc=124
    echo "[xctest] group $k/$total end: exit=$rc seconds=$((SECONDS - t0))$note"
    ((rc != 0)) && status=1
    [[ -n $AFTER ]] && { bash -c "$AFTER" || status=1; }
done
exit $status
