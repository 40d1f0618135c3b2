#!/bin/bash
# Runs INSIDE the lab VM (as root): virtual Wi-Fi radios (mac80211_hwsim) and one
# wpa_supplicant per node, started the way Debian's and Raspberry Pi OS's packaged
# wpa_supplicant.service starts it: the D-Bus service only, no interface, no configuration
# file. Nothing here touches the radios: a node adds its interface through D-Bus
# (fi.w1.wpa_supplicant1.CreateInterface), as NetworkManager does.
#
#   guest-wifi.sh start RESULTS_DIR N_RADIOS   # radios + supplicants; writes the env file
#   guest-wifi.sh supplicant K                 # (re)start node K's wpa_supplicant, wait for it
#   guest-wifi.sh stop-supplicant K            # stop node K's wpa_supplicant
#   guest-wifi.sh stop                         # stop every supplicant and the log collector
#
# Radio K (wlanK, phyK) belongs to node K. wpa_supplicant runs one P2P device per process
# (wpas_p2p_init returns early once a P2P module exists), so two nodes that can both do
# Wi-Fi Direct need two processes, and two processes need two bus names: node 0 uses the
# VM's system bus, node K > 0 a bus of its own (a second dbus-daemon started with the
# system configuration, as on a second machine), both in the VM's one network namespace.
#
# For the command, RESULTS_DIR/.lab/wifi.env (sourced by guest-run.sh) sets
#   PEERLINK_LAB_RADIOS=N
#   PEERLINK_LAB_WIFI<K>=wlanK   PEERLINK_LAB_WIFI<K>_BUS=unix:path=...   PEERLINK_LAB_WIFI<K>_MAC=...
# wpa_supplicant logs (its -s goes to syslog) land in RESULTS_DIR/wpa_supplicant.log.
# Exit status 0 when ready; 1 with "[bt-lab] FAILED step wifi/<name>: <reason>".
set -uo pipefail
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
RUN=/run/bt-lab
STATE=$RUN/wifi
mkdir -p "$STATE"

# The packaged service's command line (Debian 12 and Raspberry Pi OS Bookworm,
# /lib/systemd/system/wpa_supplicant.service). BT_LAB_WPA_EXTRA adds options for debugging
# only (e.g. "-dd -t"); the lab itself never sets it.
WPA=/sbin/wpa_supplicant
WPA_ARGS=(-u -s -O "DIR=/run/wpa_supplicant GROUP=netdev")

T0=${EPOCHREALTIME/./}
elapsed() { local now=${EPOCHREALTIME/./}; printf '%d.%02d' $(((now - T0) / 1000000)) $(((now - T0) / 10000 % 100)); }
say() { printf '[bt-lab] %6ss wifi: %s\n' "$(elapsed)" "$*" | tee -a "${SETUP_LOG:-/dev/null}" >&2; }
fail() {
    local name=$1; shift
    say "FAILED step wifi/$name: $*"
    [[ -n ${RESULTS:-} ]] && printf 'wifi/%s: %s\n' "$name" "$*" > "$RESULTS/failed-step"
    exit 1
}

bus_of() {   # bus_of K -> the D-Bus address node K's wpa_supplicant is on
    if (($1 == 0)); then echo "unix:path=/run/dbus/system_bus_socket"; else echo "unix:path=$STATE/bus$1/system_bus_socket"; fi
}

on_bus() {   # on_bus K: is fi.w1.wpa_supplicant1 owned on node K's bus?
    timeout 5 dbus-send --bus="$(bus_of "$1")" --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
        org.freedesktop.DBus.NameHasOwner string:fi.w1.wpa_supplicant1 2>/dev/null | grep -q 'boolean true'
}

start_bus() {   # a second system bus for node K > 0
    local k=$1 dir=$STATE/bus$1
    [[ -S $dir/system_bus_socket ]] && kill -0 "$(cat "$dir/pid" 2>/dev/null)" 2>/dev/null && return 0
    mkdir -p "$dir"
    rm -f "$dir/system_bus_socket"
    timeout 20 dbus-daemon --system --address="unix:path=$dir/system_bus_socket" --nopidfile --fork \
        --print-pid=3 3>"$dir/pid" || return 1
    # Ready when it answers, not when its socket file exists (it may not accept yet).
    for _ in $(seq 50); do
        timeout 2 dbus-send --bus="unix:path=$dir/system_bus_socket" --print-reply --dest=org.freedesktop.DBus \
            /org/freedesktop/DBus org.freedesktop.DBus.ListNames >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    return 1
}

start_supplicant() {   # start_supplicant K: node K's wpa_supplicant, waits until it owns its name
    local k=$1 bus pid
    bus=$(bus_of "$k")
    if ((k > 0)); then start_bus "$k" || { echo "dbus-daemon for node $k did not start" >&2; return 1; }; fi
    on_bus "$k" && { echo "wpa_supplicant already on node $k's bus" >&2; return 0; }
    # RuntimeDirectory=wpa_supplicant, RuntimeDirectoryMode=0750 in the unit
    install -d -m 0750 -g netdev /run/wpa_supplicant 2>/dev/null || mkdir -p /run/wpa_supplicant
    # shellcheck disable=SC2086  # BT_LAB_WPA_EXTRA is a list of options
    DBUS_SYSTEM_BUS_ADDRESS=$bus setsid "$WPA" "${WPA_ARGS[@]}" ${BT_LAB_WPA_EXTRA:-} \
        >>"$STATE/wpa_supplicant-$k.out" 2>&1 </dev/null &
    pid=$!
    echo "$pid" > "$STATE/wpa_supplicant-$k.pid"
    for _ in $(seq 100); do
        kill -0 "$pid" 2>/dev/null || { echo "wpa_supplicant for node $k exited: $(tail -n 3 "$STATE/wpa_supplicant-$k.out")" >&2; return 1; }
        on_bus "$k" && return 0
        sleep 0.1
    done
    echo "wpa_supplicant for node $k never took fi.w1.wpa_supplicant1 on $bus" >&2
    return 1
}

stop_supplicant() {
    local pid
    pid=$(cat "$STATE/wpa_supplicant-$1.pid" 2>/dev/null) || return 0
    kill "$pid" 2>/dev/null
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null
    rm -f "$STATE/wpa_supplicant-$1.pid"
    return 0
}

case ${1:-} in
start)
    RESULTS=${2:?usage: guest-wifi.sh start RESULTS_DIR N_RADIOS}
    N=${3:?usage: guest-wifi.sh start RESULTS_DIR N_RADIOS}
    SETUP_LOG="$RESULTS/setup.log"
    [[ $N =~ ^[0-9]+$ ]] && ((N >= 1)) || fail args "N_RADIOS must be 1 or more"
    say "step modules: modprobe mac80211_hwsim radios=$N"
    timeout 60 modprobe mac80211_hwsim radios="$N" || fail modules "modprobe mac80211_hwsim radios=$N"
    declare -a IFACES=()
    for _ in $(seq 100); do
        IFACES=()
        for ((k = 0; k < N; k++)); do
            for d in /sys/class/net/*/phy80211; do
                [[ -e $d && $(cat "$d/name" 2>/dev/null) == "phy$k" ]] && IFACES[k]=$(basename "$(dirname "$d")")
            done
        done
        ((${#IFACES[@]} == N)) && break
        sleep 0.1
    done
    ((${#IFACES[@]} == N)) || fail radios "only ${#IFACES[@]} of $N hwsim radios have a network interface after 10 s"

    # wpa_supplicant -s logs through syslog; nothing in the VM reads /dev/log otherwise.
    if [[ ! -S /dev/log ]]; then
        busybox syslogd -n -O "$RESULTS/wpa_supplicant.log" >/dev/null 2>&1 </dev/null &
        echo $! > "$STATE/syslogd.pid"
        for _ in $(seq 30); do [[ -S /dev/log ]] && break; sleep 0.1; done
    fi

    say "step supplicants: ${WPA_ARGS[*]} (one per node)"
    for ((k = 0; k < N; k++)); do
        out=$(start_supplicant "$k" 2>&1) || fail "supplicant$k" "$out"
    done
    env_file=$RESULTS/.lab/wifi.env
    mkdir -p "$RESULTS/.lab"
    {
        echo "PEERLINK_LAB_RADIOS=$N"
        for ((k = 0; k < N; k++)); do
            echo "PEERLINK_LAB_WIFI$k=${IFACES[k]}"
            echo "PEERLINK_LAB_WIFI${k}_BUS=$(bus_of "$k")"
            echo "PEERLINK_LAB_WIFI${k}_MAC=$(cat "/sys/class/net/${IFACES[k]}/address")"
        done
    } > "$env_file"
    for ((k = 0; k < N; k++)); do
        say "  node $k: ${IFACES[k]} $(cat "/sys/class/net/${IFACES[k]}/address") phy$k, wpa_supplicant on $(bus_of "$k")"
    done
    say "ready: $N radios, $N wpa_supplicants (D-Bus only, no interface added)"
    ;;
supplicant)
    k=${2:?usage: guest-wifi.sh supplicant K}
    start_supplicant "$k" || exit 1
    ;;
stop-supplicant)
    stop_supplicant "${2:?usage: guest-wifi.sh stop-supplicant K}"
    ;;
stop)
    for f in "$STATE"/wpa_supplicant-*.pid; do
        [[ -e $f ]] || continue
        k=${f##*/wpa_supplicant-}; k=${k%.pid}
        stop_supplicant "$k"
    done
    pid=$(cat "$STATE/syslogd.pid" 2>/dev/null) && kill "$pid" 2>/dev/null
    for d in "$STATE"/bus*/; do
        [[ -e $d/pid ]] && kill "$(cat "$d/pid")" 2>/dev/null
    done
    exit 0
    ;;
*)
    sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2
    exit 2
    ;;
esac
