#include "common/buffer_pool.h"

#include <sys/mman.h>

#include <cstdint>
#include <mutex>
#include <new>
#include <utility>
#include <vector>

#include "common/sanitizers.h"

namespace boltpack {
namespace {

struct Idle {
  uint8_t* bytes = nullptr;
  uint64_t capacity = 0;
};

// Bounds on what the pool keeps idle; beyond them a buffer is freed.
constexpr size_t kMaxIdleBuffers = 16;
constexpr uint64_t kMaxIdleBytes = uint64_t{256} << 20;
// Sizes are rounded up to this, so buffers of nearby sizes are interchangeable.
constexpr uint64_t kGranule = uint64_t{64} << 10;
// Buffers of a MiB or more are whole 2 MiB huge pages of a mapping of their
// own (MADV_HUGEPAGE): their first use is what a slice's first tensor
// waits for, and faulting in fresh 4 MiB took 2.7 ms in 4 KiB pages on
// this project's VM, 0.7 ms in huge pages. Where the system gives no huge
// page, the kernel falls back to small ones.
// Under AddressSanitizer every buffer comes from new[], which it guards.
constexpr uint64_t kHugeMinBytes = kUnderAddressSanitizer ? UINT64_MAX : uint64_t{1} << 20;
constexpr uint64_t kHugePage = uint64_t{2} << 20;

// Memory for a buffer of `capacity` bytes (see Capacity), or null.
uint8_t* Allocate(uint64_t capacity) {
  if (capacity < kHugeMinBytes) return new (std::nothrow) uint8_t[capacity];
  // Mapped with a huge page's slack, then trimmed to an aligned start.
  const uint64_t span = capacity + kHugePage;
  void* m = ::mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return nullptr;
  const auto base = reinterpret_cast<uintptr_t>(m);
  const uintptr_t start = (base + kHugePage - 1) & ~(kHugePage - 1);
  if (start > base) ::munmap(m, start - base);
  if (base + span > start + capacity) ::munmap(reinterpret_cast<void*>(start + capacity), base + span - start - capacity);
  (void)::madvise(reinterpret_cast<void*>(start), capacity, MADV_HUGEPAGE);  // advice only
  return reinterpret_cast<uint8_t*>(start);
}

void Free(uint8_t* bytes, uint64_t capacity) {
  if (bytes == nullptr) return;
  if (capacity < kHugeMinBytes) {
    delete[] bytes;
  } else {
    ::munmap(bytes, capacity);
  }
}

// What a buffer of `size` bytes is given: a multiple of kGranule, or of a
// huge page from kHugeMinBytes on.
uint64_t Capacity(uint64_t size) {
  const uint64_t step = size >= kHugeMinBytes ? kHugePage : kGranule;
  if (size == 0) return step;
  return size <= UINT64_MAX - (step - 1) ? (size + step - 1) / step * step : size;
}

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
    : bytes_(std::exchange(other.bytes_, nullptr)), capacity_(std::exchange(other.capacity_, 0)) {}

PooledBuffer& PooledBuffer::operator=(PooledBuffer&& other) noexcept {
  if (this != &other) {
    Release();
    bytes_ = std::exchange(other.bytes_, nullptr);
    capacity_ = std::exchange(other.capacity_, 0);
  }
  return *this;
}

uint8_t* PooledBuffer::Get(uint64_t size) {
  if (bytes_ != nullptr && capacity_ >= size) return bytes_;
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
      bytes_ = pool.idle[best].bytes;
      capacity_ = pool.idle[best].capacity;
      pool.idle_bytes -= capacity_;
      pool.idle.erase(pool.idle.begin() + static_cast<std::ptrdiff_t>(best));
      return bytes_;
    }
  }
  const uint64_t capacity = Capacity(size);
  bytes_ = Allocate(capacity);
  if (bytes_ == nullptr) throw std::bad_alloc();  // as new[] would
  capacity_ = capacity;
  return bytes_;
}

void PooledBuffer::Release() {
  if (bytes_ == nullptr) return;
  Pool& pool = ThePool();
  std::lock_guard<std::mutex> lock(pool.mu);
  if (pool.idle.size() < kMaxIdleBuffers && pool.idle_bytes + capacity_ <= kMaxIdleBytes) {
    pool.idle_bytes += capacity_;
    pool.idle.push_back({bytes_, capacity_});
  } else {
    Free(bytes_, capacity_);
  }
  bytes_ = nullptr;
  capacity_ = 0;
}

}  // namespace boltpack
