#!/usr/bin/env bash
# bench/draft_acceptance.sh BOLT_PACK [WORK_DIR] [KEEP/MBITS ...]
#
# "Does the draft draft?" (issue 18 item 7): greedy speculative-decoding
# acceptance (4 drafted tokens a step) of the bf16-spec draft view of
# TinyStories-656K against its full view, with llama.cpp on CPU.
#   1. testdata/tinystories-656k -> bf16 safetensors (--codec '*=bf16'; bf16-spec
#      takes BF16 tensors only, spec/codecs-bf16-spec.md [S-1.2]) in an HF folder;
#   2. per KEEP/MBITS (default 0.5/3 0.6/4 0.75/4): folder -> .bolt with
#      '*=bf16-spec:keep=K,mbits=M'; full view -> GGUF (its tensors must equal
#      the plain bf16 folder -> GGUF export); draft view -> .safetensors
#      (convert --view draft), put into the full GGUF's layout
#      (bench/draft_gguf.py), which must pass verify --target llama.cpp;
#   3. bench/draft_acceptance.mjs (node-llama-cpp 3.21.1 as in
#      scripts/llama_cpp_check.sh) replays greedy speculative decoding over 6
#      prompts; first full vs full (the method's ceiling), then each draft.
# Prints one TOTAL JSON line per run and a markdown table at the end.
#
#   WORK_DIR   default build-llama-cpp/ (node_modules in WORK_DIR/app, as
#              scripts/llama_cpp_check.sh, which installs it; this script runs
#              the same offline npm ci if it is missing)
#   ACCEPT_TOKENS  greedy tokens per prompt (default 160)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BP="$(realpath "${1:?usage: $0 BOLT_PACK [WORK_DIR] [KEEP/MBITS ...]}")"
WORK="$(mkdir -p "${2:-$ROOT/build-llama-cpp}" && realpath "${2:-$ROOT/build-llama-cpp}")"
shift $(( $# >= 2 ? 2 : 1 ))
SETTINGS=("$@")
[ ${#SETTINGS[@]} -gt 0 ] || SETTINGS=(0.5/3 0.6/4 0.75/4)
TOKENS="${ACCEPT_TOKENS:-160}"
DATA="$ROOT/testdata/tinystories-656k"
APP="$WORK/app" OUT="$WORK/draft-acceptance"
CACHE="${BOLTPACK_NPM_CACHE:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/bolt-pack/npm}"
export NODE_LLAMA_CPP_SKIP_DOWNLOAD=true NODE_LLAMA_CPP_GPU=false
export npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false
P=(--progress none)

mkdir -p "$APP" "$OUT"
if [ ! -d "$APP/node_modules/node-llama-cpp" ]; then
  cp "$ROOT/tests/llama_cpp/package.json" "$ROOT/tests/llama_cpp/package-lock.json" "$APP/"
  (cd "$APP" && npm ci --omit=optional --ignore-scripts --cache "$CACHE" --loglevel=error --prefer-offline)
fi
cp "$ROOT/bench/draft_acceptance.mjs" "$APP/"

hf_folder() { rm -rf "$1"; mkdir -p "$1"; cp "$DATA"/*.json "$1/"; }
hf_folder "$OUT/hf-bf16"
"$BP" convert "$DATA/model.safetensors" -o "$OUT/hf-bf16/model.safetensors" --codec '*=bf16' "${P[@]}" >/dev/null
"$BP" convert "$OUT/hf-bf16" -o "$OUT/plain-bf16.gguf" "${P[@]}" >/dev/null

accept() { (cd "$APP" && node draft_acceptance.mjs --tokens "$TOKENS" "$@") | tee -a "$OUT/log.txt" | grep '^TOTAL' | sed 's/^TOTAL //'; }
: > "$OUT/log.txt"
SELF="$(accept --full "$OUT/plain-bf16.gguf" --draft "$OUT/plain-bf16.gguf" --label full-vs-full)"
echo "$SELF"
ROWS=()
for s in "${SETTINGS[@]}"; do
  K="${s%/*}" M="${s#*/}" T="$OUT/spec-$K-$M"
  "$BP" convert "$OUT/hf-bf16" -o "$T.bolt" --codec "*=bf16-spec:keep=$K,mbits=$M" "${P[@]}" >/dev/null
  "$BP" convert "$T.bolt" -o "$T.full.gguf" "${P[@]}" >/dev/null
  python3 "$ROOT/bench/draft_gguf.py" --same-tensors "$T.full.gguf" "$OUT/plain-bf16.gguf" >/dev/null \
    || { echo "FAIL: $T.full.gguf's tensors differ from the plain bf16 export" >&2; exit 1; }
  "$BP" convert "$T.bolt" --view draft -o "$T.draft.safetensors" "${P[@]}" >/dev/null
  python3 "$ROOT/bench/draft_gguf.py" "$T.full.gguf" "$T.draft.safetensors" "$T.draft.gguf" >/dev/null
  # Only keep 1, mbits 7 (every value, every mantissa bit) makes the draft the full model.
  if python3 "$ROOT/bench/draft_gguf.py" --same-tensors "$T.full.gguf" "$T.draft.gguf" >/dev/null \
     && ! awk -v k="$K" -v m="$M" 'BEGIN { exit !(k == 1 && m == 7) }'; then
    echo "FAIL: $T.draft.gguf holds the full view's tensors" >&2; exit 1
  fi
  "$BP" verify --target llama.cpp "$T.draft.gguf" >/dev/null
  VIEWS="$("$BP" inspect "$T.bolt" | awk '/^views/{v=1;next} v&&/^  (full|draft) /{printf "%s=%s ", $1, $2} /^$/{v=0}')"
  VIEWS+="gguf_draft=$(stat -c %s "$T.draft.gguf") gguf_full=$(stat -c %s "$T.full.gguf")"
  R="$(accept --full "$T.full.gguf" --draft "$T.draft.gguf" --label "$s")"
  echo "$R  views(bytes): $VIEWS"
  ROWS+=("$s|$R|$VIEWS")
done

echo
echo "| keep/mbits | acceptance | accepted/step | tokens/full call | draft view bytes | full view bytes | draft/full | GGUF bytes draft / full |"
echo "|---|---|---|---|---|---|---|---|"
for row in "${ROWS[@]}" "full-vs-full|$SELF|"; do
  IFS='|' read -r s json views <<<"$row"
  python3 - "$s" "$json" "$views" <<'PY'
import json, sys
s, r, views = sys.argv[1], json.loads(sys.argv[2]), dict(v.split("=") for v in sys.argv[3].split())
d, f = views.get("draft"), views.get("full")
ratio = "%.3f" % (int(d) / int(f)) if d and f else "-"
gguf = "%s / %s" % (views["gguf_draft"], views["gguf_full"]) if "gguf_full" in views else "-"
print("| %s | %.3f (%d/%d) | %.3f | %.3f | %s | %s | %s | %s |" % (s, r["acceptance"], r["accepted"], r["drafted"],
      r["acceptedPerStep"], r["tokensPerFullCall"], d or "-", f or "-", ratio, gguf))
PY
done
