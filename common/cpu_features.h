// What the running x86 CPU (and OS) can execute, read once with CPUID.
// CPUID rather than __builtin_cpu_supports: clang before 16 does not know
// "f16c" there. All false on other architectures.
#ifndef BOLTPACK_COMMON_CPU_FEATURES_H_
#define BOLTPACK_COMMON_CPU_FEATURES_H_

namespace boltpack {

struct CpuFeatures {
  // AVX usable (CPU flag and the OS saves YMM state: OSXSAVE, XCR0 bits 1-2).
  bool avx = false;
  bool f16c = false;  // with avx
  bool fma = false;   // with avx
  bool avx2 = false;  // with avx
  bool bmi2 = false;  // BMI1 and BMI2 (read with avx)
};

const CpuFeatures& DetectCpuFeatures();

}  // namespace boltpack

#endif  // BOLTPACK_COMMON_CPU_FEATURES_H_
