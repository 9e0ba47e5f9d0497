// The shipped real model, TinyStories-656K (llama.cpp's F16 GGUF), made
// elastic with recipes/tinystories-656k-elastic.json (FFN channels ranked by
// the activation-free |up row| * |down column|) and cut to 75% and 50% FFN width as
// GGUF files llama.cpp loads: FFN tensors are the source's F16 elements
// permuted by descending score and cut, every other tensor and key is the
// source's, llama.feed_forward_length follows the cut.
#include <algorithm>
#include <fstream>
#include <sstream>

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

// Channel order per layer from the recipe's scores: descending, ties by index.
std::vector<std::vector<uint64_t>> Orders() {
  std::ifstream f(Recipe());
  std::stringstream ss;
  ss << f.rdbuf();
  auto j = io::ParseJson(ss.str());
  EXPECT_TRUE(j.ok()) << j.status();
  std::vector<std::vector<uint64_t>> orders;
  for (const char* layer : {"0", "1"}) {
    const auto& scores = j->Find("importance")->Find("ffn")->Find(layer)->array();
    std::vector<uint64_t> o(scores.size());
    for (uint64_t i = 0; i < o.size(); ++i) o[i] = i;
    std::stable_sort(o.begin(), o.end(),
                     [&](uint64_t a, uint64_t b) { return scores[a].double_value() > scores[b].double_value(); });
    orders.push_back(o);
  }
  return orders;
}

TEST(ElasticTinyStories, FfnSlicesAreExactAndLoadable) {
  std::string dir = MakeTempDir();
  auto c = RunCli({"convert", Source(), "-o", dir + "/e.bolt", "--elastic", Recipe()});
  ASSERT_EQ(c.exit_code, 0) << c.output;
  auto src = io::GgufModel::Open(Source());
  ASSERT_TRUE(src.ok()) << src.status();
  auto orders = Orders();
  for (auto [budget, width] : {std::pair<std::string, uint64_t>{"ffn75", 288}, {"ffn50", 192}}) {
    SCOPED_TRACE(budget);
    std::string out = dir + "/" + budget + ".gguf";
    auto s = RunCli({"slice", dir + "/e.bolt", "--budget", budget, "-o", out});
    ASSERT_EQ(s.exit_code, 0) << s.output;
    auto g = io::GgufModel::Open(out);
    ASSERT_TRUE(g.ok()) << g.status();
    // Metadata: the source's, feed_forward_length cut.
    ASSERT_EQ((*g)->metadata().size(), (*src)->metadata().size());
    for (size_t i = 0; i < (*g)->metadata().size(); ++i) {
      const auto& [k, v] = (*g)->metadata()[i];
      EXPECT_EQ(k, (*src)->metadata()[i].first);
      if (k == "llama.feed_forward_length") {
        EXPECT_EQ(v.type, ValueType::kUint32);
        EXPECT_EQ(v.u, width);
      } else {
        EXPECT_TRUE(v == (*src)->metadata()[i].second) << k;
      }
    }
    ASSERT_EQ((*g)->tensors().size(), (*src)->tensors().size());
    for (size_t i = 0; i < (*src)->tensors().size(); ++i) {
      const auto& st = (*src)->tensors()[i];
      const auto& gt = (*g)->tensors()[i];
      ASSERT_EQ(st.name, gt.name);
      EXPECT_EQ(st.type, gt.type) << st.name;
      auto sb = (*src)->TensorBytes(i);
      auto gb = (*g)->TensorBytes(i);
      bool ffn = st.name.find(".ffn_up.") != std::string::npos || st.name.find(".ffn_gate.") != std::string::npos ||
                 st.name.find(".ffn_down.") != std::string::npos;
      if (!ffn) {
        EXPECT_TRUE(std::equal(sb.begin(), sb.end(), gb.begin(), gb.end())) << st.name;
        continue;
      }
      const auto& order = orders[st.name[4] - '0'];
      std::vector<uint8_t> want;
      if (st.name.find(".ffn_down.") != std::string::npos) {
        // [128, 384] (GGUF ne {384, 128}): columns are channels.
        EXPECT_EQ(gt.ne, (std::vector<uint64_t>{width, 128}));
        for (uint64_t r = 0; r < 128; ++r) {
          for (uint64_t j = 0; j < width; ++j) {
            const uint8_t* p = sb.data() + (r * 384 + order[j]) * 2;
            want.insert(want.end(), p, p + 2);
          }
        }
      } else {
        // [384, 128]: rows are channels.
        EXPECT_EQ(gt.ne, (std::vector<uint64_t>{128, width}));
        for (uint64_t j = 0; j < width; ++j) {
          const uint8_t* p = sb.data() + order[j] * 128 * 2;
          want.insert(want.end(), p, p + 256);
        }
      }
      EXPECT_TRUE(std::equal(want.begin(), want.end(), gb.begin(), gb.end())) << st.name;
    }
    auto v = RunCli({"verify", "--target", "llama.cpp", out});
    EXPECT_EQ(v.exit_code, 0) << v.output;
  }
}

}  // namespace
}  // namespace boltpack
