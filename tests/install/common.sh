# SPDX-License-Identifier: MIT
# Checks shared by run-install.sh (make install into a DESTDIR) and
# check-deb.sh (the Debian packages installed into a scratch root): an
# installed hpmalloc and hpm used as a user would, nothing from the build
# tree.  Sourced; the caller sets ROOT (the source tree), W (a scratch
# directory), VERSION and SONAME.   MIT licence.

pass=0; fail=0
ok()   { pass=$((pass+1)); echo "ok   $*"; }
bad()  { fail=$((fail+1)); echo "FAIL $*"; }
check() { local what=$1; shift; if "$@"; then ok "$what"; else bad "$what"; fi; }

# check_soname LIBFILE: its SONAME is $SONAME.
check_soname() {
  local soname
  soname=$(readelf -d "$1" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
  check "SONAME of ${1##*/} is $SONAME (readelf: $soname)" test "$soname" = "$SONAME"
}

# check_preload LIB: sort runs with LIB preloaded, on hpmalloc.
check_preload() {
  local out
  out=$(HPMALLOC_VERBOSE=1 LD_PRELOAD=$1 sort </dev/null 2>&1)
  check "LD_PRELOAD=${1##*/}: sort runs on it (HPMALLOC_VERBOSE line)" grep -q "^hpmalloc $VERSION: hugetlb mode" <<<"$out"
}

# check_app NAME CC-ARGS...: tests/install/app.c built with CC-ARGS runs on
# hpmalloc $VERSION; the environment of the run comes from APP_ENV (words).
check_app() {
  local name=$1 out; shift
  if ! ${CC:-gcc} -o "$W/$name" "$ROOT/tests/install/app.c" "$@" >"$W/$name.log" 2>&1; then
    bad "$name: build with $* ($(head -3 "$W/$name.log"))"
    return
  fi
  # shellcheck disable=SC2086 # APP_ENV is a list of NAME=VALUE words
  out=$(env ${APP_ENV:-} "$W/$name" 2>&1)
  check "$name runs on hpmalloc $VERSION (prints: $out)" test "${out%% *}" = "$VERSION"
}

# check_hpm HPM RECORDER LIBDIR FORMAT: hpm, installed, finds its recorder
# (RECORDER), the allocator ($SONAME in LIBDIR) and FORMAT.md (FORMAT)
# relative to itself: --help names FORMAT, record preloads RECORDER and
# traces sort, replay --allocator hpmalloc runs the trace on the installed
# library, and fails once LIBDIR's libhpmalloc files are gone.
check_hpm() {
  local bin=$1 recorder=$2 libdir=$3 format=$4 events rc
  hpm() { env -u HPM_RECORDER -u HPM_HPMALLOC "$bin" "$@"; }
  check "hpm --help names $format" grep -qx "Trace format: $(realpath "$format")" <(hpm --help)
  check "hpm record preloads $recorder" \
    grep -qx "LD_PRELOAD=$(realpath "$recorder")" <(cd "$W" && hpm record -q -o env.hpmt -- env 2>&1)
  seq 20000 | shuf --random-source=<(yes) >"$W/numbers"
  (cd "$W" && hpm record -q -o sort.hpmt -- sort -n numbers >sorted)
  check "hpm record: sort's output unchanged" cmp -s "$W/sorted" <(sort -n "$W/numbers")
  events=$(hpm dump "$W/sort.hpmt" | sed -n '1s/.* events \([0-9]*\)$/\1/p')
  check "hpm record: sort's trace has events ($events)" test "${events:-0}" -gt 100
  hpm replay "$W/sort.hpmt" --allocator hpmalloc --tunables hpmalloc.verbose=1 --min-time 0 --json >"$W/replay.json" 2>"$W/replay.err"
  check "hpm replay --allocator hpmalloc runs the trace on the installed library" \
    grep -q "^hpmalloc $VERSION: hugetlb mode" "$W/replay.err"
  check "hpm replay reports the operations" grep -q '"allocator":"hpmalloc".*"ops":[1-9]' "$W/replay.json"
  mkdir -p "$W/aside" && mv "$libdir"/libhpmalloc.so* "$W/aside/"
  hpm replay "$W/sort.hpmt" --allocator hpmalloc >/dev/null 2>"$W/replay.err"
  rc=$?
  check "without $libdir/$SONAME, hpm replay --allocator hpmalloc fails (exit $rc: $(head -1 "$W/replay.err"))" \
    test $rc -ne 0
  mv "$W/aside/"* "$libdir/"
}

# check_man PAGE1 PAGE7: rendered without warnings, and naming what the
# sources define (check-man.py).
check_man() {
  local line
  while read -r line; do
    case $line in ok*) ok "${line#ok   }" ;; *) bad "${line#FAIL }" ;; esac
  done < <(/usr/bin/python3 "$ROOT/tests/install/check-man.py" "$ROOT" "$1" "$2" 2>&1)
}
