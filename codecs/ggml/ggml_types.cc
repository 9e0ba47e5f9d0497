#include "codecs/ggml/ggml_types.h"

#include <cctype>

#include "common/checked_math.h"
#include "common/str_cat.h"

namespace boltpack {
namespace {

// ggml.c type_traits (blck_size, type_size) at d99724f; removed ids absent.
constexpr GgmlType kTypes[] = {
    {0, "F32", 1, 4},        {1, "F16", 1, 2},        {2, "Q4_0", 32, 18},     {3, "Q4_1", 32, 20},
    {6, "Q5_0", 32, 22},     {7, "Q5_1", 32, 24},     {8, "Q8_0", 32, 34},     {9, "Q8_1", 32, 36},
    {10, "Q2_K", 256, 84},   {11, "Q3_K", 256, 110},  {12, "Q4_K", 256, 144},  {13, "Q5_K", 256, 176},
    {14, "Q6_K", 256, 210},  {15, "Q8_K", 256, 292},  {16, "IQ2_XXS", 256, 66}, {17, "IQ2_XS", 256, 74},
    {18, "IQ3_XXS", 256, 98}, {19, "IQ1_S", 256, 50}, {20, "IQ4_NL", 32, 18},  {21, "IQ3_S", 256, 110},
    {22, "IQ2_S", 256, 82},  {23, "IQ4_XS", 256, 136}, {24, "I8", 1, 1},       {25, "I16", 1, 2},
    {26, "I32", 1, 4},       {27, "I64", 1, 8},       {28, "F64", 1, 8},       {29, "IQ1_M", 256, 56},
    {30, "BF16", 1, 2},      {34, "TQ1_0", 256, 54},  {35, "TQ2_0", 256, 66},  {39, "MXFP4", 32, 17},
    {40, "NVFP4", 64, 36},   {41, "Q1_0", 128, 18},   {42, "Q2_0", 64, 18},
};

const GgmlType* const* TypeIndex() {
  static const GgmlType* const* index = [] {
    static const GgmlType* table[kGgmlTypeCount] = {};
    for (const auto& t : kTypes) table[t.id] = &t;
    return table;
  }();
  return index;
}

}  // namespace

absl::Span<const GgmlType> GgmlTypes() { return kTypes; }

const GgmlType* GgmlTypeById(int id) {
  if (id < 0 || id >= kGgmlTypeCount) return nullptr;
  return TypeIndex()[id];
}

const GgmlType* GgmlTypeByName(std::string_view name) {
  std::string up(name);
  for (auto& ch : up) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  for (const auto& t : kTypes) {
    if (t.name == up) return &t;
  }
  return nullptr;
}

absl::StatusOr<uint64_t> GgmlTensorBytes(const GgmlType& type, absl::Span<const uint64_t> ne) {
  uint64_t row = ne.empty() ? 1 : ne[0];
  if (row % type.block_size != 0) {
    return absl::InvalidArgumentError(StrCat("row length ne[0] = ", row, " is not a multiple of ", type.name,
                                             "'s block size ", type.block_size));
  }
  std::optional<uint64_t> n = CheckedMul(row / type.block_size, type.type_size);
  for (size_t d = 1; d < ne.size() && n; ++d) n = CheckedMul(*n, ne[d]);
  if (!n || *n > (1ull << 62)) return absl::InvalidArgumentError("byte size overflows");
  return *n;
}

std::string GgmlTypeCodecId(const GgmlType& type) {
  switch (type.id) {
    case 0: return "f32";
    case 1: return "f16";
    case 30: return "bf16";
    case 24: case 25: case 26: case 27: case 28: return "raw";
    case 8: return "q8_0";
    case 39: return "mxfp4";
    case 40: return "nvfp4-ggml";
    case 16: return "iq2_xxs";
    default: {
      std::string id = StrCat("ggml-", type.name);
      for (auto& ch : id) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      return id;
    }
  }
}

}  // namespace boltpack
