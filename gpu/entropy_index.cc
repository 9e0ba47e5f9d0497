// BuildEntropyIndex: see entropy_index.h. Host only.
#include "gpu/entropy_index_build.h"

#include <cstring>
#include <memory>
#include <string>

#include "gpu/last_error.h"

namespace boltpack::gpu {
namespace {

int Hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// The string value of `key` in the record's params as JSON.
bp_status ParamString(const bp_reader* r, size_t tensor, const char* key, std::string* out) {
  size_t len = 0;
  bp_status st = bp_tensor_codec_params(r, tensor, nullptr, 0, &len);
  if (st != BP_OK && st != BP_ERR_OUT_OF_RANGE) return Fail(st, bp_last_error_message());
  std::string json(len + 1, '\0');
  if ((st = bp_tensor_codec_params(r, tensor, json.data(), json.size(), &len)) != BP_OK) {
    return Fail(st, bp_last_error_message());
  }
  const std::string quoted = std::string("\"") + key + "\":\"";
  const size_t at = json.find(quoted);
  const size_t end = at == std::string::npos ? at : json.find('"', at + quoted.size());
  if (end == std::string::npos) return Fail(BP_ERR_CORRUPT, std::string("no string parameter '") + key + "'");
  *out = json.substr(at + quoted.size(), end - at - quoted.size());
  return BP_OK;
}

// One code word at the top of a `avail`-bit window (MSB first, zero below):
// its symbol and length, or length 0 when it does not fit the window.
struct Code {
  bool unary = false;
  uint32_t ranks = 0;
  const uint8_t* rank_sym = nullptr;
  uint16_t single[1u << kEntropyLutBits] = {};  // Huffman: symbol | length << 8
};

uint32_t DecodeOne(const Code& c, uint32_t window, uint32_t avail, uint32_t* len) {
  const uint32_t w = window & ((1u << kEntropyLutBits) - 1);
  uint32_t sym = 0;
  if (c.unary) {
    uint32_t r = 0;
    while (r < kEntropyLutBits && ((w >> (kEntropyLutBits - 1 - r)) & 1) == 0) ++r;
    if (r < c.ranks) {
      *len = r + 1;
      sym = c.rank_sym[r];
    } else {
      *len = c.ranks + 8;
      sym = *len <= kEntropyLutBits ? (w >> (kEntropyLutBits - *len)) & 0xffu : 0;
    }
  } else {
    *len = c.single[w] >> 8;
    sym = c.single[w] & 0xffu;
  }
  if (*len == 0 || *len > avail) *len = 0;
  return sym;
}

// The table of entropy_index.h: up to 3 whole code words per 12-bit window.
void MultiTable(const Code& c, uint32_t* lut) {
  for (uint32_t w = 0; w < (1u << kEntropyLutBits); ++w) {
    uint32_t used = 0, count = 0, syms = 0;
    while (count < kLutMaxSymbols) {
      uint32_t len = 0;
      const uint32_t sym = DecodeOne(c, w << used, kEntropyLutBits - used, &len);
      if (len == 0) break;
      syms |= sym << (8 * count);
      ++count;
      used += len;
    }
    lut[w] = syms | count << kLutCountShift | used << kLutBitsShift;
  }
}

// The canonical code of the lengths (DEFLATE's rule, spec/codecs-bf16-exp.md
// §3) as a table over 12-bit windows: symbol | length << 8.
bp_status HuffmanTable(const std::string& hex, uint16_t* lut) {
  if (hex.size() != 256) return Fail(BP_ERR_CORRUPT, "exp_code_lengths is not 256 hex digits");
  uint32_t next = 0;
  for (int len = 1; len <= static_cast<int>(kEntropyLutBits); ++len) {
    for (int s = 0; s < 256; ++s) {
      if (Hex(hex[s]) != len) continue;
      const uint32_t lo = next << (kEntropyLutBits - len), hi = (next + 1) << (kEntropyLutBits - len);
      if (hi > (1u << kEntropyLutBits)) return Fail(BP_ERR_CORRUPT, "exp_code_lengths is over-subscribed");
      for (uint32_t w = lo; w < hi; ++w) lut[w] = static_cast<uint16_t>(s | len << 8);
      ++next;
    }
    next <<= 1;
  }
  return BP_OK;
}

bp_status UnaryRanks(const std::string& hex, EntropyIndexHeader* h) {
  if (hex.size() % 2 != 0 || hex.size() > 40) return Fail(BP_ERR_CORRUPT, "exp_ranks is not 2 x (0..20) hex digits");
  h->unary_ranks = static_cast<uint32_t>(hex.size() / 2);
  for (uint32_t r = 0; r < h->unary_ranks; ++r) {
    const int hi = Hex(hex[2 * r]), lo = Hex(hex[2 * r + 1]);
    if (hi < 0 || lo < 0) return Fail(BP_ERR_CORRUPT, "exp_ranks has a non-hex digit");
    h->rank_sym[r] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return BP_OK;
}

// The header's code fields and the decode table, from the record's params.
bp_status CodeTables(const bp_reader* r, size_t tensor, EntropyIndexHeader* h, uint32_t* lut) {
  std::string hex;
  const bool unary = h->kind == kEntropyUnary;
  if (bp_status st = ParamString(r, tensor, unary ? "exp_ranks" : "exp_code_lengths", &hex); st != BP_OK) return st;
  auto code = std::make_unique<Code>();
  code->unary = unary;
  if (bp_status st = unary ? UnaryRanks(hex, h) : HuffmanTable(hex, code->single); st != BP_OK) return st;
  code->ranks = h->unary_ranks;
  code->rank_sym = h->rank_sym;
  MultiTable(*code, lut);
  return BP_OK;
}

// Blocks' bases and segments' words from the sync points.
bp_status Segments(const bp_sync_point* points, uint64_t segments, uint8_t* index) {
  auto* bases = reinterpret_cast<EntropyBlockBase*>(index + kEntropyBlockOffset);
  auto* words = reinterpret_cast<uint32_t*>(index + EntropySegmentOffset(segments));
  for (uint64_t i = 0; i < segments; ++i) {
    const bp_sync_point& first = points[i - i % kEntropyThreads];
    if (i % kEntropyThreads == 0) bases[i / kEntropyThreads] = EntropyBlockBase{first.bit, first.symbol};
    const uint64_t rel = points[i].bit - first.bit, n = points[i + 1].symbol - points[i].symbol;
    if (rel >= kEntropyMaxRelativeBit || n == 0 || n > kEntropyEvery) {
      return Fail(BP_ERR_UNSUPPORTED, "sync point " + std::to_string(i) + " lies outside the index's ranges");
    }
    words[i] = static_cast<uint32_t>(rel << 8 | (n - 1));
  }
  return BP_OK;
}

}  // namespace

bp_status BuildEntropyIndex(const bp_reader* r, size_t tensor, bool unary, std::vector<uint8_t>* index,
                            uint64_t* segments) {
  bp_sync_point* points = nullptr;
  size_t count = 0;
  if (bp_status st = bp_sync_points(r, tensor, 1, kEntropyEvery, 0, &points, &count); st != BP_OK) {
    return Fail(st, bp_last_error_message());
  }
  std::unique_ptr<bp_sync_point, void (*)(bp_sync_point*)> own(points, bp_free_sync_points);
  if (count == 0) return Fail(BP_ERR_INTERNAL, "bp_sync_points gave no points");
  EntropyIndexHeader h{};
  h.kind = unary ? kEntropyUnary : kEntropyHuffman;
  h.every = kEntropyEvery;
  h.segments = count - 1;
  h.symbols = points[count - 1].symbol;
  index->assign(EntropyIndexBytes(h.segments), 0);
  uint8_t* p = index->data();
  if (bp_status st = CodeTables(r, tensor, &h, reinterpret_cast<uint32_t*>(p + kEntropyLutOffset)); st != BP_OK) {
    return st;
  }
  if (bp_status st = Segments(points, h.segments, p); st != BP_OK) return st;
  std::memcpy(p, &h, sizeof h);
  *segments = h.segments;
  return BP_OK;
}

}  // namespace boltpack::gpu
