#!/usr/bin/env bash
# Install what the Bluetooth lab (scripts/bt-lab.sh) needs on Debian 12.
# Idempotent: when everything is present it only checks and returns in about a second.
#
#   scripts/setup-bt-lab.sh            # install if missing
#   scripts/setup-bt-lab.sh --check    # report only, exit 1 if something is missing
#
# Environment: PEERLINK_LAB_DIR (default /opt/peerlink-lab) holds the virtme-ng venv.
set -euo pipefail

LAB_DIR="${PEERLINK_LAB_DIR:-/opt/peerlink-lab}"
VENV="$LAB_DIR/venv"
VNG_VERSION="${PEERLINK_VNG_VERSION:-1.42}"
APT_PACKAGES=(qemu-system-x86 linux-image-amd64 busybox-static bluez bluez-test-tools dbus
              python3-dbus python3-venv)

check_only=0
[[ "${1:-}" == "--check" ]] && check_only=1

log() { printf '[setup-bt-lab] %s\n' "$*" >&2; }

SUDO=""
if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || { log "must run as root (or have sudo)"; exit 1; }
    SUDO="sudo"
fi

missing_apt() {
    local p status
    for p in "${APT_PACKAGES[@]}"; do
        status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
        [[ "$status" == "install ok installed" ]] || printf '%s\n' "$p"
    done
}

kernel_present() { compgen -G '/boot/vmlinuz-*-amd64' >/dev/null; }

vng_ok() {
    [[ -x "$VENV/bin/vng" ]] || return 1
    local v
    v=$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("virtme-ng"))' 2>/dev/null) || return 1
    [[ "$v" == "$VNG_VERSION" ]]
}

mapfile -t need < <(missing_apt)
if ((${#need[@]})) || ! kernel_present; then
    if ((check_only)); then log "missing apt packages: ${need[*]:-(kernel image)}"; exit 1; fi
    log "installing apt packages: ${need[*]:-linux-image-amd64}"
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -q
    $SUDO apt-get install -y -q --no-install-recommends "${APT_PACKAGES[@]}"
    kernel_present || { log "no /boot/vmlinuz-*-amd64 after installing linux-image-amd64"; exit 1; }
else
    log "apt packages present"
fi

if vng_ok; then
    log "virtme-ng $VNG_VERSION present in $VENV"
else
    if ((check_only)); then log "virtme-ng $VNG_VERSION missing in $VENV"; exit 1; fi
    log "installing virtme-ng==$VNG_VERSION into $VENV"
    $SUDO mkdir -p "$LAB_DIR"
    # Debian's python3 explicitly: another python on PATH (pyenv etc.) may vanish later.
    [[ -x "$VENV/bin/python" ]] || $SUDO /usr/bin/python3 -m venv "$VENV"
    $SUDO "$VENV/bin/pip" install -q "virtme-ng==$VNG_VERSION"
    vng_ok || { log "virtme-ng install did not produce $VENV/bin/vng"; exit 1; }
fi

# The stock kernel image must be readable by the user running qemu (Debian makes it 0600).
for k in /boot/vmlinuz-*-amd64; do
    if [[ ! -r "$k" ]]; then
        ((check_only)) && { log "$k is not readable by $(id -un)"; exit 1; }
        $SUDO chmod a+r "$k"
    fi
done
log "ready: vng=$VENV/bin/vng kernel=$(ls -1 /boot/vmlinuz-*-amd64 | sort -V | tail -1)"
