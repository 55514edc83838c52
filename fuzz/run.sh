#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Run one libFuzzer harness for a while and summarise.
#   fuzz/run.sh BIN NAME SECONDS BUILD [libFuzzer options...]
# First replays every seed in fuzz/corpus/NAME and every regression input
# in fuzz/regress/NAME (a crash found once must stay fixed), then fuzzes for
# SECONDS with new inputs written to BUILD/fuzz/corpus/NAME (the seeds in
# the tree are only read) and crashes to BUILD/fuzz/crash/NAME/.
set -u
bin=$1 name=$2 secs=$3 build=$4
shift 4
here=$(cd "$(dirname "$0")" && pwd)
seeds=$here/corpus/$name
regress=$here/regress/$name
work=$build/fuzz/corpus/$name
crash=$build/fuzz/crash/$name
log=$build/fuzz/$name.log
mkdir -p "$work" "$crash"
dict=()
[ -f "$here/$name.dict" ] && dict=(-dict="$here/$name.dict")

if [ -d "$regress" ] && [ -n "$(ls -A "$regress" 2>/dev/null)" ]; then
  if ! "$bin" "${dict[@]}" "$@" "$regress"/* >"$log.regress" 2>&1; then
    echo "fuzz $name: a regression input fails again:" >&2
    tail -30 "$log.regress" >&2
    exit 1
  fi
fi
start=$(date +%s)
"$bin" "${dict[@]}" -max_total_time="$secs" -print_final_stats=1 -artifact_prefix="$crash/" \
  "$@" "$work" "$seeds" >"$log" 2>&1
rc=$?
end=$(date +%s)
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
corp=$(grep -o 'corp: [0-9]*/[0-9]*[a-zA-Z]*' "$log" | tail -1)
echo "fuzz $name: ${execs:-?} executions in $((end - start)) s, ${cov:-cov: ?}, ${corp:-corp: ?} (from $(ls "$seeds" | wc -l) seeds), rc $rc (log $log)"
if [ $rc -ne 0 ]; then
  grep -m1 -A25 'ERROR\|==ERROR\|runtime error\|deadly signal\|api fuzz:\|expected' "$log" >&2 || tail -30 "$log" >&2
  ls "$crash" >&2
fi
exit $rc
