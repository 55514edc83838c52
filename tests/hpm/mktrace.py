#!/usr/bin/env python3
# An independent writer of the hpm trace format, from tools/hpm/FORMAT.md
# alone: it builds well-formed and hostile traces for tests/hpm/run-hpm.sh.
#   mktrace.py KIND OUT
# MIT licence.
import struct
import sys

def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF

def varint(v):
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)

def zigzag(v):
    return (v << 1) ^ (v >> 63) if v >= 0 else ((-v) << 1) - 1

def header(cmd=b"mktrace"):
    body = b"".join(varint(x) for x in (4096, 2, 4242, 1, 1, 10**9, 1700000000 * 10**9))
    body += varint(len(cmd)) + cmd
    return b"HPMTRACE" + struct.pack("<HHI", 1, 0, len(body)) + body + struct.pack("<I", crc32c(body))

class Chunk:
    """Events of one thread; ids are given explicitly."""
    def __init__(self, thread, base_ns=0, base_id=0):
        self.thread, self.base_ns, self.base_id = thread, base_ns, base_id
        self.t, self.last = base_ns, base_id
        self.payload, self.n = bytearray(), 0

    def _op(self, kind, flags, t):
        self.payload.append(kind | flags)
        self.payload += varint(t - self.t)
        self.t = t
        self.n += 1

    def _ref(self, ref):
        if ref in (0, 1):
            return varint(ref)
        return varint(zigzag(ref - self.last) + 2)

    def malloc(self, t, size, ident):
        implicit = ident == self.last + 1
        self._op(0, 0x10 if implicit else 0, t)
        self.payload += varint(size)
        if not implicit:
            self.payload += varint(zigzag(ident - (self.last + 1)))
        self.last = ident

    def free(self, t, ref):
        self._op(4, 0, t)
        self.payload += self._ref(ref)

    def thread_start(self, t, tid):
        self._op(11, 0, t)
        self.payload += varint(tid) + varint(0)

    def raw(self, data, n=1):
        self.payload += data
        self.n += n

    def encode(self, count=None):
        n = self.n if count is None else count
        head = b"HPMC" + struct.pack("<IIIQQ", len(self.payload), self.thread, n, self.base_ns, self.base_id)
        return head + struct.pack("<I", crc32c(head + bytes(self.payload))) + bytes(self.payload)

def simple():
    c = Chunk(1)
    c.thread_start(0, 100)
    for i in range(10):
        c.malloc(10 * i + 5, 100 + i, 2 + i)
    for i in range(10):
        c.free(200 + i, 2 + i)
    return header() + c.encode()

def main():
    kind, out = sys.argv[1], sys.argv[2]
    if kind == "simple":            # 21 events, 10 objects, peak 1045 bytes
        data = simple()
    elif kind == "header-only":
        data = header()
    elif kind == "huge-count":      # event count that cannot fit the payload
        c = Chunk(1)
        c.malloc(1, 10, 2)
        data = header() + c.encode(count=0xFFFFFFFF)
    elif kind == "huge-size":       # a "successful" malloc of SIZE_MAX bytes
        c = Chunk(1)
        c.malloc(1, 2**64 - 1, 2)
        c.free(2, 2)
        data = header() + c.encode()
    elif kind == "unknown-free":    # frees of objects never allocated
        c = Chunk(1)
        c.malloc(1, 10, 2)
        c.free(2, 999)
        c.free(3, 1)
        c.free(4, 2)
        data = header() + c.encode()
    elif kind == "cycle":           # each thread frees the other's object before allocating its own
        a, b = Chunk(1), Chunk(2)
        a.free(1, 20)
        a.malloc(2, 10, 10)
        b.free(1, 10)
        b.malloc(2, 10, 20)
        data = header() + a.encode() + b.encode()
    elif kind == "bad-varint":      # an 11-byte varint
        c = Chunk(1)
        c.raw(bytes([0x10]) + b"\xff" * 10 + b"\x01")
        data = header() + c.encode()
    elif kind == "bad-kind":
        c = Chunk(1)
        c.raw(bytes([0x0E, 0x00]))
        data = header() + c.encode()
    elif kind == "huge-header":     # header length beyond the file
        data = b"HPMTRACE" + struct.pack("<HHI", 1, 0, 0xFFFFFFF0) + b"\0" * 8
    elif kind == "future-version":
        data = bytearray(simple())
        data[8] = 9
        data = bytes(data)
    else:
        sys.exit("unknown kind " + kind)
    with open(out, "wb") as f:
        f.write(data)

if __name__ == "__main__":
    main()
