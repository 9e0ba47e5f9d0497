#!/usr/bin/env bash
# How fast is `bolt-pack slice` beside copying the same number of bytes?
#
#   bench/slice_vs_cp.sh BUILD_DIR [WORK_DIR] [CODEC...]
#
# Generates synthetic elastic MoE models with BUILD_DIR/bench/slice_bench
# (default q8_0 and f32, with line-prefix checksums as `convert --elastic`
# writes them; see bench/slice_bench.cc for shapes and budgets),
# then for every budget and output format times BUILD_DIR/bolt-pack slice
# against `cp` and `cat` of a file holding exactly the bytes the slice wrote
# (its output), and `cp` followed by an fsync of the copy (`sync FILE`),
# since slice fsyncs its output before renaming it into place. Page cache
# warm for both sides; each command runs 3 times and the best is kept.
# ratio = cp s / slice s: the slice's speed as a fraction of cp's; r_sync
# the same against cp + fsync. no_fsync_s is `slice --no-fsync` (no
# writeback requests, no fsync: what cp does) and r_nofs its ratio to cp.
#
# Extra environment: RUNS (default 3), SLICE_BENCH_ARGS (passed to the
# generator, e.g. "--ffn 1024", or "--no-line-prefixes" for a source whose
# width cuts must verify whole source chunks), FORMATS (default "bolt gguf
# safetensors").
#
# COLD=1 (root only) times the I/O-bound case instead: before every timed
# run the page cache is dropped (sync; echo 3 > /proc/sys/vm/drop_caches)
# and only the two programs are read back, so slice reads the model and cp
# the kept bytes from the disk.
#
# Keep the working set (the model plus three outputs of the largest budget)
# inside the page cache the shell may use, or both sides time disk reads:
# under a 2.7 GB memory cgroup the f32 model wants SLICE_BENCH_ARGS="--ffn
# 256" (0.54 GB).
set -euo pipefail

build=${1:?usage: slice_vs_cp.sh BUILD_DIR [WORK_DIR] [CODEC...]}
work=${2:-${TMPDIR:-/tmp}/slice-vs-cp}
shift $(( $# >= 2 ? 2 : 1 ))
codecs=("$@")
[[ ${#codecs[@]} -gt 0 ]] || codecs=(q8_0 f32)
runs=${RUNS:-3}
formats=(${FORMATS:-bolt gguf safetensors})
boltpack="$build/bolt-pack"
gen="$build/bench/slice_bench"
[[ -x $boltpack ]] || { echo "no $boltpack" >&2; exit 1; }
[[ -x $gen ]] || { echo "no $gen (build the bench targets)" >&2; exit 1; }
mkdir -p "$work"

now() { echo "${EPOCHREALTIME/./}"; }  # microseconds, no fork

# best_of CMD...: runs CMD $runs times (removing $out and syncing first,
# untimed) and prints the best wall time in seconds.
best_of() {
  local best=0 t0 t1 d
  for ((i = 0; i < runs; i++)); do
    rm -f "$out"
    sync  # no writeback of an earlier run's output during this one
    if [[ -n ${COLD:-} ]]; then
      echo 3 > /proc/sys/vm/drop_caches
      "$boltpack" --version >/dev/null; cp --version >/dev/null  # the programs themselves stay warm
    fi
    t0=$(now)
    "$@" >/dev/null 2>&1
    t1=$(now)
    d=$((t1 - t0))
    if ((best == 0 || d < best)); then best=$d; fi
  done
  printf '%d.%06d' $((best / 1000000)) $((best % 1000000))
}

warm() { cat "$@" >/dev/null; }

printf '%-6s %-10s %-12s %12s %9s %9s %9s %9s %10s %7s %7s %7s\n' \
  codec budget format kept_bytes slice_s cp_s cat_s cp+sync_s no_fsync_s ratio r_sync r_nofs
for codec in "${codecs[@]}"; do
  model="$work/moe-$codec$(echo "${SLICE_BENCH_ARGS:-}" | tr -d ' -').bolt"  # one per generator setting
  if [[ ! -f $model ]]; then
    "$gen" "$model" --codec "$codec" ${SLICE_BENCH_ARGS:-} >/dev/null
  fi
  budgets=$("$boltpack" slice "$model" --list-budgets | awk -F: 'NR > 1 { print $1 }')
  for budget in $budgets; do
    for fmt in "${formats[@]}"; do
      out="$work/out.$fmt"
      warm "$model"
      "$boltpack" slice "$model" --budget "$budget" -o "$out" >/dev/null 2>&1 ||
        { echo "slice $budget -o .$fmt failed" >&2; "$boltpack" slice "$model" --budget "$budget" -o "$out"; exit 1; }
      kept=$(stat -c %s "$out")
      slice_s=$(best_of "$boltpack" slice "$model" --budget "$budget" -o "$out")
      nofs_s=$(best_of "$boltpack" slice "$model" --budget "$budget" -o "$out" --no-fsync)
      sync  # its dirty pages must not be written back during the next timings
      # The copy source: the slice's own output (exactly $kept bytes), warm.
      mv "$work/out.$fmt" "$work/kept.bin"
      warm "$work/kept.bin"
      out="$work/copy.bin"
      cp_s=$(best_of cp "$work/kept.bin" "$out")
      cat_s=$(best_of sh -c "cat '$work/kept.bin' > '$out'")
      sync_s=$(best_of sh -c "cp '$work/kept.bin' '$out' && sync '$out'")
      rm -f "$out" "$work/out.$fmt" "$work/kept.bin"
      printf '%-6s %-10s %-12s %12d %9.3f %9.3f %9.3f %9.3f %10.3f %7.2f %7.2f %7.2f\n' "$codec" "$budget" ".$fmt" \
        "$kept" "$slice_s" "$cp_s" "$cat_s" "$sync_s" "$nofs_s" "$(echo "$cp_s / $slice_s" | bc -l)" \
        "$(echo "$sync_s / $slice_s" | bc -l)" "$(echo "$cp_s / $nofs_s" | bc -l)"
    done
  done
done
