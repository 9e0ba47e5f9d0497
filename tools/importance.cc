#include "tools/importance.h"

#include <optional>
#include <string>

#include "common/escape.h"
#include "common/status_macros.h"
#include "common/str_cat.h"
#include "io/hf_arch.h"

namespace boltpack::tools {
namespace {

// The codecs whose encoder reads TensorSource::importance.
constexpr std::string_view kImportanceCodecs[] = {"iq2_xxs", "bf16-spec"};

// A stacked *_exps tensor of a Hugging Face folder: one entry per expert
// under its HF name, into `parts` in expert order (empty when no expert
// has one; an error when some have and others not).
absl::Status ExpertEntries(const io::Imatrix& imatrix, const io::HfArch& arch, const InputTensor& t,
                           std::vector<absl::Span<const float>>* parts) {
  const uint64_t experts = t.shape[0];
  const absl::Span<const uint64_t> one = t.shape.subspan(1);
  std::optional<std::string> absent;
  for (uint64_t x = 0; x < experts; ++x) {
    std::optional<std::string> hf = io::HfNameOfGguf(arch, t.name, static_cast<uint32_t>(x));
    if (!hf) return absl::OkStatus();
    BP_ASSIGN_OR_RETURN(absl::Span<const float> w, imatrix.For(*hf, one));
    if (w.empty()) {
      if (!absent) absent = *hf;
      continue;
    }
    parts->push_back(w);
  }
  if (absent && !parts->empty()) {
    return absl::InvalidArgumentError(StrCat(imatrix.path(), ": imatrix has entries for some experts of ",
                                             QuoteForDisplay(t.name), " but not ", QuoteForDisplay(*absent)));
  }
  return absl::OkStatus();
}

// No entry under any name of `t`, which codec `codec` weights by.
absl::Status Missing(const io::Imatrix& imatrix, const io::HfArch* arch, const InputTensor& t,
                     std::string_view codec) {
  std::string names = QuoteForDisplay(t.name);
  const bool stacked = t.parts != nullptr && t.shape.size() == 3;
  std::optional<std::string> hf;
  if (arch != nullptr) hf = io::HfNameOfGguf(*arch, t.name, stacked ? std::optional<uint32_t>(0) : std::nullopt);
  if (hf) {
    names += StrCat(" nor under its Hugging Face name ", QuoteForDisplay(*hf),
                    stacked ? StrCat(" (and experts 1..", t.shape[0] - 1, ")") : "");
  }
  return absl::InvalidArgumentError(
      StrCat(imatrix.path(), ": imatrix has no entry for tensor ", names, ", which codec \"", codec,
             "\" weights by importance; use an imatrix made for this model, or give the tensor another codec"));
}

}  // namespace

bool UsesImportance(std::string_view codec_id, size_t rank) {
  if (rank < 2) return false;  // 1-D tensors are never weighted
  for (std::string_view c : kImportanceCodecs) {
    if (c == codec_id) return true;
  }
  return false;
}

absl::StatusOr<Importance> Importance::Resolve(const io::Imatrix* imatrix, const Inputs& in, const CodecPlan& plan) {
  Importance out;
  if (imatrix == nullptr) return out;
  out.first_ = in.tensors().data();
  out.spans_.resize(in.tensors().size());
  const io::HfArch* arch = in.hf_arch();
  for (size_t i = 0; i < in.tensors().size(); ++i) {
    const CodecRule* rule = plan[i];
    if (rule == nullptr) continue;
    const InputTensor& t = in.tensors()[i];
    BP_ASSIGN_OR_RETURN(absl::Span<const float> w, imatrix->For(t.name, t.shape));
    if (w.empty() && arch != nullptr && t.parts != nullptr && t.shape.size() == 3) {
      std::vector<absl::Span<const float>> parts;
      BP_RETURN_IF_ERROR(ExpertEntries(*imatrix, *arch, t, &parts));
      if (!parts.empty()) {
        out.experts_.emplace(i, std::move(parts));
        continue;
      }
    } else if (w.empty() && arch != nullptr) {
      if (std::optional<std::string> hf = io::HfNameOfGguf(*arch, t.name)) {
        BP_ASSIGN_OR_RETURN(w, imatrix->For(*hf, t.shape));
      }
    }
    if (w.empty() && UsesImportance(rule->codec_id, t.shape.size())) {
      return Missing(*imatrix, arch, t, rule->codec_id);
    }
    out.spans_[i] = w;
  }
  return out;
}

absl::Span<const float> Importance::For(const InputTensor& t, std::vector<float>* scratch) const {
  if (first_ == nullptr) return {};
  const size_t i = static_cast<size_t>(&t - first_);
  auto it = experts_.find(i);
  if (it == experts_.end()) return spans_[i];
  scratch->clear();
  for (absl::Span<const float> w : it->second) scratch->insert(scratch->end(), w.begin(), w.end());
  return *scratch;
}

}  // namespace boltpack::tools
