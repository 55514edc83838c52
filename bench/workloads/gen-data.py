# SPDX-License-Identifier: MIT
"""gen-data: the xz workload's input, MiB of deterministic mixed data
(text-like words, structured records, random bytes, runs).  MIT licence.

    python3 gen-data.py MIB OUT
"""
import random
import sys

mib, out = int(sys.argv[1]), sys.argv[2]
rnd = random.Random(20261130)
words = ["".join(rnd.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rnd.randint(2, 10))) for _ in range(4000)]
parts, size, target = [], 0, mib << 20
while size < target:
    kind = rnd.randrange(4)
    if kind == 0:    # text
        b = (" ".join(rnd.choice(words) for _ in range(2000)) + "\n").encode()
    elif kind == 1:  # records
        b = "".join("%08d,%s,%d.%02d,%s\n" % (rnd.randrange(10**8), rnd.choice(words), rnd.randrange(1000),
                                              rnd.randrange(100), rnd.choice(words)) for _ in range(400)).encode()
    elif kind == 2:  # random bytes
        b = rnd.randbytes(8192)
    else:            # runs
        b = bytes([rnd.randrange(256)]) * rnd.randrange(64, 4096)
    parts.append(b)
    size += len(b)
with open(out, "wb") as f:
    f.write(b"".join(parts)[:target])
