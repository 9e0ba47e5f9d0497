/* Decode speed of tensor 0 of a file to f32, bf16 and f16 output, one
 * thread, through the C API alone (bp_open, bp_decode into a reused
 * buffer), so that the same program times any libboltpack_read.so given by
 * LD_LIBRARY_PATH: an older library against a newer one, same machine, same
 * run. Prints "f32 G/s  bf16 G/s  f16 G/s" (elements per second).
 *   cc -O2 decode_outputs.c -Iinclude -Lout -lboltpack_read -o decode_outputs
 *   ./decode_outputs FILE.bolt [REPEAT] */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "boltpack/boltpack.h"

static double Now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  int repeat = argc > 2 ? atoi(argv[2]) : 7;
  bp_reader* r = NULL;
  if (bp_open(argv[1], &r) != BP_OK) {
    fprintf(stderr, "%s\n", bp_last_error_message());
    return 1;
  }
  struct bp_tensor_info info;
  if (bp_tensor_info(r, 0, &info) != BP_OK) return 1;
  double elements = 1;
  for (uint32_t d = 0; d < info.ndim; ++d) elements *= (double)info.shape[d];
  const bp_output outs[3] = {BP_OUT_F32, BP_OUT_BF16, BP_OUT_F16};
  for (int o = 0; o < 3; ++o) {
    uint64_t bytes = 0;
    if (bp_decoded_size(r, 0, outs[o], &bytes) != BP_OK) return 1;
    void* dst = malloc(bytes);
    double best = 1e30;
    for (int k = 0; k <= repeat; ++k) {  /* the first one warms */
      double t0 = Now();
      if (bp_decode(r, 0, outs[o], dst, bytes, 1) != BP_OK) {
        fprintf(stderr, "%s\n", bp_last_error(r));
        return 1;
      }
      double dt = Now() - t0;
      if (k > 0 && dt < best) best = dt;
    }
    printf("%s%.2f", o ? "  " : "", elements / best / 1e9);
    free(dst);
  }
  printf("\n");
  bp_close(r);
  return 0;
}
