#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Real programs under LD_PRELOAD=libhpmalloc.so: python3, perl, sort, xz
# and gcc must give the same output as without the preload, in hugetlb
# modes 0 (default), 1 and 2.  First, the preload must really take effect.
# Usage: real-programs.sh path/to/libhpmalloc.so [summary-file]   MIT licence.
set -u
so=${1:?usage: real-programs.sh LIBHPMALLOC_SO [SUMMARY]}
summary=${2:-}
so=$(cd "$(dirname "$so")" && pwd)/$(basename "$so")
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d /tmp/hpmalloc-progs.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
TMO=${HPT_TIMEOUT:-300}
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3
export PYTHONHASHSEED=0 PERL_HASH_SEED=0 LC_ALL=C
unset GLIBC_TUNABLES LD_PRELOAD

pass=0; fail=0
ok() { pass=$((pass+1)); echo "PASS $1"; }
ko() { fail=$((fail+1)); echo "FAIL $1"; }

# --- the preload takes effect --------------------------------------------
got=$(LD_PRELOAD=$so timeout "$TMO" "$PY" -c 'import ctypes; print(bool(ctypes.CDLL(None).hpmalloc_version))' 2>&1)
if [ "$got" = True ]; then ok "preload effective (python3 resolves hpmalloc_version)"
else ko "preload effective: python3 printed '$got'"; fi
if LD_PRELOAD=$so timeout "$TMO" cat /proc/self/maps | grep -q libhpmalloc; then ok "preload effective (cat maps libhpmalloc.so)"
else ko "preload effective: libhpmalloc.so not in cat's /proc/self/maps"; fi

# --- inputs (made without the preload) -----------------------------------
awk 'BEGIN { srand(7); for (i = 0; i < 200000; i++) printf "%08d %s line-%d\n", int(rand() * 1e8), substr("abcdefghijklmnopqrstuvwxyz", int(rand() * 26) + 1, int(rand() * 10)), i }' >"$tmp/sort.in"
# ~20 MB, compressible but not trivially: numbers, words, repeats
awk 'BEGIN { srand(11); while (n < 20000000) { s = sprintf("%d %x %s %d\n", i, int(rand() * 1e9), (rand() < 0.5 ? "alpha beta gamma" : "delta"), i % 977); printf "%s", s; n += length(s); i++ } }' >"$tmp/xz.in"
cp "$here/gcc-prog.c" "$tmp/prog.c"
insum=$(sha256sum <"$tmp/xz.in" | cut -d' ' -f1)

# run NAME OUTFILE -- CMD...   (environment from the caller)
runc() {
  local out=$1; shift
  timeout "$TMO" "$@" >"$out" 2>"$out.err"
}

# A case: the command writes its result to stdout; compare with the reference.
case_cmp() { # label ref mode cmd...
  local label=$1 ref=$2 mode=$3; shift 3
  local out="$tmp/$label.$mode.out"
  local envs=(LD_PRELOAD="$so")
  [ "$mode" != default ] && envs+=(GLIBC_TUNABLES=glibc.malloc.hugetlb=$mode)
  env "${envs[@]}" timeout "$TMO" "$@" >"$out" 2>"$out.err"
  local rc=$?
  if [ $rc -ne 0 ]; then
    ko "$label hugetlb=$mode: exit status $rc ($(head -c 300 "$out.err" | tr '\n' '|'))"
    return
  fi
  if cmp -s "$ref" "$out"; then ok "$label hugetlb=$mode"
  else ko "$label hugetlb=$mode: output differs from the run without preload ($(diff "$ref" "$out" | head -5 | tr '\n' '|'))"; fi
}

# references without preload
runc "$tmp/py.ref" "$PY" "$here/prog.py" || ko "python3 reference run failed"
runc "$tmp/pl.ref" perl "$here/prog.pl" || ko "perl reference run failed"
runc "$tmp/sort.ref" sort --parallel=2 -S 64M "$tmp/sort.in" || ko "sort reference run failed"
runc "$tmp/xz.ref" xz -T2 -3 -c "$tmp/xz.in" || ko "xz reference run failed"
(cd "$tmp" && timeout "$TMO" gcc -O2 -o ref-prog prog.c && ./ref-prog >gcc.ref && gcc -O2 -S -o ref.s prog.c) || ko "gcc reference run failed"

for mode in default 1 2; do
  case_cmp python3 "$tmp/py.ref" $mode "$PY" "$here/prog.py"
  case_cmp perl "$tmp/pl.ref" $mode perl "$here/prog.pl"
  case_cmp sort "$tmp/sort.ref" $mode sort --parallel=2 -S 64M "$tmp/sort.in"
  # xz: the compressed stream is deterministic; decompressing gives the input back
  case_cmp xz-compress "$tmp/xz.ref" $mode xz -T2 -3 -c "$tmp/xz.in"
  envs=(LD_PRELOAD="$so"); [ $mode != default ] && envs+=(GLIBC_TUNABLES=glibc.malloc.hugetlb=$mode)
  if [ -s "$tmp/xz-compress.$mode.out" ]; then
    sum=$(env "${envs[@]}" timeout "$TMO" xz -d -c "$tmp/xz-compress.$mode.out" | sha256sum | cut -d' ' -f1)
    if [ "$sum" = "$insum" ]; then ok "xz-decompress hugetlb=$mode"
    else ko "xz-decompress hugetlb=$mode: checksum $sum, input $insum"; fi
  fi
  # gcc: compile under the preload (gcc, cc1, as, collect2, ld), run the result
  if (cd "$tmp" && env "${envs[@]}" timeout "$TMO" gcc -O2 -o prog-$mode prog.c 2>gcc-$mode.err &&
      env "${envs[@]}" timeout "$TMO" gcc -O2 -S -o prog-$mode.s prog.c 2>>gcc-$mode.err); then
    if (cd "$tmp" && ./prog-$mode | cmp -s - gcc.ref && cmp -s ref.s prog-$mode.s); then ok "gcc hugetlb=$mode"
    else ko "gcc hugetlb=$mode: compiled program's output or assembly differs"; fi
  else
    ko "gcc hugetlb=$mode: compilation failed ($(head -c 300 "$tmp/gcc-$mode.err" | tr '\n' '|'))"
  fi
done

echo "real-programs: $pass passed, $fail failed"
[ -n "$summary" ] && echo "real programs under preload: $pass passed, $fail failed" >>"$summary"
[ $fail -eq 0 ]
