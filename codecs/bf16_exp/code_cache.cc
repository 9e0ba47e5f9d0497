#include "codecs/bf16_exp/code_cache.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "common/status_macros.h"

namespace boltpack::bf16_exp {
namespace {

// Huffman lengths are 256 digits, unary ranks at most 40.
constexpr size_t kMaxCachedText = 512;

struct Entry {
  ExponentCode::Kind kind;
  ExponentCode::Tables tables;
  size_t hash;
  std::string text;
  absl::StatusOr<SharedCode> code;
  size_t bytes;
  uint64_t last_use;
};

absl::StatusOr<SharedCode> Build(ExponentCode::Kind kind, std::string_view text, ExponentCode::Tables tables) {
  if (kind == ExponentCode::Kind::kHuffman) {
    BP_ASSIGN_OR_RETURN(auto lengths, ExponentCode::LengthsFromHex(text));
    BP_ASSIGN_OR_RETURN(ExponentCode code, ExponentCode::Huffman(lengths, tables));
    return std::make_shared<const ExponentCode>(std::move(code));
  }
  BP_ASSIGN_OR_RETURN(auto ranks, ExponentCode::RanksFromHex(text));
  BP_ASSIGN_OR_RETURN(ExponentCode code, ExponentCode::Unary(ranks, tables));
  return std::make_shared<const ExponentCode>(std::move(code));
}

class CodeCache {
 public:
  absl::StatusOr<SharedCode> Get(ExponentCode::Kind kind, std::string_view text, ExponentCode::Tables tables) {
    // No parameter this long parses: not worth an entry.
    if (text.size() > kMaxCachedText) return Build(kind, text, tables);
    const size_t hash = std::hash<std::string_view>{}(text);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (Entry* e = Find(kind, tables, hash, text)) {
        e->last_use = ++clock_;
        return e->code;
      }
    }
    // Built outside the lock: other threads keep hitting while one builds.
    builds_.fetch_add(1, std::memory_order_relaxed);
    absl::StatusOr<SharedCode> code = Build(kind, text, tables);
    const size_t bytes = text.size() + (code.ok() ? (*code)->TableBytes() : 0);
    std::lock_guard<std::mutex> lock(mu_);
    if (Entry* e = Find(kind, tables, hash, text)) return e->code;  // another thread built it meanwhile
    while (!entries_.empty() && (entries_.size() >= kCodeCacheEntries || bytes_ + bytes > kCodeCacheBytes)) {
      EvictOldest();
    }
    entries_.push_back(Entry{kind, tables, hash, std::string(text), code, bytes, ++clock_});
    bytes_ += bytes;
    return code;
  }

  size_t builds() const { return builds_.load(std::memory_order_relaxed); }

 private:
  Entry* Find(ExponentCode::Kind kind, ExponentCode::Tables tables, size_t hash, std::string_view text) {
    for (Entry& e : entries_) {
      if (e.hash == hash && e.kind == kind && e.tables == tables && e.text == text) return &e;
    }
    return nullptr;
  }

  void EvictOldest() {
    size_t oldest = 0;
    for (size_t i = 1; i < entries_.size(); ++i) {
      if (entries_[i].last_use < entries_[oldest].last_use) oldest = i;
    }
    bytes_ -= entries_[oldest].bytes;
    entries_[oldest] = std::move(entries_.back());
    entries_.pop_back();
  }

  std::mutex mu_;
  std::vector<Entry> entries_;
  size_t bytes_ = 0;
  uint64_t clock_ = 0;
  std::atomic<size_t> builds_{0};
};

CodeCache& Cache() {
  static CodeCache* cache = new CodeCache;  // never destroyed: decodes may run during exit
  return *cache;
}

}  // namespace

absl::StatusOr<SharedCode> CachedCode(ExponentCode::Kind kind, std::string_view text, ExponentCode::Tables tables) {
  return Cache().Get(kind, text, tables);
}

size_t CodeCacheBuilds() { return Cache().builds(); }

}  // namespace boltpack::bf16_exp
