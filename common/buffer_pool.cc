#include "common/buffer_pool.h"

#include <mutex>
#include <utility>
#include <vector>

namespace boltpack {
namespace {

struct Idle {
  std::unique_ptr<uint8_t[]> bytes;
  uint64_t capacity = 0;
};

// Bounds on what the pool keeps idle; beyond them a buffer is freed.
constexpr size_t kMaxIdleBuffers = 16;
constexpr uint64_t kMaxIdleBytes = uint64_t{256} << 20;
// Sizes are rounded up to this, so buffers of nearby sizes are interchangeable.
constexpr uint64_t kGranule = uint64_t{64} << 10;

struct Pool {
  std::mutex mu;
  std::vector<Idle> idle;
  uint64_t idle_bytes = 0;
};

Pool& ThePool() {
  static Pool* pool = new Pool;  // never destroyed: buffers may be released during exit
  return *pool;
}

}  // namespace

PooledBuffer::~PooledBuffer() { Release(); }

PooledBuffer::PooledBuffer(PooledBuffer&& other) noexcept
    : bytes_(std::move(other.bytes_)), capacity_(std::exchange(other.capacity_, 0)) {}

PooledBuffer& PooledBuffer::operator=(PooledBuffer&& other) noexcept {
  if (this != &other) {
    Release();
    bytes_ = std::move(other.bytes_);
    capacity_ = std::exchange(other.capacity_, 0);
  }
  return *this;
}

uint8_t* PooledBuffer::Get(uint64_t size) {
  if (bytes_ != nullptr && capacity_ >= size) return bytes_.get();
  Release();
  Pool& pool = ThePool();
  {
    std::lock_guard<std::mutex> lock(pool.mu);
    // The smallest idle buffer that is large enough.
    size_t best = pool.idle.size();
    for (size_t i = 0; i < pool.idle.size(); ++i) {
      if (pool.idle[i].capacity >= size && (best == pool.idle.size() || pool.idle[i].capacity < pool.idle[best].capacity)) {
        best = i;
      }
    }
    if (best < pool.idle.size()) {
      bytes_ = std::move(pool.idle[best].bytes);
      capacity_ = pool.idle[best].capacity;
      pool.idle_bytes -= capacity_;
      pool.idle.erase(pool.idle.begin() + static_cast<std::ptrdiff_t>(best));
      return bytes_.get();
    }
  }
  capacity_ = size <= UINT64_MAX - kGranule ? (size / kGranule + 1) * kGranule : size;
  bytes_.reset(new uint8_t[capacity_]);
  return bytes_.get();
}

void PooledBuffer::Release() {
  if (bytes_ == nullptr) return;
  Pool& pool = ThePool();
  std::lock_guard<std::mutex> lock(pool.mu);
  if (pool.idle.size() < kMaxIdleBuffers && pool.idle_bytes + capacity_ <= kMaxIdleBytes) {
    pool.idle_bytes += capacity_;
    pool.idle.push_back({std::move(bytes_), capacity_});
  }
  bytes_.reset();
  capacity_ = 0;
}

}  // namespace boltpack
