// File metadata as a Python dict of typed values: ints stay ints, floats
// floats, GGUF arrays lists.
#ifndef BOLTPACK_PYTHON_METADATA_H_
#define BOLTPACK_PYTHON_METADATA_H_

#include <pybind11/pybind11.h>

#include "boltpack/boltpack.h"

namespace boltpack::python {

pybind11::dict ReadMetadata(const bp_reader* r);

}  // namespace boltpack::python

#endif  // BOLTPACK_PYTHON_METADATA_H_
