// CopyPieces (common/piece_copy.h): with a side thread it fetches, checks
// and hashes parts ahead of the writer. These tests hold it to the
// PieceSource contract: a piece is never retired (Next called LivePieces()
// times after it) before it was written whole, every part passes Check and
// is hashed before it is written, in order, and an error on either side
// ends the copy with that error.
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>
#include <cstring>
#include <string>
#include <vector>

#include "common/piece_copy.h"
#include "gtest/gtest.h"
#include "common/write_behind.h"

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

// A sink whose writes append to `out` on io::WriteBehind's thread.
class VectorSink final : public QueuedSink {
 public:
  explicit VectorSink(int fail_write_at = 0)
      : fail_write_at_(fail_write_at), behind_([this](absl::Span<const uint8_t> part) -> absl::Status {
          if (++writes_ == fail_write_at_) return absl::InternalError("disk full");
          if (watch_ && alive_.expired()) ++dead_source_writes_;
          out_.insert(out_.end(), part.begin(), part.end());
          written_.store(out_.size());
          return absl::OkStatus();
        }) {}
  absl::StatusOr<uint64_t> QueueWrite(absl::Span<const uint8_t> bytes, std::shared_ptr<const void> keep) override {
    return behind_.Queue(bytes, {}, std::move(keep));
  }
  void WaitWritten(uint64_t ticket) override { behind_.WaitWritten(ticket); }
  absl::Status Drain() { return behind_.Drain(); }
  // Counts writes made once `source` is gone.
  void Watch(const std::shared_ptr<const void>& source) {
    alive_ = source;
    watch_ = true;
  }

  std::atomic<uint64_t> written_{0};
  std::vector<uint8_t> out_;
  int dead_source_writes_ = 0;

 private:
  int fail_write_at_;
  int writes_ = 0;
  std::weak_ptr<const void> alive_;
  bool watch_ = false;
  io::WriteBehind behind_;  // last: its thread stops before the rest goes
};

TEST(PieceCopyBehind, NeverRetiresAPieceBeforeItIsWrittenAndKeepsTheSourceUntilWritten) {
  for (int live : {1, 2, 4}) {
    VectorSink sink;
    auto src = std::make_shared<RingPieces>(MixedSizes(), live, &sink.written_);
    const uint64_t size = src->size();
    std::weak_ptr<RingPieces> source = src;
    sink.Watch(src);
    std::vector<uint8_t> hashed;
    absl::Status st = CopyPiecesBehind(std::move(src), sink, [&](absl::Span<const uint8_t> part) {
      // Hashed here, on the caller's thread, before the part is queued.
      EXPECT_LE(sink.written_.load(), hashed.size());
      hashed.insert(hashed.end(), part.begin(), part.end());
    });
    ASSERT_TRUE(st.ok()) << st;
    ASSERT_TRUE(sink.Drain().ok());
    EXPECT_TRUE(source.expired()) << "the sink still holds the source after its writes";
    EXPECT_EQ(sink.dead_source_writes_, 0) << "written from a source already dropped";
    ASSERT_EQ(sink.out_.size(), size);
    for (size_t i = 0; i < sink.out_.size(); ++i) ASSERT_EQ(sink.out_[i], RingPieces::Byte(i)) << "live " << live;
    EXPECT_EQ(hashed, sink.out_);
  }
}

TEST(PieceCopyBehind, ConsecutiveSourcesComeOutInOrder) {
  VectorSink sink;
  std::vector<uint8_t> expected;
  for (int k = 0; k < 5; ++k) {
    auto src = std::make_shared<RingPieces>(std::vector<uint64_t>{1000u + 77u * k, kPiecePartBytes + 5, 3}, 2,
                                            &sink.written_);
    for (uint64_t i = 0; i < src->size(); ++i) expected.push_back(RingPieces::Byte(i));
    ASSERT_TRUE(CopyPiecesBehind(std::move(src), sink, {}).ok());
  }
  ASSERT_TRUE(sink.Drain().ok());
  EXPECT_EQ(sink.out_, expected);
}

TEST(PieceCopyBehind, CheckFailureEndsTheCopyBeforeThatPartIsQueued) {
  VectorSink sink;
  auto src = std::make_shared<RingPieces>(MixedSizes(), 4, &sink.written_);
  const uint64_t bad = src->Offset(20) + 5;
  src->check_error_at_ = bad;
  absl::Status st = CopyPiecesBehind(src, sink, {});
  EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss) << st;
  ASSERT_TRUE(sink.Drain().ok());
  EXPECT_LE(sink.out_.size(), bad) << "a part that failed its check was written";
}

TEST(PieceCopyBehind, AWriteFailureIsReportedAndStopsTheWritesAfterIt) {
  VectorSink sink(/*fail_write_at=*/3);
  auto src = std::make_shared<RingPieces>(MixedSizes(), 4, &sink.written_);
  std::weak_ptr<RingPieces> source = src;
  absl::Status st = CopyPiecesBehind(std::move(src), sink, {});
  absl::Status drained = sink.Drain();
  // Reported by the copy when it saw the failure in time, else by Drain.
  EXPECT_EQ(drained.code(), absl::StatusCode::kInternal) << drained;
  EXPECT_EQ(drained.message(), "disk full");
  EXPECT_TRUE(st.ok() || st.message() == "disk full") << st;
  EXPECT_EQ(sink.out_.size(), MixedSizes()[0] + MixedSizes()[1]) << "writes went on after the failure";
  EXPECT_TRUE(source.expired());
}

TEST(WriteBehind, WritesInOrderAndDropsEachKeepOnceWritten) {
  std::vector<uint8_t> out;
  std::vector<int> order;
  auto marker = std::make_shared<int>(7);
  std::weak_ptr<int> watched = marker;
  int writes_while_kept = 0;
  {
    io::WriteBehind behind([&](absl::Span<const uint8_t> b) {
      out.insert(out.end(), b.begin(), b.end());
      if (!watched.expired()) ++writes_while_kept;
      return absl::OkStatus();
    });
    const uint8_t a[3] = {1, 2, 3};
    auto t1 = behind.Queue(absl::MakeConstSpan(a), {}, std::move(marker));
    auto t2 = behind.Queue({}, std::vector<uint8_t>{4, 5});
    ASSERT_TRUE(t1.ok() && t2.ok());
    EXPECT_EQ(*t2, *t1 + 1);
    behind.WaitWritten(*t2);
    EXPECT_GE(writes_while_kept, 1);  // the write of `a` itself
    ASSERT_TRUE(behind.Drain().ok());
    EXPECT_TRUE(watched.expired()) << "a keep outlived Drain";
  }
  EXPECT_EQ(out, (std::vector<uint8_t>{1, 2, 3, 4, 5}));
}

TEST(WriteBehind, DestroyedWithWritesQueuedItSkipsThemAndDropsTheirKeeps) {
  std::atomic<int> writes{0};
  std::atomic<bool> go{false};
  std::weak_ptr<int> watched;
  std::thread release([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    go = true;
  });
  {
    io::WriteBehind behind([&](absl::Span<const uint8_t>) {
      while (!go) std::this_thread::sleep_for(std::chrono::milliseconds(1));  // the first write waits
      ++writes;
      return absl::OkStatus();
    });
    std::vector<uint8_t> bytes(100, 1);
    ASSERT_TRUE(behind.Queue(bytes).ok());
    auto keep = std::make_shared<int>(1);
    watched = keep;
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(behind.Queue(bytes, {}, keep).ok());
    keep.reset();
  }  // destroyed while the first write waits: it finishes, the rest are skipped
  release.join();
  EXPECT_LE(writes.load(), 1);
  EXPECT_TRUE(watched.expired());
}

}  // namespace
}  // namespace boltpack
