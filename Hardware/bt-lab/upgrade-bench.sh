#!/usr/bin/env bash
# Inside the lab VM (scripts/bench-upgrade.sh): in one boot, times the same file three ways
# between the two nodes of demo-radios.sh (Bluetooth hci0 -> hci1, radios wlan1 -> wlan0):
#   1. peerlink send over Bluetooth with the Wi-Fi Direct upgrade (--media bluetooth,wifi-direct)
#   2. peerlink send over Bluetooth alone (--media bluetooth)
#   3. a raw TCP copy over a Wi-Fi Direct group formed here through each wpa_supplicant's
#      D-Bus API as PeerLink forms it, same roles (GroupAdd on wlan1; Find + AddPersistentGroup
#      + GroupAdd on wlan0; wlan0 dials, wlan1 sends), sockets bound to the group interfaces,
#      IPv6 link-local
# Every peerlink JSON line is stamped on arrival; the summary goes to stdout and to
# $PEERLINK_LAB_RESULTS/bench-summary.txt. Exit 1 when a transfer fails, a file differs or
# the upgrade run never moved bulk to Wi-Fi Direct.
#   upgrade-bench.sh PEERLINK_BINARY [MIB] [default|optimistic]
# optimistic: first set net.ipv6.conf.default.{optimistic_dad,use_optimistic}=1, the lines
# `peerlink doctor` suggests (group interfaces made afterwards get optimistic addresses).
set -uo pipefail
bin=${1:?peerlink binary}
mib=${2:-64}
dad=${3:-default}
py=/usr/bin/python3   # the system one: python3-dbus
work=$(mktemp -d /tmp/peerlink-bench.XXXXXX)
out=${PEERLINK_LAB_RESULTS:-$work}
say() { printf '[bench] %s\n' "$*" >&2; }
export PEERLINK_RUNTIME_DIR=$work/run
mkdir -p "$work/run" && chmod 700 "$work/run"
# each command gives up after 300 s, so a failed send does not leave the receiver waiting
alpha() { env PEERLINK_CONFIG_DIR="$work/cfg-a" PEERLINK_WPA_SUPPLICANT_BUS="$PEERLINK_LAB_WIFI0_BUS" timeout 300 "$bin" "$@"; }
beta() { env PEERLINK_CONFIG_DIR="$work/cfg-b" PEERLINK_WPA_SUPPLICANT_BUS="$PEERLINK_LAB_WIFI1_BUS" timeout 300 "$bin" "$@"; }
# "<epoch seconds> <line>" for every line, stamped when it arrives
stamp() { "$py" -u -c 'import sys, time
for l in sys.stdin: sys.stdout.write("%.6f %s" % (time.time(), l))'; }
alpha id --set-name alpha >/dev/null; beta id --set-name beta >/dev/null
case $dad in
    default) ;;
    optimistic) for k in optimistic_dad use_optimistic; do echo 1 >"/proc/sys/net/ipv6/conf/default/$k" || exit 1; done ;;
    *) say "unknown DAD setting '$dad' (default or optimistic)"; exit 2 ;;
esac
say "IPv6 DAD on new interfaces: $dad (optimistic_dad=$(cat /proc/sys/net/ipv6/conf/default/optimistic_dad))"

head -c $((mib << 20)) /dev/urandom >"$work/payload.bin"
sum=$(sha256sum <"$work/payload.bin" | cut -d' ' -f1)
failed=0

run_peerlink() {   # run_peerlink NAME MEDIA: alpha receives, beta sends; logs NAME-{rx,tx}.log
    local name=$1 media=$2 rx wa=() wb=()
    [[ $media == *wifi-direct* ]] && wa=(--wifi "$PEERLINK_LAB_WIFI0") wb=(--wifi "$PEERLINK_LAB_WIFI1")
    say "$name: $mib MiB, --media $media"
    alpha receive --json --service bench --media "$media" --adapter hci1 "${wa[@]}" \
        --dir "$work/inbox-$name" --accept-all --count 1 2>"$out/$name-rx.err" | stamp >"$out/$name-rx.log" &
    rx=$!
    sleep 3
    beta send "$work/payload.bin" --json --to alpha --service bench --media "$media" --adapter hci0 \
        "${wb[@]}" 2>"$out/$name-tx.err" | stamp >"$out/$name-tx.log" || { say "$name: send failed"; failed=1; }
    wait "$rx" || { say "$name: receive failed"; failed=1; }
    if [[ $(sha256sum <"$work/inbox-$name/payload.bin" 2>/dev/null | cut -d' ' -f1) == "$sum" ]]; then
        say "$name: received file identical"
    else
        say "$name: received file differs or is missing"; failed=1
    fi
    rm -rf "$work/inbox-$name"
}
run_peerlink upgrade bluetooth,wifi-direct
run_peerlink bluetooth bluetooth

say "raw: forming a Wi-Fi Direct group ($PEERLINK_LAB_WIFI1 owner, $PEERLINK_LAB_WIFI0 client, as PeerLink did) and copying $mib MiB over TCP"
"$py" -u - "$work/payload.bin" "$work/raw.bin" >"$out/raw.log" 2>&1 <<'EOF' || { say "raw: failed: $(tail -n 3 "$out/raw.log")"; failed=1; }
# Raw baseline: the group through wpa_supplicant's D-Bus API, then one TCP stream.
import dbus, os, socket, sys, threading, time
W = "fi.w1.wpa_supplicant1"; P2P = W + ".Interface.P2PDevice"; PROPS = "org.freedesktop.DBus.Properties"
src, dst = sys.argv[1], sys.argv[2]
go_if, cl_if = os.environ["PEERLINK_LAB_WIFI1"], os.environ["PEERLINK_LAB_WIFI0"]   # beta owns, alpha joins
t = {}
def log(k, v): t[k] = v; print("%s %.3f" % (k, v), flush=True)
def wait(what, fn, limit=30):
    end = time.time() + limit
    while time.time() < end:
        r = fn()
        if r: return r
        time.sleep(0.05)
    raise SystemExit("timed out: " + what)
def radio(bus, name):
    root = bus.get_object(W, "/fi/w1/wpa_supplicant1")
    try: path = root.GetInterface(name, dbus_interface=W)
    except dbus.DBusException: path = root.CreateInterface({"Ifname": name}, dbus_interface=W)
    return bus.get_object(W, path)
def group_if(prefix):
    return next((n for n in os.listdir("/sys/class/net") if n.startswith(prefix)), None)
def linklocal(ifname, optimistic=False):   # usable fe80:: address of ifname: out of DAD, or
    # optimistic where the side is dialled (as PeerLink: a dialler cannot resolve its peer from one)
    for l in open("/proc/net/if_inet6"):
        a, idx, plen, scope, flags, name = l.split()
        f = int(flags, 16)   # 0x40 tentative, 0x08 dadfailed, 0x04 optimistic
        if name == ifname and a.startswith("fe80") and not f & 0x08 and (not f & 0x40 or (optimistic and f & 0x04)):
            return ":".join(a[i:i + 4] for i in range(0, 32, 4))
def p2p_group(bus, ifname):   # the Group object of the interface called ifname
    root = bus.get_object(W, "/fi/w1/wpa_supplicant1")
    for p in root.Get(W, "Interfaces", dbus_interface=PROPS):
        o = bus.get_object(W, p)
        if o.Get(W + ".Interface", "Ifname", dbus_interface=PROPS) == ifname:
            return o, bus.get_object(W, o.Get(P2P, "Group", dbus_interface=PROPS))
def end_leftover(bus, radio_name):   # a group PeerLink left on this radio (seen once: the sender's)
    root = bus.get_object(W, "/fi/w1/wpa_supplicant1")
    for p in root.Get(W, "Interfaces", dbus_interface=PROPS):
        o = bus.get_object(W, p)
        n = str(o.Get(W + ".Interface", "Ifname", dbus_interface=PROPS))
        if n.startswith("p2p-" + radio_name + "-"):
            print("leftover-group %s (ending it)" % n, flush=True)
            o.Disconnect(dbus_interface=P2P)
    wait("leftover group on " + radio_name + " gone", lambda: not group_if("p2p-" + radio_name + "-"), 10)
bus_go = dbus.bus.BusConnection(os.environ["PEERLINK_LAB_WIFI1_BUS"])
bus_cl = dbus.bus.BusConnection(os.environ["PEERLINK_LAB_WIFI0_BUS"])
t0 = time.time()
go = radio(bus_go, go_if); cl = radio(bus_cl, cl_if)
log("add-interfaces", time.time() - t0)
end_leftover(bus_go, go_if); end_leftover(bus_cl, cl_if)
t1 = time.time()
go.GroupAdd({"frequency": dbus.Int32(2412)}, dbus_interface=P2P)
go_grp = wait("group interface on " + go_if, lambda: group_if("p2p-" + go_if + "-"))
log("form", time.time() - t1)
go_ll = wait("owner link-local", lambda: linklocal(go_grp, optimistic=True))
log("owner-link-local", time.time() - t1)
go_grp_obj, g = p2p_group(bus_go, go_grp)
ssid = bytes(g.Get(W + ".Group", "SSID", dbus_interface=PROPS)).decode()
psk = str(g.Get(W + ".Group", "Passphrase", dbus_interface=PROPS))
t2 = time.time()
cl.Find({"Timeout": dbus.Int32(5), "freq": dbus.Int32(2412)}, dbus_interface=P2P)
peer = wait("owner found", lambda: list(cl.Get(P2P, "Peers", dbus_interface=PROPS)), 10)[0]
owner = ":".join("%02x" % b for b in bus_cl.get_object(W, peer).Get(W + ".Peer", "DeviceAddress", dbus_interface=PROPS))
cl.StopFind(dbus_interface=P2P)
log("find-owner", time.time() - t2)
t3 = time.time()
pg = cl.AddPersistentGroup({"ssid": ssid, "psk": psk, "bssid": owner}, dbus_interface=P2P)
cl.GroupAdd({"persistent_group_object": pg, "frequency": dbus.Int32(2412)}, dbus_interface=P2P)
cl_grp = wait("group interface on " + cl_if, lambda: group_if("p2p-" + cl_if + "-"))
cl.RemovePersistentGroup(pg, dbus_interface=P2P)
wait("client link-local", lambda: linklocal(cl_grp))
log("join", time.time() - t3)
print("group %s <-> %s, owner %s%%%s" % (go_grp, cl_grp, go_ll, go_grp), flush=True)

# As in PeerLink's upgrade: beta (the sender) owns the group and listens, alpha joins, dials
# and receives; each socket bound to its group interface.
srv = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
srv.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, go_grp.encode())
srv.bind((go_ll, 0, 0, socket.if_nametoindex(go_grp))); srv.listen(1)
port = srv.getsockname()[1]
def send():
    c, _ = srv.accept()
    with open(src, "rb") as f:
        while True:
            b = f.read(1 << 20)
            if not b: break
            c.sendall(b)
    c.close()
th = threading.Thread(target=send); th.start()
s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, cl_grp.encode())
tc = time.time()
s.connect((go_ll, port, 0, socket.if_nametoindex(cl_grp)))
log("connect", time.time() - tc)
got = {"n": 0}
with open(dst, "wb") as f:
    while True:
        b = s.recv(1 << 20)
        if not b: break
        got.setdefault("first", time.time())
        got["n"] += len(b); f.write(b)
got["end"] = time.time(); s.close(); th.join(30)
log("copy", got["end"] - got["first"])
print("bytes %d" % got["n"], flush=True)
tx = int(open("/sys/class/net/%s/statistics/tx_bytes" % go_grp).read())
print("owner-tx-bytes %d" % tx, flush=True)
try: go_grp_obj.Disconnect(dbus_interface=P2P)   # ends the group (best effort: the VM ends anyway)
except Exception as e: print("leaving the group: %s" % e, flush=True)
EOF
if cmp -s "$work/payload.bin" "$work/raw.bin"; then say "raw: received file identical"; else say "raw: received file differs or is missing"; failed=1; fi

# ---- summary ------------------------------------------------------------------------------
if "$py" - "$out" "$mib" <<'EOF' | tee "$out/bench-summary.txt"
import json, sys
out, mib = sys.argv[1], int(sys.argv[2])
size = mib << 20
def events(path):
    r = []
    for l in open(path):
        ts, _, rest = l.partition(" ")
        try: r.append((float(ts), json.loads(rest)))
        except ValueError: pass
    return r
def peerlink(name):
    tx = events("%s/%s-tx.log" % (out, name))
    first = next((t for t, e in tx if e.get("event") == "progress" and e.get("stage") == "transferring"), None)
    done = next((t for t, e in tx if e.get("event") == "sent"), None)
    media = {}; wifi = None
    for t, e in tx:
        if e.get("event") == "link" and e.get("up"): media[e["link"]] = e["medium"]
        if wifi is None and e.get("event") == "carrier" and "bulk" in e.get("role", "") and media.get(e["link"], "rfcomm") not in ("rfcomm", "l2cap", "bluetooth"):
            wifi = t
    steps = [("beta (sender)", t, e) for t, e in tx if e.get("event") == "upgrade"]
    steps += [("alpha (receiver)", t, e) for t, e in events("%s/%s-rx.log" % (out, name)) if e.get("event") == "upgrade"]
    return first, done, wifi, sorted(steps, key=lambda s: s[1])
rows = []
up_first, up_done, up_wifi, up_steps = peerlink("upgrade")
bt_first, bt_done, _, _ = peerlink("bluetooth")
raw = dict(l.split()[:2] for l in open(out + "/raw.log") if l.split() and l.split()[0] in
           ("add-interfaces", "form", "owner-link-local", "find-owner", "join", "connect", "copy"))
def sec(a, b): return b - a if a is not None and b is not None else None
rows.append(("PeerLink, Bluetooth + Wi-Fi Direct upgrade", sec(up_first, up_done)))
rows.append(("PeerLink, Bluetooth alone", sec(bt_first, bt_done)))
rows.append(("raw TCP over a Wi-Fi Direct group", float(raw["copy"]) if "copy" in raw else None))
base = rows[2][1]
print("\n%d MiB (%.2f MB), first bulk byte to the receiver's verified SHA-256 (raw: first byte to EOF)" % (mib, size / 1e6))
print("| run | seconds | MB/s | time vs raw TCP |\n|---|---|---|---|")
for name, s in rows:
    if s is None: print("| %s | failed | - | - |" % name); continue
    print("| %s | %.2f | %.2f | %s |" % (name, s, size / 1e6 / s, "%.2fx" % (s / base) if base else "-"))
if rows[0][1] and rows[1][1]:
    print("\nwith the upgrade: %.2fx the throughput of Bluetooth alone" % (rows[1][1] / rows[0][1])
          + (", %.2fx that of raw TCP over the group" % (base / rows[0][1]) if base else ""))
print("\nset-up, upgrade run (times from the first bulk byte; the proposal goes out as the send starts, before the file is hashed):")
if up_wifi is not None and up_first is not None:
    print("  first bulk byte -> bulk on Wi-Fi Direct: %.2f s" % (up_wifi - up_first))
    hashing = next((t for t, e in events(out + "/upgrade-tx.log") if e.get("event") == "progress" and e.get("stage") == "hashing"), None)
    if hashing is not None:
        print("  send started (hashing %.2f s before the first bulk byte) -> bulk on Wi-Fi Direct: %.2f s" % (up_first - hashing, up_wifi - hashing))
    tx = events(out + "/upgrade-tx.log")
    moved = max([e["completed"] for t, e in tx if e.get("event") == "progress" and e.get("stage") == "transferring" and t <= up_wifi] or [0])
    if up_done: print("  by then %.1f MiB had gone over Bluetooth; the other %.1f MiB took %.2f s on Wi-Fi (%.2f MB/s)"
          % (moved / 2**20, (size - moved) / 2**20, up_done - up_wifi, (size - moved) / 1e6 / (up_done - up_wifi)))
else:
    print("  FAILED: bulk never moved to Wi-Fi Direct (the figures above are not the upgrade's)")
for who, t, e in up_steps:
    rel = "%+7.2f s" % (t - up_first) if up_first else ""
    print("  %s %-16s %-18s +%6d ms  %s" % (rel, who, e["step"], e["stepMillis"], e.get("detail", "")))
for l in open(out + "/raw.log"):
    if l.startswith("leftover-group"): print("\nnote: %s was still up after the upgrade run" % l.split()[1])
print("\nraw group set-up (s): " + ", ".join("%s %s" % kv for kv in raw.items() if kv[0] != "copy"))
sys.exit(1 if up_wifi is None else 0)
EOF
then :; else say "the upgrade run never put bulk on Wi-Fi Direct"; failed=1; fi
exit "$failed"
