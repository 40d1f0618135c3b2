# Shell helpers for the lab's throughput benchmarks (sourced by baseline.sh and
# paired-bench.sh; runs INSIDE the lab VM). The caller sets WORK (scratch directory), OUT (the
# results file), BYTES (bytes per run) and failures=0.

# mgmt helper (btmgmt prints nothing and may not act when stdin is at EOF)
mgmt() { timeout 10 btmgmt "$@" < <(sleep 15); }

# The receivers here (rctest, l2test, PeerLink nodes listening without an advertiser) need
# their controller connectable, which bluetoothd as shipped turns off; a PeerLink advertiser
# would turn it on through bluetoothd. The benchmarks measure throughput, not reachability:
# make every controller connectable directly.
for c in /sys/class/bluetooth/hci*; do
    if [[ ${c##*/} =~ ^hci[0-9]+$ ]]; then mgmt --index "${c##*/hci}" connectable on >/dev/null 2>&1 || true; fi
done

# run_one NAME TIMEOUT "RECEIVER ARGS" "SENDER ARGS"
run_one() {
    local name=$1 limit=$2 rx_args=$3 tx_args=$4 rx_pid tx_rc
    local rx_log="$WORK/$name.rx" tx_log="$WORK/$name.tx"
    # shellcheck disable=SC2086
    setsid $rx_args >"$rx_log" 2>&1 </dev/null &
    rx_pid=$!
    for _ in $(seq 150); do grep -q 'Waiting for connection' "$rx_log" && break; sleep 0.1; done
    # shellcheck disable=SC2086
    timeout -k 5 "$limit" $tx_args >"$tx_log" 2>&1 </dev/null
    tx_rc=$?
    # the receiver reports each full block; give it a moment for the last one
    sleep 1
    kill -- -"$rx_pid" 2>/dev/null; wait "$rx_pid" 2>/dev/null
    local bytes secs mismatches
    read -r bytes secs < <(awk '/ bytes in .* sec/ {
            for (i = 1; i < NF; i++) { if ($(i + 1) == "bytes") b += $i; if ($(i + 1) == "sec,") s += $i }
        } END {printf "%d %.2f\n", b, s}' "$rx_log")
    mismatches=$(grep -c 'missmatch' "$rx_log")
    if ((tx_rc != 0)) || ((bytes < BYTES / 2)) || [[ $secs == 0.00 ]] || ((mismatches)); then
        printf 'FAIL %-28s sender rc=%d, %d bytes timed at the receiver, %d mismatches\n' \
            "$name" "$tx_rc" "$bytes" "$mismatches"
        sed 's/^/    rx: /' "$rx_log" | tail -n 5
        sed 's/^/    tx: /' "$tx_log" | tail -n 5
        failures=$((failures + 1))
        return
    fi
    local mbps
    mbps=$(awk -v b="$bytes" -v s="$secs" 'BEGIN {printf "%.3f", b / s / 1e6}')
    printf '  %-28s %8s MB/s  (%d bytes in %s s)\n' "$name" "$mbps" "$bytes" "$secs"
    echo "$name $mbps $bytes $secs" >>"$OUT"
}

# summary NAME: median and range of the runs recorded for NAME
summary() {
    local name=$1 values
    values=$(awk -v n="$name" '$1 == n {print $2}' "$OUT" | sort -g | tr '\n' ' ')
    [[ -n $values ]] || { printf '%-30s   FAILED (no successful run)\n' "$name"; return; }
    awk -v n="$name" -v v="$values" 'BEGIN {
        k = split(v, a, " ")
        med = (k % 2) ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
        printf "%-30s %8.3f MB/s  median of %d (min %.3f, max %.3f)\n", n, med, k, a[1], a[k]
    }'
    awk -v n="$name" -v v="$values" 'BEGIN {
        k = split(v, a, " "); med = (k % 2) ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
        printf "%s-median %.3f\n", n, med }' >>"$OUT"
}

