// The shipped real model, TinyStories-656K (llama.cpp's F16 GGUF), made
// elastic with recipes/tinystories-656k-elastic.json (FFN channels ranked by
// the activation-free |up row| * |down column|, query heads ranked inside
// their GQA group by |q rows| * |output columns|) and cut to 75% and 50% FFN
// width, half the query heads (one per KV group) and both, as GGUF files
// llama.cpp loads: bound tensors are the source's F16 elements permuted by
// descending score (heads within their group) and cut, every other tensor
// and key is the source's, feed_forward_length and attention.head_count
// follow the cut.
#include <algorithm>
#include <fstream>
#include <sstream>

#include "absl/types/span.h"
#include "gtest/gtest.h"
#include "io/gguf.h"
#include "io/json.h"
#include "tests/test_util.h"

namespace boltpack {
namespace {

using testing::MakeTempDir;
using testing::RunCli;
using testing::SourceDir;

std::string Source() { return SourceDir() + "/testdata/tinystories-656k/TinyStories-656K.f16.gguf"; }
std::string Recipe() { return SourceDir() + "/recipes/tinystories-656k-elastic.json"; }

// Unit order per layer from the recipe's scores for `axis`: descending, ties
// by index, inside each of `groups` equal groups (spec/elastic.md §4).
std::vector<std::vector<uint64_t>> Orders(const char* axis, uint64_t groups) {
  std::ifstream f(Recipe());
  std::stringstream ss;
  ss << f.rdbuf();
  auto j = io::ParseJson(ss.str());
  EXPECT_TRUE(j.ok()) << j.status();
  std::vector<std::vector<uint64_t>> orders;
  for (const char* layer : {"0", "1"}) {
    const auto& scores = j->Find("importance")->Find(axis)->Find(layer)->array();
    std::vector<uint64_t> o(scores.size());
    for (uint64_t i = 0; i < o.size(); ++i) o[i] = i;
    uint64_t size = o.size() / groups;
    for (uint64_t g = 0; g < groups; ++g) {
      std::stable_sort(o.begin() + g * size, o.begin() + (g + 1) * size,
                       [&](uint64_t a, uint64_t b) { return scores[a].double_value() > scores[b].double_value(); });
    }
    orders.push_back(o);
  }
  return orders;
}

// The source units a budget keeping `kept` of `order`'s units holds, in
// stored order: the first kept/groups of every group.
std::vector<uint64_t> KeptUnits(const std::vector<uint64_t>& order, uint64_t groups, uint64_t kept) {
  std::vector<uint64_t> units;
  uint64_t size = order.size() / groups;
  for (uint64_t g = 0; g < groups; ++g) {
    for (uint64_t k = 0; k < kept / groups; ++k) units.push_back(order[g * size + k]);
  }
  return units;
}

// F16 elements of `src` ([rows, cols]) gathered by kept row units (of
// `unit` rows) or kept column units (of `unit` columns).
std::vector<uint8_t> GatherRows(absl::Span<const uint8_t> src, uint64_t cols, const std::vector<uint64_t>& units,
                                uint64_t unit) {
  std::vector<uint8_t> out;
  for (uint64_t u : units) {
    const uint8_t* p = src.data() + u * unit * cols * 2;
    out.insert(out.end(), p, p + unit * cols * 2);
  }
  return out;
}
std::vector<uint8_t> GatherCols(absl::Span<const uint8_t> src, uint64_t rows, uint64_t cols,
                                const std::vector<uint64_t>& units, uint64_t unit) {
  std::vector<uint8_t> out;
  for (uint64_t r = 0; r < rows; ++r) {
    for (uint64_t u : units) {
      const uint8_t* p = src.data() + (r * cols + u * unit) * 2;
      out.insert(out.end(), p, p + unit * 2);
    }
  }
  return out;
}

bool Has(std::string_view name, const char* part) { return name.find(part) != std::string_view::npos; }

// FFN channels (384, one group) and query heads (8 of 16 rows, 4 GQA groups).
TEST(ElasticTinyStories, SlicesAreExactAndLoadable) {
  std::string dir = MakeTempDir();
  auto c = RunCli({"convert", Source(), "-o", dir + "/e.bolt", "--elastic", Recipe()});
  ASSERT_EQ(c.exit_code, 0) << c.output;
  // --list-budgets names every axis' traits, the GQA groups among them.
  auto l = RunCli({"slice", dir + "/e.bolt", "--list-budgets"});
  ASSERT_EQ(l.exit_code, 0) << l.output;
  EXPECT_NE(l.output.find("heads(per layer, 16 units of 16 elements in 4 groups, granularity 1, metadata "
                          "{arch}.attention.head_count)"),
            std::string::npos)
      << l.output;
  EXPECT_NE(l.output.find("heads50: layers 2/2, ffn 768/768, heads 8/16"), std::string::npos) << l.output;
  auto src = io::GgufModel::Open(Source());
  ASSERT_TRUE(src.ok()) << src.status();
  auto ffn_orders = Orders("ffn", 1);
  auto head_orders = Orders("heads", 4);
  struct Budget {
    const char* name;
    uint64_t ffn, heads;
  };
  for (Budget b : {Budget{"ffn75", 288, 8}, Budget{"ffn50", 192, 8}, Budget{"heads50", 384, 4},
                   Budget{"ffn50-heads50", 192, 4}}) {
    SCOPED_TRACE(b.name);
    std::string out = dir + "/" + b.name + ".gguf";
    auto s = RunCli({"slice", dir + "/e.bolt", "--budget", b.name, "-o", out});
    ASSERT_EQ(s.exit_code, 0) << s.output;
    auto g = io::GgufModel::Open(out);
    ASSERT_TRUE(g.ok()) << g.status();
    // Metadata: the source's, feed_forward_length and head_count cut; a
    // budget with fewer heads pins the head width (16) for llama.cpp.
    const auto& sm = (*src)->metadata();
    const auto& gm = (*g)->metadata();
    size_t added = b.heads < 8 ? 2 : 0;
    ASSERT_EQ(gm.size(), sm.size() + added);
    for (size_t i = 0; i < sm.size(); ++i) {
      const auto& [k, v] = gm[i];
      EXPECT_EQ(k, sm[i].first);
      if (k == "llama.feed_forward_length" || k == "llama.attention.head_count") {
        EXPECT_EQ(v.type, ValueType::kUint32);
        EXPECT_EQ(v.u, k == "llama.feed_forward_length" ? b.ffn : b.heads) << k;
      } else {
        EXPECT_TRUE(v == sm[i].second) << k;
      }
    }
    for (size_t i = 0; i < added; ++i) {
      EXPECT_EQ(gm[sm.size() + i].first, i == 0 ? "llama.attention.key_length" : "llama.attention.value_length");
      EXPECT_EQ(gm[sm.size() + i].second.u, 16u);
    }
    ASSERT_EQ((*g)->tensors().size(), (*src)->tensors().size());
    for (size_t i = 0; i < (*src)->tensors().size(); ++i) {
      const auto& st = (*src)->tensors()[i];
      const auto& gt = (*g)->tensors()[i];
      ASSERT_EQ(st.name, gt.name);
      EXPECT_EQ(st.type, gt.type) << st.name;
      auto sb = (*src)->TensorBytes(i);
      auto gb = (*g)->TensorBytes(i);
      size_t layer = st.name[4] - '0';
      std::vector<uint8_t> want;
      if (Has(st.name, ".ffn_down.")) {
        // [128, 384] (GGUF ne {384, 128}): columns are channels.
        EXPECT_EQ(gt.ne, (std::vector<uint64_t>{b.ffn, 128}));
        want = GatherCols(sb, 128, 384, KeptUnits(ffn_orders[layer], 1, b.ffn), 1);
      } else if (Has(st.name, ".ffn_up.") || Has(st.name, ".ffn_gate.")) {
        // [384, 128]: rows are channels.
        EXPECT_EQ(gt.ne, (std::vector<uint64_t>{128, b.ffn}));
        want = GatherRows(sb, 128, KeptUnits(ffn_orders[layer], 1, b.ffn), 1);
      } else if (Has(st.name, ".attn_q.")) {
        // [128, 128]: 8 heads of 16 rows.
        EXPECT_EQ(gt.ne, (std::vector<uint64_t>{128, b.heads * 16}));
        want = GatherRows(sb, 128, KeptUnits(head_orders[layer], 4, b.heads), 16);
      } else if (Has(st.name, ".attn_output.")) {
        // [128, 128]: columns are the heads' 16 values each.
        EXPECT_EQ(gt.ne, (std::vector<uint64_t>{b.heads * 16, 128}));
        want = GatherCols(sb, 128, 128, KeptUnits(head_orders[layer], 4, b.heads), 16);
      } else {
        want.assign(sb.begin(), sb.end());
      }
      EXPECT_TRUE(std::equal(want.begin(), want.end(), gb.begin(), gb.end())) << st.name;
    }
    auto v = RunCli({"verify", "--target", "llama.cpp", out});
    EXPECT_EQ(v.exit_code, 0) << v.output;
  }
}

}  // namespace
}  // namespace boltpack
