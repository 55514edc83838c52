# SPDX-License-Identifier: MIT
"""The report logic of bench/run-bench.py on made-up runs: the seed check's
verdict and the bootstrap interval it rests on.  No timing is measured
here; only what the report concludes from given numbers.  MIT licence.

    python3 tests/bench/test_report.py      (make check-bench)
"""
import importlib.util
import os
import random
import unittest

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
spec = importlib.util.spec_from_file_location("run_bench", os.path.join(TOP, "bench", "run-bench.py"))
rb = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rb)

CONTS = [("glibc-h0", "glibc h0", None, {}), ("a", "A", None, {}), ("b", "B", None, {})]
WLS = [("w1", "tlb", ["true"], {}), ("w2", "tlb", ["true"], {})]


def runs(times, state="cold"):
    return [{"ok": True, "wall_s": t, "cpu_s": t, "mem_mb": 1.0, "rss_mb": 1.0, "hugetlb_mb": 0.0,
             "huge_pct": 0.0, "state": state} for t in times]


def results(a, b, base=(4.0, 4.1, 3.9, 4.0, 4.2)):
    """Both workloads: glibc's times `base`, contender a's and b's as given."""
    return {w[0]: {"glibc-h0": runs(base), "a": runs(a), "b": runs(b)} for w in WLS}


class PairInterval(unittest.TestCase):
    def test_equal_spreads_are_not_separated(self):
        r = results([2.0, 2.6, 1.7, 2.4, 2.1], [2.1, 2.5, 1.8, 2.3, 2.0])
        iv = rb.pair_interval(r, "a", "b", WLS, "speedup", random.Random(1))
        self.assertLess(iv[1], 1.0)
        self.assertGreater(iv[2], 1.0)
        self.assertFalse(rb.separated(iv))

    def test_a_twice_as_fast_is_separated(self):
        r = results([1.0, 1.05, 0.95, 1.02, 0.98], [2.0, 2.1, 1.9, 2.05, 1.95])
        ratio, lo, hi = rb.pair_interval(r, "a", "b", WLS, "speedup", random.Random(1))
        self.assertAlmostEqual(ratio, 2.0, delta=0.01)
        self.assertGreater(lo, 1.5)
        self.assertTrue(rb.separated((ratio, lo, hi)))
        # the other way round: b is half as fast
        ratio, lo, hi = rb.pair_interval(r, "b", "a", WLS, "speedup", random.Random(1))
        self.assertAlmostEqual(ratio, 0.5, delta=0.01)
        self.assertLess(hi, 1.0)

    def test_cpu_time_is_its_own_measure(self):
        r = results([1.0] * 5, [1.0] * 5)
        for w in r.values():
            for x in w["a"]:
                x["cpu_s"] = 0.5
        self.assertAlmostEqual(rb.pair_interval(r, "a", "b", WLS, "cpu_speedup", random.Random(1))[0], 2.0)
        self.assertAlmostEqual(rb.pair_interval(r, "a", "b", WLS, "speedup", random.Random(1))[0], 1.0)

    def test_missing_runs_give_no_interval(self):
        r = results([1.0] * 5, [1.0] * 5)
        r["w2"]["b"] = []
        self.assertIsNone(rb.pair_interval(r, "a", "b", WLS, "speedup", random.Random(1)))
        self.assertFalse(rb.separated(None))


NOISY = [1.0, 1.3, 0.7, 1.25, 0.75]  # a spread of +-30% around the median
TIGHT = [1.0, 1.01, 0.99, 1.0, 1.0]


def two_passes(spread, a1, b1, a2, b2):
    """The first pass's and the second's results: a and b at these medians, each with the spread."""
    return (results([x * a1 for x in spread], [x * b1 for x in spread]),
            results([x * a2 for x in spread], [x * b2 for x in spread]))


class SeedCheck(unittest.TestCase):
    def verdict(self, passes):
        first, second = passes
        return rb.seed_check(first, {"seed": 2, "runs": second}, CONTS, WLS, 0.05)

    def test_a_flip_within_the_noise_is_a_tie(self):
        # a 10% faster in pass 1, b 10% faster in pass 2, each inside the noise
        lines = self.verdict(two_passes(NOISY, 2.0, 2.2, 2.2, 2.0))
        self.assertIn("the rankings agree beyond the runs' spread (by the 5% rule alone they disagree)", lines[0])
        self.assertIn("tied within the runs' spread: A vs B", lines[0])
        self.assertTrue(any(x.startswith("| cold | wall time | A vs B |") for x in lines))

    def test_a_flip_beyond_the_noise_disagrees(self):
        lines = self.verdict(two_passes(TIGHT, 2.0, 2.4, 2.4, 2.0))
        self.assertIn("the rankings DISAGREE:", lines[0])
        self.assertIn("cold by wall time DISAGREE", lines[0])

    def test_the_same_order_agrees_without_a_table(self):
        lines = self.verdict(two_passes(TIGHT, 2.0, 2.4, 2.1, 2.5))
        self.assertIn("the rankings agree:", lines[0])
        self.assertFalse(any("| pair |" in x for x in lines))

    def test_the_report_is_the_same_for_the_same_runs(self):
        passes = two_passes(NOISY, 2.0, 2.2, 2.2, 2.0)
        self.assertEqual(self.verdict(passes), self.verdict(passes))

class CellIntervals(unittest.TestCase):
    """summarize: every speed-up cell over glibc h0 carries its own bootstrap interval."""

    def summary(self, a, b):
        return rb.summarize(results(a, b), CONTS, WLS)["w1"]

    def test_a_clear_win_excludes_one_and_a_tie_holds_it(self):
        s = self.summary([x * 2.0 for x in TIGHT], [x * 4.0 for x in NOISY])
        lo, hi = s["a"]["speedup_ci"]
        self.assertAlmostEqual(s["a"]["speedup"], 2.0, delta=0.05)
        self.assertTrue(1.5 < lo <= s["a"]["speedup"] <= hi < 2.5)
        lo, hi = s["b"]["cpu_speedup_ci"]
        self.assertTrue(lo < 1.0 < hi)

    def test_cpu_and_wall_are_resampled_apart(self):
        r = results([1.0] * 5, [1.0] * 5)
        for x in r["w1"]["a"]:
            x["cpu_s"] = 2.0
        a = rb.summarize(r, CONTS, WLS)["w1"]["a"]
        self.assertAlmostEqual(a["speedup_ci"][0], 4.0, delta=0.3)
        self.assertAlmostEqual(a["cpu_speedup_ci"][1], 2.0, delta=0.15)

    def test_glibc_itself_and_a_rating_get_none(self):
        s = self.summary(TIGHT, TIGHT)
        self.assertNotIn("speedup_ci", s["glibc-h0"])
        wls = [("w1", "real", ["true"], {"metric": "mips"})]
        r = {"w1": {c: [dict(x, mips=100.0, mips_ru=100.0) for x in runs(TIGHT)] for c in ("glibc-h0", "a", "b")}}
        self.assertNotIn("speedup_ci", rb.summarize(r, CONTS, wls)["w1"]["a"])

    def test_the_small_goal_names_the_slowest_workloads_interval(self):
        conts = [("glibc-h0", "glibc h0", None, {}), ("hpm-h0", "hpmalloc h0", None, {})]
        wls = [("s1", "small", ["true"], {}), ("s2", "small", ["true"], {})]
        r = {"s1": {"glibc-h0": runs([4.0] * 5), "hpm-h0": runs([2.0] * 5)},
             "s2": {"glibc-h0": runs([4.0, 4.4, 3.6, 4.2, 3.8]), "hpm-h0": runs([4.0, 4.4, 3.6, 4.2, 3.8])}}
        line = rb.goals(rb.summarize(r, conts, wls), wls, conts)[0]
        self.assertIn("slowest s2 1.00x (95% interval 0.", line)
        self.assertRegex(line, r"interval 0\.\d\d–1\.\d\d\)")

    def test_the_build_phase_has_its_table(self):
        r = results([1.0] * 5, [2.0] * 5)
        for w in r.values():
            for c, t in (("glibc-h0", 3.0), ("a", 1.0), ("b", 1.5)):
                for x in w[c]:
                    x.update(prog_build_s=t, prog_walk_s=t / 3)
        lines = rb.state_tables(rb.sections(r, CONTS, WLS)[0], CONTS)
        at = lines.index("### The build phase alone (s; median) and its speed-up")
        self.assertIn("| w1 | 3.000 (1.00x) | 1.000 (3.00x) | 1.500 (2.00x) |", lines[at:])
        self.assertIn("| w1 | 1.00 | 4.00 (", "\n".join(lines))

    def test_the_build_phase_goal_against_jemalloc(self):
        conts = [("glibc-h0", "glibc h0", None, {}), ("hpm-h1", "hpmalloc h1", None, {}),
                 ("je-thp", "jemalloc thp", None, {})]
        wls = [("graph-1t", "tlb", ["true"], {}), ("blocks-2m", "tlb", ["true"], {})]
        for hpm, verdict in ((1.05, "**met**"), (1.15, "**missed**")):
            # blocks-2m, which BUILD_GOAL_WORKLOADS does not name, is shown at 1.50x and does not decide
            r = {w[0]: {c: [dict(x, prog_build_s=t if c != "hpm-h1" or w[0] == "graph-1t" else 1.5)
                            for x in runs(TIGHT)]
                        for c, t in (("glibc-h0", 3.0), ("hpm-h1", hpm), ("je-thp", 1.0))} for w in wls}
            line = [g for g in rb.goals(rb.summarize(r, conts, wls), wls, conts) if g.startswith("Build phase")]
            self.assertEqual(len(line), 1)
            self.assertIn("on graph-1t: " + verdict, line[0])
            self.assertIn("graph-1t %.2fx its time" % hpm, line[0])
            self.assertIn("not in the goal: blocks-2m 1.50x", line[0])

    def test_the_small_object_speed_bounds(self):
        conts = [("glibc-h0", "glibc h0", None, {}), ("hpm-h0", "hpmalloc h0", None, {}), ("je", "jemalloc", None, {})]
        wls = [("larson", "small", ["true"], {}), ("xmalloc", "small", ["true"], {}), ("s3", "small", ["true"], {}),
               ("python3", "real", ["true"], {})]

        def lines(hpm, je_py=2.0, mem=1.0):
            r = {w[0]: {"glibc-h0": runs([4.0] * 5), "je": runs([4.0 / je_py] * 5),
                        "hpm-h0": [dict(x, mem_mb=mem) for x in runs([4.0 / hpm[w[0]]] * 5)]} for w in wls}
            return [g for g in rb.goals(rb.summarize(r, conts, wls), wls, conts) if "Speed bounds" in g or g.startswith("  ")]

        ok = lines({"larson": 2.5, "xmalloc": 3.0, "s3": 1.1, "python3": 2.5})
        self.assertEqual(ok[0], "Speed bounds, python3, hpm-h0 at least as fast as jemalloc: **met** (1.25x jemalloc's speed)")
        self.assertIn("geometric mean 2.02x (goal >= 1.60x), none below 1.00x: **met**", ok[1])
        self.assertEqual(ok[2], "  larson and xmalloc >= 2.00x: **met** (larson 2.50x, xmalloc 3.00x)")
        self.assertIn("2 MB of glibc h0's on every small workload: **met**", ok[3])
        self.assertEqual(len(ok), 4, "no memory line for a mode whose glibc did not run")
        bad = lines({"larson": 1.9, "xmalloc": 3.0, "s3": 0.9, "python3": 1.5}, mem=3.5)
        self.assertIn("**missed** (0.75x", bad[0])
        self.assertIn("none below 1.00x (below: s3 0.90x): **missed**", bad[1])
        self.assertIn("**missed** (larson 1.90x", bad[2])
        self.assertIn("**missed**; over on larson 4 vs 1 MB", bad[3])
        # python3 without the small group still gets its line
        real = [w for w in wls if w[1] == "real"]
        r = {"python3": {"glibc-h0": runs([4.0] * 5), "je": runs([2.0] * 5), "hpm-h0": runs([1.6] * 5)}}
        self.assertEqual([g for g in rb.goals(rb.summarize(r, conts, real), real, conts) if "Speed bounds" in g],
                         ["Speed bounds, python3, hpm-h0 at least as fast as jemalloc: **met** (1.25x jemalloc's speed)"])
        # 10% or 2 MB, the larger: 2.9 MB against 1 MB is within 2 MB
        self.assertIn("**met**", lines({"larson": 2.5, "xmalloc": 3.0, "s3": 1.1, "python3": 2.5}, mem=2.9)[3])

    def test_the_same_runs_give_the_same_interval(self):
        a, b = [x * 2.0 for x in NOISY], NOISY
        self.assertEqual(self.summary(a, b)["a"]["speedup_ci"], self.summary(a, b)["a"]["speedup_ci"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
