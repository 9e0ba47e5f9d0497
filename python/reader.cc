#include "python/reader.h"

#include <cstring>
#include <string>
#include <vector>

#include "common/buffer_pool.h"
#include "python/errors.h"
#include "python/metadata.h"

namespace py = pybind11;

namespace boltpack::python {
namespace {

bp_output OutputFromName(const std::string& out) {
  if (out == "f32") return BP_OUT_F32;
  if (out == "f16") return BP_OUT_F16;
  if (out == "bf16") return BP_OUT_BF16;
  if (out == "native") return BP_OUT_NATIVE;
  ThrowStatus(BP_ERR_INVALID_ARGUMENT, "unknown output type '" + out + "' (f32, f16, bf16, native)");
}

// The destination buffer as writable bytes; NumPy and torch (through a
// uint8 NumPy view of its storage) both qualify.
py::buffer_info WritableBytes(const py::buffer& dst) {
  py::buffer_info info = dst.request(/*writable=*/true);
  if (info.ndim > 0) {
    py::ssize_t expected = info.itemsize;
    for (py::ssize_t k = info.ndim - 1; k >= 0; --k) {
      if (info.shape[k] > 1 && info.strides[k] != expected) {
        ThrowStatus(BP_ERR_INVALID_ARGUMENT, "the destination array is not C-contiguous");
      }
      expected *= info.shape[k];
    }
  }
  return info;
}

uint64_t ByteSize(const py::buffer_info& info) {
  return static_cast<uint64_t>(info.size) * static_cast<uint64_t>(info.itemsize);
}

}  // namespace

OpenModel::~OpenModel() {
  bp_budget_close(budget);  // before its reader, as bp_budget_open requires
  bp_close(reader);
}

ModelReader::ModelReader(const std::string& path, const std::string& view, const std::string& budget,
                         bool verify, bool check) {
  auto model = std::make_shared<OpenModel>();
  model->path = path;
  {
    py::gil_scoped_release unlocked;
    bp_status s = bp_open_flags(path.c_str(), view.empty() ? nullptr : view.c_str(), check ? 0 : BP_OPEN_NO_VERIFY,
                                &model->reader);
    if (s != BP_OK) {
      py::gil_scoped_acquire locked;
      Check(s, nullptr);
    }
  }
  if (!budget.empty()) {
    Check(bp_budget_open(model->reader, budget.c_str(), nullptr, &model->budget), model->reader);
  }
  model_ = std::move(model);
  if (verify) Verify();
}

void ModelReader::Close() { model_.reset(); }

const OpenModel& ModelReader::model() const {
  if (model_ == nullptr) ThrowStatus(BP_ERR_INVALID_ARGUMENT, "the file is closed");
  return *model_;
}

py::list ModelReader::Names() const {
  const OpenModel& m = model();
  py::list names;
  if (m.budget != nullptr) {
    for (size_t i = 0; i < bp_budget_tensor_count(m.budget); ++i) {
      struct bp_budget_tensor t{};
      Check(bp_budget_tensor(m.budget, i, &t), m.reader);
      names.append(py::str(t.name));
    }
    return names;
  }
  for (size_t i = 0; i < bp_tensor_count(m.reader); ++i) {
    struct bp_tensor_info t{};
    Check(bp_tensor_info(m.reader, i, &t), m.reader);
    names.append(py::str(t.name));
  }
  return names;
}

size_t ModelReader::Find(const std::string& name) const {
  const OpenModel& m = model();
  if (m.budget == nullptr) {
    size_t index = 0;
    Check(bp_find_tensor(m.reader, name.c_str(), &index), m.reader);
    return index;
  }
  for (size_t i = 0; i < bp_budget_tensor_count(m.budget); ++i) {
    struct bp_budget_tensor t{};
    Check(bp_budget_tensor(m.budget, i, &t), m.reader);
    if (name == t.name) return i;
  }
  ThrowStatus(BP_ERR_NOT_FOUND, m.path + ": budget keeps no tensor '" + name + "'");
}

size_t ModelReader::ParentIndex(size_t index) const {
  const OpenModel& m = model();
  if (m.budget == nullptr) return index;
  struct bp_budget_tensor t{};
  Check(bp_budget_tensor(m.budget, index, &t), m.reader);
  return t.tensor;
}

py::tuple ModelReader::Info(const std::string& name) const {
  const OpenModel& m = model();
  size_t index = Find(name);
  struct bp_tensor_info t{};
  Check(bp_tensor_info(m.reader, ParentIndex(index), &t), m.reader);
  py::list shape;
  if (m.budget != nullptr) {
    struct bp_budget_tensor kept{};
    Check(bp_budget_tensor(m.budget, index, &kept), m.reader);
    for (uint32_t k = 0; k < kept.ndim; ++k) shape.append(kept.shape[k]);
  } else {
    for (uint32_t k = 0; k < t.ndim; ++k) shape.append(t.shape[k]);
  }
  return py::make_tuple(py::tuple(shape), py::str(bp_dtype_name(t.dtype)), py::str(t.codec), t.stored_bytes);
}

py::dict ModelReader::Metadata() const { return ReadMetadata(model().reader); }

py::list ModelReader::Views() const {
  const OpenModel& m = model();
  py::list out;
  for (size_t i = 0; i < bp_view_count(m.reader); ++i) out.append(py::str(bp_view_name(m.reader, i)));
  return out;
}

py::list ModelReader::Budgets() const {
  const OpenModel& m = model();
  py::list out;
  for (size_t i = 0; i < bp_budget_count(m.reader); ++i) out.append(py::str(bp_budget_name(m.reader, i)));
  return out;
}

void ModelReader::DecodeInto(const std::string& name, const std::string& out, py::buffer dst, int threads) const {
  const OpenModel& m = model();
  size_t index = Find(name);
  bp_output kind = OutputFromName(out);
  py::buffer_info info = WritableBytes(dst);
  uint64_t size = ByteSize(info);
  uint64_t expected = 0;
  bp_status s = m.budget != nullptr ? bp_budget_decoded_size(m.budget, index, kind, &expected)
                                    : bp_decoded_size(m.reader, index, kind, &expected);
  Check(s, m.reader);
  if (size != expected) {
    ThrowStatus(BP_ERR_INVALID_ARGUMENT, m.path + ": tensor '" + name + "' decodes to " +
                                             std::to_string(expected) + " bytes, the array has " +
                                             std::to_string(size));
  }
  {
    py::gil_scoped_release unlocked;
    s = m.budget != nullptr ? bp_budget_decode(m.budget, index, kind, info.ptr, size)
                            : bp_decode(m.reader, index, kind, info.ptr, size, threads);
  }
  Check(s, m.reader);
}

void ModelReader::DecodeRangeInto(const std::string& name, uint64_t r0, uint64_t r1, uint64_t c0, uint64_t c1,
                                  const std::string& out, py::buffer dst, int threads) const {
  const OpenModel& m = model();
  if (m.budget != nullptr) ThrowStatus(BP_ERR_UNSUPPORTED, "row ranges of a budget view: decode the tensor");
  size_t index = Find(name);
  bp_output kind = OutputFromName(out);
  py::buffer_info info = WritableBytes(dst);
  uint64_t size = ByteSize(info);
  bp_status s = BP_OK;
  {
    py::gil_scoped_release unlocked;
    s = bp_decode_range(m.reader, index, r0, r1, c0, c1, kind, size == 0 ? nullptr : info.ptr, size, threads);
  }
  Check(s, m.reader);
}

py::array ModelReader::MappedBytes(const void* data, uint64_t size) const {
  // The capsule holds a reference to the model: the mapping lives as long
  // as the array, whatever happens to this reader.
  auto* keep = new std::shared_ptr<OpenModel>(model_);
  py::capsule owner(keep, [](void* p) { delete static_cast<std::shared_ptr<OpenModel>*>(p); });
  static const uint8_t kEmpty = 0;
  const void* base = data != nullptr ? data : &kEmpty;
  py::array a(py::dtype::of<uint8_t>(), {static_cast<py::ssize_t>(size)}, {1}, base, owner);
  py::detail::array_proxy(a.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
  return a;
}

py::object ModelReader::PlainBytes(const std::string& name) const {
  const OpenModel& m = model();
  if (m.budget != nullptr) return py::none();  // a budget's tensors are cut
  size_t index = Find(name);
  const void* data = nullptr;
  uint64_t size = 0;
  bp_status s = BP_OK;
  {
    py::gil_scoped_release unlocked;  // hashes the bytes
    s = bp_tensor_elements(m.reader, index, &data, &size);
  }
  if (s == BP_ERR_UNSUPPORTED) return py::none();  // stored otherwise: decode
  Check(s, m.reader);
  return MappedBytes(data, size);
}

py::tuple ModelReader::Location(const std::string& name) const {
  const OpenModel& m = model();
  size_t index = ParentIndex(Find(name));
  const char* path = nullptr;
  uint64_t offset = 0;
  Check(bp_stream_location(m.reader, index, 0, &path, &offset), m.reader);
  return py::make_tuple(py::str(path), offset);
}

py::tuple ModelReader::Stored(const std::string& name) const {
  const OpenModel& m = model();
  size_t index = ParentIndex(Find(name));
  struct bp_tensor_info t{};
  Check(bp_tensor_info(m.reader, index, &t), m.reader);
  size_t length = 0;
  bp_status s = bp_tensor_codec_params(m.reader, index, nullptr, 0, &length);
  if (s != BP_ERR_OUT_OF_RANGE) Check(s, m.reader);
  std::string json(length + 1, '\0');
  Check(bp_tensor_codec_params(m.reader, index, json.data(), json.size(), &length), m.reader);
  json.resize(length);
  py::object params = py::module_::import("json").attr("loads")(py::str(json));
  py::list streams;
  for (uint32_t k = 0; k < t.stream_count; ++k) {
    struct bp_stream_info stream{};
    Check(bp_stream_info(m.reader, index, k, &stream), m.reader);
    const void* data = nullptr;
    uint64_t size = 0;
    Check(bp_stream_data(m.reader, index, k, &data, &size), m.reader);
    streams.append(py::make_tuple(py::str(stream.role), stream.compression, stream.raw_length,
                                  MappedBytes(data, size)));
  }
  return py::make_tuple(py::str(t.codec), params, streams);
}

py::array NewBuffer(uint64_t size) {
  // A PooledBuffer: at a MiB and over, whole huge pages (a tensor's first
  // write faults in 512 times fewer pages), and its memory goes back to the
  // pool for the next array when this one dies.
  auto* buffer = new PooledBuffer();
  py::capsule owner(buffer, [](void* p) { delete static_cast<PooledBuffer*>(p); });
  uint8_t* bytes = buffer->Get(size == 0 ? 1 : size);
  if (bytes == nullptr) ThrowStatus(BP_ERR_RESOURCE, "out of memory for " + std::to_string(size) + " bytes");
  return py::array(py::dtype::of<uint8_t>(), {static_cast<py::ssize_t>(size)}, {1}, bytes, owner);
}

void ModelReader::Verify() const {
  const OpenModel& m = model();
  bp_status s = BP_OK;
  {
    py::gil_scoped_release unlocked;
    s = bp_verify(m.reader);
  }
  Check(s, m.reader);
}

void RegisterReader(py::module_& m) {
  py::class_<ModelReader>(m, "_Reader")
      .def(py::init<const std::string&, const std::string&, const std::string&, bool, bool>(), py::arg("path"),
           py::arg("view") = "", py::arg("budget") = "", py::arg("verify") = false, py::arg("check") = true)
      .def("close", &ModelReader::Close)
      .def_property_readonly("closed", &ModelReader::closed)
      .def("names", &ModelReader::Names)
      .def("info", &ModelReader::Info)
      .def("metadata", &ModelReader::Metadata)
      .def("views", &ModelReader::Views)
      .def("budgets", &ModelReader::Budgets)
      .def("decode_into", &ModelReader::DecodeInto)
      .def("decode_range_into", &ModelReader::DecodeRangeInto)
      .def("plain_bytes", &ModelReader::PlainBytes)
      .def("location", &ModelReader::Location)
      .def("stored", &ModelReader::Stored)
      .def("verify", &ModelReader::Verify);
  m.def("new_buffer", &NewBuffer, py::arg("size"),
        "A writable uint8 array of `size` bytes (contents unspecified) in huge pages where the system has them.");
}

}  // namespace boltpack::python
