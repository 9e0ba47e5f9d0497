// Peer of bench/million_tensors.py: ggml's own GGUF reader (src/gguf.cpp) opening
// a file as llama.cpp's loader does (no_alloc: metadata and tensor infos only).
// Built outside the tree by bench/peers/build_ggml_gguf_open.sh.
#include <cstdio>
#include "gguf.h"
int main(int argc, char** argv) {
  if (argc != 2) return 2;
  gguf_init_params p = {/*no_alloc=*/true, /*ctx=*/nullptr};
  gguf_context* ctx = gguf_init_from_file(argv[1], p);
  if (ctx == nullptr) { std::fprintf(stderr, "%s: gguf_init_from_file failed\n", argv[1]); return 1; }
  std::printf("%lld tensors, %lld kv\n", (long long)gguf_get_n_tensors(ctx), (long long)gguf_get_n_kv(ctx));
  gguf_free(ctx);
  return 0;
}
