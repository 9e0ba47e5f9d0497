#include "format/manifest_stream.h"

#include <climits>

#include "common/str_cat.h"
#include "format/manifest_convert.h"
#include "format/tensor_wire.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/wire_format_lite.h"

namespace boltpack::format {

bool SplitRepeatedField(absl::Span<const uint8_t> bytes, uint32_t number,
                        absl::FunctionRef<bool(absl::Span<const uint8_t>)> on_record,
                        absl::FunctionRef<bool(absl::Span<const uint8_t>)> on_other) {
  using google::protobuf::internal::WireFormatLite;
  if (bytes.size() > INT_MAX) return false;
  google::protobuf::io::CodedInputStream in(bytes.data(), static_cast<int>(bytes.size()));
  in.SetRecursionLimit(100);  // protobuf's default, as the whole parse
  const uint32_t record_tag = WireFormatLite::MakeTag(static_cast<int>(number), WireFormatLite::WIRETYPE_LENGTH_DELIMITED);
  size_t run_begin = 0;  // start of the run of other fields being collected
  auto flush = [&](size_t end) { return end == run_begin || on_other(bytes.subspan(run_begin, end - run_begin)); };
  while (true) {
    const size_t field_begin = static_cast<size_t>(in.CurrentPosition());
    const uint32_t tag = in.ReadTag();
    if (tag == 0) {
      // The end, or a tag protobuf refuses (field 0, a varint past 5 bytes).
      return field_begin == bytes.size() && flush(field_begin);
    }
    if (tag != record_tag) {
      if (!WireFormatLite::SkipField(&in, tag)) return false;
      continue;
    }
    uint32_t length = 0;
    if (!in.ReadVarint32(&length)) return false;
    const size_t payload = static_cast<size_t>(in.CurrentPosition());
    if (length > bytes.size() - payload) return false;
    if (!flush(field_begin) || !on_record(bytes.subspan(payload, length))) return false;
    if (!in.Skip(static_cast<int>(length))) return false;
    run_begin = payload + length;
  }
}

namespace {

// Merging a run of fields is parsing them after what came before.
bool MergeRun(google::protobuf::MessageLite* message, absl::Span<const uint8_t> run) {
  google::protobuf::io::CodedInputStream in(run.data(), static_cast<int>(run.size()));
  return message->MergeFromCodedStream(&in) && in.ConsumedEntireMessage();
}

// A record up to this size is parsed whole, chunks and all, in one protobuf
// call: a third of the cost of the split parse (each split run is a parse of
// its own), and its chunks as messages take at most about twice its bytes.
constexpr size_t kWholeParseBytes = size_t{64} << 10;

// `payload` into `record`, its streams' chunks either in it (a small record,
// chunks->whole) or left on the wire for `chunks` to read.
bool ParseTensorRecord(absl::Span<const uint8_t> payload, v1::Tensor* record, TensorChunks* chunks) {
  record->Clear();
  chunks->streams.clear();
  chunks->counts.clear();
  chunks->whole = nullptr;
  if (payload.size() <= kWholeParseBytes) {
    if (!record->ParseFromArray(payload.data(), static_cast<int>(payload.size()))) return false;
    for (const auto& s : record->streams()) chunks->counts.push_back(static_cast<uint64_t>(s.chunks_size()));
    chunks->whole = record;
    return true;
  }
  return SplitRepeatedField(
      payload, kTensorStreamsField,
      [&](absl::Span<const uint8_t> stream) {
        v1::Stream* s = record->add_streams();
        uint64_t n = 0;
        chunks->streams.push_back(stream);
        const bool ok = SplitRepeatedField(
            stream, kStreamChunksField, [&](absl::Span<const uint8_t>) { return ++n, true; },
            [&](absl::Span<const uint8_t> run) { return MergeRun(s, run); });
        chunks->counts.push_back(n);
        return ok;
      },
      [&](absl::Span<const uint8_t> run) { return MergeRun(record, run); });
}

}  // namespace

namespace {
absl::Status NotAManifest(const std::string& file) {
  // [C-6.1.2]
  return absl::DataLossError(StrCat(file, ": manifest is not a valid boltpack.v1.Manifest"));
}
}  // namespace

absl::StatusOr<uint64_t> ParseManifestHead(absl::Span<const uint8_t> bytes, const std::string& file,
                                           v1::Manifest* head, MetadataWire* metadata) {
  uint64_t tensors = 0;
  metadata->clear();
  // The runs between tensors split again at the metadata entries.
  auto merge_head = [&](absl::Span<const uint8_t> run) {
    return SplitRepeatedField(
        run, kManifestMetadataField, [&](absl::Span<const uint8_t> entry) { return metadata->push_back(entry), true; },
        [&](absl::Span<const uint8_t> other) { return MergeRun(head, other); });
  };
  const bool parsed = SplitRepeatedField(
      bytes, kManifestTensorsField, [&](absl::Span<const uint8_t>) { return ++tensors, true; }, merge_head);
  if (!parsed) return NotAManifest(file);
  return tensors;
}


bool TensorChunks::ForEach(
    size_t k, absl::FunctionRef<bool(const v1::Chunk&, uint64_t, absl::Span<const uint8_t>)> visit) const {
  if (whole != nullptr) {
    uint64_t index = 0;
    for (const v1::Chunk& c : whole->streams(static_cast<int>(k)).chunks()) {
      if (!visit(c, index++, {})) return false;
    }
    return true;
  }
  v1::Chunk chunk;
  uint64_t index = 0;
  return SplitRepeatedField(
      streams[k], kStreamChunksField,
      [&](absl::Span<const uint8_t> payload) {
        return chunk.ParseFromArray(payload.data(), static_cast<int>(payload.size())) && visit(chunk, index++, payload);
      },
      [](absl::Span<const uint8_t>) { return true; });
}

std::string_view RecordName(absl::Span<const uint8_t> payload) {
  // Protobuf keeps the last of a singular field that occurs more than once.
  absl::Span<const uint8_t> name;
  SplitRepeatedField(
      payload, kTensorNameField, [&](absl::Span<const uint8_t> n) { return name = n, true; },
      [](absl::Span<const uint8_t>) { return true; });
  return std::string_view(reinterpret_cast<const char*>(name.data()), name.size());
}

namespace {
// The record's first field when it is a short name (as every writer puts
// it), else empty.
std::string_view FirstFieldName(absl::Span<const uint8_t> payload) {
  constexpr uint8_t kNameTag = kTensorNameField << 3 | 2;  // length-delimited
  if (payload.size() < 2 || payload[0] != kNameTag || payload[1] >= 0x80 || payload.size() - 2 < payload[1]) return {};
  return std::string_view(reinterpret_cast<const char*>(payload.data()) + 2, payload[1]);
}

// RecordName, without a second pass over a record parsed whole whose first
// field is its name: a later name field would have left another name in
// `record`, or the same bytes.
std::string_view WireName(absl::Span<const uint8_t> payload, const v1::Tensor& record, const TensorChunks& chunks) {
  const std::string_view first = FirstFieldName(payload);
  if (chunks.whole != nullptr && first.data() != nullptr && first == record.name()) return first;
  return RecordName(payload);
}
}  // namespace

absl::Status ForEachValidTensor(
    absl::Span<const uint8_t> bytes, const std::string& file, ManifestValidator& validator,
    absl::FunctionRef<absl::Status(const v1::Tensor&, const TensorChunks&, absl::Span<const uint8_t>)> visit) {
  v1::Tensor record;  // Clear() keeps its parts for the next record
  TensorChunks chunks;
  absl::Status status;
  const bool parsed = SplitRepeatedField(
      bytes, kManifestTensorsField,
      [&](absl::Span<const uint8_t> payload) {
        validator.PrefetchName(FirstFieldName(payload));  // arrives while the record is parsed
        if (!ParseTensorRecord(payload, &record, &chunks)) return false;
        status = validator.AddTensor(record, chunks, WireName(payload, record, chunks));
        if (status.ok()) status = visit(record, chunks, payload);
        return status.ok();
      },
      [](absl::Span<const uint8_t>) { return true; });
  if (!status.ok()) return status;
  if (!parsed) return NotAManifest(file);
  return validator.Finish();
}

namespace {
constexpr uint64_t kChunksPerProgress = 1 << 16;
}  // namespace

TensorInfo TensorFromWire(const v1::Tensor& tensor, const TensorChunks& chunks) {
  return TensorFromWire(tensor, chunks, [](const uint8_t*) {});
}

TensorInfo TensorFromWire(const v1::Tensor& tensor, const TensorChunks& chunks,
                          absl::FunctionRef<void(const uint8_t*)> read_up_to) {
  if (chunks.whole != nullptr) return FromProto(tensor);  // its chunks are in it
  TensorInfo info = FromProto(tensor);
  for (size_t k = 0; k < info.streams.size(); ++k) {
    StreamInfo& s = info.streams[k];
    s.chunks.reserve(chunks.counts[k]);
    s.prefix_xxh3.reserve(chunks.counts[k] * s.prefix_bytes.size());
    chunks.ForEach(k, [&](const v1::Chunk& c, uint64_t index, absl::Span<const uint8_t> payload) {
      if (index % kChunksPerProgress == kChunksPerProgress - 1) read_up_to(payload.data());
      s.chunks.push_back(ChunkInfo{c.stored_offset(), c.stored_length(), c.raw_offset(), c.raw_length(),
                                   c.first_row(), c.row_count(), c.xxh3()});
      s.prefix_xxh3.insert(s.prefix_xxh3.end(), c.prefix_xxh3().begin(), c.prefix_xxh3().end());
      return true;
    });
  }
  return info;
}

TensorInfo TensorFromRecord(absl::Span<const uint8_t> payload) {
  // A small record is parsed whole by ParseTensorRecord, as at validation.
  return TensorFromRecord(payload, [] {}, [](const uint8_t*) {});
}

TensorInfo TensorFromRecord(absl::Span<const uint8_t> payload, absl::FunctionRef<void()> parsed,
                            absl::FunctionRef<void(const uint8_t*)> read_up_to) {
  // A record a writer wrote (one of 1M is about 50 bytes) is read straight
  // from its bytes, at a third of protobuf's parse and FromProto; any other
  // goes through protobuf, as at validation.
  if (payload.size() <= kWholeParseBytes) {
    TensorInfo info;
    if (TensorFromCanonicalWire(payload, &info)) {
      parsed();
      return info;
    }
  }
  // One message a thread, reused: Clear() keeps its parts for the next.
  thread_local v1::Tensor record;
  thread_local TensorChunks chunks;
  if (!ParseTensorRecord(payload, &record, &chunks)) return {};  // validated: does not happen
  parsed();
  return TensorFromWire(record, chunks, read_up_to);
}

}  // namespace boltpack::format
