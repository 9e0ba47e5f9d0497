#include "codecs/bf16_exp/exponent_code.h"

#include <algorithm>
#include <cstring>
#include <queue>
#include <utility>

#include "codecs/bf16_exp/bit_io.h"
#include "common/str_cat.h"

namespace boltpack::bf16_exp {
namespace {

absl::Status Corrupt(std::string_view what) { return absl::DataLossError(StrCat("exponent bits: ", what)); }

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// Plain Huffman code lengths (unlimited), for the symbols with freq > 0.
std::array<int, 256> PlainLengths(const std::array<uint64_t, 256>& f) {
  std::array<int, 256> len{};
  // Nodes: 0..255 leaves, 256.. internal.
  std::vector<int> parent(512, -1);
  using Item = std::pair<uint64_t, int>;
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> q;
  for (int s = 0; s < 256; ++s) {
    if (f[s] > 0) q.push({f[s], s});
  }
  int next = 256;
  while (q.size() > 1) {
    Item a = q.top();
    q.pop();
    Item b = q.top();
    q.pop();
    parent[a.second] = next;
    parent[b.second] = next;
    q.push({a.first + b.first, next});
    ++next;
  }
  for (int s = 0; s < 256; ++s) {
    if (f[s] == 0) continue;
    int d = 0;
    for (int n = s; parent[n] >= 0; n = parent[n]) ++d;
    len[s] = d;
  }
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
  // Flatten the distribution until the tree fits in max_bits (at most 256
  // symbols always fit in 12 bits once the frequencies are equal enough).
  for (;;) {
    std::array<int, 256> len = PlainLengths(f);
    int longest = 0;
    for (int s = 0; s < 256; ++s) longest = std::max(longest, len[s]);
    if (longest <= max_bits) {
      for (int s = 0; s < 256; ++s) out[s] = static_cast<uint8_t>(len[s]);
      return out;
    }
    for (auto& x : f) {
      if (x > 0) x = (x >> 1) | 1;
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
  if (lengths.size() != 256) return absl::InvalidArgumentError("need 256 code lengths");
  ExponentCode c;
  c.kind_ = Kind::kHuffman;
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
  // Canonical codes: by (length, exponent).
  uint32_t next = 0;
  int prev_len = 0;
  for (int l = 1; l <= kMaxHuffmanBits; ++l) {
    for (int s = 0; s < 256; ++s) {
      if (lengths[s] != l) continue;
      next <<= (l - prev_len);
      prev_len = l;
      c.code_[s] = next++;
      c.len_[s] = static_cast<uint8_t>(l);
    }
  }
  c.max_bits_ = std::max(longest, 1);
  c.BuildTables();
  return c;
}

absl::StatusOr<ExponentCode> ExponentCode::Unary(absl::Span<const uint8_t> ranks) {
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
  c.BuildTables();
  return c;
}

void ExponentCode::BuildTables() {
  constexpr uint32_t kSize = uint32_t{1} << kLutBits;
  lut1_.assign(kSize, 0);
  if (kind_ == Kind::kHuffman) {
    for (int s = 0; s < 256; ++s) {
      const int l = len_[s];
      if (l == 0) continue;
      const uint32_t first = code_[s] << (kLutBits - l);
      const uint32_t last = (code_[s] + 1) << (kLutBits - l);
      for (uint32_t i = first; i < last; ++i) lut1_[i] = static_cast<uint16_t>(s | (l << 8));
    }
  } else {
    for (uint32_t i = 0; i < kSize; ++i) {
      const int z = i == 0 ? kLutBits : __builtin_clz(i) - (32 - kLutBits);
      if (z < ranks_ && z + 1 <= kLutBits) {
        lut1_[i] = static_cast<uint16_t>(rank_sym_[z] | ((z + 1) << 8));
      } else if (z >= ranks_ && ranks_ + 8 <= kLutBits) {
        const int sym = static_cast<int>((i >> (kLutBits - ranks_ - 8)) & 0xff);
        if (!ranked_[sym]) lut1_[i] = static_cast<uint16_t>(sym | ((ranks_ + 8) << 8));
      }
    }
  }
  lut_.assign(kSize, 0);
  for (uint32_t i = 0; i < kSize; ++i) {
    uint64_t syms = 0;
    int pos = 0;
    int n = 0;
    while (n < 4) {
      const uint32_t sub = (i << pos) & (kSize - 1);
      const uint16_t e = lut1_[sub];
      const int l = e >> 8;
      if (l == 0 || l > kLutBits - pos) break;
      syms |= static_cast<uint64_t>(e & 0xff) << (8 * n);
      pos += l;
      ++n;
    }
    lut_[i] = n == 0 ? 0 : (syms | static_cast<uint64_t>(pos) << 32 | static_cast<uint64_t>(n) << 40);
  }
}

bool ExponentCode::DecodeSlow(uint64_t w, uint8_t* sym, int* len) const {
  if (kind_ == Kind::kHuffman) return false;  // every valid code is in the table
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

size_t ExponentCode::EncodeLane(const uint8_t* syms, size_t n, uint8_t* out) const {
  BitWriter w(out);
  for (size_t i = 0; i < n; ++i) w.Put(code_[syms[i]], len_[syms[i]]);
  return w.Finish();
}

struct ExponentCode::Lane {
  const uint8_t* p;
  size_t size;
  uint64_t pos;  // bits consumed
  uint8_t* out;
  uint8_t* out_end;
};

template <int N>
absl::Status ExponentCode::DecodeFast(Lane* lanes) const {
  const uint64_t* lut = lut_.data();
  // Bits one lookup may consume: a table entry packs only symbols that fit in
  // its kLutBits window, and the slow path one code of up to max_bits_.
  const uint64_t step = static_cast<uint64_t>(std::max<int>(max_bits_, kLutBits));
  for (;;) {
    uint64_t iters = ~uint64_t{0};
    for (int k = 0; k < N; ++k) {
      const Lane& l = lanes[k];
      if (l.size < 8 || l.pos > (l.size - 8) * 8) return absl::OkStatus();
      iters = std::min(iters, ((l.size - 8) * 8 - l.pos) / step + 1);
      iters = std::min(iters, static_cast<uint64_t>(l.out_end - l.out) / 4);
    }
    if (iters == 0) return absl::OkStatus();
    Lane l[N];
    for (int k = 0; k < N; ++k) l[k] = lanes[k];
    for (uint64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 4
      for (int k = 0; k < N; ++k) {
        const uint64_t w = LoadBE64(l[k].p + (l[k].pos >> 3)) << (l[k].pos & 7);
        const uint64_t e = lut[w >> (64 - kLutBits)];
        if (__builtin_expect((e >> 40) == 0, 0)) {
          uint8_t s;
          int len;
          if (!DecodeSlow(w, &s, &len)) return Corrupt("invalid code word");
          *l[k].out++ = s;
          l[k].pos += static_cast<uint64_t>(len);
        } else {
          const uint32_t four = static_cast<uint32_t>(e);
          std::memcpy(l[k].out, &four, 4);
          l[k].out += e >> 40;
          l[k].pos += (e >> 32) & 0xff;
        }
      }
    }
    for (int k = 0; k < N; ++k) lanes[k] = l[k];
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
  absl::Status st = lanes == kLanes ? DecodeFast<kLanes>(l) : absl::OkStatus();
  if (!st.ok()) return st;
  for (int k = 0; k < lanes; ++k) {
    st = DecodeFast<1>(&l[k]);
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
  const size_t start = out->size();
  const size_t header = lanes > 1 ? kLaneHeaderBytes : 0;
  out->resize(start + header + code.MaxLaneBytes(m) + 8 * kLanes);
  size_t at = start + header;
  for (int k = 0; k < lanes; ++k) {
    const uint64_t b = LaneBegin(m, lanes, k);
    const uint64_t e = LaneBegin(m, lanes, k + 1);
    const size_t n = code.EncodeLane(syms + b, e - b, out->data() + at);
    if (lanes > 1 && k < lanes - 1) {
      const uint32_t v = static_cast<uint32_t>(n);
      uint8_t* h = out->data() + start + 4 * k;
      h[0] = static_cast<uint8_t>(v);
      h[1] = static_cast<uint8_t>(v >> 8);
      h[2] = static_cast<uint8_t>(v >> 16);
      h[3] = static_cast<uint8_t>(v >> 24);
    }
    at += n;
  }
  out->resize(at);
}

absl::Status DecodeChunk(const ExponentCode& code, absl::Span<const uint8_t> bytes, uint64_t m, uint8_t* out) {
  const int lanes = LaneCount(m);
  const uint8_t* data[kLanes];
  size_t size[kLanes];
  uint8_t* dst[kLanes];
  size_t count[kLanes];
  if (lanes == 1) {
    data[0] = bytes.data();
    size[0] = bytes.size();
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
      data[k] = bytes.data() + at;
      size[k] = static_cast<size_t>(n);
      at += n;
    }
  }
  for (int k = 0; k < lanes; ++k) {
    const uint64_t b = LaneBegin(m, lanes, k);
    dst[k] = out + b;
    count[k] = static_cast<size_t>(LaneBegin(m, lanes, k + 1) - b);
  }
  return code.DecodeLanes(data, size, dst, count, lanes);
}

}  // namespace boltpack::bf16_exp
