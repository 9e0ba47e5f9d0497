// llama.cpp (through node-llama-cpp, prebuilt linux-x64 CPU binaries) as the
// external consumer of GGUF files bolt-pack writes. Driven by
// scripts/llama_cpp_check.sh; run from a directory whose node_modules holds the
// packages pinned in package-lock.json.
//
//   node check.mjs [--prompt TEXT] [--tokens N] [--threads N] JOB...
//   JOB = same:A.gguf,B.gguf   greedy output of B must equal A's (tokens and text)
//       | sane:A.gguf,REF.gguf greedy output of A must look like English text;
//                              REF's greedy continuation is replayed through A
//                              (teacher forcing) and A's argmax must agree with it
//                              at >= --min-agree of the positions.
//       | agree:A.gguf,REF.gguf    the teacher-forced agreement of sane: alone, for
//                              models that are not meant to write English (the
//                              random-weight Nemotron-H test models).
//
// Prints one "RESULT ..." line per model and "PASS"/"FAIL" per job; exits 1 on
// any failure. llama.cpp log lines at warn level or above are collected per
// model and printed (they are not failures by themselves).
import { getLlama, LlamaLogLevel } from "node-llama-cpp";
import path from "node:path";

function parseArgs(argv) {
  const o = { prompt: "Once upon a time", tokens: 48, threads: 2, minAgree: 0.75, jobs: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--prompt") o.prompt = argv[++i];
    else if (a === "--tokens") o.tokens = Number(argv[++i]);
    else if (a === "--threads") o.threads = Number(argv[++i]);
    else if (a === "--min-agree") o.minAgree = Number(argv[++i]);
    else {
      const m = /^(same|sane|agree):([^,]+),([^,]+)$/.exec(a);
      if (!m) throw new Error(`bad argument: ${a}`);
      o.jobs.push({ kind: m[1], a: m[2], b: m[3] });
    }
  }
  if (!o.jobs.length) throw new Error("no jobs given");
  return o;
}

const opts = parseArgs(process.argv.slice(2));
let currentModel = "(init)";
const logs = new Map(); // model -> [lines]
function logFor(name) {
  if (!logs.has(name)) logs.set(name, []);
  return logs.get(name);
}

const llama = await getLlama({
  gpu: false,               // CPU only
  build: "never",           // prebuilt binaries only: never download or compile llama.cpp
  skipDownload: true,
  usePrebuiltBinaries: true,
  progressLogs: false,
  maxThreads: opts.threads,
  logLevel: LlamaLogLevel.warn,
  logger: (level, message) => {
    const line = `${level}: ${String(message).trimEnd()}`;
    if (line.trim()) logFor(currentModel).push(line);
  },
});
console.log(`llama.cpp backend: ${llama.gpu === false ? "CPU" : llama.gpu}, ` +
  `build type ${llama.buildType}, llama.cpp release ${llama.llamaCppRelease.release}, threads ${opts.threads}`);

const cache = new Map(); // path -> { model, context, sequence, prompt, tokens, text }

async function load(file) {
  if (cache.has(file)) return cache.get(file);
  currentModel = path.basename(file);
  const t0 = performance.now();
  const model = await llama.loadModel({ modelPath: file, gpuLayers: 0 });
  const context = await model.createContext({ contextSize: 256, batchSize: 256, threads: opts.threads });
  const sequence = context.getSequence();
  const prompt = [];
  if (model.tokens.shouldPrependBosToken && model.tokens.bos != null) prompt.push(model.tokens.bos);
  prompt.push(...model.tokenize(opts.prompt));
  const tLoad = performance.now();
  const tokens = [];
  const eos = model.tokens.eos;
  for await (const t of sequence.evaluate(prompt, { temperature: 0 })) {
    if (t === eos || model.isEogToken?.(t)) break;
    tokens.push(t);
    if (tokens.length >= opts.tokens) break;
  }
  const text = model.detokenize(tokens);
  const tGen = performance.now();
  const r = { file, model, context, sequence, prompt, tokens, text,
              loadMs: tLoad - t0, genMs: tGen - tLoad };
  cache.set(file, r);
  console.log(`RESULT ${path.basename(file)}: load ${r.loadMs.toFixed(0)} ms, ` +
    `${tokens.length} tokens in ${r.genMs.toFixed(0)} ms`);
  console.log(`  text: ${JSON.stringify(opts.prompt + text)}`);
  currentModel = "(none)";
  return r;
}

// Greedy (argmax) next token of `r`'s model after each position of prompt+ref.tokens.
async function teacherForcedAgreement(r, ref) {
  const seqTokens = [...ref.prompt, ...ref.tokens];
  const ctx = await r.model.createContext({ contextSize: 256, batchSize: 256, threads: opts.threads });
  const seq = ctx.getSequence();
  const first = ref.prompt.length - 1; // predicts ref.tokens[0]
  const input = seqTokens.map((tok, i) =>
    i >= first && i < seqTokens.length - 1 ? [tok, { generateNext: { token: true, options: { temperature: 0 } } }] : tok);
  const out = await seq.controlledEvaluate(input);
  let agree = 0, n = 0;
  for (let i = first; i < seqTokens.length - 1; i++) {
    n++;
    if (out[i]?.next?.token === seqTokens[i + 1]) agree++;
  }
  await ctx.dispose();
  return { agree, n };
}

// A check that garbage (a repeated single token, byte soup, non-printable
// characters, unknown-token runs) fails and a tiny story passes.
function sanity(r) {
  const problems = [];
  const { text, tokens } = r;
  if (tokens.length < 16) problems.push(`only ${tokens.length} tokens before end of text (want >= 16)`);
  const chars = [...text];
  const bad = chars.filter((c) => !/^[\x20-\x7e\n\t]$/.test(c));
  if (bad.length > 0.02 * chars.length)
    problems.push(`${bad.length}/${chars.length} characters are not printable ASCII`);
  const words = text.split(/\s+/).map((w) => w.replace(/^[^A-Za-z]+|[^A-Za-z]+$/g, "")).filter(Boolean);
  const wordLike = words.filter((w) => /^[A-Za-z]+(?:'[A-Za-z]+)?$/.test(w) && w.length <= 20);
  if (words.length < 8) problems.push(`only ${words.length} words`);
  else if (wordLike.length < 0.9 * words.length) problems.push(`only ${wordLike.length}/${words.length} words are plain words`);
  const distinct = new Set(tokens).size;
  if (distinct < Math.min(12, tokens.length / 3)) problems.push(`only ${distinct} distinct tokens in ${tokens.length}`);
  let run = 1, maxRun = tokens.length ? 1 : 0;
  for (let i = 1; i < tokens.length; i++) { run = tokens[i] === tokens[i - 1] ? run + 1 : 1; maxRun = Math.max(maxRun, run); }
  if (maxRun > 3) problems.push(`one token repeated ${maxRun} times in a row`);
  return { problems, words: words.length, distinct, maxRun };
}

function commonPrefix(a, b) {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return i;
}

// The garbage detector must reject garbage: check it on made-up outputs first.
{
  const story = "was a little dog named Max. Max liked to run and play in the park with his friends every day.";
  const storyTokens = Array.from({ length: 40 }, (_, i) => i % 30);
  const cases = [
    ["a story", { text: story, tokens: storyTokens }, true],
    ["one token repeated", { text: " the".repeat(48), tokens: Array(48).fill(7) }, false],
    ["two tokens alternating", { text: " and the".repeat(24), tokens: Array.from({ length: 48 }, (_, i) => i % 2) }, false],
    ["control characters", { text: "\u0001\u0002\u0003 x".repeat(16), tokens: storyTokens }, false],
    ["non-ASCII soup", { text: "\ufffd\u00e9\u4e2d ".repeat(20), tokens: storyTokens }, false],
    ["byte-ish fragments", { text: "<0x0A> <0xE2> ### @@ 12 34 ;; ".repeat(4), tokens: storyTokens }, false],
    ["early end of text", { text: "was", tokens: [5] }, false],
  ];
  for (const [name, r, ok] of cases) {
    const got = sanity(r).problems.length === 0;
    if (got !== ok) {
      console.log(`FAIL self-test of the garbage detector: "${name}" ${ok ? "rejected" : "accepted"}`);
      process.exit(1);
    }
  }
  console.log(`garbage detector self-test: ${cases.length} cases ok`);
}

let failed = 0;
for (const job of opts.jobs) {
  const A = await load(job.a), B = await load(job.b);
  const label = `${job.kind} ${path.basename(job.a)} ${path.basename(job.b)}`;
  if (job.kind === "same") {
    const sameTokens = A.tokens.length === B.tokens.length && A.tokens.every((t, i) => t === B.tokens[i]);
    if (sameTokens && A.text === B.text) {
      console.log(`PASS ${label}: identical greedy output (${A.tokens.length} tokens)`);
    } else {
      failed++;
      console.log(`FAIL ${label}: greedy outputs differ (common prefix ${commonPrefix(A.tokens, B.tokens)} tokens)`);
      console.log(`  ${path.basename(job.a)}: ${JSON.stringify(A.text)}`);
      console.log(`  ${path.basename(job.b)}: ${JSON.stringify(B.text)}`);
    }
  } else {
    // agree: a random-weight model writes no English; only the agreement counts.
    const s = job.kind === "sane" ? sanity(A) : { problems: [], words: 0, distinct: new Set(A.tokens).size, maxRun: 0 };
    if (job.kind === "agree" && A.tokens.length < 8) s.problems.push(`only ${A.tokens.length} tokens before end of text`);
    const tf = await teacherForcedAgreement(A, B);
    const prefix = commonPrefix(A.tokens, B.tokens);
    const frac = tf.n ? tf.agree / tf.n : 0;
    if (frac < opts.minAgree)
      s.problems.push(`argmax agrees with ${path.basename(job.b)}'s greedy continuation at ${tf.agree}/${tf.n} positions (want >= ${opts.minAgree})`);
    const info = `${s.words} words, ${s.distinct} distinct tokens, longest run ${s.maxRun}; ` +
      `common greedy prefix with ${path.basename(job.b)} ${prefix}/${B.tokens.length} tokens; ` +
      `teacher-forced argmax agreement ${tf.agree}/${tf.n}`;
    if (s.problems.length) {
      failed++;
      console.log(`FAIL ${label}: ${s.problems.join("; ")} (${info})`);
    } else {
      console.log(`PASS ${label}: ${info}`);
    }
  }
}

for (const [name, lines] of logs) {
  console.log(`llama.cpp warnings while handling ${name}: ${lines.length}`);
  for (const l of lines) console.log(`  ${l}`);
}
if (!logs.size) console.log("llama.cpp warnings: none");

for (const r of cache.values()) { await r.context.dispose(); await r.model.dispose(); }
await llama.dispose();
if (failed) {
  console.log(`llama.cpp check: ${failed} job(s) FAILED`);
  process.exit(1);
}
console.log("llama.cpp check: all jobs passed");
