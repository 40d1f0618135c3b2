# Shared by the scripts that run `peerlink daemon` in the IP lab (sourced after e2e-lib.sh):
# configuration, start and kill of a host's daemon, outbox drops. The sourcing script sets:
# work (its temporary directory), lab (path of iplab.sh) and bin (the peerlink binary).
# Each host HOST keeps its configuration in $work/HOST.toml, its log in $work/HOST.log, its
# state under $work/state-HOST, its identity in $work/cfg-HOST and its API socket in
# $work/run-HOST/daemon.sock.

# peerid HOST — HOST's peer ID (made on first use)
peerid() { "$lab" exec "$1" env PEERLINK_CONFIG_DIR="$work/cfg-$1" "$bin" id --json | sed -n 's/.*"peer":"\([A-Za-z2-7]*\)".*/\1/p'; }
sha() { sha256sum "$1" | cut -d' ' -f1; }

# [accept=RULE] [keep_free=SIZE] config HOST [extra TOML lines] — writes $work/HOST.toml
config() {
    local host=$1; shift
    { printf 'service = "fieldtest"\nname = "%s"\nmedia = "ip"\naccept = "%s"\nstate_dir = "%s"\nkeep_free = %s\nlog_level = "debug"\nruntime_dir = "%s"\n' \
        "$host" "${accept:-all}" "$work/state-$host" "${keep_free:-0}" "$work/run-$host"; printf '%s\n' "$@"; } >"$work/$host.toml"
}

# start HOST — runs the daemon on HOST in the background (log appended to $work/HOST.log)
declare -A daemon_pid
start() {
    local host=$1
    "$lab" exec "$host" env PEERLINK_CONFIG_DIR="$work/cfg-$host" "$bin" daemon --config "$work/$host.toml" >>"$work/$host.log" 2>&1 &
    daemon_pid[$host]=$!
    pids+=($!)
}

# pid_of HOST — the daemon's own process (the lab's exec wrapper execs it in the namespace)
pid_of() { pgrep -f "^$bin daemon --config $work/$1.toml" | head -1; }

kill9() {
    local host=$1 p
    p=$(pid_of "$host")
    [ -n "$p" ] && kill -9 "$p"
    wait "${daemon_pid[$host]}" 2>/dev/null
}

# drop HOST PEER FILE SIZE_MIB — writes a random file under a temporary name, then renames it
# (a copy stays in $work/original-FILE)
drop() {
    local host=$1 peer=$2 name=$3 size=$4 dir="$work/state-$1/outbox/$2"
    mkdir -p "$dir"
    head -c "$((size * 1048576))" /dev/urandom >"$dir/.$name.tmp"
    cp "$dir/.$name.tmp" "$work/original-$name"
    mv "$dir/.$name.tmp" "$dir/$name"
}
