/* LD_PRELOAD shim for bench/slice_vs_cp.sh only: fsync and fdatasync return
 * at once, so the script can show how much of a slice's time is the fsync
 * its atomic output needs (cp does not fsync). Never for real use. */
int fsync(int fd) {
  (void)fd;
  return 0;
}
int fdatasync(int fd) {
  (void)fd;
  return 0;
}
