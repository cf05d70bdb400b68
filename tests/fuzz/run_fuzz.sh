#!/usr/bin/env bash
# run_fuzz.sh FUZZER SECONDS FIXTURE_DIR "SEEDS" REGRESSION_DIR
# (with LLMWATCH_FUZZ_TARGET set to the target's number: one FUZZER serves several targets)
# Replays every kept regression input, then fuzzes for SECONDS from a corpus seeded with the
# fixtures. Prints the number of executions; exits non-zero on any crash, leak or UB report.
set -euo pipefail
fuzzer=$1 seconds=$2 fixtures=$3 seeds=$4 regressions=$5
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus" "$work/artifacts"
for s in $seeds; do [ "$s" = - ] || cp "$fixtures/$s" "$work/corpus/" ; done
printf 'node-[1-4,7],gpu[001-003]' > "$work/corpus/seed-hostlist"
if [ -d "$regressions" ] && [ -n "$(ls -A "$regressions")" ]; then
  "$fuzzer" "$regressions"/* 2>&1 | tail -2
fi
"$fuzzer" -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
  -artifact_prefix="$work/artifacts/" -print_final_stats=1 "$work/corpus" >"$work/log" 2>&1 || {
  tail -40 "$work/log"
  keep="${FUZZ_ARTIFACTS:-$PWD/fuzz-artifacts}"
  mkdir -p "$keep" && cp "$work"/artifacts/* "$keep/" 2>/dev/null || true
  echo "fuzz: $(basename "$regressions") ($(basename "$fuzzer")) found a failing input (kept in $keep)"
  exit 1
}
grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$work/log" || true
