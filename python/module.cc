// boltpack._boltpack: the compiled half of the `boltpack` package (the
// safetensors-shaped API is boltpack/__init__.py). Built with the writer
// (save) against the full library, or read-only (BOLTPACK_PY_READ_ONLY)
// against libboltpack_read alone, as on a machine without Abseil.
#include <pybind11/pybind11.h>

#include "boltpack/boltpack.h"
#include "python/errors.h"
#include "python/reader.h"
#ifndef BOLTPACK_PY_READ_ONLY
#include "python/writer.h"
#endif

PYBIND11_MODULE(_boltpack, m) {
  m.doc() = "bolt-pack's reader (and writer) for Python; use the `boltpack` package.";
  boltpack::python::RegisterErrors(m);
  boltpack::python::RegisterReader(m);
#ifndef BOLTPACK_PY_READ_ONLY
  boltpack::python::RegisterWriter(m);
  m.attr("has_writer") = true;
#else
  m.attr("has_writer") = false;
#endif
  m.attr("library_version") = bp_version_string();
}
