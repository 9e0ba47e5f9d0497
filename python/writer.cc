#include "python/writer.h"

#include <pybind11/stl.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "python/errors.h"
#include "tools/convert.h"
#include "tools/inputs.h"

namespace py = pybind11;

namespace boltpack::python {
namespace {

DType DTypeOf(const std::string& name) {
  if (std::optional<DType> d = DTypeFromName(name)) return *d;
  ThrowStatus(BP_ERR_INVALID_ARGUMENT, "unknown dtype '" + name + "' (safetensors spelling: F32, BF16, I64, ...)");
}

MetaValue IntValue(const py::int_& v) {
  // Python ints are unbounded: int64 where they fit, uint64 above, else refused.
  try {
    return MetaValue::Int(ValueType::kInt64, v.cast<int64_t>());
  } catch (const py::cast_error&) {
  }
  try {
    return MetaValue::Uint(ValueType::kUint64, v.cast<uint64_t>());
  } catch (const py::cast_error&) {
  }
  ThrowStatus(BP_ERR_INVALID_ARGUMENT, "metadata integer " + py::repr(v).cast<std::string>() + " does not fit 64 bits");
}

MetaValue ToMetaValue(const py::handle& v, const std::string& key);

MetaValue ListValue(const py::sequence& items, const std::string& key) {
  std::vector<MetaValue> elements;
  elements.reserve(items.size());
  for (const py::handle item : items) elements.push_back(ToMetaValue(item, key));
  if (elements.empty()) return MetaValue::Array(ValueType::kInt64, {});
  const ValueType t = elements[0].type;
  for (const MetaValue& e : elements) {
    if (e.type != t) {
      ThrowStatus(BP_ERR_INVALID_ARGUMENT, "metadata '" + key + "': a list's elements must share one type (" +
                                               std::string(ValueTypeName(t)) + " and " +
                                               std::string(ValueTypeName(e.type)) + ")");
    }
  }
  if (t == ValueType::kString) {
    MetaValue::StringArrayBuilder strings;
    for (const MetaValue& e : elements) strings.Add(e.s);
    return strings.Build();
  }
  if (t == ValueType::kArray) {
    MetaValue::NestedArrayBuilder nested;
    for (const MetaValue& e : elements) nested.Add(e);
    return nested.Build();
  }
  return MetaValue::Array(t, std::move(elements));
}

// bool before int: Python's bool is an int.
MetaValue ToMetaValue(const py::handle& v, const std::string& key) {
  if (py::isinstance<py::bool_>(v)) return MetaValue::Bool(v.cast<bool>());
  if (py::isinstance<py::int_>(v)) return IntValue(py::reinterpret_borrow<py::int_>(v));
  if (py::isinstance<py::float_>(v)) return MetaValue::Float64(v.cast<double>());
  if (py::isinstance<py::str>(v)) return MetaValue::String(v.cast<std::string>());
  if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v)) {
    return ListValue(py::reinterpret_borrow<py::sequence>(v), key);
  }
  ThrowStatus(BP_ERR_INVALID_ARGUMENT, "metadata '" + key + "': unsupported value type " +
                                           std::string(py::str(v.get_type().attr("__name__"))) +
                                           " (str, int, float, bool or a list of one of them)");
}

Metadata ToMetadata(const py::dict& metadata) {
  Metadata out;
  for (const auto& [k, v] : metadata) {
    if (!py::isinstance<py::str>(k)) ThrowStatus(BP_ERR_INVALID_ARGUMENT, "metadata keys must be str");
    std::string key = k.cast<std::string>();
    out.emplace_back(key, ToMetaValue(v, key));
  }
  return out;
}

struct HeldTensors {
  std::vector<py::buffer_info> buffers;  // keep the caller's memory pinned
  std::vector<tools::MemoryTensor> tensors;
};

// (name, dtype name, shape, C-contiguous buffer) per tensor.
HeldTensors HoldTensors(const py::list& items) {
  HeldTensors held;
  held.buffers.reserve(items.size());
  for (const py::handle item : items) {
    auto t = item.cast<py::tuple>();
    if (t.size() != 4) ThrowStatus(BP_ERR_INVALID_ARGUMENT, "save: each tensor is (name, dtype, shape, buffer)");
    tools::MemoryTensor m;
    m.name = t[0].cast<std::string>();
    m.dtype = DTypeOf(t[1].cast<std::string>());
    m.shape = t[2].cast<std::vector<uint64_t>>();
    py::buffer_info info = t[3].cast<py::buffer>().request();
    const uint64_t size = static_cast<uint64_t>(info.size) * static_cast<uint64_t>(info.itemsize);
    m.bytes = absl::MakeConstSpan(static_cast<const uint8_t*>(info.ptr), size);
    held.buffers.push_back(std::move(info));
    held.tensors.push_back(std::move(m));
  }
  return held;
}

// Returns the conversion's warnings and notes, for Python's warnings module.
std::vector<std::string> Save(const std::string& path, const py::list& tensors, const py::dict& metadata,
                              const std::vector<std::string>& codec_rules, const std::string& recipe,
                              const std::string& elastic, int threads, int zstd_level, bool durable) {
  tools::ConvertArgs args;
  args.output = path;
  args.codec_rules = codec_rules;
  args.recipe = recipe;
  args.elastic = elastic;
  args.threads = threads;
  args.zstd_level = zstd_level;
  args.no_fsync = !durable;
  HeldTensors held = HoldTensors(tensors);
  Metadata meta = ToMetadata(metadata);
  std::vector<tools::ConvertNote> notes;
  absl::Status st;
  {
    py::gil_scoped_release unlocked;
    auto prepared = tools::PrepareConvert(args);
    auto in = prepared.ok() ? tools::Inputs::FromMemory(std::move(held.tensors), std::move(meta), "save_file")
                            : absl::StatusOr<std::unique_ptr<tools::Inputs>>(prepared.status());
    st = in.ok() ? tools::ConvertInputs(**in, args, *prepared, &notes) : in.status();
  }
  Check(st);
  std::vector<std::string> out;
  for (auto& n : notes) out.push_back(std::move(n.text));
  return out;
}

}  // namespace

void RegisterWriter(py::module_& m) {
  m.def("save", &Save, py::arg("path"), py::arg("tensors"), py::arg("metadata"), py::arg("codec_rules"),
        py::arg("recipe") = "", py::arg("elastic") = "", py::arg("threads") = 0, py::arg("zstd_level") = 0,
        py::arg("durable") = true,
        "Writes tensors [(name, dtype, shape, buffer)] to `path` as `bolt-pack convert` would.");
}

}  // namespace boltpack::python
