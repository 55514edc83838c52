#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tlbsim: how many TLB misses and page walks a program's heap layout costs
under each allocator, on base pages, counted by a simulation rather than by
hardware counters (this machine has none) -- repeatable, and the same on
every CPU.  MIT licence.

    python3 bench/tlbsim.py [--build build] [--contenders glibc-h0,hpm-h0,je,mi,tc]
                            [--scale 0.25] [--l1 64,4] [--l2 1536,12] [--jobs 2] [--name tlbsim]
    python3 bench/tlbsim.py --contenders hpm-h0,je -- /usr/bin/python3 prog.py    (any command)

Cachegrind simulates two caches whose lines are 4 KiB pages: its D1 is the
first-level data TLB (--l1: entries, ways; default 64 entries, 4-way) and
its LL the second-level TLB (--l2; default 1536 entries, 12-way: an Intel
Xeon's STLB, shared by code and data as cachegrind's LL is).  A D1 miss is
then a first-level DTLB miss and an LLd miss a page walk for data.  A real
TLB also caches the page-table walk itself and a VM's walk costs up to
24 memory reads (nested paging), so the counts rank layouts; the time a
walk costs comes from the machine (hpm doctor's tlbcost).  Huge pages are
out of its reach: contenders with huge pages (h1, h2, thp, large) are
refused.  The default program is bench/workloads/pyalloc.py under
PYTHONMALLOC=malloc with PYTHONHASHSEED=0 (make bench's python3 workload,
at a quarter of its size); for the same builds the counts repeat on any
machine, within about 0.1% from run to run (the environment's size moves
the stack, and jemalloc draws part of its layout at random).  Writes
OUT/NAME.{md,json}, OUT being BUILD/bench/results unless --out names it.  Takes about 2.5 minutes per contender at
scale 0.25 (valgrind runs the program about 50x slower), --jobs of them
at once.
"""
import argparse
import concurrent.futures
import datetime
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True
_spec = importlib.util.spec_from_file_location("run_bench", os.path.join(TOP, "bench", "run-bench.py"))
rb = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rb)

PAGE = 4096
HUGE_MARKS = ("-h1", "-h2", "-thp", "-large", "-pf")

# cachegrind's summary lines, e.g. "==12== D1  misses:   11,729,107  ( 11,458,758 rd   +  270,349 wr)"
SUMMARY = {
    "instructions": r"I\s+refs:\s+([\d,]+)",
    "data_refs": r"D\s+refs:\s+([\d,]+)",
    "l1_misses": r"D1\s+misses:\s+([\d,]+)",
    "walks": r"LLd\s+misses:\s+([\d,]+)",
    "code_walks": r"LLi\s+misses:\s+([\d,]+)",
}


def parse_summary(text):
    """The counts of cachegrind's summary (the last of each line: with --trace-children the last process's),
    as ints; raises ValueError naming what is missing."""
    out = {}
    for key, pat in SUMMARY.items():
        found = re.findall(pat, text)
        if not found:
            raise ValueError("cachegrind's summary has no %s line" % key)
        out[key] = int(found[-1].replace(",", ""))
    return out


def geometry(spec, what):
    """'entries,ways' -> (entries, ways), each a power of two's multiple that cachegrind accepts: the number
    of sets (entries / ways) must be a power of two."""
    try:
        entries, ways = (int(x) for x in spec.split(","))
    except ValueError:
        raise SystemExit("tlbsim: --%s wants ENTRIES,WAYS (e.g. 64,4), not %r" % (what, spec))
    if entries <= 0 or ways <= 0 or entries % ways or (entries // ways) & (entries // ways - 1):
        raise SystemExit("tlbsim: --%s %s: entries / ways must be a power of two" % (what, spec))
    return entries, ways


def cache_arg(entries, ways):
    return "%d,%d,%d" % (entries * PAGE, ways, PAGE)


def simulate(cont, cmd, env, l1, l2):
    """Run cmd under cachegrind with the TLB geometry; the counts, or None with the reason."""
    name, label, lib, cenv = cont
    e = dict(os.environ)
    e.update(env)
    e.update(cenv)
    vg = ["valgrind", "--tool=cachegrind", "--cache-sim=yes", "--cachegrind-out-file=/dev/null",
          "--trace-children=yes", "--I1=32768,8,64", "--D1=" + cache_arg(*l1), "--LL=" + cache_arg(*l2)]
    # env sets LD_PRELOAD inside valgrind, for the program and not for valgrind itself
    pre = ["env", "LD_PRELOAD=" + lib] if lib else []
    p = subprocess.run(vg + pre + cmd, env=e, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        return None, "exit %d: %s" % (p.returncode, p.stderr.strip().splitlines()[-1:] or "")
    try:
        return parse_summary(p.stderr), None
    except ValueError as err:
        return None, str(err)


def per_k(n, refs):
    return 1000.0 * n / refs if refs else 0.0


def table(rows, base):
    """Markdown lines: one row per contender; ratios against `base` (a contender's name) when it ran."""
    b = next((r for r in rows if r["name"] == base), None)
    out = ["| contender | instructions | data refs | L1 DTLB misses | page walks (data) | walks per 1000 refs |"
           " walks vs %s |" % (b["label"] if b else "-"),
           "|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        c = r["counts"]
        ratio = "%.2f" % (c["walks"] / b["counts"]["walks"]) if b and b["counts"]["walks"] else "-"
        out.append("| %s | %s | %s | %s | %s | %.3f | %s |" % (
            r["label"], "{:,}".format(c["instructions"]), "{:,}".format(c["data_refs"]),
            "{:,}".format(c["l1_misses"]), "{:,}".format(c["walks"]), per_k(c["walks"], c["data_refs"]), ratio))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--contenders", default="glibc-h0,hpm-h0,je,mi,tc")
    ap.add_argument("--scale", default="0.25", help="pyalloc.py's scale (the default program)")
    ap.add_argument("--l1", default="64,4", help="first-level DTLB: entries,ways")
    ap.add_argument("--l2", default="1536,12", help="second-level TLB: entries,ways")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                    help="contenders simulated at once (the counts do not depend on it; default: the CPUs)")
    ap.add_argument("--name", default="tlbsim")
    ap.add_argument("--out", default=None, help="directory of the report (BUILD/bench/results)")
    ap.add_argument("cmd", nargs="*", help="a command to run instead of pyalloc.py (after --)")
    a = ap.parse_args()
    a.out = a.out or os.path.join(TOP, a.build, "bench", "results")
    if not shutil.which("valgrind"):
        raise SystemExit("tlbsim: valgrind is not installed (Debian: apt-get install valgrind)")
    l1, l2 = geometry(a.l1, "l1"), geometry(a.l2, "l2")
    known = {c[0]: c for c in rb.contenders(a.build)}
    conts = []
    for n in a.contenders.split(","):
        if n not in known:
            raise SystemExit("tlbsim: no contender %r (known: %s)" % (n, ", ".join(sorted(known))))
        if any(m in n for m in HUGE_MARKS):
            raise SystemExit("tlbsim: %s uses huge pages, which the simulation (4 KiB pages) cannot model" % n)
        lib = known[n][2]
        if lib and not os.path.exists(lib):
            print("tlbsim: %s skipped: %s is not installed" % (n, lib), file=sys.stderr)
            continue
        conts.append(known[n])
    env = {}
    cmd = a.cmd
    if not cmd:
        cmd = [rb.debian_python(), os.path.join(TOP, "bench", "workloads", "pyalloc.py"), a.scale]
        env = {"PYTHONMALLOC": "malloc", "PYTHONHASHSEED": "0"}
    print("tlbsim: %s, %d at a time ..." % (", ".join(c[1] for c in conts), max(1, a.jobs)), file=sys.stderr, flush=True)
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
        done = list(pool.map(lambda c: simulate(c, cmd, env, l1, l2), conts))
    rows = []
    for c, (counts, why) in zip(conts, done):
        if counts is None:
            print("tlbsim: %s failed: %s" % (c[1], why), file=sys.stderr)
            continue
        rows.append({"name": c[0], "label": c[1], "counts": counts})
    if not rows:
        raise SystemExit("tlbsim: no contender ran")
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    shown = " ".join(cmd).replace(TOP + "/", "")
    md = ["# TLB simulation (`bench/tlbsim.py`)", "",
          "Generated by `bench/tlbsim.py`; do not edit by hand.", "",
          "- Date: %s; hpmalloc %s; %s" % (when, rb.sh("git -C %s describe --always --dirty" % TOP) or "?",
                                           rb.sh("valgrind --version") or "valgrind"),
          "- Command: `python3 bench/tlbsim.py %s`" % " ".join(sys.argv[1:]),
          "- Program: `%s`%s" % (shown, " with " + " ".join("%s=%s" % kv for kv in sorted(env.items())) if env else ""),
          "- Geometry: first-level DTLB %d entries, %d-way; second-level TLB %d entries, %d-way; 4 KiB pages "
          "(cachegrind's D1 and LL with 4096-byte lines)" % (l1 + l2),
          "- Counted, not timed: the same builds give the same counts on any machine, within about 0.1% "
          "from run to run.", ""]
    md += table(rows, "glibc-h0") + [""]
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, a.name + ".md"), "w") as f:
        f.write("\n".join(md))
    with open(os.path.join(a.out, a.name + ".json"), "w") as f:
        json.dump({"meta": {"date": when, "command": sys.argv[1:], "program": cmd, "env": env,
                            "l1": l1, "l2": l2}, "rows": rows}, f, indent=1)
    print("\n".join(md))
    print("tlbsim: wrote %s/%s.{md,json}" % (a.out, a.name), file=sys.stderr)


if __name__ == "__main__":
    main()
