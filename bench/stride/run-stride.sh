#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# run-stride.sh STRIDE_BIN: the stride microbenchmarks under base pages, THP
# and hugetlbfs, interleaved and repeated; writes the medians as markdown
# tables to $OUT.  MIT licence.  See bench/stride/README.md.
#
# Environment (defaults in brackets):
#   REPS [5]          repetitions; in each, every test runs once per backing,
#                     the order of the backings rotated from one rep to the next
#   OUT  [dir of STRIDE_BIN/stride.md]   the tables
#   RAW  [dir of STRIDE_BIN/raw.txt] every key=value line, as measured
#   SEQ_MB [16] MAX_SPAN [4096] SEQ_MS [100]   test 1 (ms: per span)
#   SEG_REGION [4G] SEG_MS [300]               test 2 (ms: per mode)
#   SEG_STRIDES ["256M+4K@4G 2M+4K@1G 2M+4K@4G 2M+4K+64@2G 2M+4K+64@4G"]
#                     stride@region rows of test 2
#   POOL [1]          as root, raise /proc/sys/vm/nr_hugepages to what the
#                     hugetlb runs need and restore it on exit; 0 leaves it
set -u
bin=${1:?usage: run-stride.sh STRIDE_BIN}
REPS=${REPS:-5}
OUT=${OUT:-$(dirname "$bin")/stride.md}
RAW=${RAW:-$(dirname "$bin")/raw.txt}
SEQ_MB=${SEQ_MB:-16}; MAX_SPAN=${MAX_SPAN:-4096}; SEQ_MS=${SEQ_MS:-100}
SEG_MS=${SEG_MS:-300}
SEG_STRIDES=${SEG_STRIDES:-"256M+4K@4G 2M+4K@1G 2M+4K@4G 2M+4K+64@2G 2M+4K+64@4G"}
POOL=${POOL:-1}
backings=(base thp hugetlb)

[ -x "$bin" ] || { echo "run-stride.sh: $bin is not built" >&2; exit 2; }
mkdir -p "$(dirname "$RAW")" "$(dirname "$OUT")"
: > "$RAW"
started=$(date +%s)

# ---- the hugetlb pool -------------------------------------------------------
hsz_kb=$(awk '/^Hugepagesize:/ {print $2}' /proc/meminfo)
hdir=/sys/kernel/mm/hugepages/hugepages-${hsz_kb}kB
pool=/proc/sys/vm/nr_hugepages
free_pages() { cat "$hdir/free_hugepages" 2>/dev/null || echo 0; }

need=0
plan() {   # plan ARGS...: hugetlb pages one run needs
  "$bin" "$@" -n | sed -n 's/.*hugetlb_pages=\([0-9]*\).*/\1/p'
}
n=$(plan seq hugetlb -m "$SEQ_MB"); [ "${n:-0}" -gt "$need" ] && need=$n
for sr in $SEG_STRIDES; do
  n=$(plan seg hugetlb -s "${sr%@*}" -r "${sr#*@}"); [ "${n:-0}" -gt "$need" ] && need=$n
done

pool_old=""; pool_set=""; pool_added=0; pool_note=""
restore_pool() {
  [ -n "$pool_old" ] || return 0
  local cur; cur=$(cat "$pool")
  if [ "$cur" = "$pool_set" ]; then
    echo "$pool_old" > "$pool"
  else
    # someone else changed the pool meanwhile: take back only our pages
    local back=$(( cur - pool_added )); [ "$back" -lt 0 ] && back=0
    echo "run-stride.sh: nr_hugepages changed to $cur while we ran; setting $back" >&2
    echo "$back" > "$pool"
  fi
  echo "run-stride.sh: nr_hugepages restored to $(cat "$pool")" >&2
  pool_old=""
}
trap restore_pool EXIT
trap 'exit 130' INT TERM

have=$(free_pages)
if [ "$have" -ge "$need" ]; then
  pool_note="the pool already had $have free pages of $hsz_kb kB (needed $need)"
elif [ "$POOL" = 1 ] && [ "$(id -u)" = 0 ] && [ -w "$pool" ]; then
  pool_old=$(cat "$pool")
  pool_set=$(( pool_old + need - have ))
  echo "$pool_set" > "$pool" 2>/dev/null
  got=$(cat "$pool")
  pool_added=$(( got - pool_old ))
  pool_set=$got
  pool_note="nr_hugepages raised from $pool_old to $got for the run (needed $need free pages of $hsz_kb kB), restored afterwards"
else
  why="needs root"; [ "$POOL" = 1 ] || why="POOL=0"
  pool_note="the pool has $have free pages of $hsz_kb kB, $need needed, and it was not raised ($why)"
fi
echo "run-stride.sh: $pool_note" >&2

# ---- the runs ---------------------------------------------------------------
# run TAG NEEDED ARGS...: one run of the binary, its lines tagged for the
# tables; a hugetlb run the pool cannot hold is recorded as n/a.
run() {
  local tag=$1 needed=$2 b=$3; shift 3
  if [ "$b" = hugetlb ] && [ "$(free_pages)" -lt "$needed" ]; then
    echo "$tag backing=hugetlb error=no-pool free=$(free_pages) needed=$needed" >> "$RAW"
    return
  fi
  local out rc
  out=$("$bin" "$@" 2>&1); rc=$?
  [ $rc -eq 0 ] || echo "run-stride.sh: $bin $* exited $rc: $out" >&2
  grep '^test=' <<<"$out" | sed "s/^/$tag rc=$rc /" >> "$RAW"
}

seq_need=$(plan seq hugetlb -m "$SEQ_MB")
for ((r = 0; r < REPS; r++)); do
  order=("${backings[@]:r%3}" "${backings[@]:0:r%3}")
  echo "run-stride.sh: rep $((r + 1))/$REPS, order ${order[*]} ($(( $(date +%s) - started )) s)" >&2
  for b in "${order[@]}"; do
    run "row=seq rep=$r" "$seq_need" "$b" seq "$b" -m "$SEQ_MB" -x "$MAX_SPAN" -t "$SEQ_MS"
  done
  for sr in $SEG_STRIDES; do
    n=$(plan seg hugetlb -s "${sr%@*}" -r "${sr#*@}")
    for b in "${order[@]}"; do
      run "row=seg:$sr rep=$r" "$n" "$b" seg "$b" -s "${sr%@*}" -r "${sr#*@}" -t "$SEG_MS"
    done
  done
done
elapsed=$(( $(date +%s) - started ))
restore_pool

# ---- the tables -------------------------------------------------------------
# Reads RAW; prints markdown.  For each (row, key, backing): the median of
# the values, and +-half the min..max range as a percentage of the median.
tables() {
  awk -v reps="$REPS" '
  function kv(name,   i, f) {
    for (i = 1; i <= NF; i++) { split($i, f, "="); if (f[1] == name) return substr($i, length(name) + 2) }
    return ""
  }
  function sortv(a, n,   i, j, t) {
    for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
  }
  function add(key, v) { cnt[key]++; val[key, cnt[key]] = v + 0 }
  function med(key,   n, i, a) {
    n = cnt[key]; if (!n) return ""
    for (i = 1; i <= n; i++) a[i] = val[key, i]
    sortv(a, n)
    mlo[key] = a[1]; mhi[key] = a[n]
    return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  function cell(key, na,   m, pm) {
    m = med(key)
    if (m == "") return na
    pm = (m > 0) ? 50 * (mhi[key] - mlo[key]) / m : 0
    return sprintf("%.2f ±%.0f%%", m, pm)
  }
  function ratio(k1, k0,   a, b) {
    a = med(k1); b = med(k0)
    if (a == "" || b == "" || b == 0) return "–"
    return sprintf("%.2f", a / b)
  }
  function na(row, b) {
    if ((row, b) in nopool) return "n/a (no pool)"
    if ((row, b) in failed) return "n/a (failed)"
    return "–"
  }
  {
    row = kv("row"); b = kv("backing")
    if (kv("error") == "no-pool" || kv("error") == "pool-dry") { nopool[row, b] = 1; next }
    if (kv("error") != "" || kv("ok") != "1") { failed[row, b] = 1; if (kv("ok") == "0") badsum++; next }
    runs[b]++
    pct = kv("huge_pct") + 0
    if (!(b in pmin) || pct < pmin[b]) pmin[b] = pct
    if (!(b in pmax) || pct > pmax[b]) pmax[b] = pct
    if (row == "seq") {
      sp = kv("span"); spans[sp] = 1; sbytes[sp] = kv("stride_bytes")
      add("seq" SUBSEP sp SUBSEP b, kv("ns"))
      if (sp == 1) add("fill" SUBSEP b, kv("fill_ns_per_kb"))
    } else {
      m = kv("mode"); segrow[row] = 1; pages[row] = kv("pages")
      add(row SUBSEP m SUBSEP b, kv("ns"))
      if (m == "sum") add("fault" SUBSEP row SUBSEP b, kv("fault_us_per_page"))
    }
  }
  END {
    print "## 1. 16 MB of sequential numbers summed with spans (Nick Craig-Wood, Linux 2.6.0)"
    print ""
    print "Nanoseconds per element (each pass reads every element once, in span order)."
    print "Ratios are time/time: below 1 the huge pages are faster than base pages."
    print ""
    print "| span (elements) | stride | base 4 KiB | THP 2 MiB | hugetlb 2 MiB | THP/base | hugetlb/base |"
    print "|---:|---:|---:|---:|---:|---:|---:|"
    for (sp = 1; sp in spans; sp *= 2) {
      st = sbytes[sp] + 0
      sts = (st >= 1024) ? (st / 1024 " KiB") : (st " B")
      k0 = "seq" SUBSEP sp SUBSEP "base"; k1 = "seq" SUBSEP sp SUBSEP "thp"; k2 = "seq" SUBSEP sp SUBSEP "hugetlb"
      printf "| %d | %s | %s | %s | %s | %s | %s |\n", sp, sts,
        cell(k0, na("seq", "base")), cell(k1, na("seq", "thp")), cell(k2, na("seq", "hugetlb")),
        ratio(k1, k0), ratio(k2, k0)
    }
    print ""
    printf "Filling the array (first touch, includes page faults), ns per KiB: base %s, THP %s, hugetlb %s.\n",
      cell("fill" SUBSEP "base", "–"), cell("fill" SUBSEP "thp", "–"), cell("fill" SUBSEP "hugetlb", na("seq", "hugetlb"))
    print ""
    print "## 2. Segment-stress stride (Anton Blanchard, POWER: 12.51 s → 1.70 s with 1 TiB segments)"
    print ""
    print "One cache line every *stride* bytes across a MAP_NORESERVE region, swept repeatedly;"
    print "nanoseconds per access.  *sum*: independent loads (overlapped by the CPU);"
    print "*chase*: each load yields the next address (latency).  256 MiB + 4 KiB puts each"
    print "access in its own POWER segment; 2 MiB + 4 KiB is the x86_64 analogue, each access in"
    print "its own huge page (and, with base pages, its own page-table page).  Both put every line"
    print "at the same offset in its 4 KiB page, so all of them share one L1 set and a few L2 sets."
    print "2 MiB + 4 KiB + 64 (not in the seeds) moves each line to the next cache line of its"
    print "page: the lines spread over the caches and what differs between backings is translation."
    print ""
    print "| stride | region | lines (pages) touched | loads | base 4 KiB | THP 2 MiB | hugetlb 2 MiB | THP/base | hugetlb/base |"
    print "|---:|---:|---:|---|---:|---:|---:|---:|---:|"
    nr = split(segorder, ord, " ")
    for (i = 1; i <= nr; i++) {
      row = "seg:" ord[i]
      if (!(row in segrow)) continue
      split(ord[i], sr, "@")
      for (mi = 1; mi <= 2; mi++) {
        m = (mi == 1) ? "sum" : "chase"
        k0 = row SUBSEP m SUBSEP "base"; k1 = row SUBSEP m SUBSEP "thp"; k2 = row SUBSEP m SUBSEP "hugetlb"
        printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
          (mi == 1) ? sr[1] : "", (mi == 1) ? sr[2] : "", (mi == 1) ? pages[row] : "", m,
          cell(k0, na(row, "base")), cell(k1, na(row, "thp")), cell(k2, na(row, "hugetlb")),
          ratio(k1, k0), ratio(k2, k0)
      }
    }
    print ""
    print "First touch of the lines (page fault, zeroing), microseconds per touched page:"
    print ""
    print "| stride | region | base 4 KiB | THP 2 MiB | hugetlb 2 MiB |"
    print "|---:|---:|---:|---:|---:|"
    for (i = 1; i <= nr; i++) {
      row = "seg:" ord[i]
      if (!(row in segrow)) continue
      split(ord[i], sr, "@")
      printf "| %s | %s | %s | %s | %s |\n", sr[1], sr[2],
        cell("fault" SUBSEP row SUBSEP "base", na(row, "base")), cell("fault" SUBSEP row SUBSEP "thp", na(row, "thp")),
        cell("fault" SUBSEP row SUBSEP "hugetlb", na(row, "hugetlb"))
    }
    print ""
    print "## Checks"
    print ""
    printf "- Checksums: %s.\n", badsum ? badsum " measurement(s) printed a wrong sum (ok=0): those runs are left out" : "every measurement printed ok=1 (its sum matched the expected value)"
    split("base thp hugetlb", bs, " ")
    for (i = 1; i <= 3; i++) {
      b = bs[i]
      if (!(b in runs)) { printf "- %s: no run measured.\n", b; continue }
      printf "- %s: %d measurements; huge pages (/proc/self/smaps, after the first touch) covered %.0f%% to %.0f%% of the huge-page-sized blocks the run touched.\n",
        b, runs[b], pmin[b], pmax[b]
    }
    for (k in failed) { split(k, f, SUBSEP); printf "- %s under %s failed (see the raw lines).\n", f[1], f[2] }
  }' segorder="$SEG_STRIDES" "$RAW"
}

thp_en=$(sed -n 's/.*\[\(.*\)\].*/\1/p' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)
thp_df=$(sed -n 's/.*\[\(.*\)\].*/\1/p' /sys/kernel/mm/transparent_hugepage/defrag 2>/dev/null)
cpu=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)
fam=$(awk -F': ' '/^cpu family/ {print $2; exit}' /proc/cpuinfo)
model=$(awk -F': ' '/^model[ \t]*:/ {print $2; exit}' /proc/cpuinfo)
virt=$(grep -qw hypervisor /proc/cpuinfo && echo ", virtual machine")
ncpu=$(getconf _NPROCESSORS_ONLN)
mem_gb=$(awk '/^MemTotal:/ {printf "%.0f", $2 / 1048576}' /proc/meminfo)
{
  echo "# Stride microbenchmarks: base pages, THP, hugetlbfs"
  echo ""
  echo "Generated by \`bench/stride/run-stride.sh\`; do not edit by hand."
  echo ""
  echo "- Machine: Linux $(uname -r) $(uname -m); $cpu (family $fam, model $model$virt); $ncpu CPUs; $mem_gb GiB RAM"
  echo "- THP: enabled [$thp_en], defrag [$thp_df], PMD $(( $(cat /sys/kernel/mm/transparent_hugepage/hpage_pmd_size 2>/dev/null || echo 0) >> 10 )) KiB; hugetlb: $pool_note"
  echo "- Date: $(date -u '+%Y-%m-%d %H:%M UTC'); the run took $elapsed s"
  echo "- Command: \`make bench-stride\` → \`REPS=$REPS SEQ_MB=$SEQ_MB MAX_SPAN=$MAX_SPAN SEQ_MS=$SEQ_MS SEG_MS=$SEG_MS SEG_STRIDES='$SEG_STRIDES' bash bench/stride/run-stride.sh $bin\`"
  echo "- Each cell: the median of $REPS run(s), ± half their min–max range as a percentage of the median. The backings run interleaved (in each repetition every test runs once per backing), their order rotated between repetitions. Timing: clock_gettime(CLOCK_MONOTONIC)."
  echo ""
  tables
} > "$OUT"
echo "run-stride.sh: wrote $OUT ($elapsed s; raw lines in $RAW)" >&2
cat "$OUT"
