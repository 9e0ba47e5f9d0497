// CopyPieces (common/piece_copy.h): with a side thread it fetches, checks
// and hashes parts ahead of the writer. These tests hold it to the
// PieceSource contract: a piece is never retired (Next called LivePieces()
// times after it) before it was written whole, every part passes Check and
// is hashed before it is written, in order, and an error on either side
// ends the copy with that error.
#include <atomic>
#include <cstring>
#include <string>
#include <vector>

#include "common/piece_copy.h"
#include "gtest/gtest.h"

namespace boltpack {
namespace {

// Pieces of varying sizes (some larger than a part) from a ring of `live`
// buffers, as StreamCutPieces gathers short runs. Next records a violation
// when it would overwrite a buffer whose piece was not written whole yet;
// the test's writer reports what it wrote through `written`.
class RingPieces final : public PieceSource {
 public:
  RingPieces(std::vector<uint64_t> sizes, int live, const std::atomic<uint64_t>* written)
      : sizes_(std::move(sizes)), live_(live), written_(written), ring_(static_cast<size_t>(live)) {
    for (uint64_t s : sizes_) total_ += s;
  }
  uint64_t size() const override { return total_; }
  int LivePieces() const override { return live_; }

  absl::StatusOr<absl::Span<const uint8_t>> Next() override {
    ++next_calls_;
    if (next_error_at_ == next_calls_) return absl::DataLossError("next failed");
    if (given_ == sizes_.size()) return absl::Span<const uint8_t>();
    // The buffer about to be refilled held piece given_ - live_, which must
    // be written by now: all bytes before the end of that piece.
    if (given_ >= static_cast<size_t>(live_) && written_->load() < EndOf(given_ - static_cast<size_t>(live_))) {
      ++violations_;
    }
    std::vector<uint8_t>& buf = ring_[given_ % ring_.size()];
    buf.resize(sizes_[given_]);
    for (size_t i = 0; i < buf.size(); ++i) buf[i] = Byte(Offset(given_) + i);
    ++given_;
    checked_upto_ = Offset(given_ - 1);
    return absl::MakeConstSpan(buf);
  }

  absl::Status Check(absl::Span<const uint8_t> part) override {
    if (check_error_at_ != 0 && checked_upto_ + part.size() > check_error_at_ && checked_upto_ <= check_error_at_) {
      return absl::DataLossError("chunk checksum mismatch");
    }
    checked_upto_ += part.size();
    checked_bytes_ += part.size();
    return absl::OkStatus();
  }

  static uint8_t Byte(uint64_t offset) { return static_cast<uint8_t>(offset * 131 + (offset >> 11)); }
  uint64_t Offset(size_t piece) const {
    uint64_t o = 0;
    for (size_t i = 0; i < piece; ++i) o += sizes_[i];
    return o;
  }
  uint64_t EndOf(size_t piece) const { return Offset(piece + 1); }

  int violations_ = 0;
  int next_calls_ = 0;
  int next_error_at_ = 0;       // the Next call (1-based) that fails; 0: none
  uint64_t check_error_at_ = 0;  // a part holding this offset fails Check; 0: none
  uint64_t checked_bytes_ = 0;

 private:
  std::vector<uint64_t> sizes_;
  int live_;
  const std::atomic<uint64_t>* written_;
  std::vector<std::vector<uint8_t>> ring_;
  uint64_t total_ = 0;
  size_t given_ = 0;
  uint64_t checked_upto_ = 0;
};

std::vector<uint64_t> MixedSizes() {
  std::vector<uint64_t> sizes;
  for (int i = 0; i < 40; ++i) {
    sizes.push_back(i % 7 == 3 ? kPiecePartBytes * 2 + 12345 : static_cast<uint64_t>(1000 + i * 7919));
  }
  return sizes;
}

struct Copied {
  absl::Status status;
  std::vector<uint8_t> out, hashed;  // hashed: appended by the hashing thread
  std::atomic<uint64_t> hashed_bytes{0};
};

void CopyAll(RingPieces& src, std::atomic<uint64_t>& written, bool side_thread, Copied& c, int fail_write_at = 0) {
  SideWorker side;
  int writes = 0;
  c.status = CopyPieces(
      src, side_thread ? &side : nullptr,
      [&](absl::Span<const uint8_t> part) -> absl::Status {
        if (++writes == fail_write_at) return absl::InternalError("disk full");
        // Every byte written must already have been hashed.
        if (c.hashed_bytes.load() < c.out.size() + part.size()) return absl::InternalError("written before hashed");
        c.out.insert(c.out.end(), part.begin(), part.end());
        written.store(c.out.size());
        return absl::OkStatus();
      },
      [&](absl::Span<const uint8_t> part) {
        c.hashed.insert(c.hashed.end(), part.begin(), part.end());
        c.hashed_bytes.store(c.hashed.size());
      });
}

TEST(PieceCopy, SideThreadNeverRetiresAPieceBeforeItIsWritten) {
  for (int live : {1, 2, 4}) {
    std::atomic<uint64_t> written{0};
    RingPieces src(MixedSizes(), live, &written);
    Copied c;
    CopyAll(src, written, /*side_thread=*/true, c);
    ASSERT_TRUE(c.status.ok()) << c.status;
    EXPECT_EQ(src.violations_, 0) << "live " << live;
    ASSERT_EQ(c.out.size(), src.size());
    for (size_t i = 0; i < c.out.size(); ++i) {
      ASSERT_EQ(c.out[i], RingPieces::Byte(i)) << "live " << live << " byte " << i;
    }
    EXPECT_EQ(c.hashed, c.out);
    EXPECT_EQ(src.checked_bytes_, src.size());
  }
}

TEST(PieceCopy, InlineCopyGivesTheSameBytes) {
  std::atomic<uint64_t> written{0};
  RingPieces src(MixedSizes(), 1, &written);
  Copied c;
  CopyAll(src, written, /*side_thread=*/false, c);
  ASSERT_TRUE(c.status.ok()) << c.status;
  ASSERT_EQ(c.out.size(), src.size());
  for (size_t i = 0; i < c.out.size(); ++i) ASSERT_EQ(c.out[i], RingPieces::Byte(i)) << i;
  EXPECT_EQ(c.hashed, c.out);
}

TEST(PieceCopy, CheckFailureEndsTheCopyBeforeThatPartIsWritten) {
  for (bool side_thread : {false, true}) {
    std::atomic<uint64_t> written{0};
    RingPieces src(MixedSizes(), 4, &written);
    const uint64_t bad = src.Offset(20) + 5;
    src.check_error_at_ = bad;
    Copied c;
    CopyAll(src, written, side_thread, c);
    EXPECT_EQ(c.status.code(), absl::StatusCode::kDataLoss) << c.status;
    EXPECT_LE(c.out.size(), bad) << "a part that failed its check was written";
  }
}

TEST(PieceCopy, NextFailureIsReported) {
  for (bool side_thread : {false, true}) {
    std::atomic<uint64_t> written{0};
    RingPieces src(MixedSizes(), 4, &written);
    src.next_error_at_ = 9;
    Copied c;
    CopyAll(src, written, side_thread, c);
    EXPECT_EQ(c.status.code(), absl::StatusCode::kDataLoss) << c.status;
    EXPECT_EQ(c.status.message(), "next failed");
    EXPECT_LE(c.out.size(), src.Offset(8));
  }
}

TEST(PieceCopy, WriteFailureStopsTheProducer) {
  for (bool side_thread : {false, true}) {
    std::atomic<uint64_t> written{0};
    RingPieces src(MixedSizes(), 4, &written);
    Copied c;
    CopyAll(src, written, side_thread, c, /*fail_write_at=*/3);
    EXPECT_EQ(c.status.code(), absl::StatusCode::kInternal) << c.status;
    EXPECT_EQ(c.status.message(), "disk full");
    // The producer stops within a few pieces of the failure instead of
    // reading the whole source.
    EXPECT_LT(src.next_calls_, 12);
  }
}

TEST(PieceCopy, ASourceGivingTooFewBytesIsAnError) {
  class Short final : public PieceSource {
   public:
    uint64_t size() const override { return 10; }
    absl::StatusOr<absl::Span<const uint8_t>> Next() override {
      if (done_) return absl::Span<const uint8_t>();
      done_ = true;
      return absl::MakeConstSpan(bytes_, 4);
    }

   private:
    uint8_t bytes_[4] = {1, 2, 3, 4};
    bool done_ = false;
  };
  for (bool side_thread : {false, true}) {
    Short src;
    SideWorker side;
    absl::Status s = CopyPieces(
        src, side_thread ? &side : nullptr, [](absl::Span<const uint8_t>) { return absl::OkStatus(); }, {});
    EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
    EXPECT_NE(std::string(s.message()).find("4 of its 10 bytes"), std::string::npos) << s;
  }
}

}  // namespace
}  // namespace boltpack
