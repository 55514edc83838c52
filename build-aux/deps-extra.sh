#!/usr/bin/env bash
# Install what `make analyze`, `make coverage` and `make fuzz` need, from
# Debian's packages (the same way build-aux/deps.sh does for make check).
#   deps-extra.sh analyze    gcc (-fanalyzer), cppcheck, clang-tidy
#   deps-extra.sh coverage   lcov (gcov comes with gcc), plus what make check needs
#   deps-extra.sh fuzz       clang with libFuzzer and the sanitizers
set -u
what=${1:-}
case "$what" in
  analyze) pkgs="gcc cppcheck clang-tidy" ;;
  coverage) pkgs="gcc lcov libcriterion-dev" ;;
  fuzz) pkgs="clang libclang-rt-14-dev" ;;
  *) echo "usage: deps-extra.sh analyze|coverage|fuzz" >&2; exit 2 ;;
esac
missing=()
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ]; then
  echo "deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >/tmp/hpmalloc-deps-extra.log 2>&1 || {
    echo "deps: apt-get failed; see /tmp/hpmalloc-deps-extra.log" >&2; tail -20 /tmp/hpmalloc-deps-extra.log >&2; exit 1; }
else
  echo "deps: missing packages: ${missing[*]}" >&2
  echo "deps: run: sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
