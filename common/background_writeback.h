// Starting writeback of a file being written, on a thread of its own.
//
// AtomicFile starts writeback (sync_file_range SYNC_FILE_RANGE_WRITE) of
// every few MiB as they are written, so the disk works alongside the writer
// and Commit's fsync waits only for the tail. That call does the
// filesystem's share of writeback (block allocation, building the I/O) in
// the caller; measured on ext4 it cost the writing thread 30-40 ms per
// 150-250 MB, as much as the copy itself. Here it runs beside the writer.
#ifndef BOLTPACK_COMMON_BACKGROUND_WRITEBACK_H_
#define BOLTPACK_COMMON_BACKGROUND_WRITEBACK_H_

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

namespace boltpack::io {

class BackgroundWriteback {
 public:
  explicit BackgroundWriteback(int fd);
  // Stops after the writeback in progress, if any (Commit's fsync then
  // covers the rest).
  ~BackgroundWriteback();
  BackgroundWriteback(const BackgroundWriteback&) = delete;
  BackgroundWriteback& operator=(const BackgroundWriteback&) = delete;

  // Bytes [0, end) of the file are written: start their writeback. Never
  // waits for the thread.
  void Request(uint64_t end);

 private:
  void Loop();
  const int fd_;
  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t requested_ = 0;  // guarded by mu_
  bool idle_ = false, stop_ = false;
  std::thread thread_;
};

}  // namespace boltpack::io

#endif  // BOLTPACK_COMMON_BACKGROUND_WRITEBACK_H_
