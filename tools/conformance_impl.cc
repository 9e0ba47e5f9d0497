// `bolt-pack conformance-impl`: bolt-pack's own implementation of the
// conformance protocol (spec/conformance.md), so that the kit's runner
// (scripts/conformance.py) checks the library's normal reader and decoders
// exactly as it checks any other reader. Every answer comes from the public
// Reader / budget API; nothing here decides what a file means.
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "boltpack/budget_view.h"
#include "boltpack/codec_registry.h"
#include "boltpack/reader.h"
#include "boltpack/version.h"
#include "common/sha256.h"
#include "common/str_cat.h"
#include "io/json.h"
#include "tools/commands.h"

namespace boltpack::tools {
namespace {

// The most one tensor's decode may allocate here: the vectors are small; a
// hostile file declaring more gets an error line, not an allocation.
constexpr uint64_t kMaxDecodedBytes = uint64_t{2} << 30;

std::string ShapeJson(const std::vector<uint64_t>& shape) {
  std::string s = "[";
  for (size_t d = 0; d < shape.size(); ++d) s += StrCat(d ? "," : "", shape[d]);
  return s + "]";
}

std::string ListJson(const std::vector<std::string>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + io::JsonQuote(v[i]);
  return s + "]";
}

void PrintLine(const std::string& line) {
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fputc('\n', stdout);
}

// The protocol's error line [K-3.3]: the absl/gRPC class name, the message, and
// the tensor when one tensor failed.
void PrintErrorLine(const absl::Status& s, const std::string* tensor = nullptr) {
  std::string line = StrCat("{\"error\":", io::JsonQuote(absl::StatusCodeToString(s.code())),
                            ",\"message\":", io::JsonQuote(std::string(s.message())));
  if (tensor != nullptr) line += StrCat(",\"tensor\":", io::JsonQuote(*tensor));
  PrintLine(line + "}");
}

// [K-4.1]
int Capabilities() {
  PrintLine(StrCat("{\"name\":\"bolt-pack\",\"version\":", io::JsonQuote(BOLTPACK_VERSION_STRING),
                   ",\"codecs\":", ListJson(RegisteredCodecIds()),
                   ",\"features\":", ListJson({"zstd", "shards", "views", "elastic", "line_prefixes", "verify"}),
                   ",\"targets\":[\"native\",\"f32\",\"f16\",\"bf16\"],\"budgets\":true}"));
  return 0;
}

// [K-5.1]
int List(const Reader& r) {
  for (size_t t = 0; t < r.tensors().size(); ++t) {
    std::vector<uint64_t> shape;
    const DType dtype = r.TensorShape(t, &shape);
    uint64_t stored = 0;
    PrintLine(StrCat("{\"name\":", io::JsonQuote(r.TensorName(t)), ",\"shape\":", ShapeJson(shape),
                     ",\"dtype\":", io::JsonQuote(DTypeName(dtype)),
                     ",\"codec\":", io::JsonQuote(r.TensorCodec(t, &stored)), "}"));
  }
  return 0;
}

// One decoded tensor's line [K-6.1]: its bytes' size and SHA-256.
void PrintDecoded(const std::string& name, const std::vector<uint64_t>& shape, DType dtype, OutputType out,
                  const std::vector<uint8_t>& bytes) {
  PrintLine(StrCat("{\"name\":", io::JsonQuote(name), ",\"shape\":", ShapeJson(shape),
                   ",\"dtype\":", io::JsonQuote(DTypeName(dtype)), ",\"target\":", io::JsonQuote(OutputTypeName(out)),
                   ",\"bytes\":", bytes.size(), ",\"sha256\":", io::JsonQuote(Sha256Hex(bytes)), "}"));
}

absl::Status CheckSize(uint64_t n) {
  if (n > kMaxDecodedBytes) {
    return absl::ResourceExhaustedError(StrCat("decodes to ", n, " bytes, more than this adapter's limit of ",
                                               kMaxDecodedBytes));
  }
  return absl::OkStatus();
}

// Every tensor in file order; a tensor that fails gets its error line and
// the rest are still decoded [K-6.2]. Returns the number of failures.
int DecodeAll(const Reader& r, const std::string& view, OutputType out) {
  int failures = 0;
  for (size_t t = 0; t < r.tensors().size(); ++t) {
    const std::string name(r.TensorName(t));
    std::vector<uint64_t> shape;
    const DType dtype = r.TensorShape(t, &shape);
    std::vector<uint8_t> bytes;
    absl::Status s = [&]() -> absl::Status {
      absl::StatusOr<uint64_t> n = r.DecodedBytes(t, out);
      if (!n.ok()) return n.status();
      if (absl::Status big = CheckSize(*n); !big.ok()) return big;
      bytes.resize(*n);
      return r.Decode(t, view, out, absl::MakeSpan(bytes));
    }();
    if (s.ok()) {
      PrintDecoded(name, shape, dtype, out, bytes);
    } else {
      PrintErrorLine(s, &name);
      ++failures;
    }
  }
  return failures;
}

// The tensors budget `budget` keeps, renumbered and cut [K-6.3] (spec/elastic.md §5).
int DecodeBudgetTensors(const Reader& r, const std::string& budget, const std::string& view, OutputType out) {
  absl::StatusOr<std::vector<BudgetTensor>> kept = BudgetTensors(r, budget);
  if (!kept.ok()) {
    PrintErrorLine(kept.status());
    return 1;
  }
  int failures = 0;
  for (const BudgetTensor& bt : *kept) {
    std::vector<uint64_t> parent_shape;
    const DType dtype = r.TensorShape(bt.tensor, &parent_shape);
    std::vector<uint8_t> bytes;
    absl::Status s = [&]() -> absl::Status {
      absl::StatusOr<uint64_t> n = BudgetDecodedBytes(r, bt, out);
      if (!n.ok()) return n.status();
      if (absl::Status big = CheckSize(*n); !big.ok()) return big;
      bytes.resize(*n);
      return DecodeBudget(r, bt, view, out, absl::MakeSpan(bytes));
    }();
    if (s.ok()) {
      PrintDecoded(bt.name, bt.shape, dtype, out, bytes);
    } else {
      PrintErrorLine(s, &bt.name);
      ++failures;
    }
  }
  return failures;
}

int Decode(const Reader& r, const ConformanceArgs& args) {
  const std::optional<OutputType> out = OutputTypeFromName(args.target);
  if (!out.has_value()) {
    PrintErrorLine(absl::InvalidArgumentError(StrCat("unknown target \"", args.target, "\"")));
    return 1;
  }
  const std::string view = args.view.empty() ? "full" : args.view;
  if (absl::StatusOr<uint64_t> v = r.ViewBytes(view); !v.ok()) {
    PrintErrorLine(v.status());
    return 1;
  }
  const int failures =
      args.budget.empty() ? DecodeAll(r, view, *out) : DecodeBudgetTensors(r, args.budget, view, *out);
  return failures == 0 ? 0 : 1;
}

}  // namespace

int RunConformanceImpl(const ConformanceArgs& args) {
  if (args.command == "capabilities") return Capabilities();
  absl::StatusOr<std::unique_ptr<Reader>> r = Reader::Open(args.input);
  if (!r.ok()) {
    PrintErrorLine(r.status());
    return 1;
  }
  int rc = 1;
  if (args.command == "list") {
    rc = List(**r);
  } else if (args.command == "verify") {
    absl::Status s = (*r)->VerifyContainer();  // [K-5.2]
    if (!s.ok()) PrintErrorLine(s);
    rc = s.ok() ? 0 : 1;
  } else if (args.command == "decode") {
    rc = Decode(**r, args);
  }
  std::fflush(stdout);
  return rc;
}

}  // namespace boltpack::tools
