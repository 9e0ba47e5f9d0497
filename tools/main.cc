// bolt-pack: convert, inspect, verify and slice model containers.
#include <csignal>
#include <cstdio>
#include <string>
#include <sys/stat.h>

#include <CLI/CLI.hpp>

#include "google/protobuf/stubs/logging.h"

#include "boltpack/version.h"
#include "common/mapped_file.h"
#include "common/str_cat.h"
#include "format/layout.h"
#include "tools/codec_rules.h"
#include "tools/commands.h"
#include "tools/inputs.h"
#include "tools/progress.h"

constexpr const char* kShardHelp =
    ".bolt output: a multi-file model (spec/container.md §8) of files of at most N bytes (N, NK, NM, NG or NT, "
    "powers of 1000): OUT.bolt holds the manifest, OUT-1.boltshard, OUT-2.boltshard, ... the tensors; a stream "
    "larger than N goes alone into a file of its own";
constexpr const char* kSplitSizeHelp =
    "Split the output into files of at most N bytes of tensor data each (N, NK, NM, NG or NT, powers of 1000; a "
    "tensor larger than N gets a file of its own). .gguf: OUT-00001-of-0000K.gguf as gguf-split. .safetensors: "
    "Hugging Face's layout in OUT's folder, -o DIR/model.safetensors (or DIR/model.safetensors.index.json) "
    "writes DIR/model-00001-of-0000K.safetensors ... and DIR/model.safetensors.index.json (one file, no index, "
    "when all fits: as Hugging Face)";
constexpr const char* kSplitTensorsHelp =
    "Split the output (.gguf or .safetensors, as --split-max-size) into files of at most N tensors each (as "
    "gguf-split --split-max-tensors)";
constexpr const char* kNoFsyncHelp =
    "Do not fsync the output before renaming it into place (as cp does): faster; a crash soon after may leave it "
    "empty or short";

// An input must be a regular file: a FIFO would block the open (and every
// read) forever, a device or folder is not a model. A usage error (exit 2),
// as a missing input is.
const CLI::Validator kRegularFile(
    [](std::string& path) -> std::string {
      struct stat st;
      if (::stat(path.c_str(), &st) != 0) return "File does not exist: " + path;
      absl::Status regular = boltpack::io::CheckRegularFile(path);
      return regular.ok() ? std::string() : std::string(regular.message());
    },
    "FILE");

// A convert input: a model file as above, or a Hugging Face checkpoint
// folder (config.json, weights, tokenizer files).
const CLI::Validator kFileOrFolder(
    [](std::string& path) -> std::string {
      struct stat st;
      if (::stat(path.c_str(), &st) != 0) return "File does not exist: " + path;
      if (S_ISDIR(st.st_mode)) return std::string();
      absl::Status regular = boltpack::io::CheckRegularFile(path);
      return regular.ok() ? std::string() : std::string(regular.message());
    },
    "FILE|DIR");

int main(int argc, char** argv) {
  using namespace boltpack::tools;
  // Past a file-size limit (ulimit -f) the kernel would kill the process
  // with SIGXFSZ, silently; ignored, the write fails with EFBIG and the
  // command reports "OUT: write failed: File too large" and exits 1.
  std::signal(SIGXFSZ, SIG_IGN);
  // Invalid input is reported by the reader as an error naming the file;
  // protobuf's own log lines would only repeat it less clearly.
  google::protobuf::SetLogHandler(nullptr);
  CLI::App app{"bolt-pack: pack, inspect and verify model containers (.bolt, .safetensors)", "bolt-pack"};
  app.require_subcommand(1);
  app.footer("`bolt-pack convert --help` lists the codecs and their parameters.");
  // The minors this build implements: it stamps a file with the lowest one
  // whose additions the file uses (spec/VERSIONING.md).
  namespace fmt = boltpack::format;
  app.set_version_flag("--version", boltpack::StrCat("bolt-pack ", BOLTPACK_VERSION_STRING, " (container format ",
                                                     fmt::kFormatMajor, ".", fmt::kFormatMinorBase, " to ",
                                                     fmt::kFormatMajor, ".", fmt::kFormatMinor, ")"));

  ConvertArgs convert;
  auto* c = app.add_subcommand("convert", "Convert between .safetensors, .gguf and .bolt (the output format follows -o's extension)");
  c->add_option("inputs", convert.inputs,
                "Input files (.safetensors, .safetensors.index.json, .gguf, .bolt), or one Hugging Face checkpoint "
                "folder (config.json, weights, tokenizer files; tensors get GGUF names)")
      ->required()
      ->check(kFileOrFolder);
  c->add_option("-o,--output", convert.output, "Output file (.bolt, .safetensors or .gguf; DIR/NAME.safetensors.index.json with --split-max-size)")->required();
  c->add_option("--codec", convert.codec_rules,
                "PATTERN=CODEC[:key=value,...]; first matching rule wins; '*' matches any characters")->take_all();
  c->footer(CodecListing());
  c->add_option("--threads", convert.threads, "Threads (default: all cores)")->check(CLI::NonNegativeNumber);
  c->add_option("--alignment", convert.alignment, "Stream alignment in bytes (power of two, >= 64; default 4096)");
  c->add_option("--recipe", convert.recipe,
                "Codec rules with fallbacks, protobuf text format (spec/recipe.proto); --codec rules come first")
      ->check(kRegularFile);
  c->add_option("--imatrix,--activations", convert.imatrix,
                "llama.cpp importance matrix (imatrix .gguf or legacy .dat) for codecs that use one (iq2_xxs; bf16-spec Wanda scores); --activations is an alias")
      ->check(kRegularFile);
  c->add_option("--view", convert.view,
                "Decode .bolt inputs as this view sees them (e.g. draft; default full); .safetensors output only");
  c->add_option("--split-max-size", convert.split_max_size, kSplitSizeHelp);
  c->add_option("--shard-max-size", convert.shard_max_size, kShardHelp);
  c->add_option("--split-max-tensors", convert.split_max_tensors, kSplitTensorsHelp)->check(CLI::PositiveNumber);
  c->add_option("--elastic", convert.elastic,
                "Elastic authoring JSON (spec/elastic.md): axes, bindings, importance, budgets; .bolt output only")
      ->check(kRegularFile);
  c->add_flag("--no-fsync", convert.no_fsync, kNoFsyncHelp);
  c->add_flag("--no-verify", convert.no_verify,
              "Decode .bolt inputs without checking their checksums (for files verified before; copied streams "
              "are still checked)");
  c->add_option("--part", convert.part,
                 "I/N: write the I-th of N parts of the tensors, balanced by encode cost (.bolt output; join "
                 "them with `bolt-pack merge`)");
  c->add_option("--zstd", convert.zstd_level, "Compress streams with zstd at this level where it pays (0 = off)")->check(CLI::Range(0, 22));

  InspectArgs inspect;
  auto* i = app.add_subcommand("inspect", "Show metadata, tensors, codecs, sizes and bits per weight");
  i->add_option("input", inspect.input, "A .bolt, .safetensors or .gguf file")->required()->check(kRegularFile);
  i->add_flag("--json", inspect.json, "Machine-readable output");

  VerifyArgs verify;
  auto* v = app.add_subcommand("verify", "Check every checksum and decode every tensor in every view (full, draft, ...); non-zero exit on any problem");
  v->add_option("input", verify.input, "A .bolt, .safetensors or .gguf file")->required()->check(kRegularFile);
  v->add_option("--threads", verify.threads, "Threads (default: all cores)")->check(CLI::NonNegativeNumber);
  v->add_option("--target", verify.target,
                "llama.cpp: check the metadata keys, types and tensor shapes llama.cpp needs (.gguf or .bolt)")
      ->check(CLI::IsMember({"llama.cpp"}));
  v->add_flag("--json", verify.json, "Machine-readable report (a .bolt file, or with --target)");
  v->add_flag("--strict", verify.strict, "With --target: warnings are problems too (exit 1)");

  SliceArgs slice;
  auto* s = app.add_subcommand("slice", "Cut a budget out of an elastic .bolt file");
  s->add_option("input", slice.input, "An elastic .bolt file")->required()->check(kRegularFile);
  s->add_option("-o,--output", slice.output, "Output file (.bolt, .gguf or .safetensors; DIR/NAME.safetensors.index.json with --split-max-size)");
  s->add_option("--budget", slice.budget, "Budget name");
  s->add_flag("--list-budgets", slice.list_budgets, "List the file's budgets");
  s->add_option("--keep", slice.keep, "Ad-hoc budget, AXIS=FRACTION (0.5) or AXIS=COUNT (48); repeatable")->take_all();
  s->add_flag("--no-fsync", slice.no_fsync, kNoFsyncHelp);
  s->add_option("--shard-max-size", slice.shard_max_size, kShardHelp);
  s->add_option("--split-max-size", slice.split_max_size, kSplitSizeHelp);
  s->add_option("--split-max-tensors", slice.split_max_tensors, kSplitTensorsHelp)->check(CLI::PositiveNumber);

  // The conformance kit's protocol (spec/conformance.md), for the runner
  // rather than for people: kept out of --help (group "").
  ConformanceArgs conformance;
  auto* k = app.add_subcommand("conformance-impl", "Answer the conformance kit's protocol (spec/conformance.md)");
  k->group("");
  k->add_option("command", conformance.command, "capabilities, list, verify or decode")
      ->required()
      ->check(CLI::IsMember({"capabilities", "list", "verify", "decode"}));
  k->add_option("input", conformance.input, "A .bolt file (not for capabilities)")->check(kRegularFile);
  k->add_option("--target", conformance.target, "decode: native, f32, f16 or bf16")
      ->check(CLI::IsMember({"native", "f32", "f16", "bf16"}));
  k->add_option("--view", conformance.view, "decode: the view to decode in (default full)");
  k->add_option("--budget", conformance.budget, "decode: the elastic budget's kept tensors");
  k->callback([&] {
    if (conformance.command != "capabilities" && conformance.input.empty()) {
      throw CLI::RequiredError("input");
    }
  });
  MergeArgs merge;
  auto* g = app.add_subcommand("merge", "Join the parts of `convert --part I/N` into one model (no tensor bytes copied)");
  g->add_option("parts", merge.parts, "The N part files, in the output's folder")->required()->check(kRegularFile);
  g->add_option("-o,--output", merge.output, "Output file (.bolt)")->required();
  g->add_flag("--no-fsync", merge.no_fsync, kNoFsyncHelp);

  PlanArgs plan;
  auto* p = app.add_subcommand("plan", "Exact bytes of the .bolt file each recipe tier and elastic budget gives, "
                                       "from headers alone (no tensor read), and which fit a byte budget");
  p->add_option("inputs", plan.inputs, "Input files as convert takes them (.safetensors, index .json, .gguf, .bolt, or a "
                                      "Hugging Face folder)")
      ->required()
      ->check(kFileOrFolder);
  p->add_option("--budget", plan.budget, "Bytes available: N, NK/NM/NG/NT (10^3n) or NKiB/NMiB/NGiB/NTiB (2^10n)")
      ->required();
  p->add_option("--codec", plan.codec_rules, "As convert's --codec")->take_all();
  p->add_option("--recipe", plan.recipe, "As convert's --recipe; each codec with a fallback is tried both ways (tiers)")
      ->check(kRegularFile);
  p->add_option("--elastic", plan.elastic, "As convert's --elastic: every budget it defines is planned as a slice")
      ->check(kRegularFile);
  p->add_option("--alignment", plan.alignment, "As convert's --alignment (default 4096)");
  p->add_flag("--json", plan.json, "Machine-readable output (docs/cli.md)");

  std::string progress = "auto";
  constexpr const char* kProgressHelp =
      "auto (a bar when stderr is a terminal), bar, json (one JSON object a line on stderr, for logs) or none";
  app.add_option("--progress", progress, kProgressHelp)->check(CLI::IsMember({"auto", "bar", "json", "none"}));
  for (auto* sub : {c, i, v, s, p}) {  // before or after the subcommand
    sub->add_option("--progress", progress, kProgressHelp)->check(CLI::IsMember({"auto", "bar", "json", "none"}));
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    // CLI11 returns 0 for --help/--version; usage errors become 2.
    return code == 0 ? 0 : 2;
  }
  SetProgressMode(*ParseProgressMode(progress));  // IsMember checked it
  if (c->parsed()) return RunConvert(convert);
  if (p->parsed()) return RunPlan(plan);
  if (i->parsed()) return RunInspect(inspect);
  if (v->parsed()) return RunVerify(verify);
  if (s->parsed()) return RunSlice(slice);
  if (k->parsed()) return RunConformanceImpl(conformance);
  if (g->parsed()) return RunMerge(merge);
  return 2;
}
