#!/bin/sh
# Runs one libFuzzer executable (the arguments after the first) and keeps libFuzzer's final
# statistics in the file named first: ctest shows nothing of a passing test, and CI's log should say
# how many inputs each target ran (contrib/dev/fuzz-summary prints them after the ASan suite).
stats=$1
shift
log="$stats.log"
"$@" > "$log" 2>&1
rc=$?
cat "$log"
grep '^stat::' "$log" > "$stats"
echo "exit_status: $rc" >> "$stats"
exit $rc
