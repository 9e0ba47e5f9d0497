// Fuzzes the bf16-unary decoder: the same harness as bf16-huffman's.
#define BF16_FUZZ_CODEC "bf16-unary"
#include "fuzz/fuzz_decode_bf16_huffman.cc"
