// Fuzzes the pipelines behind the CLI, not only the parsers (issue 15): a
// mutated .bolt, GGUF or safetensors file goes through `convert` to every
// output format, and an elastic .bolt through `slice` of its budgets, run
// in-process exactly as the CLI runs them (tools/commands.h).
//
// The oracle: either a clean failure (exit code 1 or 2, nothing left in the
// output folder), or an output that bolt-pack's own readers accept and whose
// every tensor decodes to the same values as the input's (convert without
// codec rules only changes the container; a slice's tensors must decode).
//
// Input: byte 0 picks the input format (% 3: .bolt, .gguf, .safetensors),
// the output format (/ 3 % 3: .bolt, .safetensors, .gguf), the budget an
// elastic .bolt is sliced to (/ 9 % 3: its first, second or third), and
// whether a .bolt's open-time checksums are repaired first (bit 7); the rest
// is the file. One convert (and for an elastic .bolt one slice) runs per
// execution: each input was converted to all three formats and sliced to
// nine budget/format pairs, which made an execution cost up to twelve runs
// of the pipeline where the fuzzer needs one to learn from the input; every
// pair is still reached, by the byte the fuzzer mutates.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "boltpack/reader.h"
#include "common/str_cat.h"
#include "fuzz/repair_checksums.h"
#include "google/protobuf/stubs/logging.h"
#include "tools/commands.h"
#include "tools/inputs.h"

namespace {

namespace fs = std::filesystem;
using boltpack::DType;
using boltpack::tools::Inputs;

std::string g_dir;  // the input file and an output folder, made once

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "fuzz_pipeline: oracle broken: %s\n", what.c_str());
  std::abort();
}

// A tensor's values as f32 bit patterns (NaNs kept as they are), so that a
// copy that changed the element type (GGUF F16 -> .bolt f16) still compares.
std::vector<uint32_t> Widened(DType dtype, const std::vector<uint8_t>& bytes) {
  std::vector<uint32_t> out;
  if (dtype == DType::kF32) {
    out.resize(bytes.size() / 4);
    if (!out.empty()) std::memcpy(out.data(), bytes.data(), out.size() * 4);
  } else if (dtype == DType::kBF16) {
    out.resize(bytes.size() / 2);
    for (size_t i = 0; i < out.size(); ++i) out[i] = (uint32_t{bytes[2 * i]} | uint32_t{bytes[2 * i + 1]} << 8) << 16;
  } else {
    out.assign(bytes.begin(), bytes.end());  // other element types compare byte for byte
  }
  return out;
}

// A .bolt input tensor decoded to the float type its output holds, when the
// two differ: a F16 tensor stored with codec bf16 is exported to GGUF as the
// BF16 values it stores, which its F16 decode would round again.
std::optional<std::vector<uint8_t>> InOutputType(const boltpack::tools::InputTensor& a, DType out_type) {
  using boltpack::OutputType;
  if (a.kind != boltpack::tools::InputKind::kBolt || a.dtype == out_type) return std::nullopt;
  const OutputType out = out_type == DType::kF32    ? OutputType::kF32
                         : out_type == DType::kF16  ? OutputType::kF16
                         : out_type == DType::kBF16 ? OutputType::kBF16
                                                    : OutputType::kNative;
  if (out == OutputType::kNative) return std::nullopt;
  auto n = a.reader->DecodedBytes(a.index, out);
  if (!n.ok()) return std::nullopt;
  std::vector<uint8_t> bytes(*n);
  boltpack::ExecOptions exec;
  exec.threads = 1;
  if (!a.reader->Decode(a.index, out, absl::MakeSpan(bytes), exec).ok()) return std::nullopt;
  return bytes;
}

void CheckFolderEmpty(const fs::path& dir, const std::string& what) {
  for (const auto& e : fs::directory_iterator(dir)) Fail(what + " failed but left " + e.path().filename().string());
}

// The output of a successful convert: its reader accepts it, it holds the
// input's tensors, and each decodes to the input's values. A GGUF export of
// a two-level nvfp4 tensor adds its `.scale` tensor and stores the values
// divided by it: only its presence is checked.
void CheckConverted(const Inputs& in, const std::string& out_path) {
  auto out = Inputs::Open({out_path});
  if (!out.ok()) Fail("bolt-pack wrote " + out_path + ", which it refuses: " + std::string(out.status().message()));
  std::map<std::string, const boltpack::tools::InputTensor*, std::less<>> by_name;
  for (const auto& t : (*out)->tensors()) by_name[std::string(t.name)] = &t;
  for (const auto& a : in.tensors()) {
    const std::string a_name(a.name);  // a view of its model (tools/inputs.h)
    auto it = by_name.find(a_name);
    if (it == by_name.end()) Fail(out_path + ": tensor " + a_name + " is missing");
    const auto& b = *it->second;
    if (a.shape != b.shape) Fail(out_path + ": tensor " + a_name + " reshaped");
    if (by_name.count(a_name + ".scale") != 0) continue;
    auto va = boltpack::tools::DecodeToLogical(a, 1);
    if (!va.ok()) continue;  // copied as stored bytes, not decoded (an unknown codec)
    auto vb = boltpack::tools::DecodeToLogical(b, 1);
    if (!vb.ok()) Fail(out_path + ": tensor " + a_name + " decoded in the input, not in the output: " +
                       std::string(vb.status().message()));
    DType a_type = a.dtype;
    if (auto as_b = InOutputType(a, b.dtype)) {
      va = std::move(*as_b);
      a_type = b.dtype;
    }
    if (Widened(a_type, *va) != Widened(b.dtype, *vb)) Fail(out_path + ": tensor " + a_name + " changed values");
  }
  for (const auto& [name, t] : by_name) {
    bool known = false;
    for (const auto& a : in.tensors()) known = known || a.name == name || std::string(a.name) + ".scale" == name;
    if (!known) Fail(out_path + ": tensor " + name + " is not in the input");
  }
}

void Convert(const std::string& in_path, const Inputs* in, const std::string& ext) {
  const fs::path out_dir = fs::path(g_dir) / "out";
  fs::remove_all(out_dir);
  fs::create_directory(out_dir);
  boltpack::tools::ConvertArgs args;
  args.inputs = {in_path};
  args.output = (out_dir / ("o" + ext)).string();
  args.threads = 1;
  args.no_fsync = true;
  const int rc = boltpack::tools::RunConvert(args);
  if (rc == 1 || rc == 2) return CheckFolderEmpty(out_dir, "convert to " + ext);
  if (rc != 0) Fail("convert to " + ext + " returned " + std::to_string(rc));
  if (in == nullptr) Fail("convert to " + ext + " succeeded on an input bolt-pack cannot open");
  CheckConverted(*in, args.output);
}

// Budget `b` (if the file has one) of an elastic .bolt, sliced to `ext`.
void SliceBudget(const std::string& in_path, size_t b, const char* ext) {
  auto reader = boltpack::Reader::Open(in_path);
  if (!reader.ok() || (*reader)->elastic() == nullptr) return;
  const auto& budgets = (*reader)->elastic()->budgets;
  if (b >= budgets.size()) return;
  const fs::path out_dir = fs::path(g_dir) / "out";
  fs::remove_all(out_dir);
  fs::create_directory(out_dir);
  boltpack::tools::SliceArgs args;
  args.input = in_path;
  args.output = (out_dir / (std::string("s") + ext)).string();
  args.budget = budgets[b].name;
  args.threads = 1;
  args.no_fsync = true;
  const int rc = boltpack::tools::RunSlice(args);
  if (rc == 1 || rc == 2) return CheckFolderEmpty(out_dir, std::string("slice to ") + ext);
  if (rc != 0) Fail(std::string("slice returned ") + std::to_string(rc));
  auto out = Inputs::Open({args.output});
  if (!out.ok()) Fail("slice wrote " + args.output + ", which bolt-pack refuses: " + std::string(out.status().message()));
  for (const auto& t : (*out)->tensors()) {
    auto v = boltpack::tools::DecodeToLogical(t, 1);
    if (!v.ok() && v.status().code() != absl::StatusCode::kUnimplemented) {
      Fail("slice output tensor " + std::string(t.name) + " does not decode: " + std::string(v.status().message()));
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);
  // tmpfs when there is one: every execution writes its input and outputs.
  std::string base = fs::exists("/dev/shm") ? "/dev/shm" : fs::temp_directory_path().string();
  std::string tmpl = base + "/fuzz_pipeline-XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) std::abort();
  g_dir = tmpl;
  std::atexit([] { fs::remove_all(g_dir); });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  static const char* const kExt[] = {".bolt", ".gguf", ".safetensors"};
  static const char* const kOutExt[] = {".bolt", ".safetensors", ".gguf"};
  const std::string ext = kExt[data[0] % 3];
  const char* out_ext = kOutExt[data[0] / 3 % 3];
  const size_t budget = data[0] / 9 % 3;
  std::vector<uint8_t> bytes(data + 1, data + size);
  if (ext == ".bolt" && (data[0] & 0x80) != 0) boltpack::fuzz::RepairChecksums(bytes);
  const std::string in_path = g_dir + "/in" + ext;
  {
    std::ofstream f(in_path, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }
  auto in = Inputs::Open({in_path});
  Convert(in_path, in.ok() ? in->get() : nullptr, out_ext);
  if (ext == ".bolt") SliceBudget(in_path, budget, out_ext);
  return 0;
}
