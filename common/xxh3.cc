#include "common/xxh3.h"

#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t's definition
#include <xxhash.h>
#ifdef BOLTPACK_XXH3_DISPATCH
#include <xxh_x86dispatch.h>
#endif

namespace boltpack {
namespace {

#ifdef BOLTPACK_XXH3_DISPATCH
uint64_t Hash(const void* p, size_t n) { return XXH3_64bits_dispatch(p, n); }
void Update(XXH3_state_t* s, const void* p, size_t n) { XXH3_64bits_update_dispatch(s, p, n); }
#else
uint64_t Hash(const void* p, size_t n) { return XXH3_64bits(p, n); }
void Update(XXH3_state_t* s, const void* p, size_t n) { XXH3_64bits_update(s, p, n); }
#endif
void Reset(XXH3_state_t* s) { XXH3_64bits_reset(s); }

}  // namespace

struct Xxh3Stream::State {
  XXH3_state_t s;
};

uint64_t Xxh3(absl::Span<const uint8_t> bytes) { return Hash(bytes.data(), bytes.size()); }

// The state (576 bytes, 64-byte aligned) is allocated at the first bytes:
// a million streams or cuts of nothing each paid an aligned allocation for
// a hash of no bytes, whose digest is the one-shot hash of none (XXH3's
// streaming and one-shot digests agree).
Xxh3Stream::Xxh3Stream() = default;
Xxh3Stream::~Xxh3Stream() = default;

void Xxh3Stream::Reset() {
  if (state_) ::boltpack::Reset(&state_->s);
}

void Xxh3Stream::Update(absl::Span<const uint8_t> bytes) {
  if (bytes.empty()) return;
  if (!state_) {
    state_ = std::make_unique<State>();
    ::boltpack::Reset(&state_->s);
  }
  ::boltpack::Update(&state_->s, bytes.data(), bytes.size());
}

uint64_t Xxh3Stream::Digest() const { return state_ ? XXH3_64bits_digest(&state_->s) : Hash(nullptr, 0); }

}  // namespace boltpack
