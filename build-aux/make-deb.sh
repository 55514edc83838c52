#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make deb: build the Debian packages from this tree, then check them with
# lintian.
#   build-aux/make-deb.sh OUTDIR VERSION
# The tree (what git tracks or would track: committed, changed and new
# files; everything but build directories outside git) is copied to
# OUTDIR/src/, where `dpkg-buildpackage -b -us -uc` runs, so the .deb,
# .ddeb, .buildinfo and .changes files land in OUTDIR and nothing is
# written into the working tree.  The log is OUTDIR/build.log, lintian's
# report OUTDIR/lintian.txt.  Exit status 0 only when the packages were
# built and lintian reported no error (warnings are printed, not fatal).
# The build is the packaging's alone: the caller's make flags and command-
# line variables, BUILD, OPT, CC and the *FLAGS are not passed on (debian/
# rules takes dpkg-buildflags'); DEB_BUILD_OPTIONS is (default parallel=2;
# add nocheck to skip the API tests run during the build).   MIT licence.
set -u
out=${1:?usage: make-deb.sh OUTDIR VERSION}
version=${2:?usage: make-deb.sh OUTDIR VERSION}
out=$(mkdir -p "$out" && cd "$out" && pwd) || exit 1
root=$(cd "$(dirname "$0")/.." && pwd)

need=()
command -v dpkg-buildpackage >/dev/null || need+=(dpkg-dev)
command -v dh >/dev/null || need+=(debhelper)
command -v scdoc >/dev/null || need+=(scdoc)
command -v lintian >/dev/null || need+=(lintian)
if [ ${#need[@]} -gt 0 ]; then
  echo "make deb: missing ${need[*]} (Debian: apt-get install ${need[*]}, or bash build-aux/deps.sh deb)" >&2
  exit 1
fi
changelog=$(cd "$root" && dpkg-parsechangelog -S Version)
if [ "$changelog" != "$version" ]; then
  echo "make deb: debian/changelog is at $changelog but include/hpmalloc.h says $version: add a changelog entry" >&2
  exit 1
fi

rm -rf "$out"
mkdir -p "$out/src"
if git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  (cd "$root" && git ls-files -z --cached --others --exclude-standard |
    while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
    tar --null -T - -cf -) | tar -xf - -C "$out/src"
else
  (cd "$root" && tar --exclude=./.git --exclude=./build --exclude=./build-cov --exclude="./${out#"$root"/}" -cf - .) |
    tar -xf - -C "$out/src"
fi || { echo "make deb: copying the tree to $out/src failed" >&2; exit 1; }

echo "make deb: dpkg-buildpackage -b -us -uc in $out/src (log: $out/build.log)"
if ! (cd "$out/src" && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u BUILD -u OPT -u CC -u CFLAGS -u CPPFLAGS -u LDFLAGS \
        DEB_BUILD_OPTIONS="${DEB_BUILD_OPTIONS:-parallel=2}" dpkg-buildpackage -b -us -uc) \
     >"$out/build.log" 2>&1; then
  tail -40 "$out/build.log"
  echo "make deb: dpkg-buildpackage failed; the whole log is $out/build.log" >&2
  exit 1
fi
rm -rf "$out/src"

changes=$(ls "$out"/*.changes)
# --allow-root: lintian only reads the packages.
lintian --allow-root --fail-on error --display-info "$changes" >"$out/lintian.txt" 2>&1
rc=$?
errors=$(grep -c '^E: ' "$out/lintian.txt")
warnings=$(grep -c '^W: ' "$out/lintian.txt")
cat "$out/lintian.txt"
ls -1 "$out"/*.deb
echo "make deb: lintian: $errors errors, $warnings warnings (report: $out/lintian.txt)"
[ $rc -eq 0 ] && [ "$errors" -eq 0 ]
