// The codecs bolt-pack ships. Each codec family adds its registration here.
#ifndef BOLTPACK_CODECS_BUILTIN_CODECS_H_
#define BOLTPACK_CODECS_BUILTIN_CODECS_H_

#include "absl/status/status.h"

namespace boltpack {

// Registers every built-in codec through RegisterCodec. Called once, lazily,
// by the registry on its first use; not meant to be called directly (a second
// call fails with AlreadyExists).
absl::Status RegisterBuiltinCodecs();

}  // namespace boltpack

#endif  // BOLTPACK_CODECS_BUILTIN_CODECS_H_
