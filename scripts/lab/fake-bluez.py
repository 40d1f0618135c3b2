#!/usr/bin/python3
"""A stand-in for bluetoothd on a private D-Bus bus, for checks that need BlueZ to answer
without a Bluetooth controller: it owns org.bluez and answers
org.freedesktop.DBus.ObjectManager.GetManagedObjects with the adapters given, and every other
call with org.freedesktop.DBus.Error.UnknownMethod. Python's standard library only (the D-Bus
wire protocol, little-endian).

  fake-bluez.py BUS-ADDRESS [NAME=ADDRESS[,off] ...]     e.g. hci0=00:AA:01:00:00:00

BUS-ADDRESS is unix:path=PATH. Prints "ready" once it owns org.bluez; runs until killed."""
import os
import socket
import struct
import sys

ALIGN = {"y": 1, "b": 4, "u": 4, "i": 4, "s": 4, "o": 4, "g": 1, "v": 1, "a": 4, "(": 8, "{": 8}


def split_types(sig):
    """The complete types of a signature, in order."""
    out, i = [], 0
    while i < len(sig):
        j = i
        while sig[j] == "a":
            j += 1
        if sig[j] in "({":
            depth, k = 0, j
            while True:
                depth += sig[k] in "({"
                depth -= sig[k] in ")}"
                k += 1
                if depth == 0:
                    break
            j = k
        else:
            j += 1
        out.append(sig[i:j])
        i = j
    return out


class Writer:
    def __init__(self):
        self.buf = bytearray()

    def pad(self, n):
        while len(self.buf) % n:
            self.buf.append(0)

    def put(self, sig, value):
        t = sig[0]
        self.pad(ALIGN[t])
        if t == "y":
            self.buf.append(value)
        elif t in "bu":
            self.buf += struct.pack("<I", int(value))
        elif t in "so":
            data = value.encode()
            self.buf += struct.pack("<I", len(data)) + data + b"\0"
        elif t == "g":
            data = value.encode()
            self.buf += bytes([len(data)]) + data + b"\0"
        elif t == "v":
            inner, v = value
            self.put("g", inner)
            self.put(inner, v)
        elif t == "a":
            elem = sig[1:]
            at = len(self.buf)
            self.buf += b"\0\0\0\0"
            self.pad(ALIGN[elem[0]])
            start = len(self.buf)
            items = value.items() if elem[0] == "{" else value
            for item in items:
                self.put(elem, item)
            struct.pack_into("<I", self.buf, at, len(self.buf) - start)
        elif t in "({":
            for part, v in zip(split_types(sig[1:-1]), value):
                self.put(part, v)
        else:
            raise ValueError("type %r" % t)


def message(kind, serial, fields, body_sig="", body=()):
    """A whole message: kind 1 call, 2 return, 3 error; fields {code: (sig, value)}."""
    b = Writer()
    for part, v in zip(split_types(body_sig), body):
        b.put(part, v)
    if body_sig:
        fields = {**fields, 8: ("g", body_sig)}
    h = Writer()
    h.buf += struct.pack("<cBBBII", b"l", kind, 0, 1, len(b.buf), serial)
    h.put("a(yv)", [(code, fields[code]) for code in sorted(fields)])
    h.pad(8)
    return bytes(h.buf) + bytes(b.buf)


def read_message(conn, pending):
    """(kind, serial, fields as {code: value}) of the next message; pending keeps extra bytes."""
    def need(n):
        while len(pending) < n:
            chunk = conn.recv(65536)
            if not chunk:
                sys.exit(0)
            pending.extend(chunk)
    need(16)
    _, kind, _, _, body_len, serial, fields_len = struct.unpack_from("<cBBBIII", pending, 0)
    header_len = 16 + fields_len
    header_len += -header_len % 8
    need(header_len + body_len)
    fields, i = {}, 16
    while i < 16 + fields_len:
        i += -i % 8
        code, sig_len = pending[i], pending[i + 1]
        sig = pending[i + 2:i + 2 + sig_len].decode()
        i += 3 + sig_len
        if sig in "so":
            i += -i % 4
            (n,) = struct.unpack_from("<I", pending, i)
            fields[code] = pending[i + 4:i + 4 + n].decode()
            i += 5 + n
        elif sig == "g":
            n = pending[i]
            fields[code] = pending[i + 1:i + 1 + n].decode()
            i += 2 + n
        elif sig == "u":
            i += -i % 4
            (fields[code],) = struct.unpack_from("<I", pending, i)
            i += 4
        else:
            raise ValueError("header field type %r" % sig)
    del pending[:header_len + body_len]
    return kind, serial, fields


def main():
    if len(sys.argv) < 2 or not sys.argv[1].startswith("unix:path="):
        sys.exit(__doc__)
    adapters = {}
    for spec in sys.argv[2:]:
        name, _, rest = spec.partition("=")
        address, _, state = rest.partition(",")
        adapters["/org/bluez/" + name] = {"org.bluez.Adapter1": {
            "Address": ("s", address), "Powered": ("b", state != "off")}}
    conn = socket.socket(socket.AF_UNIX)
    conn.connect(sys.argv[1][len("unix:path="):])
    conn.sendall(b"\0AUTH EXTERNAL " + str(os.getuid()).encode().hex().encode() + b"\r\n")
    if not conn.recv(4096).startswith(b"OK"):
        sys.exit("fake-bluez: the bus refused authentication")
    conn.sendall(b"BEGIN\r\n")
    bus = {1: ("o", "/org/freedesktop/DBus"), 2: ("s", "org.freedesktop.DBus"), 6: ("s", "org.freedesktop.DBus")}
    conn.sendall(message(1, 1, {**bus, 3: ("s", "Hello")}))
    conn.sendall(message(1, 2, {**bus, 3: ("s", "RequestName")}, "su", ("org.bluez", 4)))
    pending, serial, owned = bytearray(), 2, False
    while True:
        kind, call_serial, fields = read_message(conn, pending)
        if kind == 2 and fields.get(5) == 2 and not owned:
            owned = True
            print("ready", flush=True)
        if kind != 1:
            continue
        serial += 1
        reply_to = {5: ("u", call_serial)}
        if 7 in fields:
            reply_to[6] = ("s", fields[7])
        if fields.get(3) == "GetManagedObjects" and fields.get(2) == "org.freedesktop.DBus.ObjectManager":
            conn.sendall(message(2, serial, reply_to, "a{oa{sa{sv}}}", (adapters,)))
        else:
            conn.sendall(message(3, serial, {**reply_to, 4: ("s", "org.freedesktop.DBus.Error.UnknownMethod")},
                                 "s", ("fake-bluez answers GetManagedObjects only",)))


if __name__ == "__main__":
    main()
