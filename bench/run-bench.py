#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""run-bench.py: the allocator comparison behind `make bench`.

    python3 bench/run-bench.py --build build [--quick] [--reps 3]
        [--contenders glibc-h0,hpm-h1,...] [--workloads small,graph-2t,...]
        [--tlb-states warm,cold] [--state warm] [--seed 1] [--seed-check]
        [--out BUILD/bench/results] [--pool-mb N]
    python3 bench/run-bench.py --firsttouch [--mib 1024] [--reps 3]    (make bench-firsttouch)

Every workload runs under every contender, interleaved (in each repetition
every contender runs the workload once, in an order shuffled with the seed),
through bench/workloads/hpb-run (wall and CPU time from wait4, peak RSS,
AnonHugePages and HugetlbPages sampled from /proc).  Each run starts in a
stated memory state (bench/memstate.py): the TLB group warm and cold, each
state its own tables, the other groups warm.  --seed-check runs the TLB
group again with the next seed and says whether the rankings agree (a
pair the passes order differently disagrees only when a pass separates it
beyond its runs' spread: a bootstrap interval of their ratio).
Writes OUT/latest.md (also printed), OUT/latest.json and OUT/latest.svg;
OUT is BUILD/bench/results unless --out names it (a result worth keeping
is copied into bench/results by hand).  --quick is the short look: smaller
sizes, one repetition, the TLB group warm only, no seed check and no 7zz.
As root it raises the hugetlb pool for the hugetlb=2 and large-page
contenders and restores it afterwards.  Measures; never asserts.
Python 3 standard library only.  MIT licence.
"""
import argparse
import datetime
import json
import math
import os
import random
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TOP, "bench"))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import memstate  # noqa: E402  (bench/memstate.py: the warm and cold states)
from memstate import readf  # noqa: E402
LIBDIR = "/usr/lib/" + subprocess.run(["gcc", "-dumpmachine"], capture_output=True, text=True).stdout.strip() \
    if shutil.which("gcc") else "/usr/lib/x86_64-linux-gnu"
HP_SYS = "/sys/kernel/mm/hugepages"


OPTIONAL_CONTENDERS = ("hpm-h1-pf",)  # run only when --contenders names them


def contenders(build):
    lib = os.path.join(TOP, build, "lib", "libhpmalloc.so")
    je, mi, tc = (os.path.join(LIBDIR, n) for n in
                  ("libjemalloc.so.2", "libmimalloc.so.2", "libtcmalloc_minimal.so.4"))
    t = "glibc.malloc.hugetlb="
    return [  # name, label, preload (None: glibc), environment
        ("glibc-h0", "glibc h0", None, {"GLIBC_TUNABLES": t + "0"}),
        ("glibc-h1", "glibc h1", None, {"GLIBC_TUNABLES": t + "1"}),
        ("glibc-h2", "glibc h2", None, {"GLIBC_TUNABLES": t + "2"}),
        ("hpm-h0", "hpmalloc h0", lib, {"GLIBC_TUNABLES": t + "0"}),
        ("hpm-h1", "hpmalloc h1", lib, {"GLIBC_TUNABLES": t + "1"}),
        ("hpm-h2", "hpmalloc h2", lib, {"GLIBC_TUNABLES": t + "2"}),
        # only when named (--contenders): hpmalloc.prefault, off by default (malloc/prefault.c)
        ("hpm-h1-pf", "hpmalloc h1 prefault=4", lib, {"GLIBC_TUNABLES": t + "1:hpmalloc.prefault=4"}),
        ("je", "jemalloc", je, {}),
        ("je-thp", "jemalloc thp", je, {"MALLOC_CONF": "thp:always,metadata_thp:always"}),
        ("mi", "mimalloc", mi, {}),
        ("mi-large", "mimalloc large", mi, {"MIMALLOC_LARGE_OS_PAGES": "1"}),
        ("tc", "tcmalloc", tc, {}),
    ]


def debian_python():
    """The python3 the header names (Debian's package): /usr/bin/python3.  The first python3 on PATH may be
    another build behind a shell script (pyenv's shim), whose start-up would be timed too."""
    return "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else (shutil.which("python3") or "python3")


def workloads(build, quick, tmp, md=25):
    """name, group, command, options.  Sizes: full, or (quick) about 5-10x less."""
    b = os.path.join(TOP, build, "bench")
    q = quick
    w = [  # small objects: one to two seconds each under glibc (full)
        ("mixed", "small", [b + "/malloc-small", "3000000" if q else "40000000"], {}),
        ("larson", "small", [b + "/small", "larson", "0.4" if q else "5"], {}),
        ("xmalloc", "small", [b + "/small", "xmalloc", "0.1" if q else "1.5"], {}),
        ("scratch", "small", [b + "/small", "scratch", "0.3" if q else "4"], {}),
        ("thrash", "small", [b + "/small", "thrash", "0.3" if q else "5"], {}),
        ("glibc-simple", "small", [b + "/small", "simple", "5" if q else "75"], {}),
        ("glibc-thread", "small", [b + "/small", "thread", "0.1" if q else "1.5"], {}),
        ("realloc", "small", [b + "/small", "realloc", "0.08" if q else "1"], {}),
        # TLB-heavy; footprint_mb: the known size (112-byte chunks and a pointer per node; the blocks), for the
        # primer of the first warm run, before a run has shown its peak
        ("graph-1t", "tlb", [b + "/tlb", "graph", "1000000" if q else "10000000", "1", "2000000" if q else "20000000"],
         {"footprint_mb": 120 if q else 1200}),
        ("graph-2t", "tlb", [b + "/tlb", "graph", "1000000" if q else "10000000", "2", "2000000" if q else "20000000"],
         {"footprint_mb": 120 if q else 1200}),
        ("blocks-1m", "tlb", [b + "/tlb", "blocks", "200" if q else "2000", "1024", "500000" if q else "4000000"],
         {"footprint_mb": 200 if q else 2000}),
        ("blocks-2m", "tlb", [b + "/tlb", "blocks", "100" if q else "600", "2048", "500000" if q else "4000000", "mixed"],
         {"footprint_mb": 225 if q else 1350}),
        # real programs
        ("xz", "real", ["xz", "-9", "-T1", "-c", os.path.join(tmp, "xz-input")],
         {"stdout": "/dev/null", "prep": "xz", "mib": 2 if q else 16}),
        ("python3", "real", [debian_python(), os.path.join(TOP, "bench/workloads/pyalloc.py"), "0.1" if q else "1"],
         {"env": {"PYTHONMALLOC": "malloc"}}),
        ("sqlite3", "real", ["sqlite3", ":memory:"],
         {"stdin": os.path.join(tmp, "sqlite.sql"), "prep": "sqlite", "rows": 40000 if q else 400000}),
        # server-shaped: redis-server (it links jemalloc: the glibc contenders preload a shim that
        # sends the malloc API to glibc's malloc), driven over loopback by redis-benchmark
        ("redis", "real", ["sh", os.path.join(TOP, "bench/workloads/redis-run.sh"), os.path.join(tmp, "redis-server"),
                           "@PORT@", "20000" if q else "200000"],
         {"prep": "redis", "needs": ["redis-benchmark", "redis-cli"],
          "glibc_preload": os.path.join(b, "libglibc-malloc.so")}),
    ]
    if not q:  # 7-Zip's benchmark runs for a fixed time (~10 s per pass), too long for QUICK
        w.append(("7zz", "real", ["7zz", "b", "-md%d" % md, "-mmt1"], {"metric": "mips"}))
    return w


def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True).stdout.strip()
    except OSError:
        return ""


def machine():
    cpu = re.search(r"model name\s*:\s*(.*)", readf("/proc/cpuinfo"))
    mem = re.search(r"MemTotal:\s*(\d+)", readf("/proc/meminfo"))
    virt = "virtual machine" if "hypervisor" in readf("/proc/cpuinfo") else "bare metal"
    return {
        "cpu": (cpu.group(1) if cpu else "?") + " (" + virt + ")",
        "cores": os.cpu_count(),
        "memory_gib": round(int(mem.group(1)) / 1048576, 1) if mem else None,
        "kernel": " ".join(os.uname()[2:3] + os.uname()[4:5]),
        "thp": readf("/sys/kernel/mm/transparent_hugepage/enabled"),
        "thp_defrag": readf("/sys/kernel/mm/transparent_hugepage/defrag"),
        "glibc": sh("ldd --version | head -1"),
        "versions": sh("dpkg-query -W -f='${Package} ${Version}, ' libjemalloc2 libmimalloc2.0 "
                       "libtcmalloc-minimal4 7zip xz-utils python3 sqlite3 redis-tools 2>/dev/null").rstrip(", "),
        "hpmalloc": sh("git -C %s log -1 --format='%%h %%cd' --date=short" % TOP),
        "loadavg_start": readf("/proc/loadavg"),
    }


class Pool:
    """The hugetlb pool for mode 2 and mimalloc's large pages: raised as root, restored on exit."""

    def __init__(self, mb):
        self.kb = int(re.search(r"Hugepagesize:\s*(\d+)", readf("/proc/meminfo")).group(1))
        self.path = "/proc/sys/vm/nr_hugepages"
        self.orig = int(readf(self.path, "0"))
        self.want = mb * 1024 // self.kb
        self.added = 0
        self.note = ""

    def raise_(self):
        free = int(readf("%s/hugepages-%dkB/free_hugepages" % (HP_SYS, self.kb), "0"))
        if free >= self.want:
            self.note = "hugetlb pool: %d free %d kB pages already" % (free, self.kb)
            return
        if os.geteuid() != 0:
            self.note = ("hugetlb pool: %d free pages, %d wanted; not root, so hugetlb=2 falls back to base pages "
                         "(as root: echo %d > %s, and restore it afterwards)" % (free, self.want, self.orig + self.want, self.path))
            return
        with open(self.path, "w") as f:
            f.write(str(self.orig + self.want - free))
        got = int(readf(self.path, "0"))
        self.added = max(0, got - self.orig)
        self.note = "hugetlb pool: nr_hugepages raised from %d to %d (%d wanted) for the run, restored afterwards" % (
            self.orig, got, self.orig + self.want - free)

    def restore(self):
        # Give back what this run added, and only that: another user of the
        # machine may have changed the pool meanwhile.
        if os.geteuid() == 0 and self.added:
            with open(self.path, "w") as f:
                f.write(str(max(0, int(readf(self.path, "0")) - self.added)))
            self.added = 0


def redis_server():
    """Debian's redis-server is a link to redis-check-rdb (in redis-tools); redis picks its mode by name."""
    for exe in ("redis-server", "redis-check-rdb"):
        path = shutil.which(exe) or shutil.which(exe, path="/usr/bin")
        if path:
            return os.path.realpath(path)
    return None


def free_port():
    with socket.socket() as so:
        so.bind(("127.0.0.1", 0))
        return so.getsockname()[1]


def prep(tmp, opts):
    kind = opts.get("prep")
    if kind == "xz":
        subprocess.run([sys.executable, os.path.join(TOP, "bench/workloads/gen-data.py"), str(opts["mib"]),
                        os.path.join(tmp, "xz-input")], check=True)
    elif kind == "sqlite":
        sql = readf(os.path.join(TOP, "bench/workloads/sqlite.sql")).replace("@N@", str(opts["rows"]))
        with open(os.path.join(tmp, "sqlite.sql"), "w") as f:
            f.write(sql + "\n")
    elif kind == "redis":
        os.symlink(redis_server(), os.path.join(tmp, "redis-server"))


def run_one(launcher, cont, wl, tmp, timeout):
    name, label, preload, env = cont
    wname, group, cmd, opts = wl
    res = os.path.join(tmp, "result")
    if os.path.exists(res):
        os.unlink(res)
    args = [launcher, "-r", res]
    e = dict(env)
    e.update(opts.get("env", {}))
    if not preload and opts.get("glibc_preload"):
        preload = opts["glibc_preload"]
    if preload:
        e["LD_PRELOAD"] = preload
    for k, v in sorted(e.items()):
        args += ["-e", "%s=%s" % (k, v)]
    if "stdin" in opts:
        args += ["-i", opts["stdin"]]
    if "stdout" in opts:
        args += ["-O", opts["stdout"]]
    clean = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "GLIBC_TUNABLES", "MALLOC_CONF",
                                                              "MIMALLOC_LARGE_OS_PAGES", "PYTHONMALLOC")}
    if "@PORT@" in cmd:  # a port free now, for each run
        cmd = [str(free_port()) if x == "@PORT@" else x for x in cmd]
    try:
        p = subprocess.run(args + ["--"] + cmd, capture_output=True, text=True, timeout=timeout, env=clean)
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": "timeout after %d s" % timeout}
    r = {"ok": p.returncode == 0}
    line = readf(res)
    for k, v in re.findall(r"(\w+)=([-\d.]+)", line):
        r[k] = float(v)
    for k, v in re.findall(r"(\w+)=([-\d.]+)", p.stdout):
        if k in ("op_s", "build_s", "walk_s", "free_s", "ns_per_step", "total_s"):
            r["prog_" + k] = float(v)
    if not r["ok"]:
        r["error"] = (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1][:200]
    if "wall_s" in r:
        rss = max(r.get("maxrss_kb", 0), r.get("rss_kb", 0))
        ht = r.get("hugetlb_kb", 0)
        r["cpu_s"] = r["user_s"] + r["sys_s"]
        r["rss_mb"] = rss / 1024
        r["hugetlb_mb"] = ht / 1024
        r["mem_mb"] = (rss + ht) / 1024
        tot = r.get("rss_kb", 0) + ht
        r["huge_pct"] = 100.0 * (r.get("anonhuge_kb", 0) + ht) / tot if tot else 0.0
    if opts.get("metric") == "mips":
        m = re.search(r"^Tot:\s+(\d+)\s+(\d+)\s+(\d+)", p.stdout, re.M)
        if m:  # Tot: usage %, rating per usage (R/U) MIPS, rating MIPS
            r["mips"] = float(m.group(3))
            r["mips_ru"] = float(m.group(2))
        else:
            r["ok"] = False
            r["error"] = "no Tot: line in 7zz's output"
    return r


def med(xs):
    return statistics.median(xs) if xs else None


def geomean(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def fmt(x, d=2):
    if x is None:
        return "–"
    if abs(x) >= 100:
        return "%.0f" % x
    return ("%%.%df" % d) % x


def summarize(results, conts, wls):
    """Per workload and contender: medians, spreads, speed-up vs glibc-h0."""
    s = {}
    for wname, group, cmd, opts in wls:
        metric = opts.get("metric", "wall")
        s[wname] = {}
        for c in conts:
            runs = [r for r in results.get(wname, {}).get(c[0], []) if r.get("ok")]
            key = "mips" if metric == "mips" else "wall_s"
            vals = [r[key] for r in runs if key in r]
            d = {"n": len(vals), "failed": len(results.get(wname, {}).get(c[0], [])) - len(runs)}
            if vals:
                if metric == "mips":
                    d["mips_ru"] = med([r["mips_ru"] for r in runs])
                d.update(value=med(vals), min=min(vals), max=max(vals),
                         cpu_s=med([r["cpu_s"] for r in runs]), mem_mb=med([r["mem_mb"] for r in runs]),
                         rss_mb=med([r["rss_mb"] for r in runs]), hugetlb_mb=med([r["hugetlb_mb"] for r in runs]),
                         huge_pct=med([r["huge_pct"] for r in runs]))
                for k in ("prog_walk_s", "prog_build_s", "prog_op_s"):
                    if any(k in r for r in runs):
                        d[k] = med([r[k] for r in runs if k in r])
            s[wname][c[0]] = d
        base = s[wname].get("glibc-h0", {})
        for c in conts:
            d = s[wname][c[0]]
            if base.get("value") and d.get("value"):
                d["speedup"] = d["value"] / base["value"] if metric == "mips" else base["value"] / d["value"]
                # by CPU time (user + sys): less disturbed by other load on a shared machine
                # (7zz: its rating per CPU usage, R/U)
                d["cpu_speedup"] = (d["mips_ru"] / base["mips_ru"] if metric == "mips" else
                                    base["cpu_s"] / d["cpu_s"] if d["cpu_s"] else None)
                if metric != "mips" and c[0] != "glibc-h0":
                    cell_intervals(results, wname, c[0], d)
    return s


def cell_intervals(results, wname, cont, d):
    """The 95% bootstrap interval of cont's speed-up over glibc h0 on one workload, by wall and by CPU time
    (d["speedup_ci"], d["cpu_speedup_ci"]: [low, high]); seeded by the cell, so the same runs give the same
    report."""
    for key in ("speedup", "cpu_speedup"):
        iv = pair_interval(results, cont, "glibc-h0", [(wname,)], key, random.Random("%s/%s/%s" % (wname, cont, key)))
        if iv:
            d[key + "_ci"] = [iv[1], iv[2]]


def verdict(ok):
    return "**met**" if ok else "**missed**"


def small_objects_goals(s, by, names, key, out):
    """The small-object bounds, each hpmalloc mode against glibc h0: the small-object geometric mean >= 1.60x with
    no workload below 1.00x; larson and xmalloc >= 2.00x; python3 at least as fast as jemalloc; peak RSS +
    hugetlb within 10% or 2 MB (the larger) of glibc's in the same hugetlb mode on every small workload."""
    def sp(w, c):
        return s.get(w, {}).get(c, {}).get(key)

    if "glibc-h0" not in names:
        return
    for m in ("hpm-h0", "hpm-h1"):
        if m not in names:
            continue
        if sp("python3", m) and sp("python3", "je"):
            x = sp("python3", m) / sp("python3", "je")
            out.append("Speed bounds, python3, %s at least as fast as jemalloc: %s (%sx jemalloc's speed)" % (
                m, verdict(x >= 1), fmt(x)))
        g = geomean([sp(w, m) for w in by["small"]])
        if g is None:
            continue
        below = ["%s %sx" % (w, fmt(sp(w, m))) for w in by["small"] if sp(w, m) and sp(w, m) < 1]
        out.append("Speed bounds, small objects, %s vs glibc h0: geometric mean %sx (goal >= 1.60x), none below 1.00x%s: "
                   "%s" % (m, fmt(g), " (below: %s)" % ", ".join(below) if below else "", verdict(g >= 1.6 and not below)))
        two = [(w, sp(w, m)) for w in ("larson", "xmalloc") if sp(w, m)]
        if two:
            out.append("  %s >= 2.00x: %s (%s)" % (" and ".join(w for w, _ in two), verdict(all(x >= 2 for _, x in two)),
                                                 ", ".join("%s %sx" % (w, fmt(x)) for w, x in two)))
        # memory against glibc in the same huge-page mode (huge pages round a heap up to 2 MiB)
        g = "glibc-h" + m[-1]
        if key != "speedup" or g not in names:
            continue
        over = []
        for w in by["small"]:
            a, b = s.get(w, {}).get(m, {}).get("mem_mb"), s.get(w, {}).get(g, {}).get("mem_mb")
            if a and b and a > max(b * 1.10, b + 2):
                over.append("%s %.0f vs %.0f MB" % (w, a, b))
        out.append("  peak RSS + hugetlb within 10%% or 2 MB of glibc h%s's on every small workload: %s%s" % (
            m[-1], verdict(not over), "; over on " + ", ".join(over) if over else ""))


# the TLB workloads whose build phase (timed in the program) is held within 10% of jemalloc thp's
BUILD_GOAL_WORKLOADS = ("graph-1t", "graph-2t", "blocks-1m")


def goals(s, wls, conts, key="speedup"):
    names = {c[0] for c in conts}
    by = {g: [w[0] for w in wls if w[1] == g] for g in ("small", "tlb", "real")}
    out = []

    def sp(w, c):
        return s.get(w, {}).get(c, {}).get(key)

    def rel(w, a, b):  # how much faster a is than b (>1: faster)
        x, y = sp(w, a), sp(w, b)
        return x / y if x and y else None

    if by["small"] and "glibc-h0" in names:
        for m in ("hpm-h0", "hpm-h1", "hpm-h2"):
            if m not in names:
                continue
            g = geomean([sp(w, m) for w in by["small"]])
            worst = min(((sp(w, m), w) for w in by["small"] if sp(w, m)), default=(None, None))
            if g is None:
                continue
            ok = g >= 1 and worst[0] >= 1 / 1.10
            iv = s[worst[1]][m].get(key + "_ci")
            out.append("Small objects, %s vs glibc h0: geometric mean %sx, slowest %s %sx%s (goal: >= 1.00x, none "
                       "more than 10%% slower, i.e. >= 0.91x): %s" % (
                           m, fmt(g), worst[1], fmt(worst[0]),
                           " (95%% interval %s–%s)" % (fmt(iv[0]), fmt(iv[1])) if iv else "", verdict(ok)))
            if "mi" in names:
                gm = geomean([rel(w, m, "mi") for w in by["small"]])
                out.append("  gap to mimalloc: %s is %sx mimalloc's speed (geometric mean)" % (m, fmt(gm)))
    small_objects_goals(s, by, names, key, out)
    big = by["tlb"] + by["real"]
    def faster_everywhere(m, label, rivals):
        # m against each rival over the TLB-heavy and real workloads
        for rival in rivals:
            if rival in names:
                r = [(rel(w, m, rival), w) for w in big if rel(w, m, rival)]
                if r:
                    lose = ["%s %sx" % (w, fmt(x)) for x, w in r if x < 1]
                    out.append("TLB/real, hpmalloc %s faster than %s on every workload: %s (geomean %sx%s)" % (
                        label, rival, verdict(not lose), fmt(geomean([x for x, _ in r])),
                        "; slower on " + ", ".join(lose) if lose else ""))

    if "hpm-h1" in names:
        faster_everywhere("hpm-h1", "h1", ("glibc-h1", "je-thp"))
        if "je-thp" in names and key == "speedup":
            # the build phase (timed in the program) within 10% of jemalloc thp's on the
            # workloads BUILD_GOAL_WORKLOADS names; the others are shown, not judged
            r = [(s[w]["hpm-h1"]["prog_build_s"] / s[w]["je-thp"]["prog_build_s"], w) for w in by["tlb"]
                 if s[w].get("hpm-h1", {}).get("prog_build_s") and s[w].get("je-thp", {}).get("prog_build_s")]
            judged = [(x, w) for x, w in r if w in BUILD_GOAL_WORKLOADS]
            shown = [(x, w) for x, w in r if w not in BUILD_GOAL_WORKLOADS]
            if judged:
                out.append("Build phase, hpmalloc h1 within 10%% of jemalloc thp on %s: %s (%s%s)" % (
                    ", ".join(w for _, w in judged), verdict(all(x <= 1.10 for x, _ in judged)),
                    ", ".join("%s %sx its time" % (w, fmt(x)) for x, w in judged),
                    "; not in the goal: " + ", ".join("%s %sx" % (w, fmt(x)) for x, w in shown) if shown else ""))
        x = rel("graph-2t", "hpm-h1", "glibc-h1")
        if x:
            out.append("Multi-threaded object graph, hpmalloc h1 vs glibc h1: %sx (goal >= 1.25x): %s" % (
                fmt(x), verdict(x >= 1.25)))
        a_, b_ = (s.get("graph-2t", {}).get(c, {}).get("prog_walk_s") for c in ("hpm-h1", "glibc-h1"))
        if a_ and b_ and key == "speedup":
            out.append("  the walk alone (the TLB-bound phase, timed in the program): %sx" % fmt(b_ / a_))
    if "hpm-h2" in names:
        faster_everywhere("hpm-h2", "h2", ("mi-large", "glibc-h2"))
    for w in ("7zz", "xz"):
        for m in ("hpm-h1", "hpm-h2"):
            x = rel(w, m, "hpm-h0")
            if x:
                out.append("%s: %s over hpmalloc h0: %sx (over glibc h0: %sx)" % (w, m, fmt(x, 3), fmt(sp(w, m), 3)))
    for m, g in (("hpm-h0", "glibc-h0"), ("hpm-h1", "glibc-h1"), ("hpm-h2", "glibc-h2")):
        if m in names and g in names and key == "speedup":
            over = []
            for w in s:
                a, b = s[w].get(m, {}).get("mem_mb"), s[w].get(g, {}).get("mem_mb")
                if a and b and a > b * 1.10:
                    over.append("%s %.0f vs %.0f MB (%+.0f%%)" % (w, a, b, 100 * (a / b - 1)))
            out.append("Peak RSS + hugetlb of %s within 10%% of %s on every workload: %s%s" % (
                m, g, verdict(not over), "; over on " + ", ".join(over) if over else ""))
    return out


STATE_TITLES = {"warm": "Warm state", "cold": "Cold state", "asis": "As the previous run left memory",
                "unstated": "Memory state not controlled (runs recorded before the memory states)"}
GROUPS = (("small", "small objects"), ("tlb", "TLB-heavy"), ("real", "real programs"))


def states_in(results):
    """The memory states the runs were made in: warm, cold, asis; unstated for runs from before there were states."""
    seen = {r.get("state", "unstated") for d in results.values() for runs in d.values() for r in runs}
    return [x for x in ("warm", "cold", "asis", "unstated") if x in seen]


def in_state(results, state):
    return {w: {c: [r for r in runs if r.get("state", "unstated") == state] for c, runs in d.items()}
            for w, d in results.items()}


def sections(results, conts, wls):
    """One section per memory state: the workloads run in it, their summary and the goals evaluated on it."""
    out = []
    for st in states_in(results):
        rs = in_state(results, st)
        ws = [w for w in wls if any(rs.get(w[0], {}).values())]
        s = summarize(rs, conts, ws)
        out.append({"state": st, "wls": ws, "s": s, "runs": rs, "goals": goals(s, ws, conts),
                    "goals_cpu": goals(s, ws, conts, "cpu_speedup")})
    return out


def state_line(meta, wls):
    st = meta.get("states")
    if not st:
        return "- Memory state: not controlled (these runs predate the warm and cold states: bench/README.md)"
    groups = {w[1] for w in wls}
    others = [n for g, n in (("small", "small-object"), ("real", "real-program")) if g in groups]
    ran = (["the TLB-heavy group %s (a section each below)" % " and ".join(st["tlb"])] if "tlb" in groups else []) + (
        ["the %s group%s %s" % (" and ".join(others), "s" if len(others) > 1 else "", st["other"])] if others else [])
    return ("- Memory state (bench/README.md, \"The memory state\"): %s. Warm: %s. Cold: %s. Free-page reporting: "
            "%s." % (", ".join(ran), meta["warm_rule"], meta["cold_rule"], memstate.describe(meta["reporting"])))


def state_stats(sec):
    """What it took to put memory in the section's state, from its runs."""
    runs = [r for d in sec["runs"].values() for rs in d.values() for r in rs]
    if sec["state"] == "cold":
        waits = [r["settle_s"] for r in runs if "settle_s" in r]
        why = [r.get("settled_by") for r in runs if "settle_s" in r]
        if waits:
            return "Cold waits before the %d runs: median %.1f s, %.1f–%.1f s; ended by %s." % (
                len(waits), med(waits), min(waits), max(waits),
                ", ".join("%s ×%d" % (k, why.count(k)) for k in sorted(set(why))))
    if sec["state"] == "warm":
        ps = [r["primer_s"] for r in runs if "primer_s" in r]
        during = [r["passes"] for r in runs if "passes" in r]
        if ps:
            return "Primers before the %d runs: median %.2f s; a reporting pass came during %d of the runs." % (
                len(ps), med(ps), sum(1 for x in during if x))
    return ""


def markdown(meta, secs, conts, wls, hpm_note, seed_lines=None):
    L = []
    m = meta["machine"]
    L.append("# Allocator comparison (`make bench%s`)" % (" QUICK=1" if meta["quick"] else ""))
    L.append("")
    L.append("Generated by `bench/run-bench.py`; do not edit by hand.")
    L.append("")
    L.append("- Machine: %s; %s cores; %s GiB; Linux %s; THP enabled %s, defrag %s" % (
        m["cpu"], m["cores"], m["memory_gib"], m["kernel"], m["thp"], m["thp_defrag"]))
    L.append("- %s; %s; hpmalloc %s" % (m["glibc"], m["versions"], m["hpmalloc"]))
    L.append("- %s" % meta["pool"])
    L.append("- Date: %s UTC; the run took %.0f s; load average at start %s, at end %s" % (
        meta["date"], meta["duration_s"], m["loadavg_start"], meta["loadavg_end"]))
    L.append("- Command: `%s`" % meta["command"])
    L.append("- Each cell: the median of %d interleaved runs (every contender runs a workload once per repetition, "
             "%s), with the min–max range. Speed-ups are against glibc hugetlb=0 in the same run "
             "(above 1: faster). Memory: peak RSS + HugetlbPages (hugetlb memory is not in RSS), sampled from /proc." % (
                 meta["reps"], meta.get("order", "the order rotated between repetitions")))
    L.append(state_line(meta, wls))
    if seed_lines:
        L.append("- " + seed_lines[0])
    L.append("")
    for sec in secs:
        L.append("## %s: %s" % (STATE_TITLES[sec["state"]], ", ".join(
            title for g, title in GROUPS if any(w[1] == g for w in sec["wls"]))))
        L.append("")
        stats = state_stats(sec)
        if stats:
            L += [stats, ""]
        L += state_tables(sec, conts)
    if seed_lines:
        L += seed_lines[1:]
    L.append("## Workloads")
    L.append("")
    for w in wls:
        cmd = " ".join(os.path.relpath(x, TOP) if x.startswith(TOP) else
                       "SERVER" if x.endswith("/redis-server") else "PORT" if x == "@PORT@" else x for x in w[2])
        extra = w[3].get("stdin") and " < sqlite.sql (%d rows)" % w[3]["rows"] or ""
        extra += " (%d MiB of bench/workloads/gen-data.py)" % w[3]["mib"] if w[3].get("prep") == "xz" else ""
        extra += " PYTHONMALLOC=malloc" if "env" in w[3] else ""
        extra += (" (SERVER: Debian's redis-server; PORT: a free port; the glibc contenders preload %s)" %
                  os.path.relpath(w[3]["glibc_preload"], TOP)) if w[3].get("glibc_preload") else ""
        L.append("- %s (%s): `%s`%s" % (w[0], w[1], cmd, extra))
    if hpm_note:
        L.append("")
        L.append("## Trace replays (`hpm compare`)")
        L.append("")
        L += hpm_note
    failures = [(w, sec["state"], c, d["failed"]) for sec in secs for w in sec["s"]
                for c, d in sec["s"][w].items() if d.get("failed")]
    if failures:
        L.append("")
        L.append("Failed runs: " + ", ".join("%s (%s)/%s ×%d" % f for f in failures))
    return "\n".join(L) + "\n"


def state_tables(sec, conts):
    """The tables of one memory state: time, speed-ups, the TLB-bound phase, CPU time, memory, goals."""
    s, wls, L = sec["s"], sec["wls"], []
    hdr = "| workload | " + " | ".join(c[1] for c in conts) + " |"
    sep = "|---|" + "---:|" * len(conts)

    def table(cell, geomean_key=None, rows_of=wls):
        # one row per workload, cell(d) of each contender's summary d; with
        # geomean_key, the geometric mean of that key over each group
        rows = [hdr, sep]
        for w in rows_of:
            rows.append("| %s | %s |" % (w[0], " | ".join(cell(s[w[0]][c[0]], w[0]) for c in conts)))
        for g, title in (("small", "geomean small"), ("tlb", "geomean TLB"), ("real", "geomean real")):
            ws = [w[0] for w in rows_of if w[1] == g]
            if geomean_key and ws:
                rows.append("| **%s** | %s |" % (title, " | ".join(
                    "**%s**" % fmt(geomean([s[w][c[0]].get(geomean_key) for w in ws])) for c in conts)))
        return rows

    def value(key):
        return lambda d, w: fmt(d.get(key))

    def ratio_cell(key):
        # the speed-up and, where runs allow, its 95% bootstrap interval
        def cell(d, w):
            iv = d.get(key + "_ci")
            return "%s (%s–%s)" % (fmt(d.get(key)), fmt(iv[0]), fmt(iv[1])) if iv and d.get(key) else fmt(d.get(key))
        return cell

    interval_note = ("In parentheses: the 95%% bootstrap interval of the speed-up (each contender's runs of the "
                     "workload resampled %d times); an interval that holds 1.00 does not tell the contender from "
                     "glibc h0 beyond the runs' spread." % BOOT_N)

    def time_cell(d, w):
        if not d.get("value"):
            return "failed" if d.get("failed") else "–"
        return "%s (%s–%s)" % (fmt(d["value"]), fmt(d["min"]), fmt(d["max"]))

    def phase_cell(key):
        # a phase timed inside the program (prog_walk_s, prog_build_s): its median and speed-up over glibc h0
        def cell(d, w):
            b = s[w].get("glibc-h0", {}).get(key)
            return "%s (%sx)" % (fmt(d[key], 3), fmt(b / d[key])) if b and d.get(key) else "–"
        return cell

    def mem_cell(d, w):
        if not d.get("mem_mb"):
            return "–"
        ht = " +%.0f h" % d["hugetlb_mb"] if d["hugetlb_mb"] >= 1 else ""
        return "%.0f%s (%.0f%%)" % (d["rss_mb"], ht, d["huge_pct"])

    L.append("### Time (s; 7zz: MIPS, higher is better)")
    L.append("")
    L += table(time_cell)
    L.append("")
    L.append("### Speed-up against glibc hugetlb=0 (same run)")
    L.append("")
    L.append(interval_note)
    L.append("")
    L += table(ratio_cell("speedup"), "speedup")
    L.append("")
    tlb = [w for w in wls if any(s[w[0]][c[0]].get("prog_walk_s") for c in conts)]
    if tlb:
        L.append("### The TLB-bound phase alone (random walk / reads, s; median) and its speed-up")
        L.append("")
        L.append("The walk of `graph-*` and the reads of `blocks-*`, timed inside the program: no page faults, "
                 "no allocator code, only translation and cache misses.")
        L.append("")
        L += table(phase_cell("prog_walk_s"), rows_of=tlb)
        L.append("")
        L.append("### The build phase alone (s; median) and its speed-up")
        L.append("")
        L.append("The allocation and first touch of the heap that the walk or the reads then use, timed inside the "
                 "program: the allocator's code, its page faults and the kernel's zeroing of the pages.")
        L.append("")
        L += table(phase_cell("prog_build_s"), rows_of=tlb)
        L.append("")
    L.append("### CPU time (user + sys, s; median) and speed-up by CPU time")
    L.append("")
    L.append("CPU time is less disturbed than wall time by other load on a shared machine (it still includes "
             "cache and TLB misses, and the kernel's page faults and zeroing).")
    L.append("")
    L += table(value("cpu_s"))
    L.append("")
    L.append(interval_note)
    L.append("")
    L += table(ratio_cell("cpu_speedup"), "cpu_speedup")
    L.append("")
    L.append("### Peak memory: RSS + hugetlb MB (huge-page coverage at the peak)")
    L.append("")
    L.append("Coverage = (AnonHugePages + HugetlbPages) / (Rss + HugetlbPages) at the sample with the largest "
             "Rss + HugetlbPages; `+N h` is the hugetlb part.")
    L.append("")
    L += table(mem_cell)
    L.append("")
    L.append("### Goals, as measured in this state")
    L.append("")
    L.append("By wall time:")
    L.append("")
    L += ["- " + g if not g.startswith("  ") else "  - " + g.strip() for g in sec["goals"]]
    L.append("")
    L.append("The same by CPU time:")
    L.append("")
    L += ["- " + g if not g.startswith("  ") else "  - " + g.strip() for g in sec["goals_cpu"]]
    L.append("")
    return L


def ranking(s, conts, wls, key="speedup"):
    """Contenders by the geometric mean of key over wls, best first: [(name, value)]."""
    g = [(c[0], geomean([s[w[0]][c[0]].get(key) for w in wls])) for c in conts]
    return sorted([x for x in g if x[1]], key=lambda x: -x[1])


def discordant(r1, r2, tol):
    """Pairs that two rankings order differently, leaving out pairs within tol of each other in either
    (ties at this precision); and Kendall's tau over all pairs."""
    a, b = dict(r1), dict(r2)
    names = [n for n, _ in r1 if n in b]
    flips, conc, disc = [], 0, 0
    for i, x in enumerate(names):
        for y in names[i + 1:]:
            d1, d2 = a[x] / a[y], b[x] / b[y]
            if (d1 > 1) == (d2 > 1):
                conc += 1
                continue
            disc += 1
            if abs(math.log(d1)) >= math.log1p(tol) and abs(math.log(d2)) >= math.log1p(tol):
                flips.append((x, y))
    return flips, (conc - disc) / (conc + disc) if conc + disc else None


BOOT_N = 2000  # bootstrap resamples for a pair's interval (seeded: the same runs give the same report)


def pair_interval(results, x, y, tlb, key, rng):
    """How much faster contender x is than y over the TLB workloads: the geometric mean over workloads of
    y's median over x's (wall time, or CPU time for cpu_speedup), and its 95% bootstrap interval (each
    contender's repetitions of each workload resampled).  None when a workload lacks runs."""
    field = "cpu_s" if key == "cpu_speedup" else "wall_s"
    per = []
    for w in tlb:
        vx = [r[field] for r in results.get(w[0], {}).get(x, []) if r.get("ok") and r.get(field)]
        vy = [r[field] for r in results.get(w[0], {}).get(y, []) if r.get("ok") and r.get(field)]
        if not vx or not vy:
            return None
        per.append((vx, vy))

    def ratio(pick):
        return math.exp(sum(math.log(med(pick(vy)) / med(pick(vx))) for vx, vy in per) / len(per))

    boots = sorted(ratio(lambda v: [rng.choice(v) for _ in v]) for _ in range(BOOT_N))
    return ratio(lambda v: v), boots[int(0.025 * BOOT_N)], boots[int(0.975 * BOOT_N) - 1]


def separated(iv):
    """Does the interval exclude 1 (the two contenders differ beyond their runs' spread)?"""
    return iv is not None and (iv[1] > 1 or iv[2] < 1)


def seed_check(results, check, conts, wls, tol):
    """The seed check: the TLB group's ranking in each state with the main seed and with the check's seed, by
    wall time and by CPU time.  Returns the one-line verdict, then the section's lines."""
    tlb = [w for w in wls if w[1] == "tlb"]
    if not tlb:
        return ["Seed check: none (no TLB-heavy workload in this run)."]
    if not check:
        return ["Seed check: not run (`--seed-check`; `make bench` runs it unless SEED_CHECK=0)."]
    label = {c[0]: c[1] for c in conts}
    seed1 = check["seed"] - 1
    rows, rows_iv, verdicts, ok, strict_ok = [], [], [], True, True
    for st in states_in(check["runs"]):
        s1 = summarize(in_state(results, st), conts, tlb)
        s2 = summarize(in_state(check["runs"], st), conts, tlb)
        for key, by in (("speedup", "wall time"), ("cpu_speedup", "CPU time")):
            r1, r2 = ranking(s1, conts, tlb, key), ranking(s2, conts, tlb, key)
            flips, tau = discordant(r1, r2, tol)
            per_wl = [w[0] for w in tlb if discordant(ranking(s1, conts, [w], key), ranking(s2, conts, [w], key),
                                                      tol)[0]]
            # a flip counts against the ranking when a pass separates the pair beyond its runs' spread;
            # one that neither pass separates is a tie both passes measured, not an order the seed decided
            rng = random.Random("%s/%s" % (st, key))
            real, noise = [], []
            for x, y in flips:
                ivs = [pair_interval(in_state(r, st), x, y, tlb, key, rng) for r in (results, check["runs"])]
                (real if any(separated(iv) for iv in ivs) else noise).append((x, y, ivs))
                rows_iv.append("| %s | %s | %s vs %s | %s |" % (st, by, label[x], label[y], " | ".join(
                    "%s [%s–%s]" % (fmt(iv[0]), fmt(iv[1]), fmt(iv[2])) if iv else "–" for iv in ivs)))
            ok = ok and not real
            strict_ok = strict_ok and not flips
            verdicts.append("%s by %s %s (Kendall τ %s%s%s; workloads whose own ranking differs: %s)" % (
                st, by, "agree" if not real else "DISAGREE", fmt(tau), "; " + ", ".join(
                    "%s vs %s" % (label[x], label[y]) for x, y, _ in real) if real else "", "; tied within the "
                    "runs' spread: " + ", ".join("%s vs %s" % (label[x], label[y]) for x, y, _ in noise)
                    if noise else "", ", ".join(per_wl) or "none"))
            for seed, r in ((seed1, r1), (check["seed"], r2)):
                rows.append("| %s | %s | %d | %s |" % (st, by, seed, ", ".join(
                    "%s %s" % (label[n], fmt(v)) for n, v in r)))
    line = "Seed check (TLB group run twice, seeds %d and %d): the rankings %s%s: %s." % (
        seed1, check["seed"], "agree" if ok else "DISAGREE", "" if ok == strict_ok else
        " beyond the runs' spread (by the %.0f%% rule alone they disagree)" % (100 * tol), "; ".join(verdicts))
    iv_lines = [] if not rows_iv else [
        "", "Each pair the two passes order differently, and how much faster the first is than the second in each "
        "pass: the geometric mean over the TLB workloads of the ratio of their medians, with its 95%% bootstrap "
        "interval (%d resamples of each contender's repetitions). A pair that neither pass separates (both "
        "intervals hold 1) is tied within the runs' spread; one that a pass separates and the other orders "
        "the other way makes the rankings disagree." % BOOT_N, "",
        "| state | by | pair | seed %d | seed %d |" % (seed1, check["seed"]), "|---|---|---|---|---|"] + rows_iv
    return [line, "## Seed check: does the ranking depend on the order of the contenders?", "",
            "The TLB group ran a second time, its contenders shuffled with seed %d (the tables above: seed %d), "
            "in the same states. Ranking: the geometric mean of the TLB speed-ups, best first; two contenders "
            "within %.0f%% of each other in either run are tied, not ranked." % (check["seed"], seed1, 100 * tol), "",
            line, "", "| state | by | seed | ranking (geomean TLB speed-up) |", "|---|---|---:|---|"] + rows + \
        iv_lines + [""]


COLORS = ["#444444", "#888888", "#bbbbbb", "#08519c", "#3182bd", "#9ecae1", "#a63603", "#fd8d3c",
          "#006d2c", "#74c476", "#756bb1"]


def svg(s, conts, wls, title):
    """Two panels of grouped bars: speed-up by wall time, then by CPU time."""
    cs = list(conts)
    bw, gap, left, h, ph = 7, 18, 50, 260, 380
    width = left + len(wls) * (len(cs) * bw + gap) + 170
    vals = [s[w[0]][c[0]].get(k) or 0 for w in wls for c in cs for k in ("speedup", "cpu_speedup")]
    ymax = max(1.5, math.ceil(max(vals + [1]) * 4) / 4)
    o = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">'
         % (width, 40 + 2 * ph),
         '<rect width="100%" height="100%" fill="white"/>',
         '<text x="%d" y="20" font-size="14">%s</text>' % (left, title)]
    for pi, (key, what) in enumerate((("speedup", "wall time"), ("cpu_speedup", "CPU time (user + sys)"))):
        top = 60 + pi * ph
        y = lambda v: top + h - v / ymax * h
        o.append('<text x="%d" y="%d">speed-up by %s vs glibc hugetlb=0 (above 1: faster); medians</text>'
                 % (left, top - 10, what))
        t = 0.0
        while t <= ymax + 1e-9:
            o.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#eee"/>' % (left, width - 170, y(t), y(t)))
            o.append('<text x="%d" y="%.1f" text-anchor="end">%.2f</text>' % (left - 4, y(t) + 4, t))
            t += 0.25
        o.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="black" stroke-dasharray="4,3"/>' % (
            left, width - 170, y(1), y(1)))
        for i, w in enumerate(wls):
            x0 = left + i * (len(cs) * bw + gap) + gap / 2
            for j, c in enumerate(cs):
                v = s[w[0]][c[0]].get(key)
                if v:
                    o.append('<rect x="%.1f" y="%.1f" width="%d" height="%.1f" fill="%s"><title>%s %s: %.2fx</title>'
                             '</rect>' % (x0 + j * bw, y(v), bw - 1, top + h - y(v), COLORS[j % len(COLORS)], w[0],
                                          c[1], v))
            cx = x0 + len(cs) * bw / 2
            o.append('<text x="%.1f" y="%d" text-anchor="end" transform="rotate(-40 %.1f %d)">%s</text>' % (
                cx, top + h + 14, cx, top + h + 14, w[0]))
    for j, c in enumerate(cs):
        o.append('<rect x="%d" y="%d" width="10" height="10" fill="%s"/><text x="%d" y="%d">%s</text>' % (
            width - 160, 60 + j * 16, COLORS[j % len(COLORS)], width - 145, 60 + j * 16 + 9, c[1]))
    o.append("</svg>")
    return "\n".join(o) + "\n"


def hpm_replays(build):
    hpm = os.path.join(TOP, build, "bin", "hpm")
    dirs = [d for d in (os.environ.get("HPM_TRACES"), os.path.join(TOP, "tests/hpm/traces"),
                        os.path.join(TOP, "bench/traces")) if d and os.path.isdir(d)]
    traces = sorted(os.path.join(d, f) for d in dirs for f in os.listdir(d) if f.endswith(".hpmt"))
    if not os.access(hpm, os.X_OK) or not traces:
        msg = "trace replays skipped: %s" % ("%s not built yet" % os.path.relpath(hpm, TOP) if not os.access(hpm, os.X_OK)
                                             else "no .hpmt traces in tests/hpm/traces or bench/traces")
        print("bench: " + msg)
        return [msg + "."]
    out = []
    for t in traces:
        print("bench: hpm compare %s" % os.path.relpath(t, TOP))
        # every installed allocator, without and with THP mode (hugetlb=1)
        p = subprocess.run([hpm, "compare", t, "--allocators", "all", "--tunables", "-,glibc.malloc.hugetlb=1",
                            "--reps", "3"], capture_output=True, text=True, timeout=1800)
        out += ["`hpm compare %s` (exit %d):" % (os.path.relpath(t, TOP), p.returncode), "", "```",
                (p.stdout + p.stderr).strip(), "```", ""]
    return out


def report(meta, results, conts, wls, hpm_note, out, name, runs_json=True, check=None, tol=0.05):
    secs = sections(results, conts, wls)
    seed_lines = seed_check(results, check, conts, wls, tol) if meta.get("states") else None
    md = markdown(meta, secs, conts, wls, hpm_note, seed_lines)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, name + ".md"), "w") as f:
        f.write(md)
    if runs_json:
        with open(os.path.join(out, name + ".json"), "w") as f:
            json.dump({"meta": meta, "hpm": hpm_note,
                       "contenders": [{"name": c[0], "label": c[1], "preload": c[2], "env": c[3]} for c in conts],
                       "workloads": [{"name": w[0], "group": w[1], "command": w[2], "opts": w[3],
                                      "metric": w[3].get("metric", "wall_s")} for w in wls],
                       "summary": {x["state"]: x["s"] for x in secs},
                       "goals": {x["state"]: x["goals"] for x in secs},
                       "goals_cpu": {x["state"]: x["goals_cpu"] for x in secs},
                       "seed_check": check and dict(check, verdict=seed_lines[0]),
                       "runs": results}, f, indent=1)
    # one group of bars per workload and state; the state named where a workload ran in more than one
    many = {w[0] for w in wls if sum(1 for x in secs if w in x["wls"]) > 1}
    bars = [(w[0] + (" " + x["state"] if w[0] in many else ""), x["s"][w[0]]) for x in secs for w in x["wls"]]
    with open(os.path.join(out, name + ".svg"), "w") as f:
        f.write(svg(dict(bars), conts, [(k,) for k, _ in bars],
                    "hpmalloc benchmark %s (%s)" % (meta["date"], "QUICK" if meta["quick"] else "full")))
    return md


def render(a):
    with open(a.render) as f:
        d = json.load(f)
    conts = [(c["name"], c["label"], c["preload"], c["env"]) for c in d["contenders"]]
    wls = [(w["name"], w["group"], w["command"], w.get("opts") or
            ({"metric": "mips"} if w.get("metric") == "mips" else {})) for w in d["workloads"]]
    check = d.get("seed_check")
    md = report(d["meta"], d["runs"], conts, wls, d.get("hpm", []), a.out, a.name,
                runs_json=os.path.abspath(a.render) != os.path.abspath(os.path.join(a.out, a.name + ".json")),
                check=check and {"seed": check["seed"], "runs": check["runs"]}, tol=a.rank_tolerance)
    print(md)


WARM_RULE = ("the primer (`touch`, bench/workloads/touch.c) touched and freed 2 × the footprint + 256 MiB just before "
             "the run (footprint: the largest peak RSS of the workload's runs so far, at first its known size or "
             "64 MB), so that the run's faults find memory freed a moment ago even after a reporting pass took "
             "256 MiB of it")


class Bench:
    """Runs workloads under contenders in their memory states and keeps account of footprints."""

    def __init__(self, launcher, tmp, timeout, mem, states):
        self.launcher, self.tmp, self.timeout, self.mem, self.states = launcher, tmp, timeout, mem, states
        self.peak = {}  # workload: the largest peak RSS + hugetlb (MB) of its runs so far
        self.n = self.total = 0

    def footprint(self, w):
        return self.peak.get(w[0]) or w[3].get("footprint_mb", 64)

    def measure(self, conts, wls, reps, seed, results):
        """Every workload under every contender in each of its states, reps times, in a new shuffled order of
        the contenders each repetition; the runs of one state come together, so that a cold wait has one run's
        footprint to clear, not a primer's too.  Appends to results[workload][contender]."""
        for rep in range(reps):
            order = list(conts)
            random.Random("%d/%d" % (seed, rep)).shuffle(order)
            for w in wls:
                for state in self.states(w):
                    for c in order:
                        self.one(c, w, state, rep, seed, results)

    def one(self, c, w, state, rep, seed, results):
        how = self.mem.enter(state, 2 * self.footprint(w) + 256)
        p0 = self.mem.passes()
        r = run_one(self.launcher, c, w, self.tmp, self.timeout)
        p1 = self.mem.passes()
        r.update(how, seed=seed)
        if p0 is not None and p1 is not None:
            r["passes"] = p1 - p0  # reporting passes during the run
        self.mem.freed(r.get("rss_mb") or self.footprint(w))
        if r["ok"] and r.get("mem_mb"):
            self.peak[w[0]] = max(self.peak.get(w[0], 0), r["mem_mb"])
        results.setdefault(w[0], {}).setdefault(c[0], []).append(r)
        self.n += 1
        v = r.get("mips", r.get("wall_s"))
        print("bench: [%d/%d] seed %d rep %d %-12s %-4s %-14s %s" % (
            self.n, self.total, seed, rep + 1, w[0], state, c[1],
            ("%s=%.3f cpu=%.2f mem=%.0fMB huge=%.0f%%" % ("mips" if "mips" in r else "wall", v, r["cpu_s"],
                                                        r["mem_mb"], r["huge_pct"])) if r["ok"] else
            "FAILED: " + r.get("error", "")) + (" (settled %.1f s)" % how["settle_s"] if state == "cold" else ""),
            flush=True)


def firsttouch(a):
    """make bench-firsttouch: what a first touch costs per 2 MiB, base pages and THP, cold and warm (interleaved,
    in a seeded random order per repetition), then the THP cost against the idle time since the memory was
    freed.  Writes OUT/NAME.md (also printed) and OUT/NAME.json."""
    touch = os.path.join(TOP, a.build, "bench", "touch")
    if not os.access(touch, os.X_OK):
        sys.exit("bench: %s missing (make bench-firsttouch builds it)" % touch)
    mem = memstate.Memory(touch, settle=a.cold_settle)
    mib, t_start, meta = a.mib, time.time(), {"machine": machine(), "reporting": mem.info}
    meta["command"] = " ".join(["python3", "bench/run-bench.py"] + sys.argv[1:])
    meta["date"] = datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M")

    def probe(kind):  # one first touch of mib MiB; its memory is freed when it exits
        p = subprocess.run([touch, str(mib), kind], capture_output=True, text=True, check=True)
        mem.freed(mib)
        return {k: float(v) for k, v in re.findall(r"(\w+)=([-\d.]+)", p.stdout)}

    runs, curve = [], []
    mem.settle()  # whatever ran before this is reported first
    for rep in range(a.reps):
        cases = [(k, st) for k in ("base", "thp") for st in ("cold", "warm")]
        random.Random("%d/%d" % (a.seed, rep)).shuffle(cases)
        for kind, state in cases:
            r = mem.enter(state, mib)
            r.update(probe(kind), pages=kind, rep=rep + 1)
            runs.append(r)
            print("bench: firsttouch rep %d %-4s %s: %.3f ms per 2 MiB (%s)" % (
                rep + 1, kind, state, r["ms_per_2m"], "settled in %.1f s, %s" % (r["settle_s"], r["settled_by"])
                if state == "cold" else "after a primer of %d MiB" % r["primer_mib"]), flush=True)
    # as it comes (what the primer freed partly waits in the per-CPU lists), and with the lists drained
    # right after the primer (the reporting alone)
    variants = ("as is", "drained") if os.access(memstate.STAT_REFRESH, os.W_OK) else ("as is",)
    for idle in [float(x) for x in a.idle.split(",") if x]:
        for v in variants:
            mem.settle()
            mem.prime(mib)
            if v == "drained":
                memstate.drain_pcp()
            r0 = memstate.reported_kib()
            time.sleep(idle)
            r1 = memstate.reported_kib()
            r = probe("thp")
            r.update(idle_s=idle, lists=v, reported_mib=(r1 - r0) / 1024 if r0 is not None else None)
            curve.append(r)
            print("bench: firsttouch idle %4.1f s, lists %s (%s MiB reported meanwhile): THP %.3f ms per 2 MiB" % (
                idle, v, fmt(r["reported_mib"], 0), r["ms_per_2m"]), flush=True)
    meta["loadavg_end"] = readf("/proc/loadavg")
    meta["duration_s"] = time.time() - t_start
    m = meta["machine"]
    L = ["# First touch of fresh memory (`make bench-firsttouch`)", "",
         "Generated by `bench/run-bench.py --firsttouch`; do not edit by hand.", "",
         "- Machine: %s; %s cores; %s GiB; Linux %s; THP enabled %s, defrag %s" % (
             m["cpu"], m["cores"], m["memory_gib"], m["kernel"], m["thp"], m["thp_defrag"]),
         "- Free-page reporting: " + memstate.describe(mem.info),
         "- Date: %s UTC; took %.0f s; load average at start %s, at end %s" % (
             meta["date"], meta["duration_s"], m["loadavg_start"], meta["loadavg_end"]),
         "- Command: `%s`" % meta["command"],
         "- Each probe (`%s MIB thp|base`) maps %d MiB, advises it (MADV_HUGEPAGE, or MADV_NOHUGEPAGE for base "
         "pages), writes a byte in every 4 KiB page and times that; %d repetitions, the four cases in a seeded "
         "random order in each. Cold: %s. Warm: the primer (`touch %d thp`) ran just before." % (
             os.path.relpath(touch, TOP), mib, a.reps, mem.rule(), mib), ""]
    L += ["## First touch, ms per 2 MiB (median, min–max)", "",
          "The first 64 MiB alone in the columns *head*: warm pages that a cold state left would show there.", "",
          "| pages | cold | cold, head | warm | warm, head | cold / warm |", "|---|---:|---:|---:|---:|---:|"]
    for kind, label in (("base", "base pages (4 KiB faults)"), ("thp", "THP (2 MiB faults)")):
        v = {(st, k): [r[k] for r in runs if r["pages"] == kind and r["state"] == st and k in r]
             for st in ("cold", "warm") for k in ("ms_per_2m", "head_ms_per_2m")}
        cell = {sk: "%s (%s–%s)" % (fmt(med(x), 3), fmt(min(x), 3), fmt(max(x), 3)) if x else "–"
                for sk, x in v.items()}
        c, w = med(v["cold", "ms_per_2m"]), med(v["warm", "ms_per_2m"])
        L.append("| %s | %s |" % (label, " | ".join(cell[st, k] for st in ("cold", "warm") for k in (
            "ms_per_2m", "head_ms_per_2m")) + " | " + fmt(c / w if c and w else None)))
    waits = [r["settle_s"] for r in runs if r["state"] == "cold"]
    if waits:
        why = [r["settled_by"] for r in runs if r["state"] == "cold"]
        L += ["", "Cold waits after freeing %d MiB: median %.1f s (%.1f–%.1f s); ended by %s." % (
            mib, med(waits), min(waits), max(waits),
            ", ".join("%s ×%d" % (k, why.count(k)) for k in sorted(set(why))))]
    if curve:
        L += ["", "## THP first touch against the idle time since the memory was freed", "",
              "From the cold state, the primer touched and freed %d MiB, then nothing of ours ran for the idle "
              "time, then the probe touched %d MiB of THP. `reported`: what the balloon handed to the host "
              "meanwhile (all of the machine's frees, not only the primer's). Per-CPU lists *as is*: part of what "
              "the primer freed waits in the kernel's per-CPU free lists, where reporting does not look; "
              "*drained*: the lists emptied into the buddy lists right after the primer." % (mib, mib), ""]
        L += ["| idle after the free (s) | " + " | ".join(
            "lists %s: reported meanwhile (MiB) | lists %s: THP ms per 2 MiB" % (v, v) for v in variants) + " |",
            "|---:|" + "---:|---:|" * len(variants)]
        for idle in sorted({r["idle_s"] for r in curve}):
            row = {r["lists"]: r for r in curve if r["idle_s"] == idle}
            L.append("| %g | %s |" % (idle, " | ".join("%s | %s" % (fmt(row[v]["reported_mib"], 0), fmt(
                row[v]["ms_per_2m"], 3)) for v in variants)))
    md = "\n".join(L) + "\n"
    os.makedirs(a.out, exist_ok=True)
    name = a.name
    with open(os.path.join(a.out, name + ".md"), "w") as f:
        f.write(md)
    with open(os.path.join(a.out, name + ".json"), "w") as f:
        json.dump({"meta": meta, "mib": mib, "runs": runs, "curve": curve}, f, indent=1)
    print()
    print(md)
    print("bench: wrote %s/%s.{md,json}" % (os.path.relpath(a.out, os.getcwd()), name))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--reps", type=int, default=None, help="repetitions (3; --quick: 1)")
    ap.add_argument("--contenders", default="")
    ap.add_argument("--workloads", default="", help="names or groups (small, tlb, real), comma-separated")
    ap.add_argument("--out", default=None, help="directory of the report (BUILD/bench/results)")
    ap.add_argument("--name", default=None, help="file names: NAME.md, NAME.json, NAME.svg (latest; firsttouch)")
    ap.add_argument("--pool-mb", type=int, default=0, help="hugetlb pool for the run (default 1024 quick, 4608 full)")
    ap.add_argument("--timeout", type=int, default=900)
    ap.add_argument("--tlb-states", default=None,
                    help="memory states the TLB group runs in, each its own tables: warm, cold, asis "
                         "(warm,cold; --quick: warm)")
    ap.add_argument("--state", default="warm", help="memory state of the other groups (warm)")
    ap.add_argument("--seed-check", action="store_true",
                    help="run the TLB group again with seed + 1 and say whether the rankings agree")
    ap.add_argument("--rank-tolerance", type=float, default=0.05,
                    help="--seed-check: contenders within this fraction of each other are tied (0.05)")
    ap.add_argument("--md", type=int, default=25, help="7zz b -mdN (25; 23 takes half the time)")
    ap.add_argument("--render", metavar="JSON", help="measure nothing: write the md and svg again from a JSON result")
    ap.add_argument("--seed", type=int, default=1, help="seed of the shuffled orders (1)")
    ap.add_argument("--cold-settle", type=float, default=None, metavar="S",
                    help="cold state: a fixed pause of S s after a free instead of watching the reporting counters")
    ap.add_argument("--firsttouch", action="store_true",
                    help="measure the first-touch cost per 2 MiB instead (make bench-firsttouch)")
    ap.add_argument("--mib", type=int, default=1024, help="--firsttouch: MiB touched by each probe (1024)")
    ap.add_argument("--idle", default="0,1,2,3,4,6,8,12",
                    help="--firsttouch: idle times (s) after a free for the THP curve ('' skips it)")
    a = ap.parse_args()
    a.name = a.name or ("firsttouch" if a.firsttouch else "latest")
    a.out = a.out or os.path.join(TOP, a.build, "bench", "results")
    a.reps = a.reps or (1 if a.quick else 3)
    a.tlb_states = a.tlb_states or ("warm" if a.quick else "warm,cold")
    if a.render:
        return render(a)
    if a.firsttouch:
        return firsttouch(a)
    t_start = time.time()
    if a.quick:
        print("bench: QUICK: a short look, not a measurement to keep: sizes 5-10x smaller, %d repetition%s, "
              "the TLB group %s only, %sno 7zz (its benchmark runs ~10 s per pass), no trace replays" % (
                  a.reps, "" if a.reps == 1 else "s", a.tlb_states, "" if a.seed_check else "no seed check, "))
    launcher = os.path.join(TOP, a.build, "bench", "hpb-run")
    if not os.access(launcher, os.X_OK):
        sys.exit("bench: %s missing (make bench builds it)" % launcher)
    conts = contenders(a.build)
    if a.contenders:
        want = a.contenders.split(",")
        conts = [c for c in conts if c[0] in want]
    else:
        conts = [c for c in conts if c[0] not in OPTIONAL_CONTENDERS]
    missing = [c for c in conts if c[2] and not os.path.exists(c[2])]
    for c in missing:
        print("bench: %s skipped: %s is not installed (bash build-aux/deps.sh bench)" % (c[1], c[2]))
    conts = [c for c in conts if c not in missing]
    tmp = tempfile.mkdtemp(prefix="hpbench.")
    wls = workloads(a.build, a.quick, tmp, a.md)
    if a.workloads:
        want = a.workloads.split(",")
        wls = [w for w in wls if w[0] in want or w[1] in want]
    ok = []
    for w in wls:
        lack = [x for x in [w[2][0]] + w[3].get("needs", []) if not (os.access(x, os.X_OK) or shutil.which(x))]
        if w[3].get("prep") == "redis" and not redis_server():
            lack.append("redis-server")
        if w[3].get("glibc_preload") and not os.path.exists(w[3]["glibc_preload"]):
            lack.append(w[3]["glibc_preload"])
        if lack:
            print("bench: %s skipped: %s not found (bash build-aux/deps.sh bench installs the programs; "
                  "make bench-build the launcher and shims)" % (w[0], ", ".join(lack)))
            continue
        prep(tmp, w[3])
        ok.append(w)
    wls = ok
    tlb_states = [x for x in a.tlb_states.split(",") if x]
    bad = [x for x in tlb_states + [a.state] if x not in memstate.STATES]
    if bad or not tlb_states:
        sys.exit("bench: unknown memory state %s (warm, cold or asis)" % ", ".join(bad or ["''"]))
    mem = memstate.Memory(os.path.join(TOP, a.build, "bench", "touch"), settle=a.cold_settle)
    if "warm" in tlb_states + [a.state] and not os.access(mem.touch, os.X_OK):
        sys.exit("bench: %s missing (make bench-build builds it)" % mem.touch)
    meta = {"quick": a.quick, "reps": a.reps, "machine": machine(), "seed": a.seed,
            "order": "in a new order each repetition (shuffled, seed %d)" % a.seed,
            "states": {"tlb": tlb_states, "other": a.state}, "reporting": mem.info,
            "cold_rule": mem.rule(), "warm_rule": WARM_RULE,
            "date": datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M"),
            "command": " ".join(["python3", "bench/run-bench.py"] + sys.argv[1:])}
    pool = Pool(a.pool_mb or (1024 if a.quick else 4608))
    need_pool = any(c[0] in ("glibc-h2", "hpm-h2", "mi-large") for c in conts)

    def stop(sig, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    results, check = {}, None
    tlb = [w for w in wls if w[1] == "tlb"]
    bench = Bench(launcher, tmp, a.timeout, mem, lambda w: tlb_states if w[1] == "tlb" else [a.state])
    try:
        if need_pool:
            pool.raise_()
            print("bench: " + pool.note)
        meta["pool"] = pool.note or "hugetlb pool: not used"
        bench.total = a.reps * len(conts) * sum(len(bench.states(w)) for w in wls + (tlb if a.seed_check else []))
        bench.measure(conts, wls, a.reps, a.seed, results)
        if a.seed_check and tlb:
            # the TLB group again in a different order: its ranking must not depend on the order
            check = {"seed": a.seed + 1, "runs": {}}
            bench.measure(conts, tlb, a.reps, check["seed"], check["runs"])
    except KeyboardInterrupt:
        print("bench: interrupted; writing what was measured")
    finally:
        pool.restore()
    hpm_note = ["trace replays skipped: QUICK."] if a.quick else hpm_replays(a.build)
    shutil.rmtree(tmp, ignore_errors=True)
    meta["loadavg_end"] = readf("/proc/loadavg")
    meta["duration_s"] = time.time() - t_start
    md = report(meta, results, conts, wls, hpm_note, a.out, a.name, check=check, tol=a.rank_tolerance)
    print()
    print(md)
    print("bench: wrote %s/%s.{md,json,svg}" % (os.path.relpath(a.out, os.getcwd()), a.name))


if __name__ == "__main__":
    main()
