#!/usr/bin/env bash
# scripts/fuzz_campaign.sh [options] BIN OUT: a fuzz campaign that aims for
# a number of executions of every target on the cores of one machine
# (issue 15: 10 M each, 0 crashes). CI runs scripts/fuzz.sh instead.
#
#   BIN  a folder of fuzz_* binaries (and the .so files they need), or a
#        .tar.gz of one: `scripts/fuzz_campaign.sh --bundle BUILD_DIR FILE`
#        packs a fuzz build's targets and libraries (debug info stripped).
#   OUT  small enough to bring back: logs/ (each job's last lines, a whole
#        log where a job failed), crashes/ (every input that crashed, leaked,
#        ran out of memory or time), state/ (executions per job),
#        corpus_new/TARGET (the units the campaign found that add coverage
#        to the committed corpus, merged with -merge=1 and capped), plan.txt
#        and table.txt. The working corpora grow in --work (a temporary
#        folder, removed at the end, unless given).
#
# Plan: a calibration job per target measures its executions per second;
# what each target still needs is then cut into jobs of about --job-seconds
# (-runs= the job's share), run --cores at a time (never more processes than
# cores) in rounds over the targets, slowest first, so a run cut short by
# --seconds has advanced every target. Jobs of one target share its corpus
# folder (libFuzzer reloads it every second). libFuzzer's own -jobs and
# -fork run one target each, so they cannot share cores across targets.
# Executions are summed over jobs from stat::number_of_executed_units (it
# counts the corpus replay at the start, as -runs does; a job that crashed
# counts up to its last status line).
#
# Options: --execs N (10000000)  --cores C (nproc)  --seconds S (540: the
# wall budget, merge included)  --job-seconds J (60)  --calibrate S (15; 0:
# rates from fuzz/campaign.conf)  --targets "a b" (all)  --resume PREV_OUT
# (count its executions and those it resumed, start from its new corpus)  --corpus-cap BYTES (262144)
# --work DIR
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"

. "$ROOT/scripts/fuzz_conf.sh"

bundle() {  # bundle BUILD_DIR FILE.tar.gz
  local build="$1" file="$2" dir
  dir="$(mktemp -d)/fuzz-bin"
  mkdir -p "$dir"
  cp -L "$build"/fuzz/fuzz_* "$build"/libboltpack.so.0 "$dir"/
  # The shared libraries outside glibc that the targets load.
  ldd "$dir"/fuzz_* "$dir"/libboltpack.so.0 | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | sort -u |
    grep -Ev '/(libc|libm|libgcc_s|libpthread|libdl|librt|ld-linux[^/]*)\.so' |
    grep -v "$build" | while read -r lib; do cp -L "$lib" "$dir"/; done
  for f in "$dir"/*; do objcopy --strip-debug "$f"; done
  tar czf "$file" -C "$(dirname "$dir")" fuzz-bin
  echo "$file: $(ls "$dir" | wc -l) files, $(du -sb "$dir" | cut -f1) bytes unpacked, $(stat -c %s "$file") packed"
}

if [ "${1:-}" = --bundle ]; then bundle "$2" "$3"; exit; fi

EXECS=10000000 CORES=$(nproc) BUDGET=540 JOB=60 CALIBRATE=15 TARGETS="" RESUME="" CAP=262144 WORK="" 
while [ $# -gt 2 ]; do
  case "$1" in
    --execs) EXECS="$2" ;; --cores) CORES="$2" ;; --seconds) BUDGET="$2" ;; --job-seconds) JOB="$2" ;;
    --calibrate) CALIBRATE="$2" ;; --targets) TARGETS="$2" ;; --resume) RESUME="$2" ;; --corpus-cap) CAP="$2" ;;
    --work) WORK="$2" ;;
    *) echo "fuzz_campaign.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift 2
done
[ $# -eq 2 ] || { echo "usage: fuzz_campaign.sh [options] BIN OUT (see the script's header)" >&2; exit 2; }
BIN="$1" OUT="$2"
START=$(date +%s)
DEADLINE=$((START + BUDGET))
MERGE_SECONDS=$((BUDGET / 10 > 20 ? BUDGET / 10 : 20))
mkdir -p "$OUT"/{logs,crashes,state,corpus_new}
OUT="$(cd "$OUT" && pwd)"
WORK_IS_TEMP=0
[ -n "$WORK" ] || { WORK="$(mktemp -d "${TMPDIR:-/tmp}/fuzz_campaign.XXXXXX")"; WORK_IS_TEMP=1; }
mkdir -p "$WORK"
WORK="$(cd "$WORK" && pwd)"
if [[ "$BIN" == *.tar.gz ]]; then
  mkdir -p "$WORK/bin" && tar xzf "$BIN" -C "$WORK/bin" && BIN="$WORK/bin/fuzz-bin"
fi
BIN="$(cd "$BIN" && pwd)"
export LD_LIBRARY_PATH="$BIN${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"

if [ -z "$TARGETS" ]; then
  for b in "$BIN"/fuzz_*; do [ -x "$b" ] && TARGETS+="${b##*/fuzz_} "; done
fi
# A wrong BIN (a build folder, not its fuzz/) once gave a campaign of no
# executions that ended with exit 0.
[ -n "${TARGETS// /}" ] || { echo "fuzz_campaign.sh: no fuzz_* binaries in $BIN" >&2; exit 2; }
for t in $TARGETS; do
  [ -x "$BIN/fuzz_$t" ] || { echo "fuzz_campaign.sh: $BIN/fuzz_$t is not an executable" >&2; exit 2; }
done

# A resumed campaign's jobs count as this one's (state/TARGET.prev-ID), so
# a chain of runs keeps the whole total.
if [ -n "$RESUME" ]; then
  for f in "$RESUME"/state/*; do
    [ -f "$f" ] || continue
    b="${f##*/}"
    cp "$f" "$OUT/state/${b%%.*}.prev-${b#*.}"
  done
fi

# Each target's corpus folder: its seeds, and what a resumed campaign found.
for t in $TARGETS; do
  mkdir -p "$WORK/corpus/$t"
  [ -d "$ROOT/fuzz/corpus/$t" ] && cp -r "$ROOT/fuzz/corpus/$t"/. "$WORK/corpus/$t"/
  [ -n "$RESUME" ] && [ -d "$RESUME/corpus_new/$t" ] && cp -r "$RESUME/corpus_new/$t"/. "$WORK/corpus/$t"/
done

# run_job TARGET ID RUNS SECONDS: one libFuzzer process; appends
# "executions seconds rc" to state/TARGET.ID.
run_job() {
  local t="$1" id="$2" runs="$3" secs="$4" now left dict t0 rc execs LF_FLAGS ASAN_EXTRA
  now=$(date +%s)
  left=$((DEADLINE - MERGE_SECONDS - now))
  [ "$left" -lt 10 ] && return 0
  [ "$secs" -gt "$left" ] && secs=$left
  split_flags "$(conf_field "$t" 4 -)"
  dict=""
  [ -f "$ROOT/fuzz/$t.dict" ] && dict="-dict=$ROOT/fuzz/$t.dict"
  t0=$(date +%s.%N)
  # -close_fd_mask=3: the targets' own output is dropped (fuzz_pipeline prints
  # every CLI error); libFuzzer and the sanitizers report on a copy of stderr.
  # shellcheck disable=SC2086
  ASAN_OPTIONS="$ASAN_OPTIONS$ASAN_EXTRA" "$BIN/fuzz_$t" -runs="$runs" -max_total_time="$secs" -max_len="$(conf_field "$t" 2 65536)" \
    -rss_limit_mb=2048 -timeout=60 -print_final_stats=1 -close_fd_mask=3 \
    -artifact_prefix="$OUT/crashes/$t-" $LF_FLAGS $dict "$WORK/corpus/$t" >"$WORK/$t.$id.log" 2>&1
  rc=$?
  execs=$(grep -a "stat::number_of_executed_units" "$WORK/$t.$id.log" | awk '{print $2}' | tail -1)
  [ -z "$execs" ] && execs=$(grep -aoE '^#[0-9]+' "$WORK/$t.$id.log" | tail -1 | tr -d '#')
  if [ "$rc" = 0 ]; then tail -30 "$WORK/$t.$id.log" >"$OUT/logs/$t.$id.log"; else cp "$WORK/$t.$id.log" "$OUT/logs/"; fi
  rm -f "$WORK/$t.$id.log"
  echo "${execs:-0} $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') $rc" >"$OUT/state/$t.$id"
}
export -f run_job conf_field split_flags
export ROOT CONF BIN OUT WORK DEADLINE MERGE_SECONDS

done_execs() {  # executions of TARGET so far, this run's and resumed ones'
  cat "$OUT"/state/"$1".* 2>/dev/null | awk '{ n += $1 } END { print n + 0 }'
}

run_jobs() {  # lines "TARGET ID RUNS SECONDS" on stdin, CORES at a time
  xargs -r -P "$CORES" -L 1 bash -c 'run_job "$@"' _
}

# Calibration: one job per target; its rate plans the rest.
if [ "$CALIBRATE" -gt 0 ]; then
  for t in $TARGETS; do
    need=$((EXECS - $(done_execs "$t")))
    [ "$need" -gt 0 ] && echo "$t c $need $CALIBRATE"
  done | run_jobs
fi
rate_of() {
  local t="$1"
  if [ -f "$OUT/state/$t.c" ]; then
    awk '$2 > 0 { printf "%d\n", $1 / $2 + 1; exit } { print 1 }' "$OUT/state/$t.c"
  else
    conf_field "$t" 3 1000
  fi
}

# The plan: each target's remaining executions in jobs of about JOB seconds,
# round r of every target before round r+1, the slowest target first.
plan() {
  local t rate need jobs per
  for t in $TARGETS; do
    rate=$(rate_of "$t")
    need=$((EXECS - $(done_execs "$t")))
    [ "$need" -le 0 ] && continue
    jobs=$(( (need + rate * JOB - 1) / (rate * JOB) ))
    per=$(( (need + jobs - 1) / jobs ))
    for ((k = 0; k < jobs; k++)); do echo "$k $((need / rate)) $t j$k $per $((JOB * 2))"; done
  done | sort -k1,1n -k2,2nr | cut -d' ' -f3-
}
plan >"$OUT/plan.txt"
awk -v c="$CORES" -v left="$((DEADLINE - MERGE_SECONDS - $(date +%s)))" -v j="$JOB" \
  'END { printf "plan: %d jobs, about %d core-seconds; %d left on %d cores\n", NR, NR * j, left * c, c }' "$OUT/plan.txt"
run_jobs <"$OUT/plan.txt"

# Merge: the units that add coverage to the committed corpus, smallest
# first, up to CAP bytes per target, into corpus_new/TARGET.
merge_one() {
  local t="$1" cap="$2" tmp before f total=0
  tmp="$(mktemp -d)"
  [ -d "$ROOT/fuzz/corpus/$t" ] && cp -r "$ROOT/fuzz/corpus/$t"/. "$tmp"/
  before="$(ls "$tmp")"
  mkdir -p "$OUT/corpus_new/$t"
  timeout "$MERGE_SECONDS" "$BIN/fuzz_$t" -merge=1 -max_len="$(conf_field "$t" 2 65536)" -rss_limit_mb=2048 \
    -timeout=60 -close_fd_mask=3 -artifact_prefix="$OUT/crashes/$t-merge-" "$tmp" "$WORK/corpus/$t" \
    >"$WORK/$t.merge.log" 2>&1
  tail -30 "$WORK/$t.merge.log" >"$OUT/logs/$t.merge.log"
  for f in $(ls -Sr "$tmp"); do
    grep -qxF "$f" <<<"$before" && continue
    total=$((total + $(stat -c %s "$tmp/$f")))
    [ "$total" -gt "$cap" ] && break
    cp "$tmp/$f" "$OUT/corpus_new/$t/"
  done
  rm -rf "$tmp"
}
export -f merge_one
for t in $TARGETS; do echo "$t $CAP"; done | xargs -r -P "$CORES" -L 1 bash -c 'merge_one "$@"' _

# The table; exit status 1 when anything crashed.
{
  printf '%-20s %12s %12s %5s %8s %9s %7s %5s %6s %s\n' target goal executions jobs core-s exec/s crashes slow new result
  for t in $TARGETS; do
    execs=$(done_execs "$t")
    read -r jobs secs < <(cat "$OUT"/state/"$t".* 2>/dev/null | awk '{ j++; s += $2 } END { printf "%d %.0f\n", j, s }')
    crashes=$(find "$OUT/crashes" -name "$t-*" ! -name "$t-slow-unit-*" | wc -l)
    slow=$(find "$OUT/crashes" -name "$t-slow-unit-*" | wc -l)
    new=$(ls "$OUT/corpus_new/$t" 2>/dev/null | wc -l)
    rate=$(awk -v e="$(cat "$OUT"/state/"$t".* 2>/dev/null | awk '{ n += $1 } END { print n + 0 }')" -v s="$secs" \
      'BEGIN { printf "%d", (s > 0 ? e / s : 0) }')
    result=ok
    [ "$execs" -lt "$EXECS" ] && result=short
    # A job that failed before its first execution (a missing library, a
    # bad flag) is a broken campaign, not a short one.
    grep -qsE '^0 [0-9.]+ [1-9]' "$OUT"/state/"$t".* && result="NOT RUN (see $OUT/logs/$t.*)"
    [ "$crashes" -gt 0 ] && result="CRASH (see $OUT/crashes/$t-*)"
    printf '%-20s %12d %12d %5d %8d %9d %7d %5d %6d %s\n' "$t" "$EXECS" "$execs" "$jobs" "$secs" "$rate" "$crashes" "$slow" "$new" "$result"
  done
  echo "wall: $(($(date +%s) - START)) s on $CORES cores"
} | tee "$OUT/table.txt"
[ "$WORK_IS_TEMP" = 1 ] && rm -rf "$WORK"  # what it found that adds coverage is in corpus_new
find "$OUT/crashes" -type f ! -name '*slow-unit-*' | grep -q . && exit 1
grep -q 'NOT RUN' "$OUT/table.txt" && exit 1
exit 0
