// bolt-pack inspect IN [--json]: what a .bolt or .safetensors file holds.
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>

#include "boltpack/budget_view.h"
#include "boltpack/codec_registry.h"
#include "common/escape.h"
#include "common/str_cat.h"
#include "io/gguf.h"
#include "io/json.h"
#include "tools/commands.h"
#include "tools/inputs.h"
#include "io/metadata_json.h"

namespace boltpack::tools {
namespace {

// What a line of the listing shows of one input tensor, made as it is
// printed: a model of 1M tensors has 1M lines (a list of rows held 64 MB,
// and 176 MB with three allocations a row when rows copied name and shape).
struct Row {
  const InputTensor* input;
  std::string codec;  // a codec id fits the string's inline buffer
  uint64_t stored_bytes = 0;
  uint64_t elements = 0;
  std::optional<TensorInfo> info;  // .bolt inputs: built for the row from its record

  std::string_view name() const { return input->name; }
  absl::Span<const uint64_t> shape() const { return input->shape; }
  DType dtype() const { return input->dtype; }
  std::string_view ggml_type() const { return input->ggml_type != nullptr ? input->ggml_type->name : ""; }
};

// `brief`: the listing's columns only (a .bolt tensor's codec and size read
// from its record's wire bytes, its TensorInfo not built: a third of an
// inspect of 1M tensors).
Row RowOf(const InputTensor& t, bool brief = false) {
  Row r{&t, {}, 0, t.element_count()};
  if (t.kind == InputKind::kBolt && brief) {
    r.codec = t.reader->TensorCodec(t.index, &r.stored_bytes);
  } else if (t.kind == InputKind::kBolt) {
    r.info = t.reader->tensors()[t.index];
    r.codec = r.info->codec_id;  // what SourceCodec() gives, without building the record twice
    r.stored_bytes = r.info->stored_bytes();
  } else {
    r.codec = t.SourceCodec();
    r.stored_bytes = t.bytes.size();
  }
  return r;
}

struct Summary {
  std::string format;
  std::string format_version;
  uint64_t file_size = 0;
  uint64_t alignment = 0;
  std::string writer;
  std::vector<std::string> required_features;
  std::vector<std::string> missing_features;
  // .bolt multi-file models: every file, shard 0 first, with its size.
  std::vector<std::pair<std::string, uint64_t>> shards;
  const Metadata* metadata = nullptr;
  // How many entries of *metadata to show, from the first (a GGUF's own keys,
  // before the gguf.* facts Inputs appends to them).
  size_t metadata_count = 0;
  const std::vector<InputTensor>* tensors = nullptr;  // one Row each (RowOf)
  // .bolt: the file's views ("full" first); empty otherwise (only "full").
  std::vector<ViewInfo> views;
  // .bolt elastic files: the budgets (spec/elastic.md).
  struct Budget {
    std::string name;
    std::string nested_in;
    uint64_t kept_layers = 0, layers = 0, tensors = 0;
    std::vector<std::pair<std::string, std::pair<uint64_t, uint64_t>>> axes;  // axis: kept, parent units (summed)
    std::vector<std::pair<std::string, uint64_t>> bytes;                       // per view
  };
  std::vector<Budget> budgets;
};

// Codecs that entropy-code the bf16 exponent: inspect --json reports the
// order-0 entropy of the exponent byte, the bound such a code approaches.
bool CodesExponents(const std::string& codec) { return TraitsOf(codec).exponent_coded; }

// Order-0 entropy (bits) of the 8-bit exponent of the tensor's bf16 values,
// decoded in row blocks of at most ~8 MiB (the whole tensor if the codec has
// no row decode). nullopt when the tensor does not decode.
std::optional<double> ExponentEntropy(const Reader& reader, size_t index) {
  const auto shared = reader.SharedTensor(index);
  const TensorInfo& info = *shared;
  auto whole = reader.DecodedBytes(index, OutputType::kBF16);
  if (!whole.ok() || *whole != info.element_count() * 2) return std::nullopt;
  uint64_t hist[256] = {};
  auto count = [&](const std::vector<uint8_t>& buf, uint64_t bytes) {
    for (uint64_t i = 0; i + 1 < bytes; i += 2) ++hist[((buf[i + 1] & 0x7f) << 1) | (buf[i] >> 7)];
  };
  const uint64_t rows = info.row_count();
  const uint64_t row_elems = info.row_elements();
  const uint64_t step = std::max<uint64_t>(1, (4u << 20) / std::max<uint64_t>(1, row_elems));
  std::vector<uint8_t> buf;
  bool by_rows = info.shape.size() >= 1;
  for (uint64_t r = 0; by_rows && r < rows; r += step) {
    uint64_t end = std::min(rows, r + step);
    buf.resize((end - r) * row_elems * 2);
    absl::Status st = reader.DecodeRows(index, "full", r, end, OutputType::kBF16, absl::MakeSpan(buf));
    if (!st.ok()) {
      if (r != 0) return std::nullopt;
      by_rows = false;  // no row decode: decode it whole below
      break;
    }
    count(buf, buf.size());
  }
  if (!by_rows) {
    std::fill(std::begin(hist), std::end(hist), 0);
    buf.resize(*whole);
    if (!reader.Decode(index, "full", OutputType::kBF16, absl::MakeSpan(buf)).ok()) return std::nullopt;
    count(buf, buf.size());
  }
  uint64_t n = 0;
  for (uint64_t h : hist) n += h;
  double bits = 0;
  for (uint64_t h : hist) {
    if (h == 0) continue;
    double p = static_cast<double>(h) / static_cast<double>(n);
    bits -= p * std::log2(p);
  }
  return bits;
}

double BitsPerWeight(uint64_t bytes, uint64_t elements) {
  return elements == 0 ? 0.0 : 8.0 * static_cast<double>(bytes) / static_cast<double>(elements);
}

std::string Fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

// The tensor listing's lines, formatted into one buffer with to_chars and
// written in 64 KiB parts: a million rows through printf spent a third of
// inspecting 1M tensors in vfprintf. Columns as printf's %-Ns / %Ns: padded
// to their width, never cut.
class ListingWriter {
 public:
  ~ListingWriter() { Flush(); }
  void Left(std::string_view v, size_t width) {
    out_ += v;
    Pad(v.size(), width);
  }
  void Right(std::string_view v, size_t width) {
    Pad(v.size(), width);
    out_ += v;
  }
  void Number(uint64_t v, size_t width) {
    char buf[24];
    Right(std::string_view(buf, std::to_chars(buf, buf + sizeof(buf), v).ptr - buf), width);
  }
  void Fixed3(double v, size_t width) {
    char buf[64];
    Right(std::string_view(buf, std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::fixed, 3).ptr - buf),
          width);
  }
  void Shape(absl::Span<const uint64_t> shape, size_t width) {
    const size_t start = out_.size();
    out_ += '[';
    char buf[24];
    for (size_t i = 0; i < shape.size(); ++i) {
      if (i) out_ += ", ";
      out_.append(buf, std::to_chars(buf, buf + sizeof(buf), shape[i]).ptr);
    }
    out_ += ']';
    Pad(out_.size() - start, width);
  }
  void Raw(std::string_view v) {
    out_ += v;
    if (out_.size() >= kFlushBytes) Flush();
  }

 private:
  static constexpr size_t kFlushBytes = size_t{64} << 10;
  void Pad(size_t n, size_t width) {
    if (n < width) out_.append(width - n, ' ');
  }
  void Flush() {
    if (!out_.empty()) std::fwrite(out_.data(), 1, out_.size(), stdout);
    out_.clear();
  }
  std::string out_;
};

// Plain printable ASCII prints as it is: no escaped copy a row.
bool PrintsAsIs(std::string_view v) {
  for (unsigned char c : v) {
    if (c < 0x20 || c >= 0x7f) return false;
  }
  return true;
}

struct Totals {
  uint64_t tensors = 0, elements = 0, bytes = 0;
  void Add(const Row& r) {
    tensors += 1;
    elements += r.elements;
    bytes += r.stored_bytes;
  }
};
struct CodecTotals {
  std::map<std::string, Totals> by_codec;
  Totals all;
};

// The header line and a line per tensor (names escaped, as PrintText's
// other strings); what the lines add up to, per codec and in all.
CodecTotals PrintTensorListing(const std::vector<InputTensor>& tensors) {
  const auto shown = [](std::string_view v) { return PrintsAsIs(v) ? std::string(v) : EscapeForDisplay(v); };
  size_t w = 4;
  for (const auto& t : tensors) w = std::max(w, PrintsAsIs(t.name) ? t.name.size() : EscapeForDisplay(t.name).size());
  w = std::min<size_t>(w, 60);
  std::printf("  %-*s %-20s %-6s %-10s %14s %8s\n", static_cast<int>(w), "name", "shape", "dtype", "codec", "stored bytes", "bpw");
  std::fflush(stdout);  // the rows below go around stdio's buffer
  CodecTotals totals;
  auto last = totals.by_codec.end();  // rows of one codec come in runs
  ListingWriter out;
  for (const auto& tensor : tensors) {
    const Row r = RowOf(tensor, /*brief=*/true);
    out.Raw("  ");
    out.Left(shown(r.name()), w);
    out.Raw(" ");
    out.Shape(r.shape(), 20);
    out.Raw(" ");
    out.Left(DTypeName(r.dtype()), 6);
    out.Raw(" ");
    out.Left(shown(r.codec), 10);
    out.Raw(" ");
    out.Number(r.stored_bytes, 14);
    out.Raw(" ");
    out.Fixed3(BitsPerWeight(r.stored_bytes, r.elements), 8);
    out.Raw("\n");
    if (last == totals.by_codec.end() || last->first != r.codec) last = totals.by_codec.try_emplace(r.codec).first;
    last->second.Add(r);
    totals.all.Add(r);
  }
  return totals;
}

// The text output shows every string read from the file through
// EscapeForDisplay (common/escape.h): a name is data, not terminal commands.
void PrintText(const Summary& s) {
  const auto esc = [](std::string_view v) { return EscapeForDisplay(v); };
  std::printf("%s: %s", s.format.c_str(), s.format_version.c_str());
  if (s.alignment) std::printf(", alignment %llu", static_cast<unsigned long long>(s.alignment));
  std::printf(", %llu bytes", static_cast<unsigned long long>(s.file_size));
  if (!s.writer.empty()) std::printf(", written by %s", esc(s.writer).c_str());
  std::printf("\n");
  if (!s.required_features.empty()) {
    std::string f;
    for (const auto& x : s.required_features) f += (f.empty() ? "" : ", ") + esc(x);
    std::printf("required features: %s\n", f.c_str());
  }
  if (!s.shards.empty()) {
    std::printf("shards (%zu):\n", s.shards.size());
    for (size_t k = 0; k < s.shards.size(); ++k) {
      std::printf("  %zu  %s  %llu bytes%s\n", k, esc(s.shards[k].first).c_str(),
                  static_cast<unsigned long long>(s.shards[k].second), k == 0 ? " (manifest)" : "");
    }
  }
  if (s.views.size() > 1) {
    std::printf("views (%zu):\n", s.views.size());
    for (const auto& v : s.views) {
      std::string ranges;
      for (const auto& r : v.ranges) {
        ranges += StrCat(ranges.empty() ? "" : " ", r.shard ? StrCat("shard ", r.shard, " ") : "", "[", r.offset,
                         ", ", r.offset + r.length, ")");
      }
      std::printf("  %-10s %14llu bytes  %s%s%s\n", esc(v.name).c_str(), static_cast<unsigned long long>(v.bytes),
                  ranges.c_str(), v.description.empty() ? "" : "  ", esc(v.description).c_str());
    }
  }
  if (!s.budgets.empty()) {
    std::printf("budgets (%zu):\n", s.budgets.size());
    for (const auto& b : s.budgets) {
      std::string axes;
      for (const auto& [axis, n] : b.axes) axes += StrCat(" ", esc(axis), " ", n.first, "/", n.second);
      std::string bytes;
      for (const auto& [view, n] : b.bytes) bytes += StrCat(bytes.empty() ? "" : ", ", esc(view), " ", n, " bytes");
      std::printf("  %-10s %llu/%llu layers, %llu tensors,%s; reads: %s%s%s\n", esc(b.name).c_str(),
                  static_cast<unsigned long long>(b.kept_layers), static_cast<unsigned long long>(b.layers),
                  static_cast<unsigned long long>(b.tensors), axes.c_str(), bytes.c_str(),
                  b.nested_in.empty() ? "" : "; nested in ", esc(b.nested_in).c_str());
    }
  }
  for (const auto& x : s.missing_features) {
    std::printf("warning: this reader lacks required feature \"%s\": tensors can be listed, not decoded\n",
                esc(x).c_str());
  }
  std::printf("metadata (%zu):\n", s.metadata_count);
  for (size_t i = 0; i < s.metadata_count; ++i) {
    const auto& [k, v] = (*s.metadata)[i];
    std::printf("  %-40s %-8s %s\n", esc(k).c_str(), std::string(ValueTypeName(v.type)).c_str(),
                esc(io::MetaValueSummary(v)).c_str());
  }
  std::printf("tensors (%zu):\n", s.tensors->size());
  const CodecTotals totals = PrintTensorListing(*s.tensors);
  std::printf("totals by codec:\n");
  for (const auto& [codec, t] : totals.by_codec) {
    std::printf("  %-10s %6llu tensors %14llu weights %14llu bytes %8s bpw\n", esc(codec).c_str(),
                static_cast<unsigned long long>(t.tensors), static_cast<unsigned long long>(t.elements),
                static_cast<unsigned long long>(t.bytes), Fixed(BitsPerWeight(t.bytes, t.elements), 3).c_str());
  }
  std::printf("  %-10s %6zu tensors %14llu weights %14llu bytes %8s bpw\n", "all", s.tensors->size(),
              static_cast<unsigned long long>(totals.all.elements), static_cast<unsigned long long>(totals.all.bytes),
              Fixed(BitsPerWeight(totals.all.bytes, totals.all.elements), 3).c_str());
}

constexpr size_t kJsonFlushBytes = size_t{1} << 20;

void PrintJson(const Summary& s, const std::string& path, bool entropy) {
  std::string o = "{";
  o += StrCat("\"file\":", io::JsonQuote(path), ",\"format\":", io::JsonQuote(s.format),
              ",\"format_version\":", io::JsonQuote(s.format_version), ",\"file_size\":", s.file_size);
  if (s.alignment) o += StrCat(",\"alignment\":", s.alignment, ",\"writer\":", io::JsonQuote(s.writer));
  if (!s.shards.empty()) {
    o += ",\"shards\":[";
    for (size_t k = 0; k < s.shards.size(); ++k) {
      o += StrCat(k ? "," : "", "{\"file\":", io::JsonQuote(s.shards[k].first), ",\"size\":", s.shards[k].second, "}");
    }
    o += "]";
  }
  auto list = [](const std::vector<std::string>& v) {
    std::string r = "[";
    for (size_t i = 0; i < v.size(); ++i) r += (i ? "," : "") + io::JsonQuote(v[i]);
    return r + "]";
  };
  o += StrCat(",\"required_features\":", list(s.required_features), ",\"missing_features\":", list(s.missing_features));
  o += ",\"metadata\":{";
  for (size_t i = 0; i < s.metadata_count; ++i) {
    const auto& [k, v] = (*s.metadata)[i];
    o += StrCat(i ? "," : "", io::JsonQuote(k), ":", io::MetaValueToJson(v));
  }
  o += "},\"metadata_types\":{";
  for (size_t i = 0; i < s.metadata_count; ++i) {
    const auto& [k, v] = (*s.metadata)[i];
    std::string t(ValueTypeName(v.type));
    if (v.type == ValueType::kArray) t = StrCat("array<", ValueTypeName(v.element_type), ">");
    o += StrCat(i ? "," : "", io::JsonQuote(k), ":", io::JsonQuote(t));
  }
  o += "},\"tensors\":[";
  uint64_t total = 0;
  std::map<std::string, std::pair<uint64_t, std::pair<uint64_t, uint64_t>>> totals;
  for (size_t i = 0; i < s.tensors->size(); ++i) {
    const Row r = RowOf((*s.tensors)[i]);
    total += r.stored_bytes;
    auto& t = totals[r.codec];
    t.first += 1;
    t.second.first += r.elements;
    t.second.second += r.stored_bytes;
    o += StrCat(i ? "," : "", "{\"name\":", io::JsonQuote(r.name()), ",\"shape\":[");
    for (size_t d = 0; d < r.shape().size(); ++d) o += StrCat(d ? "," : "", r.shape()[d]);
    o += StrCat("],\"dtype\":", io::JsonQuote(DTypeName(r.dtype())), ",\"codec\":", io::JsonQuote(r.codec),
                ",\"elements\":", r.elements, ",\"stored_bytes\":", r.stored_bytes,
                ",\"bits_per_weight\":", Fixed(BitsPerWeight(r.stored_bytes, r.elements), 4));
    if (!r.ggml_type().empty()) o += StrCat(",\"ggml_type\":", io::JsonQuote(r.ggml_type()));
    if (r.info.has_value()) {
      o += ",\"codec_params\":{";
      for (size_t p = 0; p < r.info->codec_params.size(); ++p) {
        o += StrCat(p ? "," : "", io::JsonQuote(r.info->codec_params[p].first), ":",
                    io::MetaValueToJson(r.info->codec_params[p].second));
      }
      o += "},\"streams\":[";
      for (size_t k = 0; k < r.info->streams.size(); ++k) {
        const auto& st = r.info->streams[k];
        o += StrCat(k ? "," : "", "{\"role\":", io::JsonQuote(st.role), ",\"shard\":", st.shard, ",\"offset\":", st.offset,
                    ",\"stored_bytes\":", st.length, ",\"raw_bytes\":", st.raw_length, ",\"compression\":",
                    st.compression == Compression::kZstd ? "\"zstd\"" : "\"none\"", ",\"chunks\":", st.chunks.size(),
                    ",\"bits_per_weight\":", Fixed(BitsPerWeight(st.length, r.elements), 4));
        if (!st.prefix_bytes.empty()) {
          // Format 1.2: the line prefixes a slice can verify and carry.
          o += StrCat(",\"line_bytes\":", st.line_bytes, ",\"line_prefix_bytes\":[");
          for (size_t p = 0; p < st.prefix_bytes.size(); ++p) o += StrCat(p ? "," : "", st.prefix_bytes[p]);
          o += "]";
        }
        if (!st.views.empty()) {
          o += ",\"views\":[";
          for (size_t v = 0; v < st.views.size(); ++v) o += StrCat(v ? "," : "", io::JsonQuote(st.views[v]));
          o += "]";
        }
        o += "}";
      }
      o += "]";
      if (entropy && r.input->reader != nullptr && CodesExponents(r.info->codec_id)) {
        if (auto h = ExponentEntropy(*r.input->reader, r.input->index)) o += StrCat(",\"exponent_entropy\":", Fixed(*h, 4));
      }
    }
    o += "}";
    // Written as it grows: 1M tensors are 272 MB of JSON, which held whole
    // (and its copies as it grew) took inspect --json to 459 MB.
    if (o.size() >= kJsonFlushBytes) {
      std::fwrite(o.data(), 1, o.size(), stdout);
      o.clear();
    }
  }
  o += "],\"totals\":{";
  size_t n = 0;
  for (const auto& [codec, t] : totals) {
    o += StrCat(n++ ? "," : "", io::JsonQuote(codec), ":{\"tensors\":", t.first, ",\"elements\":", t.second.first,
                ",\"stored_bytes\":", t.second.second, "}");
  }
  if (s.views.empty()) {
    o += StrCat("},\"views\":{\"full\":{\"bytes\":", total, "}}}\n");
  } else {
    o += "},\"views\":{";
    for (size_t v = 0; v < s.views.size(); ++v) {
      const ViewInfo& view = s.views[v];
      o += StrCat(v ? "," : "", io::JsonQuote(view.name), ":{\"bytes\":", view.bytes, ",\"description\":",
                  io::JsonQuote(view.description), ",\"ranges\":[");
      for (size_t k = 0; k < view.ranges.size(); ++k) {
        o += StrCat(k ? "," : "", "{\"shard\":", view.ranges[k].shard, ",\"offset\":", view.ranges[k].offset,
                    ",\"length\":", view.ranges[k].length, "}");
      }
      o += "]}";
    }
    o += "}}\n";
  }
  if (!s.budgets.empty()) {
    o.resize(o.size() - 2);  // "}\n" of the top object
    o += ",\"budgets\":[";
    for (size_t k = 0; k < s.budgets.size(); ++k) {
      const auto& b = s.budgets[k];
      o += StrCat(k ? "," : "", "{\"name\":", io::JsonQuote(b.name), ",\"kept_layers\":", b.kept_layers,
                  ",\"layers\":", b.layers, ",\"tensors\":", b.tensors, ",\"units\":{");
      for (size_t a = 0; a < b.axes.size(); ++a) {
        o += StrCat(a ? "," : "", io::JsonQuote(b.axes[a].first), ":{\"kept\":", b.axes[a].second.first,
                    ",\"parent\":", b.axes[a].second.second, "}");
      }
      o += "},\"bytes\":{";
      for (size_t v = 0; v < b.bytes.size(); ++v) {
        o += StrCat(v ? "," : "", io::JsonQuote(b.bytes[v].first), ":", b.bytes[v].second);
      }
      o += "}";
      if (!b.nested_in.empty()) o += StrCat(",\"nested_in\":", io::JsonQuote(b.nested_in));
      o += "}";
    }
    o += "]}\n";
  }
  std::fwrite(o.data(), 1, o.size(), stdout);
}

}  // namespace

int RunInspect(const InspectArgs& args) {
  std::string ext = Extension(args.input);
  if (ext != ".bolt" && ext != ".safetensors" && ext != ".json" && ext != ".gguf") {
    PrintError(StrCat(args.input, ": unknown format \"", ext, "\" (expected .bolt, .safetensors or .gguf)"));
    return 2;
  }
  auto in = Inputs::Open({args.input});
  if (!in.ok()) {
    PrintError(std::string(in.status().message()));
    return 1;
  }
  Summary s;
  s.metadata = &(*in)->metadata();
  s.metadata_count = s.metadata->size();
  s.tensors = &(*in)->tensors();
  if (ext == ".bolt") {
    // The reader Inputs opened (opening the file again cost its metadata
    // and records again).
    const Reader* reader = (*in)->readers().front().get();
    s.format = "bolt";
    s.format_version = StrCat(reader->version().major, ".", reader->version().minor);
    s.file_size = reader->file_size();
    s.alignment = reader->alignment();
    s.writer = reader->writer();
    s.required_features = reader->required_features();
    s.missing_features = reader->missing_features();
    s.views = reader->views();
    for (uint32_t k = 0;; ++k) {
      auto shard = reader->ShardPath(k);
      if (!shard.ok()) break;
      std::error_code ec;
      s.shards.emplace_back(*shard, k == 0 ? reader->file_size() : std::filesystem::file_size(*shard, ec));
    }
    if (s.shards.size() == 1) s.shards.clear();
    if (const ElasticManifest* m = reader->elastic()) {
      for (const auto& budget : m->budgets) {
        Summary::Budget b;
        b.name = budget.name;
        b.nested_in = budget.nested_in;
        b.layers = m->layer_count;
        for (bool keep : budget.layer_keep) b.kept_layers += keep ? 1 : 0;
        if (budget.layer_keep.empty()) b.kept_layers = m->layer_count;
        for (const auto& axis : m->axes) {
          uint64_t kept = 0, parent = 0;
          uint32_t layers = axis.scope == ElasticScope::kGlobal ? 1 : m->layer_count;
          for (uint32_t l = 0; l < layers; ++l) {
            parent += l < axis.parent.size() ? axis.parent[l] : 0;
            kept += m->KeptUnits(budget, axis, l);
          }
          b.axes.push_back({axis.name, {kept, parent}});
        }
        auto tensors = BudgetTensors(*reader, budget.name);
        if (tensors.ok()) b.tensors = tensors->size();
        for (const auto& v : reader->views()) {
          auto bytes = BudgetBytes(*reader, budget.name, v.name);
          if (bytes.ok()) b.bytes.push_back({v.name, *bytes});
        }
        s.budgets.push_back(std::move(b));
      }
    }
    if (args.json) PrintJson(s, args.input, /*entropy=*/true);
    else PrintText(s);
  } else if (ext == ".gguf") {
    // The facts come from the model Inputs opened (parsing the file again
    // cost as much memory again).
    const io::GgufModel& model = *(*in)->gguf_models().front();
    s.format = "gguf";
    s.format_version = StrCat(model.version());
    s.alignment = model.alignment();
    for (size_t k = 0; k < model.shard_count(); ++k) s.file_size += model.file_size(k);
    if (model.shard_count() > 1) s.writer = StrCat("(", model.shard_count(), " split files)");
    if (model.shard_count() > 1) {
      s.metadata = &model.metadata();  // with its split.* keys, which Inputs drops
      s.metadata_count = s.metadata->size();
    } else {
      // Moved to Inputs (not copied): the file's keys come first, then the
      // gguf.* facts, which are bolt-pack's and not the file's.
      size_t facts = 0;
      for (const auto& [k, v] : *s.metadata) facts += k.rfind(io::kGgufKeyPrefix, 0) == 0 ? 1 : 0;
      s.metadata_count = s.metadata->size() - facts;
    }
    if (args.json) PrintJson(s, args.input, /*entropy=*/false);
    else PrintText(s);
  } else {
    s.format = "safetensors";
    s.format_version = "-";
    for (const auto& f : (*in)->files()) {
      std::error_code ec;
      s.file_size += std::filesystem::file_size(f, ec);
    }
    if (args.json) PrintJson(s, args.input, /*entropy=*/false);
    else PrintText(s);
  }
  return 0;
}

}  // namespace boltpack::tools
