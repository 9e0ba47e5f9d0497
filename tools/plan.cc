// bolt-pack plan IN... --budget BYTES [--recipe R] [--codec ...] [--elastic E]
// [--json]: for each recipe tier and elastic budget, the size of the .bolt
// file `convert` (then `slice`) writes, from the inputs' headers alone.
//
// Exact by construction, not by a second formula: each tier is written as a
// skeleton (WriterOptions::skeleton) by convert's own code, every stream a
// hole of the length Codec::PlanEncode gives, so header, padding, line
// prefixes, chunk checksums, manifest and footer are the writer's; each
// budget is then sliced from that skeleton by slice's own code. The
// skeletons go to a private temporary folder (sparse: no data block is
// written) and are removed. What headers cannot tell (an entropy code's
// bytes, a tensor cut by decoding) is estimated and marked so.
#include "tools/plan.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>

#include "absl/strings/ascii.h"
#include "boltpack/reader.h"
#include "common/status_macros.h"
#include "common/str_cat.h"
#include "io/json.h"
#include "tools/convert.h"
#include "tools/inputs.h"
#include "tools/progress.h"

namespace boltpack::tools {
namespace {

constexpr size_t kMaxCombinedCodecs = 4;

struct PlanRow {
  std::string tier;
  std::vector<std::pair<std::string, std::string>> swapped;
  std::string budget;      // "full": the convert's file; else an elastic budget's slice
  uint64_t bytes = 0;      // the file (with the estimate, when not exact)
  bool exact = true;
  PlanEstimate estimate;
};

// A private folder for the skeletons, removed with everything in it.
class TempFolder {
 public:
  static absl::StatusOr<TempFolder> Create() {
    std::error_code ec;
    std::filesystem::path base = std::filesystem::temp_directory_path(ec);
    if (ec) base = "/tmp";
    std::string templ = (base / "bolt-pack-plan-XXXXXX").string();
    if (::mkdtemp(templ.data()) == nullptr) {
      return absl::InternalError(StrCat(templ, ": cannot create a temporary folder for the plan"));
    }
    return TempFolder(templ);
  }
  TempFolder(TempFolder&& o) noexcept : path_(std::move(o.path_)) { o.path_.clear(); }
  ~TempFolder() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  explicit TempFolder(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

absl::StatusOr<uint64_t> FileSize(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return absl::InternalError(StrCat(path, ": the skeleton was not written"));
  return static_cast<uint64_t>(st.st_size);
}

void Remove(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove(path, ec);
}

// One tier: its skeleton, then a slice skeleton of each budget it has.
absl::Status PlanTier(const Inputs& in, const PlanArgs& args, const RecipeTier& tier, size_t index,
                      const TempFolder& tmp, std::vector<PlanRow>* rows, std::vector<ConvertNote>* notes) {
  ConvertArgs c;
  c.inputs = args.inputs;
  c.output = tmp.File(StrCat("tier", index, ".bolt"));
  c.alignment = args.alignment;
  c.elastic = args.elastic;
  c.no_fsync = true;
  c.skeleton = true;
  PlanRow full{tier.name, tier.swapped, "full"};
  c.estimate = &full.estimate;
  PreparedConvert prepared;
  prepared.rules = tier.rules;
  prepared.ext = ".bolt";
  std::vector<ConvertNote> tier_notes;
  absl::Status st = ConvertInputs(in, c, prepared, &tier_notes);
  for (auto& n : tier_notes) {
    // The same warning of every tier is told once.
    bool seen = false;
    for (const auto& o : *notes) seen |= o.text == n.text;
    if (!seen) notes->push_back(std::move(n));
  }
  BP_RETURN_IF_ERROR(st);
  BP_ASSIGN_OR_RETURN(uint64_t size, FileSize(c.output));
  full.exact = full.estimate.tensors.empty();
  full.bytes = size + full.estimate.bytes;
  rows->push_back(full);
  ReaderOptions options;
  options.verify_checksums = false;  // a skeleton's streams are holes
  BP_ASSIGN_OR_RETURN(auto reader, Reader::Open(c.output, options));
  if (reader->elastic() != nullptr) {
    for (size_t b = 0; b < reader->elastic()->budgets.size(); ++b) {
      const ElasticBudget& budget = reader->elastic()->budgets[b];
      PlanRow row{tier.name, tier.swapped, budget.name};
      row.estimate = full.estimate;  // what the full file estimated stays estimated
      const std::string out = tmp.File(StrCat("tier", index, "-budget", b, ".bolt"));
      BP_RETURN_IF_ERROR(SliceSkeleton(*reader, budget, out, &row.estimate));
      BP_ASSIGN_OR_RETURN(uint64_t n, FileSize(out));
      Remove(out);
      row.exact = row.estimate.tensors.empty();
      // The full file's estimated tensors are absent from its skeleton, so
      // from the slice's: their estimate, not cut, bounds what they add.
      row.bytes = n + row.estimate.bytes;
      rows->push_back(std::move(row));
    }
  }
  reader.reset();
  Remove(c.output);
  return absl::OkStatus();
}

// The largest row that fits, if one does.
const PlanRow* LargestFit(const std::vector<PlanRow>& rows, uint64_t budget) {
  const PlanRow* best = nullptr;
  for (const auto& r : rows) {
    if (r.bytes <= budget && (best == nullptr || r.bytes > best->bytes)) best = &r;
  }
  return best;
}

// "23.41 GiB", "2.52 MiB", "812 B".
std::string Gib(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double x = static_cast<double>(bytes);
  int u = 0;
  while (x >= 1024 && u < 5) {
    x /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), u == 0 ? "%.0f %s" : "%.2f %s", x, units[u]);
  return buf;
}

void PrintText(const PlanArgs& args, const Inputs& in, uint64_t budget, const std::vector<PlanRow>& rows) {
  uint64_t elements = 0;
  for (const auto& t : in.tensors()) {
    uint64_t n = 1;
    for (uint64_t d : t.shape) n *= d;
    elements += n;
  }
  std::printf("plan: %s (%zu tensors, %llu parameters), budget %llu bytes (%s)\n", args.inputs.front().c_str(),
              in.tensors().size(), static_cast<unsigned long long>(elements), static_cast<unsigned long long>(budget),
              Gib(budget).c_str());
  std::printf("%-40s %-16s %20s %12s  %s\n", "tier", "budget", "bytes", "", "fits");
  bool any_estimate = false;
  for (const auto& r : rows) {
    std::string bytes = StrCat(r.exact ? "" : "~", r.bytes);
    std::printf("%-40s %-16s %20s %12s  %s\n", r.tier.c_str(), r.budget.c_str(), bytes.c_str(), Gib(r.bytes).c_str(),
                r.bytes <= budget ? "yes" : "no");
    any_estimate |= !r.exact;
  }
  if (any_estimate) {
    std::printf("~: an estimate: the stored bytes of some tensors depend on their data (entropy codes), which a plan "
                "does not read (`--json` lists them); the rest is exact\n");
  }
  const PlanRow* best = LargestFit(rows, budget);
  if (best == nullptr) {
    std::printf("nothing fits in %llu bytes\n", static_cast<unsigned long long>(budget));
  } else {
    std::printf("largest that fits: tier \"%s\", budget \"%s\": %s%llu bytes (%s)\n", best->tier.c_str(),
                best->budget.c_str(), best->exact ? "" : "~", static_cast<unsigned long long>(best->bytes),
                Gib(best->bytes).c_str());
  }
}

std::string RowJson(const PlanRow& r, uint64_t budget) {
  std::string swapped;
  for (const auto& [from, to] : r.swapped) {
    swapped += StrCat(swapped.empty() ? "" : ",", "{\"codec\":", io::JsonQuote(from), ",\"fallback\":", io::JsonQuote(to), "}");
  }
  std::string estimated;
  for (const auto& t : r.estimate.tensors) estimated += StrCat(estimated.empty() ? "" : ",", io::JsonQuote(t));
  return StrCat("{\"tier\":", io::JsonQuote(r.tier), ",\"swapped\":[", swapped, "],\"budget\":", io::JsonQuote(r.budget),
                ",\"bytes\":", r.bytes, ",\"exact\":", r.exact ? "true" : "false",
                ",\"estimated_bytes\":", r.estimate.bytes, ",\"estimated_tensors\":[", estimated,
                "],\"fits\":", r.bytes <= budget ? "true" : "false", "}");
}

void PrintJson(const PlanArgs& args, const Inputs& in, uint64_t budget, const std::vector<PlanRow>& rows) {
  std::string inputs;
  for (const auto& p : args.inputs) inputs += StrCat(inputs.empty() ? "" : ",", io::JsonQuote(p));
  std::string out = StrCat("{\"inputs\":[", inputs, "],\"tensors\":", in.tensors().size(), ",\"budget_bytes\":", budget,
                           ",\"alignment\":", args.alignment, ",\"results\":[");
  for (size_t i = 0; i < rows.size(); ++i) out += StrCat(i ? "," : "", RowJson(rows[i], budget));
  out += "],\"largest_fit\":";
  const PlanRow* best = LargestFit(rows, budget);
  out += best == nullptr ? std::string("null") : RowJson(*best, budget);
  out += "}\n";
  std::fputs(out.c_str(), stdout);
}

}  // namespace

absl::StatusOr<uint64_t> ParseByteCount(std::string_view text) {
  std::string t = absl::AsciiStrToLower(std::string(text));
  size_t digits = 0;
  while (digits < t.size() && t[digits] >= '0' && t[digits] <= '9') ++digits;
  if (digits == 0 || digits > 19) {
    return absl::InvalidArgumentError(StrCat("byte count \"", text, "\": expected a whole number with an optional "
                                             "unit (K, M, G, T, KiB, MiB, GiB, TiB)"));
  }
  const uint64_t n = std::strtoull(t.substr(0, digits).c_str(), nullptr, 10);
  std::string unit = t.substr(digits);
  if (!unit.empty() && unit.back() == 'b') unit.pop_back();
  const std::vector<std::pair<std::string, uint64_t>> units = {
      {"", 1}, {"k", 1000}, {"m", 1000000}, {"g", 1000000000}, {"t", 1000000000000},
      {"ki", 1ull << 10}, {"mi", 1ull << 20}, {"gi", 1ull << 30}, {"ti", 1ull << 40}};
  for (const auto& [name, scale] : units) {
    if (unit != name) continue;
    if (n > UINT64_MAX / scale) return absl::InvalidArgumentError(StrCat("byte count \"", text, "\" is too large"));
    return n * scale;
  }
  return absl::InvalidArgumentError(StrCat("byte count \"", text, "\": unknown unit (K, M, G, T, KiB, MiB, GiB, TiB)"));
}

std::vector<RecipeTier> RecipeTiers(const std::vector<CodecRule>& rules) {
  std::vector<std::pair<std::string, std::string>> choices;  // codec -> fallback, in rule order
  for (const auto& r : rules) {
    if (r.fallback_codec_id.empty() || r.fallback_codec_id == r.codec_id) continue;
    std::pair<std::string, std::string> c{r.codec_id, r.fallback_codec_id};
    if (std::find(choices.begin(), choices.end(), c) == choices.end()) choices.push_back(c);
  }
  std::vector<std::vector<size_t>> subsets = {{}};
  if (choices.size() <= kMaxCombinedCodecs) {
    for (uint32_t mask = 1; mask < (1u << choices.size()); ++mask) {
      std::vector<size_t> s;
      for (size_t k = 0; k < choices.size(); ++k) {
        if (mask & (1u << k)) s.push_back(k);
      }
      subsets.push_back(s);
    }
  } else {
    std::vector<size_t> all;
    for (size_t k = 0; k < choices.size(); ++k) {
      subsets.push_back({k});
      all.push_back(k);
    }
    subsets.push_back(all);
  }
  std::vector<RecipeTier> tiers;
  for (const auto& s : subsets) {
    RecipeTier tier;
    tier.rules = rules;
    for (size_t k : s) {
      tier.swapped.push_back(choices[k]);
      tier.name += StrCat(tier.name.empty() ? "" : ", ", choices[k].first, "->", choices[k].second);
      for (auto& r : tier.rules) {
        if (r.codec_id == choices[k].first && r.fallback_codec_id == choices[k].second) {
          r.codec_id = r.fallback_codec_id;
          r.params = r.fallback_params;
        }
      }
    }
    if (tier.name.empty()) tier.name = rules.empty() ? "source form" : "as given";
    tiers.push_back(std::move(tier));
  }
  return tiers;
}

int RunPlan(const PlanArgs& args) {
  auto budget = ParseByteCount(args.budget);
  if (!budget.ok()) {
    PrintError(StrCat("--budget: ", budget.status().message()));
    return 2;
  }
  ConvertArgs c;
  c.inputs = args.inputs;
  c.output = "plan.bolt";  // only its extension is used
  c.codec_rules = args.codec_rules;
  c.recipe = args.recipe;
  auto prepared = PrepareConvert(c);
  if (!prepared.ok()) {
    PrintError(std::string(prepared.status().message()));
    return IsUsageError(prepared.status()) ? 2 : 1;
  }
  ReaderOptions bolt_options;
  bolt_options.verify_checksums = false;  // no stream is read
  auto in = Inputs::Open(args.inputs, bolt_options);
  if (!in.ok()) {
    PrintError(std::string(in.status().message()));
    return 1;
  }
  auto tmp = TempFolder::Create();
  if (!tmp.ok()) {
    PrintError(std::string(tmp.status().message()));
    return 1;
  }
  const ProgressMode mode = SetProgressMode(ProgressMode::kNone);  // skeletons take no time worth a bar
  std::vector<PlanRow> rows;
  std::vector<ConvertNote> notes;
  const std::vector<RecipeTier> tiers = RecipeTiers(prepared->rules);
  absl::Status st;
  for (size_t i = 0; i < tiers.size() && st.ok(); ++i) st = PlanTier(**in, args, tiers[i], i, *tmp, &rows, &notes);
  SetProgressMode(mode);
  for (const auto& n : notes) {
    if (n.warning) std::fprintf(stderr, "bolt-pack: warning: %s\n", n.text.c_str());
  }
  if (!st.ok()) {
    PrintError(std::string(st.message()));
    return IsUsageError(st) ? 2 : 1;
  }
  if (args.json) {
    PrintJson(args, **in, *budget, rows);
  } else {
    PrintText(args, **in, *budget, rows);
  }
  return 0;
}

}  // namespace boltpack::tools
