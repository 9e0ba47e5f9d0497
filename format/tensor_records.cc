#include "format/tensor_records.h"

#include <algorithm>
#include <utility>

#include "format/manifest_convert.h"
#include "format/manifest_stream.h"
#include "google/protobuf/io/coded_stream.h"

namespace boltpack::format {

void TensorRecords::AppendRecord(const TensorInfo& info, std::string* out) {
  scratch_.Clear();
  ToProto(info, &scratch_);
  uint8_t prefix[1 + 10];
  prefix[0] = static_cast<uint8_t>(kManifestTensorsField << 3 | 2);  // length-delimited
  uint8_t* end = google::protobuf::io::CodedOutputStream::WriteVarint64ToArray(scratch_.ByteSizeLong(), prefix + 1);
  out->append(reinterpret_cast<const char*>(prefix), static_cast<size_t>(end - prefix));
  scratch_.AppendToString(out);
}

void TensorRecords::Add(const TensorInfo& info, bool pending) {
  if (pending) {
    held_.push_back({bytes_.size(), count_, info});
  } else {
    AppendRecord(info, &bytes_);
  }
  ++count_;
}

TensorInfo* TensorRecords::Pending(size_t index) {
  auto it = std::lower_bound(held_.begin(), held_.end(), index, [](const Held& h, size_t i) { return h.index < i; });
  return it != held_.end() && it->index == index ? &it->info : nullptr;
}

std::string TensorRecords::Serialize(v1::Manifest& head) {
  // Fields after the tensors move to a tail message for the moment.
  v1::Manifest tail;
  if (head.has_elastic()) tail.set_allocated_elastic(head.release_elastic());
  tail.mutable_views()->Swap(head.mutable_views());
  tail.set_writer(head.writer());
  head.clear_writer();
  const std::string first = head.SerializeAsString();
  const std::string last = tail.SerializeAsString();
  if (tail.has_elastic()) head.set_allocated_elastic(tail.release_elastic());
  head.mutable_views()->Swap(tail.mutable_views());
  head.set_writer(tail.writer());

  std::string out;
  if (held_.empty()) {
    // In place: the records usually have the room (a string grows by
    // doubling), so the manifest is not held twice.
    out = std::move(bytes_);
    out.insert(0, first);
  } else {
    out.reserve(first.size() + bytes_.size() + held_.size() * 64 + last.size());
    out += first;
    size_t done = 0;
    for (const Held& h : held_) {
      out.append(bytes_, done, h.at - done);
      AppendRecord(h.info, &out);
      done = h.at;
    }
    out.append(bytes_, done, std::string::npos);
  }
  out += last;
  std::string().swap(bytes_);
  held_.clear();
  count_ = 0;
  return out;
}

}  // namespace boltpack::format
