#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Check the names hpm analyze --stacks --json gives to frames, without
libdw: every frame whose function is a name (not MODULE+0xOFFSET, not an
inlined call) must be a symbol of its module (binutils' nm, of the file,
its dynamic symbols, and of its separate debug file found by build-id
under /usr/lib/debug) whose extent [value, value + size) holds the
frame's offset; a frame named MODULE+0xOFFSET must say the offset it
reports.  Prints one line per bad frame and a summary; exits 1 when a
frame is bad or none could be checked.

usage: check-names.py ANALYZE.json   MIT licence."""
import json
import os
import re
import subprocess
import sys

_tables = {}


def build_id(path):
    try:
        out = subprocess.run(["readelf", "-n", path], capture_output=True, text=True).stdout
    except OSError:
        return None
    m = re.search(r"Build ID: ([0-9a-f]+)", out)
    return m.group(1) if m else None


def symbols(path):
    """name -> [(start, end)] of the defined symbols with a size in PATH,
    its dynamic table and its debug file."""
    if path in _tables:
        return _tables[path]
    files = [path]
    bid = build_id(path)
    if bid:
        dbg = "/usr/lib/debug/.build-id/%s/%s.debug" % (bid[:2], bid[2:])
        if os.path.exists(dbg):
            files.append(dbg)
    table = {}
    for f in files:
        for extra in ([], ["-D"]):
            out = subprocess.run(["nm", "-S", "-C", "--defined-only"] + extra + [f],
                                 capture_output=True, text=True).stdout
            for line in out.splitlines():
                parts = line.split(" ", 3)
                if len(parts) < 4:
                    continue  # no size
                try:
                    start, size = int(parts[0], 16), int(parts[1], 16)
                except ValueError:
                    continue
                name = parts[3].split("@")[0]
                table.setdefault(name, []).append((start, start + size))
    _tables[path] = table
    return table


def frames(d):
    st = d["stacks"]
    for key in ("top_peak", "top_leaked", "top_count"):
        for site in st[key]:
            yield site["site"]
            for f in site["stack"]:
                yield f


def main():
    d = json.load(open(sys.argv[1]))
    seen, checked, labels, bad = set(), 0, 0, 0
    for f in frames(d):
        key = (f["module"], f["offset"], f["function"], f["inlined"])
        if key in seen:
            continue
        seen.add(key)
        off = int(f["offset"], 16)
        if not f["module"]:
            continue  # in no mapping: the raw address
        if f["function"] == "%s+0x%x" % (f["object"], off):
            labels += 1
            continue
        if f["inlined"]:
            continue  # DWARF's inlined call, at the same address as its checked caller
        if f["function"].startswith(f["object"] + "+0x"):
            print("bad: %s: label with offset %s" % (f["function"], f["offset"]))
            bad += 1
            continue
        ext = symbols(f["module"]).get(f["function"], [])
        if not any(lo <= off < hi for lo, hi in ext):
            print("bad: %s at %s+0x%x: symbol extents %s" % (f["function"], f["object"], off,
                  ", ".join("[0x%x,0x%x)" % e for e in ext) or "none"))
            bad += 1
            continue
        checked += 1
    print("%d names checked against nm, %d module+offset labels, %d bad" % (checked, labels, bad))
    sys.exit(1 if bad or checked == 0 else 0)


main()
