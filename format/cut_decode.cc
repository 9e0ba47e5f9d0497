#include "format/cut_decode.h"

#include <algorithm>
#include <cstring>

#include "boltpack/codec_registry.h"
#include "common/escape.h"
#include "common/status_macros.h"
#include "common/str_cat.h"

namespace boltpack::format {
namespace {

// Decoded bytes per batch: large enough to keep every thread busy, small
// enough that the stored and decoded batch stay in cache-friendly sizes.
constexpr uint64_t kBatchDecodedBytes = uint64_t{8} << 20;

}  // namespace

absl::StatusOr<std::unique_ptr<DecodedCutPieces>> DecodedCutPieces::Create(CutInPlace& cut, OutputType out,
                                                                             int threads) {
  const TensorInfo& info = cut.info;
  std::string where = StrCat("tensor ", QuoteForDisplay(info.name));
  const Codec* codec = FindCodec(info.codec_id);
  if (codec == nullptr) return absl::UnimplementedError(StrCat(where, ": unknown codec \"", info.codec_id, "\""));
  BP_RETURN_IF_ERROR(codec->ValidateRecord(info));
  if (!codec->CanDecodeTo(info, out)) {
    return absl::UnimplementedError(StrCat(where, ": codec \"", info.codec_id, "\" cannot decode to ",
                                           DTypeName(info.dtype)));
  }
  auto p = std::unique_ptr<DecodedCutPieces>(new DecodedCutPieces());
  p->cut_ = &cut;
  p->codec_ = codec;
  p->out_ = out;
  p->exec_.threads = threads;
  BP_ASSIGN_OR_RETURN(p->size_, codec->DecodedBytes(info, out));
  // Outer rows are the batching unit; a 1-D tensor is one batch.
  p->rows_ = info.shape.size() >= 2 ? info.shape[0] : 1;
  if (p->rows_ == 0 || p->size_ == 0) {
    p->rows_ = 0;
    return p;
  }
  p->row_decoded_ = p->size_ / p->rows_;
  for (const auto& s : cut.streams) p->row_stored_.push_back(s->size() / p->rows_);
  p->rows_per_batch_ = std::clamp<uint64_t>(kBatchDecodedBytes / std::max<uint64_t>(p->row_decoded_, 1), 1, p->rows_);
  p->stored_.resize(cut.streams.size());
  p->leftover_.resize(cut.streams.size());
  return p;
}

absl::StatusOr<absl::Span<const uint8_t>> DecodedCutPieces::Next() {
  if (rows_done_ >= rows_) return absl::Span<const uint8_t>();
  uint64_t n = std::min(rows_per_batch_, rows_ - rows_done_);
  TensorInfo batch = cut_->info;
  if (batch.shape.size() >= 2) batch.shape[0] = n;
  DecodeInput in;
  in.info = &batch;
  for (size_t k = 0; k < cut_->streams.size(); ++k) {
    // Gather this batch's stored bytes of stream k from its pieces.
    uint64_t want = row_stored_[k] * n;
    uint8_t* stored = stored_[k].Get(want);
    uint64_t got = 0;
    while (got < want) {
      if (leftover_[k].empty()) {
        BP_ASSIGN_OR_RETURN(leftover_[k], cut_->streams[k]->Next());
        if (leftover_[k].empty()) {
          return absl::InternalError(StrCat("tensor ", QuoteForDisplay(batch.name), ": stream ", k, " ended early"));
        }
        // Stored bytes are verified before they are decoded.
        BP_RETURN_IF_ERROR(cut_->streams[k]->Check(leftover_[k]));
      }
      uint64_t take = std::min<uint64_t>(want - got, leftover_[k].size());
      std::memcpy(stored + got, leftover_[k].data(), take);
      leftover_[k].remove_prefix(take);
      got += take;
    }
    StreamInfo& s = batch.streams[k];
    s.raw_length = s.length = want;
    s.chunks.clear();
    in.streams.emplace_back(stored, want);
  }
  decoded_slot_ ^= 1;
  auto decoded = absl::MakeSpan(decoded_[decoded_slot_].Get(row_decoded_ * n), row_decoded_ * n);
  BP_RETURN_IF_ERROR(codec_->Decode(in, out_, decoded, exec_));
  rows_done_ += n;
  return absl::Span<const uint8_t>(decoded);
}

}  // namespace boltpack::format
