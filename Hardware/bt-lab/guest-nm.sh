#!/bin/bash
# Runs INSIDE the lab VM (as root, after guest-wifi.sh): NetworkManager for one node of the
# Wi-Fi lab, as a Raspberry Pi OS Bookworm or Debian 12 machine runs it from boot: Debian's
# network-manager 1.42 (unpacked on the host by scripts/setup-bt-lab.sh, never installed there)
# on node K's system bus, managing node K's radio. Used by NetworkManagerLabTests.
#
#   guest-nm.sh start K      # start node K's NetworkManager; wait until it has added wlanK to
#                            # node K's wpa_supplicant (CreateInterface) and manages it
#   guest-nm.sh unmanage K   # the documented user fix: `nmcli device set wlanK managed no`
#                            # on node K's bus; waits until wlanK is unmanaged and NetworkManager
#                            # has removed it from wpa_supplicant
#   guest-nm.sh stop K       # end node K's NetworkManager (and anything it started), wait
#
# What it sets up and nothing more: the first start copies the unpacked package into the VM's
# throwaway /usr and /etc (the binaries, /usr/lib/NetworkManager with its helpers and conf.d,
# the plugins and the libraries the host lacks, the D-Bus policy; NetworkManager.conf as
# Debian ships it) and reloads the bus configuration; the D-Bus
# activation files are left out, so nothing outside the process below is ever started. Each
# NetworkManager runs in its own mount namespace with tmpfs /run/NetworkManager,
# /var/lib/NetworkManager and /etc/NetworkManager/conf.d; the latter holds one file: the
# other nodes' radios and their group interfaces unmanaged (they belong to other "machines"
# sharing this VM), dns=none and rc-manager=unmanaged (no resolv.conf), auth-polkit=false (no
# polkit in the VM), debug logging. Its log goes to $PEERLINK_LAB_RESULTS/networkmanager-K.log.
#
# Prints one line per command with its figures ("... after 2.31 s"); exit status 0 when done,
# 1 with the reason otherwise.
set -uo pipefail
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
NM_DIR=${PEERLINK_LAB_NM_DIR:-/opt/peerlink-lab/networkmanager}
STATE=/run/bt-lab/nm
RESULTS=${PEERLINK_LAB_RESULTS:-/tmp}
NM=org.freedesktop.NetworkManager
WPA=fi.w1.wpa_supplicant1
mkdir -p "$STATE"

T0=${EPOCHREALTIME/./}
elapsed() { local now=${EPOCHREALTIME/./}; printf '%d.%02d' $(((now - T0) / 1000000)) $(((now - T0) / 10000 % 100)); }
say() { printf 'guest-nm: %s\n' "$*"; }
die() { say "FAILED: $*"; exit 1; }
usage() { sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }

K=${2:-}
[[ $K =~ ^[0-9]+$ ]] || usage
v=PEERLINK_LAB_WIFI$K; RADIO=${!v:-}
v=PEERLINK_LAB_WIFI${K}_BUS; BUS=${!v:-}
[[ -n $RADIO && -n $BUS ]] || die "node $K has no radio in this lab (PEERLINK_LAB_WIFI$K, PEERLINK_LAB_WIFI${K}_BUS unset: bt-lab.sh --radios N)"
PIDFILE=$STATE/nm-$K.pid
LOG=$RESULTS/networkmanager-$K.log

call() {   # call DEST PATH METHOD ARGS... on node K's bus
    local dest=$1 path=$2 method=$3; shift 3
    timeout 10 dbus-send --bus="$BUS" --print-reply --dest="$dest" "$path" "$method" "$@" 2>/dev/null
}
has_owner() { call org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus.NameHasOwner "string:$1" | grep -q 'boolean true'; }
supplicant_has_radio() {   # is RADIO among wpa_supplicant's interfaces on node K's bus?
    local p
    for p in $(call $WPA /fi/w1/wpa_supplicant1 org.freedesktop.DBus.Properties.Get string:$WPA string:Interfaces | grep -o '"/fi[^"]*"' | tr -d '"'); do
        call $WPA "$p" org.freedesktop.DBus.Properties.Get string:$WPA.Interface string:Ifname | grep -q "\"$RADIO\"" && return 0
    done
    return 1
}
nm_device() { call $NM /org/freedesktop/NetworkManager $NM.GetDeviceByIpIface "string:$RADIO" | grep -o '"/org[^"]*"' | tr -d '"'; }
nm_prop() {   # nm_prop NAME -> the value of the radio's Device property NAME
    local dev
    dev=$(nm_device) && [[ -n $dev ]] || return 1
    call $NM "$dev" org.freedesktop.DBus.Properties.Get string:$NM.Device "string:$1" | awk 'NR > 1 {print $NF}' | tr -d '"'
}
nm_pid() { local p; p=$(cat "$PIDFILE" 2>/dev/null) && kill -0 "$p" 2>/dev/null && echo "$p"; }

install_nm() {   # into the VM's throwaway overlays, once per boot
    [[ -x /usr/sbin/NetworkManager && -e $STATE/installed ]] && return 0
    [[ -x $NM_DIR/usr/sbin/NetworkManager ]] || die "no NetworkManager unpacked in $NM_DIR (run scripts/setup-bt-lab.sh on the host)"
    cp -a "$NM_DIR/usr/sbin/NetworkManager" /usr/sbin/ &&
        cp -a "$NM_DIR/usr/bin/nmcli" /usr/bin/ &&
        cp -a "$NM_DIR/usr/lib/." /usr/lib/ &&
        mkdir -p /usr/share/dbus-1/system.d /etc/NetworkManager /var/lib/NetworkManager /run/NetworkManager &&
        cp -a "$NM_DIR/usr/share/dbus-1/system.d/." /usr/share/dbus-1/system.d/ &&
        cp -a "$NM_DIR/etc/NetworkManager/." /etc/NetworkManager/ ||
        die "copying $NM_DIR into the VM's /usr and /etc failed"
    mkdir -p /etc/NetworkManager/conf.d
    touch "$STATE/installed"
}

conf_for_node() {   # the conf.d file of node K's NetworkManager
    local j v others=() n
    for ((j = 0; j < ${PEERLINK_LAB_RADIOS:-0}; j++)); do
        ((j == K)) && continue
        v=PEERLINK_LAB_WIFI$j
        others+=("interface-name:${!v}" "interface-name:p2p-${!v}-*" "interface-name:p2p-dev-${!v}")
    done
    others+=("interface-name:hwsim*")
    # anything else in this VM (lab plumbing) is not this node's either
    for n in /sys/class/net/*; do
        n=${n##*/}
        case $n in lo | "$RADIO" | p2p-* | hwsim* | wlan*) ;; *) others+=("interface-name:$n") ;; esac
    done
    cat <<EOF
# node $K of the PeerLink Wi-Fi lab (Hardware/bt-lab/guest-nm.sh): NetworkManager manages
# $RADIO as on a machine of its own; the other nodes' radios are not this machine's.
[main]
auth-polkit=false
dns=none
rc-manager=unmanaged

[keyfile]
unmanaged-devices=$(IFS=';'; echo "${others[*]}")

[logging]
level=DEBUG
EOF
}

case ${1:-} in
start)
    [[ -n $(nm_pid) ]] && die "node $K's NetworkManager already runs (pid $(nm_pid))"
    has_owner $NM && die "$NM is already owned on $BUS"
    has_owner $WPA || die "no wpa_supplicant on node $K's bus $BUS"
    supplicant_has_radio && die "wpa_supplicant on $BUS already has $RADIO before NetworkManager started"
    T0=${EPOCHREALTIME/./}
    install_nm
    t_install=$(elapsed)
    call org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus.ReloadConfig >/dev/null ||
        die "ReloadConfig on $BUS failed (the bus needs NetworkManager's D-Bus policy)"
    conf_for_node > "$STATE/nm-$K.conf"
    {
        echo "===== $(date +%T.%3N) guest-nm.sh start $K ($RADIO, bus $BUS); conf.d/90-peerlink-lab.conf:"
        cat "$STATE/nm-$K.conf"
        echo "====="
    } >>"$LOG"
    T0=${EPOCHREALTIME/./}
    # setsid: its own session, so that stop can end whatever it starts; unshare execs bash,
    # bash execs NetworkManager: $! is NetworkManager's pid.
    setsid unshare -m --propagation private /bin/bash -c '
        mount -t tmpfs -o mode=0755 tmpfs /run/NetworkManager &&
        mount -t tmpfs -o mode=0700 tmpfs /var/lib/NetworkManager &&
        mount -t tmpfs -o mode=0755 tmpfs /etc/NetworkManager/conf.d &&
        cp "$1" /etc/NetworkManager/conf.d/90-peerlink-lab.conf &&
        exec env DBUS_SYSTEM_BUS_ADDRESS="$2" /usr/sbin/NetworkManager --debug' \
        guest-nm "$STATE/nm-$K.conf" "$BUS" >>"$LOG" 2>&1 </dev/null &
    pid=$!
    echo "$pid" > "$PIDFILE"
    t_bus="" t_added="" t_managed="" state=""
    for _ in $(seq 600); do
        kill -0 "$pid" 2>/dev/null || { rm -f "$PIDFILE"; die "NetworkManager for node $K exited: $(tail -n 3 "$LOG" | tr '\n' ' ')"; }
        [[ -z $t_bus ]] && has_owner $NM && t_bus=$(elapsed)
        [[ -n $t_bus && -z $t_added ]] && supplicant_has_radio && t_added=$(elapsed)
        if [[ -n $t_bus && -z $t_managed && $(nm_prop Managed) == true ]]; then t_managed=$(elapsed); fi
        [[ -n $t_added && -n $t_managed ]] && break
        sleep 0.1
    done
    [[ -n $t_added && -n $t_managed ]] ||
        die "after $(elapsed) s NetworkManager for node $K: on the bus ${t_bus:-never}, $RADIO in wpa_supplicant ${t_added:-never}, managed ${t_managed:-never}"
    state=$(nm_prop State)
    version=$(call $NM /org/freedesktop/NetworkManager org.freedesktop.DBus.Properties.Get string:$NM string:Version | awk 'NR > 1 {print $NF}' | tr -d '"')
    say "node $K NetworkManager $version pid $pid (copied into the VM in $t_install s): on the bus after $t_bus s, $RADIO added to wpa_supplicant after $t_added s, managed (device state $state) after $t_managed s"
    ;;
unmanage)
    [[ -n $(nm_pid) ]] || die "node $K's NetworkManager is not running"
    T0=${EPOCHREALTIME/./}
    out=$(DBUS_SYSTEM_BUS_ADDRESS=$BUS timeout 30 nmcli device set "$RADIO" managed no 2>&1) ||
        die "nmcli device set $RADIO managed no: $out"
    t_cmd=$(elapsed) t_unmanaged="" t_removed=""
    for _ in $(seq 300); do
        [[ -z $t_unmanaged && $(nm_prop Managed) == false ]] && t_unmanaged=$(elapsed)
        [[ -z $t_removed ]] && ! supplicant_has_radio && t_removed=$(elapsed)
        [[ -n $t_unmanaged && -n $t_removed ]] && break
        sleep 0.1
    done
    say "node $K: nmcli device set $RADIO managed no returned after $t_cmd s; unmanaged after ${t_unmanaged:-never (30 s)} s, $RADIO removed from wpa_supplicant after ${t_removed:-never (30 s)} s"
    [[ -n $t_unmanaged ]] || die "$RADIO is still managed 30 s after nmcli device set $RADIO managed no"
    ;;
stop)
    pid=$(nm_pid) || { rm -f "$PIDFILE"; say "node $K's NetworkManager is not running"; exit 0; }
    T0=${EPOCHREALTIME/./}
    kill -TERM "$pid"
    for _ in $(seq 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    how=SIGTERM
    if kill -0 "$pid" 2>/dev/null; then how="SIGKILL after 20 s"; kill -KILL "$pid"; fi
    # whatever it started (its session: setsid above) goes with it
    pkill -KILL -s "$pid" 2>/dev/null
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    t_exit=$(elapsed)
    rm -f "$PIDFILE"
    for _ in $(seq 100); do supplicant_has_radio || break; sleep 0.1; done
    left=""; supplicant_has_radio && left=" ($RADIO is still in wpa_supplicant)"
    echo "===== $(date +%T.%3N) guest-nm.sh stop $K: exited after $t_exit s ($how)$left" >>"$LOG"
    say "node $K NetworkManager pid $pid exited after $t_exit s ($how)$left"
    ;;
*) usage ;;
esac
exit 0
