// Header-only C++ wrapper over the C API (boltpack/boltpack.h), for engines
// that link libboltpack_read: RAII handles, std::span views, a small Status
// (convertible to std::error_code) and no Abseil, so an engine's build needs
// nothing of bolt-pack's dependencies. Everything here is inline and calls
// only bp_* functions; the ABI stays the C one.
//
//   auto reader = bp::Reader::Open("model.bolt");
//   if (!reader.ok()) return Fail(reader.status());
//   auto values = reader->DecodeF32(0);
//
// The full C++ API of libboltpack (reader, writer, codecs, absl::Status) is
// boltpack/boltpack_cxx.h.
#ifndef BOLTPACK_BOLTPACK_HPP_
#define BOLTPACK_BOLTPACK_HPP_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "boltpack/boltpack.h"

namespace bp {

// ---- errors ---------------------------------------------------------------

// std::error_code for a bp_status: value() is the ABI number, message() its
// short name ("CHECKSUM"). The per-call message is in Status::message().
class ErrorCategory final : public std::error_category {
 public:
  const char* name() const noexcept override { return "boltpack"; }
  std::string message(int code) const override {
    return bp_status_name(static_cast<bp_status>(code));
  }
};
inline const std::error_category& error_category() noexcept {
  static const ErrorCategory category;
  return category;
}
inline std::error_code make_error_code(bp_status code) noexcept {
  return {static_cast<int>(code), error_category()};
}

// The outcome of one call: its code and, on failure, the library's message
// (copied at once: the C API's message lives only until the thread's next
// call).
class Status {
 public:
  Status() = default;
  Status(bp_status code, std::string message) : code_(code), message_(std::move(message)) {}
  // The failure of the call just made on this thread.
  static Status FromLastCall(bp_status code) {
    return code == BP_OK ? Status() : Status(code, bp_last_error_message());
  }

  bool ok() const noexcept { return code_ == BP_OK; }
  bp_status code() const noexcept { return code_; }
  // The first-release kind a refined code belongs to (BP_ERR_CHECKSUM ->
  // BP_ERR_CORRUPT), for callers that switch on 1..8 only.
  bp_status kind() const noexcept { return bp_status_kind(code_); }
  const std::string& message() const noexcept { return message_; }
  std::error_code error_code() const noexcept { return make_error_code(code_); }
  std::string ToString() const {
    return ok() ? "OK" : std::string(bp_status_name(code_)) + ": " + message_;
  }

 private:
  bp_status code_ = BP_OK;
  std::string message_;
};

// A value or the Status of why there is none.
template <typename T>
class Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit, as StatusOr
  Result(Status status) : status_(std::move(status)) {}  // NOLINT
  bool ok() const noexcept { return value_.has_value(); }
  const Status& status() const noexcept { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }
  T&& operator*() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }

 private:
  Status status_;
  std::optional<T> value_;
};

// ---- descriptions -----------------------------------------------------------

// One tensor. name() and codec() point into the reader (valid until it
// closes), shape() into this struct (valid while it lives).
struct TensorInfo {
  struct bp_tensor_info raw;
  std::string_view name() const { return raw.name; }
  std::string_view codec() const { return raw.codec; }
  std::span<const uint64_t> shape() const { return {raw.shape, raw.ndim}; }
  int dtype() const { return raw.dtype; }
  std::string_view dtype_name() const { return bp_dtype_name(raw.dtype); }
  uint64_t stored_bytes() const { return raw.stored_bytes; }
  uint32_t stream_count() const { return raw.stream_count; }
  uint64_t element_count() const {
    uint64_t n = 1;
    for (uint64_t d : shape()) n *= d;
    return n;
  }
};

struct StreamInfo {
  struct bp_stream_info raw;
  std::string_view role() const { return raw.role; }
  bool compressed() const { return raw.compression != BP_COMPRESSION_NONE; }
};

// One tensor a budget keeps: name() valid until the budget closes, shape()
// while this struct lives.
struct BudgetTensor {
  struct bp_budget_tensor raw;
  size_t tensor() const { return raw.tensor; }
  std::string_view name() const { return raw.name; }
  std::span<const uint64_t> shape() const { return {raw.shape, raw.ndim}; }
};

// ---- handles ---------------------------------------------------------------

namespace detail {
// Move-only ownership of a C handle, closed by Close when it goes.
template <typename Handle, void (*Close)(Handle*)>
class Owned {
 public:
  Owned() = default;
  explicit Owned(Handle* h) noexcept : h_(h) {}
  Owned(Owned&& other) noexcept : h_(std::exchange(other.h_, nullptr)) {}
  Owned& operator=(Owned&& other) noexcept {
    if (this != &other) {
      if (h_ != nullptr) Close(h_);
      h_ = std::exchange(other.h_, nullptr);
    }
    return *this;
  }
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  ~Owned() {
    if (h_ != nullptr) Close(h_);
  }
  Handle* get() const noexcept { return h_; }

 private:
  Handle* h_ = nullptr;
};
}  // namespace detail

// A budget of an open reader (bp_budget_*). It borrows the reader: let it go
// before the reader. Immutable: any number of threads may use one at once.
class Budget {
 public:
  size_t tensor_count() const { return bp_budget_tensor_count(b_.get()); }
  Result<BudgetTensor> tensor(size_t i) const {
    BudgetTensor t{};
    if (Status s = Check(bp_budget_tensor(b_.get(), i, &t.raw)); !s.ok()) return s;
    return t;
  }
  // Stored bytes a reader of this budget in its view touches.
  Result<uint64_t> bytes() const {
    uint64_t n = 0;
    if (Status s = Check(bp_budget_bytes(b_.get(), &n)); !s.ok()) return s;
    return n;
  }
  // Zero-copy regions of kept tensor i (BP_ERR_UNSUPPORTED when its bytes
  // cannot be viewed in place). Not checked against the checksums.
  Result<std::vector<bp_region>> regions(size_t i) const {
    size_t count = 0;
    if (Status s = Check(bp_budget_region_count(b_.get(), i, &count)); !s.ok()) return s;
    std::vector<bp_region> out(count);
    for (size_t k = 0; k < count; ++k) {
      if (Status s = Check(bp_budget_region(b_.get(), i, k, &out[k])); !s.ok()) return s;
    }
    return out;
  }
  Result<uint64_t> decoded_size(size_t i, bp_output out) const {
    uint64_t n = 0;
    if (Status s = Check(bp_budget_decoded_size(b_.get(), i, out, &n)); !s.ok()) return s;
    return n;
  }
  // The kept part of tensor i, row-major in the kept shape; checked.
  Status Decode(size_t i, bp_output out, std::span<std::byte> dst) const {
    return Check(bp_budget_decode(b_.get(), i, out, dst.data(), dst.size()));
  }
  const bp_budget* get() const noexcept { return b_.get(); }

 private:
  friend class Reader;
  explicit Budget(bp_budget* b) : b_(b) {}
  static Status Check(bp_status code) { return Status::FromLastCall(code); }
  detail::Owned<bp_budget, bp_budget_close> b_;
};

// An open model (.bolt, GGUF or safetensors), closed when the Reader goes.
// Every const member may be called from any number of threads at once.
class Reader {
 public:
  // view: nullptr or "" for the default view; flags: BP_OPEN_*.
  static Result<Reader> Open(const std::string& path, const char* view = nullptr,
                             uint32_t flags = 0) {
    bp_reader* r = nullptr;
    bp_status code = bp_open_flags(path.c_str(), view, flags, &r);
    if (code != BP_OK) return Status::FromLastCall(code);
    return Reader(r);
  }

  size_t tensor_count() const { return bp_tensor_count(r_.get()); }
  Result<TensorInfo> tensor(size_t i) const {
    TensorInfo t{};
    if (Status s = Check(bp_tensor_info(r_.get(), i, &t.raw)); !s.ok()) return s;
    return t;
  }
  Result<size_t> Find(const std::string& name) const {
    size_t i = 0;
    if (Status s = Check(bp_find_tensor(r_.get(), name.c_str(), &i)); !s.ok()) return s;
    return i;
  }
  Result<StreamInfo> stream(size_t tensor, size_t stream) const {
    StreamInfo info{};
    if (Status s = Check(bp_stream_info(r_.get(), tensor, stream, &info.raw)); !s.ok()) return s;
    return info;
  }
  // Zero-copy stored bytes of a stream, inside the mapping; not checked
  // against the checksums (Verify, or decode).
  Result<std::span<const std::byte>> StoredBytes(size_t tensor, size_t stream) const {
    const void* data = nullptr;
    uint64_t size = 0;
    if (Status s = Check(bp_stream_data(r_.get(), tensor, stream, &data, &size)); !s.ok()) return s;
    return std::span<const std::byte>(static_cast<const std::byte*>(data), size);
  }
  Status Verify() const { return Check(bp_verify(r_.get())); }

  Result<uint64_t> decoded_size(size_t i, bp_output out) const {
    uint64_t n = 0;
    if (Status s = Check(bp_decoded_size(r_.get(), i, out, &n)); !s.ok()) return s;
    return n;
  }
  // Decodes tensor i into dst (at least decoded_size bytes); threads <= 0:
  // all hardware threads.
  Status Decode(size_t i, bp_output out, std::span<std::byte> dst, int threads = 0) const {
    return Check(bp_decode(r_.get(), i, out, dst.data(), dst.size(), threads));
  }
  // Rows [rows.first, rows.second) of the first dimension, columns
  // [cols.first, cols.second) of the last (bp_decode_range).
  Status DecodeRange(size_t i, std::pair<uint64_t, uint64_t> rows, std::pair<uint64_t, uint64_t> cols,
                     bp_output out, std::span<std::byte> dst, int threads = 0) const {
    return Check(bp_decode_range(r_.get(), i, rows.first, rows.second, cols.first, cols.second, out,
                                 dst.data(), dst.size(), threads));
  }
  // Convenience: the whole tensor as f32 values.
  Result<std::vector<float>> DecodeF32(size_t i, int threads = 0) const {
    Result<uint64_t> n = decoded_size(i, BP_OUT_F32);
    if (!n.ok()) return n.status();
    std::vector<float> values(*n / sizeof(float));
    if (Status s = Decode(i, BP_OUT_F32, std::as_writable_bytes(std::span(values)), threads); !s.ok()) {
      return s;
    }
    return values;
  }

  size_t metadata_count() const { return bp_metadata_count(r_.get()); }
  Result<size_t> FindMetadata(const std::string& key) const {
    size_t i = 0;
    if (Status s = Check(bp_metadata_find(r_.get(), key.c_str(), &i)); !s.ok()) return s;
    return i;
  }
  std::string_view metadata_key(size_t i) const {
    const char* key = bp_metadata_key(r_.get(), i);
    return key == nullptr ? std::string_view() : key;
  }
  int metadata_type(size_t i) const { return bp_metadata_type(r_.get(), i); }
  // Bytes of a string entry (may hold NULs); valid until the reader closes.
  Result<std::string_view> MetadataString(size_t i) const {
    const char* data = nullptr;
    size_t len = 0;
    if (Status s = Check(bp_metadata_get_string(r_.get(), i, &data, &len)); !s.ok()) return s;
    return std::string_view(data, len);
  }
  Result<uint64_t> MetadataU64(size_t i) const { return Get<uint64_t>(bp_metadata_get_u64, i); }
  Result<int64_t> MetadataI64(size_t i) const { return Get<int64_t>(bp_metadata_get_i64, i); }
  Result<double> MetadataF64(size_t i) const { return Get<double>(bp_metadata_get_f64, i); }

  size_t budget_count() const { return bp_budget_count(r_.get()); }
  std::string_view budget_name(size_t i) const {
    const char* name = bp_budget_name(r_.get(), i);
    return name == nullptr ? std::string_view() : name;
  }
  // view: nullptr or "" for the reader's view.
  Result<Budget> OpenBudget(const std::string& budget, const char* view = nullptr) const {
    bp_budget* b = nullptr;
    if (Status s = Check(bp_budget_open(r_.get(), budget.c_str(), view, &b)); !s.ok()) return s;
    return Budget(b);
  }

  const bp_reader* get() const noexcept { return r_.get(); }

 private:
  explicit Reader(bp_reader* r) : r_(r) {}
  static Status Check(bp_status code) { return Status::FromLastCall(code); }
  template <typename T>
  Result<T> Get(bp_status (*getter)(const bp_reader*, size_t, T*), size_t i) const {
    T value{};
    if (Status s = Check(getter(r_.get(), i, &value)); !s.ok()) return s;
    return value;
  }
  detail::Owned<bp_reader, bp_close> r_;
};

}  // namespace bp

#endif  // BOLTPACK_BOLTPACK_HPP_
