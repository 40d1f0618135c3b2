#!/usr/bin/env bash
# bench-file-e2e.sh — a file end to end between two network namespaces, PeerLink's CLI against
# OpenSSH's scp over the same veth, rounds interleaved; prints each round, the medians, the
# spread, the ratio, and where PeerLink's time goes (phases from its --json progress lines).
#
#   scripts/bench-file-e2e.sh [--size-mib N] [--rounds N] [--binary PATH] [--dir DIR]
#                             [--baseline PATH] [--scp-cipher CIPHER] [--keep]
#       --size-mib N     file size in MiB (default 1024)
#       --rounds N       rounds; each runs PeerLink and scp once, their order alternating (default 3)
#       --binary PATH    peerlink binary (default .build/release/peerlink; build it with
#                        `swift build -c release --product peerlink`)
#       --baseline PATH  a second peerlink binary (e.g. the build before a change), run in the
#                        same rounds as --binary (both ends use the same binary each time)
#       --dir DIR        where the file, its copies and the logs go; must be tmpfs (default /dev/shm)
#       --scp-cipher C   pass `-c C` to scp (default: none, so ssh's default negotiation, as a user gets)
#       --keep           keep the work directory (timestamped logs) afterwards
#
# PeerLink: `peerlink receive --accept-all --count 1` runs in namespace A (started before the
# clock, as a receiver waiting for files would be); the clock runs over
# `peerlink send FILE --to alpha` in namespace B: start-up, mDNS lookup, connect and Noise
# handshake, SHA-256 of the file (before the offer, or while sending: then it has no phase of
# its own), the transfer, and the receiver's verdict.
# scp: `scp FILE root@A:DIR/` from B, to an sshd this script starts inside A on A's lab
# address with a host key, client key and authorized_keys made in a temporary directory
# (the same recipe as Sources/peerlink-bench/OpenSSH.swift); the machine's own sshd and its
# keys are neither used nor touched. The clock runs over the whole scp command (its connect,
# key exchange and login included), as a user would time it.
# Both copies are checked (cmp) after each round, outside the clock.
#
# Needs root, the IP lab's packages (scripts/setup.sh: iproute2, dbus, avahi-daemon),
# openssh-server and openssh-client, python3, and 2 × SIZE + 64 MiB free on DIR.
# A benchmark, not a test: not run by CI. Exits non-zero if any transfer failed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
die() { echo "bench-file-e2e: $*" >&2; exit 2; }

size_mib=1024 rounds=3 bin=$root/.build/release/peerlink baseline="" base=/dev/shm cipher="" keep=""
while [ $# -gt 0 ]; do
    case "$1" in
        --size-mib) size_mib=${2:?--size-mib needs a value}; shift 2 ;;
        --rounds) rounds=${2:?--rounds needs a value}; shift 2 ;;
        --binary) bin=${2:?--binary needs a value}; shift 2 ;;
        --baseline) baseline=${2:?--baseline needs a value}; shift 2 ;;
        --dir) base=${2:?--dir needs a value}; shift 2 ;;
        --scp-cipher) cipher=${2:?--scp-cipher needs a value}; shift 2 ;;
        --keep) keep=1; shift ;;
        -h|--help) usage; exit 0 ;;
        *) usage >&2; die "unknown argument '$1'" ;;
    esac
done
[[ $size_mib =~ ^[0-9]+$ ]] && [ "$size_mib" -ge 1 ] || die "--size-mib must be a whole number ≥ 1"
[[ $rounds =~ ^[0-9]+$ ]] && [ "$rounds" -ge 1 ] || die "--rounds must be a whole number ≥ 1"
[ "$(id -u)" = 0 ] || die "needs root (network namespaces, sshd)"
[ -x "$bin" ] || die "no peerlink binary at $bin (run: swift build -c release --product peerlink)"
[ -z "$baseline" ] || [ -x "$baseline" ] || die "no peerlink binary at $baseline (--baseline)"
for tool in /usr/sbin/sshd /usr/bin/scp /usr/bin/ssh /usr/bin/ssh-keygen python3 openssl cmp; do
    command -v "$tool" >/dev/null || die "'$tool' not found (apt-get install openssh-server openssh-client python3 openssl)"
done
[ -d "$base" ] || die "--dir $base does not exist"
[ "$(stat -f -c %T "$base")" = tmpfs ] || die "--dir $base is $(stat -f -c %T "$base"), not tmpfs: the disk would be measured too"
avail=$(df -Pk "$base" | awk 'NR == 2 {print $4}')
[ "$avail" -ge $(( (size_mib * 2 + 64) * 1024 )) ] || die "$((avail / 1024)) MiB free on $base; need $((size_mib * 2 + 64)) MiB"

lab="$here/lab/iplab.sh"
work=$(mktemp -d "$base/peerlink-bench-file.XXXXXX")
chmod 755 "$work"  # avahi-daemon drops root and must reach the bus sockets inside
export IPLAB_PREFIX=${IPLAB_PREFIX:-plbf}
export IPLAB_SUBNET=${IPLAB_SUBNET:-10.79.0}
export PEERLINK_RUNTIME_DIR="$work/run"
A=${IPLAB_PREFIX}a  # receives (peerlink receive, sshd)
B=${IPLAB_PREFIX}b  # sends (peerlink send, scp)
NAME=bench-file-e2e
# shellcheck source=lab/e2e-lib.sh
. "$here/lab/e2e-lib.sh"
sshd_pid="" made_run_sshd=""
cleanup() {
    set +e
    [ -z "$sshd_pid" ] || kill "$sshd_pid" 2>/dev/null
    [ -z "$made_run_sshd" ] || rmdir /run/sshd 2>/dev/null
    if [ -n "$keep" ]; then
        rm -f "$work/big.bin" "$work/inbox/big.bin" "$work/scp-in/big.bin"
        "$lab" down "$work/lab" >/dev/null 2>&1
        echo "logs kept in $work" >&2
    else
        e2e_cleanup
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "binary: $bin${baseline:+; baseline: $baseline}"
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(ssh -V 2>&1)"
"$lab" up "$work/lab" 2 >"$work/lab-up.log" 2>&1 || { cat "$work/lab-up.log" >&2; failed=1; die "lab setup failed"; }
addr_a=$("$lab" addr "$A")

# The file: incompressible and cheap to make (a keystream; /dev/urandom is slower).
openssl enc -aes-128-ctr -nosalt -pass pass:peerlink-bench-file -in /dev/zero 2>/dev/null |
    head -c $(( size_mib << 20 )) >"$work/big.bin" || true
[ "$(stat -c %s "$work/big.bin")" = $(( size_mib << 20 )) ] || { failed=1; die "could not make the $size_mib MiB file"; }

# sshd inside A, throwaway keys, only this lab's address; root login by key (the lab runs as root).
ssh_dir="$work/ssh"
mkdir -m 700 "$ssh_dir"
ssh-keygen -q -t ed25519 -N "" -C "bench-file-e2e host" -f "$ssh_dir/host"
ssh-keygen -q -t ed25519 -N "" -C "bench-file-e2e client" -f "$ssh_dir/client"
cp "$ssh_dir/client.pub" "$ssh_dir/authorized_keys"
echo "$addr_a $(cut -d' ' -f1-2 "$ssh_dir/host.pub")" >"$ssh_dir/known_hosts"
cat >"$ssh_dir/sshd_config" <<CONF
ListenAddress $addr_a
Port 22
HostKey $ssh_dir/host
PidFile $ssh_dir/sshd.pid
AuthorizedKeysFile $ssh_dir/authorized_keys
AuthenticationMethods publickey
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
UsePAM no
StrictModes no
Compression no
Subsystem sftp internal-sftp
LogLevel ERROR
CONF
if [ ! -d /run/sshd ]; then mkdir -m 755 /run/sshd; made_run_sshd=1; fi  # sshd's privilege-separation directory
ip netns exec "$A" /usr/sbin/sshd -D -e -f "$ssh_dir/sshd_config" >"$work/sshd.err" 2>&1 </dev/null &
sshd_pid=$!  # `ip netns exec` execs sshd: this is sshd itself
ssh_opts=(-F /dev/null -i "$ssh_dir/client" -o UserKnownHostsFile="$ssh_dir/known_hosts"
          -o StrictHostKeyChecking=yes -o BatchMode=yes -o IdentitiesOnly=yes -o LogLevel=ERROR)
[ -z "$cipher" ] || ssh_opts+=(-c "$cipher")
ready=""
for _ in $(seq 1 100); do
    if "$lab" exec "$B" ssh "${ssh_opts[@]}" "root@$addr_a" true </dev/null >/dev/null 2>&1; then ready=1; break; fi
    sleep 0.1
done
[ -n "$ready" ] || { cat "$work/sshd.err" >&2; failed=1; die "sshd in $A did not accept a login within 10 s"; }
negotiated=$("$lab" exec "$B" ssh -v "${ssh_opts[@]/LogLevel=ERROR/LogLevel=VERBOSE}" "root@$addr_a" true </dev/null 2>&1 |
    sed -n 's/.*kex: client->server cipher: \([^ ]*\).*/\1/p' | head -n 1)
echo "scp: $(ssh -V 2>&1 | cut -d, -f1), cipher ${negotiated:-unknown}${cipher:+ (asked for with -c)}, SFTP protocol (scp's default)"

# A line timestamper: prefixes each line with the wall clock in ns as it arrives (the CLI
# flushes every line), so the sender's and the receiver's events share one clock.
cat >"$work/stamp.py" <<'PY'
import sys, time
out = open(sys.argv[1], "w", buffering=1)
read = sys.stdin.buffer.readline
while True:
    line = read()
    if not line:
        break
    out.write(f"{time.time_ns()} {line.decode(errors='replace')}")
PY
mkdir -p "$work/inbox" "$work/scp-in"
results="$work/results.tsv"
: >"$results"

run_peerlink() {  # ROUND [BINARY LABEL]
    local r=$1 bin=${2:-$bin} label=${3:-peerlink} rc recv_pid start end
    rm -rf "$work/inbox/big.bin" "$work/inbox/.peerlink-partial"
    "$lab" exec "$A" env PEERLINK_CONFIG_DIR="$work/cfg-$A" "$bin" receive --service bench-file --name alpha \
        --media ip --dir "$work/inbox" --accept-all --count 1 --keep-free 0 --json 2>"$work/receive-$r.err" </dev/null |
        python3 "$work/stamp.py" "$work/receive-$r.ts" &
    recv_pid=$!
    pids+=("$recv_pid")
    # Ready once avahi has published it (probing done), as a receiver left waiting would be.
    wait_for "$work/receive-$r.ts" '"text":"published as' 15 || { failed=1; die "round $r: the receiver was not published within 15 s"; }
    sleep 1
    start=$(date +%s%N)
    set +e
    "$lab" exec "$B" env PEERLINK_CONFIG_DIR="$work/cfg-$B" "$bin" send "$work/big.bin" --service bench-file \
        --name beta --media ip --to alpha --retries 0 --json 2>"$work/send-$r.err" </dev/null |
        python3 "$work/stamp.py" "$work/send-$r.ts"
    rc=${PIPESTATUS[0]}
    end=$(date +%s%N)
    wait "$recv_pid"
    set -e
    if [ "$rc" != 0 ] || ! cmp -s "$work/big.bin" "$work/inbox/big.bin"; then
        failed=$((failed + 1)); echo "round $r: PeerLink FAILED (send exit $rc; see $work/send-$r.err)" >&2
        cat "$work/send-$r.err" >&2; return 1
    fi
    python3 - "$work/send-$r.ts" "$work/receive-$r.ts" "$start" "$end" "$r" "$label" >>"$results" <<'PY'
import json, sys
send, recv, start, end, r, label = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6]
def events(path):
    for line in open(path):
        t, _, rest = line.partition(" ")
        try:
            yield int(t), json.loads(rest)
        except ValueError:
            pass
s = list(events(send)); v = list(events(recv))
def first(evs, pred): return next(t for t, e in evs if pred(e))
def last(evs, pred): return [t for t, e in evs if pred(e)][-1]
prog = lambda stage: (lambda e: e.get("event") == "progress" and e.get("stage") == stage)
inviting = first(s, lambda e: e.get("event") == "inviting")
xfer0 = first(s, prog("transferring"))
# A sender that hashes while sending reports no hashing stage: that phase is then empty.
hashing = [t for t, e in s if prog("hashing")(e)]
hash0, hash1 = (hashing[0], hashing[-1]) if hashing else (xfer0, xfer0)
verified = first(v, lambda e: e.get("event") == "received")
# The receiver's last progress line; its report of the last byte may come after its verdict
# (write completions and the verdict reach the session in any order): then the verdict's time.
recv1 = min(verified, max([t for t, e in v if e.get("event") == "progress"] or [verified]))
sent = first(s, lambda e: e.get("event") == "sent")
ms = lambda a, b: (b - a) / 1e6
# total, start-up+lookup, invitation+connect+handshake, hashing, offer→accept, transfer (to the last byte written
# at the receiver), receiver's verdict (verify, rename), verdict → sender has it, sender exit
print(label, r, *(f"{x:.0f}" for x in (ms(start, end), ms(start, inviting), ms(inviting, hash0), ms(hash0, hash1), ms(hash1, xfer0),
      ms(xfer0, recv1), ms(recv1, verified), ms(verified, sent), ms(sent, end))), sep="\t")
PY
}

run_scp() {  # ROUND
    local r=$1 rc start end
    rm -f "$work/scp-in/big.bin"
    start=$(date +%s%N)
    set +e
    "$lab" exec "$B" scp -q "${ssh_opts[@]}" "$work/big.bin" "root@$addr_a:$work/scp-in/big.bin" </dev/null 2>"$work/scp-$r.err"
    rc=$?
    end=$(date +%s%N)
    set -e
    if [ "$rc" != 0 ] || ! cmp -s "$work/big.bin" "$work/scp-in/big.bin"; then
        failed=$((failed + 1)); echo "round $r: scp FAILED (exit $rc)" >&2; cat "$work/scp-$r.err" >&2; return 1
    fi
    rm -f "$work/scp-in/big.bin"
    printf 'scp\t%s\t%.0f\n' "$r" "$(( (end - start) / 1000000 ))" >>"$results"
}

echo "file: $size_mib MiB on $(stat -f -c %T "$work") ($work), $rounds rounds, order alternating"
for r in $(seq 1 "$rounds"); do
    if [ $((r % 2)) = 1 ]; then
        run_peerlink "$r"; [ -z "$baseline" ] || run_peerlink "$r" "$baseline" baseline; run_scp "$r"
    else
        run_scp "$r"; [ -z "$baseline" ] || run_peerlink "$r" "$baseline" baseline; run_peerlink "$r"
    fi
    awk -F'\t' -v r="$r" '$2 == r { printf "round %s: %-8s %6.2f s\n", r, $1, $3 / 1000 }' "$results"
done

python3 - "$results" "$size_mib" <<'PY'
import statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
size = int(sys.argv[2]) << 20
sc = [float(r[2]) / 1000 for r in rows if r[0] == "scp"]
med = statistics.median
def line(name, xs):
    return f"{name:<9} median {med(xs):6.2f} s  ({size / med(xs) / 1e6:4.0f} MB/s)   rounds " + " ".join(f"{x:.2f}" for x in xs)
for label in ("baseline", "peerlink"):
  pl = [[float(x) / 1000 for x in r[2:]] for r in rows if r[0] == label]
  if not pl: continue
  print(f"\n== {label} ==")
  print(line(label, [p[0] for p in pl]))
  print(line("scp", sc))
  ratio = med(sc) / med([p[0] for p in pl])
  per_round = [s / p[0] for s, p in zip(sc, pl)]
  print(f"PeerLink's rate / scp's rate: {ratio:.2f} (of the medians); per round " +
        " ".join(f"{x:.2f}" for x in per_round) + f", their median {med(per_round):.2f}")
  names = ["start-up and mDNS lookup", "invitation, TCP connect, Noise handshake", "SHA-256 of the file before the offer (none when hashed while sending)", "offer → accepted",
           "transfer (first byte offered → last byte written at the receiver)", "receiver's verdict (the digest if it follows, compare, rename)",
           "verdict → sender", "sender's exit"]
  print("\nPeerLink's time by phase (median, min–max, s):")
  for i, n in enumerate(names, start=1):
      xs = [p[i] for p in pl]
      print(f"  {med(xs):6.2f}  {min(xs):5.2f}–{max(xs):5.2f}  {n}")
  xfer = med([p[5] for p in pl])
  print(f"\ntransfer phase alone: {size / xfer / 1e6:.0f} MB/s")
  # If the hash ran while the bytes travel, the time would be the total less the hashing phase
  # (at best: hashing and the transfer then share the 2 cores).
  if any(p[3] > 0 for p in pl):
      best = med([p[0] - p[3] for p in pl])
      print(f"without the hashing phase (hash while sending, at best): {best:.2f} s, {med(sc) / best:.2f} × scp's rate")
PY
echo
echo "machine load now: $(cut -d' ' -f1-3 /proc/loadavg)"
[ "$failed" = 0 ]
