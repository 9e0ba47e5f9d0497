// Fuzzes KvSplitCodec (include/boltpack/kv_split.h). The first byte picks:
//   - raw: the input supplies n, keep, mbits, the calibration and the
//     speculation/verification bytes handed to DecodeDraft/DecodeFull;
//   - round trip: the input's bytes are a vector that is encoded; the full
//     decode must give it back bit for bit (else the target traps), then a
//     byte of either buffer is flipped and both decoders run again. The
//     portable encoder (no SIMD/BMI2) must write the same bytes as the
//     run-time-selected one.
// Decoders must succeed or fail cleanly, never read or write out of bounds.
//
// A codec depends only on (n, keep, mbits, calibration), and most mutations
// leave those bytes alone, so codecs are kept in a small direct-mapped
// cache: Create (two Huffman codes and their tables) was two thirds of an
// execution, spent again on arguments already tested. Every codec's
// serialization round trip is checked once, when it is made.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

#include "boltpack/kv_split.h"
#include "codecs/bf16_spec/split_kernel.h"
#include "fuzz/fuzz_input.h"

namespace {

using boltpack::fuzz::Input;

// A codec made (and its serialization round-tripped) once per arguments.
struct CachedCodec {
  size_t n = 0;
  int keep = -1, mbits = -1;
  std::vector<uint16_t> calib;
  std::optional<boltpack::KvSplitCodec> codec;
};

void CheckRoundTrip(const boltpack::KvSplitCodec& codec) {
  auto again = boltpack::KvSplitCodec::Deserialize(codec.Serialize());
  if (!again.ok() || again->Serialize() != codec.Serialize()) __builtin_trap();
}

// Create, through a direct-mapped cache: Create is deterministic, so the
// same arguments (most mutations leave n, keep, mbits and the calibration
// alone) need not build the same two codes again.
boltpack::KvSplitCodec CodecFor(size_t n, int keep_byte, int mbits, const std::vector<uint16_t>& calib) {
  static std::array<CachedCodec, 256> cache;
  size_t h = n * 31 + static_cast<size_t>(keep_byte) * 7 + static_cast<size_t>(mbits);
  for (uint16_t x : calib) h = h * 1099511628211u + x;
  CachedCodec& slot = cache[h % cache.size()];
  if (!slot.codec || slot.n != n || slot.keep != keep_byte || slot.mbits != mbits || slot.calib != calib) {
    auto codec = boltpack::KvSplitCodec::Create(n, {(1 + keep_byte) / 256.0, mbits}, calib);
    if (!codec.ok()) __builtin_trap();
    CheckRoundTrip(*codec);
    slot = {n, keep_byte, mbits, calib, *std::move(codec)};
  }
  return *slot.codec;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace boltpack;
  Input in{data, size};
  const int mode = in.Byte();
  const size_t n = 1 + (size_t{in.Byte()} << 8 | in.Byte()) % 600;
  const int keep_byte = in.Byte();
  const int mbits = in.Byte() % 8;
  std::vector<uint16_t> calib;
  if (mode & 2) {
    calib.resize(n);
    for (auto& x : calib) x = static_cast<uint16_t>(in.Byte() << 8 | in.Byte());
  }
  const KvSplitCodec codec_value = CodecFor(n, keep_byte, mbits, calib);
  const KvSplitCodec* codec = &codec_value;
  std::vector<uint16_t> out(n);
  if (mode & 1) {
    std::vector<uint16_t> v(n);
    for (auto& x : v) x = static_cast<uint16_t>(in.Byte() << 8 | in.Byte());
    std::vector<uint8_t> spec(codec->max_speculation_bytes()), verif(codec->max_verification_bytes());
    auto sizes = codec->Encode(v, absl::MakeSpan(spec), absl::MakeSpan(verif));
    if (!sizes.ok()) __builtin_trap();
    spec.resize(sizes->speculation);
    verif.resize(sizes->verification);
    {
      std::vector<uint8_t> ps(codec->max_speculation_bytes()), pw(codec->max_verification_bytes());
      boltpack::bf16_spec::SetKvSplitPortableForTesting(true);
      auto psizes = codec->Encode(v, absl::MakeSpan(ps), absl::MakeSpan(pw));
      std::vector<uint16_t> pout(n);
      const bool pfull = psizes.ok() && codec->DecodeFull(spec, verif, absl::MakeSpan(pout)).ok() && pout == v;
      boltpack::bf16_spec::SetKvSplitPortableForTesting(false);
      if (!psizes.ok() || psizes->speculation != spec.size() || psizes->verification != verif.size() || !pfull ||
          std::memcmp(ps.data(), spec.data(), spec.size()) != 0 ||
          std::memcmp(pw.data(), verif.data(), verif.size()) != 0) {
        __builtin_trap();
      }
    }
    if (!codec->DecodeFull(spec, verif, absl::MakeSpan(out)).ok() || out != v) __builtin_trap();
    if (!codec->DecodeDraft(spec, absl::MakeSpan(out)).ok()) __builtin_trap();
    const uint8_t a = in.Byte(), b = in.Byte();
    auto& s = (a & 1) ? spec : verif;
    if (!s.empty()) s[(a * 257u + b) % s.size()] ^= static_cast<uint8_t>(1u << (b % 8));
    (void)codec->DecodeFull(spec, verif, absl::MakeSpan(out));
    (void)codec->DecodeDraft(spec, absl::MakeSpan(out));
    return 0;
  }
  const size_t split = in.n == 0 ? 0 : (size_t{in.Byte()} << 8 | in.Byte()) % (in.n + 1);
  const std::vector<uint8_t> spec(in.p, in.p + split), verif(in.p + split, in.p + in.n);
  (void)codec->DecodeDraft(spec, absl::MakeSpan(out));
  (void)codec->DecodeFull(spec, verif, absl::MakeSpan(out));
  (void)KvSplitCodec::Deserialize(spec);
  return 0;
}
