#!/usr/bin/env bash
# scripts/llama_cpp_check.sh BOLT_PACK [WORK_DIR]
#
# llama.cpp as the external consumer of the GGUF files bolt-pack writes.
# Installs node-llama-cpp 3.21.1 from npm with only its prebuilt linux-x64 CPU
# binaries (tests/llama_cpp/package-lock.json pins every package; no CUDA or
# Vulkan package, no install scripts, llama.cpp is never downloaded or built),
# then for the TinyStories-656K GGUF files in testdata/:
#   1. GGUF -> .bolt -> GGUF with BOLT_PACK; the result must be byte-identical;
#   2. greedy generation (temperature 0, CPU, "Once upon a time", 48 tokens) on
#      the original and the round-tripped file must give the same tokens/text;
#   3. the F16 file re-encoded to Q8_0 (GGUF -> GGUF, norms kept F32 as
#      llama-quantize does) must load and write a story, not garbage, and match
#      llama.cpp's own Q8_0 conversion of the same model token for token;
#   4. the F16 file exported as two-level NVFP4 (--codec '*.weight=nvfp4':
#      ggml NVFP4 blocks plus a <name>.scale F32 tensor beside each matrix,
#      the embedding in Q8_0 since llama.cpp reads no token_embd.scale),
#      directly and through a .bolt, must pass verify --target llama.cpp,
#      load in llama.cpp and write a story, not garbage.
#   5. random-weight Nemotron-H test models (tests/llama_cpp/make_nemotron_h.py:
#      nemotron_h_moe, its latent-MoE variant, dense nemotron_h) must load and
#      round-trip, the Nemotron Bolt recipe export must load and agree with
#      its parent, and verify --target llama.cpp must refuse exactly the
#      broken variants llama.cpp refuses; the same models as Hugging Face
#      folders (make_nemotron_h_hf.py) must convert to the same tensors and
#      generate the same tokens, and the folder's recipe + elastic slice the
#      same tokens as the GGUF's; int4-g128's Q4_0 export must come back
#      through an int4-g128 .bolt byte-identical;
#   6. tiny random-weight Gemma 2 and Gemma 3 Hugging Face folders
#      (make_gemma_hf.py) must convert, pass verify and load and generate.
# Prints "SKIP: ..." and exits 0 when node/npm are missing or too old, the
# machine is not linux-x64, or the npm registry cannot be reached (and the
# packages are not cached); any other failure exits non-zero.
#
#   WORK_DIR              default build-llama-cpp/ (ignored by git); node_modules lives there
#   BOLTPACK_NPM_CACHE    npm download cache, default ${XDG_CACHE_HOME:-~/.cache}/bolt-pack/npm
#   LLAMA_CHECK_THREADS   llama.cpp threads (default 1: the model is tiny, and
#                         ggml's spinning threads crawl on a busy 2-core machine)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BP="$(realpath "${1:?usage: $0 BOLT_PACK [WORK_DIR]}")"
WORK="${2:-$ROOT/build-llama-cpp}"
CACHE="${BOLTPACK_NPM_CACHE:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/bolt-pack/npm}"
THREADS="${LLAMA_CHECK_THREADS:-1}"
SRC="$ROOT/tests/llama_cpp"
DATA="$ROOT/testdata/tinystories-656k"
START=$SECONDS

skip() { echo "SKIP: llama.cpp check: $*"; exit 0; }
fail() { echo "FAIL: llama.cpp check: $*" >&2; exit 1; }

[ "$(uname -s)-$(uname -m)" = "Linux-x86_64" ] || skip "node-llama-cpp's binaries are installed for linux-x64 only (this is $(uname -s)-$(uname -m))"
command -v node >/dev/null || skip "node is not installed"
command -v npm >/dev/null || skip "npm is not installed"
NODE_MAJOR="$(node -p 'process.versions.node.split(".")[0]')"
[ "$NODE_MAJOR" -ge 20 ] || skip "node-llama-cpp needs Node.js >= 20 (this is $(node --version))"

# Never fetch or compile llama.cpp, never look for a GPU.
export NODE_LLAMA_CPP_SKIP_DOWNLOAD=true NODE_LLAMA_CPP_GPU=false
export npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false

APP="$WORK/app"
mkdir -p "$APP" "$CACHE"
cp "$SRC/package.json" "$SRC/package-lock.json" "$SRC/check.mjs" "$SRC/zero_cut_units.mjs" "$SRC/loads.mjs" "$APP/"
LOCK_SUM="$(sha256sum "$SRC/package-lock.json" | cut -d' ' -f1)"
if [ "$(cat "$APP/node_modules/.bolt-pack-lock-sha256" 2>/dev/null)" = "$LOCK_SUM" ]; then
  echo "== node-llama-cpp: already installed in $APP (same package-lock.json)"
else
  echo "== node-llama-cpp 3.21.1 + @node-llama-cpp/linux-x64: npm ci (cache $CACHE)"
  # --omit=optional drops the other platforms' and the CUDA/Vulkan binary
  # packages (linux-x64 is a direct dependency, so it stays); --ignore-scripts
  # skips node-llama-cpp's postinstall, which may try to fetch or build llama.cpp.
  NPM_CI=(npm ci --omit=optional --ignore-scripts --cache "$CACHE" --loglevel=error)
  if ! (cd "$APP" && timeout 300 "${NPM_CI[@]}" --offline >/dev/null 2>&1); then
    (cd "$APP" && timeout 60 npm ping --cache "$CACHE" --fetch-retries=0 --fetch-timeout=30000 >/dev/null 2>&1) \
      || skip "npm registry $(npm config get registry) not reachable and the packages are not in the npm cache"
    (cd "$APP" && timeout 600 "${NPM_CI[@]}" --prefer-offline --fetch-retries=1) \
      || fail "npm ci failed although the registry answers"
  fi
  echo "$LOCK_SUM" > "$APP/node_modules/.bolt-pack-lock-sha256"
fi
shopt -s nullglob
for p in "$APP"/node_modules/@node-llama-cpp/*; do
  case "$(basename "$p")" in linux-x64) ;; *) fail "unexpected binary package installed: $p" ;; esac
done
[ -d "$APP/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64" ] || fail "@node-llama-cpp/linux-x64 binaries missing"
echo "   installed in $((SECONDS - START)) s"

echo "== bolt-pack: GGUF -> bolt -> GGUF, and F16 -> Q8_0"
OUT="$WORK/models"
rm -rf "$OUT"; mkdir -p "$OUT"
F16=TinyStories-656K.f16.gguf
Q8_LLAMA=TinyStories-656K-Q8_0.from-llama.cpp.zig.gguf
JOBS=()
for g in "$F16" "$Q8_LLAMA" tinystories-656k-q8_0.from-infer-zero.gguf; do
  [ -f "$DATA/$g" ] || fail "missing $DATA/$g"
  b="${g%.gguf}"
  "$BP" convert "$DATA/$g" -o "$OUT/$b.bolt"
  "$BP" convert "$OUT/$b.bolt" -o "$OUT/$b.roundtrip.gguf"
  cmp "$DATA/$g" "$OUT/$b.roundtrip.gguf" || fail "$g: GGUF -> bolt -> GGUF is not byte-identical"
  echo "   $g -> $b.bolt -> $b.roundtrip.gguf: byte-identical"
  JOBS+=("same:$DATA/$g,$OUT/$b.roundtrip.gguf")
done
# The Hugging Face folder (issue 20): converted by bolt-pack it must be
# llama.cpp's own conversion, so llama.cpp generates the same tokens.
HF=TinyStories-656K.from-hf-folder.f16.gguf
"$BP" convert "$DATA" -o "$OUT/$HF" --codec '*=f16'
"$BP" verify --target llama.cpp --strict "$OUT/$HF" || fail "$HF: verify --target llama.cpp failed"
JOBS+=("same:$DATA/$F16,$OUT/$HF")
# llama.cpp keeps 1-D tensors (the RMSNorm weights) in F32; its CPU backend
# aborts on a Q8_0 norm weight (binary_op: unsupported types ... src1: q8_0),
# so bolt-pack's quantizing codecs leave 1-D tensors in float as well.
Q8=TinyStories-656K.f16.bolt-pack-q8_0.gguf
"$BP" convert "$DATA/$F16" -o "$OUT/$Q8" --codec '*=q8_0'
"$BP" inspect "$OUT/$Q8" | sed -n '/^totals by codec/,$p'
JOBS+=("sane:$OUT/$Q8,$DATA/$F16" "same:$OUT/$Q8,$DATA/$Q8_LLAMA")
# Two-level NVFP4 (spec/gguf-mapping.md §3): verify --target llama.cpp must
# pass (it predicts what llama.cpp's loader accepts), and llama.cpp must load
# the file and write a story (checked loosely below: 4-bit weights of a tiny
# model drift from the F16 greedy text sooner than Q8_0 does).
NV=TinyStories-656K.f16.bolt-pack-nvfp4.gguf
NV_BOLT=TinyStories-656K.f16.nvfp4.bolt
NV_FROM_BOLT=TinyStories-656K.f16.nvfp4-bolt-to.gguf
"$BP" convert "$DATA/$F16" -o "$OUT/$NV" --codec '*.weight=nvfp4'
"$BP" convert "$DATA/$F16" -o "$OUT/$NV_BOLT" --codec '*.weight=nvfp4'
"$BP" convert "$OUT/$NV_BOLT" -o "$OUT/$NV_FROM_BOLT"
for f in "$NV_BOLT" "$NV" "$NV_FROM_BOLT"; do
  "$BP" verify --target llama.cpp --strict "$OUT/$f" || fail "$f: verify --target llama.cpp failed"
done
"$BP" inspect "$OUT/$NV" | sed -n '/^totals by codec/,$p'
NV_JOBS=("sane:$OUT/$NV,$DATA/$F16" "sane:$OUT/$NV_FROM_BOLT,$DATA/$F16")
# int4-g128 exports as Q4_0 losslessly (gguf-mapping.md G-3.2): through a
# .bolt it is the same file as the direct export, and llama.cpp writes a story.
"$BP" convert "$DATA/$F16" -o "$OUT/int4.bolt" --codec '*.weight=int4-g128' 2>/dev/null
"$BP" convert "$OUT/int4.bolt" -o "$OUT/TinyStories-656K.int4-g128.gguf"
"$BP" convert "$DATA/$F16" -o "$OUT/TinyStories-656K.int4-g128-direct.gguf" --codec '*.weight=int4-g128' 2>/dev/null
cmp "$OUT/TinyStories-656K.int4-g128.gguf" "$OUT/TinyStories-656K.int4-g128-direct.gguf" \
  || fail "int4-g128 -> Q4_0 differs through a .bolt"
"$BP" verify --target llama.cpp --strict "$OUT/TinyStories-656K.int4-g128.gguf" || fail "int4-g128 Q4_0 export: verify failed"
# ... and back (G-3.3): that Q4_0 under an int4-g128 rule is the same
# int4-g128 streams again, so its GGUF export is the same file.
"$BP" convert "$OUT/TinyStories-656K.int4-g128.gguf" -o "$OUT/int4.back.bolt" --codec '*.weight=int4-g128' 2>/dev/null
"$BP" convert "$OUT/int4.back.bolt" -o "$OUT/TinyStories-656K.int4-g128.back.gguf"
cmp "$OUT/TinyStories-656K.int4-g128.gguf" "$OUT/TinyStories-656K.int4-g128.back.gguf" \
  || fail "Q4_0 -> int4-g128 -> Q4_0 is not byte-identical"
NV_JOBS+=("sane:$OUT/TinyStories-656K.int4-g128.gguf,$DATA/$F16")
# Elastic (spec/elastic.md): FFN channels and query heads (inside their GQA
# group) stored in importance order (recipes/tinystories-656k-elastic.json);
# the permuted full model must give the same tokens. Every slice (FFN 75% and
# 50%, one query head of each KV group, both) must give exactly the tokens
# of the full model with the units that budget cuts zeroed
# (zero_cut_units.mjs zeroes the columns that read them): proof that the
# slice kept the right units and that llama.cpp reads its metadata (head
# count, head width, FFN length) as meant. The FFN slices must also still
# write English (pruned without retraining, so agreement is checked loosely).
"$BP" convert "$DATA/$F16" -o "$OUT/elastic.bolt" --elastic "$ROOT/recipes/tinystories-656k-elastic.json"
"$BP" convert "$OUT/elastic.bolt" -o "$OUT/TinyStories-656K.elastic-full.gguf"
JOBS+=("same:$DATA/$F16,$OUT/TinyStories-656K.elastic-full.gguf")
SLICE_JOBS=()
for b in ffn75 ffn50 heads50 ffn50-heads50; do
  "$BP" slice "$OUT/elastic.bolt" --budget "$b" -o "$OUT/TinyStories-656K.$b.gguf"
  node "$APP/zero_cut_units.mjs" "$DATA/$F16" "$ROOT/recipes/tinystories-656k-elastic.json" "$b" \
    "$OUT/TinyStories-656K.zeroed-$b.gguf"
  JOBS+=("same:$OUT/TinyStories-656K.$b.gguf,$OUT/TinyStories-656K.zeroed-$b.gguf")
done
for b in ffn75 ffn50; do SLICE_JOBS+=("sane:$OUT/TinyStories-656K.$b.gguf,$DATA/$F16"); done

# Nemotron-H (issue 21): random-weight test models of the hybrid Mamba-2 +
# MoE + attention family, generated here (tests/llama_cpp/make_nemotron_h.py:
# MoE, latent MoE and dense nemotron_h), each GGUF -> .bolt -> GGUF
# byte-identical with the same greedy tokens, and the Nemotron Bolt recipe
# export (iq2_xxs experts, nvfp4 Mamba, q8_0 attention) written directly and
# through a .bolt, byte-identical, loading in llama.cpp and agreeing with the
# parent's greedy continuation at >= 30% of positions (random weights give
# near-uniform logits; a broken export agrees at ~1/2048).
echo "== Nemotron-H test models: round trip and the Bolt recipe export"
MAKE_NH=(/usr/bin/python3 "$SRC/make_nemotron_h.py" "$DATA/$F16")
NH_JOBS=()
AGREE_JOBS=()
for v in moe latent dense; do
  nh="$OUT/nemotron-h-$v"
  "${MAKE_NH[@]}" "$nh.gguf" --variant "$v"
  "$BP" verify --target llama.cpp "$nh.gguf" >/dev/null || fail "nemotron-h-$v.gguf: verify --target llama.cpp refuses the parent"
  "$BP" convert "$nh.gguf" -o "$nh.bolt" --no-fsync >/dev/null
  "$BP" convert "$nh.bolt" -o "$nh.roundtrip.gguf" --no-fsync >/dev/null
  cmp "$nh.gguf" "$nh.roundtrip.gguf" || fail "nemotron-h-$v: GGUF -> bolt -> GGUF is not byte-identical"
  "$BP" convert "$nh.gguf" -o "$nh.bolt-mix.gguf" --recipe "$ROOT/recipes/nemotron-bolt.textproto" --no-fsync 2>/dev/null >/dev/null
  "$BP" convert "$nh.gguf" -o "$nh.bolt-mix.bolt" --recipe "$ROOT/recipes/nemotron-bolt.textproto" --no-fsync 2>/dev/null >/dev/null
  "$BP" convert "$nh.bolt-mix.bolt" -o "$nh.bolt-mix.via-bolt.gguf" --no-fsync >/dev/null
  cmp "$nh.bolt-mix.gguf" "$nh.bolt-mix.via-bolt.gguf" || fail "nemotron-h-$v: the recipe export differs through a .bolt"
  "$BP" verify --target llama.cpp "$nh.bolt-mix.gguf" >/dev/null || fail "nemotron-h-$v.bolt-mix.gguf: verify --target llama.cpp refuses it"
  echo "   nemotron-h-$v: $(stat -c %s "$nh.gguf") bytes F16 -> Bolt mix $(stat -c %s "$nh.bolt-mix.gguf") bytes; round trip byte-identical"
  NH_JOBS+=("same:$nh.gguf,$nh.roundtrip.gguf")
  AGREE_JOBS+=("agree:$nh.bolt-mix.gguf,$nh.gguf")
done
# The same models as Hugging Face folders (NemotronHForCausalLM,
# tests/llama_cpp/make_nemotron_h_hf.py: make_nemotron_h.py's weights in HF's
# layout, the TinyStories tokenizer files): `convert HF_DIR -o X.gguf` must
# give make_nemotron_h.py's tensors bit for bit (names, types, shapes,
# bytes; in HF's sorted order, as llama.cpp's converter writes them) and its
# {arch}.* keys, directly and through a .bolt, pass verify, and generate in
# llama.cpp exactly the tokens of that GGUF.
echo "== Nemotron-H from Hugging Face folders (nemotron_h_moe, latent, nemotron_h)"
for v in moe latent dense; do
  hf="$OUT/nemotron-h-hf-$v"
  /usr/bin/python3 "$SRC/make_nemotron_h_hf.py" "$DATA/$F16" "$DATA" "$hf" --variant "$v" --reference "$hf.reference.gguf"
  "$BP" convert "$hf" -o "$hf.gguf" --no-fsync >/dev/null || fail "nemotron-h-hf-$v: convert of the HF folder failed"
  /usr/bin/python3 "$SRC/make_nemotron_h_hf.py" --compare "$hf.gguf" "$hf.reference.gguf" \
    || fail "nemotron-h-hf-$v: the HF conversion differs from make_nemotron_h.py's GGUF"
  "$BP" convert "$hf" -o "$hf.bolt" --no-fsync >/dev/null
  "$BP" convert "$hf.bolt" -o "$hf.via-bolt.gguf" --no-fsync >/dev/null
  cmp "$hf.gguf" "$hf.via-bolt.gguf" || fail "nemotron-h-hf-$v: HF -> .bolt -> GGUF differs from HF -> GGUF"
  "$BP" verify --target llama.cpp "$hf.gguf" >/dev/null || fail "nemotron-h-hf-$v.gguf: verify --target llama.cpp refuses it"
  NH_JOBS+=("same:$hf.reference.gguf,$hf.gguf")
done
# Every elastic cut of the family (issue 21 item 3): routed experts, expert
# width, shared-expert width, query heads inside their GQA groups, a dropped
# Mamba-2 layer and a dropped MoE layer, and all at once; each slice must
# pass verify and give exactly the tokens of the parent with the cut units
# switched off (make_nemotron_h.py --switch-off). Then the Bolt mix with the
# budgets its codecs can cut, in one convert (recipe + elastic): each slice
# loads, is smaller than the uncut mix, and agrees with its switched-off
# parent as the uncut mix agrees with the parent.
nh="$OUT/nemotron-h-moe"
"${MAKE_NH[@]}" "$OUT/nemotron-h-elastic.gguf" --elastic "$OUT/nemotron-h-elastic.json"
"$BP" convert "$nh.gguf" -o "$nh.elastic.bolt" --elastic "$OUT/nemotron-h-elastic.json" --no-fsync >/dev/null 2>&1
cmp "$nh.gguf" "$OUT/nemotron-h-elastic.gguf" || fail "make_nemotron_h.py is not deterministic"
CUT_JOBS=()
for b in experts75 experts50 moe-ffn50 shexp50 heads50 mamba-heads75 mamba-heads50 drop-mamba drop-moe bolt50; do
  "$BP" slice "$nh.elastic.bolt" --budget "$b" -o "$nh.$b.gguf" >/dev/null 2>&1 || fail "slice --budget $b failed"
  "$BP" verify --target llama.cpp "$nh.$b.gguf" >/dev/null || fail "nemotron-h-moe.$b.gguf: verify --target llama.cpp refuses it"
  "${MAKE_NH[@]}" "$nh.switched-off-$b.gguf" --switch-off "$b"
  echo "   cut $b: $(stat -c %s "$nh.$b.gguf") bytes (parent $(stat -c %s "$nh.gguf"))"
  CUT_JOBS+=("same:$nh.switched-off-$b.gguf,$nh.$b.gguf")
done
"${MAKE_NH[@]}" /dev/null --elastic "$OUT/nemotron-h-mix.json" --budgets mix
"$BP" convert "$nh.gguf" -o "$nh.bolt-mix.elastic.bolt" --recipe "$ROOT/recipes/nemotron-bolt.textproto" \
  --elastic "$OUT/nemotron-h-mix.json" --no-fsync >/dev/null 2>&1 || fail "recipe + elastic convert failed"
"$BP" convert "$nh.bolt-mix.elastic.bolt" -o "$nh.bolt-mix.elastic-full.gguf" --no-fsync >/dev/null 2>&1
# Units stored in importance order are quantized in that order: the full
# budget is the mix's size, not its bytes.
MIX_SIZE=$(stat -c %s "$nh.bolt-mix.gguf")
[ "$(stat -c %s "$nh.bolt-mix.elastic-full.gguf")" = "$MIX_SIZE" ] || fail "the elastic Bolt mix's full budget is not the mix's size"
AGREE_JOBS+=("agree:$nh.bolt-mix.elastic-full.gguf,$nh.gguf")
# bolt-pack plan (issue 19 item 4) from the GGUF's headers alone: the exact
# bytes of the .bolt file each budget of the mix slices to.
"$BP" plan "$nh.gguf" --recipe "$ROOT/recipes/nemotron-bolt.textproto" --elastic "$OUT/nemotron-h-mix.json" \
  --budget 2600K --json >"$nh.plan.json" 2>/dev/null || fail "plan of the Bolt mix failed"
for b in experts75 experts50 bolt-mix50 drop-moe; do
  "$BP" slice "$nh.bolt-mix.elastic.bolt" --budget "$b" -o "$nh.bolt-mix.$b.bolt" >/dev/null 2>&1 || fail "mix slice --budget $b to .bolt failed"
  planned=$(/usr/bin/python3 -c 'import json,sys; print([r["bytes"] for r in json.load(open(sys.argv[1]))["results"]
            if r["tier"] == "as given" and r["budget"] == sys.argv[2]][0])' "$nh.plan.json" "$b")
  [ "$planned" = "$(stat -c %s "$nh.bolt-mix.$b.bolt")" ] || fail "plan says $planned bytes for $b, the slice has $(stat -c %s "$nh.bolt-mix.$b.bolt")"
  echo "   plan: $b $planned bytes, the slice's to the byte"
  "$BP" slice "$nh.bolt-mix.elastic.bolt" --budget "$b" -o "$nh.bolt-mix.$b.gguf" >/dev/null 2>&1 || fail "mix slice --budget $b failed"
  "$BP" verify --target llama.cpp "$nh.bolt-mix.$b.gguf" >/dev/null || fail "nemotron-h-moe.bolt-mix.$b.gguf: verify refuses it"
  size=$(stat -c %s "$nh.bolt-mix.$b.gguf")
  [ "$size" -lt "$MIX_SIZE" ] || fail "mix slice $b ($size bytes) is not smaller than the uncut mix ($MIX_SIZE)"
  [ -f "$nh.switched-off-$b.gguf" ] || "${MAKE_NH[@]}" "$nh.switched-off-$b.gguf" --switch-off "$b"
  echo "   Bolt mix cut $b: $size bytes (uncut mix $MIX_SIZE)"
  AGREE_JOBS+=("agree:$nh.bolt-mix.$b.gguf,$nh.switched-off-$b.gguf")
done
# The publisher path from the HF folder (issue 20 item 5): recipe + elastic
# (both naming GGUF tensors) in one convert of the folder, then a slice: it
# must pass verify and generate the tokens of the same slice made from the
# GGUF.
hf="$OUT/nemotron-h-hf-moe"
"$BP" convert "$hf" -o "$hf.bolt-mix.elastic.bolt" --recipe "$ROOT/recipes/nemotron-bolt.textproto" \
  --elastic "$OUT/nemotron-h-mix.json" --no-fsync >/dev/null 2>&1 || fail "HF folder: recipe + elastic convert failed"
"$BP" slice "$hf.bolt-mix.elastic.bolt" --budget bolt-mix50 -o "$hf.bolt-mix50.gguf" >/dev/null 2>&1 \
  || fail "HF folder: slice --budget bolt-mix50 failed"
"$BP" verify --target llama.cpp "$hf.bolt-mix50.gguf" >/dev/null || fail "nemotron-h-hf-moe.bolt-mix50.gguf: verify refuses it"
echo "   HF folder -> Bolt mix + elastic -> slice bolt-mix50: $(stat -c %s "$hf.bolt-mix50.gguf") bytes"
CUT_JOBS+=("same:$nh.bolt-mix.bolt-mix50.gguf,$hf.bolt-mix50.gguf")
# Gemma 2 and Gemma 3 (text) from Hugging Face folders (issue 20 item 2):
# tiny random-weight checkpoints (tests/llama_cpp/make_gemma_hf.py: sandwich
# norms, norms stored as 1 + weight, Gemma 3's Q/K norms and linear rope
# scaling, the TinyStories tokenizer files) must convert, directly and
# through a .bolt to the same bytes, pass verify, and load and generate in
# llama.cpp (loads.mjs: 8 greedy tokens; random weights write no English).
# Converted to F32 they must be the GGUF make_gemma_hf.py --reference
# computes from llama.cpp's converter on its own (tensors bit for bit, the
# {arch}.* keys), with the same greedy tokens.
echo "== Gemma 2 and Gemma 3 from Hugging Face folders"
for a in gemma2 gemma3; do
  g="$OUT/$a-hf"
  /usr/bin/python3 "$SRC/make_gemma_hf.py" "$DATA" "$g" --arch "$a" --reference "$g.reference.gguf" --tokenizer "$DATA/$F16"
  "$BP" convert "$g" -o "$g.gguf" --no-fsync >/dev/null || fail "$a-hf: convert of the HF folder failed"
  "$BP" convert "$g" -o "$g.f32.gguf" --codec '*=f32' --no-fsync >/dev/null
  /usr/bin/python3 "$SRC/make_nemotron_h_hf.py" --compare "$g.f32.gguf" "$g.reference.gguf" \
    || fail "$a-hf: the F32 conversion differs from make_gemma_hf.py's reference GGUF"
  NH_JOBS+=("same:$g.reference.gguf,$g.f32.gguf")
  "$BP" convert "$g" -o "$g.bolt" --no-fsync >/dev/null
  "$BP" convert "$g.bolt" -o "$g.via-bolt.gguf" --no-fsync >/dev/null
  cmp "$g.gguf" "$g.via-bolt.gguf" || fail "$a-hf: HF -> .bolt -> GGUF differs from HF -> GGUF"
  "$BP" verify --target llama.cpp "$g.gguf" >/dev/null || fail "$a-hf.gguf: verify --target llama.cpp refuses it"
  out="$(cd "$APP" && timeout 120 node loads.mjs "$g.gguf" 2>&1)" || fail "$a-hf.gguf: llama.cpp: $(echo "$out" | tail -1)"
  echo "   $a-hf: $(stat -c %s "$g.gguf") bytes; llama.cpp $(echo "$out" | tail -1)"
done

# verify --target llama.cpp must agree with llama.cpp on files it refuses:
# each broken variant is loaded by llama.cpp in its own process (one aborts).
for b in no-ln-eps head0 probs-name expert-count ssm-inner-array; do
  f="$OUT/nemotron-h-broken-$b.gguf"
  "${MAKE_NH[@]}" "$f" --break "$b"
  if "$BP" verify --target llama.cpp "$f" >/dev/null 2>&1; then bp_says=accepts; else bp_says=refuses; fi
  llama_says=refuses
  out="$(cd "$APP" && timeout 120 node loads.mjs "$f" 2>&1)" && llama_says=accepts
  echo "   broken $b: llama.cpp $llama_says ($(echo "$out" | tail -1 | cut -c1-120)); bolt-pack verify $bp_says"
  [ "$bp_says" = "$llama_says" ] || fail "nemotron-h broken $b: verify --target llama.cpp $bp_says a file llama.cpp $llama_says"
done
(cd "$APP" && timeout 300 node check.mjs --threads "$THREADS" --tokens 48 "${NH_JOBS[@]}" "${CUT_JOBS[@]}") \
  || fail "see the FAIL lines above"
(cd "$APP" && timeout 300 node check.mjs --threads "$THREADS" --tokens 32 --min-agree 0.3 "${AGREE_JOBS[@]}") \
  || fail "see the FAIL lines above"

echo "== llama.cpp (node-llama-cpp, CPU, $THREADS thread(s)): greedy generation"
(cd "$APP" && timeout 300 node check.mjs --threads "$THREADS" --tokens 48 --prompt "Once upon a time" "${JOBS[@]}") \
  || fail "see the FAIL lines above"
echo "== llama.cpp: elastic FFN slices (75%, 50%) still write English"
(cd "$APP" && timeout 300 node check.mjs --threads "$THREADS" --tokens 48 --prompt "Once upon a time" --min-agree 0.15 \
  "${SLICE_JOBS[@]}") || fail "see the FAIL lines above"
echo "== llama.cpp: two-level NVFP4 and int4-g128 (Q4_0) exports write English"
(cd "$APP" && timeout 300 node check.mjs --threads "$THREADS" --tokens 48 --prompt "Once upon a time" \
  --min-agree 0.5 "${NV_JOBS[@]}") || fail "see the FAIL lines above"
# build: "never" in check.mjs; make sure nothing was cloned or compiled anyway.
for d in llama/llama.cpp llama/localBuilds; do
  [ ! -e "$APP/node_modules/node-llama-cpp/$d" ] || fail "node-llama-cpp fetched or built llama.cpp ($d exists)"
done
echo "llama.cpp check passed in $((SECONDS - START)) s"
