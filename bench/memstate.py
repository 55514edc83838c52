# SPDX-License-Identifier: MIT
"""memstate.py: the memory state a benchmark run starts in.  MIT licence.

In a VM whose balloon device has free-page reporting, memory that the
guest freed is handed back to the host a few seconds later, and touching
it again faults in the host as well: a 2 MiB fault needs a whole free
block, and whole free blocks are what gets reported.  So the same run is
fast right after another process freed its footprint and slow after an
idle pause.  run-bench.py therefore runs in a stated state:

  warm  the primer ($(BUILD)/bench/touch, bench/workloads/touch.c) maps
        more than the run's footprint (run-bench.py says how much) with
        MADV_HUGEPAGE, touches it and exits right before the run;
  cold  the run waits until what was freed before it has been reported
        (Memory.settle below says how that is detected); as root, the
        per-CPU free lists are drained first (below);
  asis  nothing is done: the run inherits whatever the run before it left.

Free pages that sit in the kernel's per-CPU lists (/proc/zoneinfo,
"pagesets": up to 384 MiB per CPU here, order-9 pages included) are never
reported, and a fault on that CPU takes them first: after any wait, a run
still found its first 64-200 MiB warm.  Writing /proc/sys/vm/stat_refresh
runs the kernel's periodic per-CPU decay at once (each write lowers a
list's high mark by an eighth and gives back what is above it, at most
2016 pages), so a few dozen writes empty the lists into the buddy lists,
where reporting finds them.  That is the only system file this module
writes; it changes no setting.

Python 3 standard library only; imported by run-bench.py.
"""
import glob
import os
import subprocess
import time

PR = "/sys/module/page_reporting/parameters"
STAT_REFRESH = "/proc/sys/vm/stat_refresh"
VIRTIO_ID_BALLOON = "0x0005"
F_FREE_PAGE_HINT, F_REPORTING = 3, 5  # VIRTIO_BALLOON_F_* feature bits
DELAY_S = 2.0  # the kernel's PAGE_REPORTING_DELAY: reporting starts 2 s after a free, passes 2 s apart
QUIET_S = 2.5  # no report for longer than a pass interval: nothing is left to report
LATE_MIB = 32  # a cold wait ends when the per-CPU lists got less than this meanwhile
RATE_MIB_S = 100  # reporting rate measured on the project's machine (256 MiB per pass): for the fallback wait
STATES = ("warm", "cold", "asis")


def readf(path, default=""):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return default


def reporting():
    """What this machine exposes about free-page reporting."""
    d = {"balloon": None, "reporting": False, "hinting": False, "order": None, "counters": []}
    for dev in sorted(glob.glob("/sys/bus/virtio/devices/*")):
        if readf(dev + "/device") == VIRTIO_ID_BALLOON:
            bits = readf(dev + "/features")  # one character per feature bit, bit 0 first
            d["balloon"] = os.path.basename(dev)
            d["reporting"] = bits[F_REPORTING:F_REPORTING + 1] == "1"
            d["hinting"] = bits[F_FREE_PAGE_HINT:F_FREE_PAGE_HINT + 1] == "1"
    order = readf(PR + "/page_reporting_order")
    d["order"] = int(order) if order.isdigit() else None
    # reported_kib and passes are not in every kernel (this VM's has them)
    d["counters"] = [n for n in ("reported_kib", "passes") if readf(os.path.join(PR, n)).isdigit()]
    return d


def describe(d):
    if not d["balloon"]:
        return "no virtio balloon: freed memory stays with the guest, so cold and warm differ only by the primer"
    s = "virtio balloon (%s), free-page reporting %s (feature bit %d)" % (
        d["balloon"], "on" if d["reporting"] else "off", F_REPORTING)
    if d["order"] is not None:
        s += ", page_reporting_order %d (blocks of %d KiB)" % (d["order"], 4 << d["order"])
    if d["counters"]:
        s += ", counters %s in %s" % (" and ".join(d["counters"]), PR)
    return s


def reported_kib():
    v = readf(PR + "/reported_kib")
    return int(v) if v.isdigit() else None


def pcp_mib(zoneinfo=None):
    """Free memory held in the per-CPU lists of all zones, and the least they keep (high_min), in MiB."""
    count = floor = 0
    for line in (readf("/proc/zoneinfo") if zoneinfo is None else zoneinfo).splitlines():
        f = line.split()
        if len(f) == 2 and f[0] in ("count:", "high_min:") and f[1].isdigit():
            if f[0] == "count:":
                count += int(f[1])
            else:
                floor += int(f[1])
    page = os.sysconf("SC_PAGE_SIZE") / 1048576
    return count * page, floor * page


def drain_pcp():
    """Empty the per-CPU free lists down to their floor (root only).  Returns the MiB given back, or None."""
    if not os.access(STAT_REFRESH, os.W_OK):
        return None
    before, floor = pcp_mib()
    last, same = before, 0
    for _ in range(128):
        with open(STAT_REFRESH, "w") as f:
            f.write("1\n")
        now, _ = pcp_mib()
        same = same + 1 if now >= last else 0
        last = now
        if now <= floor + 8 or same >= 3:
            break
    return max(0.0, before - last)


class Memory:
    """Puts memory in a state before a run, and keeps account of what was freed and not yet reported."""

    def __init__(self, touch, quiet=QUIET_S, cap=60.0, settle=None):
        self.touch = touch
        self.info = reporting()
        self.quiet, self.cap, self.fixed = quiet, cap, settle
        self.counted = "reported_kib" in self.info["counters"] and self.fixed is None
        self.backlog_kib = float("inf")  # freed and not yet reported; unknown at the start
        self.r_seen = reported_kib()
        self.t_free = time.time()

    def rule(self):
        """How the cold state is reached, in one sentence for the report."""
        if not self.info["reporting"] and self.fixed is None:
            return "no wait: this machine does not report free pages"
        drain = self.info["reporting"] and os.access(STAT_REFRESH, os.W_OK)
        lists = ("the per-CPU free lists drained into the buddy lists (writes to %s), then " % STAT_REFRESH if drain
                 else "(not root: what the per-CPU free lists hold, pcp_mib in the runs, stays warm) "
                 if self.info["reporting"] else "")
        again = ("; drained and waited again while a drain found %d MiB or more that other processes had freed "
                 "meanwhile (late_mib in the runs: what the last drain found)" % LATE_MIB if drain else "")
        if self.fixed is not None:
            return lists + "a fixed pause of %g s after the last free (--cold-settle)%s" % (self.fixed, again)
        if self.counted:
            return lists + (
                "a wait until reported_kib has grown by what was freed since the last cold run (the largest "
                "footprint freed, less what was reported meanwhile), or no report came for %g s (longer than "
                "the kernel's %g s between passes)%s; at most %g s" % (self.quiet, DELAY_S, again, self.cap))
        return lists + "a pause of %g s + footprint / %d MiB/s after the last free (no reporting counters here)%s" % (
            DELAY_S + 0.5, RATE_MIB_S, again)

    def _count(self):
        r = reported_kib()
        if r is not None and self.r_seen is not None:
            self.backlog_kib = max(0.0, self.backlog_kib - (r - self.r_seen))
        self.r_seen = r
        return r

    def freed(self, mib):
        """A process whose footprint was mib MiB has just exited.  What it freed replaces what is left of the
        backlog when larger: a run re-uses the pages its primer freed, so the two do not add up."""
        self._count()
        self.backlog_kib = max(self.backlog_kib, mib * 1024.0)
        self.t_free = time.time()

    def passes(self):
        v = readf(PR + "/passes")
        return int(v) if v.isdigit() else None

    def prime(self, mib):
        """The warm state: touch mib MiB of THP and give it back.  Returns the primer's seconds."""
        t0 = time.time()
        subprocess.run([self.touch, str(max(1, int(mib + 0.5))), "thp"], stdout=subprocess.DEVNULL, check=True)
        self.freed(mib)
        return time.time() - t0

    def settle(self):
        """The cold state.  As root: drain the per-CPU lists, wait until what was freed has been reported, and
        again while a drain finds more than LATE_MIB that other processes freed meanwhile (on a busy machine
        they keep freeing); the run starts right after the last drain.  Returns (seconds, why, late): late is
        what the last drain found, freed too recently to be reported, or None when the lists cannot be drained."""
        t0 = time.time()
        late, why = None, "pause"
        for rounds in range(1000):
            late = drain_pcp() if self.info["reporting"] else None
            if rounds and (late is None or late < LATE_MIB or time.time() - t0 >= self.cap):
                break
            if late:  # what the lists held is in the buddy lists now, to be reported
                self.freed(late)
            why = self._wait(t0)
        self.backlog_kib = 0.0
        return time.time() - t0, why, late

    def _wait(self, t0):
        """Wait until the backlog has been reported: "reported", "quiet" or "cap" (counters), else "pause"."""
        if not self.counted:
            fixed = self.fixed
            if fixed is None:
                left = 0.0 if self.backlog_kib == float("inf") else self.backlog_kib / 1024
                fixed = DELAY_S + 0.5 + left / RATE_MIB_S if self.info["reporting"] else 0.0
            time.sleep(max(0.0, self.t_free + fixed - time.time()))
            self.backlog_kib = 0.0
            return "pause"
        last, t_last = self.r_seen, self.t_free
        while True:
            r, t = self._count(), time.time()
            if r != last:
                last, t_last = r, t
            why = ("reported" if self.backlog_kib <= 0 else "quiet" if t - t_last >= self.quiet else
                   "cap" if t - t0 >= self.cap else None)
            if why:
                self.backlog_kib = 0.0
                return why
            time.sleep(0.05)

    def enter(self, state, mib):
        """Put memory in state for a run; mib is what to prime (warm).  Returns what was done, for the record."""
        if state == "warm":
            return {"state": "warm", "primer_mib": round(mib), "primer_s": round(self.prime(mib), 3)}
        if state == "cold":
            s, why, late = self.settle()
            r = {"state": "cold", "settle_s": round(s, 2), "settled_by": why, "pcp_mib": round(pcp_mib()[0])}
            if late is not None:
                r["late_mib"] = round(late)
            return r
        return {"state": "asis"}
