// Umbrella header for the bolt-pack C++ API.
#ifndef BOLTPACK_BOLTPACK_HPP_
#define BOLTPACK_BOLTPACK_HPP_

#include "boltpack/budget_view.h"
#include "boltpack/codec.h"
#include "boltpack/codec_registry.h"
#include "boltpack/elastic.h"
#include "boltpack/reader.h"
#include "boltpack/tensor_info.h"
#include "boltpack/types.h"
#include "boltpack/version.h"
#include "boltpack/writer.h"

#endif  // BOLTPACK_BOLTPACK_HPP_
