#include "format/output_rules.h"

#include <zstd.h>

#include "absl/strings/escaping.h"
#include "boltpack/codec_registry.h"
#include "boltpack_proto/boltpack.pb.h"
#include "common/status_macros.h"
#include "common/str_cat.h"
#include "common/utf8.h"
#include "format/limits.h"
#include "format/manifest_convert.h"
#include "format/manifest_scan.h"
#include "format/manifest_stream.h"
#include "format/manifest_validate.h"
#include "format/elastic_validate.h"
#include "google/protobuf/arena.h"

namespace boltpack::format {
namespace {

std::string Escaped(std::string_view s) { return absl::CHexEscape(absl::string_view(s.data(), s.size())); }

// A zstd stream's frames (one per chunk, or the whole stream) must declare
// the raw length the record gives, so a copy never carries a size that
// decompression would contradict (a "bomb" declaring far more than it holds).
absl::Status CheckZstdSizes(const Reader& reader, size_t tensor, size_t k, const std::string& where) {
  const auto shared = reader.SharedTensor(tensor);
  const StreamInfo& s = shared->streams[k];
  BP_ASSIGN_OR_RETURN(auto stored, reader.StoredStream(tensor, k));
  auto check = [&](absl::Span<const uint8_t> frames, uint64_t raw, const std::string& what) -> absl::Status {
    // Walks the frames' headers (ZSTD_findDecompressedSize is not stable API).
    uint64_t declared = 0;
    bool known = true;
    while (!frames.empty()) {
      const size_t size = ZSTD_findFrameCompressedSize(frames.data(), frames.size());
      const unsigned long long n = ZSTD_getFrameContentSize(frames.data(), frames.size());
      if (ZSTD_isError(size) || n == ZSTD_CONTENTSIZE_ERROR) {
        return absl::DataLossError(StrCat(where, what, ": not zstd frames; not copied"));
      }
      known &= n != ZSTD_CONTENTSIZE_UNKNOWN;
      if (known && n > raw - declared) break;  // more than the record says: no overflow past it
      declared += known ? n : 0;
      frames.remove_prefix(size);
    }
    if (known && (declared != raw || !frames.empty())) {
      return absl::DataLossError(StrCat(where, what, ": zstd frames declare ", frames.empty() ? "" : "more than ",
                                        declared, " bytes, the record says raw_length ", raw, "; not copied"));
    }
    return absl::OkStatus();
  };
  if (s.chunks.empty()) return check(stored, s.raw_length, "");
  for (size_t c = 0; c < s.chunks.size(); ++c) {
    const ChunkInfo& chunk = s.chunks[c];
    BP_RETURN_IF_ERROR(
        check(stored.subspan(chunk.stored_offset, chunk.stored_length), chunk.raw_length, StrCat(" chunk ", c)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckCopyable(const Reader& reader, size_t tensor) {
  const auto shared = reader.SharedTensor(tensor);
  const TensorInfo& info = *shared;
  const std::string where = StrCat(reader.path(), ": tensor \"", Escaped(info.name), "\"");
  if (static_cast<int>(info.dtype) > kMaxDType) {
    return absl::UnimplementedError(StrCat(where, ": dtype ", static_cast<int>(info.dtype),
                                           " is a later format version's, which this version cannot write; not copied"));
  }
  for (size_t k = 0; k < info.streams.size(); ++k) {
    const StreamInfo& s = info.streams[k];
    const std::string stream = StrCat(where, " stream \"", s.role, "\"");
    if (s.compression != Compression::kNone && s.compression != Compression::kZstd) {
      return absl::UnimplementedError(StrCat(stream, ": compression ", static_cast<int>(s.compression),
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
  for (size_t k = 0; k < info.streams.size(); ++k) {
    if (info.streams[k].compression != Compression::kZstd) continue;
    BP_RETURN_IF_ERROR(CheckZstdSizes(reader, tensor, k, StrCat(where, " stream \"", info.streams[k].role, "\"")));
  }
  return absl::OkStatus();
}

absl::Status CheckWrittenName(std::string_view text, std::string_view kind, std::string_view file) {
  if (text.empty() || text.size() > kMaxNameBytes) {
    return absl::InvalidArgumentError(StrCat(file, ": ", kind, " of ", text.size(), " bytes (\"",
                                             Escaped(text.substr(0, 64)), text.size() > 64 ? "...\"" : "\"",
                                             "); names are 1..", kMaxNameBytes, " bytes"));
  }
  if (text.find('\0') != std::string_view::npos) {
    return absl::InvalidArgumentError(StrCat(file, ": ", kind, " \"", Escaped(text), "\" contains a NUL byte"));
  }
  if (auto bad = FirstNonUtf8Byte(text)) {
    return absl::InvalidArgumentError(StrCat(file, ": ", kind, " \"", Escaped(text), "\" is not valid UTF-8 (byte ",
                                             *bad, ")"));
  }
  return absl::OkStatus();
}

absl::Status ValidateAsReader(const std::string& serialized, const std::string& file, uint64_t data_end,
                              bool check_records) {
  // The reader's limits first, as the reader checks them (format/manifest_scan.h).
  BP_RETURN_IF_ERROR(ScanManifestLimits(
      absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(serialized.data()), serialized.size()), file));
  // The reader's parse (format/manifest_stream.h): the head in an arena,
  // then one tensor record at a time.
  const auto bytes = absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(serialized.data()), serialized.size());
  google::protobuf::Arena arena;
  v1::Manifest& m = *google::protobuf::Arena::CreateMessage<v1::Manifest>(&arena);
  auto tensor_count = ParseManifestHead(bytes, file, &m);
  if (!tensor_count.ok()) {
    return absl::InternalError(StrCat(file, ": the manifest does not parse back as a boltpack.v1.Manifest (a name "
                                            "that is not UTF-8?); nothing written"));
  }
  const std::vector<uint64_t> data_ends = {data_end};
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
        return absl::Status(valid.code(), StrCat(file, ": the reader would refuse tensor \"", Escaped(t.name()),
                                                 "\": ", valid.message()));
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
