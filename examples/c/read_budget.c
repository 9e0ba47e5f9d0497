/* Opens one budget of an elastic .bolt file with the bolt-pack C API, in a
 * view ("full" or "draft"), and reads every tensor it keeps: in place
 * (zero-copy region descriptors) where the stored bytes allow it, otherwise
 * by decoding the kept part to f32. Prints each tensor's kept shape and how
 * it was read.
 *
 *   read_budget_c model.bolt BUDGET [VIEW]
 *
 * Without BUDGET's name on the command line it lists the budgets. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "boltpack/boltpack.h"

static int fail(const char* what, bp_status st, const char* message) {
  fprintf(stderr, "read_budget: %s: %s (%s)\n", what, message, bp_status_name(st));
  return 1;
}

int main(int argc, char** argv) {
  bp_reader* r = NULL;
  bp_budget* b = NULL;
  bp_status st;
  uint64_t bytes = 0;
  size_t i, n;
  int rc = 0;

  if (argc < 2 || argc > 4) {
    fprintf(stderr, "usage: %s FILE.bolt [BUDGET [VIEW]]\n", argv[0]);
    return 2;
  }
  st = bp_open(argv[1], &r);
  if (st != BP_OK) return fail("open", st, bp_last_error_message());
  if (argc == 2) {
    for (i = 0; i < bp_budget_count(r); ++i) printf("%s\n", bp_budget_name(r, i));
    goto done;
  }
  st = bp_budget_open(r, argv[2], argc == 4 ? argv[3] : NULL, &b);
  if (st != BP_OK) {
    rc = fail("budget", st, bp_last_error(r));
    goto done;
  }
  st = bp_budget_bytes(b, &bytes);
  if (st != BP_OK) {
    rc = fail("budget bytes", st, bp_last_error(r));
    goto done;
  }
  n = bp_budget_tensor_count(b);
  printf("budget %s: %zu tensors, reads %" PRIu64 " bytes\n", argv[2], n, bytes);
  for (i = 0; i < n; ++i) {
    struct bp_budget_tensor t;
    size_t regions = 0, k;
    uint32_t d;

    st = bp_budget_tensor(b, i, &t);
    if (st != BP_OK) {
      rc = fail("tensor", st, bp_last_error(r));
      goto done;
    }
    printf("%s [", t.name);
    for (d = 0; d < t.ndim; ++d) printf(d ? ", %" PRIu64 : "%" PRIu64, t.shape[d]);
    printf("]");
    st = bp_budget_region_count(b, i, &regions);
    if (st == BP_OK) {
      /* In place: each stream's kept bytes are runs inside the mapping. */
      for (k = 0; k < regions; ++k) {
        struct bp_region reg;
        st = bp_budget_region(b, i, k, &reg);
        if (st != BP_OK) {
          rc = fail("region", st, bp_last_error(r));
          goto done;
        }
        printf(" stream %zu: %s, %" PRIu64 " bytes", reg.stream, reg.ndim == 0 ? "contiguous" : "strided",
               reg.total_bytes);
      }
      printf("\n");
    } else if (st == BP_ERR_UNSUPPORTED) {
      /* Entropy-coded or compressed: decode the kept part. */
      uint64_t size = 0;
      float* values;
      st = bp_budget_decoded_size(b, i, BP_OUT_F32, &size);
      if (st != BP_OK) {
        printf(" (not decodable to f32: %s)\n", bp_last_error(r));
        continue;
      }
      values = (float*)malloc(size ? (size_t)size : 1);
      if (values == NULL) {
        rc = fail("decode", BP_ERR_RESOURCE, "out of memory");
        goto done;
      }
      st = bp_budget_decode(b, i, BP_OUT_F32, values, size);
      if (st != BP_OK) {
        free(values);
        rc = fail("decode", st, bp_last_error(r));
        goto done;
      }
      printf(" decoded, %" PRIu64 " bytes, first %g\n", size, size >= 4 ? (double)values[0] : 0.0);
      free(values);
    } else {
      rc = fail("regions", st, bp_last_error(r));
      goto done;
    }
  }

done:
  bp_budget_close(b); /* before bp_close of its reader */
  bp_close(r);
  return rc;
}
