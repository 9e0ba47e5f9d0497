#!/usr/bin/env bash
# How fast is `bolt-pack slice` beside copying the same number of bytes?
#
#   bench/slice_vs_cp.sh BUILD_DIR [WORK_DIR] [CODEC...]
#
# Generates synthetic elastic MoE models with BUILD_DIR/bench/slice_bench
# (default q8_0 and f32, with line-prefix checksums as `convert --elastic`
# writes them; see bench/slice_bench.cc for shapes and budgets), then for
# every budget and output format times BUILD_DIR/bolt-pack slice against
# `cp` of a file holding exactly the bytes the slice wrote (its output):
#   slice_s     `slice` (durable: writeback as it goes, fsync, rename)
#   cp+sync_s   `cp` then an fsync of the copy (`sync FILE`)
#   no_fsync_s  `slice --no-fsync` (no writeback requests, no fsync: what
#               cp does; the temporary file and rename are kept)
#   cp_s        plain `cp`
# r_sync = cp+sync_s / slice_s and r_nofs = cp_s / no_fsync_s: the slice's
# speed as a fraction of the copy's. The four commands run in turn, RUNS
# rounds (default 5), and each column is the median: this VM's timings
# drift, and interleaving keeps a drift from favouring one side.
#
# Page cache warm for both sides by default. COLD=1 (root only) drops it
# before every timed command (sync; echo 3 > /proc/sys/vm/drop_caches), so
# slice reads the model and cp the kept bytes from the disk. Caution: cp's
# source was written seconds before, and a VM host may still cache it.
#
# Warm, both sources are first brought into the page cache the same way
# (as root: caches dropped, then both read by `cat`), because how a file
# came into the cache changes what reading it costs: a cold slice's
# WILLNEED advice and RANDOM faults leave the model in 4 KiB folios, and
# hashing 143 MB of it through a mapping then took 37 ms against 13 ms
# for the same bytes brought in by a sequential read (large folios), while
# cp's source, the slice's fresh output, is in large folios.
#
# The I/O-bound case, a model larger than the page cache (memory stays
# bounded: a slice's resident memory is tens of MB whatever the model):
#   COLD=1 FORMATS="bolt gguf" \
#   SLICE_BENCH_ARGS="--layers 16 --experts 64 --ffn 1024 --hidden 1024" \
#   bench/slice_vs_cp.sh BUILD_DIR WORK_DIR q8_0     # a 2.3 GB model
#
# Extra environment: SLICE_BENCH_ARGS (passed to the generator, e.g.
# "--no-line-prefixes" for a source whose width cuts must verify whole
# source chunks), FORMATS (default "bolt gguf safetensors").
#
# Warm, keep the working set (the model plus two outputs of the largest
# budget) inside the page cache the shell may use, or both sides time disk
# reads: under a 2.7 GB memory cgroup the f32 model wants
# SLICE_BENCH_ARGS="--ffn 256" (0.54 GB).
set -euo pipefail

build=${1:?usage: slice_vs_cp.sh BUILD_DIR [WORK_DIR] [CODEC...]}
work=${2:-${TMPDIR:-/tmp}/slice-vs-cp}
shift $(( $# >= 2 ? 2 : 1 ))
codecs=("$@")
[[ ${#codecs[@]} -gt 0 ]] || codecs=(q8_0 f32)
runs=${RUNS:-5}
formats=(${FORMATS:-bolt gguf safetensors})
boltpack="$build/bolt-pack"
gen="$build/bench/slice_bench"
[[ -x $boltpack ]] || { echo "no $boltpack" >&2; exit 1; }
[[ -x $gen ]] || { echo "no $gen (build the bench targets)" >&2; exit 1; }
mkdir -p "$work"

now() { echo "${EPOCHREALTIME/./}"; }  # microseconds, no fork

# prep: before every timed command (untimed), no output left, nothing
# dirty from an earlier command, and the page cache warm or cold.
prep() {
  rm -f "$work/out.$fmt" "$work/copy.bin"
  sync
  if [[ -n ${COLD:-} ]]; then
    echo 3 > /proc/sys/vm/drop_caches
    "$boltpack" --version >/dev/null; cp --version >/dev/null  # the programs themselves stay warm
  else
    cat "$model" "$work/kept.bin" >/dev/null
  fi
}

# timed CMD...: its wall time in microseconds.
timed() {
  local t0 t1
  t0=$(now)
  "$@" >/dev/null 2>&1
  t1=$(now)
  echo $((t1 - t0))
}

# median US...: the median of microsecond times, in seconds.
median() {
  local m
  m=$(printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
  printf '%d.%06d' $((m / 1000000)) $((m % 1000000))
}

printf '%-6s %-10s %-12s %12s %9s %9s %7s %10s %9s %7s\n' \
  codec budget format kept_bytes slice_s cp+sync_s r_sync no_fsync_s cp_s r_nofs
for codec in "${codecs[@]}"; do
  model="$work/moe-$codec$(echo "${SLICE_BENCH_ARGS:-}" | tr -d ' -').bolt"  # one per generator setting
  if [[ ! -f $model ]]; then
    "$gen" "$model" --codec "$codec" ${SLICE_BENCH_ARGS:-} >/dev/null 2>&1
  fi
  budgets=$("$boltpack" slice "$model" --list-budgets | awk -F: 'NR > 1 { print $1 }')
  for budget in $budgets; do
    for fmt in "${formats[@]}"; do
      out="$work/out.$fmt"
      # The copy source: the slice's own output (exactly the kept bytes).
      "$boltpack" slice "$model" --budget "$budget" -o "$out" >/dev/null 2>&1 ||
        { echo "slice $budget -o .$fmt failed" >&2; "$boltpack" slice "$model" --budget "$budget" -o "$out"; exit 1; }
      mv "$out" "$work/kept.bin"
      kept=$(stat -c %s "$work/kept.bin")
      if [[ -z ${COLD:-} && $(id -u) == 0 ]]; then  # both sources cached alike (above)
        sync; echo 3 > /proc/sys/vm/drop_caches
        cat "$model" "$work/kept.bin" >/dev/null
      fi
      slice_t=() sync_t=() nofs_t=() cp_t=()
      for ((i = 0; i < runs; i++)); do
        prep; slice_t+=("$(timed "$boltpack" slice "$model" --budget "$budget" -o "$out")")
        prep; sync_t+=("$(timed sh -c "cp '$work/kept.bin' '$work/copy.bin' && sync '$work/copy.bin'")")
        prep; nofs_t+=("$(timed "$boltpack" slice "$model" --budget "$budget" -o "$out" --no-fsync)")
        prep; cp_t+=("$(timed cp "$work/kept.bin" "$work/copy.bin")")
      done
      rm -f "$out" "$work/copy.bin" "$work/kept.bin"
      slice_s=$(median "${slice_t[@]}") sync_s=$(median "${sync_t[@]}")
      nofs_s=$(median "${nofs_t[@]}") cp_s=$(median "${cp_t[@]}")
      printf '%-6s %-10s %-12s %12d %9.3f %9.3f %7.2f %10.3f %9.3f %7.2f\n' "$codec" "$budget" ".$fmt" "$kept" \
        "$slice_s" "$sync_s" "$(echo "$sync_s / $slice_s" | bc -l)" "$nofs_s" "$cp_s" "$(echo "$cp_s / $nofs_s" | bc -l)"
    done
  done
done
