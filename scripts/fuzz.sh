#!/usr/bin/env bash
# scripts/fuzz.sh BUILD_DIR SECONDS: runs every fuzz target for SECONDS on a
# scratch copy of its seed corpus, then replays the committed corpus (seeds
# and every input that once crashed something) exactly. Each target runs
# with its -max_len, flags and dictionary from fuzz/campaign.conf.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
. "$ROOT/scripts/fuzz_conf.sh"
BUILD="$1"
SECONDS_EACH="$2"
export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
status=0
for bin in "$BUILD"/fuzz/fuzz_*; do
  [ -x "$bin" ] || continue
  name="$(basename "$bin")"
  target="${name#fuzz_}"
  corpus="$ROOT/fuzz/corpus/$target"
  work="$(mktemp -d)"
  [ -d "$corpus" ] && cp -r "$corpus"/. "$work"/
  split_flags "$(conf_field "$target" 4 -)"
  [ -f "$ROOT/fuzz/$target.dict" ] && LF_FLAGS+=" -dict=$ROOT/fuzz/$target.dict"
  echo "-- $name: fuzzing for ${SECONDS_EACH}s"
  # shellcheck disable=SC2086
  if ! ASAN_OPTIONS="$ASAN_OPTIONS$ASAN_EXTRA" "$bin" -max_total_time="$SECONDS_EACH" -rss_limit_mb=2048 -max_len="$(conf_field "$target" 2 65536)" \
       -print_final_stats=1 $LF_FLAGS -artifact_prefix="$BUILD/${name}-" "$work" 2>"$BUILD/$name.log"; then
    echo "FAIL: $name found a crash; see $BUILD/$name.log and $BUILD/${name}-*" >&2
    tail -40 "$BUILD/$name.log" >&2
    status=1
  fi
  grep -E "stat::number_of_executed_units|cov:" "$BUILD/$name.log" | tail -2 || true
  if [ -d "$corpus" ]; then
    echo "-- $name: replaying $(ls "$corpus" | wc -l) corpus files"
    "$bin" -runs=0 "$corpus" >/dev/null 2>"$BUILD/$name.replay.log" || { echo "FAIL: $name corpus replay" >&2; tail -40 "$BUILD/$name.replay.log" >&2; status=1; }
  fi
  rm -rf "$work"
done
exit $status
