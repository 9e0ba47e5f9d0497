// A Hugging Face tokenizer (tokenizer.json, tokenizer_config.json,
// special_tokens_map.json) as llama.cpp's `tokenizer.ggml.*` keys.
#ifndef BOLTPACK_IO_HF_TOKENIZER_H_
#define BOLTPACK_IO_HF_TOKENIZER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "boltpack/types.h"
#include "io/json.h"

namespace boltpack::io {

// The tokenizer keys of checkpoint folder `dir` (whose config.json is
// `config`, read for bos/eos ids it alone gives); the files read are
// appended to `files`. Two forms of tokenizer.json are converted:
//  - BPE with byte_fallback (SentencePiece-style, as Llama 2 and
//    TinyStories): model "llama", pre "default", llama.cpp's LlamaHfVocab
//    route (every score -1000, no merges);
//  - byte-level BPE (GPT-2 style, no byte_fallback): model "gpt2" with the
//    merges; pre "default" unless a later version detects it.
// No tokenizer.json: no keys (the output runs only with a tokenizer added);
// an error when a SentencePiece tokenizer.model is there instead, which this
// version does not read.
// The files of a tokenizer, parsed; `tokenizer` (tokenizer.json) and
// `config` (config.json) must be given, the others may be null.
struct HfTokenizerJson {
  const JsonValue* tokenizer = nullptr;
  const JsonValue* tokenizer_config = nullptr;
  const JsonValue* special_tokens_map = nullptr;
  const JsonValue* config = nullptr;
};

// The keys of HfTokenizerMetadata from parsed files (a chat template only
// from tokenizer_config.json); `path` names tokenizer.json in messages.
absl::StatusOr<Metadata> HfTokenizerFromJson(const HfTokenizerJson& in, const std::string& path);

absl::StatusOr<Metadata> HfTokenizerMetadata(const std::string& dir, const JsonValue& config,
                                             std::vector<std::string>* files);

}  // namespace boltpack::io

#endif  // BOLTPACK_IO_HF_TOKENIZER_H_
