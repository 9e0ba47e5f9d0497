// The bolt-pack subcommands. Each returns the process exit code: 0 success,
// 1 failure or problems found, 2 bad usage.
#ifndef BOLTPACK_TOOLS_COMMANDS_H_
#define BOLTPACK_TOOLS_COMMANDS_H_

#include <string>
#include <vector>

namespace boltpack::tools {

// What a skeleton (bolt-pack plan) cannot know from headers: tensors whose
// stored bytes depend on their data, estimated.
struct PlanEstimate {
  uint64_t bytes = 0;                // their streams, each padded to the alignment
  std::vector<std::string> tensors;  // "name (why)"
};

struct ConvertArgs {
  std::vector<std::string> inputs;
  std::string output;
  std::vector<std::string> codec_rules;
  int threads = 0;
  uint64_t alignment = 4096;
  int zstd_level = 0;
  std::string imatrix;  // llama.cpp importance matrix (GGUF or legacy .dat)
  std::string recipe;   // textproto of codec rules (spec/recipe.proto)
  std::string elastic;  // elastic authoring JSON (spec/elastic.md)
  std::string split_max_size;  // .gguf (as gguf-split) or .safetensors (as HF) output: split ("500M", "2G", bytes)
  uint64_t split_max_tensors = 0;  // .gguf or .safetensors output: at most this many tensors per file
  std::string shard_max_size;  // .bolt output: a multi-file model of files this large at most (spec §8)
  std::string view = "full";  // the view .bolt inputs are decoded in (.safetensors output)
  bool no_fsync = false;       // skip the fsync before the rename (common/atomic_file.h)
  bool no_verify = false;      // decode .bolt inputs without checking their checksums
  std::string part;            // "I/N": write the I-th of N parts (tools/part_plan.h)
  // bolt-pack plan: a .bolt output is written as a skeleton (WriterOptions::
  // skeleton) from the inputs' headers alone, no tensor read or encoded.
  // Tensors whose record depends on their data (entropy codes) are left
  // out and estimated into *estimate.
  bool skeleton = false;
  PlanEstimate* estimate = nullptr;
};
int RunConvert(const ConvertArgs& args);

struct InspectArgs {
  std::string input;
  bool json = false;
};
int RunInspect(const InspectArgs& args);

struct VerifyArgs {
  std::string input;
  int threads = 0;
  std::string target;   // "llama.cpp": check what llama.cpp's loader needs instead
  bool json = false;    // with --target, or for a .bolt file
  bool strict = false;  // with --target: warnings fail too
};
int RunVerify(const VerifyArgs& args);

struct SliceArgs {
  std::string input;
  std::string output;
  std::string budget;
  bool list_budgets = false;
  std::vector<std::string> keep;  // ad-hoc budget: AXIS=FRACTION or AXIS=COUNT
  std::string shard_max_size;     // .bolt output: a multi-file model (spec §8)
  std::string split_max_size;     // .safetensors output: Hugging Face's split layout
  uint64_t split_max_tensors = 0;  // .safetensors output: at most this many tensors per file
  int threads = 0;
  bool no_fsync = false;  // skip the fsync before the rename (common/atomic_file.h)
  bool skeleton = false;  // bolt-pack plan: as ConvertArgs::skeleton (.bolt output)
  PlanEstimate* estimate = nullptr;
};
int RunSlice(const SliceArgs& args);

// The conformance protocol (spec/conformance.md): `capabilities`, `list
// FILE`, `verify FILE`, `decode FILE [--target T] [--view V] [--budget B]`,
// answering in JSON lines on stdout.
struct ConformanceArgs {
  std::string command;
  std::string input;
  std::string target = "native";
  std::string view;
  std::string budget;
};
int RunConformanceImpl(const ConformanceArgs& args);
struct MergeArgs {
  std::vector<std::string> parts;  // the part files of `convert --part`
  std::string output;
  bool no_fsync = false;
};
int RunMerge(const MergeArgs& args);
// bolt-pack plan IN --budget BYTES [--recipe R] [--codec ...] [--elastic E]:
// the exact size of the .bolt file each recipe tier and elastic budget
// gives, from headers alone (tools/plan.cc, docs/cli.md).
struct PlanArgs {
  std::vector<std::string> inputs;
  std::string budget;  // bytes: N, or with K/M/G/T (10^3n) or KiB/MiB/GiB/TiB (2^10n)
  std::vector<std::string> codec_rules;
  std::string recipe;
  std::string elastic;
  uint64_t alignment = 4096;
  bool json = false;
};
int RunPlan(const PlanArgs& args);

// Prints "bolt-pack: <message>" to stderr.
void PrintError(const std::string& message);

}  // namespace boltpack::tools

#endif  // BOLTPACK_TOOLS_COMMANDS_H_
