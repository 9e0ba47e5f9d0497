// Umbrella header for the full bolt-pack C++ API (reader, writer, codecs;
// absl::Status and absl::Span in its signatures), linked from libboltpack.
// A reader needing none of Abseil uses boltpack/boltpack.hpp instead: the
// header-only wrapper over the C API of libboltpack_read.
#ifndef BOLTPACK_BOLTPACK_CXX_H_
#define BOLTPACK_BOLTPACK_CXX_H_

#include "boltpack/budget_view.h"
#include "boltpack/codec.h"
#include "boltpack/codec_registry.h"
#include "boltpack/elastic.h"
#include "boltpack/reader.h"
#include "boltpack/tensor_info.h"
#include "boltpack/types.h"
#include "boltpack/version.h"
#include "boltpack/writer.h"

#endif  // BOLTPACK_BOLTPACK_CXX_H_
