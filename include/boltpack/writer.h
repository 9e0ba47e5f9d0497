// Writing a .bolt file. Tensors are appended as they are produced (memory
// does not grow with the model); the manifest and footer are written last.
// Output goes to a temporary file in the destination folder, which Finish()
// fsyncs and renames into place; a Writer destroyed before Finish() leaves
// nothing behind.
#ifndef BOLTPACK_WRITER_H_
#define BOLTPACK_WRITER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "boltpack/codec.h"
#include "boltpack/elastic.h"
#include "boltpack/piece_source.h"
#include "boltpack/types.h"

namespace boltpack {

class Reader;

struct WriterOptions {
  // Stream alignment: a power of two, >= 64. 4096 lets engines mmap streams
  // page-aligned.
  uint64_t alignment = 4096;
  // 0 stores streams raw; 1..22 tries zstd at that level on compressible
  // streams and keeps it where it saves at least 1/32 of the bytes.
  int zstd_level = 0;
  // Paths the output must not overwrite (the conversion's inputs).
  std::vector<std::string> inputs;
  std::string writer_name;
  std::vector<std::string> optional_features;
  int threads = 1;
  // Format 1.2 line-prefix checksums (spec/container.md §6.10.1): with an
  // elastic manifest set before the tensors are added (SetElastic), every
  // uncompressed, chunked tensor whose innermost dimension a budget cuts to
  // a prefix gets a checksum per cut and chunk, so `slice` reads and
  // verifies only the bytes such a budget keeps. Makes the file 1.2.
  bool line_prefixes = false;
  // False: no fsync before the rename (`--no-fsync`), as cp: faster, but a
  // crash soon after may leave the output empty or short.
  bool durable = true;
  // True: a skeleton file (`bolt-pack plan`): every stream is a hole of its
  // length, its bytes neither read from the sources nor written, and its
  // checksums (stream, chunk, line prefix) are kSkeletonXxh3, except those
  // a copied stream brings. Everything else (header, padding, manifest,
  // footer) is what the real file would have, so the skeleton's size is the
  // real file's to the byte; it opens with Reader (for planning a slice of
  // it) but no stream in it verifies. Sources are not checked either.
  bool skeleton = false;
  // True: CopyTensor returns before the bytes it copies are written (a
  // thread of the writer writes them while the caller goes on to the next
  // tensor), so the Reader given to CopyTensor must outlive Finish (or the
  // Writer). A write error is returned by a later call or by Finish.
  bool write_behind = false;
  // The tensors the caller means to add, if known (a converter knows its
  // input's): the table of names is sized for them once instead of grown
  // (1M names: rehashing was a tenth of a copy). Only a hint: more or
  // fewer may be added.
  size_t expected_tensors = 0;
  // False: an elastic manifest given to SetElastic plans line prefixes
  // only and is not stored (nor "elastic" declared). A part of a convert
  // spread over machines (`convert --part`) holds some of the tensors,
  // which the manifest's bindings do not all match; `bolt-pack merge`
  // stores it, checked against every tensor.
  bool store_elastic = true;
  // > 0: a multi-file model (spec/container.md §8) whose files are at most
  // this many bytes: the path given holds the manifest alone (shard 0), the
  // streams go in order to siblings `<stem>-1.boltshard`, `-2`, ... beside
  // it, a new one started when the next stream would not fit. A stream is
  // never split: one larger than the limit goes alone into a sibling of its
  // own, which is then larger. Finish fails if the manifest itself does not
  // fit. Every sibling is written and fsynced before shard 0 gets its name
  // (and none is named if the write fails or the Writer is destroyed
  // first); after the commit, siblings `-<N+1>.boltshard`, ... left by an
  // earlier write of more shards under this name are removed. Each sibling
  // holds two file descriptors until Finish. 0: one file.
  uint64_t shard_max_bytes = 0;
};

// The checksum a skeleton file gives every stream, chunk and line prefix
// it computes (WriterOptions::skeleton): not zero, so that it takes the
// bytes in the manifest a real checksum takes (a real one is 0 once in 2^64).
inline constexpr uint64_t kSkeletonXxh3 = 0x4e4f544441544121ull;  // "!ATADTON"

class Writer {
 public:
  static absl::StatusOr<std::unique_ptr<Writer>> Create(const std::string& path,
                                                        const WriterOptions& options = {});
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  // The value is serialized at once (not kept): a caller's packed array is
  // not copied.
  absl::Status AddMetadata(std::string key, const MetaValue& value);
  absl::Status AddTensor(std::string name, std::vector<uint64_t> shape, DType dtype,
                         std::string codec_id, EncodedTensor encoded);
  // Copies a tensor's stored streams (compressed or not, any codec, known or
  // not) from `reader` without decoding them.
  absl::Status CopyTensor(const Reader& reader, size_t tensor, std::string new_name = {});
  // Adds a tensor from stream bytes that are already in stored form (not
  // compressed), for pass-through imports such as GGUF blocks. The codec id
  // need not be registered: such a tensor is copied, listed and exported but
  // not decoded; when it is registered, the record must pass its
  // ValidateRecord. `info` gives name, shape, dtype, codec id and params and,
  // per stream, the role (and optional chunks); offsets, lengths and
  // checksums are filled in. `streams[k]` are the bytes of info.streams[k].
  absl::Status AddStoredTensor(TensorInfo info, const std::vector<absl::Span<const uint8_t>>& streams);
  // The same with each stream's bytes handed over in pieces, so a stream is
  // written without being held whole (bolt-pack slice: runs of the input's
  // mapping). `streams[k]->size()` is the length of info.streams[k].
  absl::Status AddStoredTensor(TensorInfo info, const std::vector<PieceSource*>& streams);
  // The same, writing behind: returns once every piece is fetched, checked
  // and hashed (the tensor's record is complete) while a thread of the
  // writer still writes the last ones, so the next tensor's reads overlap
  // these writes. The writer keeps each source until its bytes are
  // written; memory the pieces point into that a source does not own (a
  // Reader's mapping) must outlive Finish (or the Writer). A write error
  // is returned by a later call or by Finish.
  absl::Status AddStoredTensorBehind(TensorInfo info, const std::vector<std::shared_ptr<PieceSource>>& streams);
  // Stores an elastic manifest (format 1.1, spec/elastic.md) and declares the
  // optional feature "elastic". It is validated against the tensors at
  // Finish(), which fails if it does not fit them. Set it before adding
  // tensors for WriterOptions::line_prefixes. A manifest of version 2
  // (grouped axes, segmented dimensions, product dimensions "A*B") makes
  // the file format 1.2; set
  // ElasticManifest::version to RequiredVersion().
  absl::Status SetElastic(const ElasticManifest& elastic);
  // Writes the manifest and footer, fsyncs and renames into place.
  absl::Status Finish();

  struct Impl;

 private:
  explicit Writer(std::unique_ptr<Impl> impl);
  // AddStoredTensor and AddStoredTensorBehind of pieces; `behind` empty or one owner per stream.
  absl::Status AddStored(TensorInfo info, const std::vector<PieceSource*>& streams,
                         const std::vector<std::shared_ptr<PieceSource>>& behind);
  std::unique_ptr<Impl> impl_;
};

// Encodes `source` with the registered codec `codec_id`.
absl::StatusOr<EncodedTensor> EncodeTensor(std::string_view codec_id, const TensorSource& source,
                                           const CodecParams& params, const ExecOptions& exec);

}  // namespace boltpack

#endif  // BOLTPACK_WRITER_H_
