#include "boltpack/writer.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <unordered_set>

#include <zstd.h>

#include "common/str_cat.h"
#include "boltpack/codec_registry.h"
#include "boltpack/reader.h"
#include "boltpack_proto/boltpack.pb.h"
#include "codecs/encoded_record.h"
#include "common/checked_math.h"
#include "common/parallel_for.h"
#include "common/status_macros.h"
#include "format/layout.h"
#include "format/limits.h"
#include "format/manifest_convert.h"
#include "format/manifest_validate.h"
#include "io/atomic_file.h"

namespace boltpack {

struct Writer::Impl {
  WriterOptions options;
  std::unique_ptr<io::AtomicFile> file;
  format::Header header;
  v1::Manifest manifest;
  std::unordered_set<std::string> tensor_names;
  std::unordered_set<std::string> metadata_keys;
  bool uses_zstd = false;
  // Required features of files tensors were copied from (a copied tensor may
  // depend on them), declared again in the output.
  std::vector<std::string> inherited_features;
  bool finished = false;

  absl::Status CheckOpen() const {
    if (finished) return absl::FailedPreconditionError(StrCat(file->path(), ": writer already finished"));
    return absl::OkStatus();
  }
  absl::Status CheckName(const std::string& name) {
    if (name.empty() || name.size() > format::kMaxNameBytes || name.find('\0') != std::string::npos) {
      return absl::InvalidArgumentError(StrCat(file->path(), ": tensor name \"", name,
                                                     "\" must be 1..4096 bytes without NUL"));
    }
    if (!tensor_names.insert(name).second) {
      return absl::InvalidArgumentError(StrCat(file->path(), ": duplicate tensor name \"", name, "\""));
    }
    if (tensor_names.size() > format::kMaxTensors) {
      return absl::ResourceExhaustedError(StrCat(file->path(), ": more than ", format::kMaxTensors, " tensors"));
    }
    return absl::OkStatus();
  }
  // Appends stored bytes at the next aligned offset and fills in the stream's
  // location and checksums.
  absl::Status Append(absl::Span<const uint8_t> stored, StreamInfo* s) {
    BP_RETURN_IF_ERROR(file->PadTo(options.alignment));
    s->shard = 0;
    s->offset = file->position();
    s->length = stored.size();
    s->alignment = options.alignment;
    s->xxh3 = format::Xxh3(stored);
    for (auto& c : s->chunks) c.xxh3 = format::Xxh3(stored.subspan(c.stored_offset, c.stored_length));
    return file->Write(stored);
  }
};

namespace {

uint64_t NewFileId() {
  std::random_device rd;
  uint64_t id = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  id ^= static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  return id;
}

// Compresses each piece (or the whole stream) with zstd; returns nullopt
// when that saves less than 1/32 of the bytes, so it is stored raw.
absl::StatusOr<std::optional<std::vector<uint8_t>>> TryCompress(const EncodedStream& in, int level, int threads,
                                                                std::vector<ChunkInfo>* chunks) {
  std::vector<std::pair<uint64_t, uint64_t>> pieces;
  if (in.chunks.empty()) pieces.emplace_back(0, in.bytes.size());
  for (const auto& c : in.chunks) pieces.emplace_back(c.raw_offset, c.raw_length);
  std::vector<std::vector<uint8_t>> out(pieces.size());
  BP_RETURN_IF_ERROR(ParallelFor(pieces.size(), threads, 1, [&](uint64_t a, uint64_t b) -> absl::Status {
    for (uint64_t k = a; k < b; ++k) {
      auto [off, len] = pieces[k];
      out[k].resize(ZSTD_compressBound(len));
      size_t n = ZSTD_compress(out[k].data(), out[k].size(), in.bytes.data() + off, len, level);
      if (ZSTD_isError(n)) return absl::InternalError(StrCat("zstd: ", ZSTD_getErrorName(n)));
      out[k].resize(n);
    }
    return absl::OkStatus();
  }));
  uint64_t total = 0;
  for (const auto& o : out) total += o.size();
  if (total + in.bytes.size() / 32 >= in.bytes.size()) return std::optional<std::vector<uint8_t>>();
  std::vector<uint8_t> joined;
  joined.reserve(total);
  for (size_t k = 0; k < out.size(); ++k) {
    if (!in.chunks.empty()) {
      auto& c = (*chunks)[k];
      c.stored_offset = joined.size();
      c.stored_length = out[k].size();
    }
    joined.insert(joined.end(), out[k].begin(), out[k].end());
  }
  return std::optional<std::vector<uint8_t>>(std::move(joined));
}

// The shape rules of spec §6.6, checked before any byte is written.
absl::Status CheckShape(const std::vector<uint64_t>& shape, const std::string& where) {
  if (shape.size() > format::kMaxDims) return absl::InvalidArgumentError(StrCat(where, ": more than 8 dimensions"));
  uint64_t nonzero = 1;
  for (uint64_t d : shape) {
    auto next = CheckedMul(nonzero, d == 0 ? 1 : d);
    if (!next || *next > format::kMaxElements) {
      return absl::InvalidArgumentError(StrCat(where, ": more than 2^56 elements"));
    }
    nonzero = *next;
  }
  return absl::OkStatus();
}

}  // namespace

Writer::Writer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Writer::~Writer() = default;

absl::StatusOr<std::unique_ptr<Writer>> Writer::Create(const std::string& path, const WriterOptions& options) {
  if (!IsPowerOfTwo(options.alignment) || options.alignment < format::kMinAlignment ||
      options.alignment > format::kMaxAlignment) {
    return absl::InvalidArgumentError(StrCat(path, ": alignment ", options.alignment,
                                                   " must be a power of two between 64 and 2^30"));
  }
  if (options.zstd_level < 0 || options.zstd_level > ZSTD_maxCLevel()) {
    return absl::InvalidArgumentError(StrCat("zstd level ", options.zstd_level, " outside 0..", ZSTD_maxCLevel()));
  }
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  BP_ASSIGN_OR_RETURN(impl->file, io::AtomicFile::Create(path, options.inputs));
  impl->header.file_id = NewFileId();
  impl->header.alignment = options.alignment;
  auto header = format::EncodeHeader(impl->header);
  BP_RETURN_IF_ERROR(impl->file->Write(header));
  auto& m = impl->manifest;
  m.set_format_major(format::kFormatMajor);
  m.set_format_minor(format::kFormatMinor);
  m.set_alignment(options.alignment);
  m.set_writer(options.writer_name.empty() ? "bolt-pack" : options.writer_name);
  for (const auto& f : options.optional_features) m.add_optional_features(f);
  return std::unique_ptr<Writer>(new Writer(std::move(impl)));
}

absl::Status Writer::AddMetadata(std::string key, MetaValue value) {
  BP_RETURN_IF_ERROR(impl_->CheckOpen());
  if (key.empty() || key.size() > format::kMaxNameBytes || key.find('\0') != std::string::npos) {
    return absl::InvalidArgumentError(StrCat(impl_->file->path(), ": metadata key \"", key,
                                                   "\" must be 1..4096 bytes without NUL"));
  }
  if (!impl_->metadata_keys.insert(key).second) {
    return absl::InvalidArgumentError(StrCat(impl_->file->path(), ": duplicate metadata key \"", key, "\""));
  }
  auto* e = impl_->manifest.add_metadata();
  e->set_key(key);
  format::ToProto(value, e->mutable_value());
  return format::ValidateValue(e->value(), 0, [&] { return StrCat(impl_->file->path(), ": metadata \"", key, "\""); });
}

absl::Status Writer::AddTensor(std::string name, std::vector<uint64_t> shape, DType dtype, std::string codec_id,
                               EncodedTensor encoded) {
  BP_RETURN_IF_ERROR(impl_->CheckOpen());
  BP_RETURN_IF_ERROR(impl_->CheckName(name));
  std::string where = StrCat(impl_->file->path(), ": tensor \"", name, "\"");
  BP_RETURN_IF_ERROR(CheckShape(shape, where));
  const Codec* codec = FindCodec(codec_id);
  if (codec == nullptr) return absl::NotFoundError(StrCat(where, ": unknown codec \"", codec_id, "\""));
  TensorInfo info = RecordFor(std::move(name), dtype, std::move(shape), codec_id, encoded);
  // An encoder bug must not produce a file its own reader rejects.
  absl::Status valid = codec->ValidateRecord(info);
  if (!valid.ok()) return absl::InternalError(StrCat(where, ": encoder produced an invalid record: ", valid.message()));
  for (size_t k = 0; k < encoded.streams.size(); ++k) {
    const EncodedStream& es = encoded.streams[k];
    StreamInfo& s = info.streams[k];
    std::optional<std::vector<uint8_t>> packed;
    if (impl_->options.zstd_level > 0 && es.compressible && !es.bytes.empty()) {
      BP_ASSIGN_OR_RETURN(packed, TryCompress(es, impl_->options.zstd_level, impl_->options.threads, &s.chunks));
    }
    if (packed) {
      s.compression = Compression::kZstd;
      impl_->uses_zstd = true;
      BP_RETURN_IF_ERROR(impl_->Append(*packed, &s));
    } else {
      BP_RETURN_IF_ERROR(impl_->Append(es.bytes, &s));
    }
  }
  format::ToProto(info, impl_->manifest.add_tensors());
  return absl::OkStatus();
}

absl::Status Writer::AddStoredTensor(TensorInfo info, const std::vector<absl::Span<const uint8_t>>& streams) {
  BP_RETURN_IF_ERROR(impl_->CheckOpen());
  std::string where = StrCat(impl_->file->path(), ": tensor \"", info.name, "\"");
  if (streams.size() != info.streams.size()) {
    return absl::InvalidArgumentError(StrCat(where, ": ", streams.size(), " stream buffers for ",
                                             info.streams.size(), " streams"));
  }
  if (!IsValidCodecId(info.codec_id)) {
    return absl::InvalidArgumentError(StrCat(where, ": invalid codec id \"", info.codec_id, "\""));
  }
  BP_RETURN_IF_ERROR(CheckShape(info.shape, where));
  for (size_t k = 0; k < streams.size(); ++k) {
    StreamInfo& s = info.streams[k];
    s.compression = Compression::kNone;
    s.raw_length = streams[k].size();
    for (auto& c : s.chunks) {
      if (c.raw_offset > streams[k].size() || c.raw_length > streams[k].size() - c.raw_offset) {
        return absl::InvalidArgumentError(StrCat(where, ": chunk outside stream \"", s.role, "\""));
      }
      c.stored_offset = c.raw_offset;
      c.stored_length = c.raw_length;
    }
  }
  // A registered codec checks the record; an unknown one is copy-only and
  // the container rules (checked again at Finish) are all that apply.
  if (const Codec* codec = FindCodec(info.codec_id)) {
    absl::Status valid = codec->ValidateRecord(info);
    if (!valid.ok()) {
      return absl::InvalidArgumentError(StrCat(where, ": not a valid \"", info.codec_id, "\" record: ", valid.message()));
    }
  }
  BP_RETURN_IF_ERROR(impl_->CheckName(info.name));
  for (size_t k = 0; k < streams.size(); ++k) BP_RETURN_IF_ERROR(impl_->Append(streams[k], &info.streams[k]));
  format::ToProto(info, impl_->manifest.add_tensors());
  return absl::OkStatus();
}

absl::Status Writer::CopyTensor(const Reader& reader, size_t tensor, std::string new_name) {
  BP_RETURN_IF_ERROR(impl_->CheckOpen());
  if (tensor >= reader.tensors().size()) return absl::OutOfRangeError(StrCat(reader.path(), ": no tensor #", tensor));
  TensorInfo info = reader.tensors()[tensor];
  if (!new_name.empty()) info.name = std::move(new_name);
  for (const auto& f : reader.required_features()) {
    if (!format::IsKnownFeature(f) && std::find(impl_->inherited_features.begin(), impl_->inherited_features.end(), f) ==
                           impl_->inherited_features.end()) {
      impl_->inherited_features.push_back(f);
    }
  }
  BP_RETURN_IF_ERROR(impl_->CheckName(info.name));
  for (size_t k = 0; k < info.streams.size(); ++k) {
    // Bytes copied through are checked first: a corrupt source is reported,
    // never silently re-checksummed into a "valid" file.
    BP_RETURN_IF_ERROR(reader.VerifyStream(tensor, k));
    BP_ASSIGN_OR_RETURN(auto stored, reader.StoredStream(tensor, k));
    StreamInfo& s = info.streams[k];
    if (s.compression == Compression::kZstd) impl_->uses_zstd = true;
    BP_RETURN_IF_ERROR(impl_->Append(stored, &s));
  }
  format::ToProto(info, impl_->manifest.add_tensors());
  return absl::OkStatus();
}

absl::Status Writer::Finish() {
  BP_RETURN_IF_ERROR(impl_->CheckOpen());
  impl_->finished = true;
  auto& m = impl_->manifest;
  if (impl_->uses_zstd) m.add_required_features("zstd");
  for (const auto& f : impl_->inherited_features) m.add_required_features(f);
  uint64_t manifest_offset = impl_->file->position();
  std::string bytes;
  if (!m.SerializeToString(&bytes)) return absl::InternalError(StrCat(impl_->file->path(), ": cannot serialize the manifest"));
  if (bytes.size() > format::kMaxManifestBytes) {
    return absl::ResourceExhaustedError(StrCat(impl_->file->path(), ": manifest of ", bytes.size(),
                                                     " bytes exceeds the 256 MiB limit"));
  }
  // The writer checks what it wrote with the reader's own rules.
  BP_RETURN_IF_ERROR(format::ValidateManifest(m, impl_->file->path(), {manifest_offset}));
  auto span = absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  BP_RETURN_IF_ERROR(impl_->file->Write(span));
  format::Footer footer;
  footer.manifest_offset = manifest_offset;
  footer.manifest_length = bytes.size();
  footer.manifest_xxh3 = format::Xxh3(span);
  footer.file_id = impl_->header.file_id;
  footer.file_size = manifest_offset + bytes.size() + format::kFooterSize;
  BP_RETURN_IF_ERROR(impl_->file->Write(format::EncodeFooter(footer)));
  return impl_->file->Commit();
}

absl::StatusOr<EncodedTensor> EncodeTensor(std::string_view codec_id, const TensorSource& source,
                                           const CodecParams& params, const ExecOptions& exec) {
  const Codec* codec = FindCodec(codec_id);
  if (codec == nullptr) {
    return absl::NotFoundError(StrCat("tensor \"", source.name, "\": unknown codec \"", codec_id, "\""));
  }
  absl::Status can = codec->CanEncode(source.dtype, source.shape, params);
  if (!can.ok()) return absl::Status(can.code(), StrCat("tensor \"", source.name, "\": ", can.message()));
  return codec->Encode(source, params, exec);
}

}  // namespace boltpack
