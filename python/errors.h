// Python exceptions for the library's status codes: every failure raises
// boltpack.BoltpackError (or its ChecksumError subclass) carrying the
// library's own message, which names the file, the tensor and the problem.
#ifndef BOLTPACK_PYTHON_ERRORS_H_
#define BOLTPACK_PYTHON_ERRORS_H_

#include <pybind11/pybind11.h>

#include <string>

#ifndef BOLTPACK_PY_READ_ONLY
#include "absl/status/status.h"
#endif
#include "boltpack/boltpack.h"

namespace boltpack::python {

// Creates the exception classes in `m` (called once, at import).
void RegisterErrors(pybind11::module_& m);

// Raises the exception for `status` with `message` (never returns).
[[noreturn]] void ThrowStatus(bp_status status, const std::string& message);

// Throws for a failed C API call made with reader `r` (NULL: the thread's
// last message); a no-op for BP_OK.
void Check(bp_status status, const bp_reader* r);

#ifndef BOLTPACK_PY_READ_ONLY
// Throws for a failed C++ call (the writer).
void Check(const absl::Status& status);
#endif

}  // namespace boltpack::python

#endif  // BOLTPACK_PYTHON_ERRORS_H_
