// The read side of the module: one open model (a .bolt, GGUF or
// safetensors file through bp_open), optionally cut to a budget. Python's
// boltpack.safe_open wraps it; names here are the library's, the
// safetensors-shaped API is in boltpack/__init__.py.
#ifndef BOLTPACK_PYTHON_READER_H_
#define BOLTPACK_PYTHON_READER_H_

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <memory>
#include <string>

#include "boltpack/boltpack.h"

namespace boltpack::python {

// Owns the C handles. Shared by the ModelReader and by every zero-copy
// array into the mapping, so an array outlives close() and the handle.
struct OpenModel {
  bp_reader* reader = nullptr;
  bp_budget* budget = nullptr;  // null: the whole model
  std::string path;
  ~OpenModel();
};

class ModelReader {
 public:
  // verify: check every checksum now; check false: reads check none
  // (BP_OPEN_NO_VERIFY).
  ModelReader(const std::string& path, const std::string& view, const std::string& budget, bool verify, bool check);

  void Close();
  bool closed() const { return model_ == nullptr; }
  pybind11::list Names() const;
  // (shape, dtype name, codec, stored bytes) of one tensor.
  pybind11::tuple Info(const std::string& name) const;
  pybind11::dict Metadata() const;
  pybind11::list Views() const;
  pybind11::list Budgets() const;
  // Decodes the whole tensor into `dst` (a writable C-contiguous buffer of
  // exactly the decoded size) as `out` ("f32", "f16", "bf16", "native").
  void DecodeInto(const std::string& name, const std::string& out, pybind11::buffer dst, int threads) const;
  // Rows [r0, r1) of dimension 0 and columns [c0, c1) of the last.
  void DecodeRangeInto(const std::string& name, uint64_t r0, uint64_t r1, uint64_t c0, uint64_t c1,
                       const std::string& out, pybind11::buffer dst, int threads) const;
  // A tensor stored as its elements as they are (bp_tensor_elements): a
  // read-only uint8 array over them in the mapping, checked against the
  // checksum; None when it is stored otherwise (or cut by a budget).
  pybind11::object PlainBytes(const std::string& name) const;
  // (path, offset) of the file holding the tensor's first stream.
  pybind11::tuple Location(const std::string& name) const;
  // (codec, params dict, [(role, compression, raw length, uint8 array into
  // the mapping)]).
  pybind11::tuple Stored(const std::string& name) const;
  // Checks every checksum of the file (bp_verify).
  void Verify() const;

 private:
  const OpenModel& model() const;
  // Index of `name` in the reader (whole model) or in the budget.
  size_t Find(const std::string& name) const;
  size_t ParentIndex(size_t index) const;
  pybind11::array MappedBytes(const void* data, uint64_t size) const;

  std::shared_ptr<OpenModel> model_;
};

// A writable uint8 array for a decode to write into (see reader.cc).
pybind11::array NewBuffer(uint64_t size);

void RegisterReader(pybind11::module_& m);

}  // namespace boltpack::python

#endif  // BOLTPACK_PYTHON_READER_H_
