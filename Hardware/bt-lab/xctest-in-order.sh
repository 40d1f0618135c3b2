#!/bin/bash
# Runs INSIDE the lab VM (scripts/test-bt.sh passes it as the lab command): runs an XCTest
# bundle once per filter, in the order given, and exits 1 if any run failed.
#
#   xctest-in-order.sh BUNDLE FILTER [FILTER ...]
#
# Why not one run: XCTest orders tests by class and method name, and in the emulator a test
# that powers a controller off or restarts bluetoothd can leave later BR/EDR connections of
# the same boot refused or hung (Hardware/bt-lab/README.md, "Order of the lab tests"). So the
# tests that change adapter or daemon state run after the ones that only connect.
set -uo pipefail
BUNDLE=${1:?usage: xctest-in-order.sh BUNDLE FILTER [FILTER ...]}
shift
(($# > 0)) || { echo "xctest-in-order: no filter given" >&2; exit 2; }

status=0
group=0
for filter in "$@"; do
    group=$((group + 1))
    echo "[test-bt] group $group of $#: $filter"
    "$BUNDLE" "$filter"
    rc=$?
    ((rc != 0)) && status=1
    # The controllers live in btvirt: if it died, every later test fails for that reason alone.
    if ! grep -qsx btvirt /proc/[0-9]*/comm && [[ -z ${btvirt_gone:-} ]]; then
        btvirt_gone=1
        echo "[test-bt] FAILED: btvirt (the controller emulator) is no longer running after group $group;" \
             "later groups have no controllers. Kernel log: $(dmesg 2>/dev/null | grep -E 'btvirt.*(fault|segfault|trap)' | tail -1)"
    fi
done
exit $status
