#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Print line and branch coverage per directory from an lcov tracefile.
#   coverage-summary.sh FILE.info [TOP]     (TOP: prefix stripped from paths)
# A directory is a file's directory below TOP (sysdeps/x86_64, malloc, ...);
# the top-level directories (malloc, tunables, sysdeps, tools) get a total.
set -u
info=$1 top=${2:-$PWD}
awk -v top="$top/" '
  function pct(h, f) { return f ? sprintf("%5.1f%%", 100 * h / f) : "    -" }
  function add(d) { lf[d] += LF; lh[d] += LH; bf[d] += BRF; bh[d] += BRH; seen[d] = 1 }
  /^SF:/ { f = substr($0, 4); sub("^" top, "", f); LF = LH = BRF = BRH = 0 }
  /^LF:/ { LF = substr($0, 4) } /^LH:/ { LH = substr($0, 4) }
  /^BRF:/ { BRF = substr($0, 5) } /^BRH:/ { BRH = substr($0, 5) }
  /^end_of_record/ {
    d = f; sub("/[^/]*$", "", d); add(d)
    t = f; sub("/.*$", "", t); if (t != d) add(t "/ (all)")
    add("TOTAL")
  }
  END {
    printf "%-32s %16s %16s\n", "directory", "lines", "branches"
    n = 0; for (d in seen) if (d != "TOTAL") names[++n] = d
    for (i = 2; i <= n; i++) { v = names[i]; for (j = i - 1; j >= 1 && names[j] > v; j--) names[j + 1] = names[j]; names[j + 1] = v }
    for (i = 1; i <= n; i++) { d = names[i]
      printf "%-32s %s %9s %s %9s\n", d, pct(lh[d], lf[d]), lh[d] "/" lf[d], pct(bh[d], bf[d]), bh[d] "/" bf[d] }
    d = "TOTAL"
    printf "%-32s %s %9s %s %9s\n", d, pct(lh[d], lf[d]), lh[d] "/" lf[d], pct(bh[d], bf[d]), bh[d] "/" bf[d]
  }' "$info"
