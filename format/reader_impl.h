// The state of an open Reader, shared by the files that implement it:
// format/reader.cc (open, validation, verification) and
// format/reader_decode.cc (every path from stored bytes to values).
#ifndef BOLTPACK_FORMAT_READER_IMPL_H_
#define BOLTPACK_FORMAT_READER_IMPL_H_

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/escaping.h"
#include "absl/types/span.h"
#include "boltpack/reader.h"
#include "boltpack_proto/boltpack.pb.h"
#include "common/escape.h"
#include "common/str_cat.h"
#include "format/layout.h"
#include "format/name_index.h"
#include "format/stream_checks.h"
#include "io/mapped_file.h"

namespace boltpack {

struct Reader::Impl {
  std::string path;
  ReaderOptions options;
  std::unique_ptr<io::MappedFile> file;
  std::vector<std::unique_ptr<io::MappedFile>> sibling_files;
  std::vector<absl::Span<const uint8_t>> shard_bytes;  // [0] is this file
  std::vector<uint64_t> shard_data_end;
  format::Header header;
  format::Footer footer;
  std::string writer;
  std::vector<TensorInfo> tensors;
  Metadata metadata;
  std::vector<std::string> required_features;
  std::vector<std::string> missing_features;
  format::NameIndex names;  // tensor name -> index
  std::optional<ElasticManifest> elastic;
  std::vector<ViewInfo> views;  // [0] is "full"
  // What decodes have checked so far (format/stream_checks.h).
  format::StreamChecks checks;

  absl::Status Load(absl::Span<const uint8_t> bytes, bool allow_siblings);
  // Parses, validates and converts the tensors of the manifest whose other
  // fields are `head`, one at a time.
  absl::Status LoadTensors(const v1::Manifest& head, absl::Span<const uint8_t> manifest_bytes, uint64_t tensor_count);
  void LoadViews(const v1::Manifest& manifest);
  // The view named `name` ("" is "full"), or NOT_FOUND naming the file's views.
  absl::StatusOr<const ViewInfo*> FindView(std::string_view name) const {
    if (name.empty()) return &views[0];
    for (const auto& v : views) {
      if (v.name == name) return &v;
    }
    std::string known;
    for (const auto& v : views) known += StrCat(known.empty() ? "" : ", ", v.name);
    return absl::NotFoundError(StrCat(path, ": no view \"", absl::CHexEscape(absl::string_view(name.data(), name.size())),
                                      "\" (the file has: ", known, ")"));
  }
  std::string Where(size_t t) const { return StrCat(path, ": tensor ", QuoteForDisplay(tensors[t].name)); }
  absl::Span<const uint8_t> Stored(const StreamInfo& s) const {
    return shard_bytes[s.shard].subspan(s.offset, s.length);
  }
  std::string WhereStream(size_t t, size_t s) const {
    return StrCat(Where(t), " stream ", QuoteForDisplay(tensors[t].streams[s].role));
  }

  // Decoding (format/reader_decode.cc).
  //
  // Checks unit `unit` of stream `s` of tensor `t` (a chunk, or the whole
  // stream when it has none) against its checksum, unless this reader did
  // already or the caller opted out (ReaderOptions::verify_checksums).
  absl::Status CheckUnit(size_t t, size_t s, uint64_t unit) const;
  // The error for unit `unit` of stream `s` of tensor `t` whose bytes hash
  // to `got`: it names file, tensor, stream and chunk.
  absl::Status ChecksumMismatch(size_t t, size_t s, uint64_t unit, uint64_t got) const;
  // Checks that the zstd frames of unit `unit` can hold its raw length
  // before anything that size is allocated (a decompression bomb).
  absl::Status CheckZstdBound(size_t t, size_t s, uint64_t unit) const;
};

}  // namespace boltpack

#endif  // BOLTPACK_FORMAT_READER_IMPL_H_
