// bp_sync_points: where GPU decoders may start inside a bf16-huffman or
// bf16-unary tensor's exponent lanes (boltpack/cuda.h builds its device
// index from them). The codec finds them by decoding, so the index a GPU
// kernel trusts comes from bytes the CPU decoder accepted.
#include <cstdlib>
#include <cstring>

#include "boltpack/boltpack.h"
#include "capi/capi_internal.h"
#include "codecs/bf16_exp/bf16_exp_codecs.h"
#include "common/str_cat.h"

namespace {

using boltpack::StrCat;
using namespace boltpack::capi;  // NOLINT: the helpers every entry point uses

static_assert(sizeof(bp_sync_point) == sizeof(boltpack::bf16_exp::SyncPoint), "one layout, copied as is");

}  // namespace

extern "C" {

bp_status bp_sync_points(const bp_reader* r, size_t tensor, size_t stream, uint32_t every, int threads,
                         bp_sync_point** points, size_t* count) {
  return Guard(r, "bp_sync_points", [&]() -> bp_status {
    if (r == nullptr) return NullArg(r, "bp_sync_points", "reader");
    if (points == nullptr) return NullArg(r, "bp_sync_points", "points");
    if (count == nullptr) return NullArg(r, "bp_sync_points", "count");
    *points = nullptr;
    *count = 0;
    if (every == 0) return Fail(r, BP_ERR_INVALID_ARGUMENT, "bp_sync_points: every must be at least 1");
    if (bp_status st = CheckStream(r, tensor, stream); st != BP_OK) return st;
    const boltpack::TensorInfo& t = r->Described(tensor);
    if ((t.codec_id != "bf16-huffman" && t.codec_id != "bf16-unary") || stream != 1) {
      return Fail(r, BP_ERR_UNSUPPORTED,
                  StrCat(TensorWhere(r, tensor), ": stream ", stream, " of codec '", t.codec_id,
                         "' has no exponent lanes (bf16-huffman and bf16-unary stream 1 have)"));
    }
    const void* data = nullptr;
    uint64_t size = 0;
    if (bp_status st = bp_stream_data_checked(r, tensor, stream, &data, &size); st != BP_OK) return st;
    absl::Span<const uint8_t> bytes(static_cast<const uint8_t*>(data), static_cast<size_t>(size));
    auto found = boltpack::Bf16ExpSyncPoints(t, bytes, every, threads);
    if (!found.ok()) {
      return Fail(r, absl::Status(found.status().code(), StrCat(TensorWhere(r, tensor), ": ", found.status().message())));
    }
    void* out = std::malloc(found->size() * sizeof(bp_sync_point));
    if (out == nullptr) return Fail(r, BP_ERR_RESOURCE, "bp_sync_points: out of memory");
    std::memcpy(out, found->data(), found->size() * sizeof(bp_sync_point));
    *points = static_cast<bp_sync_point*>(out);
    *count = found->size();
    return BP_OK;
  });
}

void bp_free_sync_points(bp_sync_point* points) { std::free(points); }

}  // extern "C"
