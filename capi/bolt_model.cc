// A .bolt file behind a bp_reader: boltpack::Reader, which checks every
// chunk it decodes against its checksum.
#include <memory>
#include <string>
#include <utility>

#include "capi/model.h"
#include "common/status_macros.h"
#include "common/str_cat.h"

namespace boltpack::capi {
namespace {

class BoltModel final : public Model {
 public:
  explicit BoltModel(std::unique_ptr<Reader> reader) : reader_(std::move(reader)) {}

  const std::string& path() const override { return reader_->path(); }
  size_t tensor_count() const override { return reader_->tensors().size(); }
  std::string_view TensorName(size_t t) const override { return reader_->TensorName(t); }
  std::optional<size_t> FindTensor(std::string_view name) const override { return reader_->FindTensor(name); }
  DType TensorShape(size_t t, std::vector<uint64_t>* shape) const override { return reader_->TensorShape(t, shape); }
  TensorInfo Describe(size_t t) const override { return reader_->tensors()[t]; }
  const Metadata& metadata() const override { return reader_->metadata(); }
  absl::StatusOr<absl::Span<const uint8_t>> StoredStream(size_t t, size_t s) const override {
    return reader_->StoredStream(t, s);
  }
  absl::StatusOr<uint64_t> DecodedBytes(size_t t, OutputType out) const override {
    return reader_->DecodedBytes(t, out);
  }
  absl::Status DecodeRows(size_t t, uint64_t row_begin, uint64_t row_end, OutputType out, absl::Span<uint8_t> dst,
                          const ExecOptions& exec) const override {
    return reader_->DecodeRows(t, row_begin, row_end, out, dst, exec);
  }
  absl::Status Decode(size_t t, OutputType out, absl::Span<uint8_t> dst, const ExecOptions& exec) const override {
    return reader_->Decode(t, out, dst, exec);
  }
  absl::StatusOr<Location> StreamLocation(size_t t, size_t s) const override {
    const auto info = reader_->tensors()[t];
    if (s >= info.streams.size()) return absl::OutOfRangeError(StrCat(reader_->path(), ": no stream #", s));
    BP_ASSIGN_OR_RETURN(std::string path, reader_->ShardPath(info.streams[s].shard));
    return Location{std::move(path), info.streams[s].offset};
  }
  const Reader* bolt() const override { return reader_.get(); }

 private:
  std::unique_ptr<Reader> reader_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Model>> OpenBoltModel(const std::string& path, const ReaderOptions& options) {
  BP_ASSIGN_OR_RETURN(auto reader, Reader::Open(path, options));
  return std::unique_ptr<Model>(std::make_unique<BoltModel>(std::move(reader)));
}

}  // namespace boltpack::capi
