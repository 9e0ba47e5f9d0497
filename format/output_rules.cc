#include "format/output_rules.h"

#include "boltpack/codec_registry.h"
#include "boltpack_proto/boltpack.pb.h"
#include "common/escape.h"
#include "common/status_macros.h"
#include "common/str_cat.h"
#include "common/utf8.h"
#include "common/limits.h"
#include "format/manifest_convert.h"
#include "format/manifest_scan.h"
#include "format/manifest_stream.h"
#include "format/manifest_validate.h"
#include "format/metadata_wire.h"
#include "format/elastic_validate.h"
#include "format/zstd_frames.h"
#include "google/protobuf/arena.h"

namespace boltpack::format {
namespace {

// Each zstd unit (a chunk, or the whole stream) as the reader checks it
// before a decode (format/zstd_frames.h), so a copy never carries a size
// that decompression would contradict.
absl::Status CheckZstdUnits(const Reader& reader, size_t tensor, size_t k, const std::string& where) {
  const auto shared = reader.SharedTensor(tensor);
  const StreamInfo& s = shared->streams[k];
  BP_ASSIGN_OR_RETURN(auto stored, reader.StoredStream(tensor, k));
  auto check = [&](absl::Span<const uint8_t> frames, uint64_t raw, const std::string& unit) -> absl::Status {
    absl::Status frames_hold = CheckZstdFrames(frames, raw, unit);
    if (frames_hold.ok()) return frames_hold;
    return absl::Status(frames_hold.code(), StrCat(frames_hold.message(), "; not copied"));
  };
  if (s.chunks.empty()) return check(stored, s.raw_length, where);
  for (size_t c = 0; c < s.chunks.size(); ++c) {
    const ChunkInfo& chunk = s.chunks[c];
    BP_RETURN_IF_ERROR(
        check(stored.subspan(chunk.stored_offset, chunk.stored_length), chunk.raw_length, StrCat(where, " chunk ", c)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckCopyable(const Reader& reader, size_t tensor, bool check_stored) {
  const auto shared = reader.SharedTensor(tensor);
  const TensorInfo& info = *shared;
  // Built only for an error: a copy of 1M tensors spent 3% on them.
  auto where = [&] { return StrCat(reader.path(), ": tensor ", QuoteForDisplay(info.name)); };
  // [C-5.1.4] [C-5.2.2]
  if (static_cast<int>(info.dtype) > kMaxDType) {
    return absl::UnimplementedError(StrCat(where(), ": dtype ", static_cast<int>(info.dtype),
                                           " is a later format version's, which this version cannot write; not copied"));
  }
  for (size_t k = 0; k < info.streams.size(); ++k) {
    const StreamInfo& s = info.streams[k];
    // [C-5.1.4] [C-5.2.2]
    if (s.compression != Compression::kNone && s.compression != Compression::kZstd) {
      return absl::UnimplementedError(StrCat(where(), " stream \"", s.role, "\": compression ", static_cast<int>(s.compression),
                                             " is a later format version's, which this version cannot write; "
                                             "not copied"));
    }
  }
  // The record first (metadata only), then what the stored bytes declare.
  // An unknown codec is copy-only: the container rules are all that apply.
  if (const Codec* codec = FindCodec(info.codec_id)) {
    absl::Status valid = codec->ValidateRecord(info);
    if (!valid.ok()) {
      return absl::DataLossError(StrCat(reader.path(), ": not a valid \"", info.codec_id, "\" record, not copied: ",
                                        valid.message()));
    }
  }
  for (size_t k = 0; check_stored && k < info.streams.size(); ++k) {
    if (info.streams[k].compression != Compression::kZstd) continue;
    BP_RETURN_IF_ERROR(CheckZstdUnits(reader, tensor, k, StrCat(where(), " stream \"", info.streams[k].role, "\"")));
  }
  return absl::OkStatus();
}

absl::Status CheckWrittenName(std::string_view text, std::string_view kind, std::string_view file) {
  if (text.empty() || text.size() > kMaxNameBytes) {
    return absl::InvalidArgumentError(StrCat(file, ": ", kind, " of ", text.size(), " bytes (",
                                             QuoteForDisplay(text, 64), "); names are 1..", kMaxNameBytes, " bytes"));
  }
  if (text.find('\0') != std::string_view::npos) {
    return absl::InvalidArgumentError(StrCat(file, ": ", kind, " ", QuoteForDisplay(text, 200), " contains a NUL byte"));
  }
  if (auto bad = FirstNonUtf8Byte(text)) {
    return absl::InvalidArgumentError(StrCat(file, ": ", kind, " ", QuoteForDisplay(text, 200), " is not valid UTF-8 (byte ",
                                             *bad, ")"));
  }
  return absl::OkStatus();
}

absl::Status ValidateAsReader(const std::string& serialized, const std::string& file, uint64_t data_end,
                              bool check_records) {
  return ValidateAsReader(serialized, file, std::vector<uint64_t>{data_end}, check_records);
}

absl::Status ValidateAsReader(const std::string& serialized, const std::string& file,
                              const std::vector<uint64_t>& data_ends, bool check_records) {
  // The reader's limits first, as the reader checks them (format/manifest_scan.h).
  BP_RETURN_IF_ERROR(ScanManifestLimits(
      absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(serialized.data()), serialized.size()), file));
  // The reader's parse (format/manifest_stream.h): the head in an arena,
  // then one tensor record at a time.
  const auto bytes = absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(serialized.data()), serialized.size());
  google::protobuf::Arena arena;
  v1::Manifest& m = *google::protobuf::Arena::CreateMessage<v1::Manifest>(&arena);
  MetadataWire metadata;
  auto tensor_count = ParseManifestHead(bytes, file, &m, &metadata);
  if (!tensor_count.ok()) {
    return absl::InternalError(StrCat(file, ": the manifest does not parse back as a boltpack.v1.Manifest (a name "
                                            "that is not UTF-8?); nothing written"));
  }
  BP_RETURN_IF_ERROR(ReadMetadataWire(metadata, file, /*out=*/nullptr));  // checked, not built
  if (m.shards_size() > 0) {
    BP_RETURN_IF_ERROR(ValidateShards(m, file, m.shards(0).file_id()));
    if (static_cast<size_t>(m.shards_size()) != data_ends.size()) {
      return absl::InternalError(StrCat(file, ": the manifest lists ", m.shards_size(), " shards, the writer wrote ",
                                        data_ends.size()));
    }
  }
  ManifestValidator validator(m, file, data_ends);
  BP_RETURN_IF_ERROR(validator.Begin(*tensor_count));
  // The converted records are kept only for the elastic check, which
  // needs them all; a file with an elastic manifest holds a model's
  // tensors, not a million.
  std::vector<TensorInfo> kept;
  absl::Status read = ForEachValidTensor(bytes, file, validator, [&](const v1::Tensor& t, const TensorChunks& chunks, absl::Span<const uint8_t>) {
    const Codec* codec = check_records ? FindCodec(t.codec().id()) : nullptr;
    if (codec == nullptr && !m.has_elastic()) return absl::OkStatus();
    TensorInfo info = TensorFromWire(t, chunks);
    if (codec != nullptr) {
      absl::Status valid = codec->ValidateRecord(info);
      if (!valid.ok()) {
        return absl::Status(valid.code(), StrCat(file, ": the reader would refuse tensor ", QuoteForDisplay(t.name(), 200),
                                                 ": ", valid.message()));
      }
    }
    if (m.has_elastic()) kept.push_back(std::move(info));
    return absl::OkStatus();
  });
  if (absl::IsDataLoss(read) && read.message().find("is not a valid boltpack.v1.Manifest") != std::string_view::npos) {
    return absl::InternalError(StrCat(file, ": the manifest does not parse back as a boltpack.v1.Manifest (a name "
                                            "that is not UTF-8?); nothing written"));
  }
  BP_RETURN_IF_ERROR(read);
  if (m.has_elastic()) BP_RETURN_IF_ERROR(ValidateElasticOf(m.elastic(), kept, file));
  return absl::OkStatus();
}

}  // namespace boltpack::format
