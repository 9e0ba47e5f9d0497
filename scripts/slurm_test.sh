#!/usr/bin/env bash
# scripts/slurm_test.sh BOLT_PACK SCRATCH: scripts/slurm/convert.sbatch on a
# real one-node Slurm cluster on this machine (run as root, as CI does):
# starts munged (unless one answers already), slurmctld and slurmd on
# localhost with a scratch configuration (no cgroups: proctrack/linuxproc,
# task/none; ports of its own, so another cluster on the machine is left
# alone), submits a job array of 4 parts of the shipped model under its
# recipe and the dependent merge job, and checks the merged model: it
# passes verify, its shard 0 holds no tensor bytes, and it decodes exactly
# as a one-process convert, tensor for tensor. Stops what it started.
set -euo pipefail
BP=$(readlink -f "$1")
W=$(mkdir -p "$2" && readlink -f "$2")
ROOT=$(cd "$(dirname "$0")/.." && pwd)
MODEL="$ROOT/testdata/tinystories-656k/TinyStories-656K.f16.gguf"
RECIPE="$ROOT/recipes/tinystories-656k.textproto"
for cmd in munged slurmctld slurmd sbatch; do
  command -v "$cmd" > /dev/null || { echo "slurm_test: $cmd missing (scripts/setup.sh installs it)" >&2; exit 1; }
done
rm -rf "$W/slurm" "$W/out"
mkdir -p "$W/slurm/state" "$W/slurm/spool" "$W/out"

started_munge=0
cleanup() {
  local pids=()
  for pid_file in "$W/slurm/slurmd.pid" "$W/slurm/slurmctld.pid"; do
    [ -s "$pid_file" ] && pids+=("$(cat "$pid_file")")
  done
  if [ "$started_munge" = 1 ] && [ -s /run/munge/munged.pid ]; then pids+=("$(cat /run/munge/munged.pid)"); fi
  for pid in "${pids[@]}"; do kill "$pid" 2> /dev/null || true; done
  for pid in "${pids[@]}"; do  # up to 10 s for each to exit
    for ((w = 0; w < 100; w++)); do kill -0 "$pid" 2> /dev/null || break; sleep 0.1; done
  done
}
trap cleanup EXIT

if ! munge -n 2> /dev/null | unmunge > /dev/null 2>&1; then
  mkdir -p /etc/munge /var/log/munge /run/munge /var/lib/munge
  if [ ! -s /etc/munge/munge.key ]; then
    dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
  fi
  chown munge:munge /etc/munge /var/log/munge /run/munge /var/lib/munge /etc/munge/munge.key
  chmod 400 /etc/munge/munge.key
  runuser -u munge -- munged --force
  started_munge=1
  munge -n | unmunge > /dev/null
fi

HOST=$(hostname -s)
PORT=$((20000 + RANDOM % 20000))
MEM=$(($(awk '/MemTotal/ {print $2}' /proc/meminfo) / 2048))
export SLURM_CONF="$W/slurm/slurm.conf"
cat > "$SLURM_CONF" << CONF
ClusterName=boltpacktest
SlurmctldHost=$HOST
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
SlurmUser=root
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
ReturnToService=2
StateSaveLocation=$W/slurm/state
SlurmdSpoolDir=$W/slurm/spool
SlurmctldPidFile=$W/slurm/slurmctld.pid
SlurmdPidFile=$W/slurm/slurmd.pid
SlurmctldLogFile=$W/slurm/slurmctld.log
SlurmdLogFile=$W/slurm/slurmd.log
NodeName=$HOST CPUs=$(nproc) RealMemory=$MEM State=UNKNOWN
PartitionName=test Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
CONF
slurmctld -f "$SLURM_CONF"
slurmd -f "$SLURM_CONF"
for ((t = 0; ; t++)); do
  state=$(sinfo -h -o %T 2> /dev/null || true)
  [ "$state" = idle ] && break
  if ((t >= 60)); then echo "slurm_test: the node is not idle after 30 s (state: $state)" >&2; tail -20 "$W/slurm/slurmctld.log" "$W/slurm/slurmd.log" >&2; exit 1; fi
  sleep 0.5
done

OUT="$W/out/model.bolt"
submitted=$(BOLTPACK="$BP" SBATCH_OPTIONS="--output=$W/slurm/%x-%A_%a.out" \
  "$ROOT/scripts/slurm/convert.sbatch" "$MODEL" "$OUT" 4 --recipe "$RECIPE" --no-fsync)
echo "$submitted"
merge=$(echo "$submitted" | sed -n 's/.*merge: job \([0-9]*\).*/\1/p')
for ((t = 0; ; t++)); do
  job_state=$(scontrol show job "$merge" 2> /dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')
  case "$job_state" in
    COMPLETED) break ;;
    FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY)
      echo "slurm_test: the merge job ended $job_state" >&2; cat "$W"/slurm/*.out >&2 || true; exit 1 ;;
  esac
  if ((t >= 360)); then echo "slurm_test: the merge job is still $job_state after 180 s" >&2; squeue >&2; exit 1; fi
  sleep 0.5
done

# The result, against a one-process convert of the same input and recipe.
"$BP" convert "$MODEL" -o "$W/out/one.bolt" --recipe "$RECIPE" --no-fsync 2> /dev/null
"$BP" verify "$OUT"
for p in 1 2 3 4; do "$BP" verify "$(printf '%s/out/model.part-%04d-of-0004.bolt' "$W" "$p")" > /dev/null; done
merged_bytes=$(stat -c %s "$OUT")
one_bytes=$(stat -c %s "$W/out/one.bolt")
if ((merged_bytes * 10 > one_bytes)); then
  echo "slurm_test: shard 0 has $merged_bytes bytes, the one-process file $one_bytes: tensor bytes were copied?" >&2
  exit 1
fi
"$BP" convert "$OUT" -o "$W/out/merged.safetensors" --no-fsync 2> /dev/null
"$BP" convert "$W/out/one.bolt" -o "$W/out/one.safetensors" --no-fsync 2> /dev/null
cmp "$W/out/merged.safetensors" "$W/out/one.safetensors"
"$BP" inspect --json "$OUT" | /usr/bin/python3 -c '
import json, sys
merged = json.load(sys.stdin)
one = json.load(open(sys.argv[1]))
for key in ("metadata", "tensors"):
    a, b = merged.get(key), one.get(key)
    if key == "tensors":  # every field of every tensor and stream but where the streams lie
        place = lambda s: {k: v for k, v in s.items() if k not in ("shard", "offset")}
        strip = lambda ts: [dict(t, streams=[place(s) for s in t["streams"]]) for t in ts]
        a, b = strip(a), strip(b)
    if a != b:
        sys.exit(f"slurm_test: the merged model and the one-process convert differ in {key}")
print("slurm_test: %d tensors and the metadata equal the one-process convert" % len(one["tensors"]))
' <("$BP" inspect --json "$W/out/one.bolt")
echo "slurm_test: OK (4 parts on Slurm, merged shard 0 of $merged_bytes bytes, one-process file $one_bytes)"
