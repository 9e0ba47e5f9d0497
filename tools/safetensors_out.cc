#include "tools/safetensors_out.h"

#include <algorithm>
#include <cstdio>

#include "common/status_macros.h"

namespace boltpack::tools {

absl::StatusOr<SafetensorsOut> SafetensorsOut::Create(const std::string& output,
                                                      std::vector<std::pair<std::string, std::string>> metadata,
                                                      std::vector<io::SafetensorsTensorDecl> tensors,
                                                      const std::vector<std::string>& inputs, bool durable,
                                                      uint64_t max_bytes, uint64_t max_tensors) {
  SafetensorsOut out;
  // transformers' from_pretrained refuses a file whose __metadata__ has no
  // "format" of pt, tf, flax or mlx (a file with none at all it accepts);
  // save_pretrained writes "pt". Metadata carried from a GGUF or .bolt
  // input has no such key, so it gets transformers' own.
  const bool has_format = std::any_of(metadata.begin(), metadata.end(), [](const auto& kv) { return kv.first == "format"; });
  if (!metadata.empty() && !has_format) metadata.insert(metadata.begin(), {"format", "pt"});
  if (max_bytes == 0 && max_tensors == 0) {
    BP_ASSIGN_OR_RETURN(out.one_,
                        io::SafetensorsWriter::Create(output, std::move(metadata), std::move(tensors), inputs, durable));
    return out;
  }
  io::SafetensorsSplitOptions options;
  options.max_bytes = max_bytes;
  options.max_tensors = max_tensors;
  options.inputs = inputs;
  options.durable = durable;
  BP_ASSIGN_OR_RETURN(out.split_,
                      io::SafetensorsSplitWriter::Create(output, std::move(metadata), std::move(tensors), options));
  return out;
}

absl::Status SafetensorsOut::WriteNext(absl::Span<const uint8_t> bytes) {
  return one_ ? one_->WriteNext(bytes) : split_->WriteNext(bytes);
}

absl::Status SafetensorsOut::WriteNext(PieceSource& bytes) {
  return one_ ? one_->WriteNext(bytes) : split_->WriteNext(bytes);
}

absl::Status SafetensorsOut::WriteNextBehind(std::shared_ptr<PieceSource> bytes) {
  return one_ ? one_->WriteNextBehind(std::move(bytes)) : split_->WriteNextBehind(std::move(bytes));
}

absl::Status SafetensorsOut::Finish() {
  if (one_) return one_->Finish();
  BP_RETURN_IF_ERROR(split_->Finish());
  const auto& paths = split_->paths();
  const auto& counts = split_->tensor_counts();
  for (size_t k = 0; k < counts.size(); ++k) {
    std::fprintf(stderr, "wrote %s (%zu tensors)\n", paths[k].c_str(), counts[k]);
  }
  if (!split_->index_path().empty()) {
    std::fprintf(stderr, "wrote %s (the index of %zu files)\n", split_->index_path().c_str(), counts.size());
  } else {
    std::fprintf(stderr, "bolt-pack: note: the model fits in one file, written without an index (as Hugging Face "
                         "does)\n");
  }
  for (const auto& old : split_->removed()) {
    std::fprintf(stderr, "removed %s (of the split this output replaces)\n", old.c_str());
  }
  return absl::OkStatus();
}

}  // namespace boltpack::tools
