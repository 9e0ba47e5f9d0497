// Greedy speculative-decoding acceptance of a draft GGUF against its full GGUF,
// measured with llama.cpp (node-llama-cpp 3.21.1, prebuilt CPU binaries).
// Driven by bench/draft_acceptance.sh; run from a directory whose node_modules
// holds tests/llama_cpp/package-lock.json's packages.
//
//   node draft_acceptance.mjs --full FULL.gguf --draft DRAFT.gguf
//        [--n-draft 4] [--tokens 160] [--threads 1] [--label TEXT] [PROMPT...]
//
// For each prompt: the full model's greedy continuation T (temperature 0, up to
// --tokens tokens, ending early at end of text). Then speculative decoding is
// replayed on T: from the accepted prefix prompt+T[0,k), the draft greedily
// proposes min(n_draft, |T|-k) tokens; accepted = the longest prefix of them
// equal to T[k..]; the full model's own next token is appended as well, so a
// step (one full-model call) advances accepted+1 tokens (never past |T|).
// The draft's proposals are recomputed from the prefix at every step (the
// sequence is cleared first): the model is tiny, and no KV-cache trimming can
// go wrong. Prints one "RESULT" line per prompt and a "TOTAL" JSON line:
// acceptance = accepted/drafted, accepted per step, tokens per full-model call.
import { getLlama, LlamaLogLevel } from "node-llama-cpp";

const DEFAULT_PROMPTS = [
  "Once upon a time",
  "One day, a little girl named Lily",
  "Tom had a big red ball. He",
  "The sun was shining and the birds were singing. Sue",
  "There was a small cat who lived in a house",
  "Ben and his mom went to the park. They",
];

function parseArgs(argv) {
  const o = { nDraft: 4, tokens: 160, threads: 1, label: "", prompts: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--full") o.full = argv[++i];
    else if (a === "--draft") o.draft = argv[++i];
    else if (a === "--n-draft") o.nDraft = Number(argv[++i]);
    else if (a === "--tokens") o.tokens = Number(argv[++i]);
    else if (a === "--threads") o.threads = Number(argv[++i]);
    else if (a === "--label") o.label = argv[++i];
    else o.prompts.push(a);
  }
  if (!o.full || !o.draft) throw new Error("usage: --full FULL.gguf --draft DRAFT.gguf [PROMPT...]");
  if (!o.prompts.length) o.prompts = DEFAULT_PROMPTS;
  return o;
}

const opts = parseArgs(process.argv.slice(2));
const llama = await getLlama({
  gpu: false, build: "never", skipDownload: true, usePrebuiltBinaries: true,
  progressLogs: false, maxThreads: opts.threads, logLevel: LlamaLogLevel.error,
});

async function open(file) {
  const model = await llama.loadModel({ modelPath: file, gpuLayers: 0 });
  const context = await model.createContext({ contextSize: 512, batchSize: 512, threads: opts.threads });
  return { model, context, sequence: context.getSequence() };
}

// Greedy tokens after `prefix`, at most `n`; stops after an end-of-text token
// only when `stopAtEog` (the draft's proposals do not stop).
async function greedy(m, prefix, n, stopAtEog) {
  await m.sequence.clearHistory();
  const out = [];
  if (n <= 0) return out;
  for await (const t of m.sequence.evaluate(prefix, { temperature: 0 })) {
    out.push(t);
    if (out.length >= n || (stopAtEog && (t === m.model.tokens.eos || m.model.isEogToken?.(t)))) break;
  }
  return out;
}

function promptTokens(m, text) {
  const p = [];
  if (m.model.tokens.shouldPrependBosToken && m.model.tokens.bos != null) p.push(m.model.tokens.bos);
  p.push(...m.model.tokenize(text));
  return p;
}

async function replay(full, draft, text) {
  const prompt = promptTokens(full, text);
  const target = await greedy(full, prompt, opts.tokens, true);
  let k = 0, steps = 0, drafted = 0, accepted = 0;
  while (k < target.length) {
    const want = Math.min(opts.nDraft, target.length - k);
    const proposal = await greedy(draft, [...prompt, ...target.slice(0, k)], want, false);
    let a = 0;
    while (a < want && proposal[a] === target[k + a]) a++;
    steps++; drafted += want; accepted += a;
    k = Math.min(target.length, k + a + 1);
  }
  return { prompt: text, tokens: target.length, steps, drafted, accepted,
           text: full.model.detokenize(target) };
}

const full = await open(opts.full), draft = await open(opts.draft);
const tot = { tokens: 0, steps: 0, drafted: 0, accepted: 0 };
for (const p of opts.prompts) {
  const r = await replay(full, draft, p);
  for (const key of Object.keys(tot)) tot[key] += r[key];
  console.log(`RESULT ${opts.label} ${JSON.stringify(p)}: ${r.tokens} tokens, ${r.steps} steps, ` +
    `accepted ${r.accepted}/${r.drafted} (${(r.accepted / r.drafted).toFixed(3)})`);
  console.log(`  text: ${JSON.stringify(p + r.text)}`);
}
console.log("TOTAL " + JSON.stringify({
  label: opts.label, prompts: opts.prompts.length, nDraft: opts.nDraft, ...tot,
  acceptance: +(tot.accepted / tot.drafted).toFixed(4),
  acceptedPerStep: +(tot.accepted / tot.steps).toFixed(3),
  tokensPerFullCall: +(tot.tokens / tot.steps).toFixed(3),
}));
for (const m of [full, draft]) { await m.context.dispose(); await m.model.dispose(); }
await llama.dispose();
