// Fuzzes the bf16-spec decoder (spec/codecs-bf16-spec.md). Two kinds of
// input, picked by the first byte:
//   - raw: the input supplies shape, mbits, kept_per_row, the two exponent
//     code tables (from a histogram, so usually valid, or raw digits), the
//     chunk split and both streams' bytes;
//   - damaged: the input's bytes are bf16 values that are encoded with
//     keep/mbits from the input, then a few stream bytes are flipped, so the
//     decoder sees nearly valid data (bitmaps, lanes, padding).
// Whatever ValidateRecord accepts must decode (views full and draft, every
// output type, row ranges) or fail cleanly, never read or write out of
// bounds. An undamaged encoding must decode to the source bit for bit.
//
// Work per execution follows the input: a tensor holds at most what the
// input's bytes can describe (2 bytes a value when encoded from them, 8
// values a byte when the streams are raw: every code is at least a bit),
// and one view and one output type are decoded per execution (the input's
// size picks them), which covers all six pairs across the corpus at a sixth
// of the cost; each decode parses both code tables again.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "boltpack/codec_registry.h"
#include "boltpack/tensor_info.h"
#include "codecs/bf16_exp/exponent_code.h"
#include "codecs/encoded_record.h"
#include "fuzz/fuzz_input.h"

namespace {

using boltpack::bf16_exp::ExponentCode;

using boltpack::fuzz::Input;

// The view and output type this execution decodes.
struct Pick {
  std::string_view view;
  boltpack::OutputType out;
};

Pick PickFor(size_t size) {
  using boltpack::OutputType;
  static constexpr OutputType kOutputs[] = {OutputType::kBF16, OutputType::kF32, OutputType::kF16};
  return {size % 2 == 0 ? "full" : "draft", kOutputs[size / 2 % 3]};
}

// At most `limit` values in `rows` x `cols`: fewer rows.
uint64_t RowsWithin(uint64_t rows, uint64_t cols, uint64_t limit) {
  return std::min<uint64_t>(rows, std::max<uint64_t>(1, limit / cols));
}

void DecodeAll(const boltpack::Codec& codec, const boltpack::TensorInfo& info,
               const std::vector<std::vector<uint8_t>>& streams, Pick pick) {
  using namespace boltpack;
  if (!codec.ValidateRecord(info).ok()) return;
  {
    const std::string_view view = pick.view;
    DecodeInput din;
    din.info = &info;
    din.view = view;
    for (size_t k = 0; k < streams.size(); ++k) {
      din.streams.push_back(view == "draft" && k == 1 ? absl::Span<const uint8_t>() : absl::MakeConstSpan(streams[k]));
      din.raw_base.push_back(0);
    }
    if (auto bytes = codec.DecodedBytes(info, pick.out); bytes.ok()) {
      std::vector<uint8_t> dst(*bytes);
      (void)codec.Decode(din, pick.out, absl::MakeSpan(dst), {.threads = 1});
    }
    // A row range, handed only the bytes it asks for.
    const uint64_t rows = info.row_count();
    const uint64_t a = rows / 3, b = rows - rows / 4;
    DecodeInput rin;
    rin.info = &info;
    rin.view = view;
    for (size_t k = 0; k < streams.size(); ++k) {
      auto r = codec.RowRangeBytes(info, k, a, b);
      if (!r.ok()) return;
      if (view == "draft" && k == 1) {
        rin.streams.push_back({});
        rin.raw_base.push_back(0);
        continue;
      }
      rin.streams.push_back(absl::MakeConstSpan(streams[k]).subspan(r->first, r->second - r->first));
      rin.raw_base.push_back(r->first);
    }
    std::vector<uint8_t> part((b - a) * info.row_elements() * 2);
    (void)codec.DecodeRows(rin, a, b, OutputType::kBF16, absl::MakeSpan(part));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace boltpack;
  const Codec* codec = FindCodec("bf16-spec");
  if (codec == nullptr) return 0;
  Input in{data, size};
  const Pick pick = PickFor(size);
  const int mode = in.Byte();
  uint64_t rows = 1 + in.Byte() % 48;
  const uint64_t cols = 1 + (uint64_t{in.Byte()} << 8 | in.Byte()) % 700;
  const bool one_d = (mode & 4) != 0;
  const int mbits = in.Byte() % 8;
  rows = RowsWithin(rows, cols, (mode & 1) ? in.n / 2 + 32 : 8 * in.n + 64);
  const std::vector<uint64_t> shape = one_d ? std::vector<uint64_t>{rows * cols} : std::vector<uint64_t>{rows, cols};
  if (mode & 1) {
    // Damaged encoding.
    const double keep = (1 + in.Byte()) / 256.0;
    const int flips = in.Byte() % 4;
    std::vector<uint8_t> flip_at;
    for (int f = 0; f < 2 * flips; ++f) flip_at.push_back(in.Byte());
    std::vector<uint8_t> src(rows * cols * 2);
    for (auto& b : src) b = in.Byte();
    TensorSource ts{"fuzz", DType::kBF16, shape, src};
    auto enc = codec->Encode(ts, {{"keep", MetaValue::Float64(keep)}, {"mbits", MetaValue::Uint(ValueType::kUint64, mbits)}}, {});
    if (!enc.ok()) __builtin_trap();
    TensorInfo info = RecordFor("fuzz", DType::kBF16, shape, "bf16-spec", *enc);
    for (size_t k = 0; k < enc->streams.size(); ++k) info.streams[k].views = enc->streams[k].views;
    if (!codec->ValidateRecord(info).ok()) __builtin_trap();
    std::vector<std::vector<uint8_t>> streams = {enc->streams[0].bytes, enc->streams[1].bytes};
    if (flips == 0) {
      std::vector<uint8_t> dst(src.size());
      DecodeInput din = InputFor(info, *enc);
      if (!codec->Decode(din, OutputType::kBF16, absl::MakeSpan(dst), {}).ok() || dst != src) __builtin_trap();
    }
    for (int f = 0; f < flips; ++f) {
      auto& s = streams[flip_at[2 * f] & 1];
      if (s.empty()) continue;
      s[(flip_at[2 * f] * 7919u + flip_at[2 * f + 1]) % s.size()] ^= static_cast<uint8_t>(1u << (flip_at[2 * f + 1] % 8));
    }
    DecodeAll(*codec, info, streams, pick);
    return 0;
  }
  // Raw record.
  TensorInfo info;
  info.name = "fuzz";
  info.shape = shape;
  info.dtype = DType::kBF16;
  info.codec_id = "bf16-spec";
  const uint64_t prune_cols = one_d ? 1 : cols;
  const uint64_t k = in.Byte() % (prune_cols + 1);
  info.codec_params.push_back({"keep", MetaValue::Float64(0.5)});
  info.codec_params.push_back({"mbits", MetaValue::Uint(ValueType::kUint32, mbits)});
  info.codec_params.push_back({"kept_per_row", MetaValue::Uint(ValueType::kUint64, k)});
  info.codec_params.push_back({"scored_by", MetaValue::String("magnitude")});
  for (const char* key : {"kept_exp_code_lengths", "pruned_exp_code_lengths"}) {
    std::array<uint8_t, 256> lengths{};
    if (mode & 2) {
      for (auto& l : lengths) l = in.Byte() % 16;
    } else {
      std::vector<uint64_t> freq(256);
      const int n = 1 + in.Byte() % 40;
      for (int i = 0; i < n; ++i) freq[in.Byte()] += 1 + in.Byte();
      lengths = bf16_exp::HuffmanLengths(freq, bf16_exp::kMaxHuffmanBits);
    }
    info.codec_params.push_back({key, MetaValue::String(ExponentCode::LengthsToHex(lengths))});
  }
  const size_t split = in.n == 0 ? 0 : (uint64_t{in.Byte()} << 8 | in.Byte()) % (in.n + 1);
  std::vector<uint8_t> spec(in.p, in.p + split), verif(in.p + split, in.p + in.n);
  StreamInfo s0, s1;
  s0.role = "speculation";
  s0.raw_length = s0.length = spec.size();
  s1.role = "verification";
  s1.raw_length = s1.length = verif.size();
  s1.views = {"full"};
  if ((mode & 8) && rows > 1 && !one_d) {
    const uint64_t cut = 1 + (mode >> 4) % (rows - 1);
    const uint64_t a0 = spec.empty() ? 0 : (mode * 131u) % (spec.size() + 1);
    const uint64_t a1 = verif.empty() ? 0 : (mode * 71u) % (verif.size() + 1);
    s0.chunks.push_back({0, a0, 0, a0, 0, cut, 0});
    s0.chunks.push_back({a0, spec.size() - a0, a0, spec.size() - a0, cut, rows - cut, 0});
    s1.chunks.push_back({0, a1, 0, a1, 0, cut, 0});
    s1.chunks.push_back({a1, verif.size() - a1, a1, verif.size() - a1, cut, rows - cut, 0});
  }
  info.streams = {s0, s1};
  DecodeAll(*codec, info, {spec, verif}, pick);
  return 0;
}
