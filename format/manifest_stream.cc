#include "format/manifest_stream.h"

#include <climits>

#include "common/str_cat.h"
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
absl::Status NotAManifest(const std::string& file) {
  return absl::DataLossError(StrCat(file, ": manifest is not a valid boltpack.v1.Manifest"));
}
}  // namespace

absl::StatusOr<uint64_t> ParseManifestHead(absl::Span<const uint8_t> bytes, const std::string& file,
                                           v1::Manifest* head) {
  uint64_t tensors = 0;
  const bool parsed = SplitRepeatedField(
      bytes, kManifestTensorsField, [&](absl::Span<const uint8_t>) { return ++tensors, true; },
      [&](absl::Span<const uint8_t> run) {
        // Merging a run of fields is parsing them after what came before.
        google::protobuf::io::CodedInputStream in(run.data(), static_cast<int>(run.size()));
        return head->MergeFromCodedStream(&in) && in.ConsumedEntireMessage();
      });
  if (!parsed) return NotAManifest(file);
  return tensors;
}

absl::Status ForEachValidTensor(
    absl::Span<const uint8_t> bytes, const std::string& file, ManifestValidator& validator,
    absl::FunctionRef<absl::Status(const v1::Tensor&, absl::Span<const uint8_t>)> visit) {
  v1::Tensor record;  // Clear() keeps its parts for the next record
  absl::Status status;
  const bool parsed = SplitRepeatedField(
      bytes, kManifestTensorsField,
      [&](absl::Span<const uint8_t> payload) {
        if (!record.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) return false;
        status = validator.AddTensor(record);
        if (status.ok()) status = visit(record, payload);
        return status.ok();
      },
      [](absl::Span<const uint8_t>) { return true; });
  if (!status.ok()) return status;
  if (!parsed) return NotAManifest(file);
  return validator.Finish();
}

}  // namespace boltpack::format
