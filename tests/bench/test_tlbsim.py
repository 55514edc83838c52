# SPDX-License-Identifier: MIT
"""bench/tlbsim.py on made-up cachegrind output: which counts it reads, the
TLB geometries it accepts, and the table it makes.  Nothing is simulated
or timed here.  MIT licence.

    python3 tests/bench/test_tlbsim.py      (make check-bench)
"""
import importlib.util
import os
import unittest

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
spec = importlib.util.spec_from_file_location("tlbsim", os.path.join(TOP, "bench", "tlbsim.py"))
ts = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ts)


def summary(pid, i, d, d1, lld, lli):
    return """==%d== I   refs:      %s
==%d== I1  misses:        1,234
==%d== LLi misses:        %s
==%d== D   refs:      %s  (810,494,367 rd   + 363,145,981 wr)
==%d== D1  misses:     %s  ( 12,892,515 rd   +     280,712 wr)
==%d== LLd misses:        %s  (    833,777 rd   +      43,512 wr)
""" % (pid, i, pid, pid, lli, pid, d, pid, d1, pid, lld)


class Parse(unittest.TestCase):
    def test_reads_every_count(self):
        c = ts.parse_summary(summary(7, "2,952,024,476", "1,173,640,348", "13,173,227", "877,289", "12"))
        self.assertEqual(c, {"instructions": 2952024476, "data_refs": 1173640348, "l1_misses": 13173227,
                             "walks": 877289, "code_walks": 12})

    def test_the_last_process_counts(self):
        # with --trace-children, env's summary comes first and the program's last
        text = summary(7, "1,000", "500", "10", "3", "1") + summary(7, "9,000", "4,000", "90", "30", "2")
        c = ts.parse_summary(text)
        self.assertEqual(c["instructions"], 9000)
        self.assertEqual(c["walks"], 30)

    def test_a_missing_line_is_an_error(self):
        text = summary(7, "1,000", "500", "10", "3", "1").replace("LLd misses", "LLd somethings")
        with self.assertRaises(ValueError) as cm:
            ts.parse_summary(text)
        self.assertIn("walks", str(cm.exception))


class Geometry(unittest.TestCase):
    def test_accepts_power_of_two_sets(self):
        self.assertEqual(ts.geometry("1536,12", "l2"), (1536, 12))  # 128 sets
        self.assertEqual(ts.geometry("64,4", "l1"), (64, 4))
        self.assertEqual(ts.cache_arg(64, 4), "262144,4,4096")

    def test_refuses_what_cachegrind_would(self):
        for bad in ("48,4", "64", "x,4", "0,4", "64,0", "64,3"):
            with self.assertRaises(SystemExit, msg=bad):
                ts.geometry(bad, "l1")


class Table(unittest.TestCase):
    def row(self, name, walks):
        return {"name": name, "label": name.upper(), "counts": {
            "instructions": 100, "data_refs": 2000, "l1_misses": 50, "walks": walks, "code_walks": 0}}

    def test_ratio_against_the_base(self):
        lines = ts.table([self.row("glibc-h0", 40), self.row("hpm-h0", 30)], "glibc-h0")
        self.assertIn("walks vs GLIBC-H0", lines[0])
        self.assertTrue(lines[2].endswith("| 40 | 20.000 | 1.00 |"))
        self.assertTrue(lines[3].endswith("| 30 | 15.000 | 0.75 |"))

    def test_no_base_no_ratio(self):
        lines = ts.table([self.row("hpm-h0", 30)], "glibc-h0")
        self.assertTrue(lines[2].endswith("| - |"))


if __name__ == "__main__":
    unittest.main()
