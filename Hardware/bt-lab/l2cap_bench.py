#!/usr/bin/python3
"""Raw L2CAP BR/EDR throughput sender/receiver in any channel mode, for the lab baseline.

BlueZ 5.66's `l2test -X ertm` cannot select ERTM on BR/EDR: it puts BT_MODE_ERTM (1, the
BT_MODE_* numbering of the LE/ECRED socket option) into L2CAP_OPTIONS.mode, where 1 means the
obsolete Retransmission Mode, and the kernel refuses the socket (fixed upstream by commit
54601cbcf "l2test: Fix setting mode for BR/EDR l2cap socket"). This tool sets
L2CAP_OPTIONS.mode itself, so ERTM can be measured the way l2test measures basic mode.

    l2cap_bench.py rx ADAPTER PSM [--mode ertm|basic] [--mtu N] [--block B]
    l2cap_bench.py tx ADAPTER PSM REMOTE --count N [--size S] [--mode ...] [--mtu N]

The receiver prints "Waiting for connection" and, for every BLOCK bytes received,
"<bytes> bytes in <seconds> sec, <kB/s> kB/s" — the lines Hardware/bt-lab/baseline.sh reads
from l2test.
"""
import argparse
import socket
import struct
import sys
import time

SOL_L2CAP = 6
L2CAP_OPTIONS = 1
# struct l2cap_options: omtu, imtu, flush_to (u16), mode, fcs, max_tx (u8), txwin_size (u16)
OPTIONS = struct.Struct("=HHHBBBxH")
MODES = {"basic": 0, "ertm": 3, "streaming": 4}


def configure(sock, mode, mtu):
    omtu, imtu, flush_to, _, fcs, max_tx, txwin = OPTIONS.unpack(
        sock.getsockopt(SOL_L2CAP, L2CAP_OPTIONS, OPTIONS.size))
    if mtu:
        imtu = mtu
    if MODES[mode] == 3:
        max_tx = max(max_tx, 10)
    sock.setsockopt(SOL_L2CAP, L2CAP_OPTIONS,
                    OPTIONS.pack(omtu, imtu, flush_to, MODES[mode], fcs, max_tx, txwin))


def describe(sock):
    omtu, imtu, _, mode, _, _, txwin = OPTIONS.unpack(
        sock.getsockopt(SOL_L2CAP, L2CAP_OPTIONS, OPTIONS.size))
    return f"mode {mode} imtu {imtu} omtu {omtu} txwin {txwin}"


def receive(args):
    server = socket.socket(socket.AF_BLUETOOTH, socket.SOCK_SEQPACKET, socket.BTPROTO_L2CAP)
    server.bind((args.adapter, args.psm))
    configure(server, args.mode, args.mtu)
    # A large receive buffer, as PeerLink's L2CAP transport asks for (SO_RCVBUFFORCE, root in
    # the lab): with the default one, ERTM links with multi-PDU SDUs were reset mid-transfer.
    server.setsockopt(socket.SOL_SOCKET, 33, 4 << 20)
    server.listen(1)
    print("Waiting for connection ...", flush=True)
    conn, peer = server.accept()
    print(f"Connect from {peer[0]} ({describe(conn)})", flush=True)
    buf = bytearray(65536)
    total, start = 0, None
    while True:
        n = conn.recv_into(buf)
        if n <= 0:
            break
        if start is None:
            start = time.monotonic()   # like l2test: the clock starts at the first SDU
        total += n
        if total >= args.block:
            now = time.monotonic()
            secs = now - start
            print(f"{total} bytes in {secs:.2f} sec, {total / secs / 1000:.2f} kB/s", flush=True)
            total, start = 0, now
    conn.close()


def send(args):
    sock = socket.socket(socket.AF_BLUETOOTH, socket.SOCK_SEQPACKET, socket.BTPROTO_L2CAP)
    sock.bind((args.adapter, 0))
    configure(sock, args.mode, args.mtu)
    sock.settimeout(60)
    sock.connect((args.remote, args.psm))
    sock.settimeout(None)
    print(f"Connected ({describe(sock)})", flush=True)
    payload = bytes(range(256)) * (args.size // 256 + 1)
    payload = payload[:args.size]
    for _ in range(args.count):
        sock.send(payload)
    # ERTM: close only once the peer acknowledged everything (SO_LINGER waits for it).
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 30))
    sock.close()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("role", choices=["rx", "tx"])
    p.add_argument("adapter")
    p.add_argument("psm", type=lambda s: int(s, 0))
    p.add_argument("remote", nargs="?")
    p.add_argument("--mode", choices=sorted(MODES), default="ertm")
    p.add_argument("--mtu", type=int, default=0, help="incoming MTU to ask for")
    p.add_argument("--size", type=int, default=672, help="SDU size (tx)")
    p.add_argument("--count", type=int, default=1000, help="SDUs to send (tx)")
    p.add_argument("--block", type=int, default=262144, help="report every B bytes (rx)")
    args = p.parse_args()
    if args.role == "tx" and not args.remote:
        p.error("tx needs REMOTE")
    (receive if args.role == "rx" else send)(args)


if __name__ == "__main__":
    sys.exit(main())
