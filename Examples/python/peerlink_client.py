#!/usr/bin/env python3
"""A client of the PeerLink daemon's local API (docs/API.md), Python 3 standard library only.

Copy this file next to your program, or run it:

    peerlink_client.py [--socket PATH] status
    peerlink_client.py [--socket PATH] items [STATES]
    peerlink_client.py [--socket PATH] send PEER FILE [--priority N] [--ttl 2d]
    peerlink_client.py [--socket PATH] events [--after ID]
    peerlink_client.py [--socket PATH] send-and-wait PEER FILE [--timeout S]   (the test in scripts/e2e-daemon.sh)
"""
import argparse
import http.client
import json
import os
import socket
import sys
import time


def default_socket():
    """daemon.sock in the runtime directory, by the daemon's rule."""
    d = os.environ.get("PEERLINK_RUNTIME_DIR")
    if not d:
        if os.getuid() == 0:
            d = "/run/peerlink"
        elif os.environ.get("XDG_RUNTIME_DIR"):
            d = os.path.join(os.environ["XDG_RUNTIME_DIR"], "peerlink")
        else:
            d = "/tmp/peerlink-%d" % os.getuid()
    return os.path.join(d, "daemon.sock")


class UnixHTTPConnection(http.client.HTTPConnection):
    """http.client over a Unix stream socket."""

    def __init__(self, path, timeout=10):
        super().__init__("localhost", timeout=timeout)
        self.path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self.path)
        self.sock = s


class APIError(Exception):
    def __init__(self, status, code, message):
        super().__init__("%d %s: %s" % (status, code, message))
        self.status, self.code, self.message = status, code, message


class PeerLinkDaemon:
    def __init__(self, socket_path=None, timeout=10):
        self.socket_path = socket_path or default_socket()
        self.timeout = timeout

    def _request(self, method, path, body=None):
        conn = UnixHTTPConnection(self.socket_path, self.timeout)
        try:
            headers = {"Content-Type": "application/json"} if body is not None else {}
            conn.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
            r = conn.getresponse()
            data = json.loads(r.read() or b"{}")
        finally:
            conn.close()
        if r.status >= 400:
            e = data.get("error", {})
            raise APIError(r.status, e.get("code", "?"), e.get("message", ""))
        return data

    def status(self):
        return self._request("GET", "/v1/status")

    def items(self, states="queued,sending"):
        return self._request("GET", "/v1/items?state=" + states)["items"]

    def send_file(self, peer, path, priority=0, ttl=None):
        """Queues a file for a peer (ID, ID prefix or trusted name); returns the item."""
        body = {"peer": peer, "path": os.path.abspath(path), "priority": priority}
        if ttl is not None:
            body["ttl"] = ttl
        return self._request("POST", "/v1/items", body)["item"]

    def send_message(self, peer, text, priority=0, ttl=None):
        """Queues a short text message (up to 64 KiB of UTF-8) for a peer; it lands in the peer's
        inbox as message-<id>.txt. Returns the item."""
        body = {"peer": peer, "message": text, "priority": priority}
        if ttl is not None:
            body["ttl"] = ttl
        return self._request("POST", "/v1/items", body)["item"]

    def events(self, after=None, idle_timeout=None):
        """Yields events (dicts with id, kind, time, …) from the Server-Sent Events stream;
        returns when the stream ends or nothing (not even a keep-alive) came for idle_timeout
        seconds. Resume with after=<the last id you saw>: no event is missed or repeated.
        Raises APIError 410 when events after `after` are gone (resume from error oldest_id - 1
        and reread items())."""
        conn = UnixHTTPConnection(self.socket_path, idle_timeout)
        path = "/v1/events" + ("?after=%d" % after if after is not None else "")
        conn.request("GET", path)
        r = conn.getresponse()
        if r.status != 200:
            e = json.loads(r.read() or b"{}").get("error", {})
            conn.close()
            raise APIError(r.status, e.get("code", "?"), e.get("message", ""))
        fields = {}
        try:
            while True:
                line = r.fp.readline()
                if not line:
                    return
                line = line.decode("utf-8").rstrip("\n")
                if line == "":
                    if "data" in fields:
                        yield json.loads(fields["data"])
                    fields = {}
                elif not line.startswith(":"):
                    name, _, value = line.partition(":")
                    fields[name] = value[1:] if value.startswith(" ") else value
        except socket.timeout:
            return
        finally:
            conn.close()


def send_and_wait(api, peer, path, timeout):
    """The end-to-end check: status, submit, follow events until delivered, resume without
    duplicates. Prints one line per step; exits non-zero on a failure."""
    t = time.monotonic()
    st = api.status()
    ms = (time.monotonic() - t) * 1000
    print("status in %.1f ms: %s [%s], %d peers, items %s" % (ms, st["name"], st["peer"], len(st["peers"]), st["items"]))
    item = api.send_file(peer, path, ttl="1h")
    print("queued item %s (%d bytes)" % (item["id"], item["size"]))
    seen, last, deadline = set(), None, time.time() + timeout
    while time.time() < deadline and "item.delivered" not in seen:
        for e in api.events(after=last, idle_timeout=max(1, deadline - time.time())):
            if last is not None and e["id"] <= last:
                sys.exit("event %d came again (after %d)" % (e["id"], last))
            last = e["id"]
            if e.get("item") == item["id"]:
                seen.add(e["kind"])
                print("event %d %s" % (e["id"], e["kind"]))
                if e["kind"] == "item.delivered":
                    break
    if "item.delivered" not in seen:
        sys.exit("the item was not delivered within %d s (events seen: %s)" % (timeout, sorted(seen)))
    again = list(api.events(after=last, idle_timeout=2))
    dup = [e for e in again if e["id"] <= last or (e.get("item") == item["id"] and e["kind"] in seen)]
    if dup:
        sys.exit("resuming after %d gave events already seen: %s" % (last, dup))
    print("resumed after %d: %d newer events, no duplicate" % (last, len(again)))
    if api.status()["items"]["delivered"] < 1:
        sys.exit("status does not count the delivery")
    print("ok")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--socket", default=None)
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("status")
    i = sub.add_parser("items"); i.add_argument("states", nargs="?", default="queued,sending")
    s = sub.add_parser("send"); s.add_argument("peer"); s.add_argument("file")
    s.add_argument("--priority", type=int, default=0); s.add_argument("--ttl")
    m = sub.add_parser("message"); m.add_argument("peer"); m.add_argument("text")
    e = sub.add_parser("events"); e.add_argument("--after", type=int)
    w = sub.add_parser("send-and-wait"); w.add_argument("peer"); w.add_argument("file"); w.add_argument("--timeout", type=int, default=60)
    a = p.parse_args()
    api = PeerLinkDaemon(a.socket)
    try:
        if a.cmd == "status":
            print(json.dumps(api.status(), indent=2))
        elif a.cmd == "items":
            print(json.dumps(api.items(a.states), indent=2))
        elif a.cmd == "send":
            print(json.dumps(api.send_file(a.peer, a.file, a.priority, a.ttl), indent=2))
        elif a.cmd == "message":
            print(json.dumps(api.send_message(a.peer, a.text), indent=2))
        elif a.cmd == "events":
            for ev in api.events(after=a.after):
                print(json.dumps(ev), flush=True)
        elif a.cmd == "send-and-wait":
            send_and_wait(api, a.peer, a.file, a.timeout)
    except APIError as err:
        sys.exit("peerlink_client: %s" % err)
    except (FileNotFoundError, ConnectionRefusedError):
        sys.exit("peerlink_client: no daemon at %s (start one with `peerlink daemon --config FILE`)" % api.socket_path)


if __name__ == "__main__":
    main()
