# Shared by the end-to-end scripts (sourced): check bookkeeping, waiting for output, cleanup.
# The sourcing script sets: work (its temporary directory), lab (path of iplab.sh), NAME
# (for messages) and appends background PIDs to `pids`.
passed=0; failed=0
pids=()

# e2e_cleanup — kills the background commands, takes the lab down, keeps logs on failure.
e2e_cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
    exec 7>&- 8>&- 2>/dev/null
    "$lab" down "$work/lab" >/dev/null 2>&1
    if [ "$failed" -gt 0 ]; then
        echo "$NAME: logs kept in $work" >&2
        for f in "$work"/*.out "$work"/*.err "$work"/*.json; do [ -f "$f" ] && { echo "---- $f"; tail -n 40 "$f"; } >&2; done
    else
        rm -rf "$work"
    fi
}

check() {  # NAME COMMAND... — one "ok"/"FAIL" line
    local name=$1; shift
    if "$@"; then echo "ok   $name"; passed=$((passed + 1)); else echo "FAIL $name"; failed=$((failed + 1)); fi
}

wait_for() {  # FILE REGEX SECONDS — true once a line of FILE matches
    local file=$1 re=$2 secs=$3 end
    end=$(( $(date +%s%N) + secs * 1000000000 ))
    while [ "$(date +%s%N)" -lt "$end" ]; do
        grep -qE -- "$re" "$file" 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}
