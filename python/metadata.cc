#include "python/metadata.h"

#include <cstdint>
#include <string>

#include "python/errors.h"

namespace py = pybind11;

namespace boltpack::python {
namespace {

bool IsUnsigned(int t) {
  return t == BP_VALUE_UINT8 || t == BP_VALUE_UINT16 || t == BP_VALUE_UINT32 || t == BP_VALUE_UINT64;
}
bool IsSigned(int t) {
  return t == BP_VALUE_INT8 || t == BP_VALUE_INT16 || t == BP_VALUE_INT32 || t == BP_VALUE_INT64;
}
bool IsFloat(int t) { return t == BP_VALUE_FLOAT32 || t == BP_VALUE_FLOAT64; }

py::object ArrayElement(const bp_reader* r, size_t i, size_t j, int type) {
  if (IsUnsigned(type)) {
    uint64_t v = 0;
    Check(bp_metadata_array_get_u64(r, i, j, &v), r);
    return py::int_(v);
  }
  if (IsSigned(type)) {
    int64_t v = 0;
    Check(bp_metadata_array_get_i64(r, i, j, &v), r);
    return py::int_(v);
  }
  if (IsFloat(type)) {
    double v = 0;
    Check(bp_metadata_array_get_f64(r, i, j, &v), r);
    return py::float_(v);
  }
  if (type == BP_VALUE_BOOL) {
    int v = 0;
    Check(bp_metadata_array_get_bool(r, i, j, &v), r);
    return py::bool_(v != 0);
  }
  if (type == BP_VALUE_STRING) {
    const char* data = nullptr;
    size_t len = 0;
    Check(bp_metadata_array_get_string(r, i, j, &data, &len), r);
    return py::str(data, len);
  }
  // Arrays of arrays: the C API reads one level; the entry says so.
  return py::none();
}

py::object Value(const bp_reader* r, size_t i) {
  int type = bp_metadata_type(r, i);
  if (type == BP_VALUE_ARRAY) {
    size_t len = 0;
    int element_type = 0;
    Check(bp_metadata_array_len(r, i, &len), r);
    Check(bp_metadata_array_type(r, i, &element_type), r);
    py::list out;
    for (size_t j = 0; j < len; ++j) out.append(ArrayElement(r, i, j, element_type));
    return out;
  }
  if (type == BP_VALUE_STRING) {
    const char* data = nullptr;
    size_t len = 0;
    Check(bp_metadata_get_string(r, i, &data, &len), r);
    // Bytes that are not UTF-8 stay bytes rather than failing the dict.
    PyObject* s = PyUnicode_DecodeUTF8(data, static_cast<Py_ssize_t>(len), "strict");
    if (s != nullptr) return py::reinterpret_steal<py::object>(s);
    PyErr_Clear();
    return py::bytes(data, len);
  }
  if (IsUnsigned(type)) {
    uint64_t v = 0;
    Check(bp_metadata_get_u64(r, i, &v), r);
    return py::int_(v);
  }
  if (IsSigned(type)) {
    int64_t v = 0;
    Check(bp_metadata_get_i64(r, i, &v), r);
    return py::int_(v);
  }
  if (IsFloat(type)) {
    double v = 0;
    Check(bp_metadata_get_f64(r, i, &v), r);
    return py::float_(v);
  }
  if (type == BP_VALUE_BOOL) {
    int v = 0;
    Check(bp_metadata_get_bool(r, i, &v), r);
    return py::bool_(v != 0);
  }
  return py::none();
}

}  // namespace

py::dict ReadMetadata(const bp_reader* r) {
  py::dict out;
  size_t n = bp_metadata_count(r);
  for (size_t i = 0; i < n; ++i) out[py::str(bp_metadata_key(r, i))] = Value(r, i);
  return out;
}

}  // namespace boltpack::python
