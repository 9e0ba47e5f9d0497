// Fuzzes the bf16-huffman decoder (and, built from fuzz_decode_bf16_unary.cc,
// bf16-unary): the input supplies the shape, the code table (either derived
// from a histogram, so usually valid, or taken raw), the chunk split and the
// exponent bytes. Whatever ValidateRecord accepts must decode or fail
// cleanly, never read or write out of bounds.
//
// Work per execution follows the input: a tensor holds at most 8 elements
// per exponent byte supplied (every code is at least one bit long, so more
// could only fail for want of bytes), and one output type is decoded per
// execution (the input's size picks it), which covers the three across the
// corpus at a third of the cost; each decode parses the code table again.
// The sync points of the exponents are taken too and held against the
// decode.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "boltpack/codec_registry.h"
#include "boltpack/tensor_info.h"
#include "codecs/bf16_exp/bf16_exp_codecs.h"
#include "codecs/bf16_exp/exponent_code.h"
#include "fuzz/fuzz_input.h"

#ifndef BF16_FUZZ_CODEC
#define BF16_FUZZ_CODEC "bf16-huffman"
#endif

namespace {

using boltpack::bf16_exp::ExponentCode;

using boltpack::fuzz::Input;

// The GPU's sync points (bp_sync_points) walk the same code words: they
// exist exactly when the tensor decodes, ascend, stay inside the stream and
// end at {8 x bytes, elements}.
void CheckSyncPoints(const boltpack::TensorInfo& info, const std::vector<uint8_t>& ex, uint32_t every,
                     bool decoded) {
  auto points = boltpack::Bf16ExpSyncPoints(info, ex, every, 1);
  if (points.ok() != decoded) __builtin_trap();
  if (!points.ok()) return;
  const uint64_t elements = info.shape[0] * info.shape[1];
  if (points->empty() || points->back().bit != 8 * ex.size() || points->back().symbol != elements) {
    __builtin_trap();
  }
  for (size_t i = 1; i < points->size(); ++i) {
    const auto& a = (*points)[i - 1];
    const auto& b = (*points)[i];
    if (b.symbol < a.symbol || b.bit > 8 * ex.size()) __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace boltpack;
  const std::string id = BF16_FUZZ_CODEC;
  const Codec* codec = FindCodec(id);
  if (codec == nullptr) return 0;
  Input in{data, size};
  static constexpr OutputType kOutputs[] = {OutputType::kBF16, OutputType::kF32, OutputType::kF16};
  const OutputType out = kOutputs[size % 3];
  uint64_t rows = 1 + in.Byte() % 64;
  const uint64_t cols = 1 + (uint64_t{in.Byte()} << 8 | in.Byte()) % 1024;
  const int mode = in.Byte();
  TensorInfo info;
  info.name = "fuzz";
  info.dtype = DType::kBF16;
  info.codec_id = id;
  const bool huffman = id == "bf16-huffman";
  if (huffman) {
    std::array<uint8_t, 256> lengths{};
    if (mode & 1) {
      for (auto& l : lengths) l = in.Byte() % 16;
    } else {
      std::vector<uint64_t> freq(256);
      const int k = 1 + in.Byte() % 40;
      for (int i = 0; i < k; ++i) freq[in.Byte()] += 1 + in.Byte();
      lengths = bf16_exp::HuffmanLengths(freq, bf16_exp::kMaxHuffmanBits);
    }
    info.codec_params.push_back({"exp_code_lengths", MetaValue::String(ExponentCode::LengthsToHex(lengths))});
  } else {
    std::vector<uint8_t> ranks;
    const int k = in.Byte() % 24;
    for (int i = 0; i < k; ++i) ranks.push_back(in.Byte());
    info.codec_params.push_back({"exp_ranks", MetaValue::String(ExponentCode::RanksToHex(ranks))});
  }
  std::vector<uint8_t> ex(in.p, in.p + in.n);
  rows = std::min<uint64_t>(rows, std::max<uint64_t>(1, (8 * ex.size() + 64) / cols));
  info.shape = {rows, cols};
  const uint64_t n = rows * cols;
  std::vector<uint8_t> sm(n, 0x5a);
  StreamInfo s0, s1;
  s0.role = "sign_mantissa";
  s0.raw_length = s0.length = n;
  s1.role = "exponents";
  s1.raw_length = s1.length = ex.size();
  if ((mode & 2) && rows > 1) {
    // Two chunks: rows split at `cut`, exponent bytes at `at`.
    const uint64_t cut = 1 + (mode >> 2) % (rows - 1);
    const uint64_t at = ex.empty() ? 0 : (mode * 131u) % (ex.size() + 1);
    s0.chunks.push_back({0, cut * cols, 0, cut * cols, 0, cut, 0});
    s0.chunks.push_back({cut * cols, (rows - cut) * cols, cut * cols, (rows - cut) * cols, cut, rows - cut, 0});
    s1.chunks.push_back({0, at, 0, at, 0, cut, 0});
    s1.chunks.push_back({at, ex.size() - at, at, ex.size() - at, cut, rows - cut, 0});
  }
  info.streams = {s0, s1};
  if (!codec->ValidateRecord(info).ok()) return 0;
  DecodeInput din{&info, {sm, ex}, {0, 0}};
  if (auto bytes = codec->DecodedBytes(info, out); bytes.ok()) {
    std::vector<uint8_t> dst(*bytes);
    const bool decoded = codec->Decode(din, out, absl::MakeSpan(dst), {.threads = 1}).ok();
    CheckSyncPoints(info, ex, 1 + static_cast<uint32_t>(mode) % 300, decoded);
  }
  // A row range, handed only the bytes it asks for.
  const uint64_t a = rows / 3, b = rows - rows / 4;
  DecodeInput rin{&info, {}, {}};
  const std::vector<uint8_t>* streams[2] = {&sm, &ex};
  for (size_t k = 0; k < 2; ++k) {
    auto r = codec->RowRangeBytes(info, k, a, b);
    if (!r.ok()) return 0;
    rin.streams.push_back(absl::MakeConstSpan(*streams[k]).subspan(r->first, r->second - r->first));
    rin.raw_base.push_back(r->first);
  }
  std::vector<uint8_t> part((b - a) * cols * 2);
  (void)codec->DecodeRows(rin, a, b, OutputType::kBF16, absl::MakeSpan(part));
  return 0;
}
