// Reading a .bolt file: mmap, validate everything before use, list tensors,
// hand out zero-copy spans of stored streams, decode into caller buffers.
#ifndef BOLTPACK_READER_H_
#define BOLTPACK_READER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "boltpack/codec.h"
#include "boltpack/elastic.h"
#include "boltpack/tensor_info.h"
#include "boltpack/tensor_list.h"
#include "boltpack/types.h"

namespace boltpack {

struct ReaderOptions {
  // Refuse manifests larger than this (the spec's limit is the maximum).
  uint64_t max_manifest_bytes = 256ull << 20;
  // Every decode (Decode, DecodeRows, DecodeRowRanges, ReadRawStream, and
  // whatever is built on them: budgets, the C API, the CLI) checks the bytes
  // it reads against their checksums before using them: each chunk, or each
  // stream that has no chunks, the first time this reader reads it; a
  // mismatch is DATA_LOSS naming the file, tensor, stream and chunk. Turn it
  // off only for a file verified before (e.g. by `bolt-pack verify`) that
  // cannot have changed since. Zero-copy spans (StoredStream, budget views)
  // are never checked: their bytes are the caller's to verify.
  bool verify_checksums = true;
  // A zstd stream may not claim more decompressed bytes than this (a tiny
  // hostile file must not make the reader allocate terabytes).
  uint64_t max_decompressed_stream_bytes = 1ull << 40;
  // The view Decode and DecodeRows read unless told another (spec
  // container.md "Views"): "full" (every stream, every original bit) or a
  // view the file declares, such as "draft". Open fails with NOT_FOUND for a
  // view the file does not declare.
  std::string view = "full";
};

// A contiguous run of bytes of one shard (0: the file holding the manifest).
struct ByteRange {
  uint32_t shard = 0;
  uint64_t offset = 0;
  uint64_t length = 0;
};

// A view of the file: a subset of its streams that a reader may load alone.
struct ViewInfo {
  std::string name;
  std::string description;
  // Per shard holding a stream the view reads: the smallest range covering
  // them all (for a declared view, as recorded and validated; for "full",
  // computed). Nothing the view does not read lies before its range.
  std::vector<ByteRange> ranges;
  // Bytes a reader of this view touches: the sum of the stored lengths of
  // the streams it reads (header, footer, manifest and padding not counted).
  uint64_t bytes = 0;
};

// Whether view `view` reads stream `s` ("" and "full" read every stream;
// another view reads a stream whose list is empty or names it).
bool ViewReadsStream(std::string_view view, const StreamInfo& s);

// Outer rows [begin, end) of a tensor.
struct RowRange {
  uint64_t begin = 0;
  uint64_t end = 0;
};

struct FormatVersion {
  uint32_t major = 0;
  uint32_t minor = 0;
};

class Reader {
 public:
  // Opens and validates the fixed header, the footer, the manifest and the
  // bounds of every stream. Nothing the file says is used unchecked.
  static absl::StatusOr<std::unique_ptr<Reader>> Open(const std::string& path,
                                                      const ReaderOptions& options = {});
  // Same, over bytes the caller keeps alive (single-file models only).
  static absl::StatusOr<std::unique_ptr<Reader>> OpenBuffer(
      absl::Span<const uint8_t> bytes, std::string display_name,
      const ReaderOptions& options = {});
  ~Reader();
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;

  const std::string& path() const;
  // The path of shard `shard` (0: path(), the file holding the manifest);
  // StreamInfo::offset is absolute in that file. OUT_OF_RANGE past the last.
  absl::StatusOr<std::string> ShardPath(uint32_t shard) const;
  // Whether the bytes are a read-only mapping of the file (Open), whose
  // pages a long pass may drop from the address space as it goes (they
  // come back from the page cache if touched again); false over a caller's
  // buffer (OpenBuffer).
  bool mapped() const;
  // Drops the mapped manifest's pages from the address space (a mapped
  // reader; nothing otherwise): a caller that has copied what it needs of
  // the names keeps them out of its resident memory (46 MB for 1M tensors).
  // They come back from the page cache when read again.
  void ReleaseManifestPages() const;
  FormatVersion version() const;
  uint64_t file_size() const;
  uint64_t alignment() const;
  const std::string& writer() const;
  const std::vector<std::string>& required_features() const;
  // Required features this reader does not implement; non-empty means the
  // file can be listed and copied but not decoded.
  const std::vector<std::string>& missing_features() const;
  const Metadata& metadata() const;
  // The tensors in file order, each built from its record when indexed
  // (boltpack/tensor_list.h): a value, not a reference into the reader.
  TensorList tensors() const;
  // Tensor `tensor` (< tensors().size()), built once and shared with the
  // reader's own calls: decodes keep the last few tensors they built, so a
  // caller that holds this while it decodes the tensor holds one TensorInfo,
  // not two (one record can hold millions of chunks).
  std::shared_ptr<const TensorInfo> SharedTensor(size_t tensor) const;
  std::optional<size_t> FindTensor(std::string_view name) const;
  // Tensor `tensor`'s name (< tensors().size()) without building its
  // TensorInfo: a view of the manifest, valid as long as the reader.
  std::string_view TensorName(size_t tensor) const;
  // Tensor `tensor`'s dtype (< tensors().size()), its shape appended to
  // `shape`, read from its record without building its TensorInfo.
  DType TensorShape(size_t tensor, std::vector<uint64_t>* shape) const;
  // Tensor `tensor`'s codec id, and its stored bytes (the sum of its
  // streams' lengths) in `stored_bytes`, read from its record's wire bytes
  // as TensorShape reads its shape: what a listing prints without building
  // the TensorInfo (the same values as tensors()[tensor]).
  std::string TensorCodec(size_t tensor, uint64_t* stored_bytes) const;
  // The elastic manifest (format 1.1, spec/elastic.md), validated against the
  // tensors; nullptr when the file has none.
  const ElasticManifest* elastic() const;

  // The views this file can be read in: "full" first, then the declared ones
  // in manifest order. A file without views has only "full".
  const std::vector<ViewInfo>& views() const;
  // The bytes a reader of `view` touches (ViewInfo::bytes); NOT_FOUND for a
  // view the file does not declare.
  absl::StatusOr<uint64_t> ViewBytes(std::string_view view) const;
  // The view Decode and DecodeRows read by default (ReaderOptions::view).
  const std::string& view() const;

  // Zero-copy view of a stream's stored bytes (compressed if it is). NOT
  // checked against its checksum: call VerifyStream first, or decode.
  absl::StatusOr<absl::Span<const uint8_t>> StoredStream(size_t tensor, size_t stream) const;
  // Copies a stream's raw (decompressed) bytes into `dst`, which must be
  // exactly the stream's raw_length: what a tool needs to move stored codec
  // bytes to another format (GGUF) whatever compression the file used.
  // Checked as a decode is (ReaderOptions::verify_checksums).
  absl::Status ReadRawStream(size_t tensor, size_t stream, absl::Span<uint8_t> dst,
                             const ExecOptions& exec = {}) const;
  // Checks one stream's XXH3-64 (and its chunks', with their line-prefix
  // checksums, format 1.2).
  absl::Status VerifyStream(size_t tensor, size_t stream) const;
  // Everything a byte of the file can break that open does not check:
  // checksums of all streams and chunks (line prefixes included), zero
  // padding, sibling shards. Over a mapped file, each tensor's pages leave
  // the address space once its checksums are checked, so verifying a model
  // keeps resident memory bounded whatever its size (views and decodes
  // afterwards read them back from the page cache).
  absl::Status VerifyContainer(const ExecOptions& exec = {}) const;

  // OK when tensor `t` can be decoded (features known, codec registered,
  // record valid); otherwise the reason.
  absl::Status CanDecode(size_t tensor, OutputType out) const;
  // Bytes a decode of tensor `t` to `out` writes. Fails as CanDecode does,
  // and when a zstd stream cannot hold the raw length its record declares,
  // so a caller may allocate what this returns.
  absl::StatusOr<uint64_t> DecodedBytes(size_t tensor, OutputType out) const;
  // Decodes in the reader's view (ReaderOptions::view).
  absl::Status Decode(size_t tensor, OutputType out, absl::Span<uint8_t> dst,
                      const ExecOptions& exec = {}) const;
  // Decodes as view `view` sees the tensor ("" means "full"; NOT_FOUND for a
  // view the file does not declare). Streams the view does not read are
  // never touched (not mapped in, not checksummed) and reach the codec as
  // empty spans; one reader can serve a draft and a full model at once.
  absl::Status Decode(size_t tensor, std::string_view view, OutputType out, absl::Span<uint8_t> dst,
                      const ExecOptions& exec = {}) const;
  // Decodes outer rows [row_begin, row_end), reading (and checking) only the
  // chunks they lie in.
  absl::Status DecodeRows(size_t tensor, uint64_t row_begin, uint64_t row_end,
                          OutputType out, absl::Span<uint8_t> dst, const ExecOptions& exec = {}) const;
  absl::Status DecodeRows(size_t tensor, std::string_view view, uint64_t row_begin, uint64_t row_end,
                          OutputType out, absl::Span<uint8_t> dst, const ExecOptions& exec = {}) const;
  // Decodes the rows of `ranges`, in their order, back to back into `dst`. Decode and DecodeRows are this with one range: the rows are
  // cut into blocks of whole chunks, each checked and then decoded on one of
  // `exec.threads` threads while its bytes are in cache.
  absl::Status DecodeRowRanges(size_t tensor, std::string_view view, absl::Span<const RowRange> ranges,
                               OutputType out, absl::Span<uint8_t> dst, const ExecOptions& exec = {}) const;

  struct Impl;

 private:
  explicit Reader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace boltpack

#endif  // BOLTPACK_READER_H_
