/* LD_PRELOAD shim for bench/slice_vs_cp.sh only: fsync, fdatasync and
 * sync_file_range return at once, so the script can show how much of a
 * slice's time is the durability its atomic output needs (early writeback
 * and the fsync before the rename; cp does neither). Never for real use. */
#define _GNU_SOURCE
#include <fcntl.h>

int fsync(int fd) {
  (void)fd;
  return 0;
}
int fdatasync(int fd) {
  (void)fd;
  return 0;
}
int sync_file_range(int fd, off64_t offset, off64_t nbytes, unsigned int flags) {
  (void)fd;
  (void)offset;
  (void)nbytes;
  (void)flags;
  return 0;
}
