// tokenizer.json to tokenizer.ggml.*: the facts of llama.cpp's converter
// (convert_hf_to_gguf.py's _set_vocab_llama_hf and get_vocab_base, and
// gguf-py's SpecialVocab), read from the files without a tokenizer library.
#include "io/hf_tokenizer.h"

#include <filesystem>

#include "common/mapped_file.h"
#include "common/status_macros.h"
#include "common/str_cat.h"
#include "io/hf_arch.h"

namespace boltpack::io {
namespace {

// llama.cpp's token types (gguf-py TokenType).
enum TokenType : int32_t { kNormal = 1, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };

// A vocabulary of 150K tokens and as many merges is ~10 MB and ~500K JSON
// values; these bound what a hostile file can make the DOM hold (~1 GB).
constexpr uint64_t kMaxTokenizerBytes = uint64_t{256} << 20;
constexpr uint64_t kMaxTokenizerValues = uint64_t{1} << 23;
// A token id past this is refused before any array is sized by it.
constexpr uint64_t kMaxVocab = uint64_t{1} << 22;

absl::StatusOr<std::optional<JsonValue>> ReadJsonIfPresent(const std::string& path, std::vector<std::string>* files) {
  if (!std::filesystem::exists(path)) return std::optional<JsonValue>();
  JsonLimits limits;
  limits.max_bytes = kMaxTokenizerBytes;
  limits.max_values = kMaxTokenizerValues;
  BP_ASSIGN_OR_RETURN(JsonValue v, ReadJsonObjectFile(path, limits));
  files->push_back(path);
  return std::optional<JsonValue>(std::move(v));
}

// What the files say, gathered once.
struct HfVocab {
  std::vector<std::string> tokens;     // by id; holes "[PAD<id>]"
  std::vector<int32_t> types;          // kNormal unless marked
  std::vector<bool> present;           // an id some entry names
  std::vector<std::pair<std::string, int64_t>> added;  // added_tokens: content, id
  bool llama = false;                  // byte_fallback BPE: LlamaHfVocab's route
};

absl::StatusOr<uint64_t> TokenId(const JsonValue& v, std::string_view what, const std::string& path) {
  std::optional<uint64_t> id = v.is_number() ? v.uint64_value() : std::nullopt;
  if (!id || *id >= kMaxVocab) {
    return absl::InvalidArgumentError(StrCat(path, ": ", what, " has no token id in 0..", kMaxVocab - 1));
  }
  return *id;
}

void Put(HfVocab* v, uint64_t id, std::string text) {
  if (id >= v->tokens.size()) {
    v->tokens.resize(id + 1);
    v->types.resize(id + 1, kNormal);
    v->present.resize(id + 1, false);
  }
  v->tokens[id] = std::move(text);
  v->present[id] = true;
}

// An added token's type. A special one is a control token; the gpt2 route
// (get_vocab_base) also takes "<|...|>" for one, as llama.cpp's
// does_token_look_special does, and makes any other added token
// user-defined; LlamaHfVocab makes only those past the base vocabulary
// user-defined.
int32_t AddedTokenType(const HfVocab& v, std::string_view text, bool special, bool in_vocab) {
  const bool looks_special = text.size() >= 4 && text.substr(0, 2) == "<|" && text.substr(text.size() - 2) == "|>";
  if (special || (!v.llama && looks_special)) return kControl;
  if (v.llama && in_vocab) return kNormal;
  return kUserDefined;
}

// model.vocab ({token: id}) and added_tokens ([{id, content, special}]).
absl::Status ReadTokens(const JsonValue& tok, const std::string& path, HfVocab* v) {
  const JsonValue* model = tok.Find("model");
  const JsonValue* vocab = model != nullptr ? model->Find("vocab") : nullptr;
  if (vocab == nullptr || !vocab->is_object()) {
    return absl::InvalidArgumentError(StrCat(path, ": no \"model\".\"vocab\" object of token -> id"));
  }
  for (const auto& [text, id_value] : vocab->object()) {
    BP_ASSIGN_OR_RETURN(uint64_t id, TokenId(id_value, StrCat("vocab entry \"", text, "\""), path));
    if (id < v->present.size() && v->present[id]) {
      return absl::InvalidArgumentError(StrCat(path, ": token id ", id, " appears twice in the vocab"));
    }
    Put(v, id, text);
  }
  const JsonValue* added = tok.Find("added_tokens");
  if (added == nullptr || added->is_null()) return absl::OkStatus();
  if (!added->is_array()) return absl::InvalidArgumentError(StrCat(path, ": \"added_tokens\" is not an array"));
  for (const JsonValue& a : added->array()) {
    const JsonValue* content = a.is_object() ? a.Find("content") : nullptr;
    const JsonValue* id_value = a.is_object() ? a.Find("id") : nullptr;
    if (content == nullptr || !content->is_string() || id_value == nullptr) {
      return absl::InvalidArgumentError(StrCat(path, ": an added_tokens entry lacks \"id\" or \"content\""));
    }
    BP_ASSIGN_OR_RETURN(uint64_t id, TokenId(*id_value, StrCat("added token \"", content->string_value(), "\""), path));
    const JsonValue* special = a.Find("special");
    const bool is_special = special != nullptr && special->is_bool() && special->bool_value();
    const bool in_vocab = id < v->present.size() && v->present[id];
    if (!in_vocab) Put(v, id, content->string_value());
    v->types[id] = AddedTokenType(*v, content->string_value(), is_special, in_vocab);
    v->added.emplace_back(content->string_value(), static_cast<int64_t>(id));
  }
  return absl::OkStatus();
}

bool IsByteToken(std::string_view t) {
  auto hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); };
  return t.size() == 6 && t.substr(0, 3) == "<0x" && hex(t[3]) && hex(t[4]) && t[5] == '>';
}

// Ids no entry names (and those up to the embedding's rows, config.json's
// vocab_size) become "[PAD<id>]" unused tokens, as llama.cpp fills them.
void FillHoles(HfVocab* v, uint64_t vocab_size) {
  if (vocab_size > v->tokens.size() && vocab_size <= kMaxVocab) {
    v->tokens.resize(vocab_size);
    v->types.resize(vocab_size, kNormal);
    v->present.resize(vocab_size, false);
  }
  for (size_t id = 0; id < v->tokens.size(); ++id) {
    if (v->present[id]) continue;
    v->tokens[id] = StrCat("[PAD", id, "]");
    v->types[id] = kUnused;
  }
}

// The content a tokenizer_config.json / special_tokens_map.json entry names
// (a string, or an object with "content").
std::optional<std::string> EntryContent(const JsonValue* e) {
  if (e == nullptr) return std::nullopt;
  if (e->is_string()) return e->string_value();
  const JsonValue* c = e->is_object() ? e->Find("content") : nullptr;
  if (c != nullptr && c->is_string()) return c->string_value();
  return std::nullopt;
}

struct SpecialFiles {
  const JsonValue* tokenizer_config = nullptr;
  const JsonValue* special_map = nullptr;
  const JsonValue* config = nullptr;
};

// `typ`'s token id as gguf-py's SpecialVocab finds it: tokenizer_config's
// `{typ}_token` (else special_tokens_map's) looked up among added_tokens,
// else config.json's `{typ}_token_id` (the first of a list).
std::optional<uint64_t> SpecialId(const HfVocab& v, const SpecialFiles& f, std::string_view typ) {
  const std::string key = StrCat(typ, "_token");
  std::optional<std::string> content =
      f.tokenizer_config != nullptr ? EntryContent(f.tokenizer_config->Find(key)) : std::nullopt;
  if (!content && f.special_map != nullptr) content = EntryContent(f.special_map->Find(key));
  if (content) {
    for (const auto& [text, id] : v.added) {
      if (text == *content) return static_cast<uint64_t>(id);
    }
  }
  const JsonValue* c = f.config->Find(StrCat(typ, "_token_id"));
  if (c != nullptr && c->is_array() && !c->array().empty()) c = &c->array()[0];
  std::optional<uint64_t> id = c != nullptr && c->is_number() ? c->uint64_value() : std::nullopt;
  if (id && *id < v.tokens.size()) return id;
  return std::nullopt;
}

// The pieces of the model's route: tokens, scores (llama), token types.
void AddTokenArrays(const HfVocab& v, Metadata* kv) {
  MetaValue::StringArrayBuilder tokens;
  size_t bytes = 0;
  for (const auto& t : v.tokens) bytes += t.size() + 1;
  tokens.Reserve(v.tokens.size(), bytes);
  for (const auto& t : v.tokens) tokens.Add(t);
  kv->emplace_back("tokenizer.ggml.tokens", tokens.Build());
  if (v.llama) {
    // LlamaHfVocab has no scores to give: every token gets -1000.
    std::string scores;
    const float s = -1000.0f;
    for (size_t i = 0; i < v.tokens.size(); ++i) scores.append(reinterpret_cast<const char*>(&s), 4);
    kv->emplace_back("tokenizer.ggml.scores", MetaValue::PackedArray(ValueType::kFloat32, std::move(scores)));
  }
  std::string types;
  for (int32_t t : v.types) types.append(reinterpret_cast<const char*>(&t), 4);
  kv->emplace_back("tokenizer.ggml.token_type", MetaValue::PackedArray(ValueType::kInt32, std::move(types)));
}

absl::Status AddMerges(const JsonValue& model, const std::string& path, Metadata* kv) {
  const JsonValue* merges = model.Find("merges");
  if (merges == nullptr || !merges->is_array()) {
    return absl::InvalidArgumentError(StrCat(path, ": a byte-level BPE model without \"merges\""));
  }
  MetaValue::StringArrayBuilder out;
  for (const JsonValue& m : merges->array()) {
    // "a b", or ["a", "b"] in newer tokenizers files.
    if (m.is_string()) {
      out.Add(m.string_value());
    } else if (m.is_array() && m.array().size() == 2 && m.array()[0].is_string() && m.array()[1].is_string()) {
      out.Add(StrCat(m.array()[0].string_value(), " ", m.array()[1].string_value()));
    } else {
      return absl::InvalidArgumentError(StrCat(path, ": a merge is neither \"a b\" nor [\"a\", \"b\"]"));
    }
  }
  kv->emplace_back("tokenizer.ggml.merges", out.Build());
  return absl::OkStatus();
}

}  // namespace

namespace {

// Byte-level BPE pre-tokenizers llama.cpp knows, by the regex of their
// Split step (llama.cpp itself tells them by hashing a test string's
// tokens, which needs a tokenizer library; the regex is what differs).
struct KnownPre {
  std::string_view regex;  // "" : a bare ByteLevel step (GPT-2's own regex)
  std::string_view pre;
};
constexpr KnownPre kKnownPre[] = {
    {"", "gpt-2"},
    {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|"
     "\\s+(?!\\S)|\\s+",
     "llama-bpe"},
    {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|"
     "\\s+(?!\\S)|\\s+",
     "qwen2"},
};

// The regex of the pre_tokenizer's Split step ("" when it has none).
std::string SplitRegex(const JsonValue& pre) {
  std::vector<const JsonValue*> steps = {&pre};
  if (const JsonValue* seq = pre.Find("pretokenizers"); seq != nullptr && seq->is_array()) {
    steps.clear();
    for (const JsonValue& s : seq->array()) steps.push_back(&s);
  }
  for (const JsonValue* s : steps) {
    const JsonValue* type = s->is_object() ? s->Find("type") : nullptr;
    const JsonValue* pattern = s->is_object() ? s->Find("pattern") : nullptr;
    const JsonValue* regex = pattern != nullptr && pattern->is_object() ? pattern->Find("Regex") : nullptr;
    if (type != nullptr && type->is_string() && type->string_value() == "Split" && regex != nullptr &&
        regex->is_string()) {
      return regex->string_value();
    }
  }
  return "";
}

absl::StatusOr<std::string> BytePre(const JsonValue& tok, const std::string& path) {
  const JsonValue* pre = tok.Find("pre_tokenizer");
  const std::string regex = pre != nullptr && pre->is_object() ? SplitRegex(*pre) : "";
  for (const KnownPre& k : kKnownPre) {
    if (k.regex == regex) return std::string(k.pre);
  }
  return absl::UnimplementedError(StrCat(path, ": the pre-tokenizer's split regex \"", regex,
                                         "\" is not in bolt-pack's table of those llama.cpp knows (io/hf_tokenizer.cc)",
                                         "; llama.cpp would split text wrong under \"default\""));
}

// add_bos/add_eos: tokenizer_config.json's flags; else whether the
// post-processor's single-sequence template starts or ends with a special
// token.
void AddBosEos(const JsonValue& tok, const JsonValue* tc, Metadata* kv) {
  std::optional<bool> bos, eos;
  auto flag = [&](const char* key) -> std::optional<bool> {
    const JsonValue* f = tc != nullptr ? tc->Find(key) : nullptr;
    return f != nullptr && f->is_bool() ? std::optional<bool>(f->bool_value()) : std::nullopt;
  };
  bos = flag("add_bos_token");
  eos = flag("add_eos_token");
  const JsonValue* post = tok.Find("post_processor");
  const JsonValue* single = post != nullptr && post->is_object() ? post->Find("single") : nullptr;
  if (single != nullptr && single->is_array() && !single->array().empty()) {
    if (!bos) bos = single->array().front().Find("SpecialToken") != nullptr;
    if (!eos) eos = single->array().back().Find("SpecialToken") != nullptr;
  }
  if (bos) kv->emplace_back("tokenizer.ggml.add_bos_token", MetaValue::Bool(*bos));
  if (eos) kv->emplace_back("tokenizer.ggml.add_eos_token", MetaValue::Bool(*eos));
}

// tokenizer_config.json's chat_template: a string, or the "default" of a
// list of named ones.
void AddConfigChatTemplate(const JsonValue* tc, Metadata* kv) {
  const JsonValue* t = tc != nullptr ? tc->Find("chat_template") : nullptr;
  if (t != nullptr && t->is_array()) {
    const JsonValue* chosen = nullptr;
    for (const JsonValue& e : t->array()) {
      const JsonValue* name = e.is_object() ? e.Find("name") : nullptr;
      if (name != nullptr && name->is_string() && name->string_value() == "default") chosen = e.Find("template");
    }
    t = chosen;
  }
  if (t != nullptr && t->is_string()) kv->emplace_back("tokenizer.chat_template", MetaValue::String(t->string_value()));
}

// Without one in tokenizer_config.json, newer checkpoints keep the chat
// template in chat_template.jinja.
absl::Status AddJinjaChatTemplate(const std::string& dir, std::vector<std::string>* files, Metadata* kv) {
  for (const auto& [k, v] : *kv) {
    if (k == "tokenizer.chat_template") return absl::OkStatus();
  }
  const std::string jinja = StrCat(dir, "/chat_template.jinja");
  if (!std::filesystem::exists(jinja)) return absl::OkStatus();
  BP_ASSIGN_OR_RETURN(std::string text, ReadRegularFile(jinja, kMaxTokenizerBytes));
  files->push_back(jinja);
  kv->emplace_back("tokenizer.chat_template", MetaValue::String(std::move(text)));
  return absl::OkStatus();
}

// Marks the special tokens control tokens, as LlamaHfVocab does for
// transformers' all_special_ids, and writes their ids.
void AddSpecialIds(HfVocab* v, const SpecialFiles& f, Metadata* kv) {
  constexpr std::pair<std::string_view, std::string_view> kSpecials[] = {
      {"bos", "bos_token_id"}, {"eos", "eos_token_id"}, {"unk", "unknown_token_id"},
      {"sep", "seperator_token_id"},  // sic: llama.cpp's spelling of the key
      {"pad", "padding_token_id"},
  };
  for (const auto& [typ, key] : kSpecials) {
    std::optional<uint64_t> id = SpecialId(*v, f, typ);
    if (!id) continue;
    if (v->llama && v->types[*id] == kNormal) v->types[*id] = kControl;
    kv->emplace_back(StrCat("tokenizer.ggml.", key), MetaValue::Uint(ValueType::kUint32, *id));
  }
}

}  // namespace

absl::StatusOr<Metadata> HfTokenizerFromJson(const HfTokenizerJson& in, const std::string& path) {
  const JsonValue& tok = *in.tokenizer;
  const JsonValue* model = tok.Find("model");
  const JsonValue* type = model != nullptr && model->is_object() ? model->Find("type") : nullptr;
  if (type == nullptr || !type->is_string() || type->string_value() != "BPE") {
    return absl::UnimplementedError(StrCat(path, ": tokenizer model \"",
                                           type != nullptr && type->is_string() ? type->string_value() : "",
                                           "\" is not converted yet (BPE is)"));
  }
  HfVocab v;
  const JsonValue* fallback = model->Find("byte_fallback");
  v.llama = fallback != nullptr && fallback->is_bool() && fallback->bool_value();
  BP_RETURN_IF_ERROR(ReadTokens(tok, path, &v));
  BP_ASSIGN_OR_RETURN(std::optional<uint64_t> vocab_size, ConfigUint(*in.config, "vocab_size", "config.json"));
  FillHoles(&v, vocab_size.value_or(0));
  if (v.llama) {
    for (size_t id = 0; id < v.tokens.size(); ++id) {
      if (v.types[id] == kNormal && IsByteToken(v.tokens[id])) v.types[id] = kByte;
    }
  }
  Metadata kv;
  kv.emplace_back("tokenizer.ggml.model", MetaValue::String(v.llama ? "llama" : "gpt2"));
  std::string pre = "default";
  if (!v.llama) {
    BP_ASSIGN_OR_RETURN(pre, BytePre(tok, path));
  }
  kv.emplace_back("tokenizer.ggml.pre", MetaValue::String(pre));
  const SpecialFiles f{in.tokenizer_config, in.special_tokens_map, in.config};
  Metadata ids;
  AddSpecialIds(&v, f, &ids);  // before the types are written: it marks control tokens
  AddTokenArrays(v, &kv);
  if (!v.llama) BP_RETURN_IF_ERROR(AddMerges(*model, path, &kv));
  for (auto& e : ids) kv.push_back(std::move(e));
  AddBosEos(tok, f.tokenizer_config, &kv);
  AddConfigChatTemplate(f.tokenizer_config, &kv);
  return kv;
}

absl::StatusOr<Metadata> HfTokenizerMetadata(const std::string& dir, const JsonValue& config,
                                             std::vector<std::string>* files) {
  const std::string path = StrCat(dir, "/tokenizer.json");
  BP_ASSIGN_OR_RETURN(std::optional<JsonValue> tok, ReadJsonIfPresent(path, files));
  if (!tok && std::filesystem::exists(StrCat(dir, "/tokenizer.model"))) {
    // Rather than a GGUF llama.cpp cannot tokenize for.
    return absl::UnimplementedError(StrCat(dir, ": only tokenizer.model (SentencePiece) is there; bolt-pack reads ",
                                           "tokenizer.json (transformers writes it: save_pretrained of the fast ",
                                           "tokenizer)"));
  }
  if (!tok) return Metadata();
  BP_ASSIGN_OR_RETURN(std::optional<JsonValue> tc, ReadJsonIfPresent(StrCat(dir, "/tokenizer_config.json"), files));
  BP_ASSIGN_OR_RETURN(std::optional<JsonValue> sm, ReadJsonIfPresent(StrCat(dir, "/special_tokens_map.json"), files));
  HfTokenizerJson in{&*tok, tc ? &*tc : nullptr, sm ? &*sm : nullptr, &config};
  BP_ASSIGN_OR_RETURN(Metadata kv, HfTokenizerFromJson(in, path));
  BP_RETURN_IF_ERROR(AddJinjaChatTemplate(dir, files, &kv));
  return kv;
}

}  // namespace boltpack::io
