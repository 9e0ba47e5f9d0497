// HuffmanLengths (codecs/bf16_exp/exponent_code.h) gives exactly the lengths
// of the heap-based construction it replaced: files store them
// (exp_code_lengths, kept/pruned lengths, kv_split's serialised tables).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <queue>
#include <random>
#include <utility>
#include <vector>

#include "codecs/bf16_exp/exponent_code.h"
#include "gtest/gtest.h"

namespace boltpack {
namespace {

// The construction before: a min-heap of (frequency, node) per attempt,
// frequencies halved (x >> 1 | 1) until the longest code fits.
std::array<uint8_t, 256> ReferenceLengths(const std::array<uint64_t, 256>& freq, int max_bits) {
  std::array<uint8_t, 256> out{};
  std::array<uint64_t, 256> f = freq;
  int present = 0;
  for (uint64_t x : f) present += x > 0;
  if (present == 0) return out;
  if (present == 1) {
    for (int s = 0; s < 256; ++s) out[s] = f[s] > 0 ? 1 : 0;
    return out;
  }
  for (;;) {
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
      q.push({a.first + b.first, next++});
    }
    std::array<int, 256> len{};
    int longest = 0;
    for (int s = 0; s < 256; ++s) {
      if (f[s] == 0) continue;
      for (int n = s; parent[n] >= 0; n = parent[n]) ++len[s];
      longest = std::max(longest, len[s]);
    }
    if (longest <= max_bits) {
      for (int s = 0; s < 256; ++s) out[s] = static_cast<uint8_t>(len[s]);
      return out;
    }
    for (auto& x : f) {
      if (x > 0) x = (x >> 1) | 1;
    }
  }
}

void ExpectSame(const std::array<uint64_t, 256>& f, int max_bits, const char* what, int i) {
  const auto got = bf16_exp::HuffmanLengths(f, max_bits);
  const auto want = ReferenceLengths(f, max_bits);
  ASSERT_EQ(got, want) << what << " case " << i << " max_bits " << max_bits;
}

TEST(Bf16HuffmanLengths, EqualToTheHeapConstruction) {
  std::mt19937_64 rng(15);
  for (int i = 0; i < 300; ++i) {
    std::array<uint64_t, 256> f{};
    const int kind = i % 6;
    const int used = 1 + static_cast<int>(rng() % 256);
    for (int s = 0; s < 256; ++s) {
      if (kind != 3 && static_cast<int>(rng() % 256) >= used) continue;
      switch (kind) {
        case 0: f[s] = 1 + rng() % 1000; break;                                          // flat
        case 1: f[s] = uint64_t{1} << (rng() % 50); break;                               // very skewed
        case 2: f[s] = 1 + rng() % 4; break;                                             // many ties
        case 3: f[s] = (rng() % 3 == 0 ? rng() % 100000 : 0) * 64 + 1; break;            // kv_split's counts
        case 4: f[s] = (uint64_t{1} << 56) - 1 - rng() % 16; break;                      // near the element limit
        case 5: f[s] = static_cast<uint64_t>(std::exp(-std::abs(s - 127) / 3.0) * 1e9) + 1; break;  // bf16 weights
      }
    }
    for (int max_bits : {12, 9, 8}) ExpectSame(f, max_bits, "random", i);
  }
  // Fibonacci frequencies: the deepest tree, halved the most times.
  std::array<uint64_t, 256> fib{};
  fib[0] = fib[1] = 1;
  for (int s = 2; s < 80; ++s) fib[s] = fib[s - 1] + fib[s - 2];
  ExpectSame(fib, 12, "fibonacci", 0);
  ExpectSame({}, 12, "empty", 0);
  std::array<uint64_t, 256> one{};
  one[77] = 5;
  ExpectSame(one, 12, "one symbol", 0);
  std::array<uint64_t, 256> all{};
  all.fill(7);
  ExpectSame(all, 8, "256 equal", 0);
}

}  // namespace
}  // namespace boltpack
