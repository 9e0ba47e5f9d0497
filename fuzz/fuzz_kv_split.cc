// Fuzzes KvSplitCodec (include/boltpack/kv_split.h). The first byte picks:
//   - raw: the input supplies n, keep, mbits, the calibration and the
//     speculation/verification bytes handed to DecodeDraft/DecodeFull;
//   - round trip: the input's bytes are a vector that is encoded; the full
//     decode must give it back bit for bit (else the target traps), then a
//     byte of either buffer is flipped and both decoders run again. The
//     portable encoder (no SIMD/BMI2) must write the same bytes as the
//     run-time-selected one.
// Decoders must succeed or fail cleanly, never read or write out of bounds.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "boltpack/kv_split.h"
#include "codecs/bf16_spec/split_kernel.h"

namespace {

struct Input {
  const uint8_t* p;
  size_t n;
  uint8_t Byte() {
    if (n == 0) return 0;
    --n;
    return *p++;
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace boltpack;
  Input in{data, size};
  const int mode = in.Byte();
  const size_t n = 1 + (size_t{in.Byte()} << 8 | in.Byte()) % 600;
  const double keep = (1 + in.Byte()) / 256.0;
  const int mbits = in.Byte() % 8;
  std::vector<uint16_t> calib;
  if (mode & 2) {
    calib.resize(n);
    for (auto& x : calib) x = static_cast<uint16_t>(in.Byte() << 8 | in.Byte());
  }
  auto codec = KvSplitCodec::Create(n, {keep, mbits}, calib);
  if (!codec.ok()) __builtin_trap();
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
    // The serialized codec round trips.
    auto again = KvSplitCodec::Deserialize(codec->Serialize());
    if (!again.ok() || again->Serialize() != codec->Serialize()) __builtin_trap();
    return 0;
  }
  const size_t split = in.n == 0 ? 0 : (size_t{in.Byte()} << 8 | in.Byte()) % (in.n + 1);
  const std::vector<uint8_t> spec(in.p, in.p + split), verif(in.p + split, in.p + in.n);
  (void)codec->DecodeDraft(spec, absl::MakeSpan(out));
  (void)codec->DecodeFull(spec, verif, absl::MakeSpan(out));
  (void)KvSplitCodec::Deserialize(spec);
  return 0;
}
