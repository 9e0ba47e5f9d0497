#include "python/errors.h"

namespace py = pybind11;

namespace boltpack::python {
namespace {

// Owned by the module object; created once at import, never freed (as
// every extension module's exception classes).
PyObject* g_error = nullptr;
PyObject* g_checksum_error = nullptr;
PyObject* g_not_found_error = nullptr;

}  // namespace

void RegisterErrors(py::module_& m) {
  g_error = PyErr_NewExceptionWithDoc("boltpack.BoltpackError",
                                      "A bolt-pack call failed; the message is the library's.",
                                      PyExc_RuntimeError, nullptr);
  g_checksum_error = PyErr_NewExceptionWithDoc(
      "boltpack.ChecksumError", "Stored bytes do not match their checksum (a damaged file).", g_error, nullptr);
  // Also a KeyError, as a missing key of safetensors' handle is.
  py::tuple not_found_bases = py::make_tuple(py::handle(g_error), py::handle(PyExc_KeyError));
  g_not_found_error = PyErr_NewExceptionWithDoc("boltpack.NotFoundError",
                                                "No such file, tensor, view or budget.",
                                                not_found_bases.ptr(), nullptr);
  m.add_object("BoltpackError", py::handle(g_error));
  m.add_object("ChecksumError", py::handle(g_checksum_error));
  m.add_object("NotFoundError", py::handle(g_not_found_error));
}

void ThrowStatus(bp_status status, const std::string& message) {
  PyObject* type = g_error;
  if (status == BP_ERR_CHECKSUM) type = g_checksum_error;
  if (status == BP_ERR_NOT_FOUND) type = g_not_found_error;
  PyErr_SetString(type, message.c_str());
  throw py::error_already_set();
}

void Check(bp_status status, const bp_reader* r) {
  if (status == BP_OK) return;
  std::string message = r != nullptr ? bp_last_error(r) : bp_last_error_message();
  if (message.empty()) message = bp_status_name(status);
  ThrowStatus(status, message);
}

#ifndef BOLTPACK_PY_READ_ONLY
void Check(const absl::Status& status) {
  if (status.ok()) return;
  bp_status code = BP_ERR_INTERNAL;
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition: code = BP_ERR_INVALID_ARGUMENT; break;
    case absl::StatusCode::kNotFound: code = BP_ERR_NOT_FOUND; break;
    case absl::StatusCode::kUnimplemented: code = BP_ERR_UNSUPPORTED; break;
    case absl::StatusCode::kResourceExhausted: code = BP_ERR_RESOURCE; break;
    case absl::StatusCode::kOutOfRange: code = BP_ERR_OUT_OF_RANGE; break;
    case absl::StatusCode::kDataLoss: code = BP_ERR_CORRUPT; break;
    case absl::StatusCode::kPermissionDenied:
    case absl::StatusCode::kUnavailable: code = BP_ERR_IO; break;
    default: break;
  }
  ThrowStatus(code, std::string(status.message()));
}
#endif

}  // namespace boltpack::python
