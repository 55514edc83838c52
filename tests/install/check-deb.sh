#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# check-deb: build the Debian packages (make deb: dpkg-buildpackage, then
# lintian, whose errors fail), install libhpmalloc0, libhpmalloc-dev and
# hpmalloc-tools into a scratch root with dpkg, and use them from there:
#   - each package holds exactly its files (dpkg-deb -c), the soname is
#     libhpmalloc.so.0 and the package is named after it;
#   - dpkg --instdir --admindir installs the three (their dependencies on
#     each other checked, only those on the system's own packages such as
#     libc6 ignored, after checking they are installed here) and purges
#     them leaving no file behind;
#   - a preloaded sort, a program built with the package's pkg-config file
#     (dynamic) and one linked with libhpmalloc.a (static) run on hpmalloc;
#   - hpm records sort and replays it under the packaged libhpmalloc.so.0,
#     finding its recorder and FORMAT.md (in /usr/share/doc/hpmalloc-tools)
#     relative to itself;
#   - the packaged man pages render without warnings.
# Skips, saying why, where a tool is missing (build-aux/deps.sh check
# installs them).
#   BUILD=build VERSION=0.2.0 SONAME=libhpmalloc.so.0 bash tests/install/check-deb.sh
# MIT licence.
set -u
BUILD=${BUILD:-build}
MAKE=${MAKE:-make}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
VERSION=${VERSION:?VERSION}
SONAME=${SONAME:?SONAME}

for tool in dpkg-buildpackage:dpkg-dev dh:debhelper scdoc:scdoc lintian:lintian man:man-db readelf:binutils; do
  if ! command -v "${tool%%:*}" >/dev/null; then
    echo "SKIP check-deb: ${tool%%:*} not found (Debian package ${tool#*:}; bash build-aux/deps.sh check installs it)"
    echo "check-deb: 0 passed, 0 failed, 1 skipped"
    exit 0
  fi
done

W=$(mktemp -d /tmp/check-deb.XXXXXX)
trap 'rm -rf "$W"' EXIT
# shellcheck source=tests/install/common.sh
. "$ROOT/tests/install/common.sh"

# --- build --------------------------------------------------------------------------
case $BUILD in /*) OUT=$BUILD/deb ;; *) OUT=$ROOT/$BUILD/deb ;; esac
if ! $MAKE -C "$ROOT" --no-print-directory deb BUILD="$BUILD"; then
  echo "FAIL make deb"
  echo "check-deb: 0 passed, 1 failed"
  exit 1
fi
arch=$(dpkg --print-architecture)
T=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
PKGS="libhpmalloc0 libhpmalloc-dev hpmalloc-tools"
debs=()
for p in $PKGS; do debs+=("$OUT/${p}_${VERSION}_$arch.deb"); done
for d in "${debs[@]}"; do check "built ${d##*/}" test -f "$d"; done
check "lintian: no error" test "$(grep -c '^E: ' "$OUT/lintian.txt")" -eq 0

# --- contents -----------------------------------------------------------------------
# Files and links of each package (not directories), as dpkg-deb lists them.
contents() { dpkg-deb -c "$1" | awk '$1 !~ /^d/ { print $6 ($7 == "->" ? " -> " $8 : "") }' | sed 's|^\./||' | sort; }
expect_libhpmalloc0="usr/lib/$T/$SONAME -> libhpmalloc.so.$VERSION
usr/lib/$T/libhpmalloc.so.$VERSION
usr/share/doc/libhpmalloc0/changelog.gz
usr/share/doc/libhpmalloc0/copyright"
expect_libhpmalloc_dev="usr/include/hpmalloc.h
usr/lib/$T/libhpmalloc.a
usr/lib/$T/libhpmalloc.so -> $SONAME
usr/lib/$T/pkgconfig/hpmalloc.pc
usr/share/doc/libhpmalloc-dev/NEWS.gz
usr/share/doc/libhpmalloc-dev/README.md.gz
usr/share/doc/libhpmalloc-dev/changelog.gz
usr/share/doc/libhpmalloc-dev/copyright
usr/share/man/man7/hpmalloc.7.gz"
expect_hpmalloc_tools="usr/bin/hpm
usr/lib/$T/hpmalloc/libhpmtrace.so
usr/share/doc/hpmalloc-tools/FORMAT.md
usr/share/doc/hpmalloc-tools/README.md.gz
usr/share/doc/hpmalloc-tools/changelog.gz
usr/share/doc/hpmalloc-tools/copyright
usr/share/lintian/overrides/hpmalloc-tools
usr/share/man/man1/hpm.1.gz"
for i in 0 1 2; do
  p=$(echo $PKGS | cut -d' ' -f$((i + 1)))
  var=expect_${p//-/_}
  want=$(sort <<<"${!var}")
  got=$(contents "${debs[$i]}")
  check "$p holds exactly its $(wc -l <<<"$want") files" test "$got" = "$want"
  [ "$got" = "$want" ] || diff <(echo "$want") <(echo "$got") | sed 's/^/     /'
done
check "the library package is named after the soname ($SONAME: libhpmalloc${SONAME##*.so.})" \
  test "libhpmalloc${SONAME##*.so.}" = libhpmalloc0
check "libhpmalloc0's shlibs name it" grep -qx "libhpmalloc ${SONAME##*.so.} libhpmalloc0 (>= $VERSION)" \
  <(dpkg-deb --ctrl-tarfile "${debs[0]}" | tar -xOf - ./shlibs)

# --- install with dpkg into a scratch root -------------------------------------------------
# dpkg --instdir/--admindir: dpkg's own unpack and configure, with a
# database of its own, so file conflicts between the packages and their
# dependencies on each other are checked as on a real system.  They have
# no maintainer scripts (dpkg would chroot into the root to run them);
# dependencies on the system's packages (libc6) are ignored there, since
# the root holds only ours, once this system is seen to have them.
R=$W/root
A=$R/var/lib/dpkg
mkdir -p "$A/info" "$A/updates" "$A/triggers" && : >"$A/status"
external=()
for d in "${debs[@]}"; do
  while read -r dep; do
    case " $PKGS " in *" $dep "*) ;; *) external+=("$dep") ;; esac
  done < <(dpkg-deb -f "$d" Depends | tr ',' '\n' | sed 's/^ *\([^ ]*\).*/\1/' | grep .)
done
external=($(printf '%s\n' "${external[@]}" | sort -u))
for dep in "${external[@]}"; do
  check "dependency $dep is installed on this system" \
    grep -q 'install ok installed' <(dpkg-query -W -f='${Status}\n' "$dep" 2>/dev/null)
done
ignore=$(IFS=,; echo "${external[*]}")
# --path-include: a minimal system's dpkg.cfg.d may exclude /usr/share/man
# and /usr/share/doc; the root takes every file of the packages.
dpkg_root() { dpkg --force-not-root --instdir="$R" --admindir="$A" --log="$W/dpkg.log" --path-include='/*' "$@"; }
dpkg_root ${ignore:+--ignore-depends="$ignore"} -i "${debs[@]}" >"$W/dpkg.out" 2>&1
rc=$?
check "dpkg -i the three packages into a scratch root (exit $rc)" test $rc -eq 0
[ $rc -eq 0 ] || sed 's/^/     /' "$W/dpkg.out"
installed=$(dpkg-query --admindir="$A" -W -f='${db:Status-Abbrev}${Package}\n' | sort | tr '\n' ' ')
check "dpkg: the three are installed ($installed)" \
  test "$installed" = "ii hpmalloc-tools ii libhpmalloc-dev ii libhpmalloc0 "
check "dpkg --audit finds nothing" test -z "$(dpkg --admindir="$A" --audit 2>&1)"

# --- use them ----------------------------------------------------------------------------
L=$R/usr/lib/$T
check_soname "$L/libhpmalloc.so.$VERSION"
check_preload "$L/$SONAME"
flags=$(PKG_CONFIG_SYSROOT_DIR=$R PKG_CONFIG_LIBDIR=$L/pkgconfig pkg-config --cflags --libs hpmalloc)
check "pkg-config: the package's flags point into the root ($flags)" grep -q -- "-I$R/usr/include .*-L$L -lhpmalloc" <<<"$flags"
# shellcheck disable=SC2086 # the flags are words
APP_ENV="LD_LIBRARY_PATH=$L" check_app app-dynamic $flags
check_app app-static -static -I"$R/usr/include" "$L/libhpmalloc.a" -lpthread
check_hpm "$R/usr/bin/hpm" "$L/hpmalloc/libhpmtrace.so" "$L" "$R/usr/share/doc/hpmalloc-tools/FORMAT.md"
check_man "$R/usr/share/man/man1/hpm.1.gz" "$R/usr/share/man/man7/hpmalloc.7.gz"

# --- purge --------------------------------------------------------------------------------
dpkg_root --purge $PKGS >"$W/dpkg.out" 2>&1
rc=$?
left=$(find "$R" -path "$A" -prune -o \( -type f -o -type l \) -print)
check "dpkg --purge removes them and leaves no file (exit $rc${left:+; left: $left})" test $rc -eq 0 -a -z "$left"

grep '^W: ' "$OUT/lintian.txt" | sed 's/^/lintian warning: /'
echo "check-deb: $pass passed, $fail failed"
[ $fail -eq 0 ]
