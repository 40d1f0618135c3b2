#!/usr/bin/env bash
# PeerLink's Bluetooth lab: boots a stock Debian kernel (6.12+) in a VM (virtme-ng + QEMU; TCG
# unless the CPU has vmx/svm) with linked virtual controllers (btvirt), bluetoothd on the
# system D-Bus, and runs a command there. See Hardware/bt-lab/README.md.
#
#   scripts/bt-lab.sh run [OPTIONS] -- COMMAND [ARGS...]
#   scripts/bt-lab.sh smoke [OPTIONS]        # Hardware/bt-lab/smoke.py inside the lab
#   scripts/bt-lab.sh baseline [OPTIONS] [-- --runs N --bytes B]
#                                            # rctest/l2test throughput hci0 -> hci1
#
# OPTIONS
#   --results DIR      where logs, btmon trace and timings go (default: a new directory
#                      under ${TMPDIR:-/tmp}/peerlink-bt-lab/)
#   --timeout S        time limit for COMMAND inside the VM (default 600)
#   --controllers N    number of virtual controllers hci0..hci(N-1) (default 2; baseline 4)
#   --radios N         also N virtual Wi-Fi radios (mac80211_hwsim) with one wpa_supplicant
#                      per radio, started as Debian's wpa_supplicant.service starts it (D-Bus
#                      only, no interface added); default 0 (Hardware/bt-lab/guest-wifi.sh)
#   --keep-trace       keep btmon.btsnoop even when COMMAND succeeds (always kept on failure)
#   --no-trace         do not run btmon at all (it costs CPU in the VM: see the README)
#   --memory SIZE      guest memory (default 1G)
#   --quiet            show only COMMAND's output and the outcome (the whole console is
#                      still saved to console.log in the results directory)
#
# Environment: PEERLINK_LAB_BTVIRT, the controller emulator to run (default: the lab's patched
# build from scripts/setup-bt-lab.sh; `btvirt` runs Debian's packaged one, whose pairing state
# goes stale: Hardware/bt-lab/README.md, "The emulator's pairing state").
#
# Exit status: COMMAND's (124 when it timed out); 125 when the lab itself failed (the failing
# step is printed); 2 for usage errors.
#
# COMMAND runs as root in the VM, in the caller's working directory, with the host's root
# file system read-only; only the results directory is writable on the host (the VM's /tmp
# and others are throwaway overlays). It sees PEERLINK_LAB=1, PEERLINK_LAB_HCI0=<bdaddr>,
# PEERLINK_LAB_HCI1=..., PEERLINK_LAB_CONTROLLERS and PEERLINK_LAB_RESULTS; with --radios N
# also PEERLINK_LAB_RADIOS=N, PEERLINK_LAB_WIFI<K>=wlanK and PEERLINK_LAB_WIFI<K>_BUS (the D-Bus
# address of node K's wpa_supplicant) and PEERLINK_LAB_WIFI<K>_MAC.
set -uo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LAB="$REPO/Hardware/bt-lab"
VENV="${PEERLINK_LAB_DIR:-/opt/peerlink-lab}/venv"
BTVIRT="${PEERLINK_LAB_BTVIRT:-${PEERLINK_LAB_DIR:-/opt/peerlink-lab}/btvirt/btvirt}"
T_START=${EPOCHREALTIME/./}

say() { printf '[bt-lab] %s\n' "$*" >&2; }
usage() { sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
lab_fail() { say "FAILED step $1: $2"; exit 125; }

(($#)) || usage
MODE=$1; shift
case $MODE in run | smoke | baseline) ;; -h | --help | help) usage ;; *) say "unknown mode '$MODE'"; usage ;; esac

RESULTS="" TIMEOUT=600 CONTROLLERS="" KEEP_TRACE=0 MEMORY=1G QUIET=0 TRACE=1 RADIOS=0
while (($#)); do
    case $1 in
        --results) RESULTS=${2:?--results needs a directory}; shift 2 ;;
        --timeout) TIMEOUT=${2:?--timeout needs seconds}; shift 2 ;;
        --controllers) CONTROLLERS=${2:?--controllers needs a number}; shift 2 ;;
        --radios) RADIOS=${2:?--radios needs a number}; shift 2 ;;
        --keep-trace) KEEP_TRACE=1; shift ;;
        --no-trace) TRACE=0; shift ;;
        --memory) MEMORY=${2:?--memory needs a size}; shift 2 ;;
        --quiet) QUIET=1; shift ;;
        --) shift; break ;;
        -h | --help) usage ;;
        *) if [[ $MODE == run ]]; then say "unexpected '$1' (put the command after --)"; else say "unexpected '$1'"; fi; usage ;;
    esac
done
# the baseline keeps LE on its own controller pair (hci2 -> hci3)
[[ -n $CONTROLLERS ]] || { [[ $MODE == baseline ]] && CONTROLLERS=4 || CONTROLLERS=2; }
[[ $TIMEOUT =~ ^[0-9]+$ ]] || { say "--timeout must be whole seconds"; exit 2; }
[[ $CONTROLLERS =~ ^[0-9]+$ ]] && ((CONTROLLERS >= 2 && CONTROLLERS <= 16)) ||
    { say "--controllers must be 2..16"; exit 2; }
[[ $RADIOS =~ ^[0-9]+$ ]] && ((RADIOS <= 8)) || { say "--radios must be 0..8"; exit 2; }

case $MODE in
    run) (($#)) || { say "run: no command given after --"; usage; }
         CMD=("$@") ;;
    smoke) (($#)) && { say "smoke takes no command"; exit 2; }
           CMD=(/usr/bin/python3 -u "$LAB/smoke.py") ;;
    baseline) CMD=(/bin/bash "$LAB/baseline.sh" "$@") ;;
esac

# ---- host checks ------------------------------------------------------------------------
"$REPO/scripts/setup-bt-lab.sh" --check >/dev/null 2>&1 ||
    lab_fail host-check "lab not installed: run scripts/setup-bt-lab.sh (as root) first"
command -v "$BTVIRT" >/dev/null ||
    lab_fail host-check "no controller emulator at $BTVIRT: run scripts/setup-bt-lab.sh (as root)"
KERNEL=${PEERLINK_LAB_KERNEL:-$(ls -1 /boot/vmlinuz-*-amd64 2>/dev/null | sort -V | tail -n 1)}
[[ -n $KERNEL && -r $KERNEL ]] || lab_fail host-check "no readable /boot/vmlinuz-*-amd64 (install linux-image-amd64)"
if grep -qwE 'vmx|svm' /proc/cpuinfo && [[ -w /dev/kvm ]]; then
    ACCEL=() ACCEL_NAME=kvm
else
    # /dev/kvm may exist without vmx/svm: a stock kernel then hangs or QEMU aborts.
    ACCEL=(--disable-kvm) ACCEL_NAME=tcg
fi

if [[ -z $RESULTS ]]; then
    base="${TMPDIR:-/tmp}/peerlink-bt-lab"
    mkdir -p "$base" || lab_fail results "cannot create $base"
    RESULTS=$(mktemp -d "$base/$MODE-$(date +%Y%m%d-%H%M%S)-XXXX") || lab_fail results "mktemp in $base"
fi
mkdir -p "$RESULTS" || lab_fail results "cannot create $RESULTS"
RESULTS=$(cd "$RESULTS" && pwd -P)
# a reused directory: drop what a previous run left, so nothing stale is read back
rm -rf "$RESULTS/.lab" "$RESULTS"/btmon-*.btsnoop "$RESULTS"/{boot-retry.txt,exit-code,failed-step,setup.log,btvirt.log,bluetoothd.log,btmon.log,btmon.btsnoop,dmesg.log,console.log,timings.txt,wpa_supplicant.log}
mkdir -p "$RESULTS/.lab"
{
    echo "#!/bin/bash"
    printf 'cd %q 2>/dev/null || cd /\n' "$PWD"
    printf 'exec'; printf ' %q' "${CMD[@]}"; printf '\n'
} > "$RESULTS/.lab/command.sh"

# Worst case: boot (~40 s cold, TCG) + setup (~25 s, up to ~2 min with btvirt retries) +
# command + log collection and shutdown.
HOST_TIMEOUT=$((TIMEOUT + 420))
say "mode=$MODE accel=$ACCEL_NAME kernel=$(basename "$KERNEL") controllers=$CONTROLLERS radios=$RADIOS btvirt=$BTVIRT timeout=${TIMEOUT}s results=$RESULTS"

GUEST_CMD=$(printf 'exec /bin/bash %q %q %q %q %q %q %q %q' "$LAB/guest-run.sh" "$RESULTS" "$CONTROLLERS" "$TIMEOUT" "$KEEP_TRACE" "$TRACE" "$RADIOS" "$BTVIRT")

# QEMU reopens its stdout: give it a pipe, never a file. The filter below timestamps the
# '@@bt-lab stage' markers with the host clock and saves the console.
stamp() {
    local line now stage rest in_command=0
    while IFS= read -r line || [[ -n $line ]]; do
        line=${line%$'\r'}
        printf '%s\n' "$line" >>"$RESULTS/console.log"
        if [[ $line == '@@bt-lab stage '* ]]; then
            now=${EPOCHREALTIME/./}
            rest=${line#@@bt-lab stage }
            stage=${rest%% *}
            printf '%s %d.%03d\n' "$stage" $(((now - T_START) / 1000000)) $(((now - T_START) / 1000 % 1000)) >>"$RESULTS/.lab/stages"
            case $stage in command) in_command=1 ;; command-done) in_command=0 ;; esac
            ((QUIET)) || printf '[bt-lab] +%ds stage %s\n' $(((now - T_START) / 1000000)) "$rest" >&2
            continue
        fi
        if ((!QUIET || in_command)) || [[ $line == *'FAILED step'* ]]; then
            printf '%s\n' "$line"
        fi
    done
}

export PATH="$VENV/bin:$PATH"   # vng runs virtme-run from PATH
boot_vm() {
    timeout -k 15 "$HOST_TIMEOUT" vng --run "$KERNEL" "${ACCEL[@]}" --memory "$MEMORY" \
        --rwdir="$RESULTS" --exec "$GUEST_CMD" </dev/null 2>&1 | stamp
    VM_RC=${PIPESTATUS[0]}
}
boot_vm
# A VM that ends in its first seconds without a word from QEMU or the kernel never ran any of
# our code (seen once in CI: status 255 after 12 s, empty console). Boot once more, and say so;
# anything that reached the guest, or a timeout, is reported as it is.
if ((VM_RC != 0 && VM_RC != 124 && VM_RC != 137)) && [[ ! -s $RESULTS/.lab/stages && ! -s $RESULTS/console.log ]]; then
    say "the VM exited with status $VM_RC after $(((${EPOCHREALTIME/./} - T_START) / 1000000)) s with no console output, before the guest started; booting once more"
    echo "attempt 1: status $VM_RC, no console output" >"$RESULTS/boot-retry.txt"
    boot_vm
fi
T_END=${EPOCHREALTIME/./}

# ---- timings ------------------------------------------------------------------------------
stage_at() { awk -v s="$1" '$1 == s {print $2; exit}' "$RESULTS/.lab/stages" 2>/dev/null; }
span() {  # span FROM TO -> seconds with one decimal, or '?'
    local a b
    a=${1:-}; b=${2:-}
    [[ -n $a && -n $b ]] || { echo '?'; return; }
    awk -v a="$a" -v b="$b" 'BEGIN {printf "%.1f", b - a}'
}
total=$(awk -v t=$((T_END - T_START)) 'BEGIN {printf "%.1f", t / 1e6}')
boot=$(span 0 "$(stage_at guest-start)")
setup=$(span "$(stage_at guest-start)" "$(stage_at btmon)")
wifi=$(span "$(stage_at wifi)" "$(stage_at btmon)")   # part of setup; '?' without --radios
command=$(span "$(stage_at command)" "$(stage_at command-done)")
shutdown=$(span "$(stage_at command-done)" "$total")
{
    echo "accel $ACCEL_NAME"
    echo "boot $boot"
    echo "setup $setup"
    ((RADIOS > 0)) && echo "wifi $wifi"
    echo "command $command"
    echo "collect+shutdown $shutdown"
    echo "total $total"
} >"$RESULTS/timings.txt"

# ---- outcome ------------------------------------------------------------------------------
if [[ -f $RESULTS/exit-code ]]; then
    rc=$(<"$RESULTS/exit-code")
    say "timings: boot ${boot}s, setup ${setup}s$( ((RADIOS > 0)) && echo " (wifi ${wifi}s)"), command ${command}s, collect+shutdown ${shutdown}s, total ${total}s"
    say "exit $rc; results in $RESULTS"
    exit "$rc"
fi
say "timings: boot ${boot}s, setup ${setup}s, total ${total}s"
if [[ -f $RESULTS/failed-step ]]; then
    lab_fail "setup/$(cut -d: -f1 "$RESULTS/failed-step")" "$(cut -d: -f2- "$RESULTS/failed-step") (logs in $RESULTS)"
fi
last=$(tail -n 1 "$RESULTS/.lab/stages" 2>/dev/null | awk '{print $1}')
case $VM_RC in
    124 | 137) why="the VM was killed after ${HOST_TIMEOUT}s" ;;
    *) why="the VM exited with status $VM_RC" ;;
esac
case ${last:-} in
    "") lab_fail boot "$why before the guest started (see $RESULTS/console.log)" ;;
    command) lab_fail command "$why while the command ran" ;;
    *) lab_fail "$last" "$why during stage '$last' (see $RESULTS/console.log)" ;;
esac
