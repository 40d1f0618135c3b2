#!/usr/bin/env bash
# Install what the Bluetooth lab (scripts/bt-lab.sh) needs on Debian 12.
# Idempotent: when everything is present it only checks and returns in about a second.
#
#   scripts/setup-bt-lab.sh            # install if missing
#   scripts/setup-bt-lab.sh --check    # report only, exit 1 if something is missing
#
# Environment: PEERLINK_LAB_DIR (default /opt/peerlink-lab) holds the virtme-ng venv, the
# unpacked NetworkManager (networkmanager/, or PEERLINK_LAB_NM_DIR) and the lab's btvirt
# (btvirt/btvirt: BlueZ's controller emulator with the patches Hardware/bt-lab/btvirt-*.patch).
set -euo pipefail

LAB_DIR="${PEERLINK_LAB_DIR:-/opt/peerlink-lab}"
VENV="$LAB_DIR/venv"
VNG_VERSION="${PEERLINK_VNG_VERSION:-1.42}"
# wpasupplicant and iw: the Wi-Fi radios of `bt-lab.sh --radios N` (the VM shares this root
# file system read-only, so wpa_supplicant, its D-Bus policy /etc/dbus-1/system.d/
# wpa_supplicant.conf and iw come from here). hostapd: a radio another program drives, in the
# Wi-Fi lab. Installing starts no daemon without systemd (Debian ships hostapd.service masked).
APT_PACKAGES=(qemu-system-x86 linux-image-amd64 busybox-static bluez bluez-test-tools dbus
              python3-dbus python3-venv wpasupplicant iw hostapd
              # to build the lab's btvirt from Debian's bluez source (below)
              gcc libc6-dev dpkg-dev patch xz-utils
              # libraries the unpacked NetworkManager loads (below); libraries start nothing
              libaudit1 libbluetooth3 libcurl3-gnutls libdbus-1-3 libglib2.0-0 libgnutls30 libjansson4
              libpsl5 libreadline8 libselinux1 libslang2 libsystemd0 libudev1)

# NetworkManager for the Wi-Fi lab's NetworkManagerLabTests (Hardware/bt-lab/guest-nm.sh):
# Debian's package and the libraries it needs that the lab host lacks, downloaded and unpacked
# into NM_DIR, never installed: an installed network-manager would take over this host's
# networking. The VM copies it into its throwaway /usr and runs it on a lab node's own bus.
NM_DIR="${PEERLINK_LAB_NM_DIR:-$LAB_DIR/networkmanager}"
NM_PACKAGES=(network-manager libnm0 libmm-glib0 libndp0 libnewt0.52 libteamdctl0)

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

# The lab kernel must be 6.12 or newer. Debian 12's own 6.1 (6.1.0-56) hits a kernel BUG
# ("list_del corruption" in hci_chan_del / rfcomm_session_del) when an ACL goes away under
# open L2CAP/RFCOMM channels (a remote powered off, bluetoothd restarted): the oops kills
# krfcommd or the closing thread, and every later RFCOMM call in that boot hangs. 6.12 from
# bookworm-backports does not (Hardware/bt-lab/README.md, Quirks).
kernel_version_ok() {   # kernel_version_ok 6.12.95+deb12-amd64
    local v=${1%%-*} major minor
    v=${v%%+*}
    major=${v%%.*}
    minor=${v#*.}; minor=${minor%%.*}
    [[ $major =~ ^[0-9]+$ && $minor =~ ^[0-9]+$ ]] && ((major > 6 || (major == 6 && minor >= 12)))
}
lab_kernel_present() {
    local k
    for k in /boot/vmlinuz-*-amd64; do
        [[ -e $k ]] && kernel_version_ok "${k#/boot/vmlinuz-}" && return 0
    done
    return 1
}

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

if lab_kernel_present; then
    log "lab kernel present: $(ls -1 /boot/vmlinuz-*-amd64 | sort -V | tail -1)"
else
    if ((check_only)); then log "no lab kernel (6.12 or newer) in /boot"; exit 1; fi
    export DEBIAN_FRONTEND=noninteractive
    if ! grep -rqs "bookworm-backports" /etc/apt/sources.list /etc/apt/sources.list.d/; then
        log "adding bookworm-backports (for a 6.12 kernel) to /etc/apt/sources.list.d/peerlink-bookworm-backports.sources"
        printf '%s\n' "Types: deb" "URIs: http://deb.debian.org/debian" "Suites: bookworm-backports" "Components: main" \
            "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg" |
            $SUDO tee /etc/apt/sources.list.d/peerlink-bookworm-backports.sources >/dev/null
    fi
    log "installing the lab kernel: linux-image-amd64 from bookworm-backports"
    $SUDO apt-get update -q
    $SUDO apt-get install -y -q --no-install-recommends -t bookworm-backports linux-image-amd64
    lab_kernel_present || { log "no 6.12+ kernel in /boot after installing linux-image-amd64 from bookworm-backports"; exit 1; }
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

# Unpacked NetworkManager: present, and every library its programs and plugins load resolves
# (from this host or from NM_DIR).
nm_missing_libs() {   # prints "file: lib" for each unresolved library; empty when complete
    local f
    for f in "$NM_DIR/usr/sbin/NetworkManager" "$NM_DIR/usr/bin/nmcli" "$NM_DIR"/usr/lib/x86_64-linux-gnu/NetworkManager/*/*.so; do
        [[ -e $f ]] || { echo "$f: missing"; continue; }
        # the plugins load libnm-wwan.so from their own directory
        LD_LIBRARY_PATH="$NM_DIR/usr/lib/x86_64-linux-gnu:${f%/*}" ldd "$f" 2>&1 | awk -v f="${f#"$NM_DIR"}" '/not found/ {print f ": " $1}'
    done
}
nm_ok() { [[ -x $NM_DIR/usr/sbin/NetworkManager && -x $NM_DIR/usr/bin/nmcli ]] && [[ -z $(nm_missing_libs) ]]; }

if nm_ok; then
    log "NetworkManager unpacked in $NM_DIR ($(cat "$NM_DIR/.packages" 2>/dev/null | tr '\n' ' '))"
else
    if ((check_only)); then log "NetworkManager not unpacked (or incomplete) in $NM_DIR"; exit 1; fi
    log "unpacking ${NM_PACKAGES[*]} into $NM_DIR (apt-get download + dpkg-deb -x; not installed)"
    dl=$(mktemp -d "${TMPDIR:-/tmp}/peerlink-nm-debs.XXXXXX")
    chmod 755 "$dl"; $SUDO chown _apt "$dl" 2>/dev/null || true   # apt's _apt user downloads into it
    ( cd "$dl" && $SUDO apt-get download -q "${NM_PACKAGES[@]}" ) ||
        { $SUDO apt-get update -q && ( cd "$dl" && $SUDO apt-get download -q "${NM_PACKAGES[@]}" ); } ||
        { log "apt-get download ${NM_PACKAGES[*]} failed"; $SUDO rm -rf "$dl"; exit 1; }
    $SUDO rm -rf "$NM_DIR.new"
    $SUDO mkdir -p "$NM_DIR.new"
    for deb in "$dl"/*.deb; do
        $SUDO dpkg-deb -x "$deb" "$NM_DIR.new" || { log "dpkg-deb -x $deb failed"; $SUDO rm -rf "$dl"; exit 1; }
        echo "$(dpkg-deb -f "$deb" Package)=$(dpkg-deb -f "$deb" Version)" | $SUDO tee -a "$NM_DIR.new/.packages" >/dev/null
    done
    $SUDO rm -rf "$dl"
    $SUDO rm -rf "$NM_DIR"
    $SUDO mv "$NM_DIR.new" "$NM_DIR"
    nm_ok || { log "NetworkManager in $NM_DIR still lacks libraries: $(nm_missing_libs | tr '\n' ' ')"; exit 1; }
fi

# The lab's btvirt: BlueZ's controller emulator built from Debian's source of the installed
# bluez with the patches Hardware/bt-lab/btvirt-*.patch, in name order. The packaged btvirt
# skips the responder's IO Capability Request in every pairing after its first, so one side
# stores a bond the other lacks and BlueZ's default configuration then refuses the pair: not
# what two real controllers do (Hardware/bt-lab/README.md, "The emulator's pairing state");
# btvirt-replug.patch lets SIGUSR2 unplug the set's last controller and plug it in again.
# Rebuilt when the installed bluez or a patch changes (BTVIRT_DIR/.source says which).
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BTVIRT_DIR="$LAB_DIR/btvirt"
BTVIRT_PATCHES=("$REPO"/Hardware/bt-lab/btvirt-*.patch)
btvirt_source() {   # what the built btvirt must come from
    printf 'bluez=%s patch=%s\n' "$(dpkg-query -W -f='${Version}' bluez 2>/dev/null)" "$(cat "${BTVIRT_PATCHES[@]}" | sha256sum | cut -c1-16)"
}
btvirt_ok() { [[ -x $BTVIRT_DIR/btvirt && "$(cat "$BTVIRT_DIR/.source" 2>/dev/null)" == "$(btvirt_source)" ]]; }

if btvirt_ok; then
    log "lab btvirt present: $BTVIRT_DIR/btvirt ($(cat "$BTVIRT_DIR/.source"))"
else
    if ((check_only)); then log "lab btvirt missing or stale in $BTVIRT_DIR (want $(btvirt_source))"; exit 1; fi
    version=$(dpkg-query -W -f='${Version}' bluez)
    log "building btvirt from Debian's bluez $version source with $(for p in "${BTVIRT_PATCHES[@]}"; do printf '%s ' "$(basename "$p")"; done)"
    src=$(mktemp -d "${TMPDIR:-/tmp}/peerlink-bluez-src.XXXXXX")
    chmod 777 "$src"   # apt's _apt user downloads into it
    mkdir -p "$src/lists/partial"
    # A private source list and index: the host's apt configuration is left as it is.
    printf 'deb-src http://deb.debian.org/debian %s main\n' bookworm bookworm-updates >"$src/sources.list"
    printf 'deb-src http://deb.debian.org/debian-security bookworm-security main\n' >>"$src/sources.list"
    apt_src=(-q -o Dir::Etc::SourceList="$src/sources.list" -o Dir::Etc::SourceParts=/dev/null -o Dir::State::Lists="$src/lists")
    built=0
    if $SUDO apt-get "${apt_src[@]}" update >"$src/apt.log" 2>&1 &&
       { ( cd "$src" && $SUDO apt-get "${apt_src[@]}" source "bluez=$version" ) >>"$src/apt.log" 2>&1 ||
         ( cd "$src" && $SUDO apt-get "${apt_src[@]}" source bluez ) >>"$src/apt.log" 2>&1; }; then
        tree=$(ls -d "$src"/bluez-*/ 2>/dev/null | head -n 1)
        if [[ -n $tree ]] && ( cd "$tree" && for p in "${BTVIRT_PATCHES[@]}"; do $SUDO patch -p1 --forward <"$p" || exit 1; done ) >>"$src/apt.log" 2>&1; then
            printf '#define VERSION "%s"\n' "$version" | $SUDO tee "$tree/config.h" >/dev/null
            # btvirt's sources (BlueZ's Makefile.tools) and the parts of src/shared and lib it uses
            if ( cd "$tree" && $SUDO gcc -O2 -w -DHAVE_CONFIG_H -I. -o "$src/btvirt" \
                    emulator/main.c emulator/serial.c emulator/server.c emulator/vhci.c emulator/btdev.c \
                    emulator/bthost.c emulator/smp.c emulator/phy.c emulator/amp.c emulator/le.c \
                    src/shared/mainloop.c src/shared/mainloop-notify.c src/shared/io-mainloop.c \
                    src/shared/timeout-mainloop.c src/shared/util.c src/shared/queue.c src/shared/crypto.c \
                    src/shared/ecc.c lib/bluetooth.c lib/hci.c ) >>"$src/apt.log" 2>&1; then
                $SUDO mkdir -p "$BTVIRT_DIR"
                $SUDO install -m 755 "$src/btvirt" "$BTVIRT_DIR/btvirt"
                btvirt_source | $SUDO tee "$BTVIRT_DIR/.source" >/dev/null
                built=1
            fi
        fi
    fi
    if ((!built)); then
        log "building the lab's btvirt failed; the last lines of its log:"
        tail -n 15 "$src/apt.log" >&2
        $SUDO rm -rf "$src"
        exit 1
    fi
    $SUDO rm -rf "$src"
    btvirt_ok || { log "btvirt built but $BTVIRT_DIR/.source does not match"; exit 1; }
    log "lab btvirt built: $BTVIRT_DIR/btvirt"
fi

# The stock kernel image must be readable by the user running qemu (Debian makes it 0600).
for k in /boot/vmlinuz-*-amd64; do
    if [[ ! -r "$k" ]]; then
        ((check_only)) && { log "$k is not readable by $(id -un)"; exit 1; }
        $SUDO chmod a+r "$k"
    fi
done
log "ready: vng=$VENV/bin/vng btvirt=$BTVIRT_DIR/btvirt kernel=$(ls -1 /boot/vmlinuz-*-amd64 | sort -V | tail -1)"
