/* Lists the tensors of a model with the bolt-pack C API and decodes each
 * decodable one to f32, printing its sum. The model is a .bolt, GGUF or
 * safetensors file (or a sharded index .json): bp_open reads them all.
 *
 *   read_tensors_c model.bolt
 *
 * Exits 1 with bolt-pack's error message on any failure. Tensors that this
 * library cannot decode to f32 (unknown codec or feature, or an output type
 * the codec does not produce) are listed and skipped, not treated as errors. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "boltpack/boltpack.h"

static int fail(const char* what, bp_status st, const char* message) {
  fprintf(stderr, "read_tensors: %s: %s (%s)\n", what, message, bp_status_name(st));
  return 1;
}

int main(int argc, char** argv) {
  bp_reader* r = NULL;
  bp_status st;
  uint32_t major = 0, minor = 0;
  size_t n, t;
  int rc = 0;

  if (argc != 2) {
    fprintf(stderr, "usage: %s FILE.bolt|FILE.gguf|FILE.safetensors|INDEX.json\n", argv[0]);
    return 2;
  }
  st = bp_open(argv[1], &r);
  if (st != BP_OK) return fail("open", st, bp_last_error_message());

  /* Only a .bolt file has a container format version. */
  st = bp_format_version(r, &major, &minor);
  if (st != BP_OK && st != BP_ERR_UNSUPPORTED) {
    rc = fail("format version", st, bp_last_error(r));
    goto done;
  }
  n = bp_tensor_count(r);
  if (st == BP_OK) {
    printf("%s: format %" PRIu32 ".%" PRIu32 ", %zu tensors, %zu metadata entries (libboltpack %s)\n",
           argv[1], major, minor, n, bp_metadata_count(r), bp_version_string());
  } else {
    printf("%s: %zu tensors, %zu metadata entries (libboltpack %s)\n", argv[1], n, bp_metadata_count(r),
           bp_version_string());
  }

  for (t = 0; t < n; ++t) {
    struct bp_tensor_info info;
    uint64_t bytes = 0;
    uint32_t d;

    st = bp_tensor_info(r, t, &info);
    if (st != BP_OK) {
      rc = fail("tensor info", st, bp_last_error(r));
      goto done;
    }
    printf("%s [", info.name);
    for (d = 0; d < info.ndim; ++d) printf(d ? ", %" PRIu64 : "%" PRIu64, info.shape[d]);
    printf("] dtype=%s codec=%s stored=%" PRIu64, bp_dtype_name(info.dtype), info.codec,
           info.stored_bytes);

    st = bp_decoded_size(r, t, BP_OUT_F32, &bytes);
    if (st == BP_ERR_UNSUPPORTED || st == BP_ERR_INVALID_ARGUMENT) {
      printf(" (not decodable to f32: %s)\n", bp_last_error(r));
      continue;
    }
    if (st != BP_OK) {
      printf("\n");
      rc = fail("decoded size", st, bp_last_error(r));
      goto done;
    }
    {
      size_t count = (size_t)(bytes / sizeof(float)), i;
      float* values = (float*)malloc(bytes ? (size_t)bytes : 1);
      double sum = 0.0;
      if (values == NULL) {
        printf("\n");
        fprintf(stderr, "read_tensors: out of memory for %" PRIu64 " bytes\n", bytes);
        rc = 1;
        goto done;
      }
      st = bp_decode(r, t, BP_OUT_F32, values, bytes, 0);
      if (st != BP_OK) {
        free(values);
        printf("\n");
        rc = fail("decode", st, bp_last_error(r));
        goto done;
      }
      for (i = 0; i < count; ++i) sum += values[i];
      free(values);
      printf(" sum=%.6g\n", sum);
    }
  }

done:
  bp_close(r);
  return rc;
}
