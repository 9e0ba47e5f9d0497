// Whether llama.cpp (node-llama-cpp, CPU) loads a GGUF file and generates
// from it: prints "LOADS <n> tokens" and exits 0, or "REFUSED <reason>" and
// exits 3. Run once per file (scripts/llama_cpp_check.sh): llama.cpp aborts
// the process on some files (a GGML_ASSERT), which the caller also counts as
// a refusal.
//
//   node loads.mjs FILE.gguf
import { getLlama, LlamaLogLevel } from "node-llama-cpp";

const file = process.argv[2];
const errors = [];
const llama = await getLlama({
  gpu: false, build: "never", skipDownload: true, usePrebuiltBinaries: true, progressLogs: false, maxThreads: 1,
  logLevel: LlamaLogLevel.error,
  logger: (level, message) => { if (String(message).trim()) errors.push(String(message).trim()); },
});
try {
  const model = await llama.loadModel({ modelPath: file, gpuLayers: 0 });
  const context = await model.createContext({ contextSize: 64, threads: 1 });
  const tokens = [];
  for await (const t of context.getSequence().evaluate(model.tokenize("Once upon a time"), { temperature: 0 })) {
    tokens.push(t);
    if (tokens.length >= 8) break;
  }
  console.log(`LOADS ${tokens.length} tokens`);
  process.exit(0);
} catch (e) {
  const why = errors.find((l) => l.includes("error loading model")) ?? e.message;
  console.log(`REFUSED ${why}`);
  process.exit(3);
}
