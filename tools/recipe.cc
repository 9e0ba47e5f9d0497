#include "tools/recipe.h"

#include "boltpack/codec_registry.h"
#include "boltpack_proto/recipe.pb.h"
#include "common/status_macros.h"
#include "common/str_cat.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"
#include "common/mapped_file.h"

namespace boltpack::tools {
namespace {

// A recipe is a few rules; anything near this is not one.
constexpr uint64_t kMaxRecipeBytes = uint64_t{16} << 20;

// Collects the parser's complaints so the error names line and column.
class ErrorCollector : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, int column, const std::string& message) override {
    if (first_.empty()) first_ = StrCat("line ", line + 1, ", column ", column + 1, ": ", message);
  }
  const std::string& first() const { return first_; }

 private:
  std::string first_;
};

// The choice's parameters, typed by its codec (an unknown codec is an error).
absl::StatusOr<CodecParams> Params(const recipe::v1::CodecChoice& c, const std::string& where) {
  if (c.codec() != kKeepCodec && FindCodec(c.codec()) == nullptr) {
    return absl::InvalidArgumentError(StrCat(where, ": unknown codec \"", c.codec(), "\""));
  }
  std::vector<ParamText> given;
  for (const auto& p : c.params()) {
    if (p.key().empty()) return absl::InvalidArgumentError(StrCat(where, ": a parameter has no key"));
    given.push_back({p.key(), p.value()});
  }
  return ParseRuleParams(c.codec(), given, where);
}

}  // namespace

absl::StatusOr<std::vector<CodecRule>> LoadRecipe(const std::string& path) {
  absl::StatusOr<std::string> text = io::ReadRegularFile(path, kMaxRecipeBytes);
  if (!text.ok()) return text.status();
  recipe::v1::Recipe recipe;
  google::protobuf::TextFormat::Parser parser;
  ErrorCollector errors;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(*text, &recipe)) {
    return absl::InvalidArgumentError(StrCat(path, ": not a recipe: ", errors.first()));
  }
  CodecParams default_params;
  if (!recipe.default_fallback().codec().empty()) {
    BP_ASSIGN_OR_RETURN(default_params, Params(recipe.default_fallback(), StrCat(path, ": default_fallback")));
  }
  std::vector<CodecRule> rules;
  for (int i = 0; i < recipe.rules_size(); ++i) {
    const auto& r = recipe.rules(i);
    std::string where = StrCat(path, ": rule ", i + 1, " (\"", r.pattern(), "\")");
    if (r.pattern().empty()) return absl::InvalidArgumentError(StrCat(where, ": empty pattern"));
    if (r.use().codec().empty()) return absl::InvalidArgumentError(StrCat(where, ": no codec in `use`"));
    CodecRule rule;
    rule.pattern = r.pattern();
    rule.codec_id = r.use().codec();
    BP_ASSIGN_OR_RETURN(rule.params, Params(r.use(), where));
    const auto& fb = r.has_fallback() ? r.fallback() : recipe.default_fallback();
    CodecParams fb_params = default_params;
    if (r.has_fallback()) {
      BP_ASSIGN_OR_RETURN(fb_params, Params(fb, where + " fallback"));
    }
    if (!fb.codec().empty() && fb.codec() != kKeepCodec) {
      rule.fallback_codec_id = fb.codec();
      rule.fallback_params = std::move(fb_params);
    }
    rules.push_back(std::move(rule));
  }
  return rules;
}

}  // namespace boltpack::tools
