#!/usr/bin/env bash
# Bad input to the CLI gets a clear error, a non-zero exit and no side effects; good input
# works. Needs no network (runs in the root namespace, talks to nothing).
#   scripts/cli-checks.sh [PEERLINK_BINARY]
# Prints "ok"/"FAIL" per check and a closing "N passed, M failed" line.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$root/.build/debug/peerlink}
work=$(mktemp -d /tmp/peerlink-cli.XXXXXX)
bus_pids=()
trap 'for p in "${bus_pids[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$work"' EXIT
export PEERLINK_CONFIG_DIR="$work/cfg"
passed=0; failed=0

# expect_error NAME REGEX ARGS... — the command must exit non-zero and print REGEX.
expect_error() {
    local name=$1 re=$2; shift 2
    local out rc
    out=$("$bin" "$@" 2>&1 </dev/null); rc=$?
    if [ "$rc" != 0 ] && grep -qE -- "$re" <<<"$out"; then
        echo "ok   $name"; passed=$((passed + 1))
    else
        echo "FAIL $name (exit $rc): $out"; failed=$((failed + 1))
    fi
}
# expect_message NAME TEXT ARGS... — the command must exit non-zero and print TEXT exactly
# (a fixed string: the message the user must see, not any error that happens to match).
expect_message() {
    local name=$1 text=$2; shift 2
    local out rc
    out=$("$bin" "$@" 2>&1 </dev/null); rc=$?
    if [ "$rc" != 0 ] && grep -qF -- "$text" <<<"$out"; then
        echo "ok   $name"; passed=$((passed + 1))
    else
        echo "FAIL $name (exit $rc; wanted: $text): $out"; failed=$((failed + 1))
    fi
}
check() {  # NAME COMMAND...
    local name=$1; shift
    if "$@"; then echo "ok   $name"; passed=$((passed + 1)); else echo "FAIL $name"; failed=$((failed + 1)); fi
}

expect_error "uppercase service type" "only lowercase ASCII letters" browse --service Field
expect_error "service type too long" "16 characters; the maximum is 15" browse --service abcdefghijklmnop
expect_error "adjacent hyphens" "adjacent hyphens" advertise --service a--b
expect_error "discovery info without =" "expected key=value" advertise --service demo --info role
expect_error "reserved discovery info key" "reserved for PeerLink" advertise --service demo --info _id=x
expect_error "discovery info entry over 255 bytes" "above the limit of 255" advertise --service demo --info "k=$(head -c 300 /dev/zero | tr '\0' v)"
expect_error "duplicate discovery info key" "given more than once" advertise --service demo --info a=1 --info a=2
expect_error "both accept flags" "either --accept-all or --accept-known" advertise --service demo --accept-all --accept-known
expect_error "receive: --keep-free not a size" "--keep-free 'lots' is not a size" receive --service demo --dir "$work/in" --keep-free lots
expect_error "unknown policy" "is not known; use one of" chat --service demo --policy fastest --peer x
# Bluetooth through a private D-Bus bus (never the machine's): first with nothing owning
# org.bluez, then with scripts/lab/fake-bluez.py answering as a bluetoothd with two adapters.
bus="unix:path=$work/bus.sock"
dbus-daemon --session --nofork --nopidfile --address="$bus" >/dev/null 2>&1 </dev/null &
bus_pids+=($!)
bus_answers() { timeout 2 dbus-send --bus="$bus" --dest=org.freedesktop.DBus --print-reply /org/freedesktop/DBus org.freedesktop.DBus.ListNames >/dev/null 2>&1; }
for _ in $(seq 100); do bus_answers && break; sleep 0.05; done
check "a private D-Bus bus answers ListNames" bus_answers
DBUS_SYSTEM_BUS_ADDRESS=$bus expect_message "bluetooth media without bluetoothd" \
    "--media bluetooth: Bluetooth is not usable: bluetoothd is not running (nothing owns org.bluez on the system bus)" \
    browse --service demo --media bluetooth --timeout 1
python3 "$root/scripts/lab/fake-bluez.py" "$bus" hci0=00:AA:01:00:00:00 hci1=00:AA:01:01:00:01,off >"$work/fake-bluez.out" 2>&1 &
fake_two=$!
bus_pids+=($fake_two)
for _ in $(seq 100); do grep -qx ready "$work/fake-bluez.out" 2>/dev/null && break; sleep 0.05; done
check "fake bluetoothd owns org.bluez" grep -qx ready "$work/fake-bluez.out"
DBUS_SYSTEM_BUS_ADDRESS=$bus expect_message "unknown adapter" \
    "--media all: Bluetooth is not usable: no Bluetooth adapter 'hci9'; there are: hci0 (00:AA:01:00:00:00), hci1 (00:AA:01:01:00:01, off)" \
    browse --service demo --media all --adapter hci9 --timeout 1
DBUS_SYSTEM_BUS_ADDRESS=$bus expect_message "adapter powered off" \
    "--media bluetooth: Bluetooth is not usable: adapter hci1 is powered off" \
    browse --service demo --media bluetooth --adapter hci1 --timeout 1
# A daemon (media auto) that starts while bluetoothd has no powered adapter runs on IP, looks
# again, and restarts itself in place when one is there: here bluetoothd "restarts" with
# hci0 powered. This host's kernel has no Bluetooth, so the restarted run ends at its RFCOMM
# listener, naming the adapter it took up (the Bluetooth VM lab has the kernel for the rest).
kill "$fake_two"; wait "$fake_two" 2>/dev/null
python3 "$root/scripts/lab/fake-bluez.py" "$bus" hci0=00:AA:01:00:00:00,off >"$work/fake-bluez-off.out" 2>&1 &
fake_off=$!
for _ in $(seq 100); do grep -qx ready "$work/fake-bluez-off.out" 2>/dev/null && break; sleep 0.05; done
printf 'service = "awtest"\nmedia = ["auto"]\ninbox = "%s"\noutbox = "%s"\nstate_dir = "%s"\nruntime_dir = "%s"\n' \
    "$work/aw/inbox" "$work/aw/outbox" "$work/aw/state" "$work/aw/run" >"$work/aw.toml"
DBUS_SYSTEM_BUS_ADDRESS=$bus PEERLINK_CONFIG_DIR="$work/aw/cfg" timeout 60 "$bin" daemon --config "$work/aw.toml" >"$work/aw.log" 2>&1 &
aw=$!
for _ in $(seq 100); do grep -q "no Bluetooth adapter yet" "$work/aw.log" 2>/dev/null && break; sleep 0.1; done
check "a daemon started before its Bluetooth adapter runs on IP and keeps looking" grep -q "no Bluetooth adapter yet: looking again" "$work/aw.log"
kill "$fake_off"; wait "$fake_off" 2>/dev/null
python3 "$root/scripts/lab/fake-bluez.py" "$bus" hci0=00:AA:01:00:00:00 >"$work/fake-bluez-on.out" 2>&1 &
bus_pids+=($!)
for _ in $(seq 300); do grep -q "RFCOMM listener on 00:AA:01:00:00:00" "$work/aw.log" 2>/dev/null && break; sleep 0.1; done
check "…and when the adapter is there, restarts in place and takes it up" sh -c "
    grep -q 'a Bluetooth adapter is there now: restarting to use it adapter=hci0' '$work/aw.log' &&
    grep -q 'RFCOMM listener on 00:AA:01:00:00:00' '$work/aw.log'"
kill "$aw" 2>/dev/null; wait "$aw" 2>/dev/null
expect_error "adapter without Bluetooth media" "--adapter needs --media bluetooth, all or auto" browse --service demo --media ip --adapter hci0
expect_error "unknown medium to avoid" "--avoid 'radio' is not known; use ip or bluetooth" chat --service demo --peer x --media ip --avoid radio
expect_error "unknown media" "is not known; use one of: auto, ip, bluetooth, wifi-direct, all" browse --service demo --media carrier-pigeon
expect_error "wifi-direct alone" "negotiated inside a session on another medium" browse --service demo --media wifi-direct
expect_error "unknown Bluetooth transport" "--bluetooth-transports: 'sco' is not known; use rfcomm, l2cap or le" browse --service demo --media bluetooth --bluetooth-transports rfcomm,sco
expect_error "l2cap and le together" "l2cap and le exclude each other" browse --service demo --media bluetooth --bluetooth-transports l2cap,le
expect_error "Bluetooth transports without Bluetooth media" "--bluetooth-transports needs --media bluetooth, all or auto" browse --service demo --media ip --bluetooth-transports le
expect_error "--wifi without wifi-direct" "--wifi needs --media wifi-direct, all or auto" browse --service demo --media ip --wifi wlan0
expect_error "auto in a list" "auto and all stand alone" browse --service demo --media auto,ip
expect_error "send: missing file" "no such file" send "$work/nope.bin" --to alpha
expect_error "send: a directory" "is a directory" send "$work" --to alpha
expect_error "trust: bad peer ID" "is not 32 base32 characters" trust add not-a-peer-id
expect_error "display name too long" "above the limit of 63" id --set-name "$(head -c 70 /dev/zero | tr '\0' n)"
expect_message "one-character service type (Avahi)" \
    'invalid argument: avahi-daemon refuses one-character service types such as "_x._tcp"; use a service type of 2-15 characters' \
    browse --service x --timeout 1
mkdir -p "$work/run" && chmod 700 "$work/run"
PEERLINK_RUNTIME_DIR="$work/run" expect_error "links with nothing running" "no running peerlink command found" links
check "links --json prints an empty array when nothing runs" sh -c "PEERLINK_RUNTIME_DIR='$work/run' '$bin' links --json 2>/dev/null | grep -qx '\\[\\]'"
mkdir -p "$work/run2" && chmod 700 "$work/run2"
# A fake peerlink command: ready once it says it listens (its socket file exists from bind(),
# before listen()).
python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(1); print("listening", flush=True); s.settimeout(20); c,_=s.accept(); c.sendall(b"hello"); c.close()' "$work/run2/4242.sock" >"$work/fake-command.out" &
fake_command=$!
for _ in $(seq 50); do grep -qx listening "$work/fake-command.out" 2>/dev/null && break; sleep 0.1; done
PEERLINK_RUNTIME_DIR="$work/run2" expect_error "links names a socket that answers garbage" "no report from .*4242.sock: answered with 5 bytes that are not a PeerLink report" links
wait "$fake_command"
# A runtime directory shared with the daemon (mode 0750): its API socket is not mistaken for a
# command's control socket.
mkdir -m 0750 "$work/run3"
python3 -c 'import socket,sys,time; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(1); print("listening", flush=True); time.sleep(20)' "$work/run3/daemon.sock" >"$work/fake-daemon.out" &
fake_daemon=$!
for _ in $(seq 50); do grep -qx listening "$work/fake-daemon.out" 2>/dev/null && break; sleep 0.1; done
PEERLINK_RUNTIME_DIR="$work/run3" "$bin" links >"$work/links3.out" 2>&1
check "links does not ask the daemon's API socket for a command's report" sh -c "! grep -q 'no report from $work/run3/daemon.sock' '$work/links3.out'"
kill "$fake_daemon" 2>/dev/null; wait "$fake_daemon" 2>/dev/null
check "no identity was written by failed commands" test ! -e "$work/cfg/display-name"

"$bin" id --json >"$work/id.json" 2>&1
check "id creates a key with mode 0600" test "$(stat -c %a "$work/cfg/identity.key" 2>/dev/null)" = 600
id=$(sed -n 's/.*"peer":"\([a-z2-7]*\)".*/\1/p' "$work/id.json")
check "id prints a 32-character peer ID" test ${#id} = 32
check "id --qr draws the peer ID as a QR code (version 3: 29 modules and a 4-module quiet zone a side)" \
    sh -c "'$bin' id --qr | python3 -c 'import sys; t=sys.stdin.buffer.read().decode(); sys.exit(0 if sum(1 for l in t.splitlines() if len(l) == 37 and set(l) <= set(\"█▀▄ \")) == 19 else 1)'"
expect_message "id --qr with --json says why not" "--qr draws for a terminal" id --qr --json
check "trust add / list round trip" sh -c "'$bin' trust add $id laptop >/dev/null && '$bin' trust list | grep -q '$id laptop'"
# Verification codes: the same on both devices, and a match is recorded with its time.
other="$work/cfg-other"
"$bin" id --config-dir "$other" --json >"$work/other.json" 2>&1
oid=$(sed -n 's/.*"peer":"\([a-z2-7]*\)".*/\1/p' "$work/other.json")
code_here=$("$bin" trust verify "$oid" --json </dev/null | sed -n 's/.*"code":"\([0-9 ]*\)".*/\1/p')
code_there=$("$bin" trust verify "$id" --config-dir "$other" --json --confirm </dev/null | sed -n 's/.*"code":"\([0-9 ]*\)".*/\1/p')
check "trust verify shows one 30-digit code on both devices" test -n "$code_here" -a "$code_here" = "$code_there" -a ${#code_here} = 35
check "trust verify --confirm records the peer as verified by code" sh -c "'$bin' trust list --config-dir '$other' --json | grep -q '\"verification\":\"code\"'"
check "trust verify without --confirm records nothing" sh -c "! '$bin' trust list --json | grep -q '$oid'"
expect_message "trust verify of an unknown name says what it accepts" "is not a peer ID, nor the name or ID prefix" trust verify nobody
# The trust store survives kill -9 at any moment of a write: every state read back is whole.
for i in $(seq 1 30); do
    "$bin" trust add "$(printf 'a%.0s' $(seq 1 31))$(printf '%s' abcdefghijklmnopqrstuvwxyz234567 | cut -c$(( (i % 32) + 1 )))" "peer $i" --config-dir "$other" >/dev/null 2>&1 &
    victim=$!
    sleep "0.0$((RANDOM % 10))$((RANDOM % 10))"; kill -9 "$victim" 2>/dev/null; wait "$victim" 2>/dev/null
    if ! "$bin" trust list --config-dir "$other" --json >"$work/trust-after-kill.json" 2>&1 || ! grep -q "$id" "$work/trust-after-kill.json"; then
        echo "after kill $i:"; cat "$other/trusted-peers"; break
    fi
done
check "the trust store reads whole after 30 kill -9s of trust add" grep -q "$id" "$work/trust-after-kill.json"
chmod 644 "$work/cfg/identity.key"
expect_error "a key readable by others is refused" "readable by other users.*chmod 600" id
"$bin" doctor --json >"$work/doctor.json" 2>/dev/null
check "doctor --json is a JSON array of media" python3 -c "import json,sys; d=json.load(open('$work/doctor.json')); sys.exit(0 if {m['medium'] for m in d} >= {'ip','bluetooth','wifi-direct'} else 1)"
if ! ls -d /sys/class/net/*/phy80211 >/dev/null 2>&1; then
    check "doctor: no Wi-Fi radio here, said with a fix" python3 -c "import json,sys; w=[m for m in json.load(open('$work/doctor.json')) if m['medium']=='wifi-direct'][0]; c=w['checks'][0]; sys.exit(0 if not w['usable'] and 'no Wi-Fi radio' in c['detail'] and c['fix'] else 1)"
fi
check "every command has --help" sh -c "for c in id doctor browse advertise chat send receive links trust daemon status pending; do '$bin' \$c --help >/dev/null || exit 1; done"

# The release a user sees is the one CHANGELOG.md lists last, and the Pi installer puts the
# man page and completions (generated from the commands' help) where man and the shells look.
release=$(sed -n 's/^## \[\([0-9][0-9.]*\)\] - .*/\1/p' "$root/CHANGELOG.md" | head -1)
check "docs/CLI.md is the commands' current help (scripts/gen-cli-doc.py)" sh -c "python3 '$root/scripts/gen-cli-doc.py' '$bin' | diff -q - '$root/docs/CLI.md' >/dev/null"
check "--version is the latest release in CHANGELOG.md ($release)" test "$("$bin" --version 2>&1)" = "$release"
stage="$work/stage"
"$root/Hardware/pi/install.sh" --destdir "$stage" --binary "$bin" --unit none >"$work/install.out" 2>&1 || cat "$work/install.out"
check "install.sh stages the binary, config and units" test -x "$stage/usr/local/bin/peerlink" -a -s "$stage/etc/peerlink/daemon.toml" \
    -a -s "$stage/etc/systemd/system/peerlink-daemon.service"
check "the man page covers every command" sh -c "for c in id doctor browse advertise chat send receive links trust daemon status pending; do grep -q \"^.It Em \$c\\\$\" '$stage/usr/local/share/man/man1/peerlink.1' || { echo \"no \$c\"; exit 1; }; done"
check "shell completions for bash, zsh and fish complete subcommands" sh -c "grep -q receive '$stage/usr/local/share/bash-completion/completions/peerlink' && grep -q receive '$stage/usr/local/share/zsh/site-functions/_peerlink' && grep -q receive '$stage/usr/local/share/fish/vendor_completions.d/peerlink.fish'"
echo "# an edited configuration" >>"$stage/etc/peerlink/daemon.toml"
"$root/Hardware/pi/install.sh" --destdir "$stage" --binary "$bin" --unit none >"$work/install2.out" 2>&1
check "installing again keeps the user's daemon.toml" grep -q "an edited configuration" "$stage/etc/peerlink/daemon.toml"

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
