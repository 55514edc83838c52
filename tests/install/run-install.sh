#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
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
#   BUILD=build VERSION=0.2.0 SONAME=libhpmalloc.so.0 bash tests/install/run-install.sh
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
# shellcheck source=tests/install/common.sh
. "$ROOT/tests/install/common.sh"

# Every directory named, so none comes from the caller's command line.
if ! $MAKE -C "$ROOT" --no-print-directory install BUILD="$BUILD" DESTDIR="$W/root" PREFIX=$P LIBDIR=$P/lib \
     INCDIR=$P/include BINDIR=$P/bin MANDIR=$P/share/man DOCDIR=$P/share/doc/hpmalloc PKGLIBDIR=$P/lib/hpmalloc \
     >"$W/install.log" 2>&1; then
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
check_soname "$I/lib/libhpmalloc.so.$VERSION"

# --- a program built with pkg-config ----------------------------------------------
sed -e "s|^prefix=.*|prefix=$I|" -e "s|^libdir=.*|libdir=$I/lib|" -e "s|^includedir=.*|includedir=$I/include|" \
  "$I/lib/pkgconfig/hpmalloc.pc" >"$W/hpmalloc.pc"
check "hpmalloc.pc: Version $VERSION" grep -qx "Version: $VERSION" "$W/hpmalloc.pc"
flags=$(PKG_CONFIG_PATH=$W pkg-config --cflags --libs hpmalloc)
# shellcheck disable=SC2086 # the flags are words
check_app app-rpath $flags -Wl,-rpath,"$I/lib"
needed=$(readelf -d "$W/app-rpath" | sed -n 's/.*Shared library: \[\(libhpmalloc[^]]*\)\]/\1/p')
check "the program needs $SONAME (readelf: $needed)" test "$needed" = "$SONAME"
# shellcheck disable=SC2086
APP_ENV="LD_LIBRARY_PATH=$I/lib" check_app app-ldpath $flags
out=$("$W/app-ldpath" 2>&1)
check "without an rpath or LD_LIBRARY_PATH, the loader does not find $SONAME" \
  grep -q "$SONAME: cannot open shared object file" <<<"$out"

# --- preloaded ------------------------------------------------------------------------
check_preload "$I/lib/$SONAME"

# --- hpm from the installed tree ---------------------------------------------------------
check_hpm "$I/bin/hpm" "$I/lib/hpmalloc/libhpmtrace.so" "$I/lib" "$I/share/doc/hpmalloc/FORMAT.md"

# --- man pages ----------------------------------------------------------------------------
check_man "$I/share/man/man1/hpm.1" "$I/share/man/man7/hpmalloc.7"

echo "check-install: $pass passed, $fail failed"
[ $fail -eq 0 ]
