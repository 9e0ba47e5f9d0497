// The one place that decides whether the x86-64 SIMD paths (SSE/AVX2/F16C
// intrinsics, picked at run time through common/cpu_features.h) are
// compiled: BOLTPACK_X86_SIMD is 1 on x86 with <immintrin.h> included, 0
// elsewhere, where the portable loops serve alone.
#ifndef BOLTPACK_CODECS_X86_SIMD_H_
#define BOLTPACK_CODECS_X86_SIMD_H_

#if defined(__x86_64__)
#include <immintrin.h>
#define BOLTPACK_X86_SIMD 1
#else
#define BOLTPACK_X86_SIMD 0
#endif

#endif  // BOLTPACK_CODECS_X86_SIMD_H_
