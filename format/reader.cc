#include "boltpack/reader.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <mutex>
#include <optional>

#include "absl/strings/str_format.h"
#include "google/protobuf/arena.h"
#include "boltpack/codec_registry.h"
#include "boltpack_proto/boltpack.pb.h"
#include "common/checked_math.h"
#include "common/checksum_status.h"
#include "common/parallel_for.h"
#include "common/status_macros.h"
#include "format/elastic_manifest.h"
#include "format/elastic_validate.h"
#include "format/layout.h"
#include "format/line_prefix.h"
#include "common/limits.h"
#include "format/manifest_convert.h"
#include "format/manifest_scan.h"
#include "format/manifest_stream.h"
#include "format/manifest_validate.h"
#include "format/metadata_wire.h"
#include "format/part_shard.h"
#include "format/record_shape.h"
#include "format/reader_impl.h"
#include "common/mapped_file.h"

namespace boltpack {



absl::Status Reader::Impl::Load(absl::Span<const uint8_t> bytes, bool allow_siblings) {
  constexpr uint64_t kMinFile = format::kHeaderSize + format::kFooterSize;
  // Exactly the pages open reads (io::AdviseWillNeed): a first fault on the
  // header made the kernel read the next 12 MB of tensor data ahead, which a
  // reader of a few rows never needs.
  io::AdviseWillNeed(bytes.first(std::min<uint64_t>(bytes.size(), format::kHeaderSize)));
  io::AdviseWillNeed(bytes.last(std::min<uint64_t>(bytes.size(), format::kFooterSize)));
  BP_ASSIGN_OR_RETURN(header, format::ParseHeader(bytes, path));
  if (bytes.size() < kMinFile) {
    // [C-4.2.1]
    return absl::DataLossError(StrCat(path, ": truncated (", bytes.size(), " bytes, no room for a footer)"));
  }
  BP_ASSIGN_OR_RETURN(footer, format::ParseFooter(bytes.subspan(bytes.size() - format::kFooterSize), path));
  if (footer.file_size != bytes.size()) {
    // [C-4.2.5]
    return absl::DataLossError(StrCat(path, ": the file has ", bytes.size(), " bytes but its footer says ",
                                            footer.file_size, " (truncated or appended to)"));
  }
  if (footer.file_id != header.file_id) {
    // [C-4.2.6]
    return absl::DataLossError(StrCat(path, ": header and footer belong to different writes (file_id differs)"));
  }
  if (footer.format_major != header.format_major || footer.format_minor != header.format_minor) {
    // [C-4.2.7]
    return absl::DataLossError(StrCat(path, ": header and footer disagree on the format version"));
  }
  uint64_t max_manifest = std::min(options.max_manifest_bytes, format::kMaxManifestBytes);
  if (footer.manifest_length > max_manifest) {
    // [C-4.2.8] [C-9.2]
    return absl::ResourceExhaustedError(StrCat(path, ": manifest of ", footer.manifest_length,
                                                     " bytes exceeds the limit of ", max_manifest, " (spec C-9.2)"));
  }
  auto manifest_end = CheckedAdd(footer.manifest_offset, footer.manifest_length);
  if (footer.manifest_offset < format::kHeaderSize || !manifest_end ||
      *manifest_end != bytes.size() - format::kFooterSize) {
    // [C-4.2.9]
    return absl::DataLossError(StrCat(path, ": manifest [", footer.manifest_offset, ", +",
                                            footer.manifest_length, ") does not end where the footer starts"));
  }
  auto manifest_bytes = bytes.subspan(footer.manifest_offset, footer.manifest_length);
  io::AdviseWillNeed(manifest_bytes);
  if (format::Xxh3(manifest_bytes) != footer.manifest_xxh3) {
    // [C-4.2.10]
    return ChecksumMismatchError(StrCat(path, ": manifest checksum mismatch"));
  }
  BP_RETURN_IF_ERROR(format::ScanManifestLimits(manifest_bytes, path));  // before parsing builds anything
  // Every field but the tensors, then the tensors one at a time into one
  // reused message (format/manifest_stream.h), each validated and
  // converted before the next is parsed: the whole protobuf tree of a
  // large manifest never exists. An arena holds the head (metadata can be
  // millions of values): one allocation pattern, freed at once.
  google::protobuf::Arena arena;
  v1::Manifest& manifest = *google::protobuf::Arena::CreateMessage<v1::Manifest>(&arena);
  format::MetadataWire metadata_wire;
  // [C-4.2.11] [C-6.1.2]
  BP_ASSIGN_OR_RETURN(const uint64_t tensor_count,
                      format::ParseManifestHead(manifest_bytes, path, &manifest, &metadata_wire));
  if (manifest.format_minor() != header.format_minor) {
    // [C-6.2.2]
    return absl::DataLossError(StrCat(path, ": manifest format_minor disagrees with the header"));
  }
  if (manifest.alignment() != header.alignment) {
    // [C-6.2.5] [C-3.1.4]
    return absl::DataLossError(StrCat(path, ": manifest alignment disagrees with the header"));
  }
  BP_RETURN_IF_ERROR(format::ValidateShards(manifest, path, header.file_id));
  shard_bytes = {bytes};
  shard_data_end = {footer.manifest_offset};
  if (manifest.shards_size() > 1) {
    if (!allow_siblings) {
      // [C-8.3.5]
      return absl::FailedPreconditionError(StrCat(path, ": a multi-file model cannot be opened from a buffer"));
    }
    std::string dir = path.substr(0, path.find_last_of('/') + 1);
    for (int k = 1; k < manifest.shards_size(); ++k) {
      const auto& shard = manifest.shards(k);
      std::string shard_path = dir + shard.file_name();
      // [C-8.3.1]
      BP_ASSIGN_OR_RETURN(auto f, io::MappedFile::Open(shard_path));
      // [C-8.3.2]
      BP_ASSIGN_OR_RETURN(auto h, format::ParseHeader(f->bytes(), shard_path));
      // [C-8.3.3]
      if (h.file_id != shard.file_id() || f->size() != shard.size()) {
        return absl::DataLossError(StrCat(shard_path, ": is not the shard ", path, " names (file_id or size differ)"));
      }
      uint64_t data_end = f->size();
      if (shard.data_end() != 0) {
        // [C-8.5.3] [C-8.5.4]
        BP_ASSIGN_OR_RETURN(data_end, format::CheckPartShard(f->bytes(), h, shard, shard_path));
      }
      shard_bytes.push_back(f->bytes());
      shard_data_end.push_back(data_end);
      sibling_files.push_back(std::move(f));
    }
  }
  // Metadata straight from the wire into packed values (format/metadata_wire.h).
  BP_RETURN_IF_ERROR(format::ReadMetadataWire(metadata_wire, path, &metadata));
  BeginViews(manifest);
  BP_RETURN_IF_ERROR(LoadTensors(manifest, manifest_bytes, tensor_count));
  required_features.assign(manifest.required_features().begin(), manifest.required_features().end());
  for (const auto& f : required_features) {
    // [C-5.3.2]
    if (!format::IsKnownFeature(f)) missing_features.push_back(f);
  }
  writer = manifest.writer();
  if (manifest.has_elastic()) elastic = format::ElasticFromProto(manifest.elastic());
  return FindView(options.view).status();
}

absl::Status Reader::Impl::LoadTensors(const v1::Manifest& head, absl::Span<const uint8_t> manifest_bytes,
                                       uint64_t tensor_count) {
  format::ManifestValidator validator(head, path, shard_data_end);
  BP_RETURN_IF_ERROR(validator.Begin(tensor_count));
  manifest = manifest_bytes;
  records.reserve(tensor_count);
  streams_empty.reserve(tensor_count);
  const uint64_t kEmptyXxh3 = format::Xxh3({});
  checks.Begin(tensor_count);
  // The elastic manifest is checked against the converted records, which
  // only a file that has one builds all at once.
  std::vector<TensorInfo> elastic_tensors;
  // A mapped manifest's pages are read once here: dropped as the parse
  // passes them, they do not count in the reader's memory (a tensor's record
  // read again later comes back from the page cache).
  const uint8_t* released = manifest_bytes.data();
  if (file != nullptr) io::ReleaseMappedPages(manifest_bytes);  // read by the checksum and the scan
  BP_RETURN_IF_ERROR(format::ForEachValidTensor(
      manifest_bytes, path, validator,
      [&](const v1::Tensor& record, const format::TensorChunks& chunks, absl::Span<const uint8_t> bytes) {
        records.push_back({static_cast<uint32_t>(bytes.data() - manifest_bytes.data()),
                           static_cast<uint32_t>(bytes.size())});
        checks.Add(chunks.counts);
        streams_empty.push_back(std::all_of(record.streams().begin(), record.streams().end(), [&](const v1::Stream& s) {
          return s.length() == 0 && s.xxh3() == kEmptyXxh3;
        }) && std::all_of(chunks.counts.begin(), chunks.counts.end(), [](uint64_t n) { return n == 0; }));
        AddToViews(record);
        // A tensor of many chunks can be most of the manifest: its pages go
        // as its chunks are converted too.
        auto release_up_to = [&](const uint8_t* read) {
          if (file != nullptr && read - released > static_cast<ptrdiff_t>(kReleaseEvery)) {
            io::ReleaseMappedPages({released, static_cast<size_t>(read - released)});
            released = read;
          }
        };
        if (file != nullptr && bytes.size() > kReleaseEvery) io::ReleaseMappedPages(bytes);  // read by the validation
        if (head.has_elastic()) elastic_tensors.push_back(format::TensorFromWire(record, chunks, release_up_to));
        release_up_to(bytes.data());
        return absl::OkStatus();
      }));
  if (file != nullptr) io::ReleaseMappedPages(manifest_bytes);
  checks.Finish();
  FinishViews();
  if (head.has_elastic()) {
    BP_RETURN_IF_ERROR(format::ValidateElasticOf(head.elastic(), elastic_tensors, path));  // format 1.1, spec/elastic.md
  }
  names = std::move(validator.names());
  return absl::OkStatus();
}

namespace {
// ViewReadsStream of a stream record.
bool ViewReadsStreamRecord(std::string_view view, const v1::Stream& s) {
  if (s.views().empty()) return true;
  return std::find(s.views().begin(), s.views().end(), view) != s.views().end();
}
}  // namespace

void Reader::Impl::BeginViews(const v1::Manifest& manifest) {
  // Validated: declared views are unique, not "full", and their ranges match
  // their streams. "full" reads every stream; its ranges are computed.
  ViewInfo full;
  full.name = "full";
  full.description = "every stream: every original bit";
  views.push_back(std::move(full));
  full_spans.assign(shard_bytes.size(), {~0ull, 0});
  for (const auto& v : manifest.views()) {
    ViewInfo info;
    info.name = v.name();
    info.description = v.description();
    for (const auto& r : v.ranges()) info.ranges.push_back({r.shard(), r.offset(), r.length()});
    views.push_back(std::move(info));
  }
}

void Reader::Impl::AddToViews(const v1::Tensor& tensor) {
  for (const auto& st : tensor.streams()) {
    for (size_t v = 1; v < views.size(); ++v) {
      if (ViewReadsStreamRecord(views[v].name, st)) views[v].bytes += st.length();
    }
    if (st.length() == 0) continue;
    views[0].bytes += st.length();
    auto& span = full_spans[st.shard()];
    span.first = std::min(span.first, st.offset());
    span.second = std::max(span.second, st.offset() + st.length());
  }
}

void Reader::Impl::FinishViews() {
  for (size_t k = 0; k < full_spans.size(); ++k) {
    if (full_spans[k].first < full_spans[k].second) {
      views[0].ranges.push_back({static_cast<uint32_t>(k), full_spans[k].first, full_spans[k].second - full_spans[k].first});
    }
  }
  full_spans = {};
}

TensorInfo Reader::Impl::TensorAt(size_t t) const {
  const auto payload = manifest.subspan(records[t].offset, records[t].length);
  if (file != nullptr) ReleaseRecordsBefore(records[t].offset);
  if (file == nullptr || payload.size() <= kReleaseEvery) return format::TensorFromRecord(payload);
  // A record of many chunks (it can be most of the manifest): its pages
  // leave the address space as they are read, as at open.
  const uint8_t* released = payload.data();
  return format::TensorFromRecord(
      payload, [&] { io::ReleaseMappedPages(payload); },
      [&](const uint8_t* read) {
        if (read - released > static_cast<ptrdiff_t>(kReleaseEvery)) {
          io::ReleaseMappedPages({released, static_cast<size_t>(read - released)});
          released = read;
        }
      });
}

void Reader::Impl::ReleaseRecordsBefore(uint64_t offset) const {
  // Each thread drops what it has passed itself: a shared mark bounced
  // between the ranges of a parallel pass (ParallelFor's threads start far
  // apart), and each thread dropped the pages just ahead of the other's
  // (1.9 s of system time of a 2-thread verify of 1M tensors, 0.05 s on
  // one thread). A stale mark of an earlier reader at the same address at
  // worst drops pages read again from the page cache.
  thread_local const Impl* owner = nullptr;
  thread_local uint64_t from = 0;
  if (owner != this) owner = this, from = offset;
  if (offset < from) {
    from = offset;  // a new pass from an earlier tensor
  } else if (offset - from > kReleaseEvery) {
    io::ReleaseMappedPages(manifest.subspan(from, offset - from));
    from = offset;
  }
}

namespace {
struct CachedTensor {
  uint64_t reader = 0;  // Impl serial numbers start at 1
  size_t index = 0;
  std::shared_ptr<const TensorInfo> info;
};
// A thread's cache. A reader may outlive it: one held by a static object
// is destroyed at exit after the main thread's thread_local objects, so
// the cache marks its end in a flag of trivial type, which stays readable
// until the thread's storage goes, and is bypassed from then on.
thread_local bool tensor_cache_gone = false;
struct TensorCache {
  static constexpr size_t kSize = 4;
  std::array<CachedTensor, kSize> entries;
  size_t next = 0;
  ~TensorCache() { tensor_cache_gone = true; }
};
thread_local TensorCache tensor_cache;
}  // namespace

uint64_t Reader::Impl::NextSerial() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

Reader::Impl::~Impl() {
  if (tensor_cache_gone) return;
  for (CachedTensor& c : tensor_cache.entries) {
    if (c.reader == serial_) c = CachedTensor{};
  }
}

std::shared_ptr<const TensorInfo> Reader::Impl::Tensor(size_t t) const {
  if (tensor_cache_gone) return std::make_shared<const TensorInfo>(TensorAt(t));
  TensorCache& cache = tensor_cache;
  for (const CachedTensor& c : cache.entries) {
    if (c.reader == serial_ && c.index == t) return c.info;
  }
  auto info = std::make_shared<const TensorInfo>(TensorAt(t));
  cache.entries[cache.next] = {serial_, t, info};
  cache.next = (cache.next + 1) % TensorCache::kSize;
  return info;
}

TensorList Reader::Impl::List() const {
  return TensorList(this, tensor_count(),
                    [](const void* impl, size_t t) { return static_cast<const Impl*>(impl)->TensorAt(t); });
}

bool ViewReadsStream(std::string_view view, const StreamInfo& s) {
  if (view.empty() || view == "full" || s.views.empty()) return true;
  return std::find(s.views.begin(), s.views.end(), view) != s.views.end();
}

Reader::Reader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Reader::~Reader() = default;

absl::StatusOr<std::unique_ptr<Reader>> Reader::Open(const std::string& path, const ReaderOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  impl->options = options;
  BP_ASSIGN_OR_RETURN(impl->file, io::MappedFile::Open(path));
  BP_RETURN_IF_ERROR(impl->Load(impl->file->bytes(), /*allow_siblings=*/true));
  return std::unique_ptr<Reader>(new Reader(std::move(impl)));
}

absl::StatusOr<std::unique_ptr<Reader>> Reader::OpenBuffer(absl::Span<const uint8_t> bytes,
                                                           std::string display_name,
                                                           const ReaderOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->path = std::move(display_name);
  impl->options = options;
  BP_RETURN_IF_ERROR(impl->Load(bytes, /*allow_siblings=*/false));
  return std::unique_ptr<Reader>(new Reader(std::move(impl)));
}

const std::string& Reader::path() const { return impl_->path; }

absl::StatusOr<std::string> Reader::ShardPath(uint32_t shard) const {
  if (shard == 0) return impl_->path;
  if (shard > impl_->sibling_files.size()) {
    return absl::OutOfRangeError(StrCat(impl_->path, ": no shard #", shard));
  }
  return impl_->sibling_files[shard - 1]->path();
}
FormatVersion Reader::version() const { return {impl_->header.format_major, impl_->header.format_minor}; }
bool Reader::mapped() const { return impl_->file != nullptr; }
void Reader::ReleaseManifestPages() const {
  if (impl_->file != nullptr) io::ReleaseMappedPages(impl_->manifest);
}
uint64_t Reader::file_size() const { return impl_->shard_bytes[0].size(); }
uint64_t Reader::alignment() const { return impl_->header.alignment; }
const std::string& Reader::writer() const { return impl_->writer; }
const std::vector<std::string>& Reader::required_features() const { return impl_->required_features; }
const std::vector<std::string>& Reader::missing_features() const { return impl_->missing_features; }
const Metadata& Reader::metadata() const { return impl_->metadata; }
TensorList Reader::tensors() const { return impl_->List(); }
std::shared_ptr<const TensorInfo> Reader::SharedTensor(size_t tensor) const { return impl_->Tensor(tensor); }

const std::vector<ViewInfo>& Reader::views() const { return impl_->views; }
const std::string& Reader::view() const { return impl_->options.view; }

absl::StatusOr<uint64_t> Reader::ViewBytes(std::string_view view) const {
  BP_ASSIGN_OR_RETURN(const ViewInfo* v, impl_->FindView(view));
  return v->bytes;
}

const ElasticManifest* Reader::elastic() const { return impl_->elastic ? &*impl_->elastic : nullptr; }

std::string_view Reader::TensorName(size_t tensor) const { return impl_->names.Name(tensor); }

DType Reader::TensorShape(size_t tensor, std::vector<uint64_t>* shape) const {
  const auto& r = impl_->records[tensor];
  if (impl_->file != nullptr) impl_->ReleaseRecordsBefore(r.offset);  // a pass over the tensors, as TensorAt
  return format::ShapeFromRecord(impl_->manifest.subspan(r.offset, r.length), shape);
}

std::string Reader::TensorCodec(size_t tensor, uint64_t* stored_bytes) const {
  const auto& r = impl_->records[tensor];
  if (impl_->file != nullptr) impl_->ReleaseRecordsBefore(r.offset);
  return format::CodecFromRecord(impl_->manifest.subspan(r.offset, r.length), stored_bytes);
}

std::optional<size_t> Reader::FindTensor(std::string_view name) const {
  return impl_->names.Find(name);
}

absl::StatusOr<absl::Span<const uint8_t>> Reader::StoredStream(size_t tensor, size_t stream) const {
  if (tensor >= impl_->tensor_count()) return absl::OutOfRangeError(StrCat(impl_->path, ": no tensor #", tensor));
  const auto info = impl_->Tensor(tensor);
  if (stream >= info->streams.size()) {
    return absl::OutOfRangeError(StrCat(impl_->Where(*info), ": no stream #", stream));
  }
  return impl_->Stored(info->streams[stream]);
}

absl::Status Reader::VerifyStream(size_t tensor, size_t stream) const {
  if (tensor >= impl_->tensor_count()) return absl::OutOfRangeError(StrCat(impl_->path, ": no tensor #", tensor));
  return impl_->VerifyStream(tensor, *impl_->Tensor(tensor), stream);
}

absl::Status Reader::Impl::VerifyStream(size_t tensor, const TensorInfo& info, size_t stream, bool release) const {
  if (stream >= info.streams.size()) return absl::OutOfRangeError(StrCat(Where(info), ": no stream #", stream));
  const StreamInfo& s = info.streams[stream];
  const auto bytes = Stored(s);
  // Built only for an error: 1M streams that pass spent 5% of a verify on it.
  auto where = [&] { return StrCat(Where(info), " stream \"", s.role, "\""); };
  // One pass over the bytes: each block, while it is in cache, feeds the
  // stream's checksum, its chunk's and the chunk's line-prefix checksums
  // (chunks tile the stream: ValidateManifest), so a stream is read from
  // memory once, not once per kind of checksum. The stream's own checksum
  // is reported first, then the first chunk that does not match.
  constexpr uint64_t kBlockBytes = uint64_t{256} << 10;  // well inside a core's L2
  // Only a stream of chunks is hashed by parts (a stream's state is an
  // aligned allocation: one per stream was 9% of verifying 1M empty ones).
  std::optional<Xxh3Stream> whole;
  if (!s.chunks.empty()) whole.emplace();
  std::string chunk_error;
  for (size_t k = 0; k < s.chunks.size(); ++k) {
    const auto& c = s.chunks[k];
    auto chunk = bytes.subspan(c.stored_offset, c.stored_length);
    Xxh3Stream chunk_hash;
    std::optional<format::LinePrefixHasher> prefixes;
    if (!s.prefix_bytes.empty()) prefixes.emplace(s.line_bytes, s.prefix_bytes);
    for (uint64_t at = 0; at < chunk.size(); at += kBlockBytes) {
      auto block = chunk.subspan(at, kBlockBytes);
      whole->Update(block);
      if (!chunk_error.empty()) continue;  // only the stream's checksum is still needed
      chunk_hash.Update(block);
      if (prefixes) prefixes->Update(block);
    }
    if (release && file != nullptr) io::ReleaseMappedPages(chunk);  // a mapping, not caller memory
    if (!chunk_error.empty()) continue;
    if (chunk_hash.Digest() != c.xxh3) {
      chunk_error = StrCat(where(), ": chunk ", k, " checksum mismatch");
      continue;
    }
    if (!prefixes) continue;
    std::vector<uint64_t> digests = prefixes->Finish();
    for (size_t p = 0; p < digests.size() && chunk_error.empty(); ++p) {
      if (digests[p] != s.ChunkPrefixXxh3(k)[p]) {
        // [C-6.10.1.9] [C-7.4.1]
        chunk_error = StrCat(where(), ": chunk ", k, " line-prefix checksum mismatch (prefix ", p, ": the first ",
                             s.prefix_bytes[p], " bytes of each ", s.line_bytes, "-byte line)");
      }
    }
  }
  const uint64_t computed = s.chunks.empty() ? format::Xxh3(bytes) : whole->Digest();
  if (computed != s.xxh3) {
    return ChecksumMismatchError(absl::StrFormat("%s: checksum mismatch (manifest %016x, data %016x)", where(), s.xxh3, computed));
  }
  if (!chunk_error.empty()) return ChecksumMismatchError(chunk_error);
  for (uint64_t u = 0; u < format::StreamChecks::Units(s); ++u) {
    checks.Mark(tensor, stream, u, format::StreamChecks::kChecksum);
  }
  return absl::OkStatus();
}

absl::Status Reader::VerifyContainer(const ExecOptions& exec) const {
  // One pass over the tensors, in parallel, builds each TensorInfo once:
  // it checks the checksums of its streams and gathers their extents for
  // the padding check after it (each pass built every tensor once more).
  // Errors come as before: a padding error first, then the first checksum
  // failure in file order.
  using Extents = std::vector<std::pair<uint64_t, uint64_t>>;
  std::vector<Extents> extents(impl_->shard_bytes.size());
  std::mutex mu;  // guards extents and the first failure
  size_t failed_at = impl_->tensor_count();
  absl::Status failure;
  (void)ParallelFor(impl_->tensor_count(), exec.threads, 1, [&](uint64_t a, uint64_t b) -> absl::Status {
    std::vector<Extents> found(extents.size());
    for (uint64_t t = a; t < b; ++t) {
      if (impl_->streams_empty[t]) continue;  // VerifyStream would hash no bytes
      const TensorInfo info = impl_->TensorAt(t);
      for (size_t s = 0; s < info.streams.size(); ++s) {
        const StreamInfo& st = info.streams[s];
        if (st.length > 0) found[st.shard].emplace_back(st.offset, st.offset + st.length);
        absl::Status checked = impl_->VerifyStream(t, info, s, /*release=*/true);
        if (mapped()) io::ReleaseMappedPages(impl_->Stored(st));
        if (!checked.ok()) {
          std::lock_guard<std::mutex> lock(mu);
          if (t < failed_at) failed_at = t, failure = std::move(checked);
          break;  // its later streams, as before: the tensor's first failure
        }
      }
    }
    std::lock_guard<std::mutex> lock(mu);
    for (size_t k = 0; k < found.size(); ++k) extents[k].insert(extents[k].end(), found[k].begin(), found[k].end());
    return absl::OkStatus();
  });
  // Padding: every byte of each shard's data section that no stream covers
  // must be zero, so that no byte of the file goes unchecked.
  for (size_t shard = 0; shard < impl_->shard_bytes.size(); ++shard) {
    auto& ex = extents[shard];
    std::sort(ex.begin(), ex.end());
    ex.emplace_back(impl_->shard_data_end[shard], impl_->shard_data_end[shard]);
    uint64_t pos = format::kHeaderSize;
    auto bytes = impl_->shard_bytes[shard];
    for (const auto& [begin, end] : ex) {
      for (uint64_t i = pos; i < begin; ++i) {
        if (bytes[i] != 0) {
          // [C-7.2.2]
          return absl::DataLossError(StrCat(shard == 0 ? impl_->path : impl_->sibling_files[shard - 1]->path(),
                                                  ": padding byte at offset ", i, " is not zero"));
        }
      }
      pos = std::max(pos, end);
    }
    Extents().swap(ex);
  }
  return failure;
}

}  // namespace boltpack
