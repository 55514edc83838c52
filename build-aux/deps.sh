#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Install what hpmalloc's build and tests need, from Debian's packages.
#   deps.sh check   install what is missing (as root), else print the command
#   deps.sh demo    what make demo needs
#   deps.sh bench   the same for the benchmark contenders
#   deps.sh cross   the same for cross compilers and qemu-user
#   deps.sh analyze   gcc (-fanalyzer), cppcheck, clang-tidy, clang-format (make analyze)
#   deps.sh coverage  lcov, plus what make check needs (make coverage)
#   deps.sh fuzz      clang with libFuzzer and the sanitizers (make fuzz)
#   deps.sh deb       what make deb needs (dpkg-buildpackage, debhelper, scdoc, lintian)
set -u
what=${1:-check}
case "$what" in
  # scdoc builds the man pages and man-db renders them (check-install);
  # dpkg-dev, debhelper and lintian build and check the packages (check-deb);
  # hpm record --stacks unwinds with libunwind8 (opened at run time),
  # hpm analyze --stacks names frames with elfutils' libdw (libdw-dev,
  # libelf-dev; check-hpm checks the names with binutils' nm and
  # elfutils' eu-readelf), and
  # check-hpm renders the flame graph with librsvg2-bin's rsvg-convert.
  # musl-tools (musl-gcc) builds and tests the musl library (check-musl).
  check) pkgs="gcc make pkg-config libcriterion-dev valgrind glibc-source xz-utils python3 perl coreutils
               scdoc man-db dpkg-dev debhelper lintian libunwind8 binutils elfutils libdw-dev libelf-dev librsvg2-bin musl-tools" ;;
  deb) pkgs="gcc make dpkg-dev debhelper scdoc lintian valgrind libdw-dev libelf-dev" ;;
  demo) pkgs="gcc make" ;;
  bench) pkgs="libjemalloc-dev libmimalloc-dev libgoogle-perftools-dev 7zip xz-utils hyperfine sqlite3 python3 redis-tools" ;;
  cross) pkgs="gcc-powerpc64le-linux-gnu gcc-powerpc64-linux-gnu gcc-aarch64-linux-gnu qemu-user libc6-dev-ppc64el-cross libc6-dev-ppc64-cross libc6-dev-arm64-cross" ;;
  analyze) pkgs="gcc cppcheck clang-tidy clang-format" ;;
  coverage) pkgs="gcc lcov libcriterion-dev valgrind glibc-source xz-utils python3 perl coreutils libunwind8 binutils elfutils libdw-dev libelf-dev librsvg2-bin" ;;
  fuzz) pkgs="clang libclang-rt-14-dev" ;;
  *) echo "usage: deps.sh check|demo|bench|cross|analyze|coverage|fuzz|deb" >&2; exit 2 ;;
esac
missing=()
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ]; then
  echo "deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >/tmp/hpmalloc-deps.log 2>&1 || {
    echo "deps: apt-get failed; see /tmp/hpmalloc-deps.log" >&2; tail -20 /tmp/hpmalloc-deps.log >&2; exit 1; }
else
  echo "deps: missing packages: ${missing[*]}" >&2
  echo "deps: run: sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
