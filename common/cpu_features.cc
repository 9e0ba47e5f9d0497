#include "common/cpu_features.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define BOLTPACK_CPU_X86 1
#else
#define BOLTPACK_CPU_X86 0
#endif

namespace boltpack {
namespace {

CpuFeatures Detect() {
  CpuFeatures f;
#if BOLTPACK_CPU_X86
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return f;
  constexpr unsigned kFma = 1u << 12, kOsxsave = 1u << 27, kAvx = 1u << 28, kF16c = 1u << 29;
  if ((ecx & (kOsxsave | kAvx)) != (kOsxsave | kAvx)) return f;
  unsigned xcr0_lo = 0, xcr0_hi = 0;
  __asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  if ((xcr0_lo & 0x6u) != 0x6u) return f;  // the OS does not save YMM state
  f.avx = true;
  f.f16c = (ecx & kF16c) != 0;
  f.fma = (ecx & kFma) != 0;
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) != 0) {
    constexpr unsigned kBmi1 = 1u << 3, kAvx2 = 1u << 5, kBmi2 = 1u << 8;
    f.avx2 = (ebx & kAvx2) != 0;
    f.bmi2 = (ebx & (kBmi1 | kBmi2)) == (kBmi1 | kBmi2);
  }
#endif
  return f;
}

}  // namespace

const CpuFeatures& DetectCpuFeatures() {
  static const CpuFeatures features = Detect();
  return features;
}

}  // namespace boltpack
