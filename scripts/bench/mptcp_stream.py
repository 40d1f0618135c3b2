#!/usr/bin/python3
"""Kernel MPTCP baseline for scripts/bench-handover.sh: a fixed-rate stream of 64-byte
records (8-byte big-endian sequence number + padding) over one MPTCP connection.

  mptcp_stream.py recv BIND-ADDRESS PORT SECONDS   prints the delivery statistics as JSON
  mptcp_stream.py send HOST PORT RATE SECONDS

The receiver reports the same fields as peerlink-bench's handover-recv (arrivals, distinct
arrivals, duplicates, reordered, largest gap between consecutive arrivals, first and last
arrival and the end of its watch, monotonic microseconds); the sender reports how many it was
to send, how many it sent and when it started, which scripts/bench-handover.sh judges the
receiver's report against."""
import json
import socket
import sys
import time

IPPROTO_MPTCP = 262
RECORD = 64


def now_us():
    return time.monotonic_ns() // 1000


def recv(bind, port, seconds):
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM, IPPROTO_MPTCP)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((bind, port))
    srv.listen(1)
    srv.settimeout(seconds)
    conn, _ = srv.accept()
    deadline = time.monotonic() + seconds
    conn.settimeout(0.2)
    buf = b""
    arrivals = []
    while time.monotonic() < deadline:
        try:
            chunk = conn.recv(65536)
        except socket.timeout:
            continue
        if not chunk:
            break
        t = now_us()
        buf += chunk
        while len(buf) >= RECORD:
            arrivals.append((int.from_bytes(buf[:8], "big"), t))
            buf = buf[RECORD:]
    seen, dups, reordered, last, gap, gap_at = set(), 0, 0, None, 0, 0
    for i, (seq, at) in enumerate(arrivals):
        if seq in seen:
            dups += 1
        seen.add(seq)
        if last is not None and seq < last:
            reordered += 1
        last = seq if last is None else max(last, seq)
        if i > 0 and at - arrivals[i - 1][1] > gap:
            gap, gap_at = at - arrivals[i - 1][1], arrivals[i - 1][1]
    print(json.dumps({"received": len(arrivals), "unique": len(seen),
                      "duplicates": dups, "reordered": reordered,
                      "max_gap_ms": round(gap / 1000, 1), "gap_at_us": gap_at,
                      "first_us": arrivals[0][1] if arrivals else None,
                      "last_us": arrivals[-1][1] if arrivals else None,
                      "end_us": now_us()}, separators=(",", ":")))


def send(host, port, rate, seconds):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, IPPROTO_MPTCP)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.connect((host, port))
    s.settimeout(seconds + 5)  # a stream that cannot move any more fails instead of hanging
    count = int(rate * seconds)
    start_us = now_us()
    start = start_us / 1e6
    sent, error = 0, None
    for i in range(count):
        due = start + i / rate
        wait = due - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        try:
            s.sendall(i.to_bytes(8, "big") + bytes(RECORD - 8))
        except OSError as e:
            error = str(e)
            break
        sent += 1
    report = {"count": count, "sent": sent, "start_us": start_us}
    if error:
        report["error"] = error
    print(json.dumps(report, separators=(",", ":")), flush=True)
    time.sleep(2)


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "recv":
        recv(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]))
    elif len(sys.argv) == 6 and sys.argv[1] == "send":
        send(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]))
    else:
        sys.exit(__doc__)
