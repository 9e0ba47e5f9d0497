#!/usr/bin/env bash
# scripts/fuzz_campaign.sh BIN_DIR SECONDS [OUT_DIR]: every fuzz target in
# BIN_DIR at once (one process each, as many as there are cores, the rest
# queued), each for SECONDS on a scratch copy of its seed corpus, then a
# table of executions, crashes and corpus growth per target. Crash inputs
# land in OUT_DIR (default: a temporary folder). For a campaign on a
# machine with many cores (issue 15: 10 M executions per target); CI runs
# scripts/fuzz.sh, which also replays the committed corpora.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BIN="$1"
SECONDS_EACH="$2"
OUT="${3:-$(mktemp -d)}"
mkdir -p "$OUT"
export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
targets=()
for bin in "$BIN"/fuzz_*; do [ -x "$bin" ] && targets+=("$bin"); done
run_one() {
  local bin="$1" name work
  name="$(basename "$bin")"
  work="$(mktemp -d)"
  [ -d "$ROOT/fuzz/corpus/${name#fuzz_}" ] && cp -r "$ROOT/fuzz/corpus/${name#fuzz_}"/. "$work"/
  # -close_fd_mask=3: the targets' own output (fuzz_pipeline prints every CLI error) is
  # dropped; libFuzzer and the sanitizers still report on a copy of stderr.
  "$bin" -max_total_time="$SECONDS_EACH" -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 -close_fd_mask=3 \
    -artifact_prefix="$OUT/${name}-" "$work" >"$OUT/$name.log" 2>&1
  echo $? >"$OUT/$name.rc"
  rm -rf "$work"
}
export -f run_one
export ROOT SECONDS_EACH OUT
printf '%s\n' "${targets[@]}" | xargs -P "$(nproc)" -I{} bash -c 'run_one {}'
status=0
printf '%-28s %12s %10s %8s %s\n' target executions exec/s new result
for bin in "${targets[@]}"; do
  name="$(basename "$bin")"
  log="$OUT/$name.log"
  execs=$(grep -a "stat::number_of_executed_units" "$log" | awk '{print $2}' | tail -1)
  rate=$(grep -a "stat::average_exec_per_sec" "$log" | awk '{print $2}' | tail -1)
  new=$(grep -a "stat::new_units_added" "$log" | awk '{print $2}' | tail -1)
  rc=$(cat "$OUT/$name.rc")
  result=ok
  if [ "$rc" != 0 ]; then result="CRASH (rc $rc, see $OUT/$name.log)"; status=1; fi
  printf '%-28s %12s %10s %8s %s\n' "$name" "${execs:-?}" "${rate:-?}" "${new:-?}" "$result"
done
exit $status
