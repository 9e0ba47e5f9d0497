// bp_decode_range: a block of rows (first dimension) and columns (last
// dimension) of one tensor into a caller's buffer. The reader decodes row
// ranges itself (Reader::DecodeRows reads only their chunks); columns are cut
// here from whole decoded rows, since no codec decodes part of a row.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "absl/types/span.h"
#include "boltpack/boltpack.h"
#include "capi/capi_internal.h"
#include "common/checked_math.h"
#include "common/str_cat.h"

namespace {

using boltpack::StrCat;
using namespace boltpack::capi;  // NOLINT: the helpers every entry point uses

// Scratch for the rows a column cut decodes whole: bounded so that a narrow
// slice of a huge tensor does not need the tensor's size in memory.
constexpr uint64_t kScratchBytes = uint64_t{64} << 20;

// What a block asks for, in the tensor's terms.
struct Block {
  uint64_t row_begin = 0, row_end = 0;
  uint64_t col_begin = 0, col_end = 0;
  uint64_t cols = 1;     // the last dimension (1 for rank 0 and 1)
  uint64_t groups = 1;   // product of the middle dimensions
  uint64_t row_bytes = 0;
  uint64_t elem_bytes = 0;  // set only for a column cut
  bool all_cols() const { return col_begin == 0 && col_end == cols; }
};

// Reads the shape, checks the ranges against it and sizes rows and
// elements in output bytes; *need gets the block's size in bytes.
bp_status PlanBlock(const bp_reader* r, size_t tensor, boltpack::OutputType type, Block* b, uint64_t* need) {
  std::vector<uint64_t> shape;
  r->reader->TensorShape(tensor, &shape);
  const uint64_t rows = shape.empty() ? 1 : shape[0];
  if (shape.size() >= 2) b->cols = shape.back();
  for (size_t d = 1; d + 1 < shape.size(); ++d) b->groups *= shape[d];  // bounded: the reader validated the shape
  if (b->row_begin > b->row_end || b->row_end > rows) {
    return Fail(r, BP_ERR_OUT_OF_RANGE, StrCat(TensorWhere(r, tensor), ": rows [", b->row_begin, ", ", b->row_end,
                                               ") outside [0, ", rows, ")"));
  }
  if (b->col_begin > b->col_end || b->col_end > b->cols) {
    return Fail(r, BP_ERR_OUT_OF_RANGE, StrCat(TensorWhere(r, tensor), ": columns [", b->col_begin, ", ",
                                               b->col_end, ") outside [0, ", b->cols, ")"));
  }
  auto total = r->reader->DecodedBytes(tensor, type);
  if (!total.ok()) return Fail(r, total.status());
  const uint64_t kept_rows = b->row_end - b->row_begin;
  if (rows == 0 || *total % rows != 0) {
    // Rows cannot be told apart in this output; only the whole tensor goes.
    if (b->row_begin == 0 && b->row_end == rows && b->all_cols()) {
      *need = *total;
      return BP_OK;
    }
    if (rows == 0) {
      *need = 0;
      return BP_OK;
    }
    return Fail(r, BP_ERR_UNSUPPORTED, StrCat(TensorWhere(r, tensor), ": this output has no whole bytes per row, "
                                              "so rows cannot be decoded apart; decode the whole tensor"));
  }
  b->row_bytes = *total / rows;
  if (b->all_cols()) {
    *need = kept_rows * b->row_bytes;  // at most *total
    return BP_OK;
  }
  const uint64_t row_elems = b->groups * b->cols;  // > 0: a column range inside a non-empty last dimension
  if (b->row_bytes % row_elems != 0) {
    return Fail(r, BP_ERR_UNSUPPORTED, StrCat(TensorWhere(r, tensor), ": this output has no whole bytes per "
                                              "element, so columns cannot be cut; decode whole rows"));
  }
  b->elem_bytes = b->row_bytes / row_elems;
  // Each factor is at most the tensor's, so the product is at most *total.
  *need = kept_rows * b->groups * (b->col_end - b->col_begin) * b->elem_bytes;
  return BP_OK;
}

// Decodes rows of `b` whole into bounded scratch and copies their columns
// to `dst`, row after row.
absl::Status DecodeColumns(const bp_reader* r, size_t tensor, boltpack::OutputType type, const Block& b,
                           uint8_t* dst, const boltpack::ExecOptions& exec) {
  const uint64_t rows_per_pass = std::max<uint64_t>(1, kScratchBytes / b.row_bytes);
  const uint64_t pass_rows = std::min(rows_per_pass, b.row_end - b.row_begin);
  std::vector<uint8_t> scratch(pass_rows * b.row_bytes);
  const uint64_t run = (b.col_end - b.col_begin) * b.elem_bytes;
  const uint64_t skip = b.col_begin * b.elem_bytes;
  const uint64_t group_bytes = b.cols * b.elem_bytes;
  for (uint64_t first = b.row_begin; first < b.row_end; first += pass_rows) {
    const uint64_t last = std::min(b.row_end, first + pass_rows);
    auto rows = absl::MakeSpan(scratch.data(), (last - first) * b.row_bytes);
    absl::Status st = r->reader->DecodeRows(tensor, first, last, type, rows, exec);
    if (!st.ok()) return st;
    for (uint64_t g = 0; g < (last - first) * b.groups; ++g) {
      std::memcpy(dst, scratch.data() + g * group_bytes + skip, run);
      dst += run;
    }
  }
  return absl::OkStatus();
}

}  // namespace

extern "C" bp_status bp_decode_range(const bp_reader* r, size_t tensor, uint64_t row_begin, uint64_t row_end,
                                     uint64_t col_begin, uint64_t col_end, bp_output out, void* dst,
                                     uint64_t dst_size, int threads) {
  return Guard(r, "bp_decode_range", [&]() -> bp_status {
    if (r == nullptr) return NullArg(r, "bp_decode_range", "reader");
    if (dst == nullptr && dst_size != 0) return NullArg(r, "bp_decode_range", "dst");
    boltpack::OutputType type;
    if (!ToOutputType(out, &type)) {
      return Fail(r, BP_ERR_INVALID_ARGUMENT, StrCat("bp_decode_range: unknown output type ", static_cast<int>(out)));
    }
    if (bp_status st = CheckTensor(r, tensor); st != BP_OK) return st;
    Block b;
    b.row_begin = row_begin;
    b.row_end = row_end;
    b.col_begin = col_begin;
    b.col_end = col_end;
    uint64_t need = 0;
    if (bp_status st = PlanBlock(r, tensor, type, &b, &need); st != BP_OK) return st;
    if (dst_size != need) {
      return Fail(r, BP_ERR_INVALID_ARGUMENT, StrCat(TensorWhere(r, tensor), ": rows [", row_begin, ", ", row_end,
                                                     ") columns [", col_begin, ", ", col_end, ") are ", need,
                                                     " bytes, buffer of ", dst_size));
    }
    if (need == 0) return BP_OK;
    if (need > std::numeric_limits<size_t>::max()) return Fail(r, BP_ERR_RESOURCE, "bp_decode_range: block exceeds the address space");
    boltpack::ExecOptions exec;
    exec.threads = threads;
    auto* bytes = static_cast<uint8_t*>(dst);
    if (!b.all_cols()) return Fail(r, DecodeColumns(r, tensor, type, b, bytes, exec));
    auto span = absl::MakeSpan(bytes, static_cast<size_t>(need));
    if (b.row_bytes == 0) return Fail(r, r->reader->Decode(tensor, type, span, exec));  // whole tensor, no row size
    return Fail(r, r->reader->DecodeRows(tensor, row_begin, row_end, type, span, exec));
  });
}
