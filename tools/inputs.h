// The inputs of a conversion: .safetensors files (or a sharded index .json),
// .gguf files (a split model by its first shard) and .bolt files, seen as one ordered list of tensors plus metadata.
#ifndef BOLTPACK_TOOLS_INPUTS_H_
#define BOLTPACK_TOOLS_INPUTS_H_

#include <deque>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "boltpack/reader.h"
#include "boltpack/types.h"
#include "io/gguf.h"
#include "io/hf_arch.h"
#include "io/json.h"
#include "io/safetensors.h"

namespace boltpack::tools {

enum class InputKind : uint8_t { kSafetensors, kBolt, kGguf };

// One per input tensor, so its size is what opening a model of 1M tensors
// costs per tensor (88 bytes, no allocation): names, shapes and paths are
// views of what the models hold (a GGUF name views its file's mapping, a
// .bolt name its manifest; a GGUF shape, ne reversed, or a .bolt shape is
// in a block the Inputs keep per model).
struct InputTensor {
  std::string_view name;
  absl::Span<const uint64_t> shape;
  // For messages: the file's path as the model that holds it keeps it
  // (which lives as long as the Inputs); a pointer, not a view: 8 bytes a
  // tensor, 8 MB of a conversion of 1M.
  const std::string* file_path = nullptr;
  std::string_view file() const { return *file_path; }
  // kSafetensors: the element bytes; kGguf: the tensor's GGUF bytes (zero-copy).
  absl::Span<const uint8_t> bytes;
  // kBolt: the tensor in its reader.
  const Reader* reader = nullptr;
  // kGguf: its GGUF type (and ne = shape reversed).
  const io::GgmlType* ggml_type = nullptr;
  uint32_t index = 0;  // in its reader or model (at most format::kMaxTensors)
  DType dtype = DType::kUnspecified;
  InputKind kind = InputKind::kSafetensors;
  // kSafetensors of a Hugging Face folder, nonzero for a Q or K projection:
  // `bytes` are the file's rows, which the output takes reordered for
  // llama.cpp's rotary layout in this many head groups (io::PermuteRotaryRows).
  // ElementBytes reorders one tensor when it is written, so a conversion
  // holds one such copy at a time, not every Q and K of the model.
  uint32_t rotary_heads = 0;
  // kSafetensors of a Hugging Face folder: the experts' tensors this one
  // stacks ([n_expert, ...] of one expert's shape, llama.cpp's *_exps), in
  // expert order; `bytes` then has their total size and no data, and
  // ElementBytes joins them one tensor at a time.
  const std::vector<absl::Span<const uint8_t>>* parts = nullptr;
  // kSafetensors: `bytes` is a buffer the Inputs own (a tensor no file
  // holds, such as Llama 3's rope_freqs), not a file mapping: Release
  // leaves it alone.
  bool owned = false;

  uint64_t element_count() const;
  // The codec a tensor keeps when no rule matches (its source form).
  std::string SourceCodec() const;
};

// A tensor a caller holds in memory (Inputs::FromMemory): row-major
// elements of `dtype`.
struct MemoryTensor {
  std::string name;
  DType dtype = DType::kUnspecified;
  std::vector<uint64_t> shape;
  absl::Span<const uint8_t> bytes;
};

class Inputs {
 public:
  // Opens every path by its extension (.safetensors, .json index, .bolt);
  // .bolt files with `bolt_options`. A folder is a Hugging Face checkpoint
  // (config.json, model.safetensors or its shard index, tokenizer files),
  // read with GGUF names and keys (tools/hf_input.cc); it is the only input.
  static absl::StatusOr<std::unique_ptr<Inputs>> Open(const std::vector<std::string>& paths,
                                                      const ReaderOptions& bolt_options = {});

  // Tensors of a caller's memory, which must outlive the Inputs, with
  // `metadata`; `label` stands for the file in messages. Checks each
  // tensor's byte count against its dtype and shape, and that names are
  // unique. Such tensors are kSafetensors inputs that Release never drops.
  static absl::StatusOr<std::unique_ptr<Inputs>> FromMemory(std::vector<MemoryTensor> tensors, Metadata metadata,
                                                            std::string label);

  const std::vector<InputTensor>& tensors() const { return tensors_; }
  // A single .bolt input's metadata is its reader's (not a copy: a 4M-element
  // array is 470 MB as MetaValues); a single GGUF's is moved out of its model.
  const Metadata& metadata() const { return borrowed_metadata_ != nullptr ? *borrowed_metadata_ : metadata_; }
  // The input metadata entry `k` comes from (the first that has its key).
  const std::string& metadata_file(size_t k) const {
    return borrowed_metadata_ != nullptr ? files_.front() : metadata_files_[k];
  }
  // The GGUF models opened, in the order of their paths (inspect reads its
  // facts from the one it opened rather than parsing the file again). The
  // metadata of a single unsplit GGUF input has moved to metadata(), after
  // which come the gguf.* facts (io/gguf.h); the model's own list is empty.
  // Their tensor lists are released too (tensors() holds them).
  const std::vector<std::unique_ptr<io::GgufModel>>& gguf_models() const { return ggufs_; }
  // The .bolt readers opened, in the order of their paths (inspect reads a
  // file's facts from its reader rather than opening the file again).
  const std::vector<std::unique_ptr<Reader>>& readers() const { return readers_; }
  // Whether the input is a Hugging Face checkpoint folder, converted as
  // llama.cpp's converter does: float 1-D tensors (norms, biases) are
  // planned F32 whatever the rules (tools/codec_plan.cc), so '*=f16' gives
  // its GGUF, and a GGUF output gets general.file_type.
  bool hf_folder() const { return hf_folder_; }
  // A Hugging Face folder's architecture table (its tensors' HF names, for
  // an imatrix that uses them: tools/importance.h); null for other inputs.
  const io::HfArch* hf_arch() const { return hf_arch_; }
  // Every file read, so the output can refuse to overwrite one.
  const std::vector<std::string>& files() const { return files_; }
  uint64_t total_bytes() const;
  // A one-pass tool is done with `t`: its bytes leave the address space
  // (io::ReleaseMappedPages; every input is a file mapping), so converting
  // a model keeps resident memory near one tensor, not the model.
  void Release(const InputTensor& t) const;
  // A conversion has copied the names of its inputs into the output's
  // declarations: the GGUF header and .bolt manifest pages leave the address
  // space (io::GgufModel::ReleaseHeaderPages, Reader::ReleaseManifestPages;
  // names read the file again if used).
  void ReleaseHeaders() const;

 private:
  // A Hugging Face checkpoint folder (tools/hf_input.cc).
  absl::Status AddHfFolder(const std::string& dir);
  absl::Status AddRopeFreqs(const io::JsonValue& config, const std::string& config_path);
  absl::Status AddHfTensors(const io::SafetensorsModel& model, const io::HfArch& arch, const io::JsonValue& config,
                            const std::string& config_path);
  absl::Status Transform(const io::HfTensorRule& rule, const io::SafetensorsTensor& s, const std::string& where,
                         const io::JsonValue& config, const std::string& config_path, InputTensor* t);
  struct ExpertGroup;
  absl::Status AddExpert(const io::SafetensorsModel& model, size_t i, io::HfMapped mapped, uint64_t experts,
                         std::map<std::string, ExpertGroup>* groups);

  std::vector<std::unique_ptr<io::SafetensorsModel>> safetensors_;
  // Names and bytes that no input file holds: a Hugging Face folder's GGUF
  // names (a deque, so views of them stay put) and its rope_freqs.
  std::deque<std::string> owned_names_;
  std::vector<std::vector<uint8_t>> owned_bytes_;
  std::deque<std::vector<absl::Span<const uint8_t>>> stacks_;  // InputTensor::parts
  bool hf_folder_ = false;
  const io::HfArch* hf_arch_ = nullptr;  // a static table
  std::vector<MemoryTensor> memory_;  // FromMemory's, which tensors_ view
  // A label for FromMemory's tensors; a node, so that the views of it stay put.
  std::unique_ptr<std::string> memory_label_;
  std::vector<std::unique_ptr<Reader>> readers_;
  std::vector<std::unique_ptr<io::GgufModel>> ggufs_;
  // The shapes of GGUF tensors (ne reversed) and of .bolt tensors (whose
  // readers build a TensorInfo when asked), one block per model, which
  // their InputTensor::shape views.
  std::vector<std::unique_ptr<uint64_t[]>> shapes_;
  std::vector<InputTensor> tensors_;
  Metadata metadata_;
  const Metadata* borrowed_metadata_ = nullptr;
  std::vector<std::string> metadata_files_;
  std::vector<std::string> files_;
};

// Whether a conversion may take these inputs: every tensor name and
// metadata key of a GGUF or safetensors input is one a .bolt manifest holds
// (1..4096 bytes of UTF-8 without NUL; spec/gguf-mapping.md §2), so a
// name that would make an unreadable output is refused naming the input,
// not the output. .bolt inputs were checked when they were opened.
absl::Status CheckImportable(const Inputs& in);

// Drops the pages of every stream of tensor `tensor` from the address space
// (io::ReleaseMappedPages) when `reader` maps its file; nothing over a
// caller's buffer. A one-pass tool calls it once done with the tensor.
void ReleaseTensorPages(const Reader& reader, size_t tensor);

// Lower-cased extension of `path` including the dot ("" if none); for
// "x.safetensors.index.json" it is ".json".
std::string Extension(const std::string& path);

// For a GGUF tensor of a block type that has no element codec (q8_0, q4_k,
// ...): the bolt-pack record that holds its blocks unchanged (codec id per
// spec/gguf-mapping.md, one stream). Where the codec is registered, its
// stream role and parameters are those its encoder produces.
absl::StatusOr<TensorInfo> GgufBlockRecord(const InputTensor& t);

// True for a record whose codec is registered, accepts it, and decodes no
// tensor in this version (the ggml-* pass-through codecs): its bytes are
// checked by checksum only, and `verify` reports it as "not decoded".
bool StoredNotDecoded(const TensorInfo& info);

// The element bytes a kSafetensors tensor is written with: `t.bytes`, or
// (rotary_heads) its rows reordered into `scratch`. Any other kind: t.bytes.
absl::StatusOr<absl::Span<const uint8_t>> ElementBytes(const InputTensor& t, std::vector<uint8_t>* scratch);

// Decodes an input tensor into its logical element bytes (F32/F16/BF16 stay
// themselves; other dtypes come out as their native bytes) for re-encoding.
absl::StatusOr<std::vector<uint8_t>> DecodeToLogical(const InputTensor& t, int threads);

}  // namespace boltpack::tools

#endif  // BOLTPACK_TOOLS_INPUTS_H_
