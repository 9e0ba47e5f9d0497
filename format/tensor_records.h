// A writer's tensor records, serialized as they are added: a manifest of
// 1M tensors is held as its ~46 MB of wire bytes, not as 1M protobuf
// messages (about 530 MB) or records (about 400 MB). A record whose stream
// offsets are placed later (a spilled stream) is held as it is until then.
#ifndef BOLTPACK_FORMAT_TENSOR_RECORDS_H_
#define BOLTPACK_FORMAT_TENSOR_RECORDS_H_

#include <cstddef>
#include <string>
#include <vector>

#include "boltpack/tensor_info.h"
#include "boltpack_proto/boltpack.pb.h"

namespace boltpack::format {

class TensorRecords {
 public:
  // Serializes `info` as the next record, or holds it when `pending`.
  void Add(const TensorInfo& info, bool pending);
  size_t size() const { return count_; }
  // The held record of tensor `index` (in Add order); it must be pending.
  TensorInfo* Pending(size_t index);
  // The manifest `head` (every field but the metadata and the tensors)
  // serialized with the serialized field-7 entries `metadata` and every
  // record in order where protobuf puts them (after fields 1-6, before
  // 9-11), so the bytes are those of one whole Manifest message. Empties
  // the records and `metadata`, each freed as it is copied.
  std::string Serialize(v1::Manifest& head, std::vector<std::string>& metadata);

 private:
  void AppendRecord(const TensorInfo& info, std::string* out);
  struct Held {
    size_t block;  // the records before it: blocks_[0, block)
    size_t index;  // its tensor number
    TensorInfo info;
  };
  // Field-8 records in order, the held ones left out, in blocks of about
  // 1 MiB (a held record starts a new one): no string doubling past the
  // manifest's size, and Serialize frees each as it copies it.
  std::vector<std::string> blocks_;
  std::vector<Held> held_;
  size_t count_ = 0;
};

}  // namespace boltpack::format

#endif  // BOLTPACK_FORMAT_TENSOR_RECORDS_H_
