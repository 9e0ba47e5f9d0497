// bolt-pack plan: the bytes it reports equal the size of the file convert
// (then slice) writes, to the byte, for the shipped model across recipes
// and elastic budgets; a 70-120B hybrid Mamba-MoE given as a sparse
// safetensors file (shapes in the header, holes for data) is planned
// without its data being read; --json parses; --progress json lines parse.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "io/json.h"
#include "tests/test_util.h"
#include "tools/plan.h"

namespace boltpack {
namespace {

using testing::MakeTempDir;
using testing::RunCli;
using testing::SourceDir;

std::string Model() { return SourceDir() + "/testdata/tinystories-656k/TinyStories-656K.f16.gguf"; }
std::string Recipes() { return SourceDir() + "/recipes"; }

uint64_t SizeOf(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

// The JSON document plan printed (stdout; warnings may precede it).
io::JsonValue PlanJson(const std::string& output) {
  size_t at = output.find("{\"inputs\"");
  EXPECT_NE(at, std::string::npos) << output;
  if (at == std::string::npos) return io::JsonValue();
  size_t end = output.find('\n', at);
  auto j = io::ParseJson(output.substr(at, end == std::string::npos ? std::string::npos : end - at));
  EXPECT_TRUE(j.ok()) << j.status() << "\n" << output;
  return j.ok() ? *j : io::JsonValue();
}

uint64_t U64(const io::JsonValue& v, const char* key) {
  const io::JsonValue* f = v.Find(key);
  return f != nullptr && f->uint64_value() ? *f->uint64_value() : ~0ull;
}

std::string Str(const io::JsonValue& v, const char* key) {
  const io::JsonValue* f = v.Find(key);
  return f != nullptr && f->is_string() ? f->string_value() : std::string();
}

// For each tier plan reports, the file convert writes with that tier's
// rules has the planned size; with an elastic manifest, so has each
// budget's slice.
void ExpectPlanMatches(const std::vector<std::string>& rule_args, const std::vector<std::string>& tier_args) {
  const std::string dir = MakeTempDir();
  std::vector<std::string> plan = {"plan", Model(), "--budget", "2MiB", "--json"};
  plan.insert(plan.end(), rule_args.begin(), rule_args.end());
  auto p = RunCli(plan);
  ASSERT_EQ(p.exit_code, 0) << p.output;
  const io::JsonValue j = PlanJson(p.output);
  const io::JsonValue* results = j.Find("results");
  ASSERT_NE(results, nullptr);
  std::vector<std::string> convert = {"convert", Model(), "-o", dir + "/o.bolt", "--no-fsync"};
  convert.insert(convert.end(), tier_args.begin(), tier_args.end());
  auto c = RunCli(convert);
  ASSERT_EQ(c.exit_code, 0) << c.output;
  size_t checked = 0;
  for (const auto& r : results->array()) {
    if (Str(r, "tier") != Str(results->array()[0], "tier")) continue;  // the first tier: `tier_args`
    EXPECT_TRUE(r.Find("exact")->bool_value());
    const std::string budget = Str(r, "budget");
    if (budget == "full") {
      EXPECT_EQ(U64(r, "bytes"), SizeOf(dir + "/o.bolt")) << "full";
    } else {
      auto s = RunCli({"slice", dir + "/o.bolt", "--budget", budget, "-o", dir + "/s.bolt", "--no-fsync"});
      ASSERT_EQ(s.exit_code, 0) << s.output;
      EXPECT_EQ(U64(r, "bytes"), SizeOf(dir + "/s.bolt")) << budget;
    }
    EXPECT_EQ(r.Find("fits")->bool_value(), U64(r, "bytes") <= 2u << 20);
    ++checked;
  }
  EXPECT_GT(checked, 0u);
}

TEST(Plan, SourceFormIsExact) { ExpectPlanMatches({}, {}); }

TEST(Plan, CodecRulesAreExact) {
  ExpectPlanMatches({"--codec", "*=q8_0"}, {"--codec", "*=q8_0"});
  ExpectPlanMatches({"--codec", "*=nvfp4", "--codec", "*=bf16"}, {"--codec", "*=nvfp4", "--codec", "*=bf16"});
  ExpectPlanMatches({"--codec", "*=mxfp4", "--alignment", "64"}, {"--codec", "*=mxfp4", "--alignment", "64"});
}

TEST(Plan, RecipeIsExact) {
  const std::string r = Recipes() + "/tinystories-656k.textproto";
  ExpectPlanMatches({"--recipe", r}, {"--recipe", r});
}

TEST(Plan, ElasticBudgetsAreExact) {
  const std::string e = Recipes() + "/tinystories-656k-elastic.json";
  ExpectPlanMatches({"--elastic", e}, {"--elastic", e});
  ExpectPlanMatches({"--elastic", e, "--codec", "*=f32"}, {"--elastic", e, "--codec", "*=f32"});
}

TEST(Plan, ElasticBoltInputIsExact) {
  // A .bolt input: its stored bytes (an entropy code's too) are copied, so
  // known from its manifest.
  const std::string dir = MakeTempDir();
  auto c = RunCli({"convert", Model(), "-o", dir + "/e.bolt", "--elastic", Recipes() + "/tinystories-656k-elastic.json",
                   "--codec", "*=bf16-huffman", "--no-fsync"});
  ASSERT_EQ(c.exit_code, 0) << c.output;
  auto p = RunCli({"plan", dir + "/e.bolt", "--budget", "1000000", "--json"});
  ASSERT_EQ(p.exit_code, 0) << p.output;
  const io::JsonValue j = PlanJson(p.output);
  size_t checked = 0;
  for (const auto& r : j.Find("results")->array()) {
    const std::string budget = Str(r, "budget");
    if (budget == "full") {
      EXPECT_EQ(U64(r, "bytes"), SizeOf(dir + "/e.bolt"));
      EXPECT_TRUE(r.Find("exact")->bool_value());
      continue;
    }
    auto s = RunCli({"slice", dir + "/e.bolt", "--budget", budget, "-o", dir + "/s.bolt", "--no-fsync"});
    ASSERT_EQ(s.exit_code, 0) << s.output;
    // A cut of an entropy code is decoded and re-encoded: an estimate,
    // marked so; a cut of anything else is exact.
    if (r.Find("exact")->bool_value()) {
      EXPECT_EQ(U64(r, "bytes"), SizeOf(dir + "/s.bolt")) << budget;
    } else {
      EXPECT_GT(U64(r, "estimated_bytes"), 0u);
      EXPECT_FALSE(r.Find("estimated_tensors")->array().empty());
    }
    ++checked;
  }
  EXPECT_EQ(checked, 4u);
}

TEST(Plan, EntropyCodesAreMarkedEstimates) {
  const std::string dir = MakeTempDir();
  auto b = RunCli({"convert", Model(), "-o", dir + "/bf.safetensors", "--codec", "*=bf16"});
  ASSERT_EQ(b.exit_code, 0) << b.output;
  auto p = RunCli({"plan", dir + "/bf.safetensors", "--budget", "1G", "--json", "--codec", "*=bf16-huffman"});
  ASSERT_EQ(p.exit_code, 0) << p.output;
  const io::JsonValue r = PlanJson(p.output).Find("results")->array().at(0);
  EXPECT_FALSE(r.Find("exact")->bool_value());
  EXPECT_EQ(r.Find("estimated_tensors")->array().size(), 20u);
  auto t = RunCli({"plan", dir + "/bf.safetensors", "--budget", "1G", "--codec", "*=bf16-huffman"});
  EXPECT_NE(t.output.find("~"), std::string::npos) << t.output;
}

TEST(Plan, ByteCounts) {
  EXPECT_EQ(*tools::ParseByteCount("24GiB"), 24ull << 30);
  EXPECT_EQ(*tools::ParseByteCount("24G"), 24000000000ull);
  EXPECT_EQ(*tools::ParseByteCount("24gb"), 24000000000ull);
  EXPECT_EQ(*tools::ParseByteCount("512"), 512u);
  EXPECT_EQ(*tools::ParseByteCount("3KiB"), 3072u);
  EXPECT_FALSE(tools::ParseByteCount("").ok());
  EXPECT_FALSE(tools::ParseByteCount("G").ok());
  EXPECT_FALSE(tools::ParseByteCount("1.5G").ok());
  EXPECT_FALSE(tools::ParseByteCount("-1").ok());
  EXPECT_FALSE(tools::ParseByteCount("99999999999TiB").ok());  // overflow
  EXPECT_FALSE(tools::ParseByteCount("12345678901234567890123").ok());
  auto bad = RunCli({"plan", Model(), "--budget", "lots"});
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
}

TEST(Plan, RecipeTiers) {
  std::vector<tools::CodecRule> rules = {{"*exps*", "iq2_xxs", {}, "q8_0", {}},
                                         {"*ssm_in*", "nvfp4", {}, "q8_0", {}},
                                         {"*", "q8_0", {}, "", {}}};
  auto tiers = tools::RecipeTiers(rules);
  ASSERT_EQ(tiers.size(), 4u);
  EXPECT_EQ(tiers[0].name, "as given");
  EXPECT_EQ(tiers[3].name, "iq2_xxs->q8_0, nvfp4->q8_0");
  EXPECT_EQ(tiers[3].rules[0].codec_id, "q8_0");
  EXPECT_EQ(tiers[3].rules[1].codec_id, "q8_0");
  EXPECT_EQ(tiers[1].rules[1].codec_id, "nvfp4");
}

// A Nemotron-H-like hybrid: Mamba-2 mixers, MoE layers of 128 routed experts
// and a shared one, a few attention layers, in BF16. Only the header is
// written; the data region is a hole (ftruncate).
struct SparseModel {
  std::string path;
  uint64_t params = 0;
  uint64_t data_offset = 0;
  uint64_t file_size = 0;
};

SparseModel WriteSparseHybrid(const std::string& dir) {
  const uint64_t d = 4096, vocab = 131072, d_inner = 8192, groups = 8, state = 128, heads = 128;
  const uint64_t experts = 128, moe_ff = 2560, shared_ff = 5120, layers = 56;
  std::vector<std::pair<std::string, std::vector<uint64_t>>> tensors;
  auto add = [&](std::string name, std::vector<uint64_t> shape) { tensors.emplace_back(std::move(name), shape); };
  add("backbone.embeddings.weight", {vocab, d});
  for (uint64_t l = 0; l < layers; ++l) {
    const std::string p = "backbone.layers." + std::to_string(l) + ".";
    add(p + "norm.weight", {d});
    if (l % 2 == 0) {  // Mamba-2
      add(p + "mixer.in_proj.weight", {2 * d_inner + 2 * groups * state + heads, d});
      add(p + "mixer.conv1d.weight", {d_inner + 2 * groups * state, 1, 4});
      add(p + "mixer.conv1d.bias", {d_inner + 2 * groups * state});
      add(p + "mixer.A_log", {heads});
      add(p + "mixer.D", {heads});
      add(p + "mixer.dt_bias", {heads});
      add(p + "mixer.norm.weight", {d_inner});
      add(p + "mixer.out_proj.weight", {d, d_inner});
    } else if (l % 13 == 7) {  // attention
      add(p + "mixer.q_proj.weight", {d, d});
      add(p + "mixer.k_proj.weight", {1024, d});
      add(p + "mixer.v_proj.weight", {1024, d});
      add(p + "mixer.o_proj.weight", {d, d});
    } else {  // MoE
      add(p + "mixer.gate.weight", {experts, d});
      for (uint64_t e = 0; e < experts; ++e) {
        const std::string x = p + "mixer.experts." + std::to_string(e) + ".";
        add(x + "up_proj.weight", {moe_ff, d});
        add(x + "down_proj.weight", {d, moe_ff});
      }
      add(p + "mixer.shared_experts.up_proj.weight", {shared_ff, d});
      add(p + "mixer.shared_experts.down_proj.weight", {d, shared_ff});
    }
  }
  add("backbone.norm_f.weight", {d});
  add("lm_head.weight", {vocab, d});
  SparseModel m;
  std::string header = "{\"__metadata__\":{\"format\":\"pt\"}";
  uint64_t offset = 0;
  for (const auto& [name, shape] : tensors) {
    uint64_t n = 1;
    std::string dims;
    for (uint64_t x : shape) {
      n *= x;
      dims += (dims.empty() ? "" : ",") + std::to_string(x);
    }
    m.params += n;
    header += ",\"" + name + "\":{\"dtype\":\"BF16\",\"shape\":[" + dims + "],\"data_offsets\":[" +
              std::to_string(offset) + "," + std::to_string(offset + 2 * n) + "]}";
    offset += 2 * n;
  }
  header += "}";
  while (header.size() % 8 != 0) header += ' ';
  m.path = dir + "/hybrid.safetensors";
  m.data_offset = 8 + header.size();
  m.file_size = m.data_offset + offset;
  int fd = ::open(m.path.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0644);
  EXPECT_GE(fd, 0);
  uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(header.size() >> (8 * i));
  EXPECT_EQ(::write(fd, len, 8), 8);
  EXPECT_EQ(::write(fd, header.data(), header.size()), static_cast<ssize_t>(header.size()));
  EXPECT_EQ(::ftruncate(fd, static_cast<off_t>(m.file_size)), 0);  // the data: a hole
  ::close(fd);
  return m;
}

// Pages of [from, size) of `path` in the page cache (mincore): a read of
// the data, even of its holes, would put them there.
uint64_t CachedPages(const std::string& path, uint64_t from, uint64_t size) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return ~0ull;
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) return ~0ull;
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  uint64_t cached = 0;
  std::vector<unsigned char> vec(1 << 20);
  for (uint64_t at = from / page * page; at < size; at += vec.size() * page) {
    const uint64_t len = std::min<uint64_t>(vec.size() * page, size - at);
    if (::mincore(static_cast<uint8_t*>(map) + at, len, vec.data()) != 0) {
      cached = ~0ull;
      break;
    }
    for (uint64_t i = 0; i < (len + page - 1) / page; ++i) cached += vec[i] & 1;
  }
  ::munmap(map, size);
  return cached;
}

TEST(Plan, SparseHybridMambaMoeFromHeadersAlone) {
  const std::string dir = MakeTempDir();
  const SparseModel m = WriteSparseHybrid(dir);
  ASSERT_GE(m.params, 70'000'000'000ull);
  ASSERT_LE(m.params, 120'000'000'000ull);
  auto run = testing::RunCliMeasured(
      {"plan", m.path, "--budget", "24GiB", "--recipe", Recipes() + "/nemotron-bolt.textproto", "--json"});
  ASSERT_EQ(run.exit_code, 0) << run.output.substr(0, 4000);
  const io::JsonValue j = PlanJson(run.output);
  const auto& results = j.Find("results")->array();
  // Experts iq2_xxs or q8_0, Mamba nvfp4 or q8_0: four tiers, each exact.
  ASSERT_EQ(results.size(), 4u);
  std::map<std::string, uint64_t> bytes;
  for (const auto& r : results) {
    EXPECT_TRUE(r.Find("exact")->bool_value()) << Str(r, "tier");
    bytes[Str(r, "tier")] = U64(r, "bytes");
  }
  const uint64_t as_given = bytes["as given"], all_q8 = bytes["iq2_xxs->q8_0, nvfp4->q8_0"];
  // 2.06 bits a weight for most of the model: between 2 and 4 bits overall;
  // all q8_0 (8.5 bits) is more than 3 times that.
  EXPECT_GT(as_given, m.params / 4);
  EXPECT_LT(as_given, m.params / 2);
  EXPECT_GT(all_q8, 3 * as_given);
  EXPECT_LT(bytes["nvfp4->q8_0"], bytes["iq2_xxs->q8_0"]);
  const io::JsonValue* best = j.Find("largest_fit");
  ASSERT_TRUE(best != nullptr && best->is_object());
  EXPECT_LE(U64(*best, "bytes"), 24ull << 30);
  // No data read: what a read of 150 GB of holes would have cached is not
  // there, and the run stayed small (a read through the mapping counts
  // toward its resident memory).
  EXPECT_LT(CachedPages(m.path, m.data_offset + (4 << 20), m.file_size), 1024u);
  EXPECT_LT(run.peak_rss_kib, 1 << 20);
  std::printf("plan of %llu parameters (%zu tiers): %.2f s, peak RSS %lld KiB\n",
              static_cast<unsigned long long>(m.params), results.size(), run.seconds,
              static_cast<long long>(run.peak_rss_kib));
}

TEST(Plan, HostileInput) {
  const std::string dir = MakeTempDir();
  // A header that declares more than the file holds.
  std::string header = "{\"w\":{\"dtype\":\"BF16\",\"shape\":[1024,1024],\"data_offsets\":[0,2097152]}}";
  std::vector<uint8_t> bytes(8);
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<uint8_t>(header.size() >> (8 * i));
  bytes.insert(bytes.end(), header.begin(), header.end());
  testing::WriteFileBytes(dir + "/short.safetensors", bytes);
  auto p = RunCli({"plan", dir + "/short.safetensors", "--budget", "1G"});
  EXPECT_EQ(p.exit_code, 1) << p.output;
  EXPECT_NE(p.output.find("short.safetensors"), std::string::npos) << p.output;
}

TEST(Progress, JsonLinesParse) {
  const std::string dir = MakeTempDir();
  auto c = RunCli({"--progress", "json", "convert", Model(), "-o", dir + "/q.bolt", "--codec", "*=q8_0", "--no-fsync"});
  ASSERT_EQ(c.exit_code, 0) << c.output;
  // After the subcommand too.
  auto c2 = RunCli({"convert", Model(), "-o", dir + "/q2.bolt", "--progress", "json", "--no-fsync"});
  ASSERT_EQ(c2.exit_code, 0) << c2.output;
  for (const std::string& out : {c.output, c2.output}) {
    std::istringstream lines(out);
    std::string line;
    int parsed = 0;
    bool final_seen = false;
    while (std::getline(lines, line)) {
      if (line.rfind("{\"cmd\"", 0) != 0) continue;
      auto j = io::ParseJson(line);
      ASSERT_TRUE(j.ok()) << line;
      EXPECT_EQ(Str(*j, "cmd"), "convert");
      EXPECT_EQ(Str(*j, "unit"), "bytes");
      ASSERT_NE(j->Find("rate"), nullptr);
      ASSERT_NE(j->Find("eta_s"), nullptr);
      if (j->Find("final")->bool_value()) {
        final_seen = true;
        EXPECT_EQ(U64(*j, "done"), U64(*j, "total"));
        EXPECT_GT(U64(*j, "total"), 0u);
        EXPECT_FALSE(Str(*j, "tensor").empty());
      }
      ++parsed;
    }
    EXPECT_GE(parsed, 1);
    EXPECT_TRUE(final_seen) << out;
  }
  // Quiet by default when stderr is not a terminal (as before), and with none.
  auto q = RunCli({"convert", Model(), "-o", dir + "/q3.bolt", "--no-fsync"});
  EXPECT_EQ(q.output.find("{\"cmd\""), std::string::npos);
  auto bad = RunCli({"--progress", "loud", "convert", Model(), "-o", dir + "/q4.bolt"});
  EXPECT_EQ(bad.exit_code, 2);
}

}  // namespace
}  // namespace boltpack
