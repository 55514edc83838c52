# SPDX-License-Identifier: MIT
"""pyheap: a python heap of small objects (2 million small lists of an int,
a string and a tuple); prints how much of the process's anonymous memory
is on transparent huge pages (AnonHugePages in /proc/PID/smaps_rollup).
MIT licence."""
import os
# a heap of small objects: 2 million small lists of ints and strings
heap = [[i, str(i), (i, i + 1)] for i in range(2_000_000)]
f = {}
for line in open(f"/proc/{os.getpid()}/smaps_rollup"):
    k, v = line.split(":", 1)
    f[k] = int(v.split()[0]) if v.split() else 0
print(f"anonymous={f['Anonymous']//1024} MiB anonhuge={f['AnonHugePages']//1024} MiB "
      f"share={100*f['AnonHugePages']/f['Anonymous']:.1f}%")
