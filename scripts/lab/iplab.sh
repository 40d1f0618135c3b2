#!/usr/bin/env bash
# iplab.sh — multi-host IP lab in network namespaces, each host with its own D-Bus system
# bus and avahi-daemon. Usable as a CLI or sourced as a library (functions iplab_*).
#
#   iplab.sh up DIR [N]          create N hosts (default 2; names ${IPLAB_PREFIX}a, ${IPLAB_PREFIX}b, …)
#   iplab.sh down DIR            kill everything, delete namespaces (idempotent, always exits 0)
#   iplab.sh exec HOST CMD...    run CMD in HOST's namespace with DBUS_SYSTEM_BUS_ADDRESS set
#   iplab.sh cut HOST            ip link set down the host's lab interface
#   iplab.sh restore HOST        ip link set it up again
#   iplab.sh restart-avahi HOST  stop and restart HOST's avahi-daemon, wait until ready
#   iplab.sh stop-avahi HOST     stop HOST's avahi-daemon (its D-Bus stays up)
#   iplab.sh start-avahi HOST    start it again and wait until ready
#   iplab.sh env HOST            print HOST's D-Bus bus address (unix:path=…)
#   iplab.sh hosts DIR           print the host names of the lab in DIR, one a line
#   iplab.sh addr HOST           print HOST's IPv4 address
#
# Environment (read by `up`; later commands read what `up` recorded in DIR/lab.env):
#   IPLAB_PREFIX   host name prefix (default "pl")  — use a unique one per concurrent lab
#   IPLAB_SUBNET   first three octets of the /24 used inside the namespaces (default 10.77.0)
#   IPLAB_IPV6     "yes" to let avahi use IPv6 too (default "no")
#   IPLAB_TIMEOUT  seconds allowed for each waiting step (default 10)
#
# Topology: N=2 → one veth pair between the two host namespaces. N>2 → every host has a veth
# to a bridge in the namespace ${IPLAB_PREFIX}br. Inside every host the interface is named
# "lab0" and has address SUBNET.(index+1)/24. Nothing is ever added to the root namespace
# except an empty mount point /run/avahi-daemon and the registry /run/peerlink-iplab/HOST
# (a file holding the lab DIR, so that commands naming only a HOST can find it).
# avahi-daemon never runs in the root namespace: it is started inside `ip netns exec`, which
# also gives it a private mount namespace where DIR/HOST/run-avahi is bound on /run/avahi-daemon.

IPLAB_REGISTRY=/run/peerlink-iplab
IPLAB_IF=lab0

iplab_die() { echo "iplab: $*" >&2; return 1; }
iplab_log() { [ -n "${IPLAB_QUIET:-}" ] || echo "iplab: $*" >&2; }

# iplab_run STEP-DESCRIPTION CMD... — run CMD with the step timeout; on failure name the step.
iplab_run() {
    local step=$1; shift
    local out
    if ! out=$(timeout --kill-after=2 "${IPLAB_TIMEOUT:-10}" "$@" 2>&1); then
        iplab_die "step '$step' failed: $* ${out:+— $out}"
        return 1
    fi
    [ -z "$out" ] || printf '%s\n' "$out"
}

# iplab_dir_of HOST — prints the lab DIR recorded for HOST.
iplab_dir_of() {
    local host=$1
    [ -n "$host" ] || { iplab_die "no host given"; return 1; }
    if [ -n "${IPLAB_DIR:-}" ] && [ -d "$IPLAB_DIR/$host" ]; then echo "$IPLAB_DIR"; return 0; fi
    [ -f "$IPLAB_REGISTRY/$host" ] || { iplab_die "unknown host '$host' (no $IPLAB_REGISTRY/$host; is the lab up?)"; return 1; }
    cat "$IPLAB_REGISTRY/$host"
}

iplab_load_env() {  # DIR — sources DIR/lab.env
    local dir=$1
    [ -f "$dir/lab.env" ] || { iplab_die "no lab in '$dir' ($dir/lab.env missing)"; return 1; }
    # shellcheck disable=SC1091
    . "$dir/lab.env"
}

# iplab_closefds — closes every inherited descriptor above 2 in the current (sub)shell, so that
# long-lived daemons do not hold the caller's pipes or sockets open (callers that wait for
# EOF, or like Foundation's Process for the last holder of a socket, would hang otherwise).
iplab_closefds() {
    local fd
    for fd in /proc/$BASHPID/fd/*; do
        fd=${fd##*/}
        [[ $fd =~ ^[0-9]+$ ]] && [ "$fd" -gt 2 ] && eval "exec $fd>&-" 2>/dev/null
    done
    return 0
}

iplab_pid_alive() {  # PID — true if running and not a zombie
    local pid=$1 state
    [ -n "$pid" ] && [ -r "/proc/$pid/stat" ] || return 1
    state=$(sed -E 's/^[0-9]+ \(.*\) (.).*/\1/' "/proc/$pid/stat" 2>/dev/null) || return 1
    [ "$state" != Z ] && [ "$state" != X ]
}

# iplab_wait_gone PID SECONDS — waits until PID has exited (zombie counts as exited).
iplab_wait_gone() {
    local pid=$1 deadline=$(( $(date +%s%N) / 1000000 + $2 * 1000 ))
    while iplab_pid_alive "$pid"; do
        [ $(( $(date +%s%N) / 1000000 )) -lt "$deadline" ] || return 1
        sleep 0.05
    done
}

# iplab_wait_log FILE PATTERN PID SECONDS STEP — waits until FILE contains PATTERN.
iplab_wait_log() {
    local file=$1 pattern=$2 pid=$3 secs=$4 step=$5
    local deadline=$(( $(date +%s%N) / 1000000 + secs * 1000 ))
    while ! grep -q -- "$pattern" "$file" 2>/dev/null; do
        if [ -n "$pid" ] && ! iplab_pid_alive "$pid"; then
            iplab_die "step '$step': process $pid exited before '$pattern'; last log lines of $file:"
            tail -n 15 "$file" >&2 2>/dev/null
            return 1
        fi
        if [ $(( $(date +%s%N) / 1000000 )) -ge "$deadline" ]; then
            iplab_die "step '$step': timed out after ${secs}s waiting for '$pattern' in $file; last lines:"
            tail -n 15 "$file" >&2 2>/dev/null
            return 1
        fi
        sleep 0.05
    done
}

iplab_write_avahi_conf() {  # HOSTDIR HOST
    local hd=$1 host=$2
    cat > "$hd/avahi.conf" <<CONF
# generated by iplab.sh for lab host $host
[server]
host-name=$host
domain-name=local
use-ipv4=yes
use-ipv6=${IPLAB_IPV6:-no}
allow-interfaces=$IPLAB_IF
enable-dbus=yes
disallow-other-stacks=no
ratelimit-interval-usec=1000000
ratelimit-burst=1000

[wide-area]
enable-wide-area=no

[publish]
disable-publishing=no
disable-user-service-publishing=no
publish-addresses=yes
publish-hinfo=no
publish-workstation=no
publish-domain=yes
publish-aaaa-on-ipv4=yes
publish-a-on-ipv6=no

[reflector]
enable-reflector=no

[rlimits]
CONF
}

# iplab_start_avahi DIR HOST — start HOST's avahi-daemon and wait for "Server startup complete".
iplab_start_avahi() {
    local dir=$1 host=$2 hd="$1/$2" pid
    mkdir -p /run/avahi-daemon "$hd/run-avahi" || { iplab_die "step 'avahi mount points ($host)' failed"; return 1; }
    chown avahi:avahi "$hd/run-avahi" 2>/dev/null || true
    rm -f "$hd/run-avahi/pid" "$hd/run-avahi/socket"
    [ ! -f "$hd/avahi.log" ] || mv -f "$hd/avahi.log" "$hd/avahi.log.prev"
    : > "$hd/avahi.log"
    # exec chain: $! ends up being avahi-daemon itself (setsid and ip netns exec do not fork
    # here); `ip netns exec` gives it a private mount namespace for the bind mount.
    (
        iplab_closefds
        exec setsid ip netns exec "$host" env DBUS_SYSTEM_BUS_ADDRESS="unix:path=$hd/bus.sock" \
            sh -c 'mount --bind "$1" /run/avahi-daemon || exit 97; exec avahi-daemon -f "$2" --no-rlimits --no-proc-title' \
            iplab-avahi "$hd/run-avahi" "$hd/avahi.conf"
    ) >>"$hd/avahi.log" 2>&1 </dev/null &
    pid=$!
    echo "$pid" > "$hd/avahi.pid"
    iplab_wait_log "$hd/avahi.log" "Server startup complete" "$pid" "${IPLAB_TIMEOUT:-10}" "avahi-daemon startup ($host)"
}

# iplab_stop_avahi DIR HOST — stops HOST's avahi-daemon (TERM, then KILL); idempotent.
iplab_stop_avahi() {
    local hd="$1/$2" pid
    pid=$(cat "$hd/avahi.pid" 2>/dev/null) || return 0
    if iplab_pid_alive "$pid"; then
        kill -TERM "$pid" 2>/dev/null
        iplab_wait_gone "$pid" 3 || { kill -KILL "$pid" 2>/dev/null; iplab_wait_gone "$pid" 2; }
    fi
    rm -f "$hd/avahi.pid"
}

iplab_start_dbus() {  # DIR HOST
    local hd="$1/$2" pid
    rm -f "$hd/bus.sock"
    pid=$(iplab_closefds; exec timeout "${IPLAB_TIMEOUT:-10}" ip netns exec "$2" dbus-daemon --system \
            --address="unix:path=$hd/bus.sock" --nopidfile --fork --print-pid 2>"$hd/dbus.log" </dev/null) \
        || { iplab_die "step 'dbus-daemon startup ($2)' failed; $(tail -n 5 "$hd/dbus.log" 2>/dev/null)"; return 1; }
    pid=${pid//[!0-9]/}
    [ -n "$pid" ] || { iplab_die "step 'dbus-daemon startup ($2)': no pid printed"; return 1; }
    echo "$pid" > "$hd/dbus.pid"
    # Ready once the bus answers a call: its socket file exists from bind(), before the daemon
    # accepts, and a daemon that accepts but does not answer would hold every client.
    local end=$((SECONDS + ${IPLAB_TIMEOUT:-10})) why
    while :; do
        why=$(timeout 2 dbus-send --bus="unix:path=$hd/bus.sock" --dest=org.freedesktop.DBus --type=method_call \
                --print-reply /org/freedesktop/DBus org.freedesktop.DBus.ListNames 2>&1 >/dev/null) && return 0
        [ "$SECONDS" -lt "$end" ] || break
        sleep 0.05
    done
    iplab_die "step 'dbus-daemon answering ($2)': no reply to ListNames on $hd/bus.sock within ${IPLAB_TIMEOUT:-10} s (${why:-timed out})"
}

# iplab_up DIR [N]
iplab_up() {
    local dir=$1 n=${2:-2}
    [ -n "$dir" ] || { iplab_die "usage: up DIR [N]"; return 1; }
    [ "$(id -u)" = 0 ] || { iplab_die "step 'preflight': must run as root"; return 1; }
    local tool
    for tool in ip dbus-daemon dbus-send avahi-daemon timeout setsid; do
        command -v "$tool" >/dev/null || { iplab_die "step 'preflight': '$tool' not found (apt-get install iproute2 dbus avahi-daemon)"; return 1; }
    done
    [[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -ge 2 ] && [ "$n" -le 26 ] || { iplab_die "step 'preflight': N must be 2…26"; return 1; }
    local prefix=${IPLAB_PREFIX:-pl} subnet=${IPLAB_SUBNET:-10.77.0}
    mkdir -p "$dir" "$IPLAB_REGISTRY" || { iplab_die "step 'mkdir $dir'"; return 1; }
    dir=$(cd "$dir" && pwd)
    [ ! -f "$dir/lab.env" ] || iplab_down "$dir"
    # The avahi and messagebus users must be able to reach DIR/HOST/bus.sock.
    chmod 755 "$dir"
    local hosts=() i letters=abcdefghijklmnopqrstuvwxyz
    for ((i = 0; i < n; i++)); do hosts+=("$prefix${letters:i:1}"); done
    local bridge=""; [ "$n" -gt 2 ] && bridge="${prefix}br"
    local h
    for h in "${hosts[@]}" $bridge; do
        if [ -e "/run/netns/$h" ] || ip netns list | awk '{print $1}' | grep -qx "$h"; then
            iplab_die "step 'create namespace $h': a namespace named $h already exists (another lab? run down on its DIR, or set IPLAB_PREFIX)"
            return 1
        fi
    done
    {
        echo "IPLAB_PREFIX=$prefix"; echo "IPLAB_SUBNET=$subnet"; echo "IPLAB_IPV6=${IPLAB_IPV6:-no}"
        echo "IPLAB_HOSTS=\"${hosts[*]}\""; echo "IPLAB_BRIDGE=$bridge"
    } > "$dir/lab.env"
    for h in "${hosts[@]}" $bridge; do
        iplab_run "create namespace $h" ip netns add "$h" || { iplab_down "$dir"; return 1; }
        echo "$dir" > "$IPLAB_REGISTRY/$h"
        iplab_run "lo up ($h)" ip -n "$h" link set lo up || { iplab_down "$dir"; return 1; }
    done
    if [ -z "$bridge" ]; then
        iplab_run "create veth pair ${hosts[0]}<->${hosts[1]}" \
            ip link add "$IPLAB_IF" netns "${hosts[0]}" type veth peer name "$IPLAB_IF" netns "${hosts[1]}" \
            || { iplab_down "$dir"; return 1; }
    else
        iplab_run "create bridge in $bridge" ip -n "$bridge" link add br0 type bridge || { iplab_down "$dir"; return 1; }
        iplab_run "bridge up" ip -n "$bridge" link set br0 up || { iplab_down "$dir"; return 1; }
        for h in "${hosts[@]}"; do
            iplab_run "create veth $h<->$bridge" \
                ip link add "$IPLAB_IF" netns "$h" type veth peer name "$h" netns "$bridge" || { iplab_down "$dir"; return 1; }
            iplab_run "attach $h to bridge" ip -n "$bridge" link set "$h" master br0 || { iplab_down "$dir"; return 1; }
            iplab_run "bridge port $h up" ip -n "$bridge" link set "$h" up || { iplab_down "$dir"; return 1; }
        done
    fi
    for ((i = 0; i < n; i++)); do
        h=${hosts[i]}
        if [ "${IPLAB_IPV6:-no}" != yes ]; then
            ip netns exec "$h" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 >/dev/null 2>&1 || true
        else
            # Skip duplicate address detection so link-local addresses are usable at once.
            ip netns exec "$h" sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0 >/dev/null 2>&1 || true
            ip netns exec "$h" sysctl -qw "net.ipv6.conf.$IPLAB_IF.accept_dad=0" >/dev/null 2>&1 || true
        fi
        iplab_run "address $subnet.$((i + 1)) on $h" ip -n "$h" addr add "$subnet.$((i + 1))/24" dev "$IPLAB_IF" || { iplab_down "$dir"; return 1; }
        iplab_run "link up ($h)" ip -n "$h" link set "$IPLAB_IF" up multicast on || { iplab_down "$dir"; return 1; }
        mkdir -p "$dir/$h" && chmod 755 "$dir/$h"
        echo "$subnet.$((i + 1))" > "$dir/$h/addr"
        iplab_write_avahi_conf "$dir/$h" "$h"
        iplab_start_dbus "$dir" "$h" || { iplab_down "$dir"; return 1; }
    done
    # Start the avahi-daemons in parallel, then wait for all of them.
    local rc=0 pids=()
    for h in "${hosts[@]}"; do
        ( iplab_start_avahi "$dir" "$h" ) & pids+=($!)
    done
    for i in "${pids[@]}"; do wait "$i" || rc=1; done
    if [ $rc -ne 0 ]; then iplab_down "$dir"; return 1; fi
    iplab_log "up: ${hosts[*]} in $dir"
}

# iplab_down DIR — always succeeds.
iplab_down() {
    local dir=$1
    [ -n "$dir" ] || { iplab_die "usage: down DIR"; return 0; }
    [ -f "$dir/lab.env" ] || return 0
    local IPLAB_HOSTS="" IPLAB_BRIDGE=""
    iplab_load_env "$dir" 2>/dev/null || return 0
    local h pid p owned=""
    # Only touch hosts this DIR created (the registry names the owning DIR).
    for h in $IPLAB_HOSTS $IPLAB_BRIDGE; do
        if [ -f "$IPLAB_REGISTRY/$h" ] && [ "$(cat "$IPLAB_REGISTRY/$h" 2>/dev/null)" != "$dir" ]; then
            iplab_log "down: leaving $h alone (it belongs to $(cat "$IPLAB_REGISTRY/$h" 2>/dev/null))"
            continue
        fi
        owned="$owned $h"
    done
    IPLAB_HOSTS=$(for h in $IPLAB_HOSTS; do case " $owned " in *" $h "*) printf '%s ' "$h" ;; esac; done)
    case " $owned " in *" $IPLAB_BRIDGE "*) ;; *) IPLAB_BRIDGE="" ;; esac
    for h in $IPLAB_HOSTS; do
        iplab_stop_avahi "$dir" "$h" 2>/dev/null
        pid=$(cat "$dir/$h/dbus.pid" 2>/dev/null) && kill -TERM "$pid" 2>/dev/null
        rm -f "$dir/$h/dbus.pid"
    done
    for h in $IPLAB_HOSTS $IPLAB_BRIDGE; do
        if [ -e "/run/netns/$h" ]; then
            # Anything left inside the namespace (e.g. an `exec`'d command) goes too.
            for p in $(timeout 5 ip netns pids "$h" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
            timeout 5 ip netns del "$h" 2>/dev/null || true
        fi
        if [ -f "$IPLAB_REGISTRY/$h" ] && [ "$(cat "$IPLAB_REGISTRY/$h" 2>/dev/null)" = "$dir" ]; then
            rm -f "$IPLAB_REGISTRY/$h"
        fi
        rm -f "$dir/$h/bus.sock"
    done
    rm -f "$dir/lab.env"
    return 0
}

iplab_bus() {  # HOST — prints the bus address
    local dir; dir=$(iplab_dir_of "$1") || return 1
    echo "unix:path=$dir/$1/bus.sock"
}

iplab_exec() {  # HOST CMD...
    local host=$1; shift
    local bus; bus=$(iplab_bus "$host") || return 1
    [ $# -gt 0 ] || { iplab_die "usage: exec HOST CMD..."; return 1; }
    ip netns exec "$host" env DBUS_SYSTEM_BUS_ADDRESS="$bus" "$@"
}

iplab_cut() { iplab_dir_of "$1" >/dev/null && iplab_run "cut $1" ip -n "$1" link set "$IPLAB_IF" down; }
iplab_restore() { iplab_dir_of "$1" >/dev/null && iplab_run "restore $1" ip -n "$1" link set "$IPLAB_IF" up; }

iplab_restart_avahi() {  # HOST
    local dir; dir=$(iplab_dir_of "$1") || return 1
    iplab_stop_avahi "$dir" "$1"
    iplab_start_avahi "$dir" "$1"
}

iplab_stop_avahi_cmd() { local dir; dir=$(iplab_dir_of "$1") && iplab_stop_avahi "$dir" "$1"; }
iplab_start_avahi_cmd() {
    local dir; dir=$(iplab_dir_of "$1") || return 1
    if iplab_pid_alive "$(cat "$dir/$1/avahi.pid" 2>/dev/null)"; then return 0; fi
    iplab_start_avahi "$dir" "$1"
}

iplab_hosts() { local IPLAB_HOSTS=""; iplab_load_env "$1" && printf '%s\n' $IPLAB_HOSTS; }
iplab_addr() { local dir; dir=$(iplab_dir_of "$1") && cat "$dir/$1/addr"; }

iplab_main() {
    local cmd=${1:-}; shift || true
    case "$cmd" in
        up) iplab_up "$@" ;;
        down) iplab_down "$@"; return 0 ;;
        exec) iplab_exec "$@" ;;
        cut) iplab_cut "$@" ;;
        restore) iplab_restore "$@" ;;
        restart-avahi) iplab_restart_avahi "$@" ;;
        stop-avahi) iplab_stop_avahi_cmd "$@" ;;
        start-avahi) iplab_start_avahi_cmd "$@" ;;
        env) iplab_bus "$@" ;;
        hosts) iplab_hosts "$@" ;;
        addr) iplab_addr "$@" ;;
        *) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}" >&2; return 2 ;;
    esac
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    iplab_main "$@"
    exit $?
fi
