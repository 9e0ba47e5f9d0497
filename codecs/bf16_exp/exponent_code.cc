#include "codecs/bf16_exp/exponent_code.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <utility>

#include "codecs/bf16_exp/bit_io.h"
#include "common/cpu_features.h"
#include "common/status_macros.h"
#include "common/str_cat.h"

namespace boltpack::bf16_exp {
namespace {

absl::Status Corrupt(std::string_view what) { return absl::DataLossError(StrCat("exponent bits: ", what)); }

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// Plain Huffman code lengths (unlimited) of the symbols with f > 0, as a
// min-heap of (frequency, node) would build them: leaves are nodes 0..255,
// merged nodes 256, 257, ... in merge order. Its ties decide the lengths,
// which files store, so they must not change. Merged nodes come out with
// non-decreasing frequencies and increasing ids, so two sorted queues
// (leaves by (frequency, id), merged nodes in merge order) give exactly the
// heap's order in O(n); depths are read top-down because a parent is always
// created after its children. `leaves`: the `present` symbols with f > 0,
// sorted by (frequency, symbol).
std::array<int, 256> PlainLengths(const std::array<uint64_t, 256>& f, const std::array<uint16_t, 256>& leaves,
                                  int present) {
  constexpr int kLeaves = 256;
  std::array<uint64_t, kLeaves> merged_freq;
  std::array<int16_t, 2 * kLeaves> parent;
  int next_leaf = 0, next_merged = 0, merged = 0;
  // The smaller of the two queue heads; a leaf wins a tie (its id is lower).
  auto pop = [&]() -> std::pair<uint64_t, int> {
    const bool leaf = next_merged == merged ||
                      (next_leaf < present && f[leaves[next_leaf]] <= merged_freq[next_merged]);
    if (leaf) {
      const int s = leaves[next_leaf++];
      return {f[s], s};
    }
    const int j = next_merged++;
    return {merged_freq[j], kLeaves + j};
  };
  for (int left = present; left > 1; --left) {
    const auto a = pop();
    const auto b = pop();
    parent[a.second] = static_cast<int16_t>(kLeaves + merged);
    parent[b.second] = static_cast<int16_t>(kLeaves + merged);
    merged_freq[merged++] = a.first + b.first;
  }
  std::array<int, 2 * kLeaves> depth{};
  for (int j = merged - 2; j >= 0; --j) depth[kLeaves + j] = depth[parent[kLeaves + j]] + 1;
  std::array<int, 256> len{};
  for (int i = 0; i < present && merged > 0; ++i) len[leaves[i]] = depth[parent[leaves[i]]] + 1;
  return len;
}

}  // namespace

std::array<uint8_t, 256> HuffmanLengths(absl::Span<const uint64_t> freq, int max_bits) {
  std::array<uint8_t, 256> out{};
  std::array<uint64_t, 256> f{};
  int present = 0;
  for (int s = 0; s < 256 && s < static_cast<int>(freq.size()); ++s) {
    f[s] = freq[s];
    present += f[s] > 0;
  }
  if (present == 0) return out;
  if (present == 1) {
    for (int s = 0; s < 256; ++s) out[s] = f[s] > 0 ? 1 : 0;
    return out;
  }
  std::array<uint16_t, 256> leaves;
  present = 0;
  for (int s = 0; s < 256; ++s) {
    if (f[s] > 0) leaves[present++] = static_cast<uint16_t>(s);
  }
  auto before = [&f](uint16_t a, uint16_t b) { return f[a] != f[b] ? f[a] < f[b] : a < b; };
  std::sort(leaves.begin(), leaves.begin() + present, before);
  // Flatten the distribution until the tree fits in max_bits (at most 256
  // symbols always fit in 12 bits once the frequencies are equal enough).
  for (;;) {
    std::array<int, 256> len = PlainLengths(f, leaves, present);
    int longest = 0;
    for (int s = 0; s < 256; ++s) longest = std::max(longest, len[s]);
    if (longest <= max_bits) {
      for (int s = 0; s < 256; ++s) out[s] = static_cast<uint8_t>(len[s]);
      return out;
    }
    for (auto& x : f) {
      if (x > 0) x = (x >> 1) | 1;
    }
    // Halving keeps the order of frequencies (x >> 1 | 1 never decreases
    // with x) but makes new ties, which go by symbol: only those move, so an
    // insertion sort costs about one pass.
    for (int i = 1; i < present; ++i) {
      const uint16_t x = leaves[i];
      int j = i;
      for (; j > 0 && before(x, leaves[j - 1]); --j) leaves[j] = leaves[j - 1];
      leaves[j] = x;
    }
  }
}

std::vector<uint8_t> UnaryRanks(absl::Span<const uint64_t> freq) {
  std::vector<std::pair<uint64_t, int>> order;
  for (int s = 0; s < 256 && s < static_cast<int>(freq.size()); ++s) {
    if (freq[s] > 0) order.push_back({freq[s], s});
  }
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  const int max_k = std::min<int>(kMaxUnaryRanks, static_cast<int>(order.size()));
  uint64_t total = 0;
  for (const auto& o : order) total += o.first;
  // cost(K) = sum_{r<K} f_r (r+1) + (sum_{r>=K} f_r) (K+8), in 128-bit-safe
  // doubles (only the argmin matters).
  int best_k = 0;
  double best = static_cast<double>(total) * 8.0;
  double ranked_cost = 0;
  uint64_t ranked = 0;
  for (int k = 1; k <= max_k; ++k) {
    ranked_cost += static_cast<double>(order[k - 1].first) * k;
    ranked += order[k - 1].first;
    const double cost = ranked_cost + static_cast<double>(total - ranked) * (k + 8);
    if (cost < best) {
      best = cost;
      best_k = k;
    }
  }
  std::vector<uint8_t> ranks;
  for (int k = 0; k < best_k; ++k) ranks.push_back(static_cast<uint8_t>(order[k].second));
  return ranks;
}

absl::StatusOr<ExponentCode> ExponentCode::Huffman(absl::Span<const uint8_t> lengths) {
  return Huffman(lengths, Tables::kFull);
}

absl::StatusOr<ExponentCode> ExponentCode::Unary(absl::Span<const uint8_t> ranks) {
  return Unary(ranks, Tables::kFull);
}

namespace {
int MultiBits(ExponentCode::Tables tables) {
  switch (tables) {
    case ExponentCode::Tables::kFull:
      return kLutBits;
    case ExponentCode::Tables::kCompact:
      return kCompactLutBits;
    case ExponentCode::Tables::kSingle:
      break;
  }
  return 0;
}
}  // namespace

ExponentCode::Tables TablesForValues(uint64_t values) {
  if (values >= 65536) return ExponentCode::Tables::kFull;
  return values >= 1024 ? ExponentCode::Tables::kCompact : ExponentCode::Tables::kSingle;
}

absl::StatusOr<std::array<uint32_t, 256>> ExponentCode::HuffmanCodeWords(absl::Span<const uint8_t> lengths) {
  if (lengths.size() != 256) return absl::InvalidArgumentError("need 256 code lengths");
  uint64_t kraft = 0;
  int present = 0;
  int longest = 0;
  for (int s = 0; s < 256; ++s) {
    const int l = lengths[s];
    if (l > kMaxHuffmanBits) {
      return absl::InvalidArgumentError(StrCat("code length ", l, " of exponent ", s, " exceeds ", kMaxHuffmanBits));
    }
    if (l == 0) continue;
    ++present;
    longest = std::max(longest, l);
    kraft += uint64_t{1} << (kMaxHuffmanBits - l);
  }
  const bool single = present == 1 && longest == 1;
  if (present > 0 && !single && kraft != (uint64_t{1} << kMaxHuffmanBits)) {
    return absl::InvalidArgumentError(StrCat("code lengths are ", kraft > (uint64_t{1} << kMaxHuffmanBits) ? "over-subscribed" : "incomplete",
                                             " (Kraft sum ", kraft, "/4096)"));
  }
  // Canonical codes: by (length, exponent), DEFLATE's construction.
  uint32_t count[kMaxHuffmanBits + 1] = {};
  for (int s = 0; s < 256; ++s) ++count[lengths[s]];
  count[0] = 0;
  uint32_t next[kMaxHuffmanBits + 2] = {};
  for (int l = 1; l <= kMaxHuffmanBits; ++l) next[l + 1] = (next[l] + count[l]) << 1;
  std::array<uint32_t, 256> words{};
  for (int s = 0; s < 256; ++s) {
    if (lengths[s] != 0) words[s] = next[lengths[s]]++;
  }
  return words;
}

absl::StatusOr<ExponentCode> ExponentCode::Huffman(absl::Span<const uint8_t> lengths, Tables tables) {
  auto words = HuffmanCodeWords(lengths);
  if (!words.ok()) return words.status();
  ExponentCode c;
  c.kind_ = Kind::kHuffman;
  int longest = 0;
  for (int s = 0; s < 256; ++s) {
    if (lengths[s] == 0) continue;
    c.code_[s] = (*words)[s];
    c.len_[s] = lengths[s];
    longest = std::max<int>(longest, lengths[s]);
  }
  c.max_bits_ = std::max(longest, 1);
  c.BuildTables(MultiBits(tables));
  return c;
}

absl::StatusOr<ExponentCode> ExponentCode::Unary(absl::Span<const uint8_t> ranks, Tables tables) {
  if (ranks.size() > static_cast<size_t>(kMaxUnaryRanks)) {
    return absl::InvalidArgumentError(StrCat(ranks.size(), " ranked exponents, at most ", kMaxUnaryRanks));
  }
  ExponentCode c;
  c.kind_ = Kind::kUnary;
  c.ranks_ = static_cast<int>(ranks.size());
  for (size_t r = 0; r < ranks.size(); ++r) {
    if (c.ranked_[ranks[r]]) return absl::InvalidArgumentError(StrCat("exponent ", ranks[r], " ranked twice"));
    c.ranked_[ranks[r]] = true;
    c.rank_sym_[r] = ranks[r];
  }
  const int k = c.ranks_;
  for (int s = 0; s < 256; ++s) {
    c.code_[s] = s;
    c.len_[s] = static_cast<uint8_t>(k + 8);
  }
  for (int r = 0; r < k; ++r) {
    c.code_[ranks[r]] = 1;
    c.len_[ranks[r]] = static_cast<uint8_t>(r + 1);
  }
  c.max_bits_ = k + 8;
  c.BuildTables(MultiBits(tables));
  return c;
}

namespace {

// Multi-symbol table construction. An entry of D_w (the decode of a w-bit
// window) holds up to kLutMaxSymbols = 5 symbols in bits 0..39 (first in the
// low byte) and the cumulative bit count after each symbol in the nibbles of
// bits 40..59 (0 past the last symbol; a code word has >= 1 bit, so the
// valid nibbles are exactly the non-zero ones). Entry 0 is "no symbol".
constexpr uint64_t kSymMask = (uint64_t{1} << (8 * kLutMaxSymbols)) - 1;
constexpr uint64_t kCumMask = (uint64_t{1} << (4 * kLutMaxSymbols)) - 1;
constexpr uint64_t kNibbleOnes = 0x11111;
static_assert(kLutMaxSymbols == 5, "the masks above assume 5 symbols");

// dst[k] = (symbol s of l bits) followed by src[k], capped at 5 symbols. Only
// constant shifts and masks, so it vectorises (SSE2, or AVX2 below).
inline void PrependRun(const uint64_t* __restrict src, uint64_t* __restrict dst, uint32_t n, uint64_t s, uint64_t l) {
  const uint64_t add = l * kNibbleOnes;
  for (uint32_t k = 0; k < n; ++k) {
    const uint64_t r = src[k];
    const uint64_t c = (r >> 40) & kCumMask;
    const uint64_t v = (c | c >> 1 | c >> 2 | c >> 3) & kNibbleOnes;  // 1 per valid nibble
    const uint64_t valid = (v << 4) - v;                               // 0xf per valid nibble
    const uint64_t cum = (((c + (valid & add)) << 4) | l) & kCumMask;
    dst[k] = (((r << 8) | s) & kSymMask) | cum << 40;
  }
}

// D_kLutBits entries -> decode entries (0 stays 0). Branch-free, so it
// vectorises too.
inline void FinishTable(const uint64_t* __restrict d, uint64_t* __restrict lut, uint32_t n) {
  for (uint32_t j = 0; j < n; ++j) {
    const uint64_t e = d[j];
    const uint64_t c = (e >> 40) & kCumMask;
    const uint64_t v = (c | c >> 1 | c >> 2 | c >> 3) & kNibbleOnes;
    const uint64_t count = (v & 1) + ((v >> 4) & 1) + ((v >> 8) & 1) + ((v >> 12) & 1) + (v >> 16);
    const uint64_t bits = (c >> ((count * 4 - 4) & 63)) & 15;  // the last valid nibble; 0 when c = 0
    lut[j] = (e & kSymMask) | uint64_t{count != 0} << kLutValidBit | bits << 48 | count << 56;
  }
}

#if defined(__x86_64__) || defined(_M_X64)
__attribute__((target("avx2"))) void FinishTableAvx2(const uint64_t* d, uint64_t* lut, uint32_t n) {
  FinishTable(d, lut, n);
}

__attribute__((target("avx2"))) void PrependRunAvx2(const uint64_t* src, uint64_t* dst, uint32_t n, uint64_t s,
                                                    uint64_t l) {
  PrependRun(src, dst, n, s, l);
}
#endif

}  // namespace

void ExponentCode::BuildTables(int multi_bits) {
  constexpr uint32_t kSize1 = uint32_t{1} << kLutBits;
  for (int s = 0; s < 256; ++s) {
    lcode_[s] = len_[s] == 0 ? 0 : static_cast<uint64_t>(code_[s]) << (64 - len_[s]);
  }
  // The code words that fit in the table: Huffman: every coded exponent;
  // unary: the ranks, and the escapes of unranked exponents (an escape of a
  // ranked exponent is not a code word, so it takes the slow path, which
  // rejects it).
  struct Word {
    uint32_t code;
    uint32_t len;
    uint8_t sym;
  };
  Word words[256];
  int nwords = 0;
  lut1_.assign(kSize1, 0);
  for (int s = 0; s < 256; ++s) {
    const int l = len_[s];
    if (l == 0 || l > kLutBits) continue;
    if (l <= multi_bits) words[nwords++] = Word{code_[s], static_cast<uint32_t>(l), static_cast<uint8_t>(s)};
    const uint32_t first = code_[s] << (kLutBits - l);
    const uint32_t last = (code_[s] + 1) << (kLutBits - l);
    std::fill(lut1_.begin() + first, lut1_.begin() + last, static_cast<uint16_t>(s | (l << 8)));
  }
  lut_.clear();
  lut_bits_ = multi_bits;
  if (multi_bits == 0) return;
  // Code words longer than the window are left to the slow path (entry 0).
  const uint32_t kSize = uint32_t{1} << multi_bits;
  // D_w for w = 0..kLutBits at [2^w - 1, 2^(w+1) - 1): D_w[j] is the first
  // code word of j (length l <= w) followed by D_{w-l}[j's low w-l bits].
  // Each entry is built once, so the whole table costs O(2^(kLutBits+1)).
  std::vector<uint64_t> d(2 * kSize - 1, 0);
#if defined(__x86_64__) || defined(_M_X64)
  static const bool avx2 = DetectCpuFeatures().avx2;
#endif
  for (uint32_t w = 1; w <= static_cast<uint32_t>(multi_bits); ++w) {
    uint64_t* level = d.data() + ((uint32_t{1} << w) - 1);
    for (int i = 0; i < nwords; ++i) {
      const Word& c = words[i];
      if (c.len > w) continue;
      const uint32_t rest_w = w - c.len;
      const uint64_t* rest = d.data() + ((uint32_t{1} << rest_w) - 1);
      uint64_t* dst = level + (c.code << rest_w);
#if defined(__x86_64__) || defined(_M_X64)
      if (avx2) {
        PrependRunAvx2(rest, dst, uint32_t{1} << rest_w, c.sym, c.len);
        continue;
      }
#endif
      PrependRun(rest, dst, uint32_t{1} << rest_w, c.sym, c.len);
    }
  }
  // Decode entries: symbols in bits 0..39, bits in 48..55, count in 56..63.
  lut_.resize(kSize);
#if defined(__x86_64__) || defined(_M_X64)
  if (avx2) {
    FinishTableAvx2(d.data() + (kSize - 1), lut_.data(), kSize);
    return;
  }
#endif
  FinishTable(d.data() + (kSize - 1), lut_.data(), kSize);
}

bool ExponentCode::DecodeSlow(uint64_t w, uint8_t* sym, int* len) const {
  if (kind_ == Kind::kHuffman) {
    // Every valid code word is in the single-symbol table; one longer than
    // a compact multi-symbol window lands here from DecodeFast.
    const uint16_t e = lut1_[w >> (64 - kLutBits)];
    if (e == 0) return false;
    *sym = static_cast<uint8_t>(e);
    *len = e >> 8;
    return true;
  }
  const int z = w == 0 ? 64 : __builtin_clzll(w);
  if (z < ranks_) {
    *sym = rank_sym_[z];
    *len = z + 1;
    return true;
  }
  const uint8_t s = static_cast<uint8_t>((w << ranks_) >> 56);
  if (ranked_[s]) return false;  // a ranked exponent must use its rank
  *sym = s;
  *len = ranks_ + 8;
  return true;
}

namespace {

// MSB-first 64-bit bit writer: `G` codes of at most `max_bits` bits each
// (G * max_bits <= 56, so the accumulator never holds 64 bits) are OR-ed into the accumulator, then 8 bytes are
// stored and the whole bytes dropped. The output needs 8 bytes of slack.
template <int G>
size_t EncodeGroups(const uint64_t* lcode, const uint8_t* len, const uint8_t* syms, size_t n, uint8_t* out) {
  uint8_t* const begin = out;
  uint64_t acc = 0;
  uint32_t filled = 0;
  size_t i = 0;
  for (; i + G <= n; i += G) {
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) {
      const uint8_t s = syms[i + g];
      acc |= lcode[s] >> filled;
      filled += len[s];
    }
    const uint64_t be = __builtin_bswap64(acc);
    std::memcpy(out, &be, 8);
    out += filled >> 3;
    acc <<= filled & ~7u;
    filled &= 7;
  }
  for (; i < n; ++i) {
    const uint8_t s = syms[i];
    acc |= lcode[s] >> filled;
    filled += len[s];
    const uint64_t be = __builtin_bswap64(acc);
    std::memcpy(out, &be, 8);
    out += filled >> 3;
    acc <<= filled & ~7u;
    filled &= 7;
  }
  if (filled > 0) *out++ = static_cast<uint8_t>(acc >> 56);
  return static_cast<size_t>(out - begin);
}

}  // namespace

size_t ExponentCode::EncodeLane(const uint8_t* syms, size_t n, uint8_t* out) const {
  const int g = 56 / std::max(max_bits_, 1);
  if (g >= 4) return EncodeGroups<4>(lcode_.data(), len_.data(), syms, n, out);
  if (g == 3) return EncodeGroups<3>(lcode_.data(), len_.data(), syms, n, out);
  return EncodeGroups<2>(lcode_.data(), len_.data(), syms, n, out);
}

struct ExponentCode::Lane {
  const uint8_t* p;
  size_t size;
  uint64_t pos;  // bits consumed
  uint8_t* out;
  uint8_t* out_end;
};

namespace {

// Decoder rounds over N lanes: per lane one 64-bit load (>= 57 valid bits),
// then kGroup lookups of a kBits-bit window in `lut`, each storing its
// entry's 8 bytes (up to kLutMaxSymbols symbols) and advancing by its count.
// A slow-path entry is 0: it writes zeros and consumes nothing, so the later
// lookups of the round repeat it and the round's last entry is 0 exactly
// when it met one (every other entry has kLutValidBit set: one AND per lane
// tests them all). A sentinel bit below the window counts the bits
// consumed: after the round its position is their number (at most
// kGroup * kBits < 57, so it is never shifted out nor enters a window).
// Runs at most `iters` rounds, stopping after one that met a slow-path
// entry; returns those lanes (bit k) and the rounds run in *done.
inline constexpr int kGroup = 4;
static_assert(kGroup * kLutBits <= 56, "a round must fit one load, its sentinel below");

template <int N, int kBits>
[[gnu::always_inline]] inline unsigned Rounds(const uint64_t* __restrict lut, const uint8_t* const* lane_p,
                                              uint64_t* lane_pos, uint8_t** lane_out, uint64_t iters, uint64_t* done) {
  // Local copies: the byte stores could alias the callers' arrays.
  const uint8_t* p[N];
  uint64_t pos[N];
  uint8_t* out[N];
  for (int k = 0; k < N; ++k) {
    p[k] = lane_p[k];
    pos[k] = lane_pos[k];
    out[k] = lane_out[k];
  }
  uint64_t i = 0;
  unsigned slow = 0;
  for (; i < iters && slow == 0; ++i) {
    uint64_t w[N], e[N];
#pragma GCC unroll 8
    for (int k = 0; k < N; ++k) w[k] = (LoadBE64(p[k] + (pos[k] >> 3)) << (pos[k] & 7)) | 1;
#pragma GCC unroll 4
    for (int g = 0; g < kGroup; ++g) {
#pragma GCC unroll 8
      for (int k = 0; k < N; ++k) {
        e[k] = lut[w[k] >> (64 - kBits)];
        std::memcpy(out[k], &e[k], 8);
        out[k] += e[k] >> 56;          // symbol count
        w[k] <<= (e[k] >> 48) & 63;    // bits used (at most kBits)
      }
    }
    uint64_t valid = ~uint64_t{0};
#pragma GCC unroll 8
    for (int k = 0; k < N; ++k) {
      pos[k] += static_cast<unsigned>(__builtin_ctzll(w[k]));
      valid &= e[k];
    }
    if (__builtin_expect(((valid >> kLutValidBit) & 1) == 0, 0)) {
      for (int k = 0; k < N; ++k) slow |= static_cast<unsigned>(e[k] == 0) << k;
    }
  }
  for (int k = 0; k < N; ++k) {
    lane_pos[k] = pos[k];
    lane_out[k] = out[k];
  }
  *done = i;
  return slow;
}

template <int N, int kBits>
unsigned RoundsPortable(const uint64_t* lut, const uint8_t* const* p, uint64_t* pos, uint8_t** out, uint64_t iters,
                        uint64_t* done) {
  return Rounds<N, kBits>(lut, p, pos, out, iters, done);
}

#if defined(__x86_64__) || defined(_M_X64)
// The same with BMI2's shifts by a register (no shift-count moves) and
// BMI1's tzcnt.
template <int N, int kBits>
__attribute__((target("bmi,bmi2"))) unsigned RoundsBmi2(const uint64_t* lut, const uint8_t* const* p, uint64_t* pos,
                                                         uint8_t** out, uint64_t iters, uint64_t* done) {
  return Rounds<N, kBits>(lut, p, pos, out, iters, done);
}
#endif

using RoundsFn = unsigned (*)(const uint64_t*, const uint8_t* const*, uint64_t*, uint8_t**, uint64_t, uint64_t*);

// The rounds for a window of `bits` (kLutBits or kCompactLutBits) on this CPU.
template <int N>
RoundsFn PickRounds(int bits) {
#if defined(__x86_64__) || defined(_M_X64)
  static const bool bmi2 = DetectCpuFeatures().bmi2;
  if (bmi2) return bits == kLutBits ? RoundsBmi2<N, kLutBits> : RoundsBmi2<N, kCompactLutBits>;
#endif
  return bits == kLutBits ? RoundsPortable<N, kLutBits> : RoundsPortable<N, kCompactLutBits>;
}

}  // namespace

template <int N>
absl::Status ExponentCode::DecodeFast(Lane* lanes) const {
  const uint64_t* lut = lut_.data();
  const int bits = lut_bits_;
  // Bits per round: kGroup windows and one slow-path code word.
  const uint64_t in_step = static_cast<uint64_t>(kGroup * bits + std::max<int>(max_bits_, bits));
  // Output per round: kGroup entries of up to kLutMaxSymbols symbols, each
  // stored as 8 bytes, and one slow symbol.
  constexpr uint64_t kOutStep = 32;
  static_assert(kGroup * kLutMaxSymbols + 8 <= kOutStep, "output slack");
  const RoundsFn rounds = PickRounds<N>(bits);
  for (;;) {
    uint64_t iters = ~uint64_t{0};
    for (int k = 0; k < N; ++k) {
      const Lane& l = lanes[k];
      // Every load in a round starts at a bit <= (size - 8) * 8.
      if (l.size < 8 || l.pos > (l.size - 8) * 8) return absl::OkStatus();
      iters = std::min(iters, ((l.size - 8) * 8 - l.pos) / in_step);
      iters = std::min(iters, static_cast<uint64_t>(l.out_end - l.out) / kOutStep);
    }
    if (iters == 0) return absl::OkStatus();
    const uint8_t* p[N];
    uint64_t pos[N];
    uint8_t* out[N];
    for (int k = 0; k < N; ++k) {
      p[k] = lanes[k].p;
      pos[k] = lanes[k].pos;
      out[k] = lanes[k].out;
    }
    while (iters > 0) {
      uint64_t done = 0;
      const unsigned slow = rounds(lut, p, pos, out, iters, &done);
      iters -= done;
      for (int k = 0; k < N; ++k) {
        if (((slow >> k) & 1) == 0) continue;
        // The slow-path code word of the round, within its in_step bits.
        const uint64_t ws = LoadBE64(p[k] + (pos[k] >> 3)) << (pos[k] & 7);
        uint8_t s;
        int len;
        if (!DecodeSlow(ws, &s, &len)) return Corrupt("invalid code word");
        *out[k]++ = s;
        pos[k] += static_cast<uint64_t>(len);
      }
    }
    for (int k = 0; k < N; ++k) {
      lanes[k].pos = pos[k];
      lanes[k].out = out[k];
    }
  }
}

absl::Status ExponentCode::DecodeTail(Lane& l) const {
  const uint8_t* end = l.p + l.size;
  while (l.out < l.out_end) {
    const uint64_t byte = std::min<uint64_t>(l.pos >> 3, l.size);
    const uint64_t w = LoadBE64Bounded(l.p + byte, end) << (l.pos & 7);
    const uint16_t e = lut1_[w >> (64 - kLutBits)];
    uint8_t s;
    int len;
    if (e == 0) {
      if (!DecodeSlow(w, &s, &len)) return Corrupt("invalid code word");
    } else {
      s = static_cast<uint8_t>(e);
      len = e >> 8;
    }
    *l.out++ = s;
    l.pos += static_cast<uint64_t>(len);
    if (l.pos > l.size * 8) return Corrupt("lane ends in the middle of a code word");
  }
  if ((l.pos + 7) / 8 != l.size) return Corrupt("lane has unused bytes at its end");
  if ((l.pos & 7) != 0 && (l.p[l.size - 1] & ((1u << (8 - (l.pos & 7))) - 1)) != 0) {
    return Corrupt("lane padding bits are not zero");
  }
  return absl::OkStatus();
}

absl::Status ExponentCode::DecodeLanes(const uint8_t* const* data, const size_t* size, uint8_t* const* out,
                                       const size_t* count, int lanes) const {
  Lane l[kLanes];
  if (lanes < 1 || lanes > kLanes) return absl::InternalError("bad lane count");
  for (int k = 0; k < lanes; ++k) l[k] = Lane{data[k], size[k], 0, out[k], out[k] + count[k]};
  const bool multi = !lut_.empty();
  absl::Status st = multi && lanes == kLanes ? DecodeFast<kLanes>(l) : absl::OkStatus();
  if (!st.ok()) return st;
  for (int k = 0; k < lanes; ++k) {
    if (multi) st = DecodeFast<1>(&l[k]);
    if (!st.ok()) return st;
    st = DecodeTail(l[k]);
    if (!st.ok()) return st;
  }
  return absl::OkStatus();
}

std::string ExponentCode::LengthsToHex(absl::Span<const uint8_t> lengths) {
  static const char kHex[] = "0123456789abcdef";
  std::string s;
  for (uint8_t l : lengths) s.push_back(kHex[l & 15]);
  return s;
}

absl::StatusOr<std::array<uint8_t, 256>> ExponentCode::LengthsFromHex(std::string_view hex) {
  if (hex.size() != 256) return absl::InvalidArgumentError(StrCat("code length table has ", hex.size(), " digits, expected 256"));
  std::array<uint8_t, 256> out{};
  for (size_t i = 0; i < 256; ++i) {
    const int d = HexDigit(hex[i]);
    if (d < 0 || d > kMaxHuffmanBits) {
      return absl::InvalidArgumentError(StrCat("code length table digit ", i, " is not 0..", kMaxHuffmanBits, " in lowercase hex"));
    }
    out[i] = static_cast<uint8_t>(d);
  }
  return out;
}

std::string ExponentCode::RanksToHex(absl::Span<const uint8_t> ranks) {
  static const char kHex[] = "0123456789abcdef";
  std::string s;
  for (uint8_t r : ranks) {
    s.push_back(kHex[r >> 4]);
    s.push_back(kHex[r & 15]);
  }
  return s;
}

absl::StatusOr<std::vector<uint8_t>> ExponentCode::RanksFromHex(std::string_view hex) {
  if (hex.size() % 2 != 0 || hex.size() > 2 * static_cast<size_t>(kMaxUnaryRanks)) {
    return absl::InvalidArgumentError(StrCat("rank table has ", hex.size(), " digits, expected an even number up to ",
                                             2 * kMaxUnaryRanks));
  }
  std::vector<uint8_t> out;
  for (size_t i = 0; i < hex.size(); i += 2) {
    const int hi = HexDigit(hex[i]);
    const int lo = HexDigit(hex[i + 1]);
    if (hi < 0 || lo < 0) return absl::InvalidArgumentError("rank table is not lowercase hex");
    out.push_back(static_cast<uint8_t>(hi << 4 | lo));
  }
  return out;
}

int LaneCount(uint64_t m) { return m >= kLaneSplitElements ? kLanes : 1; }

void EncodeChunk(const ExponentCode& code, const uint8_t* syms, uint64_t m, std::vector<uint8_t>* out) {
  const int lanes = LaneCount(m);
  const size_t header = lanes > 1 ? kLaneHeaderBytes : 0;
  // Coded into an uninitialised scratch buffer (the bit writer stores 8
  // bytes at a time), then appended at its exact size. The scratch is the
  // thread's own and kept: a fresh 400 KB per chunk was a fresh mapping,
  // faulted in again for each of a 268 MB tensor's 512 chunks.
  const size_t need = header + code.MaxLaneBytes(static_cast<size_t>(m)) + 8 * kLanes;
  thread_local std::unique_ptr<uint8_t[]> scratch;
  thread_local size_t scratch_size = 0;
  if (scratch_size < need) {
    scratch.reset(new uint8_t[need]);
    scratch_size = need;
  }
  uint8_t* buf = scratch.get();
  size_t at = header;
  for (int k = 0; k < lanes; ++k) {
    const uint64_t b = LaneBegin(m, lanes, k);
    const uint64_t e = LaneBegin(m, lanes, k + 1);
    const size_t n = code.EncodeLane(syms + b, e - b, buf + at);
    if (lanes > 1 && k < lanes - 1) {
      const uint32_t v = static_cast<uint32_t>(n);
      uint8_t* h = buf + 4 * k;
      h[0] = static_cast<uint8_t>(v);
      h[1] = static_cast<uint8_t>(v >> 8);
      h[2] = static_cast<uint8_t>(v >> 16);
      h[3] = static_cast<uint8_t>(v >> 24);
    }
    at += n;
  }
  out->insert(out->end(), buf, buf + at);
}

namespace {

// Where the lanes of a chunk of m elements lie in its bytes (the 12-byte
// header of lane lengths when there are 4) and which elements each holds.
struct ChunkLanes {
  int lanes = 1;
  const uint8_t* data[kLanes];
  size_t size[kLanes];
  uint64_t first[kLanes];  // first element of the lane within the chunk
  size_t count[kLanes];
};

absl::StatusOr<ChunkLanes> SplitLanes(absl::Span<const uint8_t> bytes, uint64_t m) {
  ChunkLanes c;
  c.lanes = LaneCount(m);
  if (c.lanes == 1) {
    c.data[0] = bytes.data();
    c.size[0] = bytes.size();
  } else {
    if (bytes.size() < kLaneHeaderBytes) return Corrupt("chunk shorter than its lane header");
    uint64_t at = kLaneHeaderBytes;
    for (int k = 0; k < kLanes; ++k) {
      uint64_t n;
      if (k < kLanes - 1) {
        const uint8_t* h = bytes.data() + 4 * k;
        n = uint64_t{h[0]} | uint64_t{h[1]} << 8 | uint64_t{h[2]} << 16 | uint64_t{h[3]} << 24;
        if (n > bytes.size() - at) return Corrupt("lane lengths exceed the chunk");
      } else {
        n = bytes.size() - at;
      }
      c.data[k] = bytes.data() + at;
      c.size[k] = static_cast<size_t>(n);
      at += n;
    }
  }
  for (int k = 0; k < c.lanes; ++k) {
    c.first[k] = LaneBegin(m, c.lanes, k);
    c.count[k] = static_cast<size_t>(LaneBegin(m, c.lanes, k + 1) - c.first[k]);
  }
  return c;
}

}  // namespace

absl::Status DecodeChunk(const ExponentCode& code, absl::Span<const uint8_t> bytes, uint64_t m, uint8_t* out) {
  BP_ASSIGN_OR_RETURN(const ChunkLanes c, SplitLanes(bytes, m));
  uint8_t* dst[kLanes];
  for (int k = 0; k < c.lanes; ++k) dst[k] = out + c.first[k];
  return code.DecodeLanes(c.data, c.size, dst, c.count, c.lanes);
}

absl::Status ChunkSyncPoints(const ExponentCode& code, absl::Span<const uint8_t> bytes, uint64_t m,
                             uint64_t bit_base, uint64_t symbol_base, uint32_t every, uint8_t* scratch,
                             std::vector<SyncPoint>* out) {
  if (every == 0) return absl::InvalidArgumentError("sync points every 0 symbols");
  BP_ASSIGN_OR_RETURN(const ChunkLanes c, SplitLanes(bytes, m));
  uint8_t* dst[kLanes];
  for (int k = 0; k < c.lanes; ++k) dst[k] = scratch + c.first[k];
  BP_RETURN_IF_ERROR(code.DecodeLanes(c.data, c.size, dst, c.count, c.lanes));
  for (int k = 0; k < c.lanes; ++k) {
    // The decode succeeded, so the lengths of the decoded symbols add up
    // to the lane: bit positions follow from them alone.
    uint64_t bit = bit_base + 8 * static_cast<uint64_t>(c.data[k] - bytes.data());
    for (size_t i = 0; i < c.count[k]; ++i) {
      if (i % every == 0) out->push_back(SyncPoint{bit, symbol_base + c.first[k] + i});
      bit += static_cast<uint64_t>(code.length(dst[k][i]));
    }
  }
  return absl::OkStatus();
}

}  // namespace boltpack::bf16_exp
