#include "boltpack/writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <random>
#include <unordered_set>

#include <zstd.h>

#include "absl/functional/function_ref.h"
#include "absl/strings/str_format.h"

#include "common/escape.h"
#include "common/lower_name.h"
#include "common/str_cat.h"
#include "boltpack/codec_registry.h"
#include "boltpack/reader.h"
#include "boltpack_proto/boltpack.pb.h"
#include "codecs/encoded_record.h"
#include "common/checked_math.h"
#include "common/parallel_for.h"
#include "common/piece_copy.h"
#include "common/status_macros.h"
#include "common/xxh3.h"
#include "format/cut_pieces.h"
#include "format/elastic_manifest.h"
#include "format/elastic_validate.h"
#include "format/layout.h"
#include "format/line_prefix.h"
#include "common/limits.h"
#include "format/manifest_convert.h"
#include "format/manifest_validate.h"
#include "format/metadata_wire.h"
#include "format/name_index.h"
#include "format/output_rules.h"
#include "format/stream_checksums.h"
#include "format/tensor_records.h"
#include "common/atomic_file.h"
#include "format/shard_files.h"

namespace boltpack {

namespace {

constexpr std::string_view kFullView = "full";
constexpr uint64_t kCopyBlock = 4u << 20;

// A stream only the "full" view reads: it goes after every other stream
// (spec container.md "Views"), so until Finish its bytes wait in a spill file.
bool FullOnly(const StreamInfo& s) {
  return !s.views.empty() && std::all_of(s.views.begin(), s.views.end(), [](const std::string& v) { return v == kFullView; });
}


absl::Status ErrnoError(const std::string& path, std::string_view what) {
  return absl::InternalError(StrCat(path, ": ", what, ": ", std::strerror(errno)));
}

}  // namespace

struct Writer::Impl {
  WriterOptions options;
  std::unique_ptr<io::AtomicFile> file;
  format::Header header;
  v1::Manifest manifest;  // every field but the tensors
  format::TensorRecords records;
  format::NameIndex tensor_names;
  std::unordered_set<std::string> metadata_keys;
  std::vector<std::string> metadata_wire;  // field-7 entries, serialized as added
  bool uses_zstd = false;
  // The elastic manifest (SetElastic) and its bindings, for line prefixes.
  std::unique_ptr<ElasticManifest> elastic;
  std::unique_ptr<format::BindingIndex> bindings;
  bool uses_line_prefixes = false;
  // Required features of files tensors were copied from (a copied tensor may
  // depend on them), declared again in the output.
  std::vector<std::string> inherited_features;
  bool finished = false;
  // A stream's bytes failed to be written or checked: the file must not be
  // committed.
  bool failed = false;
  // Checks and hashes a stream's parts while they are written.
  std::unique_ptr<SideWorker> side;
  // Views named by streams (besides "full"), in order of first use, with
  // their descriptions; written to Manifest.views at Finish.
  std::vector<std::pair<std::string, std::string>> views;
  // Per entry of `views`, the span [begin, end) of the streams that name it;
  // `every_view` the span of the streams that list no view (read by every
  // view, including those named later).
  // Per shard (the index), so view_spans[v][shard] and every_view[shard].
  std::vector<std::vector<std::pair<uint64_t, uint64_t>>> view_spans;
  std::vector<std::pair<uint64_t, uint64_t>> every_view;
  // WriterOptions::shard_max_bytes: the siblings the streams go to.
  std::unique_ptr<format::ShardFiles> shards;
  uint64_t tensor_names_added = 0;
  // Streams only "full" reads, in the spill file until Finish appends them.
  struct Spilled {
    int tensor;
    int stream;
    uint64_t spill_offset;
    uint64_t length;
    uint64_t xxh3;
  };
  std::vector<Spilled> spilled;
  int spill_fd = -1;
  uint64_t spill_size = 0;

  ~Impl() {
    if (spill_fd >= 0) ::close(spill_fd);
  }

  // Line-prefix fields are the writer's to set: planned from the elastic
  // manifest when WriterOptions::line_prefixes asks, else none.
  void PlanPrefixes(TensorInfo* info) const {
    for (auto& st : info->streams) {
      st.line_bytes = 0;
      st.prefix_bytes.clear();
      st.prefix_xxh3.clear();
    }
    if (!options.line_prefixes || bindings == nullptr) return;
    format::PlanLinePrefixes(info, format::PlanLineCuts(*elastic, *bindings, info->name, info->shape));
  }
  absl::Status CheckOpen() const {
    if (finished) return absl::FailedPreconditionError(StrCat(file->path(), ": writer already finished"));
    if (failed) return absl::FailedPreconditionError(StrCat(file->path(), ": an earlier write failed"));
    return absl::OkStatus();
  }
  absl::Status CheckName(const std::string& name) {
    BP_RETURN_IF_ERROR(format::CheckWrittenName(name, "tensor name", file->path()));
    if (!tensor_names.Insert(name)) {
      // [C-6.3.3]
      return absl::InvalidArgumentError(StrCat(file->path(), ": duplicate tensor name ", QuoteForDisplay(name, 200)));
    }
    ++tensor_names_added;
    if (tensor_names_added > format::kMaxTensors) {
      return absl::ResourceExhaustedError(StrCat(file->path(), ": more than ", format::kMaxTensors, " tensors"));
    }
    return absl::OkStatus();
  }
  // Checks the streams' view lists (names, no repeats, "full" in every
  // non-empty list) and declares the views they name, and "draft" when a
  // stream only "full" reads.
  absl::Status CheckViews(const TensorInfo& info, absl::FunctionRef<std::string()> where,
                          const std::vector<ViewInfo>* source_views = nullptr) {
    std::vector<std::string> fresh;
    for (const auto& s : info.streams) {
      bool full = false;
      for (size_t k = 0; k < s.views.size(); ++k) {
        const std::string& v = s.views[k];
        if (!IsLowerName(v)) {
          // [C-15.1.1]
          return absl::InvalidArgumentError(StrCat(where(), " stream \"", s.role, "\": view name \"", v,
                                                   "\" is not 1..64 bytes of [a-z0-9_-]"));
        }
        if (std::find(s.views.begin(), s.views.begin() + k, v) != s.views.begin() + k) {
          return absl::InvalidArgumentError(StrCat(where(), " stream \"", s.role, "\": view \"", v, "\" listed twice"));
        }
        full |= v == kFullView;
        bool known = v == kFullView || std::find(fresh.begin(), fresh.end(), v) != fresh.end() ||
                     std::any_of(views.begin(), views.end(), [&](const auto& d) { return d.first == v; });
        if (!known) fresh.push_back(v);
      }
      if (!s.views.empty() && !full) {
        return absl::InvalidArgumentError(StrCat(where(), " stream \"", s.role,
                                                 "\": a non-empty view list must include \"full\""));
      }
    }
    // A stream only "full" reads implies the "draft" view: every other
    // stream, the prefix of the file a draft model loads.
    bool full_only = std::any_of(info.streams.begin(), info.streams.end(), FullOnly);
    bool draft_known = std::find(fresh.begin(), fresh.end(), "draft") != fresh.end() ||
                       std::any_of(views.begin(), views.end(), [](const auto& d) { return d.first == "draft"; });
    if (full_only && !draft_known) fresh.insert(fresh.begin(), "draft");
    if (views.size() + fresh.size() > 64) {
      return absl::InvalidArgumentError(StrCat(where(), ": more than 64 views"));
    }
    for (auto& v : fresh) {
      std::string description;
      if (v == "draft") description = "draft model for self-speculative decoding";
      if (source_views != nullptr) {
        for (const auto& sv : *source_views) {
          if (sv.name == v) description = sv.description;
        }
      }
      views.emplace_back(std::move(v), std::move(description));
    }
    return absl::OkStatus();
  }
  // Appends stored bytes at the next aligned offset (or, for a stream only
  // "full" reads, to the spill file) and fills in the stream's location and
  // checksums. `stream` is its index in the tensor about to be added.
  absl::Status Append(absl::Span<const uint8_t> stored, StreamInfo* s, int stream) {
    SpanPieces pieces(stored);
    return AppendPieces(pieces, s, stream);
  }
  // The same from pieces. Each part is checked (the source's checksums) and
  // hashed (stream and chunk XXH3) on a side thread while it is written, so
  // a stream costs about its write; a failure marks the writer failed, so
  // bytes written before a source checksum mismatch is found never reach
  // a committed file.
  //
  // `copied`: the pieces are a source stream copied verbatim whose record
  // `s` already holds (CopyTensor). Its chunk checksums, which Check
  // verifies against the bytes, are kept instead of computed again, and the
  // stream checksum computed here must equal the source's: one hash pass
  // fewer, the same checks.
  //
  // `behind` (the owner of `src`, or null): its parts are queued for the
  // file's own thread to write (CopyPiecesBehind), and this returns before
  // the last are written. Spilled streams are always written here.
  absl::Status AppendPieces(PieceSource& src, StreamInfo* s, int stream, bool copied = false,
                            std::shared_ptr<PieceSource> behind = nullptr) {
    absl::Status st = AppendPiecesOnce(src, s, stream, copied, std::move(behind));
    if (!st.ok()) failed = true;
    return st;
  }
  absl::Status AppendPiecesOnce(PieceSource& src, StreamInfo* s, int stream, bool copied,
                                std::shared_ptr<PieceSource> behind) {
    const uint64_t source_xxh3 = s->xxh3;
    if (stream == 0) {
      // Spilled streams of a tensor whose add failed are not placed.
      while (!spilled.empty() && spilled.back().tensor >= static_cast<int>(records.size())) spilled.pop_back();
    }
    const bool spill = FullOnly(*s);
    const uint64_t length = src.size();
    for (const auto& c : s->chunks) {
      if (c.stored_offset > length || c.stored_length > length - c.stored_offset) {
        return absl::InternalError(StrCat(file->path(), ": stream \"", s->role, "\": chunk outside the stream"));
      }
    }
    s->shard = 0;
    io::AtomicFile* out = file.get();
    if (spill) {
      if (spill_fd < 0) BP_RETURN_IF_ERROR(OpenSpill());
      s->offset = 0;  // placed at Finish
    } else {
      BP_ASSIGN_OR_RETURN(out, PlaceStream(length, &s->shard));
      s->offset = out->position();
    }
    s->length = length;
    s->alignment = options.alignment;
    if (!s->prefix_bytes.empty()) uses_line_prefixes = true;
    if (options.skeleton) return AppendHole(s, stream, copied, spill, out);
    format::StreamChecksums checksums(src, *s, copied, file->path());
    auto hash = [&](absl::Span<const uint8_t> part) { checksums.Update(part); };
    uint64_t written = 0;
    auto write = [&](absl::Span<const uint8_t> part) -> absl::Status {
      absl::Status w = spill ? SpillWrite(part, spill_size + written) : out->Write(part);
      written += part.size();
      return w;
    };
    if (behind != nullptr && !spill) {
      BP_RETURN_IF_ERROR(CopyPiecesBehind(std::move(behind), *out, hash));
    } else {
      BP_RETURN_IF_ERROR(CopyPieces(src, SideWorkerFor(side, length), write, hash));
    }
    BP_RETURN_IF_ERROR(checksums.Finish());
    if (copied && s->xxh3 != source_xxh3) {
      return absl::DataLossError(absl::StrFormat("%s: stream \"%s\" copied from a source whose checksum does not match "
                                                 "its bytes (manifest %016x, data %016x)",
                                                 file->path(), s->role, source_xxh3, s->xxh3));
    }
    if (spill) {
      spilled.push_back({static_cast<int>(records.size()), stream, spill_size, length, s->xxh3});
      spill_size += length;
    }
    return absl::OkStatus();
  }
  // The file a stream of `length` bytes goes to, padded to the alignment:
  // shard 0, or with shard_max_bytes the sibling it fits in (its index in
  // `*shard`).
  absl::StatusOr<io::AtomicFile*> PlaceStream(uint64_t length, uint32_t* shard) {
    io::AtomicFile* out = file.get();
    *shard = 0;
    if (shards != nullptr) {
      BP_ASSIGN_OR_RETURN(*shard, shards->Place(length));
      out = &shards->current();
    }
    BP_RETURN_IF_ERROR(out->PadTo(options.alignment));
    return out;
  }
  // A skeleton's stream (WriterOptions::skeleton): a hole of its length,
  // with the checksums a real one would have in number.
  absl::Status AppendHole(StreamInfo* s, int stream, bool copied, bool spill, io::AtomicFile* out) {
    if (!copied) {
      s->xxh3 = kSkeletonXxh3;
      for (auto& c : s->chunks) c.xxh3 = kSkeletonXxh3;
      s->prefix_xxh3.assign(s->chunks.size() * s->prefix_bytes.size(), kSkeletonXxh3);
    }
    if (spill) {
      spilled.push_back({static_cast<int>(records.size()), stream, spill_size, s->length, s->xxh3});
      spill_size += s->length;
      return absl::OkStatus();
    }
    return out->Skip(s->length);
  }
  absl::Status OpenSpill() {
    std::filesystem::path out(file->path());
    std::string dir = out.parent_path().empty() ? std::string(".") : out.parent_path().string();
#ifdef O_TMPFILE
    spill_fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
#endif
    if (spill_fd < 0) {
      std::string templ = StrCat(dir, "/.", out.filename().string(), ".views-XXXXXX");
      std::vector<char> buf(templ.begin(), templ.end());
      buf.push_back('\0');
      spill_fd = ::mkstemp(buf.data());
      if (spill_fd < 0) return ErrnoError(file->path(), "cannot create a spill file beside it");
      ::unlink(buf.data());
    }
    return absl::OkStatus();
  }
  absl::Status SpillWrite(absl::Span<const uint8_t> bytes, uint64_t at) {
    uint64_t done = 0;
    while (done < bytes.size()) {
      ssize_t n = ::pwrite(spill_fd, bytes.data() + done, std::min<uint64_t>(bytes.size() - done, 1u << 30),
                           static_cast<off_t>(at + done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return ErrnoError(file->path(), "cannot write the spill file");
      done += static_cast<uint64_t>(n);
    }
    return absl::OkStatus();
  }
  // Appends the spilled streams after every other stream, in blocks, and
  // records their final offsets.
  absl::Status PlaceSpilled() {
    while (!spilled.empty() && spilled.back().tensor >= static_cast<int>(records.size())) spilled.pop_back();
    std::vector<uint8_t> block;
    Xxh3Stream state;
    for (const Spilled& sp : spilled) {
      StreamInfo& placed = records.Pending(static_cast<size_t>(sp.tensor))->streams[static_cast<size_t>(sp.stream)];
      BP_ASSIGN_OR_RETURN(io::AtomicFile* out, PlaceStream(sp.length, &placed.shard));
      placed.offset = out->position();
      if (options.skeleton) {
        BP_RETURN_IF_ERROR(out->Skip(sp.length));
        continue;
      }
      block.resize(std::min<uint64_t>(sp.length, kCopyBlock));
      state.Reset();
      for (uint64_t done = 0; done < sp.length;) {
        uint64_t want = std::min<uint64_t>(sp.length - done, kCopyBlock);
        ssize_t n = ::pread(spill_fd, block.data(), want, static_cast<off_t>(sp.spill_offset + done));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return ErrnoError(file->path(), "cannot read the spill file");
        auto piece = absl::MakeConstSpan(block.data(), static_cast<size_t>(n));
        state.Update(piece);
        BP_RETURN_IF_ERROR(out->Write(piece));
        done += static_cast<uint64_t>(n);
      }
      if (state.Digest() != sp.xxh3) {
        return absl::DataLossError(StrCat(file->path(), ": the spill file changed under the writer"));
      }
    }
    return absl::OkStatus();
  }
  // Adds the record of a tensor whose streams are all appended (a spilled
  // one is placed at Finish) and the spans of the views its streams name.
  void AddRecord(const TensorInfo& info) {
    bool pending = !spilled.empty() && spilled.back().tensor == static_cast<int>(records.size());
    for (const auto& s : info.streams) {
      if (s.length == 0 || FullOnly(s)) continue;  // a spilled stream is FullOnly: no declared view reads it
      auto widen = [&](std::vector<std::pair<uint64_t, uint64_t>>& spans) {
        if (spans.size() <= s.shard) spans.resize(s.shard + 1, {~0ull, 0});
        auto& span = spans[s.shard];
        span.first = std::min<uint64_t>(span.first, s.offset);
        span.second = std::max<uint64_t>(span.second, s.offset + s.length);
      };
      if (s.views.empty()) widen(every_view);
      view_spans.resize(views.size());
      for (const auto& name : s.views) {
        for (size_t v = 0; v < views.size(); ++v) {
          if (views[v].first == name) widen(view_spans[v]);
        }
      }
    }
    records.Add(info, pending);
  }
  // Manifest.views: per declared view, the span of the streams it reads.
  void RecordViews() {
    view_spans.resize(views.size());
    for (size_t k = 0; k < views.size(); ++k) {
      const auto& [name, description] = views[k];
      auto* v = manifest.add_views();
      v->set_name(name);
      v->set_description(description);
      // One range per shard that holds a stream the view reads, in shard order.
      const size_t shard_count = std::max(view_spans[k].size(), every_view.size());
      for (size_t shard = 0; shard < shard_count; ++shard) {
        const std::pair<uint64_t, uint64_t> none{~0ull, 0};
        const auto& own = shard < view_spans[k].size() ? view_spans[k][shard] : none;
        const auto& every = shard < every_view.size() ? every_view[shard] : none;
        const uint64_t begin = std::min(own.first, every.first);
        const uint64_t end = std::max(own.second, every.second);
        if (begin >= end) continue;
        auto* r = v->add_ranges();
        r->set_shard(static_cast<uint32_t>(shard));
        r->set_offset(begin);
        r->set_length(end - begin);
      }
    }
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
  // Per chunk of the record (the encoder's, or row chunks planned for line
  // prefixes), so each decompresses on its own.
  std::vector<std::pair<uint64_t, uint64_t>> pieces;
  if (chunks->empty()) pieces.emplace_back(0, in.bytes.size());
  for (const auto& c : *chunks) pieces.emplace_back(c.raw_offset, c.raw_length);
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
    if (!chunks->empty()) {
      auto& c = (*chunks)[k];
      c.stored_offset = joined.size();
      c.stored_length = out[k].size();
    }
    joined.insert(joined.end(), out[k].begin(), out[k].end());
  }
  return std::optional<std::vector<uint8_t>>(std::move(joined));
}

// The shape rules [C-6.6.2] [C-6.6.7], checked before any byte is written.
absl::Status CheckShape(const std::vector<uint64_t>& shape, absl::FunctionRef<std::string()> where) {
  if (shape.size() > format::kMaxDims) return absl::InvalidArgumentError(StrCat(where(), ": more than 8 dimensions"));
  uint64_t nonzero = 1;
  for (uint64_t d : shape) {
    auto next = CheckedMul(nonzero, d == 0 ? 1 : d);
    if (!next || *next > format::kMaxElements) {
      return absl::InvalidArgumentError(StrCat(where(), ": more than 2^56 elements"));
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
  impl->tensor_names.reserve(std::min<size_t>(options.expected_tensors, format::kMaxTensors));
  BP_ASSIGN_OR_RETURN(impl->file, io::AtomicFile::Create(path, options.inputs, options.durable));
  impl->header.file_id = NewFileId();
  impl->header.alignment = options.alignment;
  auto header = format::EncodeHeader(impl->header);
  BP_RETURN_IF_ERROR(impl->file->Write(header));
  if (options.shard_max_bytes > 0) {
    impl->shards = std::make_unique<format::ShardFiles>(path, options.shard_max_bytes, impl->header, options.inputs,
                                                        options.durable);
  }
  auto& m = impl->manifest;
  m.set_format_major(format::kFormatMajor);
  m.set_format_minor(format::kFormatMinorBase);
  m.set_alignment(options.alignment);
  m.set_writer(options.writer_name.empty() ? "bolt-pack" : options.writer_name);
  for (const auto& f : options.optional_features) m.add_optional_features(f);
  return std::unique_ptr<Writer>(new Writer(std::move(impl)));
}

absl::Status Writer::AddMetadata(std::string key, const MetaValue& value) {
  BP_RETURN_IF_ERROR(impl_->CheckOpen());
  BP_RETURN_IF_ERROR(format::CheckWrittenName(key, "metadata key", impl_->file->path()));
  if (!impl_->metadata_keys.insert(key).second) {
    // [C-6.3.3]
    return absl::InvalidArgumentError(StrCat(impl_->file->path(), ": duplicate metadata key ", QuoteForDisplay(key, 200)));
  }
  // Serialized as it is added, from the packed form (format/metadata_wire.h):
  // no message per element, and the entry checked as a reader checks it.
  std::string wire;
  const size_t payload = format::AppendMetadataEntry(key, value, &wire);
  const auto entry = absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(wire.data()), wire.size()).subspan(payload);
  absl::Status valid = format::CheckMetadataEntry(entry, StrCat(impl_->file->path(), ": metadata \"", key, "\""));
  if (valid.ok()) impl_->metadata_wire.push_back(std::move(wire));
  return valid;
}

absl::Status Writer::AddTensor(std::string name, std::vector<uint64_t> shape, DType dtype, std::string codec_id,
                               EncodedTensor encoded) {
  BP_RETURN_IF_ERROR(impl_->CheckOpen());
  BP_RETURN_IF_ERROR(format::CheckWrittenName(name, "tensor name", impl_->file->path()));
  // The name goes in the table after the record's checks, its slots loaded
  // meanwhile: cache misses were most of the cost of adding 1M tensors.
  impl_->tensor_names.Prefetch(name);
  // Built only for an error (5% of adding 1M tensors); the name moves to
  // the record below.
  const std::string* shown = &name;
  auto where = [&] { return StrCat(impl_->file->path(), ": tensor ", QuoteForDisplay(*shown)); };
  BP_RETURN_IF_ERROR(CheckShape(shape, where));
  const Codec* codec = FindCodec(codec_id);
  if (codec == nullptr) return absl::NotFoundError(StrCat(where(), ": unknown codec \"", codec_id, "\""));
  TensorInfo info = RecordFor(std::move(name), dtype, std::move(shape), codec_id, encoded);
  shown = &info.name;
  BP_RETURN_IF_ERROR(impl_->CheckViews(info, where));
  impl_->PlanPrefixes(&info);
  // An encoder bug must not produce a file its own reader rejects.
  absl::Status valid = codec->ValidateRecord(info);
  if (!valid.ok()) return absl::InternalError(StrCat(where(), ": encoder produced an invalid record: ", valid.message()));
  BP_RETURN_IF_ERROR(impl_->CheckName(info.name));  // before any byte is written
  for (size_t k = 0; k < encoded.streams.size(); ++k) {
    const EncodedStream& es = encoded.streams[k];
    StreamInfo& s = info.streams[k];
    std::optional<std::vector<uint8_t>> packed;
    if (impl_->options.zstd_level > 0 && es.compressible && !es.bytes.empty()) {
      BP_ASSIGN_OR_RETURN(packed, TryCompress(es, impl_->options.zstd_level, impl_->options.threads, &s.chunks));
    }
    if (packed) {
      s.line_bytes = 0;  // lines are of the uncompressed bytes
      s.prefix_bytes.clear();
      s.compression = Compression::kZstd;
      impl_->uses_zstd = true;
      BP_RETURN_IF_ERROR(impl_->Append(*packed, &s, static_cast<int>(k)));
    } else {
      BP_RETURN_IF_ERROR(impl_->Append(es.bytes, &s, static_cast<int>(k)));
    }
  }
  impl_->AddRecord(info);
  return absl::OkStatus();
}

absl::Status Writer::AddStoredTensor(TensorInfo info, const std::vector<absl::Span<const uint8_t>>& streams) {
  std::vector<SpanPieces> pieces(streams.begin(), streams.end());
  std::vector<PieceSource*> sources;
  for (auto& p : pieces) sources.push_back(&p);
  return AddStoredTensor(std::move(info), sources);
}

absl::Status Writer::AddStoredTensor(TensorInfo info, const std::vector<PieceSource*>& streams) {
  return AddStored(std::move(info), streams, {});
}

absl::Status Writer::AddStoredTensorBehind(TensorInfo info,
                                          const std::vector<std::shared_ptr<PieceSource>>& streams) {
  std::vector<PieceSource*> sources;
  for (const auto& s : streams) sources.push_back(s.get());
  return AddStored(std::move(info), sources, streams);
}

absl::Status Writer::AddStored(TensorInfo info, const std::vector<PieceSource*>& streams,
                               const std::vector<std::shared_ptr<PieceSource>>& behind) {
  BP_RETURN_IF_ERROR(impl_->CheckOpen());
  impl_->tensor_names.Prefetch(info.name);  // for CheckName, after the checks below
  auto where = [&] { return StrCat(impl_->file->path(), ": tensor ", QuoteForDisplay(info.name)); };  // on error only
  if (streams.size() != info.streams.size()) {
    return absl::InvalidArgumentError(StrCat(where(), ": ", streams.size(), " stream buffers for ",
                                             info.streams.size(), " streams"));
  }
  if (!IsValidCodecId(info.codec_id)) {
    // [C-6.8.1]
    return absl::InvalidArgumentError(StrCat(where(), ": invalid codec id \"", info.codec_id, "\""));
  }
  BP_RETURN_IF_ERROR(CheckShape(info.shape, where));
  for (size_t k = 0; k < streams.size(); ++k) {
    StreamInfo& s = info.streams[k];
    const uint64_t size = streams[k]->size();
    s.compression = Compression::kNone;
    s.raw_length = size;
    for (auto& c : s.chunks) {
      if (c.raw_offset > size || c.raw_length > size - c.raw_offset) {
        return absl::InvalidArgumentError(StrCat(where(), ": chunk outside stream \"", s.role, "\""));
      }
      c.stored_offset = c.raw_offset;
      c.stored_length = c.raw_length;
    }
  }
  impl_->PlanPrefixes(&info);
  // A registered codec checks the record; an unknown one is copy-only and
  // the container rules (checked again at Finish) are all that apply.
  if (const Codec* codec = FindCodec(info.codec_id)) {
    absl::Status valid = codec->ValidateRecord(info);
    if (!valid.ok()) {
      return absl::InvalidArgumentError(StrCat(where(), ": not a valid \"", info.codec_id, "\" record: ", valid.message()));
    }
  }
  BP_RETURN_IF_ERROR(impl_->CheckViews(info, where));
  BP_RETURN_IF_ERROR(impl_->CheckName(info.name));
  for (size_t k = 0; k < streams.size(); ++k) {
    BP_RETURN_IF_ERROR(impl_->AppendPieces(*streams[k], &info.streams[k], static_cast<int>(k), /*copied=*/false,
                                           behind.empty() ? nullptr : behind[k]));
  }
  impl_->AddRecord(info);
  return absl::OkStatus();
}

absl::Status Writer::CopyTensor(const Reader& reader, size_t tensor, std::string new_name) {
  BP_RETURN_IF_ERROR(impl_->CheckOpen());
  if (tensor >= reader.tensors().size()) return absl::OutOfRangeError(StrCat(reader.path(), ": no tensor #", tensor));
  // A record this version would refuse to read (or cannot write) is not
  // copied: the output must open and verify wherever the input should have.
  const auto shared = reader.SharedTensor(tensor);
  // The name table's slots load while the record is checked and copied
  // (CheckName below: cache misses were most of its cost for 1M tensors).
  impl_->tensor_names.Prefetch(new_name.empty() ? std::string_view(shared->name) : std::string_view(new_name));
  BP_RETURN_IF_ERROR(format::CheckCopyable(reader, tensor, /*check_stored=*/!impl_->options.skeleton));
  TensorInfo info = *shared;
  if (!new_name.empty()) info.name = std::move(new_name);
  for (const auto& f : reader.required_features()) {
    if (!format::IsKnownFeature(f) && std::find(impl_->inherited_features.begin(), impl_->inherited_features.end(), f) ==
                           impl_->inherited_features.end()) {
      impl_->inherited_features.push_back(f);
    }
  }
  BP_RETURN_IF_ERROR(impl_->CheckViews(
      info, [&] { return StrCat(impl_->file->path(), ": tensor ", QuoteForDisplay(info.name)); }, &reader.views()));
  BP_RETURN_IF_ERROR(impl_->CheckName(info.name));
  for (size_t k = 0; k < info.streams.size(); ++k) {
    // Bytes copied through are checked first, a chunk (or a stream without
    // chunks) before any of its bytes is written: a corrupt source is
    // reported, never silently re-checksummed into a "valid" file.
    BP_ASSIGN_OR_RETURN(auto stored, reader.StoredStream(tensor, k));
    StreamInfo& s = info.streams[k];
    if (s.compression == Compression::kZstd) impl_->uses_zstd = true;
    auto pieces = std::make_shared<format::StreamCutPieces>(reader, tensor, k, stored);
    BP_RETURN_IF_ERROR(impl_->AppendPieces(*pieces, &s, static_cast<int>(k), /*copied=*/true,
                                           impl_->options.write_behind ? pieces : nullptr));
  }
  impl_->AddRecord(info);
  return absl::OkStatus();
}

absl::Status Writer::SetElastic(const ElasticManifest& elastic) {
  BP_RETURN_IF_ERROR(impl_->CheckOpen());
  impl_->elastic = std::make_unique<ElasticManifest>(elastic);
  impl_->bindings = std::make_unique<format::BindingIndex>(*impl_->elastic);
  if (!impl_->options.store_elastic) return absl::OkStatus();
  format::ElasticToProto(elastic, impl_->manifest.mutable_elastic());
  auto& features = *impl_->manifest.mutable_optional_features();
  if (std::find(features.begin(), features.end(), "elastic") == features.end()) {
    impl_->manifest.add_optional_features("elastic");
  }
  return absl::OkStatus();
}

absl::Status Writer::Finish() {
  BP_RETURN_IF_ERROR(impl_->CheckOpen());
  impl_->finished = true;
  auto& m = impl_->manifest;
  if (impl_->uses_zstd) m.add_required_features("zstd");
  for (const auto& f : impl_->inherited_features) m.add_required_features(f);
  // Streams only "full" reads come last, so every other view reads a prefix.
  BP_RETURN_IF_ERROR(impl_->PlaceSpilled());
  impl_->RecordViews();
  // A file stamps the lowest minor whose additions it uses (VERSIONING.md):
  // 1.4 for an elastic manifest of version 3 (flat bindings), 1.2 for one
  // of version 2 (groups, segments, products), 1.1 for
  // views or a version-1 elastic manifest; any other stays a 1.0 file that
  // every 1.x reader reads exactly.
  uint32_t minor = format::kFormatMinorBase;
  if (m.views_size() > 0 || m.has_elastic()) minor = 1;
  if ((m.has_elastic() && m.elastic().version() >= 2) || impl_->uses_line_prefixes) minor = 2;
  if (m.has_elastic() && m.elastic().version() >= 3) minor = 4;  // flat bindings
  if (minor != format::kFormatMinorBase) {
    m.set_format_minor(minor);
    impl_->header.format_minor = minor;
    BP_RETURN_IF_ERROR(impl_->file->Overwrite(0, format::EncodeHeader(impl_->header)));
  }
  // Siblings: their headers take the minor, each is sealed, the manifest lists them.
  if (impl_->shards != nullptr) BP_RETURN_IF_ERROR(impl_->shards->Close(minor, &m));
  uint64_t manifest_offset = impl_->file->position();
  std::string bytes = impl_->records.Serialize(m, impl_->metadata_wire);
  // Freed before the read-back builds its own: the metadata, the name index.
  v1::Manifest().Swap(&m);
  impl_->tensor_names = format::NameIndex();
  if (bytes.size() > format::kMaxManifestBytes) {
    return absl::ResourceExhaustedError(StrCat(impl_->file->path(), ": manifest of ", bytes.size(),
                                                     " bytes exceeds the 256 MiB limit"));
  }
  // The writer reads back what it is about to write with the reader's own
  // parse and container rules, so no command commits a file its reader
  // refuses; each record passed its codec's ValidateRecord when it was added
  // (AddTensor, AddStored, CopyTensor), which the reader applies at decode.
  const std::vector<uint64_t> data_ends =
      impl_->shards != nullptr ? impl_->shards->DataEnds(manifest_offset) : std::vector<uint64_t>{manifest_offset};
  BP_RETURN_IF_ERROR(format::ValidateAsReader(bytes, impl_->file->path(), data_ends, /*check_records=*/false));
  auto span = absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  BP_RETURN_IF_ERROR(impl_->file->Write(span));
  format::Footer footer;
  footer.manifest_offset = manifest_offset;
  footer.manifest_length = bytes.size();
  footer.manifest_xxh3 = format::Xxh3(span);
  footer.file_id = impl_->header.file_id;
  footer.format_minor = impl_->header.format_minor;
  footer.file_size = manifest_offset + bytes.size() + format::kFooterSize;
  if (impl_->shards != nullptr && footer.file_size > impl_->options.shard_max_bytes) {
    return absl::ResourceExhaustedError(StrCat(impl_->file->path(), ": shard 0 (the manifest, ", footer.file_size,
                                               " bytes) does not fit the shard size limit of ",
                                               impl_->options.shard_max_bytes, " bytes; nothing written"));
  }
  BP_RETURN_IF_ERROR(impl_->file->Write(format::EncodeFooter(footer)));
  if (impl_->shards != nullptr) return impl_->shards->Commit(*impl_->file);
  return impl_->file->Commit();
}

absl::StatusOr<EncodedTensor> EncodeTensor(std::string_view codec_id, const TensorSource& source,
                                           const CodecParams& params, const ExecOptions& exec) {
  const Codec* codec = FindCodec(codec_id);
  if (codec == nullptr) {
    return absl::NotFoundError(StrCat("tensor ", QuoteForDisplay(source.name), ": unknown codec \"", codec_id, "\""));
  }
  absl::Status can = codec->CanEncode(source.dtype, source.shape, params);
  if (!can.ok()) return absl::Status(can.code(), StrCat("tensor ", QuoteForDisplay(source.name), ": ", can.message()));
  return codec->Encode(source, params, exec);
}

}  // namespace boltpack
