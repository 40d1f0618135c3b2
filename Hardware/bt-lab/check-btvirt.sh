#!/bin/bash
# Runs INSIDE the lab VM after each XCTest group: the controllers live in btvirt, and if it
# died every later test fails for that reason alone, so say so once, with the kernel's word.
# Exit status 1 when btvirt is gone.
grep -qsx btvirt /proc/[0-9]*/comm && exit 0
echo "[lab-step] FAILED: btvirt (the controller emulator) is no longer running; later groups have no controllers." \
     "Kernel log: $(dmesg 2>/dev/null | grep -E 'btvirt.*(fault|segfault|trap)' | tail -1)"
exit 1
