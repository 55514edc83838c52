#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Run glibc 2.36's malloc tests (built by mk/30-glibc.mk) against hpmalloc,
# preloaded and linked statically, in every glibc.malloc.hugetlb mode, and
# print the results and one summary line:
#   glibc malloc tests: P passed, F failed, S skipped / R run, E excluded
# Exit status: 0 when nothing failed, 1 when a test failed, 2 on a setup
# error.  MIT licence.
#
# Usage: run.sh --src DIR --bin DIR --out DIR [--against hpmalloc|glibc]
#               [--preload LIB.so] [--summary FILE] [--jobs N]
#               [--tests "NAME..."] [--links "dynamic static"] [--modes "0 1 2"]
# --against glibc runs the same binaries without hpmalloc (the static ones
# must then have been linked without libhpmalloc.a): it validates the
# harness itself, every test must pass there.
set -u
set -o pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CONF=$HERE/tests.conf
EXCLUDED=$HERE/excluded.txt

# ---------------------------------------------------------------------------
# One test run (called through xargs): NAME LINK MODE TIMEOUT ENV
# Context comes from the environment: GT_BIN GT_OUT GT_AGAINST GT_PRELOAD
# GT_VERIFIED_<link>_<mode> (1 when the allocator was verified).
run_one() {
  local name=$1 link=$2 mode=$3 timeout=$4 envspec=$5
  local id="$name.$link.h$mode"
  local bin="$GT_BIN/$link/$name"
  local out="$GT_OUT/out/$id.out" res="$GT_OUT/res/$id"
  local tmp="$GT_OUT/tmp/$id"
  rm -rf "$tmp" && mkdir -p "$tmp"

  # The environment: the caller's, minus anything that would configure the
  # allocator, plus the test's own settings and the hugetlb mode.
  local -a unset_args=(-u GLIBC_TUNABLES -u LD_PRELOAD)
  local v
  for v in $(compgen -e); do
    case $v in MALLOC_*|HPMALLOC_*) unset_args+=(-u "$v");; esac
  done
  local tunables=""
  local -a set_args=()
  if [ "$envspec" != "-" ]; then
    local -a parts
    IFS=, read -r -a parts <<< "$envspec"
    for v in "${parts[@]}"; do
      case $v in
        GLIBC_TUNABLES=*) tunables=${v#GLIBC_TUNABLES=} ;;
        *) set_args+=("$v") ;;
      esac
    done
  fi
  if [ "$mode" != 0 ]; then
    tunables=${tunables:+$tunables:}glibc.malloc.hugetlb=$mode
  fi
  [ -n "$tunables" ] && set_args+=("GLIBC_TUNABLES=$tunables")
  if [ "$link" = dynamic ] && [ "$GT_AGAINST" = hpmalloc ]; then
    set_args+=("LD_PRELOAD=$GT_PRELOAD")
  fi
  set_args+=("TMPDIR=$tmp" "HPM_TEST_TIMEOUT=$timeout")

  if [ ! -x "$bin" ]; then
    # Did not compile or link: the build log stands for the output.
    local log="$bin.log"
    [ -f "$log" ] || log="$GT_BIN/obj/$name.o.log"
    { echo "# not built: $bin"; cat "$log" 2>/dev/null; } > "$out"
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' FAIL "$name" "$link" "$mode" 0.0 "not built (compile or link error)" > "$res"
    printf '%-4s %-30s %-7s hugetlb=%s %6ss %s\n' FAIL "$name" "$link" "$mode" 0.0 "not built (compile or link error)"
    return 0
  fi

  # TIMEOUTFACTOR (glibc's name; the test driver reads it too) scales the
  # runner's own limit: a slow build (make coverage) sets it.
  local limit=$((timeout * ${TIMEOUTFACTOR:-1} + 15))
  local start end rc
  start=$(date +%s.%N)
  (
    cd "$tmp" || exit 2
    {
      echo "# ${set_args[*]} $bin"
      exec timeout -k 5 "$limit" env "${unset_args[@]}" "${set_args[@]}" "$bin"
    } > "$out" 2>&1 < /dev/null
  )
  rc=$?
  end=$(date +%s.%N)
  local secs
  secs=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')

  local status detail
  if [ "$rc" -eq 0 ]; then
    if grep -q '^FAIL' "$out"; then
      status=FAIL; detail="exit 0 but printed $(grep -m1 '^FAIL' "$out")"
    else
      status=PASS; detail=""
    fi
  elif [ "$rc" -eq 77 ]; then
    status=SKIP
    detail=$(grep -v '^#' "$out" | grep -v '^[[:space:]]*$' | tail -n 1)
    detail="unsupported: ${detail:-no reason printed}"
  elif [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    status=FAIL; detail="exit $rc: killed by the runner after $limit s (the test driver did not time out)"
  elif [ "$rc" -gt 128 ]; then
    status=FAIL; detail="exit $rc: the test driver died of signal $((rc - 128)) ($(kill -l $((rc - 128)) 2>/dev/null))"
  else
    status=FAIL; detail="exit $rc"
  fi
  local verified_var="GT_VERIFIED_${link}_$mode"
  if [ "$status" = PASS ] && [ "${!verified_var:-0}" != 1 ]; then
    status=FAIL; detail="passed, but not against hpmalloc (allocator check failed)"
  fi
  [ "$status" = FAIL ] || rm -rf "$tmp"
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$status" "$name" "$link" "$mode" "$secs" "$detail" > "$res"
  printf '%-4s %-30s %-7s hugetlb=%s %6ss %s\n' "$status" "$name" "$link" "$mode" "$secs" "$detail"
}

if [ "${1:-}" = --one ]; then
  shift
  run_one "$@"
  exit 0
fi

# ---------------------------------------------------------------------------
die() { echo "run.sh: $*" >&2; exit 2; }

SRC="" BIN="" OUT="" AGAINST=hpmalloc PRELOAD="" SUMMARY="" JOBS=2
ONLY="" LINKS="dynamic static" MODES="0 1 2" LINKS_SET="" MODES_SET=""
while [ $# -gt 0 ]; do
  case $1 in
    --src) SRC=$2; shift 2 ;;
    --bin) BIN=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --against) AGAINST=$2; shift 2 ;;
    --preload) PRELOAD=$2; shift 2 ;;
    --summary) SUMMARY=$2; shift 2 ;;
    --jobs) JOBS=$2; shift 2 ;;
    --tests) ONLY=$2; shift 2 ;;
    --links) LINKS=$2; LINKS_SET=1; shift 2 ;;
    --modes) MODES=$2; MODES_SET=1; shift 2 ;;
    *) die "unknown argument: $1" ;;
  esac
done
[ -n "$SRC" ] && [ -n "$BIN" ] && [ -n "$OUT" ] || die "--src, --bin and --out are required"
case $AGAINST in hpmalloc|glibc) ;; *) die "--against must be hpmalloc or glibc" ;; esac
abspath() { (cd "$(dirname "$1")" && echo "$(pwd)/$(basename "$1")"); }
SRC=$(abspath "$SRC"); BIN=$(abspath "$BIN"); mkdir -p "$OUT"; OUT=$(abspath "$OUT")
if [ "$AGAINST" = hpmalloc ]; then
  [ -f "$PRELOAD" ] || die "--preload: no such library: $PRELOAD"
  PRELOAD=$(abspath "$PRELOAD")
fi

# --- the test lists -----------------------------------------------------------
declare -A T_TIMEOUT T_MODES T_ENV EXCL
ALL_TESTS=()
while read -r name timeout modes envspec rest; do
  case $name in ''|'#'*) continue ;; esac
  [ -n "$envspec" ] || die "tests.conf: incomplete line for $name"
  ALL_TESTS+=("$name")
  T_TIMEOUT[$name]=$timeout; T_MODES[$name]=${modes//,/ }; T_ENV[$name]=$envspec
done < "$CONF"
N_EXCLUDED=0
while read -r name reason; do
  case $name in ''|'#'*) continue ;; esac
  EXCL[$name]=$reason
  N_EXCLUDED=$((N_EXCLUDED + 1))
done < "$EXCLUDED"

# Every test glibc's malloc/Makefile declares must be run or excluded.
makefile_tests() {
  sed -e ':a' -e '/\\$/N; s/\\\n/ /; ta' "$SRC/malloc/Makefile" \
    | sed -n -E 's/^(tests|tests-static|tests-internal|test-srcs)[[:space:]]*[:+]?=(.*)$/\2/p' \
    | tr ' \t' '\n\n' | grep -v -e '^$' -e '^\$' | sort -u
}
if [ -f "$SRC/malloc/Makefile" ]; then
  for t in $(makefile_tests); do
    [ -n "${T_TIMEOUT[$t]:-}" ] || [ -n "${EXCL[$t]:-}" ] \
      || die "glibc test $t is neither in tests.conf nor in excluded.txt"
  done
else
  die "$SRC/malloc/Makefile missing: extraction incomplete"
fi
for t in "${ALL_TESTS[@]}"; do
  [ -z "${EXCL[$t]:-}" ] || die "$t is both in tests.conf and in excluded.txt"
done

TESTS=("${ALL_TESTS[@]}")
if [ -n "$ONLY" ]; then
  TESTS=()
  for t in $ONLY; do
    [ -n "${T_TIMEOUT[$t]:-}" ] || die "not in tests.conf: $t"
    TESTS+=("$t")
  done
fi

rm -rf "$OUT/out" "$OUT/res" "$OUT/tmp"
mkdir -p "$OUT/out" "$OUT/res" "$OUT/tmp"
RESULTS=$OUT/results.txt

# --- is the allocator under test really hpmalloc? --------------------------
# Dynamic: the probe, under the preload and each mode's tunables, must find
# hpmalloc_version and get malloc/free from the same object.  Static: each
# binary must define hpmalloc_version and must not contain glibc's malloc
# (_int_malloc, a local symbol of glibc's malloc.o).
verify_lines=()
for link in $LINKS; do
  for mode in $MODES; do
    var="GT_VERIFIED_${link}_$mode"
    if [ "$AGAINST" = glibc ]; then
      export "$var=1"
      continue
    fi
    if [ "$link" = dynamic ]; then
      tun=""; [ "$mode" != 0 ] && tun="GLIBC_TUNABLES=glibc.malloc.hugetlb=$mode"
      if msg=$(env -u GLIBC_TUNABLES LD_PRELOAD="$PRELOAD" $tun "$BIN/probe" 2>&1); then
        export "$var=1"
        verify_lines+=("allocator check: dynamic hugetlb=$mode: $msg")
      else
        export "$var=0"
        verify_lines+=("allocator check FAILED: dynamic hugetlb=$mode: $msg")
      fi
    else
      export "$var=1"
    fi
  done
done
STATIC_BAD=()
if [ "$AGAINST" = hpmalloc ] && [[ " $LINKS " == *" static "* ]]; then
  command -v nm >/dev/null || die "nm (binutils) is needed to check the static binaries"
  for t in "${TESTS[@]}"; do
    [ -x "$BIN/static/$t" ] || continue     # not built: fails on its own
    syms=$(nm "$BIN/static/$t" 2>/dev/null) || { STATIC_BAD+=("$t: nm failed"); continue; }
    if ! grep -q ' [TtDdRr] hpmalloc_version$' <<<"$syms"; then
      STATIC_BAD+=("$t: no hpmalloc_version")
    elif grep -q ' [Tt] _int_malloc$' <<<"$syms"; then
      STATIC_BAD+=("$t: glibc's malloc is linked in")
    fi
  done
  if [ ${#STATIC_BAD[@]} -eq 0 ]; then
    verify_lines+=("allocator check: static: ${#TESTS[@]} binaries define hpmalloc_version and contain no glibc malloc")
  else
    verify_lines+=("allocator check FAILED: static: ${STATIC_BAD[*]}")
    for mode in $MODES; do export "GT_VERIFIED_static_$mode=0"; done
  fi
fi
[ "$AGAINST" = glibc ] && verify_lines+=("allocator: glibc's own malloc (harness validation, no hpmalloc)")
printf '%s\n' "${verify_lines[@]}"

# --- run ----------------------------------------------------------------------
export GT_BIN=$BIN GT_OUT=$OUT GT_AGAINST=$AGAINST GT_PRELOAD=$PRELOAD
jobs_file=$OUT/jobs.txt
: > "$jobs_file"
for t in "${TESTS[@]}"; do
  for link in $LINKS; do
    for mode in $MODES; do
      [[ " ${T_MODES[$t]} " == *" $mode "* ]] || continue
      printf '%s %s %s %s %s\n' "$t" "$link" "$mode" "${T_TIMEOUT[$t]}" "${T_ENV[$t]}" >> "$jobs_file"
    done
  done
done
# Longest first, so that two slow tests do not end up last.
sort -k4,4nr -s "$jobs_file" -o "$jobs_file"
start=$(date +%s)
xargs -P "$JOBS" -L 1 bash "$HERE/run.sh" --one < "$jobs_file"
elapsed=$(( $(date +%s) - start ))

# --- report -------------------------------------------------------------------
P=0 F=0 S=0
declare -A CELL_P CELL_R
{
  echo "# glibc 2.36 malloc tests against $AGAINST, $(date -u +%Y-%m-%dT%H:%M:%SZ), ${elapsed}s"
  printf '%s\n' "${verify_lines[@]}" | sed 's/^/# /'
  for t in "${TESTS[@]}"; do
    for link in $LINKS; do
      for mode in $MODES; do
        f=$OUT/res/$t.$link.h$mode
        [ -f "$f" ] || continue
        IFS=$'\t' read -r status name l m secs detail < "$f"
        case $status in PASS) P=$((P+1));; FAIL) F=$((F+1));; SKIP) S=$((S+1));; esac
        CELL_R[$link.$mode]=$(( ${CELL_R[$link.$mode]:-0} + 1 ))
        [ "$status" = PASS ] && CELL_P[$link.$mode]=$(( ${CELL_P[$link.$mode]:-0} + 1 ))
        printf '%-4s %-30s %-7s hugetlb=%s %6ss %s\n' "$status" "$name" "$l" "$m" "$secs" "$detail"
      done
    done
  done
} > "$RESULTS.tmp"
missing=$(( $(wc -l < "$jobs_file") - P - F - S ))
if [ "$missing" -ne 0 ]; then
  echo "run.sh: $missing test runs left no result" >&2
  F=$((F + missing))
fi

table() {
  printf '%-8s' "passed"
  for mode in $MODES; do printf ' %12s' "hugetlb=$mode"; done
  echo
  for link in $LINKS; do
    printf '%-8s' "$link"
    for mode in $MODES; do
      printf ' %12s' "${CELL_P[$link.$mode]:-0}/${CELL_R[$link.$mode]:-0}"
    done
    echo
  done
}
failures() {
  local f t link mode
  for f in "$OUT"/res/*; do
    [ -f "$f" ] || continue
    IFS=$'\t' read -r status t link mode secs detail < "$f"
    [ "$status" = FAIL ] || continue
    echo "--- FAIL $t $link hugetlb=$mode: $detail"
    echo "    output: $OUT/out/$t.$link.h$mode.out"
    # The lines that say what went wrong, else the first lines.
    local o="$OUT/out/$t.$link.h$mode.out" key
    key=$(grep -v '^#' "$o" | grep -m 6 -E '^(error:|Timed out|Didn.t expect|Expected |Incorrect |FAIL|[a-z_]+\(\): )')
    [ -n "$key" ] || key=$(grep -v '^#' "$o" | grep -m 6 -iE 'error|fail|timed out|signal|invalid|corrupt|double free|abort')
    [ -n "$key" ] || key=$(grep -v '^#' "$o" | head -n 6)
    printf '%s\n' "$key" | sed 's/^/    | /'
  done
}

R=$((P + F + S))
line="glibc malloc tests: $P passed, $F failed, $S skipped / $R run, $N_EXCLUDED excluded"
{
  cat "$RESULTS.tmp"
  echo
  table
  if [ "$F" -gt 0 ]; then echo; echo "failures:"; failures; fi
  echo
  echo "$line"
} > "$RESULTS"
rm -f "$RESULTS.tmp"

echo
table
if [ "$F" -gt 0 ]; then echo; echo "failures:"; failures; fi
echo
echo "results: $RESULTS (${elapsed}s)"
echo "$line"
if [ -n "$SUMMARY" ] && [ -n "$ONLY$LINKS_SET$MODES_SET" ]; then
  echo "(a subset ran: $SUMMARY not updated)"
elif [ -n "$SUMMARY" ]; then
  mkdir -p "$(dirname "$SUMMARY")"
  echo "$line" > "$SUMMARY"
fi
[ "$F" -eq 0 ]
