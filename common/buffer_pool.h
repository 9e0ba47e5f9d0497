// Scratch buffers that outlive the object using them: a slice or convert
// handles tensor after tensor, each with its own gather and decode
// buffers, and fresh memory for every tensor means faulting in and zeroing
// the same megabytes again and again (measured: half the time of a
// gathering slice). A PooledBuffer takes its memory from a process-wide
// pool and gives it back when destroyed, so the next tensor reuses warm
// pages. The pool keeps a bounded number of idle buffers.
#ifndef BOLTPACK_COMMON_BUFFER_POOL_H_
#define BOLTPACK_COMMON_BUFFER_POOL_H_

#include <cstdint>
#include <memory>

namespace boltpack {

class PooledBuffer {
 public:
  PooledBuffer() = default;
  ~PooledBuffer();
  PooledBuffer(PooledBuffer&& other) noexcept;
  PooledBuffer& operator=(PooledBuffer&& other) noexcept;
  PooledBuffer(const PooledBuffer&) = delete;
  PooledBuffer& operator=(const PooledBuffer&) = delete;

  // At least `size` bytes; their contents are unspecified (a smaller buffer
  // held so far goes back to the pool, its bytes are not carried over).
  uint8_t* Get(uint64_t size);

 private:
  void Release();
  uint8_t* bytes_ = nullptr;  // owned: new[] below a MiB, else a mapping
  uint64_t capacity_ = 0;
};

}  // namespace boltpack

#endif  // BOLTPACK_COMMON_BUFFER_POOL_H_
