#include "io/gguf_kv_scan.h"

#include <cstring>

namespace boltpack::io {
namespace {

constexpr int32_t kString = 8, kArray = 9, kMaxType = 12;
constexpr int kMaxDepth = 8;                            // the reader refuses deeper arrays anyway
constexpr uint64_t kMaxArrayElements = uint64_t{1} << 30;  // and longer ones

// Bytes of a scalar gguf_type; 0 for string and array.
uint64_t ScalarBytes(int32_t t) {
  static constexpr uint8_t kSizes[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
  return t >= 0 && t <= kMaxType ? kSizes[t] : 0;
}

class Walk {
 public:
  Walk(absl::Span<const uint8_t> b, uint64_t limit) : b_(b), limit_(limit) {}

  GgufArrayCount Run(uint64_t n_kv) {
    GgufArrayCount out;
    for (uint64_t i = 0; i < n_kv; ++i) {
      uint64_t key_len = 0;
      int32_t type = 0;
      if (!Get(&key_len) || key_len > Left()) break;
      const size_t key_at = pos_;
      pos_ += key_len;
      const bool ok = Get(&type) && Value(type, 0);
      if (elements_ > limit_) {
        out.key.assign(reinterpret_cast<const char*>(b_.data() + key_at), key_len);
        break;
      }
      if (!ok) break;
    }
    out.elements = elements_;
    return out;
  }

 private:
  uint64_t Left() const { return b_.size() - pos_; }
  template <typename T>
  bool Get(T* v) {
    if (Left() < sizeof(T)) return false;
    std::memcpy(v, b_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool Skip(uint64_t n) {
    if (n > Left()) return false;
    pos_ += n;
    return true;
  }
  // False where the data is malformed or the count is past the limit.
  bool Value(int32_t type, int depth) {
    if (type == kString) {
      uint64_t n = 0;
      return Get(&n) && Skip(n);
    }
    if (type != kArray) return type >= 0 && type <= kMaxType && Skip(ScalarBytes(type));
    int32_t et = 0;
    uint64_t n = 0;
    if (depth >= kMaxDepth || !Get(&et) || !Get(&n) || et < 0 || et > kMaxType) return false;
    // An array that cannot fit the bytes left is malformed, not large: the
    // reader names it so. Strings and arrays take 8 bytes at least.
    const uint64_t size = ScalarBytes(et);
    if (n > kMaxArrayElements || n > Left() / (size > 0 ? size : 8)) return false;
    elements_ += n;
    if (elements_ > limit_) return false;
    if (size > 0) return Skip(n * size);
    // Strings and arrays take 8 bytes at least, so this loop is bounded by
    // the bytes left as well as by the limit.
    for (uint64_t k = 0; k < n; ++k) {
      if (!Value(et, depth + 1)) return false;
    }
    return true;
  }

  absl::Span<const uint8_t> b_;
  const uint64_t limit_;
  size_t pos_ = 0;
  uint64_t elements_ = 0;
};

}  // namespace

GgufArrayCount CountGgufArrayElements(absl::Span<const uint8_t> kv, uint64_t n_kv, uint64_t limit) {
  return Walk(kv, limit).Run(n_kv);
}

}  // namespace boltpack::io
