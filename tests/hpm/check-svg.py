#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Checks an hpm chart the way a reader would look at it.

    check-svg.py FILE.svg [--peak BYTES] [--panels N]

- it is well-formed SVG with a title;
- every axis speaks one unit, and its ticks are round: 0 or a power of ten
  (log axes), or evenly spaced by 1, 2 or 5 times a power of ten;
- with --peak, the largest tick of the vertical axis is at least BYTES and
  the peak's marker lies inside the plot;
- with --panels, it has N panel titles, each saying which way is better
  when it is a compare chart.
Prints one line per problem; exit status 1 if there was one.  MIT licence.
"""
import math
import re
import sys
import xml.etree.ElementTree as ET

NS = "{http://www.w3.org/2000/svg}"
UNITS = {"": 1, "k": 1e3, "M": 1e6, "G": 1e9, "B": 1, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3,
         "ns": 1e-9, "µs": 1e-6, "ms": 1e-3, "s": 1, "%": 1, "x": 1}
TICK = re.compile(r"^(-?[0-9.]+)(?: ?(k|M|G|B|KiB|MiB|GiB|ns|µs|ms|s)|(%|x))?$")


def fail(msg):
    print("check-svg: " + msg)
    return 1


def axes(root):
    """Tick labels grouped by axis: in each panel (a <g>, or the whole
    chart), the 11px texts sharing an x (vertical axes, anchor end) or a y
    (horizontal axes, anchor middle)."""
    groups = {}
    panels = root.findall(NS + "g") or [root]
    for i, g in enumerate(panels):
        for t in g.iter(NS + "text"):
            if t.get("font-size") != "11" or t.get("transform"):
                continue
            if t.get("text-anchor") in ("end", "middle"):
                key = ("y", i, t.get("x")) if t.get("text-anchor") == "end" else ("x", i, t.get("y"))
                groups.setdefault(key, []).append(t)
    return groups


def check_axis(name, texts):
    nums, units, absval = [], set(), []
    for t in texts:
        m = TICK.match(t.text or "")
        if not m:
            return fail(f"{name}: tick '{t.text}' is not a number with a unit")
        unit = m.group(2) or m.group(3) or ""
        if m.group(1) != "0":
            units.add(unit)
        nums.append(float(m.group(1)))
        absval.append(float(m.group(1)) * UNITS[unit])
    ratios = {round(b / a, 6) for a, b in zip(absval, absval[1:]) if a > 0}
    if len(ratios) == 1 and ratios <= {10.0, 32.0, 1000.0, 1024.0} and 0 not in absval:
        return 0  # a log axis: one tick per decade (or per 32x for bytes)
    if len(units) > 1:
        return fail(f"{name}: ticks {[t.text for t in texts]} mix units on a linear axis")
    diffs = [round(b - a, 9) for a, b in zip(nums, nums[1:])]
    if len(set(diffs)) > 1:
        return fail(f"{name}: ticks {nums} are not evenly spaced")
    if diffs:
        step = diffs[0]
        mant = step / 10 ** math.floor(math.log10(step))
        if round(mant, 6) not in (1, 2, 5):
            return fail(f"{name}: step {step} of ticks {nums} is not 1, 2 or 5 times a power of ten")
    return 0


def main():
    path = sys.argv[1]
    peak = panels = None
    args = sys.argv[2:]
    while args:
        if args[0] == "--peak":
            peak = float(args[1])
        elif args[0] == "--panels":
            panels = int(args[1])
        args = args[2:]
    root = ET.parse(path).getroot()
    bad = 0
    if root.find(NS + "title") is None or not root.find(NS + "title").text:
        bad |= fail(f"{path}: no title")
    found = 0
    for (kind, panel, pos), texts in axes(root).items():
        if len(texts) >= 2:
            found += 1
            bad |= check_axis(f"{path}: panel {panel + 1}, {kind} axis at {pos}", texts)
    if not found:
        return fail(f"{path}: no axis with labelled ticks (12px text, 11px ticks)")
    if peak is not None:
        ys = axes(root)
        vertical = max((t for (k, _, _), t in ys.items() if k == "y"), key=len)
        top = vertical[-1].text
        m = TICK.match(top)
        unit = m.group(2) or ""
        if float(m.group(1)) * UNITS[unit] < peak:
            bad |= fail(f"{path}: top tick {top} below the peak, {peak:.0f} bytes: clipped")
        circle = root.find(NS + "circle")
        lines = [float(l.get("y1")) for l in root.iter(NS + "line") if l.get("y1") == l.get("y2")]
        if circle is None or not (min(lines) <= float(circle.get("cy")) <= max(lines)):
            bad |= fail(f"{path}: the peak's marker is missing or outside the plot")
    if panels is not None:
        titles = [t.text for t in root.iter(NS + "text") if t.get("font-size") == "13"]
        if len(titles) != panels:
            bad |= fail(f"{path}: {len(titles)} panel titles, expected {panels}: {titles}")
        for t in titles:
            if "compare" in (root.find(NS + "title").text or "") and "is better" not in t:
                bad |= fail(f"{path}: panel '{t}' does not say which way is better")
    return bad


if __name__ == "__main__":
    sys.exit(main())
