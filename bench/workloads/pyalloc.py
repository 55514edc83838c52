# SPDX-License-Identifier: MIT
"""pyalloc: an allocation-heavy Python program for the benchmark (run with
PYTHONMALLOC=malloc so that every object goes through the malloc under
test).  MIT licence.

    python3 pyalloc.py [SCALE]

Builds and discards trees of small objects, dicts of strings, lists of
tuples, and round-trips JSON; SCALE (1) multiplies the work.  Prints
"op_s=... check=...".
"""
import json
import random
import sys
import time


class Node:
    __slots__ = ("key", "left", "right", "data")

    def __init__(self, key, data):
        self.key = key
        self.left = None
        self.right = None
        self.data = data


def insert(root, node):
    cur = root
    while True:
        if node.key < cur.key:
            if cur.left is None:
                cur.left = node
                return
            cur = cur.left
        else:
            if cur.right is None:
                cur.right = node
                return
            cur = cur.right


def work(scale):
    rnd = random.Random(7)
    check = 0
    f = min(1.0, 4 * scale)  # below 0.25, smaller rounds
    for rep in range(max(1, int(4 * scale))):
        root = Node(0.5, None)
        for i in range(int(60000 * f)):
            insert(root, Node(rnd.random(), [i, str(i)]))
        d = {}
        for i in range(int(100000 * f)):
            d["k%d-%d" % (i, rep)] = ("v" * (i % 40), i)
        check += len(d)
        rows = [(i, float(i), "row%d" % i, [i] * (i % 8)) for i in range(int(100000 * f))]
        rows.sort(key=lambda r: -r[1])
        check += rows[0][0]
        blob = json.dumps([{"id": i, "name": "n%d" % i, "tags": ["a", "b", str(i)]} for i in range(int(30000 * f))])
        back = json.loads(blob)
        check += len(back)
        del root, d, rows, blob, back
    return check


if __name__ == "__main__":
    scale = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
    t0 = time.monotonic()
    c = work(scale)
    print("op_s=%.4f check=%d" % (time.monotonic() - t0, c))
