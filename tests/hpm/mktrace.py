#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
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

def header(cmd=b"mktrace", version=1, depth=0, unwinder=0, flags=0):
    body = b"".join(varint(x) for x in (4096, 2, 4242, 1, 1, 10**9, 1700000000 * 10**9))
    body += varint(len(cmd)) + cmd
    if version == 2:                # the stack fields after the command line
        body += varint(depth) + varint(unwinder)
    return b"HPMTRACE" + struct.pack("<HHI", version, flags, len(body)) + body + struct.pack("<I", crc32c(body))

def other_chunk(magic, thread, n, payload):
    """A stack chunk (HPMS: N stacks) or a maps chunk (HPMM: thread 0, N 0)."""
    head = magic + struct.pack("<IIIQQ", len(payload), thread, n, 0, 0)
    return head + struct.pack("<I", crc32c(head + payload)) + payload

def stack_record(ident, frames):
    out, prev = bytearray(varint(ident) + varint(len(frames))), 0
    for f in frames:
        out += varint(zigzag(f - prev))
        prev = f
    return bytes(out)

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

    def malloc(self, t, size, ident, stack=0):
        implicit = ident == self.last + 1
        self._op(0, (0x10 if implicit else 0) | (0x80 if stack else 0), t)
        self.payload += varint(size)
        if not implicit:
            self.payload += varint(zigzag(ident - (self.last + 1)))
        if stack:                   # version 2: the STACK flag, then the stack id
            self.payload += varint(stack)
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
    elif kind == "stacks":          # version 2: 3 mallocs on 2 stacks (one defined after its use), a maps chunk
        c = Chunk(1)
        c.thread_start(0, 100)
        c.malloc(5, 100, 2, stack=1)
        c.malloc(6, 200, 3, stack=2)
        c.malloc(7, 300, 4, stack=1)
        c.free(8, 3)
        maps = b"00400000-00500000 r-xp 00000000 08:01 42 /nonexistent/prog\n"
        data = (header(version=2, depth=8, unwinder=3) + other_chunk(b"HPMS", 1, 1, stack_record(1, [0x401000, 0x402000]))
                + c.encode() + other_chunk(b"HPMS", 1, 1, stack_record(2, [0x403000, 0x401f00, 0x402000]))
                + other_chunk(b"HPMM", 0, 0, maps))
    elif kind in ("ends", "ends-none"):  # the ENDS flag; an end marker (_exit(3) at 300 ns), or none
        c = Chunk(1)
        c.thread_start(0, 100)
        c.malloc(5, 100, 2)
        end = Chunk(1, base_ns=300, base_id=2 | 3 << 8)  # an event chunk without events
        data = header(flags=1) + c.encode() + (end.encode() if kind == "ends" else b"")
    elif kind == "stack-flag-v1":   # the STACK flag in a version 1 trace
        c = Chunk(1)
        c.malloc(1, 10, 2, stack=1)
        data = header() + c.encode()
    elif kind == "stack-chunk-v1":  # a stack chunk in a version 1 trace
        data = header() + other_chunk(b"HPMS", 1, 1, stack_record(1, [0x401000]))
    elif kind == "maps-thread":     # a maps chunk of thread 1 (FORMAT.md: thread 0)
        data = header(version=2, depth=8) + other_chunk(b"HPMM", 1, 0, b"00400000-00500000 r-xp 0 0:0 0 /x\n")
    elif kind == "zero-stack":      # stack id 0 behind the STACK flag
        c = Chunk(1)
        c.raw(bytes([0x90, 0x01, 0x0A, 0x00]))
        data = header(version=2, depth=8) + c.encode()
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
