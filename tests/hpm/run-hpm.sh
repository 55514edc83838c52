#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# check-hpm: the hpm tool on real programs and on hostile traces.
#   BUILD=build bash tests/hpm/run-hpm.sh
# Every check prints "ok" or "FAIL" with the reason; the exit status is
# non-zero if any failed.  No timing is asserted.
set -u
BUILD=${BUILD:-build}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HPM=$ROOT/$BUILD/bin/hpm
XT=$ROOT/$BUILD/tests/hpm/xthread
TRACES=$ROOT/tests/hpm/traces
MK="python3 $ROOT/tests/hpm/mktrace.py"
PY=/usr/bin/python3
W=$(mktemp -d /tmp/check-hpm.XXXXXX)
trap 'rm -rf "$W"' EXIT
fails=0; passes=0
ok()   { passes=$((passes+1)); echo "ok   $*"; }
fail() { fails=$((fails+1)); echo "FAIL $*"; }
check() { local what=$1; shift; if "$@"; then ok "$what"; else fail "$what"; fi; }
T() { timeout 60 "$@"; }
# jq-free JSON access: jget FILE EXPR (python expression on d)
jget() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }

[ -x "$HPM" ] && [ -f "$ROOT/$BUILD/lib/libhpmtrace.so" ] || { echo "FAIL hpm not built"; exit 1; }

# --- help and usage -----------------------------------------------------------
for c in record replay compare analyze tune tlbcost dump reencode ls doctor; do
  out=$(T "$HPM" $c --help 2>&1); rc=$?
  check "hpm $c --help" test $rc -eq 0 -a -n "$(echo "$out" | grep -i usage)"
done
T "$HPM" nosuch >/dev/null 2>&1; check "unknown command fails" test $? -ne 0
out=$(T "$HPM" record -o /nonexistent/dir/t.hpmt -- true 2>&1); rc=$?
check "record into a missing directory: exit $rc, names the file" test $rc -ne 0 -a -n "$(echo "$out" | grep /nonexistent/dir/t.hpmt)"
# Usage errors (tools/hpm/args.c): exit 2 and a line naming the argument
# and what it accepts.  usage_error WHAT PATTERN ARGS...
usage_error() {
  local what=$1 pat=$2 out rc; shift 2
  out=$(T "$HPM" "$@" 2>&1 >/dev/null); rc=$?
  check "$what: exit $rc, '$pat'" test $rc -eq 2 -a -n "$(echo "$out" | grep -F -e "$pat")"
}
usage_error "record without -o" "hpm record: missing -o FILE" record -- true
usage_error "record without a command" "hpm record: missing CMD" record -o "$W/x.hpmt"
usage_error "record with an unknown option" "unknown option --bogus (options: -o, --quiet, --stacks, --unwind, --help)" record --bogus -o x -- true
usage_error "replay --touch with a bad value" "bad value for --touch: 'most' (expected none, first or full)" \
  replay "$TRACES/sort.hpmt" --touch most
usage_error "replay --threads=VALUE checked too" "(expected faithful or serial)" replay "$TRACES/sort.hpmt" --threads=all
usage_error "replay --tlb without a value" "--tlb needs a value" replay "$TRACES/sort.hpmt" --tlb
usage_error "replay --tlb names the presets" "presets: skylake" replay "$TRACES/sort.hpmt" --tlb=nosuch
usage_error "replay --max-memory not a size" "bad value for --max-memory: '1Q'" replay "$TRACES/sort.hpmt" --max-memory 1Q
usage_error "tune --objective names the objectives" "(expected wall, cpu, rss or tlb)" tune "$TRACES/sort.hpmt" --objective x
usage_error "compare --reps out of range" "(expected an integer from 1 to 200)" compare "$TRACES/sort.hpmt" --reps 201
usage_error "compare: 33 configurations" "--config: at most 32 configurations" compare "$TRACES/sort.hpmt" \
  $(for i in $(seq 33); do echo --config glibc; done)
usage_error "tlbcost --max below 4M" "bad value for --max: '1M' (expected a size in bytes from 4M to 64G" tlbcost --max 1M
usage_error "analyze without a trace" "hpm analyze: missing FILE" analyze --json
usage_error "analyze with two traces" "unexpected argument" analyze "$TRACES/sort.hpmt" "$TRACES/sort.hpmt"
usage_error "analyze --json=1" "--json takes no value" analyze "$TRACES/sort.hpmt" --json=1
usage_error "reencode without OUT" "hpm reencode: missing OUT" reencode "$TRACES/sort.hpmt"
usage_error "dump with two files" "unexpected argument" dump "$TRACES/sort.hpmt" x
check "--opt=value is --opt value" test "$(T "$HPM" analyze --svg="$W/eqsvg" "$TRACES/sort.hpmt" >/dev/null && ls "$W/eqsvg" | wc -l)" = 3
check "-- ends the options (a trace named -x.hpmt)" sh -c 'cp "$1" "$2/-x.hpmt" && cd "$2" && "$3" analyze --json -- -x.hpmt >/dev/null' \
  _ "$TRACES/sort.hpmt" "$W" "$HPM"


# --- record: real programs ------------------------------------------------------
# python3: same output with and without the recorder; the trace reads back.
expect=$($PY "$ROOT/tests/integration/prog.py" 20000)
got=$(cd "$W" && T "$HPM" record -q -o py.hpmt -- $PY "$ROOT/tests/integration/prog.py" 20000)
check "python3 output unchanged under the recorder" test "$expect" = "$got"
# the recorder's fatal-signal handlers stay invisible: python3 installs its
# own SIGINT handler (KeyboardInterrupt) as it does without the recorder
sigprog='import signal; print([signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)])'
expect=$(T $PY -c "$sigprog")  # through timeout too: it resets an ignored SIGINT/SIGHUP (make check run with nohup or &)
got=$(cd "$W" && T "$HPM" record -q -o sig.hpmt -- $PY -c "$sigprog")
check "signal dispositions unchanged under the recorder ($got)" test "$expect" = "$got"
T "$HPM" analyze --json "$W/py.hpmt" > "$W/py.json"
check "python3 trace: events and objects" test "$(jget "$W/py.json" 'int(d["events"] > 1000 and d["objects"] > 500)')" = 1
check "python3 trace: size histogram counts sum to objects" \
  test "$(jget "$W/py.json" 'int(sum(b["count"] for b in d["size_histogram"]) == d["objects"])')" = 1
check "python3 trace: peak live bytes positive" test "$(jget "$W/py.json" 'int(d["peak_live_bytes"] > 100000)')" = 1
# malloc-heavy python3: at most 8 bytes per event.
(cd "$W" && PYTHONMALLOC=malloc T "$HPM" record -q -o pym.hpmt -- $PY -S -c 'x=[str(i)*2 for i in range(30000)]; del x' )
ev=$(T "$HPM" analyze --json "$W/pym.hpmt" | python3 -c 'import json,sys; print(json.load(sys.stdin)["events"])')
sz=$(stat -c %s "$W/pym.hpmt")
check "PYTHONMALLOC=malloc python3: $ev events, $sz bytes, <= 8 bytes/event" \
  test "$ev" -gt 50000 -a "$sz" -le $((ev * 8))

# sort
seq 1 30000 | awk '{print ($1*7919)%30011}' > "$W/in.txt"
(cd "$W" && T "$HPM" record -q -o sort.hpmt -- sort -n in.txt -o out.txt)
check "sort under the recorder sorts" cmp -s "$W/out.txt" <(sort -n "$W/in.txt")
check "sort trace reads back" test "$(T "$HPM" analyze --json "$W/sort.hpmt" | python3 -c 'import json,sys; print(int(json.load(sys.stdin)["ops"]["malloc"] > 10))')" = 1

# The multi-threaded program: exact counts of every API function.
(cd "$W" && T "$HPM" record -q -o xt.hpmt -- "$XT" 20000 >/dev/null)
T "$HPM" analyze --json "$W/xt.hpmt" > "$W/xt.json"
check "xthread: 20000 cross-thread frees" test "$(jget "$W/xt.json" 'd["cross_thread_frees"]')" = 20000
check "xthread: one call of each API function" test "$(jget "$W/xt.json" \
  'int(all(d["ops"][k] == 1 for k in ("reallocarray","memalign","posix_memalign","aligned_alloc","valloc","pvalloc")) and d["ops"]["malloc"] >= 20003 and d["ops"]["realloc"] >= 2 and d["ops"]["calloc"] >= 1)')" = 1
check "xthread: producer/consumer in the free matrix" test "$(jget "$W/xt.json" \
  'int(any(v == 20000 for row in d["free_matrix"]["rows_allocating_cols_freeing"] for v in row))')" = 1
check "xthread: 3+ threads with start events" test "$(jget "$W/xt.json" 'int(d["threads"] >= 3 and d["ops"]["thread_start"] >= 3)')" = 1

# Every way to end loses nothing (the main thread's last calls included).
for how in _exit abort sigterm running execv execl execle execlp; do
  (cd "$W" && T "$HPM" record -q -o end-$how.hpmt -- "$XT" 5000 $how >/dev/null 2>&1); rc=$?
  case $how in abort) want=134;; sigterm) want=143;; *) want=0;; esac
  check "end by $how: exit status $want passed on" test $rc -eq $want
  n=$(T "$HPM" analyze --json "$W/end-$how.hpmt" | python3 -c 'import json,sys; d=json.load(sys.stdin)["ops"]; print(d["malloc"])')
  min=5003; [ $how = running ] && min=6003
  check "end by $how: all $min+ mallocs recorded (got $n)" test "${n:-0}" -ge $min
done
# fork: the child writes its own file named after its pid.
(cd "$W" && T "$HPM" record -q -o fk.hpmt -- "$XT" 1000 fork >/dev/null)
child=$(ls "$W"/fk.hpmt.[0-9]* 2>/dev/null | head -1)
check "fork: child trace fk.hpmt.<pid>" test -n "$child"
if [ -n "$child" ]; then
  T "$HPM" analyze --json "$child" > "$W/fk.json" 2>"$W/fk.err"
  check "fork: child recorded 500 malloc + 500 free" test "$(jget "$W/fk.json" 'int(d["ops"]["malloc"] >= 500 and d["ops"]["free"] >= 500)')" = 1
  check "fork: the parent's object freed in the child is reported" test "$(jget "$W/fk.json" 'd["unknown_frees"]')" -ge 1
  pid=$(jget "$W/fk.json" 'd["pid"]')
  check "fork: header pid matches the file name" test "$child" = "$W/fk.hpmt.$pid"
fi

# fork from a signal handler that interrupts the recorder: no deadlock.
(cd "$W" && T "$HPM" record -q -o sf.hpmt -- "$XT" 100 sigfork >/dev/null 2>&1); rc=$?
nf=$(ls "$W"/sf.hpmt* 2>/dev/null | wc -l); nbad=0
for f in "$W"/sf.hpmt*; do T "$HPM" analyze "$f" >/dev/null 2>&1 || nbad=$((nbad+1)); done
check "fork in signal handlers (nested): exit $rc, $nf traces, $nbad unreadable" test $rc -eq 0 -a "$nf" -ge 3 -a $nbad -eq 0
rm -f "$W"/sf.hpmt*

# Thread churn: buffers of exited threads are reused (memory stays flat).
out=$(cd "$W" && T "$HPM" record -q -o ch.hpmt -- "$XT" 20000 churn); rc=$?
rss=$(echo "$out" | sed -n 's/.*max RSS \([0-9]*\) KiB.*/\1/p')
check "20000 threads one after another: exit $rc, max RSS ${rss:-?} KiB < 40 MiB" test $rc -eq 0 -a "${rss:-999999}" -lt 40960
check "20000 threads: every start and exit recorded" test "$(T "$HPM" analyze --json "$W/ch.hpmt" | python3 -c 'import json,sys; d=json.load(sys.stdin)["ops"]; print(int(d["thread_start"] >= 20001 and d["thread_exit"] >= 20000))')" = 1

# --- format: byte-exact re-encoding ------------------------------------------------
for f in "$W/py.hpmt" "$W/xt.hpmt" "$W/sort.hpmt" "$TRACES"/*.hpmt; do
  T "$HPM" reencode "$f" "$W/re.hpmt" && cmp -s "$f" "$W/re.hpmt"
  check "re-encoding $(basename "$f") is byte-exact" test $? -eq 0
done
$MK simple "$W/simple.hpmt"
T "$HPM" reencode "$W/simple.hpmt" "$W/re.hpmt"
check "a trace from the independent writer (mktrace.py) re-encodes byte-exact" cmp -s "$W/simple.hpmt" "$W/re.hpmt"
check "mktrace simple: 21 events, 10 objects, peak 1045" test "$(T "$HPM" analyze --json "$W/simple.hpmt" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["events"], d["objects"], d["peak_live_bytes"])')" = "21 10 1045"
T "$HPM" dump "$W/simple.hpmt" > "$W/simple.txt"
check "dump: a header, the command line, the columns and one line per event (21)" test "$(sed -n 1p "$W/simple.txt" | cut -d' ' -f1-2)" = "version 1" -a "$(sed -n 2p "$W/simple.txt" | cut -c1-8)" = "cmdline:" -a "$(sed -n 3p "$W/simple.txt" | cut -c1-30)" = "# events in time order (ties i" -a "$(wc -l < "$W/simple.txt")" -eq 24
# xthread's file holds three threads chunk by chunk: out of time order there
T "$HPM" dump "$TRACES/xthread.hpmt" > "$W/xt-dump.txt"
check "dump: events in time order (xthread: 3 threads, $(grep -c ' thread_start ' "$W/xt-dump.txt") started)" sh -c \
  'awk "NR > 3 { if (\$2 + 0 < prev) bad++; prev = \$2 + 0; n++ } END { exit !(n == 40034 && bad == 0) }" "$1"' _ "$W/xt-dump.txt"
check "dump: events as the writer wrote them (mktrace.py)" sh -c 'grep -qx "1 5 malloc size=100 arg=0 id=2 ref=0 dur=0" "$1" && grep -qx "1 200 free size=0 arg=0 id=0 ref=2 dur=0" "$1"' _ "$W/simple.txt"

# --- bad input ------------------------------------------------------------------------
bad() {  # bad WHAT FILE PATTERN: non-zero exit, one line naming the file and pattern
  local what=$1 f=$2 pat=$3 out rc
  out=$(T "$HPM" analyze "$f" 2>&1 >/dev/null); rc=$?
  check "$what: exit $rc, '$pat'" test $rc -ne 0 -a $rc -lt 124 -a -n "$(echo "$out" | grep -F "$f" | grep -e "$pat")"
}
: > "$W/empty.hpmt";               bad "empty file" "$W/empty.hpmt" "byte offset 0: empty"
cp "$HPM" "$W/foreign.hpmt";       bad "foreign file" "$W/foreign.hpmt" "byte offset 0: not an hpm trace"
head -c 10 "$W/xt.hpmt" > "$W/short.hpmt"; bad "10-byte file" "$W/short.hpmt" "byte offset 0"
for k in huge-count bad-varint bad-kind huge-header future-version; do
  $MK $k "$W/$k.hpmt"; bad "hostile: $k" "$W/$k.hpmt" "byte offset [0-9]"
done
cp "$W/xt.hpmt" "$W/corrupt.hpmt"
printf '\x55' | dd of="$W/corrupt.hpmt" bs=1 seek=5000 conv=notrunc status=none
bad "a flipped byte in a chunk" "$W/corrupt.hpmt" "checksum mismatch"
$MK cycle "$W/cycle.hpmt"; bad "cycle in cross-thread ordering" "$W/cycle.hpmt" "cycle"
out=$(T "$HPM" replay "$W/cycle.hpmt" 2>&1); rc=$?
check "replay refuses a cycle (exit $rc)" test $rc -ne 0 -a $rc -lt 124
# Truncated: reads up to the last whole chunk, warns, exits 0.
sz=$(stat -c %s "$W/xt.hpmt"); head -c $((sz * 2 / 3)) "$W/xt.hpmt" > "$W/trunc.hpmt"
out=$(T "$HPM" analyze --json "$W/trunc.hpmt" 2>"$W/trunc.err"); rc=$?
check "truncated: exit 0 with a warning naming the offset" test $rc -eq 0 -a -n "$(grep 'truncated' "$W/trunc.err" | grep 'byte offset')"
check "truncated: fewer events than the whole" test "$(echo "$out" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(int(0 < d["events"] < 40000 and d["truncated"]))')" = 1
$MK header-only "$W/ho.hpmt"
check "header-only trace: 0 events, exit 0" test "$(T "$HPM" analyze --json "$W/ho.hpmt" | python3 -c 'import json,sys; print(json.load(sys.stdin)["events"])')" = 0
$MK unknown-free "$W/uf.hpmt"
T "$HPM" replay --min-time 0 --json "$W/uf.hpmt" > "$W/uf.json" 2> "$W/uf.err"
check "frees of unknown objects: warning, replay of the rest" test $? -eq 0 -a -n "$(grep 'never allocated' "$W/uf.err")" -a "$(jget "$W/uf.json" 'd["ops"]')" = 2
$MK huge-size "$W/hs.hpmt"
out=$(T "$HPM" replay "$W/hs.hpmt" 2>&1); rc=$?
check "SIZE_MAX allocation: replay refuses (exit $rc)" test $rc -eq 1 -a -n "$(echo "$out" | grep 'exceeds the replay limit')"

# --- replay ---------------------------------------------------------------------------------
for a in glibc hpmalloc; do
  T "$HPM" replay "$W/xt.hpmt" --allocator $a --min-time 0 --json > "$W/r-$a.json"; rc=$?
  check "replay xthread under $a: exit 0" test $rc -eq 0
  check "replay xthread under $a: every op, none failed, JSON keys" test "$(jget "$W/r-$a.json" \
    'int(d["ops"] > 40000 and d["alloc_failures"] == 0 and d["threads"] >= 3 and all(k in d for k in ("wall_s","peak_rss_kb","peak_live_bytes","hugepage_coverage","hugepage_regions_1g","tlb_misses","ops")))')" = 1
  check "replay under $a: peak live bytes as analyze says" test "$(jget "$W/r-$a.json" 'd["peak_live_bytes"]')" = "$(jget "$W/xt.json" 'd["peak_live_bytes"]')"
done
# Faithful replay: the first traced thread runs on the engine's main thread
# (the main arena, as in the program), the others on threads of their own;
# a single-threaded trace's heap stays in one arena.
T "$HPM" replay "$TRACES/python3-malloc.hpmt" --allocator hpmalloc --touch none --min-time 0 --json > "$W/r1.json"
check "replay of a single-threaded trace: every op on the main thread, one arena (hpmalloc_stats)" \
  test "$(jget "$W/r1.json" 'int(d["threads"] == 1 and d["main_thread_ops"] == d["ops"] and d["hpmalloc"]["arenas"] == 1)')" = 1
check "replay xthread: the first thread's ops on the main thread, the rest on others, more than one arena" \
  test "$(jget "$W/r-hpmalloc.json" 'int(0 < d["main_thread_ops"] < d["ops"] and d["hpmalloc"]["arenas"] >= 2)')" = 1
check "replay under glibc: no hpmalloc counters in the report" test "$(jget "$W/r-glibc.json" 'int("hpmalloc" not in d)')" = 1
T "$HPM" replay "$W/xt.hpmt" --threads serial --touch none --tlb zen3 --min-time 0 --json > "$W/rs.json"
check "serial replay with touch none, zen3 model" test "$(jget "$W/rs.json" 'int(d["threads"] >= 3 and d["mode"] == "serial" and d["touch"] == "none" and d["tlb_model"] == "zen3")')" = 1
T "$HPM" replay "$W/xt.hpmt" --tlb custom:l1=32/4,l1h=16/4,l2=512/8,walk=40 --min-time 0 --json > /dev/null
check "custom TLB geometry" test $? -eq 0
T "$HPM" replay "$W/xt.hpmt" --tlb nosuch >/dev/null 2>&1
check "unknown TLB preset fails" test $? -ne 0
check "CPUID leaf 0x18 decoding (Intel, fixture)" test "$(T "$HPM" __tlbdecode "$ROOT/tests/hpm/cpuid/intel-golden-cove.txt")" = "cpuid-intel l1_4k=96/6 l1_2m=32/4 l2=2048/16 l1_1g=0/0 l2_1g=0/0"
check "CPUID 0x80000005/6 decoding (AMD, fixture)" test "$(T "$HPM" __tlbdecode "$ROOT/tests/hpm/cpuid/amd-zen3.txt")" = "cpuid-amd l1_4k=64/64 l1_2m=64/64 l2=2048/16 l1_1g=0/0 l2_1g=0/0"
check "CPUID leaf 0x18 1G subleaves (Intel, fixture)" test "$(T "$HPM" __tlbdecode "$ROOT/tests/hpm/cpuid/intel-1g.txt")" = "cpuid-intel l1_4k=96/6 l1_2m=32/4 l2=2048/16 l1_1g=8/8 l2_1g=1024/8"
check "CPUID 0x80000019 1G TLB (AMD, fixture)" test "$(T "$HPM" __tlbdecode "$ROOT/tests/hpm/cpuid/amd-zen4.txt")" = "cpuid-amd l1_4k=72/72 l1_2m=72/72 l2=3072/48 l1_1g=72/72 l2_1g=64/8"
# 8 x 1 GiB pages, 3 rounds: skylake's 4-entry 1G L1 misses every time, its
# 16-entry 1G STLB keeps all 8 (cold walks only); without 1G levels
# (power9-radix, custom l1g=0/0) they go through the 2M structures.
check "TLB model: 1G pages in the 1G L1 and STLB (skylake)" test "$(T "$HPM" __tlbsim skylake 2 8 3)" = "accesses=24 l1_misses=24 walks=8"
check "TLB model: 1G pages by shift 30 as by size class 2" test "$(T "$HPM" __tlbsim skylake 30 8 3)" = "accesses=24 l1_misses=24 walks=8"
check "TLB model: 20 1G pages overflow skylake's 16-entry 4-way 1G STLB" test "$(T "$HPM" __tlbsim skylake 2 20 3)" = "accesses=60 l1_misses=60 walks=60"
check "TLB model: 1G pages in zen3's 64-entry L1" test "$(T "$HPM" __tlbsim zen3 2 8 3)" = "accesses=24 l1_misses=8 walks=8"
check "TLB model: no 1G levels, 1G pages as 2M (power9-radix)" test "$(T "$HPM" __tlbsim power9-radix 2 8 3)" = "$(T "$HPM" __tlbsim power9-radix 1 8 3)"
check "TLB model: custom l1g=0/0,l2g=0/0 splinters 1G pages" test "$(T "$HPM" __tlbsim custom:l1g=0/0,l2g=0/0 2 8 3)" = "accesses=24 l1_misses=24 walks=8"
T "$HPM" __tlbsim custom:l1g=3/2 2 8 3 >/dev/null 2>&1
check "custom 1G level with entries not divisible by ways fails" test $? -ne 0
T "$HPM" replay "$W/xt.hpmt" --allocator /nonexistent.so >/dev/null 2>&1
check "missing allocator fails" test $? -ne 0
THP=$(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)
T "$HPM" replay "$TRACES/python3-malloc.hpmt" --allocator hpmalloc --tunables glibc.malloc.hugetlb=1 --touch full --min-time 0 --json > "$W/rh.json"
if [ -n "$THP" ] && ! echo "$THP" | grep -q '\[never\]'; then
  check "hpmalloc hugetlb=1: coverage > 0.5 and fewer modelled walks than 4 KiB" test "$(jget "$W/rh.json" \
    'int(d["hugepage_coverage"] > 0.5 and d["tlb_misses"] < d["tlb_misses_4k"])')" = 1
else
  echo "skip hugetlb=1 coverage: THP unavailable ($THP)"
fi

# hugetlb=2 with an empty pool: hpmalloc falls back to THP, and the report
# says the coverage is not of the pages asked for.
if [ "$(cat /proc/sys/vm/nr_hugepages)" = 0 ] && [ -d /sys/kernel/mm/hugepages/hugepages-2048kB ]; then
  T "$HPM" replay "$TRACES/python3-malloc.hpmt" --allocator hpmalloc --tunables glibc.malloc.hugetlb=2 --min-time 0 > "$W/rfb.txt"
  check "hugetlb=2, empty pool: the report says the coverage came from a fallback" \
    grep -q "^note: the huge-page coverage above is not all of the pages asked for: [1-9][0-9]* hugetlb mapping" "$W/rfb.txt"
else
  echo "skip the fallback note: a hugetlb pool is reserved"
fi

# --- analyze, compare, tune, tlbcost ---------------------------------------------------------
T "$HPM" analyze "$W/xt.hpmt" --svg "$W/svg" > "$W/an.txt" 2> "$W/an.err"
check "analyze text: sections present" test -n "$(grep 'size histogram' "$W/an.txt")" -a -n "$(grep 'lifetime histogram' "$W/an.txt")" -a -n "$(grep 'allocating thread' "$W/an.txt")" -a -n "$(grep 'peak live bytes' "$W/an.txt")"
check "analyze text: bytes and times in units (the JSON keeps raw numbers)" sh -c \
  'grep -Eq "^peak live bytes: [0-9.]+ (B|KiB|MiB|GiB) at [0-9.]+ (ns|µs|ms|s); total allocated [0-9.]+ (B|KiB|MiB|GiB);" "$1" &&
   grep -Eq "^  1 KiB +[0-9]+ +[0-9.]+% +[0-9.]+ (B|KiB|MiB) +[0-9.]+%$" "$1"' _ "$W/an.txt"
# Charts: listed as written, rendered by rsvg-convert, and read as a person
# would (tests/hpm/check-svg.py: one unit per axis, 1-2-5 or log ticks,
# the peak inside the plot, which way is better).
peak=$(jget "$W/xt.json" 'd["peak_live_bytes"]')
for s in live_bytes sizes lifetimes; do
  check "analyze --svg: says it wrote $s.svg" grep -qx "hpm analyze: wrote $W/svg/$s.svg" "$W/an.err"
  check "analyze --svg: $s.svg renders (rsvg-convert)" rsvg-convert "$W/svg/$s.svg" -o "$W/svg/$s.png"
  extra=; [ $s = live_bytes ] && extra="--peak $peak"
  check "analyze --svg: $s.svg readable (round ticks, units${extra:+, the peak inside})" $PY "$ROOT/tests/hpm/check-svg.py" "$W/svg/$s.svg" $extra
done
check "analyze --svg: sizes.svg on a log size axis, objects and bytes in panels of their own" sh -c \
  'grep -q "request size (log scale" "$1" && grep -q ">Objects allocated" "$1" && grep -q ">Bytes requested" "$1"' _ "$W/svg/sizes.svg"
T "$HPM" compare "$TRACES/xthread.hpmt" --reps 2 --min-time 0 --touch first --json --svg "$W/cmp.svg" > "$W/cmp.json" 2> "$W/cmp.err"
check "compare --svg: says it wrote the chart" grep -qx "hpm compare: wrote $W/cmp.svg" "$W/cmp.err"
check "compare without a terminal: a progress line per configuration on stderr, then one when measured" sh -c \
  'test "$(grep -c "^hpm compare: .*: first run " "$1")" -eq 4 && grep -q "^hpm compare: 4 configurations measured, 2 runs each" "$1"' _ "$W/cmp.err"
check "compare --svg: renders (rsvg-convert)" rsvg-convert "$W/cmp.svg" -o "$W/cmp.png"
check "compare --svg: four panels (time ratio, RSS, coverage, TLB walks), each saying which way is better" \
  $PY "$ROOT/tests/hpm/check-svg.py" "$W/cmp.svg" --panels 4
check "compare: 4 configurations, 2 runs each, medians" test "$(jget "$W/cmp.json" \
  'int(len(d["configs"]) == 4 and all(len(c["runs"]) == 2 and "hugepage_coverage" in c["median"] and "tlb_misses" in c["median"] for c in d["configs"]))')" = 1
check "compare: hpmalloc with hugetlb=1 and glibc in the table" test "$(jget "$W/cmp.json" \
  'int(any(c["allocator"] == "hpmalloc" and c["tunables"] == "glibc.malloc.hugetlb=1" for c in d["configs"]) and any(c["allocator"] == "glibc" and c["tunables"] == "" for c in d["configs"]))')" = 1
check "compare --svg names every configuration" test "$(grep -c 'hpmalloc glibc.malloc.hugetlb=1' "$W/cmp.svg")" -ge 1
T "$HPM" compare "$TRACES/sort.hpmt" --config glibc --config hpmalloc:glibc.malloc.hugetlb=1 --reps 1 --min-time 0 > "$W/cmp.txt"
check "compare text table" test -n "$(grep '^hpmalloc glibc.malloc.hugetlb=1' "$W/cmp.txt")" -a -n "$(grep 'huge cov' "$W/cmp.txt")"
# One run per candidate cannot show anything beyond the noise (the test
# needs 5): every step says so and nothing is recommended.
T "$HPM" tune "$TRACES/sort.hpmt" --reps 1 --min-time 0 --touch none > "$W/tune.txt"; rc=$?
check "tune --reps 1: exit 0, every candidate too few runs to tell, no change recommended" test $rc -eq 0 \
  -a -n "$(grep '^no change recommended' "$W/tune.txt")" -a -n "$(grep -E '^[0-9]+ runs in' "$W/tune.txt")" \
  -a "$(grep -c 'glibc.malloc.top_pad=.*too few runs to tell: 6 needed' "$W/tune.txt")" -eq 3 \
  -a -z "$(grep '^recommended:' "$W/tune.txt")"
# Each of the 14 candidates (15 with a hugetlb pool) is tested at 0.05 / 14
# (Bonferroni), which 6 runs against 6 can reach and 5 cannot; arena_max cannot change the heap
# of a trace whose operations are all on one thread, and is not searched.
check "tune: the level corrected for the candidates, arena_max not searched on a single-threaded trace" sh -c \
  'grep -Eq "^(14 candidates: .* p < 0.0036|15 candidates: .* p < 0.0033)" "$1" &&
   grep -q "^arena_max not searched: every operation of this trace is on one thread" "$1" && ! grep -q "arena_max=" "$1"' _ "$W/tune.txt"
T "$HPM" tune "$W/xt.hpmt" --search arena_max --reps 1 --min-time 0 --touch none > "$W/tunex.txt"
check "tune: arena_max searched on a multi-threaded trace" test "$(grep -c '^  glibc.malloc.arena_max=' "$W/tunex.txt")" -eq 3
# --- honest statistics ------------------------------------------------------------------------
# replay repeats until the runs total --min-time (and --reps): wall and CPU
# time as median [min-max]; JSON: every run's times.
T "$HPM" replay "$TRACES/sort.hpmt" --touch none --reps 3 --min-time 0.05 --json > "$W/rr.json"
check "replay --reps 3 --min-time 0.05: >= 3 runs totalling >= 0.05 s (or 200), min <= median <= max" \
  test "$(jget "$W/rr.json" 'int(d["runs"] >= 3 and len(d["wall_s_all"]) == d["runs"] and (sum(d["wall_s_all"]) >= 0.05 or d["runs"] == 200) and d["wall_s_min"] <= d["wall_s_median"] <= d["wall_s_max"] and d["cpu_s_min"] <= d["cpu_s_median"] <= d["cpu_s_max"])')" = 1
T "$HPM" replay "$TRACES/sort.hpmt" --touch none --reps 4 --min-time 0 > "$W/rr.txt"
check "replay text: the runs, median [min-max], the metric named" sh -c \
  'grep -q "^4 runs (at least 4" "$1" && grep -Eq "^wall time +[0-9.]+ [mµ]?s \[" "$1" && grep -Eq "^CPU time +[0-9.]+ [mµ]?s \[" "$1"' _ "$W/rr.txt"
check "replay text: bytes in units (peak RSS growth in KiB/MiB)" grep -Eq "^peak RSS growth +[0-9.]+ (B|KiB|MiB)$" "$W/rr.txt"
# compare: interleaved, every configuration as many runs, >= --min-time each,
# the metric named, a confidence interval for every speed-up.
T "$HPM" compare "$TRACES/sort.hpmt" --touch none --reps 3 --min-time 0.03 --json > "$W/cs.json"
check "compare --min-time 0.03: same run count everywhere, each >= 3 runs and >= 0.03 s" test "$(jget "$W/cs.json" \
  'int(len(set(len(c["runs"]) for c in d["configs"])) == 1 and all(len(c["runs"]) >= 3 and (sum(r["wall_s"] for r in c["runs"]) >= 0.03 or len(c["runs"]) == 200) for c in d["configs"]))')" = 1
check "compare JSON: metric cpu, a 95% CI around each speed-up" test "$(jget "$W/cs.json" \
  'int(d["metric"] == "cpu_s" and not d["partial"] and all(c["speedup_ci95"][0] <= c["speedup"] <= c["speedup_ci95"][1] for c in d["configs"]))')" = 1
T "$HPM" compare "$TRACES/sort.hpmt" --touch none --reps 3 --min-time 0 --metric wall > "$W/cw.txt"
check "compare text: names the metric, spread and CI" sh -c 'grep -q "median wall time over each" "$1" && grep -q "speed-up (wall)" "$1" && grep -Eq "^hpmalloc +3 +[0-9.]+ [mµ]?s \[[0-9.]+( [mµ]?s)?-[0-9.]+ [mµ]?s\] +[0-9.]+x \[[0-9.]+-[0-9.]+\]" "$1"' _ "$W/cw.txt"
# Tunables reach only the allocators that read them.
if [ -e /usr/lib/x86_64-linux-gnu/libjemalloc.so.2 ] || [ -e /usr/lib/libjemalloc.so.2 ]; then
  T "$HPM" compare "$TRACES/sort.hpmt" --allocators glibc,jemalloc --tunables -,glibc.malloc.hugetlb=1:malloc.mxfast=0 \
    --touch none --reps 1 --min-time 0 --json > "$W/cj.json"
  check "compare: jemalloc run once, the tunables it does not read not applied and said so" test "$(jget "$W/cj.json" \
    'int([(c["allocator"], c["tunables"]) for c in d["configs"]] == [("glibc", ""), ("glibc", "glibc.malloc.hugetlb=1"), ("jemalloc", "")] and d["configs"][2]["not_applied"] == "glibc.malloc.hugetlb=1:malloc.mxfast=0" and d["configs"][1]["not_applied"] == "malloc.mxfast=0" and "jemalloc reads no GLIBC_TUNABLES" in d["configs"][2]["note"])')" = 1
  T "$HPM" compare "$TRACES/sort.hpmt" --config jemalloc:glibc.malloc.hugetlb=1 --touch none --reps 1 --min-time 0 > "$W/cj.txt"
  check "compare: the jemalloc row says glibc.malloc.hugetlb=1 was not applied" grep -q "^jemalloc .*not applied: glibc.malloc.hugetlb=1 (jemalloc reads no" "$W/cj.txt"
  usage_error "tune --allocator jemalloc" "--allocator jemalloc: jemalloc reads no GLIBC_TUNABLES malloc tunable" tune "$TRACES/sort.hpmt" --allocator jemalloc
else
  echo "skip tunables and jemalloc: jemalloc not installed"
fi
# tune on noise alone (--null-test: every candidate runs with the best so
# far's tunables) recommends nothing, 10 times out of 10.
nulls=0
for i in 1 2 3 4 5 6 7 8 9 10; do
  T "$HPM" tune "$TRACES/sort.hpmt" --null-test --search hugetlb,arena_max --touch none --min-time 0.02 > "$W/null.txt" 2>&1 &&
    grep -q '^no change recommended' "$W/null.txt" && ! grep -q '^recommended:' "$W/null.txt" && nulls=$((nulls+1))
done
check "tune --null-test: no change recommended in $nulls of 10 tries" test $nulls -eq 10
# ... and a real effect is recommended: the modelled TLB cycles of a 222 MiB
# buffer fall 400-fold on transparent huge pages.
if [ -n "$THP" ] && ! echo "$THP" | grep -q '\[never\]'; then
  T "$HPM" tune "$TRACES/sort.hpmt" --objective tlb --search hugetlb --reps 5 --min-time 0 > "$W/tlbtune.txt"
  check "tune --objective tlb: hugetlb=1 (or 2, with a hugetlb pool) recommended after the final check" sh -c \
    'grep -q "^final check" "$1" && grep -Eq "^recommended: GLIBC_TUNABLES=glibc.malloc.hugetlb=[12] " "$1"' _ "$W/tlbtune.txt"
fi

# --- tunables checked; errors that say what to do -------------------------------------------
usage_error "replay --tunables with an unknown name lists the valid ones" \
  "--tunables: garbage=1: unknown tunable; valid: glibc.malloc.NAME (or malloc.NAME) with NAME one of check, top_pad," \
  replay "$TRACES/sort.hpmt" --tunables garbage=1
usage_error "replay --tunables with a typo suggests the name" \
  "glibc.malloc.hugtlb=1: unknown tunable (did you mean glibc.malloc.hugetlb?)" replay "$TRACES/sort.hpmt" --tunables glibc.malloc.hugtlb=1
usage_error "compare --config out of range" "--config: malloc.perturb=300: out of range (0 to 255)" \
  compare "$TRACES/sort.hpmt" --config glibc --config hpmalloc:malloc.perturb=300
usage_error "compare --tunables: each entry checked" "--tunables: glibc.malloc.top_pad=12x: not a number" \
  compare "$TRACES/sort.hpmt" --tunables -,glibc.malloc.top_pad=12x
usage_error "--tunables hugetlb=7: a mode or an offered page size, the valid ones named" \
  "--tunables: glibc.malloc.hugetlb=7: out of range (0 off, 1 THP, 2 hugetlbfs, or a hugetlb page size" \
  replay "$TRACES/sort.hpmt" --tunables glibc.malloc.hugetlb=7
usage_error "--tunables hpmalloc.hugetlb_size=4096: not a hugetlb page size" \
  "--tunables: hpmalloc.hugetlb_size=4096: out of range (0 the default, or a hugetlb page size" \
  compare "$TRACES/sort.hpmt" --tunables -,hpmalloc.hugetlb_size=4096
usage_error "--min-time not a number" "--min-time: bad value 'soon' (expected seconds, a number from 0 to 3600" \
  compare "$TRACES/sort.hpmt" --min-time soon
usage_error "tune --search names the tunables" "--search: bad value 'hugepages' (expected a comma-separated list of hugetlb," \
  tune "$TRACES/sort.hpmt" --search hugetlb,hugepages
usage_error "compare --metric names its choices" "(expected cpu or wall)" compare "$TRACES/sort.hpmt" --metric ipc
out=$(T "$HPM" replay "$TRACES/sort.hpmt" --allocator nosuch 2>&1 >/dev/null); rc=$?
check "an unknown allocator: exit 1, the installed ones named" test $rc -eq 1 -a -n "$(echo "$out" | grep -F 'hpm replay: allocator nosuch not found' | grep -F 'installed: glibc, hpmalloc')"
out=$(HPM_HPMALLOC=/nonexistent T "$HPM" compare "$TRACES/sort.hpmt" --config /no/such/lib.so 2>&1 >/dev/null); rc=$?
check "compare: a missing library named, with what is installed" test $rc -eq 1 -a -n "$(echo "$out" | grep -F 'allocator /no/such/lib.so not found' | grep -F 'installed: glibc')"

# --- Ctrl-C: the finished runs, marked partial, exit status 130 ---------------------------------
# interrupt SIG WHOM CMD...: run CMD in its own session, wait for its first
# runs, send SIG to the whole group (as Ctrl-C does) or to hpm alone.
# replay (--touch full) and compare (its default) touch the memory: about 0.15 s a run, so
# 200 runs (the cap) outlast the 2 s wait; with --touch none a run took
# 5 ms and replay could finish before the signal on a quiet machine.
interrupt() {
  local whom=$1; shift
  setsid "$@" > "$W/int.out" 2> "$W/int.err" & local pid=$!
  sleep 2
  if [ "$whom" = group ]; then kill -INT -- -$pid; else kill -INT $pid; fi
  wait $pid
}
interrupt group "$HPM" compare "$TRACES/sort.hpmt" --min-time 60 --json; rc=$?
check "compare, Ctrl-C (the process group): exit $rc, partial JSON with the finished runs" test $rc -eq 130 -a \
  "$(jget "$W/int.out" 'int(d["partial"] and sum(len(c["runs"]) for c in d["configs"]) >= 1)')" = 1
check "compare, Ctrl-C: no replay reported as failed, progress lines only" sh -c \
  '! grep -v "^hpm compare: .*\(first run\|measured\)" "$1"' _ "$W/int.err"

interrupt hpm "$HPM" compare "$TRACES/sort.hpmt" --min-time 60; rc=$?
check "compare, SIGINT to hpm alone: exit $rc, the table marked PARTIAL" sh -c \
  'test $1 -eq 130 && grep -q "PARTIAL: interrupted" "$2" && grep -Eq "^hpmalloc +[1-9]" "$2"' _ $rc "$W/int.out"
interrupt group "$HPM" replay "$TRACES/sort.hpmt" --touch full --min-time 60; rc=$?
check "replay, Ctrl-C: exit $rc, the runs finished, marked PARTIAL" sh -c \
  'test $1 -eq 130 && grep -Eq "^[1-9][0-9]* runs? .*PARTIAL: interrupted" "$2" && grep -q "^wall time" "$2"' _ $rc "$W/int.out"
interrupt group "$HPM" tune "$TRACES/sort.hpmt" --touch none --min-time 60; rc=$?
check "tune, Ctrl-C: exit $rc, PARTIAL and no recommendation" sh -c \
  'test $1 -eq 130 && grep -q "^PARTIAL: interrupted after [0-9]* runs" "$2" && ! grep -q "^recommended" "$2"' _ $rc "$W/int.out"

T "$HPM" tlbcost --max 8M --reads 20000 --no-save > "$W/tlb.txt"
check "tlbcost prints a latency table and a miss cost" test -n "$(grep '^4 MiB' "$W/tlb.txt")" -a -n "$(grep 'TLB miss cost' "$W/tlb.txt")"

# --- call stacks (hpm record --stacks, hpm analyze --stacks/--flame) ---------------
LEAKY=$ROOT/$BUILD/tests/hpm/leaky
LEAKSRC=$ROOT/tests/hpm/leaky.c
leak_line=$(grep -n '/\* LEAK \*/' "$LEAKSRC" | cut -d: -f1)
peak_line=$(grep -n '/\* PEAK \*/' "$LEAKSRC" | cut -d: -f1)
# stack definitions in a trace: N of every HPMS chunk (FORMAT.md)
nstackdefs() { python3 -c '
import struct,sys
b=open(sys.argv[1],"rb").read(); o=16+struct.unpack_from("<I",b,12)[0]+4; n=0
while o+36<=len(b):
    m,p,t,c=b[o:o+4],*struct.unpack_from("<III",b,o+4)
    n+=c if m==b"HPMS" else 0; o+=36+p
print(n)' "$1"; }
for u in libunwind libgcc fp; do
  out=$(cd "$W" && T "$HPM" record -q -o lk-$u.hpmt --stacks --unwind $u -- "$LEAKY" 2000)
  check "--stacks --unwind $u: the program's output unchanged" test "$out" = "$("$LEAKY" 2000)"
  T "$HPM" analyze --stacks --json "$W/lk-$u.hpmt" > "$W/lk-$u.json"
  check "--unwind $u: analyze --stacks names the leak: leak_records at leaky.c:$leak_line, 2000 objects" test "$(jget "$W/lk-$u.json" \
    'int((lambda s: s["site"]["function"] == "leak_records" and s["site"]["file"].endswith("tests/hpm/leaky.c") and s["site"]["line"] == '"$leak_line"' and s["leaked_bytes"] == 2000 * 64)(d["stacks"]["top_leaked"][0]))')" = 1
  check "--unwind $u: the peak is grow_table at leaky.c:$peak_line, called from main" test "$(jget "$W/lk-$u.json" \
    'int((lambda s: s["site"]["function"] == "grow_table" and s["site"]["line"] == '"$peak_line"' and s["peak_bytes"] == 2000 * 1024 and s["stack"][1]["function"] == "main")(d["stacks"]["top_peak"][0]))')" = 1
done
check "record --stacks writes trace version 2" test "$(head -c 9 "$W/lk-libunwind.hpmt" | tail -c 1 | od -An -tu1 | tr -d ' ')" = 2
check "without --stacks the trace stays version 1" test "$(head -c 9 "$W/sort.hpmt" | tail -c 1 | od -An -tu1 | tr -d ' ')" = 1
d=$(jget "$W/lk-libunwind.json" 'd["stacks"]["distinct"]'); n=$(nstackdefs "$W/lk-libunwind.hpmt")
# at most 16 distinct stacks for 10003+ allocations: the program's own few,
# plus libc's and (in make coverage) gcov's allocations at start and exit
check "stacks deduplicated: 10003+ allocations, $d distinct stacks, $n defined in the file (each once)" \
  test "$d" -le 16 -a "$n" = "$d" -a "$(jget "$W/lk-libunwind.json" 'd["ops"]["malloc"]')" -ge 10001
check "parse_line: 8000 allocations from one call site" test "$(jget "$W/lk-libunwind.json" \
  'int(any(s["site"]["function"] == "parse_line" and s["allocations"] == 8000 for s in d["stacks"]["top_count"]))')" = 1
T "$HPM" analyze --stacks "$W/lk-libunwind.hpmt" > "$W/lk.txt"
check "analyze --stacks text: three tables, the leak with its caller" sh -c 'grep -q "^top call sites by bytes never freed" "$1" &&
  grep -q "leak_records (.*tests/hpm/leaky.c:'"$leak_line"')" "$1" && grep -q "<- main (.*leaky.c" "$1" && grep -q "^top call sites by allocations" "$1"' _ "$W/lk.txt"
for f in "$W/lk-libunwind.hpmt" "$W/lk-fp.hpmt"; do
  T "$HPM" reencode "$f" "$W/re.hpmt" && cmp -s "$f" "$W/re.hpmt"
  check "re-encoding $(basename "$f") (stack and maps chunks) is byte-exact" test $? -eq 0
done
T "$HPM" analyze "$W/lk-libunwind.hpmt" --flame "$W/flame.svg" --flame-by leaked >/dev/null
check "--flame: folded stacks, outermost first" grep -q "^_start;.*;main;leak_records 128000$" "$W/flame.folded"
check "--flame: an SVG naming the frames" sh -c 'grep -q "</svg>" "$1" && grep -q "<title>leak_records (128000 bytes" "$1"' _ "$W/flame.svg"
if command -v rsvg-convert >/dev/null; then
  rsvg-convert -o "$W/flame.png" "$W/flame.svg" 2>"$W/rsvg.err"
  check "--flame: the SVG renders (rsvg-convert: $(stat -c %s "$W/flame.png" 2>/dev/null) bytes of PNG)" test $? -eq 0 -a -s "$W/flame.png" -a ! -s "$W/rsvg.err"
else
  echo "skip rendering the flame graph: rsvg-convert missing (librsvg2-bin)"
fi
(cd "$W" && T "$HPM" record -q -o xts.hpmt --stacks=16 -- "$XT" 5000 fork >/dev/null)
T "$HPM" reencode "$W/xts.hpmt" "$W/re.hpmt"
check "threads and fork with --stacks=16: the parent's trace re-encodes byte-exact" cmp -s "$W/xts.hpmt" "$W/re.hpmt"
xchild=$(ls "$W"/xts.hpmt.[0-9]* 2>/dev/null | head -1)
check "fork with --stacks: the child defines its own stacks (analyze --stacks reads them)" sh -c \
  '"$1" analyze --stacks --json "$2" 2>/dev/null | python3 -c "import json,sys; d=json.load(sys.stdin)[\"stacks\"]; sys.exit(not (d[\"distinct\"] >= 1 and d[\"without_stack\"] == 0))"' _ "$HPM" "$xchild"
(cd "$W" && T "$HPM" record -q -o sfs.hpmt --stacks -- "$XT" 100 sigfork >/dev/null 2>&1); rc=$?
nf=$(ls "$W"/sfs.hpmt* 2>/dev/null | wc -l); nbad=0
for f in "$W"/sfs.hpmt*; do T "$HPM" analyze "$f" >/dev/null 2>&1 || nbad=$((nbad+1)); done
check "fork in signal handlers with --stacks: exit $rc, $nf traces, $nbad unreadable" test $rc -eq 0 -a "$nf" -ge 3 -a $nbad -eq 0
check "fork in signal handlers with --stacks: the parent's stacks read" sh -c '"$1" analyze --stacks "$2" >/dev/null' _ "$HPM" "$W/sfs.hpmt"
check "analyze --stacks --top 1: one site per table" test "$(T "$HPM" analyze --stacks --top 1 --json "$W/xts.hpmt" | python3 -c 'import json,sys; d=json.load(sys.stdin)["stacks"]; print(len(d["top_peak"]), len(d["top_count"]))')" = "1 1"
# Old traces (version 1, before stacks) still read, and say they have none.
for f in "$TRACES"/*.hpmt; do
  check "bundled $(basename "$f"): version 1, still read" test "$(head -c 9 "$f" | tail -c 1 | od -An -tu1 | tr -d ' ')" = 1 -a \
    "$(T "$HPM" analyze --json "$f" 2>/dev/null | python3 -c 'import json,sys; print(int(json.load(sys.stdin)["events"] > 0))')" = 1
done
out=$(T "$HPM" analyze --stacks "$TRACES/sort.hpmt" 2>&1 >/dev/null); rc=$?
check "analyze --stacks on a trace without stacks: exit $rc, says so" test $rc -eq 1 -a -n "$(echo "$out" | grep 'no call stacks in this trace')"
$MK stacks "$W/mkst.hpmt"
T "$HPM" reencode "$W/mkst.hpmt" "$W/re.hpmt"
check "a version 2 trace from the independent writer (mktrace.py) re-encodes byte-exact" cmp -s "$W/mkst.hpmt" "$W/re.hpmt"
check "mktrace stacks: 2 stacks (one defined after its use), 600 bytes on them, no file: object+offset" test "$(T "$HPM" analyze --stacks --json "$W/mkst.hpmt" | python3 -c \
  'import json,sys; d=json.load(sys.stdin)["stacks"]; print(d["distinct"], sum(s["bytes"] for s in d["top_count"]), d["top_count"][0]["site"]["function"])')" = "2 600 prog+0xfff"
for k in stack-flag-v1 stack-chunk-v1 zero-stack maps-thread; do
  $MK $k "$W/$k.hpmt"; bad "hostile: $k" "$W/$k.hpmt" "byte offset [0-9]"
done
usage_error "record --stacks=0" "bad value for --stacks: '0' (expected an integer from 1 to 256)" record --stacks=0 -o x -- true
usage_error "record --unwind names the unwinders" "(expected libunwind, libgcc or fp)" record --stacks --unwind dwarf -o x -- true
usage_error "analyze --flame-by names the metrics" "(expected peak, leaked, count or bytes)" analyze "$TRACES/sort.hpmt" --flame-by x

# --- names you can check, traces that survive how the program ended ---------------
# Every named frame of a real recording is checked against binutils' nm (the
# file, its dynamic symbols, its debug file by build-id): the symbol's extent
# must hold the frame's offset; other frames are module+0xoffset.
check "names of leaky (--unwind libunwind) hold their addresses (nm)" python3 "$ROOT/tests/hpm/check-names.py" "$W/lk-libunwind.json"
(cd "$W" && PYTHONMALLOC=malloc T "$HPM" record -q -o pyn.hpmt --stacks -- $PY -c \
  'import json, decimal; print(len(json.dumps([{"k": decimal.Decimal(i)} for i in range(2000)], default=str)))' >/dev/null)
T "$HPM" analyze --stacks --json "$W/pyn.hpmt" > "$W/pyn.json"
check "names of python3 (Debian's, stripped) hold their addresses (nm)" python3 "$ROOT/tests/hpm/check-names.py" "$W/pyn.json"
# A module loaded by dlopen after start, then SIGKILL: no maps at the end, so
# _decimal's frames are placed only if its mapping was written when its
# first stack was met.
(cd "$W" && PYTHONMALLOC=malloc T "$HPM" record -q -o pyk.hpmt --stacks -- $PY -c \
  'import decimal, os, signal; x = [decimal.Decimal(i) / 7 for i in range(200000)]; os.kill(os.getpid(), signal.SIGKILL)' >/dev/null 2>&1)
T "$HPM" analyze --stacks --top 100 --json "$W/pyk.hpmt" > "$W/pyk.json"
check "python3 SIGKILLed after dlopen: frames in _decimal placed (maps written when met)" test "$(jget "$W/pyk.json" \
  'int(any(f["object"].startswith("_decimal") and f["module"].startswith("/") for k in ("top_peak", "top_count") for s in d["stacks"][k] for f in s["stack"]))')" = 1
check "names of the SIGKILLed python3 hold their addresses (nm)" python3 "$ROOT/tests/hpm/check-names.py" "$W/pyk.json"
check "python3: every frame has its address, module and offset" test "$(jget "$W/pyn.json" \
  'int(all(f["address"].startswith("0x") and f["module"].startswith("/") and int(f["offset"], 16) > 0 for s in d["stacks"]["top_count"] for f in s["stack"]))')" = 1
ENDING=$ROOT/$BUILD/tests/hpm/ending
# chunks with magic $1 in trace $2 (FORMAT.md)
nchunks() { python3 -c '
import struct,sys
b=open(sys.argv[2],"rb").read(); o=16+struct.unpack_from("<I",b,12)[0]+4; n=0
while o+36<=len(b):
    n+=b[o:o+4]==sys.argv[1].encode(); o+=36+struct.unpack_from("<I",b,o+4)[0]
print(n)' "$1" "$2"; }
name_line=$(grep -n '/\* NAME \*/' "$ROOT/tests/hpm/ending.c" | cut -d: -f1)
for how in exit kill pipe term; do
  (cd "$W" && T "$HPM" record -q -o en-$how.hpmt --stacks -- "$ENDING" 20000 $how >/dev/null 2>&1)
done
T "$HPM" analyze --stacks --json "$W/en-exit.hpmt" > "$W/en-exit.json"
check "-O2 inlining: the leak is make_name <- make_list <- main, each inlined frame at the same address" test "$(jget "$W/en-exit.json" \
  'int((lambda st: [f["function"] for f in st[:3]] == ["make_name", "make_list", "main"] and [f["inlined"] for f in st[:3]] == [True, True, False] and st[0]["line"] == '"$name_line"' and len({f["address"] for f in st[:3]}) == 1)(d["stacks"]["top_leaked"][0]["stack"]))')" = 1
check "names of the -O2 program hold their addresses (nm)" python3 "$ROOT/tests/hpm/check-names.py" "$W/en-exit.json"
T "$HPM" analyze --stacks "$W/en-exit.hpmt" > "$W/en-exit.txt"
check "analyze text: the inlined callers, marked" sh -c 'grep -q "make_name (.*ending.c:'"$name_line"') \[inlined\]" "$1" && grep -q "<- make_list (.*ending.c:[0-9]*) \[inlined\]" "$1"' _ "$W/en-exit.txt"
T "$HPM" analyze --stacks --json "$W/en-kill.hpmt" > "$W/en-kill.json"
check "SIGKILL: the flushed events kept, their frames named (maps written at start)" test "$(jget "$W/en-kill.json" \
  'int(d["stacks"]["top_leaked"][0]["leaked_bytes"] > 0 and [f["function"] for f in d["stacks"]["top_leaked"][0]["stack"][:3]] == ["make_name", "make_list", "main"])')" = 1
T "$HPM" ls --json "$W/en-exit.hpmt" "$W/en-kill.hpmt" "$W/en-pipe.hpmt" "$W/en-term.hpmt" > "$W/en-ls.json"
check "ls: exit, SIGKILL incomplete, SIGPIPE, SIGTERM" test "$(python3 -c '
import json,sys
v=[json.loads(l)["processes"][0] for l in open(sys.argv[1])]
print([(p["ended"], p["signal"], p["complete"]) for p in v])' "$W/en-ls.json")" = \
  "[('exit', None, True), (None, None, False), ('signal', 'SIGPIPE', True), ('signal', 'SIGTERM', True)]"
check "SIGPIPE after SIG_IGN then SIG_DFL: all 20001+ allocations kept" test "$(python3 -c '
import json,sys; print(json.loads(open(sys.argv[1]).readlines()[2])["processes"][0]["events"] >= 20001)' "$W/en-ls.json")" = "True"
check "SIGTERM: all 20001+ allocations kept" test "$(python3 -c '
import json,sys; print(json.loads(open(sys.argv[1]).readlines()[3])["processes"][0]["events"] >= 20001)' "$W/en-ls.json")" = "True"
T "$HPM" ls "$W/en-kill.hpmt" "$W/en-pipe.hpmt" > "$W/en-ls.txt"
check "ls text: incomplete and SIGPIPE flagged, incomplete explained" sh -c 'grep -q " incomplete .*en-kill" "$1" && grep -q " SIGPIPE .*en-pipe" "$1" && grep -q "^incomplete: no end marker" "$1"' _ "$W/en-ls.txt"
(cd "$W" && T "$HPM" record -q -o en-pipe1.hpmt -- "$ENDING" 20000 pipe >/dev/null 2>&1)
check "without --stacks: SIGPIPE flagged, version 1, no maps chunk" test "$(T "$HPM" ls --json "$W/en-pipe1.hpmt" | python3 -c 'import json,sys; p=json.load(sys.stdin)["processes"][0]; print(p["signal"], p["events"] >= 20001)')" = "SIGPIPE True" \
  -a "$(head -c 9 "$W/en-pipe1.hpmt" | tail -c 1 | od -An -tu1 | tr -d ' ')" = 1 -a "$(nchunks HPMM "$W/en-pipe1.hpmt")" = 0
T "$HPM" reencode "$W/en-term.hpmt" "$W/en-re.hpmt"
check "re-encoding a trace with end markers and header flags is byte-exact" cmp -s "$W/en-term.hpmt" "$W/en-re.hpmt"
$MK ends "$W/mkend.hpmt"; $MK ends-none "$W/mkend0.hpmt"
T "$HPM" reencode "$W/mkend.hpmt" "$W/re.hpmt"
check "an end marker from the independent writer (mktrace.py) re-encodes byte-exact" cmp -s "$W/mkend.hpmt" "$W/re.hpmt"
check "mktrace ends: ls reads _exit(3); without the marker, incomplete" test "$(T "$HPM" ls --json "$W/mkend.hpmt" "$W/mkend0.hpmt" | python3 -c '
import json,sys; print([(p["ended"], p["status"], p["complete"]) for l in sys.stdin for p in json.loads(l)["processes"]])')" = \
  "[('_exit', 3, True), (None, None, False)]"
check "ls of a trace from a recorder without end markers: not flagged" test "$(T "$HPM" ls --json "$TRACES/sort.hpmt" | python3 -c 'import json,sys; p=json.load(sys.stdin)["processes"][0]; print(p["ended"], p["complete"])')" = "None None"

# --- processes of a recording: hpm ls, --largest ----------------------------------------
(cd "$W" && T "$HPM" record -q -o pl.hpmt -- sh -c "seq 1 30000 | sort -rn | tail -1 > /dev/null; $XT 500 fork > /dev/null")
T "$HPM" ls --json "$W/pl.hpmt" > "$W/ls.json"; rc=$?
nfiles=$(ls "$W"/pl.hpmt* | wc -l)
check "ls: exit $rc, one line per file ($nfiles), pid and parent from the headers" test $rc -eq 0 -a "$(jget "$W/ls.json" \
  'int(len(d["processes"]) == '"$nfiles"' and all(p["pid"] > 0 and p["ppid"] > 0 and p["readable"] for p in d["processes"]))')" = 1
check "ls: the first process heads the tree, its children below it" test "$(jget "$W/ls.json" \
  'int(d["processes"][0]["file"].endswith("/pl.hpmt") and d["processes"][0]["depth"] == 0 and sum(p["depth"] >= 1 for p in d["processes"]) >= 3)')" = 1
check "ls: sort is there with its events and peak" test "$(jget "$W/ls.json" \
  'int(any(p["command"].startswith("sort") and p["events"] > 10 and p["peak_live_bytes"] > 0 and p["threads"] >= 1 for p in d["processes"]))')" = 1
T "$HPM" ls "$W/pl.hpmt" > "$W/ls.txt"
check "ls text: a header and a line per process" test "$(grep -c "pl.hpmt" "$W/ls.txt")" -eq $((nfiles + 1)) -a -n "$(grep '`- ' "$W/ls.txt")"
big=$(jget "$W/ls.json" 'max(d["processes"], key=lambda p: p["peak_live_bytes"])["file"]')
T "$HPM" analyze --largest --json "$W/pl.hpmt" > "$W/lg.json" 2> "$W/lg.err"
check "analyze --largest: uses $(basename "$big"), and says so" test "$(jget "$W/lg.json" 'd["file"]')" = "$big" -a -n "$(grep "hpm analyze: using $big" "$W/lg.err")"
T "$HPM" replay --largest --json "$W/pl.hpmt" > "$W/rlg.json" 2> "$W/rlg.err"
check "replay --largest: replays $(basename "$big"), says so" test $? -eq 0 -a -n "$(grep "hpm replay: using $big" "$W/rlg.err")" -a \
  "$(jget "$W/rlg.json" 'd["peak_live_bytes"]')" = "$(jget "$W/lg.json" 'd["peak_live_bytes"]')"
T "$HPM" analyze "$W/pl.hpmt" > /dev/null 2> "$W/first.err"
check "analyze of a base with children: a note names hpm ls" test -n "$(grep "is the first of $nfiles processes" "$W/first.err")"
out=$(T "$HPM" ls "$W/nosuch.hpmt" 2>&1); rc=$?
check "ls of nothing: exit $rc, names it" test $rc -eq 1 -a -n "$(echo "$out" | grep 'no such trace')"
usage_error "ls without a base" "hpm ls: missing BASE" ls
check "ls: an exec continues its process (seq below the shell that became it)" test "$(jget "$W/ls.json" \
  'int(all(any(q["pid"] == p["pid"] and q["depth"] == p["depth"] - 1 for q in d["processes"]) for p in d["processes"] if p["file"].split("/")[-1].count(".") == 3) and any(p["file"].split("/")[-1].count(".") == 3 for p in d["processes"]))')" = 1

# --- hpm doctor ----------------------------------------------------------------------------
DOC=$ROOT/tests/hpm/doctor
T "$HPM" doctor --root "$DOC/vm-reporting" --json > "$W/dvm.json"; rc=$?
check "doctor --root (a VM with free-page reporting): exit $rc, settings read" test $rc -eq 0 -a "$(jget "$W/dvm.json" \
  'int(d["settings"]["thp"] == {"enabled": "madvise", "defrag": "madvise", "khugepaged_max_ptes_none": 511, "pmd_size_kb": 2048, "mthp": [{"size_kb": 16, "enabled": "never"}, {"size_kb": 32, "enabled": "never"}, {"size_kb": 64, "enabled": "never"}, {"size_kb": 2048, "enabled": "inherit"}]})')" = 1
check "doctor: the balloon's reporting bit (5) and order, the hypervisor flag, overcommit" test "$(jget "$W/dvm.json" \
  'int(d["settings"]["vm"] == {"hypervisor": True, "virtio_balloon": True, "free_page_reporting": True, "free_page_hinting": False, "page_reporting_order": 9, "free_reportable_mib": 11954, "free_fragments_mib": 2379} and d["settings"]["overcommit_memory"] == 0)')" = 1
check "doctor: base pages take the 2379 MiB of free fragments first (buddyinfo below order 9)" test -n "$(jget "$W/dvm.json" 'd["verdicts"][0]["reason"]' | grep 'take the 2379 MiB free in blocks smaller')"
check "doctor --root implies --quick; verdicts: THP yes, hugetlb no (empty pool, says how to fill it)" test "$(jget "$W/dvm.json" \
  'int(d["measured"] is None and [v["usable"] for v in d["verdicts"]] == [True, True, False] and "echo 512 > /proc/sys/vm/nr_hugepages" in d["verdicts"][2]["reason"])')" = 1
check "doctor: a 1 GiB heap in this VM: hugetlb=1 and a trim threshold" test "$(jget "$W/dvm.json" 'd["recommended"]["glibc_tunables"]')" = "glibc.malloc.hugetlb=1:glibc.malloc.trim_threshold=134217728"
check "doctor: every verdict carries its caveats; hugetlb=2's name fork, SIGBUS and the fallback" test "$(jget "$W/dvm.json" \
  'int(all(v["caveats"] for v in d["verdicts"]) and all(w in d["verdicts"][2]["caveats"] for w in ("fork", "SIGBUS", "falls back to THP")))')" = 1
T "$HPM" doctor --root "$DOC/metal-pool" --heap 2G --json > "$W/dmp.json"
check "doctor --root (bare metal, pools): pools by size, defer, max_ptes_none 0" test "$(jget "$W/dmp.json" \
  'int([(p["size_kb"], p["free"], p["reserved"]) for p in d["settings"]["hugetlb"]["pools"]] == [(2048, 1000, 8), (1048576, 4, 0)] and d["settings"]["thp"]["defrag"] == "defer" and d["settings"]["vm"]["virtio_balloon"] is False and d["settings"]["overcommit_memory"] == 2)')" = 1
check "doctor: a 2 GiB heap fits the 1 GiB pool: hugetlb=2 with 1 GiB pages" test "$(jget "$W/dmp.json" 'd["recommended"]["glibc_tunables"]')" = "glibc.malloc.hugetlb=2:hpmalloc.hugetlb_size=1073741824"
check "doctor: a 4 MiB heap stays on base pages" test "$(T "$HPM" doctor --root "$DOC/metal-pool" --heap 4M --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["recommended"]["glibc_tunables"])')" = "glibc.malloc.hugetlb=0"
check "doctor: THP never means mode 1 is no" test "$(T "$HPM" doctor --root "$ROOT/tests/fixtures/thp-never" --json | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["verdicts"][1]["usable"], d["settings"]["thp"]["enabled"])')" = "False never"
T "$HPM" doctor --root "$DOC/vm-reporting" > "$W/dvm.txt"
check "doctor text: settings, a verdict per mode, the tunables line" sh -c 'grep -q "^transparent huge pages: enabled madvise" "$1" && grep -q "free-page reporting on (feature bit 5)" "$1" &&
  [ "$(grep -c "^hugetlb=[012] " "$1")" = 3 ] && grep -q "GLIBC_TUNABLES=glibc.malloc.hugetlb=1" "$1"' _ "$W/dvm.txt"
T "$HPM" doctor --quick --json > "$W/dq.json"
check "doctor --quick here: the settings of this machine, nothing measured" test "$(jget "$W/dq.json" \
  'int(d["measured"] is None and d["settings"]["thp"]["enabled"] in ("always", "madvise", "never", "") and len(d["verdicts"]) == 3)')" = 1
T "$HPM" doctor --json --heap 64M --repeat 2 > "$W/dm.json"; rc=$?
check "doctor (measured): exit $rc, first-touch and TLB figures present and positive" test $rc -eq 0 -a "$(jget "$W/dm.json" \
  'int(all(d["measured"]["first_touch_ms_per_2m"][k] > 0 for k in ("base_cold", "base_warm", "thp_cold", "thp_warm")) and d["measured"]["tlb"]["ns_4k"] > 0 and d["recommended"]["heap_bytes"] == 64 << 20)')" = 1
check "doctor --repeat 2: each figure the median of 2, within its range" test "$(jget "$W/dm.json" \
  'int((lambda m: m["repeats"] == 2 and all(m["range"][k][0] <= m["first_touch_ms_per_2m"][k] <= m["range"][k][1] for k in ("base_cold", "base_warm", "thp_cold", "thp_warm")) and m["range"]["walk_ns"][0] <= m["tlb"]["walk_ns"] <= m["range"]["walk_ns"][1])(d["measured"]))')" = 1
out=$(T "$HPM" doctor --root /nonexistent 2>&1); rc=$?
check "doctor --root of a missing directory: exit $rc" test $rc -eq 1 -a -n "$(echo "$out" | grep /nonexistent)"
usage_error "doctor --heap not a size" "bad value for --heap: 'lots'" doctor --heap lots

echo "check-hpm: $passes passed, $fails failed"
[ $fails -eq 0 ]
