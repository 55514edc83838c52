#!/usr/bin/env bash
# check-install: `make install` into a scratch DESTDIR, then the installed
# tree used as a user would use it, with nothing from the build tree:
#   - the layout: libhpmalloc.so.VERSION with its soname link and the
#     development link, the static library, header, pkg-config file, hpm,
#     its private recorder, FORMAT.md and the man pages;
#   - the soname (readelf), a program built with pkg-config that needs
#     libhpmalloc.so.0 and runs with an rpath or LD_LIBRARY_PATH (and
#     does not without either), a program preloaded with the library;
#   - hpm finding its recorder, the allocator and FORMAT.md relative to
#     itself: record a real program, replay it under the installed
#     hpmalloc (and fail once that is gone);
#   - the man pages: man --warnings -l prints no warning, and they name
#     what the sources define (tests/install/check-man.py).
#   BUILD=build VERSION=0.1.0 SONAME=libhpmalloc.so.0 bash tests/install/run-install.sh
# MIT licence.
set -u
BUILD=${BUILD:-build}
MAKE=${MAKE:-make}
CC=${CC:-gcc}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
VERSION=${VERSION:?VERSION}
SONAME=${SONAME:?SONAME}
W=$(mktemp -d /tmp/check-install.XXXXXX)
trap 'rm -rf "$W"' EXIT
P=/opt/hpm
I=$W/root$P
pass=0; fail=0
ok()   { pass=$((pass+1)); echo "ok   $*"; }
bad()  { fail=$((fail+1)); echo "FAIL $*"; }
check() { local what=$1; shift; if "$@"; then ok "$what"; else bad "$what"; fi; }

if ! $MAKE -C "$ROOT" --no-print-directory install BUILD="$BUILD" PREFIX=$P DESTDIR="$W/root" >"$W/install.log" 2>&1; then
  cat "$W/install.log"; echo "FAIL make install"; exit 1
fi
if grep -q "man pages not installed" "$W/install.log"; then
  bad "make install installed the man pages ($(grep 'man pages' "$W/install.log"))"
fi

# --- layout --------------------------------------------------------------------
for f in lib/libhpmalloc.so.$VERSION lib/libhpmalloc.a include/hpmalloc.h lib/pkgconfig/hpmalloc.pc bin/hpm \
         lib/hpmalloc/libhpmtrace.so share/doc/hpmalloc/FORMAT.md share/man/man1/hpm.1 share/man/man7/hpmalloc.7; do
  check "installed $f" test -f "$I/$f" -a ! -L "$I/$f"
done
check "lib/$SONAME -> libhpmalloc.so.$VERSION" test "$(readlink "$I/lib/$SONAME")" = "libhpmalloc.so.$VERSION"
check "lib/libhpmalloc.so -> $SONAME (development link)" test "$(readlink "$I/lib/libhpmalloc.so")" = "$SONAME"
check "no recorder in the public library directory" test ! -e "$I/lib/libhpmtrace.so"
soname=$(readelf -d "$I/lib/libhpmalloc.so.$VERSION" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
check "SONAME is $SONAME (readelf: $soname)" test "$soname" = "$SONAME"

# --- a program built with pkg-config ----------------------------------------------
sed -e "s|^prefix=.*|prefix=$I|" -e "s|^libdir=.*|libdir=$I/lib|" -e "s|^includedir=.*|includedir=$I/include|" \
  "$I/lib/pkgconfig/hpmalloc.pc" >"$W/hpmalloc.pc"
check "hpmalloc.pc: Version $VERSION" grep -qx "Version: $VERSION" "$W/hpmalloc.pc"
flags=$(PKG_CONFIG_PATH=$W pkg-config --cflags --libs hpmalloc)
cat >"$W/app.c" <<'EOF'
#include <hpmalloc.h>
#include <stdio.h>
#include <stdlib.h>
int main(void) {
  void *p = malloc(1000);
  struct hpmalloc_stats s;
  if (hpmalloc_stats(&s, sizeof s) != 0) return 1;
  printf("%s %zu\n", hpmalloc_version(), s.bytes_in_use);
  free(p);
  return s.bytes_in_use >= 1000 ? 0 : 1;
}
EOF
# shellcheck disable=SC2086 # the flags are words
if $CC -o "$W/app" "$W/app.c" $flags -Wl,-rpath,"$I/lib" && $CC -o "$W/app-norpath" "$W/app.c" $flags; then
  needed=$(readelf -d "$W/app" | sed -n 's/.*Shared library: \[\(libhpmalloc[^]]*\)\]/\1/p')
  check "the program needs $SONAME (readelf: $needed)" test "$needed" = "$SONAME"
  out=$("$W/app" 2>&1)
  check "with an rpath it runs on hpmalloc $VERSION (prints: $out)" test "${out%% *}" = "$VERSION"
  out=$(LD_LIBRARY_PATH=$I/lib "$W/app-norpath" 2>&1)
  check "with LD_LIBRARY_PATH it runs on hpmalloc (prints: $out)" test "${out%% *}" = "$VERSION"
  out=$("$W/app-norpath" 2>&1)
  check "with neither, the loader does not find $SONAME" grep -q "$SONAME: cannot open shared object file" <<<"$out"
else
  bad "build a program with pkg-config ($flags)"
fi

# --- preloaded ------------------------------------------------------------------------
out=$(HPMALLOC_VERBOSE=1 LD_PRELOAD=$I/lib/$SONAME sort </dev/null 2>&1)
check "LD_PRELOAD=$SONAME: sort runs on it (HPMALLOC_VERBOSE line)" grep -q "^hpmalloc $VERSION: hugetlb mode" <<<"$out"

# --- hpm from the installed tree ---------------------------------------------------------
hpm() { env -u HPM_RECORDER -u HPM_HPMALLOC "$I/bin/hpm" "$@"; }
check "hpm --help names the installed FORMAT.md" \
  grep -qx "Trace format: $(realpath "$I/share/doc/hpmalloc/FORMAT.md")" <(hpm --help)
out=$(cd "$W" && hpm record -q -o env.hpmt -- env 2>&1)
check "hpm record preloads the installed recorder" \
  grep -qx "LD_PRELOAD=$(realpath "$I/lib/hpmalloc/libhpmtrace.so")" <<<"$out"
seq 20000 | shuf --random-source=<(yes) >"$W/numbers"
(cd "$W" && hpm record -q -o sort.hpmt -- sort -n numbers >sorted)
check "hpm record: sort's output unchanged" cmp -s "$W/sorted" <(sort -n "$W/numbers")
events=$(hpm dump "$W/sort.hpmt" | sed -n '1s/.* events \([0-9]*\)$/\1/p')
check "hpm record: sort's trace has events ($events)" test "${events:-0}" -gt 100
hpm replay "$W/sort.hpmt" --allocator hpmalloc --tunables hpmalloc.verbose=1 --json >"$W/replay.json" 2>"$W/replay.err"
check "hpm replay --allocator hpmalloc runs the trace on the installed library" \
  grep -q "^hpmalloc $VERSION: hugetlb mode" "$W/replay.err"
check "hpm replay reports the operations" grep -q "\"allocator\":\"hpmalloc\".*\"ops\":[1-9]" "$W/replay.json"
mkdir "$W/aside" && mv "$I"/lib/libhpmalloc.so* "$W/aside/"
hpm replay "$W/sort.hpmt" --allocator hpmalloc >/dev/null 2>"$W/replay.err"; rc=$?
check "without the installed library, hpm replay --allocator hpmalloc fails (exit $rc: $(head -1 "$W/replay.err"))" \
  test $rc -ne 0
mv "$W/aside/"* "$I/lib/"

# --- man pages ----------------------------------------------------------------------------
if [ -f "$I/share/man/man1/hpm.1" ]; then
  while read -r line; do
    case $line in ok*) ok "${line#ok   }" ;; *) bad "${line#FAIL }" ;; esac
  done < <(/usr/bin/python3 "$ROOT/tests/install/check-man.py" "$ROOT" "$I/share/man/man1/hpm.1" \
             "$I/share/man/man7/hpmalloc.7" 2>&1)
fi

echo "check-install: $pass passed, $fail failed"
[ $fail -eq 0 ]
