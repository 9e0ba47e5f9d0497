// Budget views composed with views (spec/elastic.md §5.3, §5.4): an elastic
// file whose FFN projections are bf16-spec (a "draft" view reading only the
// speculation stream) and whose other tensors are plain bf16. For every
// budget and view, DecodeBudget equals the cut, computed here element by
// element, of the whole tensor's decode in that view: in "full" the
// original bf16 values, in "draft" the draft decode. Zero-copy regions exist
// for the plain tensors in both views and are refused for bf16-spec.
#include <algorithm>
#include <cstring>
#include <fstream>

#include "boltpack/budget_view.h"
#include "boltpack/codec_registry.h"
#include "boltpack/reader.h"
#include "gtest/gtest.h"
#include "io/json.h"
#include "tests/budget_fixture.h"
#include "tests/test_util.h"

namespace boltpack {
namespace {

using testing::BudgetFixture;
using testing::CutPrefix;
using testing::MakeTempDir;
using testing::RunCli;

std::vector<uint8_t> Bytes(const std::vector<uint16_t>& v) {
  std::vector<uint8_t> b(v.size() * 2);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

class BudgetViewTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (FindCodec("bf16-spec") == nullptr) GTEST_SKIP() << "bf16-spec codec not built in";
    f_ = testing::WriteBudgetFixture(MakeTempDir());
    auto r = Reader::Open(f_.path);
    ASSERT_TRUE(r.ok()) << f_.path << " " << r.status();
    reader_ = std::move(*r);
  }
  BudgetFixture f_;
  std::unique_ptr<Reader> reader_;
};

TEST_F(BudgetViewTest, FileHasBudgetsAndADraftView) {
  ASSERT_NE(reader_->elastic(), nullptr);
  EXPECT_EQ(reader_->elastic()->budgets.size(), 2u);
  EXPECT_TRUE(reader_->ViewBytes("draft").ok());
  auto t = reader_->FindTensor("blk.1.ffn_up.weight");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(reader_->tensors()[*t].codec_id, "bf16-spec");
}

TEST_F(BudgetViewTest, DecodeBudgetIsTheCutOfTheDecodeInEachView) {
  size_t spec_tensors = 0, draft_differs = 0;
  for (std::string budget : {"half", "first"}) {
    auto tensors = BudgetTensors(*reader_, budget);
    ASSERT_TRUE(tensors.ok()) << tensors.status();
    EXPECT_EQ(tensors->size(), budget == "half" ? 9u : 5u);
    for (const auto& t : *tensors) {
      const TensorInfo& info = reader_->tensors()[t.tensor];
      const auto& src = f_.sources.at(info.name);
      ASSERT_EQ(info.shape, src.shape);
      // Independent reference: the source's prefix ("full"), the prefix of
      // the whole draft decode ("draft").
      auto orig = Bytes(src.bf16);
      auto want_full = CutPrefix(orig.data(), info.shape, t.shape, 2);
      std::vector<uint8_t> whole_draft(orig.size());
      ASSERT_TRUE(reader_->Decode(t.tensor, "draft", OutputType::kBF16, absl::MakeSpan(whole_draft)).ok());
      auto want_draft = CutPrefix(whole_draft.data(), info.shape, t.shape, 2);
      bool spec = info.codec_id == "bf16-spec";
      if (spec && budget == "half") {
        ++spec_tensors;
        draft_differs += want_draft != want_full;
      }
      for (std::string view : {"full", "draft"}) {
        const auto& want = view == "full" ? want_full : want_draft;
        auto n = BudgetDecodedBytes(*reader_, t, OutputType::kBF16);
        ASSERT_TRUE(n.ok()) << n.status();
        ASSERT_EQ(*n, want.size()) << t.name;
        std::vector<uint8_t> got(*n);
        auto st = DecodeBudget(*reader_, t, view, OutputType::kBF16, absl::MakeSpan(got));
        ASSERT_TRUE(st.ok()) << st;
        EXPECT_EQ(got, want) << budget << " " << view << " " << t.name;
        // F32: the same values, bits << 16 (4-byte elements gathered).
        std::vector<uint8_t> f32(want.size() * 2);
        ASSERT_TRUE(DecodeBudget(*reader_, t, view, OutputType::kF32, absl::MakeSpan(f32)).ok());
        for (size_t i = 0; i < want.size() / 2; ++i) {
          uint32_t bits;
          std::memcpy(&bits, f32.data() + 4 * i, 4);
          uint16_t b;
          std::memcpy(&b, want.data() + 2 * i, 2);
          ASSERT_EQ(bits, static_cast<uint32_t>(b) << 16) << t.name << " element " << i;
        }
        // Zero-copy: plain bf16 in any view; bf16-spec refused.
        auto tv = BudgetView(*reader_, t, view);
        if (spec) {
          EXPECT_EQ(tv.status().code(), absl::StatusCode::kUnimplemented) << t.name;
          EXPECT_NE(tv.status().message().find(info.name), std::string::npos) << tv.status();
        } else {
          ASSERT_TRUE(tv.ok()) << tv.status();
          ASSERT_EQ(tv->streams.size(), 1u);
          std::vector<uint8_t> bytes(tv->streams[0].total_bytes());
          ASSERT_TRUE(tv->streams[0].CopyTo(absl::MakeSpan(bytes)).ok());
          EXPECT_EQ(bytes, want_full) << t.name;
          // A cut of the outermost dimension alone is one run in the mapping.
          if (info.name.find("ffn_gate") != std::string::npos) {
            EXPECT_TRUE(tv->streams[0].contiguous());
          }
        }
      }
    }
  }
  EXPECT_EQ(spec_tensors, 4u);
  EXPECT_GT(draft_differs, 0u) << "the draft equals the original; the test proves nothing";
}

TEST_F(BudgetViewTest, NamesShapesAndDroppedTensors) {
  auto first = BudgetTensors(*reader_, "first");
  ASSERT_TRUE(first.ok());
  for (const auto& t : *first) EXPECT_EQ(t.name.find("blk.1."), std::string::npos) << t.name;
  auto up = reader_->FindTensor("blk.1.ffn_up.weight");
  auto down = reader_->FindTensor("blk.1.ffn_down.weight");
  ASSERT_TRUE(up && down);
  auto half = BudgetTensors(*reader_, "half");
  ASSERT_TRUE(half.ok());
  for (const auto& t : *half) {
    if (t.tensor == *up) {
      EXPECT_EQ(t.shape, (std::vector<uint64_t>{48, testing::kBudgetD}));
    }
    if (t.tensor == *down) {
      EXPECT_EQ(t.shape, (std::vector<uint64_t>{testing::kBudgetD, 48}));
    }
  }
  // By parent index: a dropped tensor is NOT_FOUND, naming it.
  std::vector<uint8_t> buf(48 * testing::kBudgetD * 2);
  auto dropped = DecodeBudget(*reader_, "first", *up, "draft", OutputType::kBF16, absl::MakeSpan(buf));
  EXPECT_EQ(dropped.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(dropped.message().find("blk.1.ffn_up.weight"), std::string::npos) << dropped;
  EXPECT_TRUE(DecodeBudget(*reader_, "half", *up, "draft", OutputType::kBF16, absl::MakeSpan(buf)).ok());
  // Unknown view, unknown budget, wrong buffer size.
  EXPECT_EQ(DecodeBudget(*reader_, "half", *up, "nope", OutputType::kBF16, absl::MakeSpan(buf)).code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(BudgetTensors(*reader_, "nope").status().code(), absl::StatusCode::kNotFound);
  buf.pop_back();
  EXPECT_EQ(DecodeBudget(*reader_, "half", *up, "full", OutputType::kBF16, absl::MakeSpan(buf)).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(BudgetViews(*reader_, "half", "nope").status().code(), absl::StatusCode::kNotFound);
  // BudgetViews of the whole budget fails on the first bf16-spec tensor.
  EXPECT_EQ(BudgetViews(*reader_, "half").status().code(), absl::StatusCode::kUnimplemented);
}

TEST_F(BudgetViewTest, BytesPerBudgetAndView) {
  auto full = BudgetBytes(*reader_, "half", "full");
  auto draft = BudgetBytes(*reader_, "half", "draft");
  auto first = BudgetBytes(*reader_, "first", "full");
  ASSERT_TRUE(full.ok() && draft.ok() && first.ok()) << full.status() << draft.status() << first.status();
  EXPECT_LT(*draft, *full);
  EXPECT_LT(*first, *full);
  EXPECT_LE(*full, *reader_->ViewBytes("full"));
  EXPECT_LE(*draft, *reader_->ViewBytes("draft"));
  EXPECT_EQ(*BudgetBytes(*reader_, "half"), *full);  // the reader's view is "full"
}

TEST_F(BudgetViewTest, InspectShowsBudgets) {
  auto text = RunCli({"inspect", f_.path});
  ASSERT_EQ(text.exit_code, 0) << text.output;
  EXPECT_NE(text.output.find("budgets (2):"), std::string::npos) << text.output;
  EXPECT_NE(text.output.find("1/2 layers"), std::string::npos) << text.output;
  auto j = RunCli({"inspect", f_.path, "--json"});
  ASSERT_EQ(j.exit_code, 0) << j.output;
  auto json = io::ParseJson(j.output);
  ASSERT_TRUE(json.ok()) << json.status() << j.output;
  const auto* budgets = json->Find("budgets");
  ASSERT_NE(budgets, nullptr);
  ASSERT_EQ(budgets->array().size(), 2u);
  const auto& half = budgets->array()[0];
  EXPECT_EQ(half.Find("name")->string_value(), "half");
  EXPECT_EQ(*half.Find("bytes")->Find("full")->uint64_value(), *BudgetBytes(*reader_, "half", "full"));
  EXPECT_EQ(*half.Find("bytes")->Find("draft")->uint64_value(), *BudgetBytes(*reader_, "half", "draft"));
  EXPECT_EQ(*half.Find("units")->Find("width")->Find("kept")->uint64_value(), 80u);
  EXPECT_EQ(*half.Find("units")->Find("width")->Find("parent")->uint64_value(), 160u);
}

// The sliced file read in "full" holds the budget's original values.
TEST_F(BudgetViewTest, SliceFullEqualsBudgetFull) {
  std::string out = f_.path + ".half.bolt";
  auto s = RunCli({"slice", f_.path, "--budget", "half", "-o", out});
  ASSERT_EQ(s.exit_code, 0) << s.output;
  auto sliced = Reader::Open(out);
  ASSERT_TRUE(sliced.ok()) << sliced.status();
  auto tensors = BudgetTensors(*reader_, "half");
  ASSERT_TRUE(tensors.ok());
  for (const auto& t : *tensors) {
    auto i = (*sliced)->FindTensor(t.name);
    ASSERT_TRUE(i.has_value()) << t.name;
    std::vector<uint8_t> got(*BudgetDecodedBytes(*reader_, t, OutputType::kBF16));
    std::vector<uint8_t> want(got.size());
    ASSERT_TRUE(DecodeBudget(*reader_, t, "full", OutputType::kBF16, absl::MakeSpan(want)).ok());
    ASSERT_TRUE((*sliced)->Decode(*i, "full", OutputType::kBF16, absl::MakeSpan(got)).ok());
    EXPECT_EQ(got, want) << t.name;
  }
}

// zstd-compressed streams: no zero-copy regions, the same decodes, and the
// bytes a budget reads are whole compressed chunks.
TEST_F(BudgetViewTest, ZstdStreamsDecodeTheSame) {
  auto z = testing::WriteBudgetFixture(MakeTempDir(), {"--zstd", "5"});
  auto zr = Reader::Open(z.path);
  ASSERT_TRUE(zr.ok()) << z.path << " " << zr.status();
  bool compressed = false;
  for (const auto& info : (*zr)->tensors()) {
    for (const auto& s : info.streams) compressed = compressed || s.compression == Compression::kZstd;
  }
  ASSERT_TRUE(compressed) << "nothing was compressed; the test proves nothing";
  auto tensors = BudgetTensors(*reader_, "half");
  auto ztensors = BudgetTensors(**zr, "half");
  ASSERT_TRUE(tensors.ok() && ztensors.ok());
  ASSERT_EQ(tensors->size(), ztensors->size());
  for (size_t i = 0; i < tensors->size(); ++i) {
    const auto& t = (*tensors)[i];
    const auto& zt = (*ztensors)[i];
    EXPECT_EQ(t.name, zt.name);
    EXPECT_EQ(t.shape, zt.shape);
    for (std::string view : {"full", "draft"}) {
      std::vector<uint8_t> a(*BudgetDecodedBytes(*reader_, t, OutputType::kBF16)), b(a.size());
      ASSERT_TRUE(DecodeBudget(*reader_, t, view, OutputType::kBF16, absl::MakeSpan(a)).ok());
      auto st = DecodeBudget(**zr, zt, view, OutputType::kBF16, absl::MakeSpan(b));
      ASSERT_TRUE(st.ok()) << st;
      EXPECT_EQ(a, b) << view << " " << t.name;
    }
  }
  auto full = BudgetBytes(**zr, "half", "full");
  auto draft = BudgetBytes(**zr, "half", "draft");
  ASSERT_TRUE(full.ok() && draft.ok());
  EXPECT_LE(*draft, *full);
  EXPECT_LE(*full, *(*zr)->ViewBytes("full"));
}

// An inner cut of a tensor larger than one decode batch (about 16 MiB):
// [1100, 4096] decoded to f32 is 16 KiB a row, so the kept rows come in two
// batches; the result is still the element-by-element cut.
TEST(BudgetViewLarge, InnerCutAcrossBatches) {
  std::string dir = MakeTempDir();
  auto sources = testing::WriteBf16Safetensors(dir + "/m.safetensors", {{"blk.0.ffn_down.weight", {1100, 4096}}});
  std::ofstream(dir + "/e.json") << R"({"version": 1, "layers": {"count": 1, "name_pattern": "blk.{L}."},
  "axes": {"width": {"scope": "layer"}},
  "bindings": [{"tensor": "blk.{L}.ffn_down.weight", "dims": ["-", "width"]}],
  "budgets": [{"name": "narrow", "per_layer": {"width": [1000]}}]})";
  auto c = RunCli({"convert", dir + "/m.safetensors", "-o", dir + "/e.bolt", "--elastic", dir + "/e.json"});
  ASSERT_EQ(c.exit_code, 0) << c.output;
  auto r = Reader::Open(dir + "/e.bolt");
  ASSERT_TRUE(r.ok()) << r.status();
  auto tensors = BudgetTensors(**r, "narrow");
  ASSERT_TRUE(tensors.ok()) << tensors.status();
  ASSERT_EQ(tensors->size(), 1u);
  const auto& t = (*tensors)[0];
  const auto& src = sources.at("blk.0.ffn_down.weight");
  std::vector<uint32_t> f32(src.bf16.size());
  for (size_t i = 0; i < f32.size(); ++i) f32[i] = static_cast<uint32_t>(src.bf16[i]) << 16;
  auto want = CutPrefix(reinterpret_cast<const uint8_t*>(f32.data()), src.shape, t.shape, 4);
  std::vector<uint8_t> got(want.size());
  ASSERT_TRUE(DecodeBudget(**r, t, "", OutputType::kF32, absl::MakeSpan(got)).ok());
  EXPECT_TRUE(got == want);
}

}  // namespace
}  // namespace boltpack
