// The write side of the module: boltpack._boltpack.save, which
// boltpack.save_file calls. Tensors held in memory (NumPy arrays, torch
// tensors' storage) are converted as `bolt-pack convert` converts files:
// codec rules, a recipe, an elastic manifest, the output's format by its
// extension (.bolt, .gguf or .safetensors), written whole or not at all.
#ifndef BOLTPACK_PYTHON_WRITER_H_
#define BOLTPACK_PYTHON_WRITER_H_

#include <pybind11/pybind11.h>

namespace boltpack::python {

void RegisterWriter(pybind11::module_& m);

}  // namespace boltpack::python

#endif  // BOLTPACK_PYTHON_WRITER_H_
