// The state of an open Reader, shared by the files that implement it:
// format/reader.cc (open, validation, verification) and
// format/reader_decode.cc (every path from stored bytes to values).
#ifndef BOLTPACK_FORMAT_READER_IMPL_H_
#define BOLTPACK_FORMAT_READER_IMPL_H_

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
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
#include "common/mapped_file.h"

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
  // The validated manifest (a view of the mapping or of the caller's
  // buffer) and where each tensor's record payload lies in it: 8 bytes a
  // tensor here, where a TensorInfo and its heap parts take 450-600. The
  // TensorInfo is built from the record when asked for (TensorAt).
  struct RecordSpan {
    uint32_t offset;  // manifests are at most 256 MiB (common/limits.h)
    uint32_t length;
  };
  absl::Span<const uint8_t> manifest;
  std::vector<RecordSpan> records;
  Metadata metadata;
  std::vector<std::string> required_features;
  std::vector<std::string> missing_features;
  format::NameIndex names;  // tensor name -> index
  std::optional<ElasticManifest> elastic;
  std::vector<ViewInfo> views;  // [0] is "full"
  // Tensors whose every stream is empty, without chunks, and carries the
  // checksum of no bytes: VerifyContainer has nothing to read of them and
  // skips building their TensorInfo (a file of 1M empty tensors: a third of
  // its pass). 1 bit a tensor.
  std::vector<bool> streams_empty;
  // What decodes have checked so far (format/stream_checks.h).
  format::StreamChecks checks;

  absl::Status Load(absl::Span<const uint8_t> bytes, bool allow_siblings);
  // A mapped manifest's pages are dropped every this many bytes read.
  static constexpr size_t kReleaseEvery = size_t{8} << 20;
  size_t tensor_count() const { return records.size(); }
  // Tensor `t` (< tensor_count()), built from its record.
  TensorInfo TensorAt(size_t t) const;
  // A pass over the tensors reads their records again from a mapped
  // manifest: the pages it has passed are dropped every kReleaseEvery bytes,
  // so they do not count in the reader's memory (46 MB for 1M tensors).
  void ReleaseRecordsBefore(uint64_t offset) const;
  // The same, shared: the last few built are kept, since a decode and the
  // calls around it (CanDecode, DecodedBytes, DecodeRows of one row block
  // after another) come back to the same tensor, whose record may hold
  // thousands of chunks.
  std::shared_ptr<const TensorInfo> Tensor(size_t t) const;
  TensorList List() const;
  // Parses, validates and converts the tensors of the manifest whose other
  // fields are `head`, one at a time.
  absl::Status LoadTensors(const v1::Manifest& head, absl::Span<const uint8_t> manifest_bytes, uint64_t tensor_count);
  // The views: their list from the manifest's head, the bytes each reads
  // added up tensor by tensor as they are loaded, the ranges of "full".
  void BeginViews(const v1::Manifest& manifest);
  void AddToViews(const v1::Tensor& tensor);
  void FinishViews();
  std::vector<std::pair<uint64_t, uint64_t>> full_spans;  // per shard, while loading
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
  std::string Where(const TensorInfo& t) const { return StrCat(path, ": tensor ", QuoteForDisplay(t.name)); }
  absl::Span<const uint8_t> Stored(const StreamInfo& s) const {
    return shard_bytes[s.shard].subspan(s.offset, s.length);
  }
  std::string WhereStream(const TensorInfo& t, size_t s) const {
    return StrCat(Where(t), " stream ", QuoteForDisplay(t.streams[s].role));
  }

  // Reader::VerifyStream of tensor `tensor`, whose TensorInfo is `info`.
  // `release`: each chunk's pages leave a mapping once hashed (a whole-file
  // check, which reads each byte once: 16 threads each holding a 134 MB
  // stream's pages kept 2 GB resident).
  absl::Status VerifyStream(size_t tensor, const TensorInfo& info, size_t stream, bool release = false) const;

  // Decoding (format/reader_decode.cc).
  //
  // Each takes tensor `t` as its number and as `info`, its TensorInfo.
  //
  // Checks unit `unit` of stream `s` of tensor `t` (a chunk, or the whole
  // stream when it has none) against its checksum, unless this reader did
  // already or the caller opted out (ReaderOptions::verify_checksums).
  absl::Status CheckUnit(size_t t, const TensorInfo& info, size_t s, uint64_t unit) const;
  // The error for unit `unit` of stream `s` of tensor `t` whose bytes hash
  // to `got`: it names file, tensor, stream and chunk.
  absl::Status ChecksumMismatch(const TensorInfo& info, size_t s, uint64_t unit, uint64_t got) const;
  // Checks that the zstd frames of unit `unit` can hold its raw length
  // before anything that size is allocated (a decompression bomb).
  absl::Status CheckZstdBound(size_t t, const TensorInfo& info, size_t s, uint64_t unit) const;

 ~Impl();

 private:
  // Tensor() keeps the last few TensorInfos each thread built, keyed by this
  // reader's serial number (never reused, unlike its address), so the calls
  // one tensor's work makes (CanDecode, DecodedBytes, Decode, ...) build it
  // once, with no lock: a shared cache's mutex was 7% of a verify of 1M
  // tensors. The destructor drops the destroying thread's entries; another
  // thread's stay until it builds others or exits (ParallelFor's threads
  // end with their call).
  static uint64_t NextSerial();
  const uint64_t serial_ = NextSerial();
};

}  // namespace boltpack

#endif  // BOLTPACK_FORMAT_READER_IMPL_H_
