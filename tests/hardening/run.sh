#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# check-hardening: see tests/hardening/README.md.  Each check prints
# PASS, FAIL or SKIP (with the reason) and the summary goes to
# $BUILD/summary/hardening.txt.
set -u
BUILD=${BUILD:-build}
case $BUILD in /*) root=$BUILD ;; *) root=$PWD/$BUILD ;; esac
lib=$root/lib/libhpmalloc.so
bin=$root/tests/hardening
pass=0; fail=0; skip=0
ok()   { echo "PASS  $*"; pass=$((pass+1)); }
bad()  { echo "FAIL  $*"; fail=$((fail+1)); }
skp()  { echo "SKIP  $*"; skip=$((skip+1)); }

# run NAME CMD...: PASS when CMD exits 0 (and its last line contains
# $want when that is set); its output is shown on failure.
run() {
  local name=$1; shift
  local out
  if out=$("$@" 2>&1) && [[ "$(tail -n 1 <<<"$out")" == *"${want:-}"* ]]; then ok "$name: $(tail -n 1 <<<"$out")"
  else bad "$name${want:+ (wanted '$want')}"; sed 's/^/      /' <<<"$out"; fi
}

# --- misuse: glibc's messages, checked on glibc itself first ------------
# The cases' set-ups assume glibc's tcache (seven per bin, up to 1032
# bytes): hpmalloc runs them with those tunables, which reach the arena's
# checks exactly as on glibc; then with its own cache (its default, -a),
# where each case names what catches it there.
glibc_tcache=glibc.malloc.tcache_count=7:glibc.malloc.tcache_max=1032
for t in "" -t; do
  where=${t:+, in a second thread}
  want="allocator glibc" run "misuse on glibc$where (validates the expected messages)" "$bin/misuse" $t
  for m in 0 1 2; do
    want="allocator hpmalloc" run "misuse, hpmalloc preloaded with glibc's tcache, hugetlb=$m$where" \
      env GLIBC_TUNABLES=glibc.malloc.hugetlb=$m:$glibc_tcache LD_PRELOAD="$lib" "$bin/misuse" $t
    want="allocator hpmalloc" run "misuse, hpmalloc preloaded with its own cache, hugetlb=$m$where" \
      env GLIBC_TUNABLES=glibc.malloc.hugetlb=$m LD_PRELOAD="$lib" "$bin/misuse" -a $t
  done
  want="allocator hpmalloc" run "misuse, hpmalloc linked statically, glibc's tcache$where" \
    env GLIBC_TUNABLES=$glibc_tcache "$bin/misuse-static" $t
  want="allocator hpmalloc" run "misuse, hpmalloc linked statically, its own cache$where" "$bin/misuse-static" -a $t
done

# --- hostile tunables: only what they validly set changes ------------------
probe=$bin/tunables_probe
# the probe's parameters, without the line naming the variables it saw
params() { grep -v '^seen='; }
base=$(env -i "$probe" | params)
probe_ok=1
if ! grep -q '^tcache_count=7$' <<<"$base" || ! grep -q '^secure=0$' <<<"$base"; then
  bad "tunables: the probe ($probe) did not print the defaults: '$base'"
  probe_ok=0
fi
long_x=$(head -c 100000 /dev/zero | tr '\0' x)
long_0=$(head -c 99990 /dev/zero | tr '\0' 0)
long_a=$(head -c 100000 /dev/zero | tr '\0' a)
max64=18446744073709551615

# tunable NAME "field=value ..." ENTRY...: run the probe with exactly the
# envp ENTRYs; every parameter must equal the baseline's except the fields
# listed, which must have the values given; stderr must be empty.
tunable() {
  local name=$1 changes=$2; shift 2
  local want=$base f args=()
  for f in $changes; do
    grep -q "^${f%%=*}=" <<<"$want" || { bad "tunables, $name: no field ${f%%=*}"; return; }
    want=$(sed "s/^${f%%=*}=.*/$f/" <<<"$want")
  done
  for f in "$@"; do args+=(-e "$f"); done
  [ "$probe_ok" = 1 ] || { bad "tunables, $name: no baseline"; return; }
  local got err rc
  got=$("$probe" "${args[@]}" -- 2>"$bin/tunables.err"); rc=$?
  got=$(params <<<"$got")
  err=$(cat "$bin/tunables.err")
  if [ "$rc" = 0 ] && [ "$got" = "$want" ] && [ -z "$err" ]; then ok "tunables, $name: ${changes:-nothing changed}"
  else bad "tunables, $name: wanted changes '${changes}'"; diff <(echo "$want") <(echo "$got") | sed 's/^/      /'
    [ -n "$err" ] && echo "      stderr: $err"; fi
}

tunable "100 kB of junk before a valid entry" "tcache_count=3" "GLIBC_TUNABLES=$long_x:glibc.malloc.tcache_count=3"
tunable "a 100 kB value (leading zeros: octal)" "perturb=7" "GLIBC_TUNABLES=glibc.malloc.perturb=${long_0}7"
tunable "a 100 kB name" "arena_test=5" "GLIBC_TUNABLES=glibc.malloc.$long_a=5:glibc.malloc.arena_test=5"
tunable "a name without '=' ends the string" "" "GLIBC_TUNABLES=glibc.malloc.mmap_max"
tunable "unterminated pairs around a valid one" "arena_test=5" \
  "GLIBC_TUNABLES=glibc.malloc.mmap_max=:glibc.malloc.arena_test=5:glibc.malloc.perturb"
tunable "a repeated name: the last wins" "tcache_count=9" \
  "GLIBC_TUNABLES=glibc.malloc.tcache_count=1:glibc.malloc.tcache_count=2:malloc.tcache_count=9"
tunable "two GLIBC_TUNABLES variables apply in order" "tcache_count=4 perturb=3" \
  "GLIBC_TUNABLES=glibc.malloc.tcache_count=4:glibc.malloc.perturb=1" "GLIBC_TUNABLES=glibc.malloc.perturb=3"
tunable "a repeated alias: the first valid one wins" "arena_max=2" \
  MALLOC_ARENA_MAX=abc MALLOC_ARENA_MAX=2 MALLOC_ARENA_MAX=7
tunable "numbers past 2^64" "" \
  "GLIBC_TUNABLES=glibc.malloc.top_pad=18446744073709551616:glibc.malloc.mmap_threshold=0x10000000000000000:glibc.malloc.trim_threshold=99999999999999999999999" \
  MALLOC_ARENA_TEST=18446744073709551617 MALLOC_MMAP_MAX_=0x1ffffffffffffffff
tunable "2^64-1 is a valid size" "trim_threshold=$max64 no_dyn_threshold=1" "MALLOC_TRIM_THRESHOLD_=$max64"
tunable "-1 wraps to 2^64-1 for a size, as glibc" "trim_threshold=$max64 no_dyn_threshold=1" "MALLOC_TRIM_THRESHOLD_=-1"
tunable "negative int32 and count values are ignored" "" \
  "GLIBC_TUNABLES=glibc.malloc.mmap_max=-1:glibc.malloc.perturb=-5:glibc.malloc.tcache_count=-1:hpmalloc.huge_waste=-1"
tunable "empty values" "" "GLIBC_TUNABLES=" MALLOC_ARENA_MAX= MALLOC_TOP_PAD_= "HPMALLOC_VERBOSE="
tunable "empty names and entries" "" "GLIBC_TUNABLES=:::" "GLIBC_TUNABLES==:=5:glibc.malloc.tcache_count="
tunable "entries without '='" "" GLIBC_TUNABLES MALLOC_ARENA_MAX HPMALLOC_VERBOSE
tunable "junk after a number" "" "GLIBC_TUNABLES=glibc.malloc.tcache_count=5=6:glibc.malloc.perturb=12x:glibc.malloc.arena_test= 12 " \
  "MALLOC_TOP_PAD_=4096k"
tunable "out of range by one" "" \
  "GLIBC_TUNABLES=glibc.malloc.mxfast=161:glibc.malloc.tcache_count=65536:hpmalloc.huge_waste=101:glibc.malloc.check=4:glibc.malloc.tcache_max=32761:glibc.malloc.arena_max=0"
# tcache_max=0 still caches the smallest chunk, as glibc: bins = csize2tidx(request2size(0)) + 1 = 1
tunable "the edges of the ranges" "max_fast=0 tcache_count=65535 huge_waste=100 check=3 tcache_max_bytes=24 tcache_bins=1" \
  "GLIBC_TUNABLES=glibc.malloc.mxfast=0:glibc.malloc.tcache_count=65535:hpmalloc.huge_waste=100:glibc.malloc.check=3:glibc.malloc.tcache_max=0"
tunable "GLIBC_TUNABLES wins over an alias, wherever it is" "arena_max=4" \
  "GLIBC_TUNABLES=glibc.malloc.arena_max=4" MALLOC_ARENA_MAX=6
tunable "unknown names and other namespaces" "" \
  "GLIBC_TUNABLES=glibc.malloc.nosuch=1:glibc.pthread.mutex_spin_count=5:hpmalloc.tcache_count=3:malloc:glibc.malloc.=1"
# HPMALLOC_VERBOSE=1 is valid: the start-up line and nothing else
out=$("$probe" -e HPMALLOC_VERBOSE=1 -- 2>&1 >/dev/null)
if [[ "$out" == "hpmalloc "*"hugetlb mode 0"* ]] && [ "$("$probe" -e HPMALLOC_VERBOSE=1 -- 2>/dev/null | params)" = "$base" ]; then
  ok "tunables, HPMALLOC_VERBOSE=1 prints the start-up line only"
else bad "tunables, HPMALLOC_VERBOSE=1: stderr '$out'"; fi

# --- the setuid path (AT_SECURE): the environment is ignored ----------------
suid_env=(-e MALLOC_ARENA_MAX=3 -e MALLOC_TOP_PAD_=1 -e MALLOC_MMAP_MAX_=7 -e MALLOC_PERTURB_=9
          -e MALLOC_TRIM_THRESHOLD_=5 -e MALLOC_MMAP_THRESHOLD_=4096 -e MALLOC_ARENA_TEST=2 -e MALLOC_CHECK_=1
          -e HPMALLOC_VERBOSE=1 -e "GLIBC_TUNABLES=glibc.malloc.tcache_count=1:hpmalloc.huge_waste=50:glibc.malloc.mxfast=0")
if [ "$(id -u)" != 0 ]; then
  skp "tunables, setuid: needs root to make a setuid-root copy of the probe and run it as nobody"
elif ! command -v setpriv >/dev/null; then
  skp "tunables, setuid: setpriv (util-linux) is not installed"
else
  sd=$(mktemp -d /tmp/hpmalloc-suid.XXXXXX)
  chmod 755 "$sd"
  install -m 755 -o root -g root "$probe" "$sd/plain"
  install -m 4755 -o root -g root "$probe" "$sd/setuid"
  as_nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
  nbase=$("${as_nobody[@]}" "$sd/plain" -e PATH=/usr/bin -- | params)
  control=$("${as_nobody[@]}" "$sd/plain" "${suid_env[@]}" -- 2>/dev/null | params)
  sout=$("${as_nobody[@]}" "$sd/setuid" "${suid_env[@]}" -e HPMALLOC_STATS="$sd/report" -- 2>"$sd/err")
  serr=$(cat "$sd/err")
  seen=$(sed -n 's/^seen=//p' <<<"$sout")
  sout=$(params <<<"$sout")
  if [ "$(grep -c . <<<"$(diff <(echo "$nbase") <(echo "$control") | grep '^>')")" -lt 8 ]; then
    bad "tunables, setuid: the control run (not setuid) did not take the settings"; diff <(echo "$nbase") <(echo "$control")
  elif ! grep -q '^secure=1$' <<<"$sout"; then
    bad "tunables, setuid: AT_SECURE is not set in the setuid copy: $sout"
  elif [ -z "$seen" ]; then
    skp "tunables, setuid: the loader removed every variable before hpmalloc could see it; nothing to test"
  elif [ "$(sed 's/^secure=.*//' <<<"$sout")" = "$(sed 's/^secure=.*//' <<<"$nbase")" ] && [ -z "$serr" ] && [ ! -e "$sd/report" ]; then
    ok "tunables, setuid run as nobody: AT_SECURE, the loader left ${seen%,} in the environment, hpmalloc took none of them (no start-up line, no HPMALLOC_STATS file either); the same settings change $(diff <(echo "$nbase") <(echo "$control") | grep -c '^>') parameters without setuid"
  else
    bad "tunables, setuid: the environment changed the allocator (saw ${seen%,}; stderr '$serr')"
    diff <(echo "$nbase") <(echo "$sout") | sed 's/^/      /'
  fi
  rm -rf "$sd"
fi

# --- where diagnostics go ----------------------------------------------------
# The report at exit and the verbose lines go to the stderr the process
# started with, only while descriptor 2 is still that file, or to the file
# HPMALLOC_STATS=FILE / hpmalloc.stats_file names; never into a data file
# the program opened on descriptor 2.
dd=$(mktemp -d /tmp/hpmalloc-diag.XXXXXX)
"$bin/diag" data "$dd/expected" || bad "diagnostics: the data program failed on glibc"
for how in preload static; do
  if [ $how = preload ]; then prog=("$bin/diag"); pre=(LD_PRELOAD="$lib"); else prog=("$bin/diag-static"); pre=(); fi
  for m in 0 1 2; do
    rm -f "$dd/data"
    env "${pre[@]}" HPMALLOC_STATS=1 HPMALLOC_VERBOSE=1 GLIBC_TUNABLES=glibc.malloc.hugetlb=$m "${prog[@]}" data "$dd/data"
    rc=$?
    if [ $rc = 0 ] && cmp -s "$dd/expected" "$dd/data"; then
      ok "diagnostics ($how, hugetlb=$m): stderr closed and a data file on descriptor 2: its $(stat -c %s "$dd/data") bytes intact"
    else bad "diagnostics ($how, hugetlb=$m): exit $rc, data file $(stat -c %s "$dd/data" 2>/dev/null) bytes, $(cmp "$dd/expected" "$dd/data" 2>&1)"; fi
  done
  # stderr redirected to a file, kept: the report and the verbose line are there
  env "${pre[@]}" HPMALLOC_STATS=1 HPMALLOC_VERBOSE=1 "${prog[@]}" work >"$dd/pid" 2>"$dd/err"; rc=$?
  pid=$(cat "$dd/pid")
  if [ $rc = 0 ] && grep -q "^hpmalloc .*: hugetlb mode 0" "$dd/err" && grep -q "statistics at exit of process $pid\$" "$dd/err" \
     && grep -q '^total ' "$dd/err"; then ok "diagnostics ($how): stderr redirected to a file gets the verbose line and the report"
  else bad "diagnostics ($how): stderr redirected to a file (exit $rc):"; sed 's/^/      /' "$dd/err"; fi
  # stderr closed from the start: nothing written, nothing fails
  env "${pre[@]}" HPMALLOC_STATS=1 HPMALLOC_VERBOSE=1 "${prog[@]}" work >/dev/null 2>&-; rc=$?
  if [ $rc = 0 ]; then ok "diagnostics ($how): started with stderr closed, runs"; else bad "diagnostics ($how): stderr closed: exit $rc"; fi
  # HPMALLOC_STATS=FILE with %p: one file per process, named by its pid
  rm -f "$dd"/r.*
  p1=$(env "${pre[@]}" HPMALLOC_STATS="$dd/r.%p" HPMALLOC_VERBOSE=1 "${prog[@]}" work 2>"$dd/err1")
  p2=$(env "${pre[@]}" HPMALLOC_STATS="$dd/r.%p" "${prog[@]}" work 2>>"$dd/err1")
  if [ -s "$dd/err1" ]; then bad "diagnostics ($how): HPMALLOC_STATS=FILE also wrote to stderr:"; sed 's/^/      /' "$dd/err1"
  elif [ "$(ls "$dd" | grep -c '^r\.')" = 2 ] && grep -q "statistics at exit of process $p1\$" "$dd/r.$p1" \
       && grep -q "^hpmalloc .*: hugetlb mode 0" "$dd/r.$p1" && grep -q "statistics at exit of process $p2\$" "$dd/r.$p2" \
       && ! grep -q "^hpmalloc .*: hugetlb mode" "$dd/r.$p2" && grep -q '^total ' "$dd/r.$p2" \
       && [ "$(stat -c %a "$dd/r.$p1")" = "$(printf '%o' $(( 0644 & ~0$(umask) )))" ]; then
    ok "diagnostics ($how): HPMALLOC_STATS=$dd/r.%p: r.$p1 (verbose line and report) and r.$p2 (report), mode $(stat -c %a "$dd/r.$p1")"
  else bad "diagnostics ($how): HPMALLOC_STATS=$dd/r.%p: $(ls "$dd")"; head -n 3 "$dd"/r.* | sed 's/^/      /'; fi
  # appended: two runs, one file; a relative hpmalloc.stats_file is taken from the directory of start-up
  rm -f "$dd/both"
  (cd "$dd" && env "${pre[@]}" GLIBC_TUNABLES=hpmalloc.stats_file=both "${prog[@]}" work >/dev/null 2>&1) 
  (cd "$dd" && env "${pre[@]}" HPMALLOC_STATS=./both "${prog[@]}" work >/dev/null 2>&1)
  if [ "$(grep -c 'statistics at exit of process' "$dd/both" 2>/dev/null)" = 2 ]; then
    ok "diagnostics ($how): hpmalloc.stats_file=both, then HPMALLOC_STATS=./both: two reports appended to one file"
  else bad "diagnostics ($how): two runs appending to $dd/both: $(grep -c 'statistics at exit' "$dd/both" 2>&1)"; fi
  # hpmalloc.stats=0 wins over a file
  rm -f "$dd/none"
  env "${pre[@]}" GLIBC_TUNABLES=hpmalloc.stats=0:hpmalloc.stats_file="$dd/none" "${prog[@]}" work >/dev/null 2>"$dd/err"
  if [ ! -e "$dd/none" ] && [ ! -s "$dd/err" ]; then ok "diagnostics ($how): hpmalloc.stats=0 with a file: no report"
  else bad "diagnostics ($how): hpmalloc.stats=0 with a file wrote a report"; fi
done
# a value that is neither 0/1 nor a name with a '/' creates no file, and the verbose line says why
out=$(cd "$dd" && HPMALLOC_STATS=yes HPMALLOC_VERBOSE=1 LD_PRELOAD="$lib" "$bin/diag" work 2>&1 >/dev/null)
if [ ! -e "$dd/yes" ] && grep -q "ignored HPMALLOC_STATS=yes: not a number .*, nor a file name with a '/'" <<<"$out"; then
  ok "diagnostics: HPMALLOC_STATS=yes is ignored, with a verbose line saying why"
else bad "diagnostics: HPMALLOC_STATS=yes: $out"; fi
rm -rf "$dd"

# --- a seccomp sandbox: madvise, mremap and mbind fail with EPERM -------------
# Every mode still allocates correctly (the API tests, trim included, and
# the stress test), and hpmalloc.verbose says once per kind what the
# kernel refused.
sandbox=$bin/sandbox
api=$root/tests/api
if ! "$sandbox" true 2>/dev/null; then
  skp "sandbox: a seccomp filter cannot be installed here: $("$sandbox" true 2>&1)"
else
  for m in 0 1 2; do
    gt=glibc.malloc.hugetlb=$m
    want="api: 33 passed, 0 failed" run "sandbox (no madvise, mremap, mbind), hugetlb=$m: the API tests, linked statically" \
      env GLIBC_TUNABLES=$gt "$sandbox" "$api/api-static"
    want="passed, 0 failed" run "sandbox, hugetlb=$m: the API tests, preloaded" \
      env GLIBC_TUNABLES=$gt LD_PRELOAD="$lib" "$sandbox" "$api/api-plain"
    want="stress: 1 passed, 0 failed" run "sandbox, hugetlb=$m: the stress test (threads, fork, realloc, trim), 2 s" \
      env GLIBC_TUNABLES=$gt HPT_REQUIRE_HPMALLOC=1 LD_PRELOAD="$lib" "$sandbox" "$root/tests/integration/stress" 2
    out=$(GLIBC_TUNABLES=$gt HPMALLOC_VERBOSE=1 LD_PRELOAD="$lib" "$sandbox" "$bin/diag" work 2>&1 >/dev/null); rc=$?
    refusals=$(grep 'refused (EPERM)' <<<"$out")
    case $m in 0) need='mremap refused' ;; 1) need='MADV_HUGEPAGE) refused' ;; 2) need='MADV_POPULATE_WRITE) refused' ;; esac
    if [ $m = 2 ] && ! grep -q 'hugetlb mode 2' <<<"$out"; then need='MADV_HUGEPAGE) refused'; fi # no hugetlb page size: THP
    if [ $rc = 0 ] && grep -q "$need" <<<"$refusals" && [ -z "$(sed 's/ (EPERM).*//' <<<"$refusals" | sort | uniq -d)" ]; then
      ok "sandbox, hugetlb=$m: hpmalloc.verbose says once per kind what was refused: $(sed 's/^hpmalloc: //; s/ (EPERM).*//' <<<"$refusals" | paste -sd, -)"
    else bad "sandbox, hugetlb=$m: wanted one '$need' line, one line per kind (exit $rc):"; sed 's/^/      /' <<<"$out"; fi
  done
fi

# --- address-space limit ----------------------------------------------------
for m in 0 1 2; do
  for c in as tight; do
    run "RLIMIT_AS ($c), hugetlb=$m" env GLIBC_TUNABLES=glibc.malloc.hugetlb=$m timeout 120 "$bin/limits" $c
  done
done

# --- a hugetlb pool running dry mid-run (root: the pool is sized, then restored)
nr=/proc/sys/vm/nr_hugepages
if [ "$(id -u)" != 0 ] || [ ! -w "$nr" ]; then
  skp "hugetlb pool exhaustion: needs root to size the pool ($nr)"
elif ! grep -q '^Hugepagesize:' /proc/meminfo; then
  skp "hugetlb pool exhaustion: the kernel has no hugetlbfs"
elif held_by_others=$(( $(awk '/^HugePages_Total:/ {print $2}' /proc/meminfo) - $(awk '/^HugePages_Free:/ {print $2}' /proc/meminfo) ));
     [ "$held_by_others" -gt 0 ]; then
  skp "hugetlb pool exhaustion: other processes hold $held_by_others hugetlb pages; the machine-wide pool is not resized under them"
else
  old=$(cat "$nr")
  trap 'echo "$old" > "$nr"' EXIT
  echo 16 > "$nr"
  out=$(GLIBC_TUNABLES=glibc.malloc.hugetlb=2 timeout 120 "$bin/limits" pool 2>&1); rc=$?
  echo "$old" > "$nr"
  trap - EXIT
  if [ "$(cat "$nr")" != "$old" ]; then bad "hugetlb pool: could not restore $nr to $old"; fi
  case $rc in
    0) ok "hugetlb pool exhaustion, hugetlb=2: $out" ;;
    77) skp "hugetlb pool exhaustion: $out" ;;
    *) bad "hugetlb pool exhaustion, hugetlb=2 (exit $rc): $out" ;;
  esac
fi

mkdir -p "$BUILD/summary"
echo "hardening: $pass passed, $fail failed, $skip skipped" | tee "$BUILD/summary/hardening.txt"
[ "$fail" -eq 0 ]
