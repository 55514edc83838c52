# SPDX-License-Identifier: MIT
# A malloc-heavy Python workload whose output is deterministic: dicts,
# lists, strings, sets, big integers, JSON round trips.  Prints a digest.
# MIT licence.
import hashlib
import json
import sys

h = hashlib.sha256()
n = int(sys.argv[1]) if len(sys.argv) > 1 else 200000

d = {}
for i in range(n):
    d["key%07d" % i] = [i, str(i) * (i % 7), {"x": i * 3, "y": "v" * (i % 13)}]
h.update(str(len(d)).encode())
for k in list(d)[::997]:
    h.update(repr(d[k]).encode())

words = ["w%d" % (i * 7919 % n) for i in range(n)]
words.sort()
h.update("".join(words[::1000]).encode())
s = set(words)
h.update(str(len(s)).encode())
for i in range(0, n, 3):
    del d["key%07d" % i]
h.update(str(len(d)).encode())

big = 1
for i in range(1, 3000):
    big *= i
h.update(str(big % (10**40)).encode())

text = json.dumps([{"id": i, "name": "n" * (i % 50), "tags": list(range(i % 9))} for i in range(20000)])
back = json.loads(text)
h.update(str(sum(len(x["tags"]) for x in back)).encode())
h.update(str(len(text)).encode())

parts = []
for i in range(50000):
    parts.append(("%x" % (i * i)).upper())
joined = "-".join(parts)
h.update(joined[::101].encode())
print(h.hexdigest())
