#!/usr/bin/env bash
# Benchmark of the Wi-Fi Direct upgrade (issue 14) in the Bluetooth lab VM, one boot:
# the time from the first bulk byte to bulk on Wi-Fi Direct (and each set-up step), and the
# transfer time of one file with the upgrade, over Bluetooth alone, and as a raw TCP copy over
# a Wi-Fi Direct group between the same two radios (Hardware/bt-lab/upgrade-bench.sh).
#
#   scripts/bench-upgrade.sh [--mib N] [--optimistic-dad] [--results DIR]
#
#   --mib N         file size in MiB (default 64)
#   --optimistic-dad  set up the guest as `peerlink doctor` suggests (net.ipv6.conf.default.
#                   optimistic_dad and use_optimistic = 1, before any group interface exists),
#                   so both sides use their group address during DAD; the raw copy does too.
#                   Default: the kernel's settings as Debian ships them (DAD waited out)
#   --results DIR   where the logs and bench-summary.txt go (default: a new directory under
#                   ${TMPDIR:-/tmp}/peerlink-bt-lab/)
#
# Builds peerlink in release mode (scratch path .build-bench; debug is CPU-bound in the
# emulated VM), waits for /tmp/peerlink-vm.lock (one VM at a time on a machine), boots the lab
# with 2 controllers and 2 radios, and prints the summary. Exit status: 0 when all three
# transfers completed with identical files and the upgrade run moved bulk to Wi-Fi Direct;
# otherwise non-zero (the lab's own status).
set -uo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
usage() { sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
MIB=64 RESULTS="" DAD=default
while (($#)); do
    case $1 in
        --mib) MIB=${2:?--mib needs a number}; shift 2 ;;
        --results) RESULTS=${2:?--results needs a directory}; shift 2 ;;
        --optimistic-dad) DAD=optimistic; shift ;;
        -h | --help) usage ;;
        *) echo "unknown option '$1'" >&2; usage ;;
    esac
done
[[ $MIB =~ ^[0-9]+$ ]] && ((MIB > 0)) || { echo "--mib must be a positive number" >&2; exit 2; }
if [[ -z $RESULTS ]]; then
    mkdir -p "${TMPDIR:-/tmp}/peerlink-bt-lab"
    RESULTS=$(mktemp -d "${TMPDIR:-/tmp}/peerlink-bt-lab/bench-upgrade-$(date +%Y%m%d-%H%M%S)-XXXX")
fi

mkdir -p "$RESULTS" || exit 1
command -v swift >/dev/null || export PATH=/opt/swift/usr/bin:$PATH
cd "$REPO" || exit 1
echo "[bench] building peerlink (release, .build-bench)…" >&2
swift build -c release --product peerlink --scratch-path .build-bench >"$RESULTS/build.log" 2>&1 ||
    { tail -30 "$RESULTS/build.log"; exit 1; }
BIN="$(swift build -c release --scratch-path .build-bench --show-bin-path)/peerlink"

echo "[bench] host: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'); waiting for the lab lock…" >&2
# Memory: the file, its copies and the overlays live in the VM's RAM.
flock /tmp/peerlink-vm.lock "$REPO/scripts/bt-lab.sh" run --controllers 2 --radios 2 --no-trace --quiet \
    --memory 2G --timeout $((600 + MIB * 12)) --results "$RESULTS" -- \
    "$REPO/Hardware/bt-lab/upgrade-bench.sh" "$BIN" "$MIB" "$DAD"
rc=$?
echo "[bench] logs and bench-summary.txt in $RESULTS (exit status $rc)" >&2
exit "$rc"
