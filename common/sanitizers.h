// Whether this build runs under AddressSanitizer, for the few places that
// must know: memory it cannot guard (mappings) and measurements its
// quarantine would distort (resident memory).
#ifndef BOLTPACK_COMMON_SANITIZERS_H_
#define BOLTPACK_COMMON_SANITIZERS_H_

#if defined(__SANITIZE_ADDRESS__)
#define BOLTPACK_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define BOLTPACK_ASAN 1
#endif
#endif

namespace boltpack {

#ifdef BOLTPACK_ASAN
inline constexpr bool kUnderAddressSanitizer = true;
#else
inline constexpr bool kUnderAddressSanitizer = false;
#endif

}  // namespace boltpack

#endif  // BOLTPACK_COMMON_SANITIZERS_H_
