// The C API (include/boltpack/boltpack.h) over boltpack::Reader.
//
// Every entry point is noexcept and runs its body inside Guard(), which turns
// any escaping C++ exception into a status: nothing but a bp_status (or a
// documented sentinel value) ever crosses the C boundary. The C++ side is
// only ever asked for things it reports as absl::Status; nothing here calls
// StatusOr::value() or indexes a container without a bounds check first.
#include "boltpack/boltpack.h"

#include "capi/capi_internal.h"

#include <cctype>
#include <cstdint>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/types/span.h"
#include "boltpack/budget_view.h"
#include "boltpack/reader.h"
#include "boltpack/tensor_info.h"
#include "boltpack/types.h"
#include "boltpack/version.h"
#include "common/checksum_status.h"
#include "common/escape.h"
#include "common/str_cat.h"

namespace {

using boltpack::MetaValue;
using boltpack::StrCat;
using boltpack::ValueType;

static_assert(BP_MAX_DIMS == 8, "BP_MAX_DIMS must match format::kMaxDims");
static_assert(static_cast<int>(boltpack::OutputType::kF32) == BP_OUT_F32);
static_assert(static_cast<int>(boltpack::OutputType::kBF16) == BP_OUT_BF16);
static_assert(static_cast<int>(boltpack::OutputType::kF16) == BP_OUT_F16);
static_assert(static_cast<int>(boltpack::OutputType::kNative) == BP_OUT_NATIVE);
static_assert(static_cast<int>(boltpack::DType::kC64) == BP_DTYPE_C64);
static_assert(static_cast<int>(boltpack::DType::kBF16) == BP_DTYPE_BF16);
static_assert(static_cast<int>(ValueType::kArray) == BP_VALUE_ARRAY);
static_assert(static_cast<int>(ValueType::kString) == BP_VALUE_STRING);
static_assert(static_cast<int>(boltpack::Compression::kZstd) == BP_COMPRESSION_ZSTD);

// The calling thread's last error (bp_last_error_message) and its private
// copy of a reader's last error (bp_last_error), so that the pointers handed
// out cannot be changed by another thread.
thread_local std::string tls_error;
thread_local std::string tls_reader_error;

bp_status FromCode(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kOk:
      return BP_OK;
    case absl::StatusCode::kInvalidArgument:
      return BP_ERR_INVALID_ARGUMENT;
    case absl::StatusCode::kNotFound:
      return BP_ERR_NOT_FOUND;
    case absl::StatusCode::kDataLoss:
      return BP_ERR_CORRUPT;
    case absl::StatusCode::kUnimplemented:
    case absl::StatusCode::kFailedPrecondition:
      return BP_ERR_UNSUPPORTED;
    case absl::StatusCode::kResourceExhausted:
      return BP_ERR_RESOURCE;
    case absl::StatusCode::kPermissionDenied:
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kAborted:
    case absl::StatusCode::kCancelled:
    case absl::StatusCode::kDeadlineExceeded:
      return BP_ERR_IO;
    case absl::StatusCode::kOutOfRange:
      return BP_ERR_OUT_OF_RANGE;
    default:
      return BP_ERR_INTERNAL;
  }
}

}  // namespace

namespace boltpack::capi {

// GGUF (a split model by its first shard) and safetensors (or a sharded
// index .json) open by extension, as the CLI's inputs do; anything else is
// read as a .bolt file, which checks its own magic.
bool IsForeignPath(std::string_view path) {
  auto ends_with = [&](std::string_view ext) {
    if (path.size() < ext.size()) return false;
    for (size_t i = 0; i < ext.size(); ++i) {
      if (std::tolower(static_cast<unsigned char>(path[path.size() - ext.size() + i])) != ext[i]) return false;
    }
    return true;
  };
  return ends_with(".gguf") || ends_with(".safetensors") || ends_with(".json");
}

// Records `message` for the calling thread and for `r`; returns `code`.
// Never throws: if even the message cannot be stored, the code still goes
// back.
bp_status Fail(const bp_reader* r, bp_status code, std::string_view message) noexcept {
  try {
    tls_error.assign(message.data(), message.size());
  } catch (...) {
  }
  if (r != nullptr) {
    try {
      std::lock_guard<std::mutex> lock(r->mu);
      r->last_error.assign(message.data(), message.size());
    } catch (...) {
    }
  }
  return code;
}

bp_status Fail(const bp_reader* r, const absl::Status& status) noexcept {
  // A checksum mismatch is DATA_LOSS with a mark (common/checksum_status.h).
  bp_status code = boltpack::IsChecksumMismatch(status) ? BP_ERR_CHECKSUM : FromCode(status.code());
  if (code == BP_OK) return BP_OK;
  return Fail(r, code, std::string_view(status.message().data(), status.message().size()));
}

bp_status NullArg(const bp_reader* r, const char* fn, const char* arg) {
  return Fail(r, BP_ERR_INVALID_ARGUMENT, StrCat(fn, ": ", arg, " is NULL"));
}

const std::string& PathOf(const bp_reader* r) { return r->reader->path(); }

// Checks a tensor index; on failure records the error.
bp_status CheckTensor(const bp_reader* r, size_t tensor) {
  size_t n = r->reader->tensor_count();
  if (tensor >= n) {
    return Fail(r, BP_ERR_OUT_OF_RANGE,
                StrCat(PathOf(r), ": no tensor #", tensor, " (the file has ", n, ")"));
  }
  return BP_OK;
}

std::string TensorWhere(const bp_reader* r, size_t tensor) {
  return StrCat(PathOf(r), ": tensor ", boltpack::QuoteForDisplay(r->reader->TensorName(tensor)));
}

bp_status CheckStream(const bp_reader* r, size_t tensor, size_t stream) {
  if (bp_status st = CheckTensor(r, tensor); st != BP_OK) return st;
  size_t n = r->Described(tensor).streams.size();
  if (stream >= n) {
    return Fail(r, BP_ERR_OUT_OF_RANGE,
                StrCat(TensorWhere(r, tensor), ": no stream #", stream, " (it has ", n, ")"));
  }
  return BP_OK;
}

const boltpack::Reader* BoltOnly(const bp_reader* r, const char* fn, bp_status* st) {
  *st = BP_OK;
  if (r->bolt != nullptr) return r->bolt;
  *st = Fail(r, BP_ERR_UNSUPPORTED, StrCat(PathOf(r), ": ", fn, " needs a .bolt file (GGUF and safetensors have no ",
                                           "views, format version or checksums)"));
  return nullptr;
}

bool ToOutputType(bp_output out, boltpack::OutputType* type) {
  int v = static_cast<int>(out);
  if (v < BP_OUT_F32 || v > BP_OUT_NATIVE) return false;
  *type = static_cast<boltpack::OutputType>(v);
  return true;
}

}  // namespace boltpack::capi

namespace {

using namespace boltpack::capi;  // NOLINT: the helpers every entry point uses

// ---- metadata helpers ----------------------------------------------------

// Entry `i`, or an error recorded and nullptr.
const std::pair<std::string, MetaValue>* MetaEntry(const bp_reader* r, size_t i, bp_status* st) {
  const auto& md = r->reader->metadata();
  if (i >= md.size()) {
    *st = Fail(r, BP_ERR_OUT_OF_RANGE,
               StrCat(PathOf(r), ": no metadata entry #", i, " (the file has ", md.size(), ")"));
    return nullptr;
  }
  *st = BP_OK;
  return &md[i];
}

std::string MetaWhere(const bp_reader* r, const std::string& key) {
  return StrCat(PathOf(r), ": metadata \"", key, "\"");
}

bp_status Mismatch(const bp_reader* r, const std::string& where, const MetaValue& v,
                   const char* wanted) {
  return Fail(r, BP_ERR_INVALID_ARGUMENT,
              StrCat(where, " is ", boltpack::ValueTypeName(v.type), ", not ", wanted));
}


bp_status ReadU64(const bp_reader* r, const std::string& where, const MetaValue& v,
                  uint64_t* out) {
  if (!IsUnsignedInt(v.type)) return Mismatch(r, where, v, "an unsigned integer");
  *out = v.u;
  return BP_OK;
}
bp_status ReadI64(const bp_reader* r, const std::string& where, const MetaValue& v,
                  int64_t* out) {
  if (!IsSignedInt(v.type)) return Mismatch(r, where, v, "a signed integer");
  *out = v.i;
  return BP_OK;
}
bp_status ReadF64(const bp_reader* r, const std::string& where, const MetaValue& v,
                  double* out) {
  if (v.type == ValueType::kFloat32) {
    *out = static_cast<double>(v.f32);
  } else if (v.type == ValueType::kFloat64) {
    *out = v.f64;
  } else {
    return Mismatch(r, where, v, "a float");
  }
  return BP_OK;
}
bp_status ReadBool(const bp_reader* r, const std::string& where, const MetaValue& v, int* out) {
  if (v.type != ValueType::kBool) return Mismatch(r, where, v, "bool");
  *out = v.b ? 1 : 0;
  return BP_OK;
}
bp_status ReadString(const bp_reader* r, const std::string& where, const MetaValue& v,
                     const char** data, size_t* len) {
  if (v.type != ValueType::kString) return Mismatch(r, where, v, "string");
  *data = v.s.c_str();
  *len = v.s.size();
  return BP_OK;
}

// Shared body of the scalar getters: checks arguments, finds entry `i` and
// hands it to `read`.
template <typename Read>
bp_status MetaScalar(const bp_reader* r, size_t i, const char* fn, bool out_ok, Read&& read) {
  return Guard(r, fn, [&]() -> bp_status {
    if (r == nullptr) return NullArg(r, fn, "reader");
    if (!out_ok) return NullArg(r, fn, "output pointer");
    bp_status st;
    const auto* e = MetaEntry(r, i, &st);
    if (e == nullptr) return st;
    return read(MetaWhere(r, e->first), e->second);
  });
}

// Shared body of the array element getters.
template <typename Read>
bp_status MetaElement(const bp_reader* r, size_t i, size_t j, const char* fn, bool out_ok,
                      Read&& read) {
  return Guard(r, fn, [&]() -> bp_status {
    if (r == nullptr) return NullArg(r, fn, "reader");
    if (!out_ok) return NullArg(r, fn, "output pointer");
    bp_status st;
    const auto* e = MetaEntry(r, i, &st);
    if (e == nullptr) return st;
    std::string where = MetaWhere(r, e->first);
    const MetaValue& v = e->second;
    if (v.type != ValueType::kArray) return Mismatch(r, where, v, "array");
    if (j >= v.array_size()) {
      return Fail(r, BP_ERR_OUT_OF_RANGE,
                  StrCat(where, ": no element #", j, " (the array has ", v.array_size(), ")"));
    }
    return read(StrCat(where, "[", j, "]"), v, j);
  });
}

}  // namespace

extern "C" {

const char* bp_last_error_message(void) { return tls_error.c_str(); }

const char* bp_last_error(const bp_reader* r) {
  if (r == nullptr) return "invalid reader (NULL)";
  try {
    std::lock_guard<std::mutex> lock(r->mu);
    tls_reader_error = r->last_error;
    return tls_reader_error.c_str();
  } catch (...) {
    return "cannot copy the reader's error message";
  }
}

const char* bp_status_name(bp_status status) {
  switch (static_cast<int>(status)) {
    case BP_OK: return "OK";
    case BP_ERR_INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case BP_ERR_NOT_FOUND: return "NOT_FOUND";
    case BP_ERR_CORRUPT: return "CORRUPT";
    case BP_ERR_UNSUPPORTED: return "UNSUPPORTED";
    case BP_ERR_RESOURCE: return "RESOURCE";
    case BP_ERR_IO: return "IO";
    case BP_ERR_INTERNAL: return "INTERNAL";
    case BP_ERR_OUT_OF_RANGE: return "OUT_OF_RANGE";
    case BP_ERR_CHECKSUM: return "CHECKSUM";
    default: return "UNKNOWN";
  }
}

bp_status bp_status_kind(bp_status status) {
  const int v = static_cast<int>(status);
  if (v >= BP_OK && v <= BP_ERR_OUT_OF_RANGE) return status;
  if (v >= 100 && v <= 199) return BP_ERR_CORRUPT;
  if (v >= 200 && v <= 299) return BP_ERR_INVALID_ARGUMENT;
  if (v >= 300 && v <= 399) return BP_ERR_UNSUPPORTED;
  return BP_ERR_INTERNAL;
}

const char* bp_dtype_name(int dtype) {
  // Our own table (numbers pinned by the ABI), so the strings are static and
  // NUL-terminated whatever DTypeName's storage is.
  static constexpr const char* kNames[] = {
      "UNSPECIFIED", "F32", "F16", "BF16", "F64", "I8", "I16", "I32", "I64", "U8",
      "U16", "U32", "U64", "BOOL", "F8_E4M3", "F8_E5M2", "F8_E8M0", "C64"};
  static_assert(sizeof(kNames) / sizeof(kNames[0]) == boltpack::kMaxDType + 1);
  if (dtype < 0 || dtype > boltpack::kMaxDType) return "?";
  return kNames[dtype];
}

const char* bp_version_string(void) { return BOLTPACK_VERSION_STRING; }

uint32_t bp_version_number(void) { return BOLTPACK_VERSION; }

bp_status bp_open(const char* path, bp_reader** out) { return bp_open_flags(path, nullptr, 0, out); }

bp_status bp_open_view(const char* path, const char* view, bp_reader** out) {
  return bp_open_flags(path, view, 0, out);
}

bp_status bp_open_flags(const char* path, const char* view, uint32_t flags, bp_reader** out) {
  return Guard(nullptr, "bp_open", [&]() -> bp_status {
    if (out == nullptr) return NullArg(nullptr, "bp_open", "out");
    *out = nullptr;
    if (path == nullptr) return NullArg(nullptr, "bp_open", "path");
    if ((flags & ~BP_OPEN_NO_VERIFY) != 0) {
      return Fail(nullptr, BP_ERR_INVALID_ARGUMENT,
                  "bp_open: unknown flag bits (this library knows BP_OPEN_NO_VERIFY only)");
    }
    boltpack::ReaderOptions options;
    options.verify_checksums = (flags & BP_OPEN_NO_VERIFY) == 0;
    if (view != nullptr && view[0] != '\0') options.view = view;
    const bool foreign = IsForeignPath(path);
    if (foreign && options.view != "full") {
      return Fail(nullptr, BP_ERR_NOT_FOUND, StrCat(path, ": no view \"", options.view, "\" (only a .bolt file declares views)"));
    }
    auto opened = foreign ? boltpack::capi::OpenForeignModel(path) : boltpack::capi::OpenBoltModel(path, options);
    if (!opened.ok()) return Fail(nullptr, opened.status());
    auto handle = std::make_unique<bp_reader>();
    handle->reader = std::move(*opened);
    handle->bolt = handle->reader->bolt();
    handle->verify_checksums = options.verify_checksums;
    *out = handle.release();
    return BP_OK;
  });
}

size_t bp_view_count(const bp_reader* r) {
  if (r == nullptr) {
    Fail(r, BP_ERR_INVALID_ARGUMENT, "bp_view_count: reader is NULL");
    return 0;
  }
  return r->bolt == nullptr ? 1 : r->bolt->views().size();  // GGUF, safetensors: "full" only
}

const char* bp_view_name(const bp_reader* r, size_t i) {
  if (r == nullptr) {
    Fail(r, BP_ERR_INVALID_ARGUMENT, "bp_view_name: reader is NULL");
    return nullptr;
  }
  if (r->bolt == nullptr && i == 0) return "full";
  if (r->bolt == nullptr || i >= r->bolt->views().size()) {
    Fail(r, BP_ERR_OUT_OF_RANGE, "bp_view_name: no such view");
    return nullptr;
  }
  return r->bolt->views()[i].name.c_str();
}

bp_status bp_view_bytes(const bp_reader* r, const char* view, uint64_t* bytes) {
  return Guard(r, "bp_view_bytes", [&]() -> bp_status {
    if (r == nullptr) return NullArg(r, "bp_view_bytes", "reader");
    if (bytes == nullptr) return NullArg(r, "bp_view_bytes", "bytes");
    bp_status st;
    const boltpack::Reader* bolt = BoltOnly(r, "bp_view_bytes", &st);
    if (bolt == nullptr) return st;
    auto n = bolt->ViewBytes(view != nullptr ? std::string_view(view) : std::string_view(bolt->view()));
    if (!n.ok()) return Fail(r, n.status());
    *bytes = *n;
    return BP_OK;
  });
}

void bp_close(bp_reader* r) {
  // Destructors of the reader do not throw; the guard is belt and braces.
  try {
    delete r;
  } catch (...) {
  }
}

bp_status bp_format_version(const bp_reader* r, uint32_t* major, uint32_t* minor) {
  return Guard(r, "bp_format_version", [&]() -> bp_status {
    if (r == nullptr) return NullArg(r, "bp_format_version", "reader");
    if (major == nullptr) return NullArg(r, "bp_format_version", "major");
    if (minor == nullptr) return NullArg(r, "bp_format_version", "minor");
    bp_status st;
    const boltpack::Reader* bolt = BoltOnly(r, "bp_format_version", &st);
    if (bolt == nullptr) return st;
    boltpack::FormatVersion v = bolt->version();
    *major = v.major;
    *minor = v.minor;
    return BP_OK;
  });
}

bp_status bp_verify(const bp_reader* r) {
  return Guard(r, "bp_verify", [&]() -> bp_status {
    if (r == nullptr) return NullArg(r, "bp_verify", "reader");
    bp_status st;
    const boltpack::Reader* bolt = BoltOnly(r, "bp_verify", &st);
    if (bolt == nullptr) return st;
    return Fail(r, bolt->VerifyContainer());
  });
}

size_t bp_tensor_count(const bp_reader* r) {
  if (r == nullptr) {
    Fail(r, BP_ERR_INVALID_ARGUMENT, "bp_tensor_count: reader is NULL");
    return 0;
  }
  return r->reader->tensor_count();
}

bp_status bp_find_tensor(const bp_reader* r, const char* name, size_t* index) {
  return Guard(r, "bp_find_tensor", [&]() -> bp_status {
    if (r == nullptr) return NullArg(r, "bp_find_tensor", "reader");
    if (name == nullptr) return NullArg(r, "bp_find_tensor", "name");
    if (index == nullptr) return NullArg(r, "bp_find_tensor", "index");
    std::optional<size_t> found = r->reader->FindTensor(std::string_view(name));
    if (!found.has_value()) {
      return Fail(r, BP_ERR_NOT_FOUND, StrCat(PathOf(r), ": no tensor named \"", name, "\""));
    }
    *index = *found;
    return BP_OK;
  });
}

bp_status bp_tensor_info(const bp_reader* r, size_t index, struct bp_tensor_info* out) {
  return Guard(r, "bp_tensor_info", [&]() -> bp_status {
    if (r == nullptr) return NullArg(r, "bp_tensor_info", "reader");
    if (out == nullptr) return NullArg(r, "bp_tensor_info", "out");
    if (bp_status st = CheckTensor(r, index); st != BP_OK) return st;
    const boltpack::TensorInfo& t = r->Described(index);
    if (t.shape.size() > BP_MAX_DIMS) {  // the reader's validation forbids it
      return Fail(r, BP_ERR_UNSUPPORTED,
                  StrCat(TensorWhere(r, index), ": ", t.shape.size(), " dimensions exceed ",
                         BP_MAX_DIMS));
    }
    struct bp_tensor_info info;
    std::memset(&info, 0, sizeof(info));
    info.name = t.name.c_str();
    info.ndim = static_cast<uint32_t>(t.shape.size());
    for (size_t d = 0; d < t.shape.size(); ++d) info.shape[d] = t.shape[d];
    info.dtype = static_cast<int>(t.dtype);
    info.codec = t.codec_id.c_str();
    info.stored_bytes = t.stored_bytes();
    info.stream_count = static_cast<uint32_t>(t.streams.size());
    *out = info;
    return BP_OK;
  });
}

bp_status bp_stream_info(const bp_reader* r, size_t tensor, size_t stream,
                         struct bp_stream_info* out) {
  return Guard(r, "bp_stream_info", [&]() -> bp_status {
    if (r == nullptr) return NullArg(r, "bp_stream_info", "reader");
    if (out == nullptr) return NullArg(r, "bp_stream_info", "out");
    if (bp_status st = CheckStream(r, tensor, stream); st != BP_OK) return st;
    const boltpack::StreamInfo& s = r->Described(tensor).streams[stream];
    struct bp_stream_info info;
    std::memset(&info, 0, sizeof(info));
    info.role = s.role.c_str();
    info.compression = static_cast<int>(s.compression);
    info.stored_length = s.length;
    info.raw_length = s.raw_length;
    *out = info;
    return BP_OK;
  });
}

bp_status bp_stream_data(const bp_reader* r, size_t tensor, size_t stream, const void** data,
                         uint64_t* size) {
  return Guard(r, "bp_stream_data", [&]() -> bp_status {
    if (r == nullptr) return NullArg(r, "bp_stream_data", "reader");
    if (data == nullptr) return NullArg(r, "bp_stream_data", "data");
    if (size == nullptr) return NullArg(r, "bp_stream_data", "size");
    if (bp_status st = CheckStream(r, tensor, stream); st != BP_OK) return st;
    auto span = r->reader->StoredStream(tensor, stream);
    if (!span.ok()) return Fail(r, span.status());
    *data = span->data();
    *size = span->size();
    return BP_OK;
  });
}

bp_status bp_decoded_size(const bp_reader* r, size_t tensor, bp_output out, uint64_t* bytes) {
  return Guard(r, "bp_decoded_size", [&]() -> bp_status {
    if (r == nullptr) return NullArg(r, "bp_decoded_size", "reader");
    if (bytes == nullptr) return NullArg(r, "bp_decoded_size", "bytes");
    boltpack::OutputType type;
    if (!ToOutputType(out, &type)) {
      return Fail(r, BP_ERR_INVALID_ARGUMENT,
                  StrCat("bp_decoded_size: unknown output type ", static_cast<int>(out)));
    }
    if (bp_status st = CheckTensor(r, tensor); st != BP_OK) return st;
    auto need = r->reader->DecodedBytes(tensor, type);
    if (!need.ok()) return Fail(r, need.status());
    *bytes = *need;
    return BP_OK;
  });
}

bp_status bp_decode(const bp_reader* r, size_t tensor, bp_output out, void* dst,
                    uint64_t dst_size, int threads) {
  return Guard(r, "bp_decode", [&]() -> bp_status {
    if (r == nullptr) return NullArg(r, "bp_decode", "reader");
    if (dst == nullptr && dst_size != 0) return NullArg(r, "bp_decode", "dst");
    boltpack::OutputType type;
    if (!ToOutputType(out, &type)) {
      return Fail(r, BP_ERR_INVALID_ARGUMENT,
                  StrCat("bp_decode: unknown output type ", static_cast<int>(out)));
    }
    if (bp_status st = CheckTensor(r, tensor); st != BP_OK) return st;
    // A buffer larger than the address space cannot exist; clamp so the span
    // length is representable (the reader only needs DecodedBytes of it).
    uint64_t usable = dst_size;
    if (usable > std::numeric_limits<size_t>::max()) usable = std::numeric_limits<size_t>::max();
    absl::Span<uint8_t> span(static_cast<uint8_t*>(dst), static_cast<size_t>(usable));
    boltpack::ExecOptions exec;
    exec.threads = threads;
    return Fail(r, r->reader->Decode(tensor, type, span, exec));
  });
}

// ---- metadata -------------------------------------------------------------

size_t bp_metadata_count(const bp_reader* r) {
  if (r == nullptr) {
    Fail(r, BP_ERR_INVALID_ARGUMENT, "bp_metadata_count: reader is NULL");
    return 0;
  }
  return r->reader->metadata().size();
}

bp_status bp_metadata_find(const bp_reader* r, const char* key, size_t* index) {
  return Guard(r, "bp_metadata_find", [&]() -> bp_status {
    if (r == nullptr) return NullArg(r, "bp_metadata_find", "reader");
    if (key == nullptr) return NullArg(r, "bp_metadata_find", "key");
    if (index == nullptr) return NullArg(r, "bp_metadata_find", "index");
    const auto& md = r->reader->metadata();
    std::string_view k(key);
    for (size_t i = 0; i < md.size(); ++i) {
      if (md[i].first == k) {
        *index = i;
        return BP_OK;
      }
    }
    return Fail(r, BP_ERR_NOT_FOUND, StrCat(PathOf(r), ": no metadata key \"", k, "\""));
  });
}

const char* bp_metadata_key(const bp_reader* r, size_t i) {
  const char* key = nullptr;
  Guard(r, "bp_metadata_key", [&]() -> bp_status {
    if (r == nullptr) return NullArg(r, "bp_metadata_key", "reader");
    bp_status st;
    const auto* e = MetaEntry(r, i, &st);
    if (e != nullptr) key = e->first.c_str();
    return st;
  });
  return key;
}

int bp_metadata_type(const bp_reader* r, size_t i) {
  int type = BP_VALUE_UNSPECIFIED;
  Guard(r, "bp_metadata_type", [&]() -> bp_status {
    if (r == nullptr) return NullArg(r, "bp_metadata_type", "reader");
    bp_status st;
    const auto* e = MetaEntry(r, i, &st);
    if (e != nullptr) type = static_cast<int>(e->second.type);
    return st;
  });
  return type;
}

bp_status bp_metadata_get_u64(const bp_reader* r, size_t i, uint64_t* out) {
  return MetaScalar(r, i, "bp_metadata_get_u64", out != nullptr,
                    [&](const std::string& w, const MetaValue& v) { return ReadU64(r, w, v, out); });
}

bp_status bp_metadata_get_i64(const bp_reader* r, size_t i, int64_t* out) {
  return MetaScalar(r, i, "bp_metadata_get_i64", out != nullptr,
                    [&](const std::string& w, const MetaValue& v) { return ReadI64(r, w, v, out); });
}

bp_status bp_metadata_get_f64(const bp_reader* r, size_t i, double* out) {
  return MetaScalar(r, i, "bp_metadata_get_f64", out != nullptr,
                    [&](const std::string& w, const MetaValue& v) { return ReadF64(r, w, v, out); });
}

bp_status bp_metadata_get_bool(const bp_reader* r, size_t i, int* out) {
  return MetaScalar(r, i, "bp_metadata_get_bool", out != nullptr,
                    [&](const std::string& w, const MetaValue& v) { return ReadBool(r, w, v, out); });
}

bp_status bp_metadata_get_string(const bp_reader* r, size_t i, const char** data, size_t* len) {
  return MetaScalar(r, i, "bp_metadata_get_string", data != nullptr && len != nullptr,
                    [&](const std::string& w, const MetaValue& v) {
                      return ReadString(r, w, v, data, len);
                    });
}

bp_status bp_metadata_array_len(const bp_reader* r, size_t i, size_t* len) {
  return MetaScalar(r, i, "bp_metadata_array_len", len != nullptr,
                    [&](const std::string& w, const MetaValue& v) -> bp_status {
                      if (v.type != ValueType::kArray) return Mismatch(r, w, v, "array");
                      *len = v.array_size();
                      return BP_OK;
                    });
}

bp_status bp_metadata_array_type(const bp_reader* r, size_t i, int* element_type) {
  return MetaScalar(r, i, "bp_metadata_array_type", element_type != nullptr,
                    [&](const std::string& w, const MetaValue& v) -> bp_status {
                      if (v.type != ValueType::kArray) return Mismatch(r, w, v, "array");
                      *element_type = static_cast<int>(v.element_type);
                      return BP_OK;
                    });
}

bp_status bp_metadata_array_get_u64(const bp_reader* r, size_t i, size_t j, uint64_t* out) {
  return MetaElement(r, i, j, "bp_metadata_array_get_u64", out != nullptr,
                     [&](const std::string& w, const MetaValue& a, size_t k) {
                       return ReadU64(r, w, a.element(k), out);
                     });
}

bp_status bp_metadata_array_get_i64(const bp_reader* r, size_t i, size_t j, int64_t* out) {
  return MetaElement(r, i, j, "bp_metadata_array_get_i64", out != nullptr,
                     [&](const std::string& w, const MetaValue& a, size_t k) {
                       return ReadI64(r, w, a.element(k), out);
                     });
}

bp_status bp_metadata_array_get_f64(const bp_reader* r, size_t i, size_t j, double* out) {
  return MetaElement(r, i, j, "bp_metadata_array_get_f64", out != nullptr,
                     [&](const std::string& w, const MetaValue& a, size_t k) {
                       return ReadF64(r, w, a.element(k), out);
                     });
}

bp_status bp_metadata_array_get_bool(const bp_reader* r, size_t i, size_t j, int* out) {
  return MetaElement(r, i, j, "bp_metadata_array_get_bool", out != nullptr,
                     [&](const std::string& w, const MetaValue& a, size_t k) {
                       return ReadBool(r, w, a.element(k), out);
                     });
}

bp_status bp_metadata_array_get_string(const bp_reader* r, size_t i, size_t j, const char** data,
                                       size_t* len) {
  return MetaElement(r, i, j, "bp_metadata_array_get_string", data != nullptr && len != nullptr,
                     [&](const std::string& w, const MetaValue& a, size_t k) {
                       // A view of the reader's packed strings: valid until bp_close.
                       if (a.element_type != ValueType::kString) return Mismatch(r, w, a.element(k), "string");
                       *data = a.string_element(k).data();
                       *len = a.string_element(k).size();
                       return BP_OK;
                     });
}

}  // extern "C"

// ---- elastic budgets --------------------------------------------------------

size_t bp_budget_count(const bp_reader* r) {
  if (r == nullptr) {
    Fail(r, BP_ERR_INVALID_ARGUMENT, "bp_budget_count: reader is NULL");
    return 0;
  }
  const boltpack::ElasticManifest* m = r->bolt == nullptr ? nullptr : r->bolt->elastic();
  return m == nullptr ? 0 : m->budgets.size();
}

const char* bp_budget_name(const bp_reader* r, size_t i) {
  if (r == nullptr) {
    Fail(r, BP_ERR_INVALID_ARGUMENT, "bp_budget_name: reader is NULL");
    return nullptr;
  }
  const boltpack::ElasticManifest* m = r->bolt == nullptr ? nullptr : r->bolt->elastic();
  if (m == nullptr || i >= m->budgets.size()) {
    Fail(r, BP_ERR_OUT_OF_RANGE, StrCat(PathOf(r), ": bp_budget_name: no budget #", i));
    return nullptr;
  }
  return m->budgets[i].name.c_str();
}

bp_status bp_budget_open(const bp_reader* r, const char* budget, const char* view, bp_budget** out) {
  return Guard(r, "bp_budget_open", [&]() -> bp_status {
    if (out == nullptr) return NullArg(r, "bp_budget_open", "out");
    *out = nullptr;
    if (r == nullptr) return NullArg(r, "bp_budget_open", "reader");
    if (budget == nullptr) return NullArg(r, "bp_budget_open", "budget");
    if (r->bolt == nullptr) {
      return Fail(r, BP_ERR_NOT_FOUND, StrCat(PathOf(r), ": no budgets (only a .bolt file declares them)"));
    }
    auto b = std::make_unique<bp_budget>();
    b->r = r;
    b->view = view != nullptr && view[0] != '\0' ? std::string(view) : r->bolt->view();
    bool known = false;
    for (const auto& v : r->bolt->views()) known = known || v.name == b->view;
    if (!known) return Fail(r, BP_ERR_NOT_FOUND, StrCat(PathOf(r), ": no view \"", b->view, "\""));
    auto tensors = boltpack::BudgetTensors(*r->bolt, budget);
    if (!tensors.ok()) return Fail(r, tensors.status());
    b->tensors = std::move(*tensors);
    b->regions.reserve(b->tensors.size());
    for (const auto& t : b->tensors) b->regions.push_back(boltpack::BudgetView(*r->bolt, t, b->view));
    auto bytes = boltpack::BudgetBytes(*r->bolt, budget, b->view);
    if (!bytes.ok()) return Fail(r, bytes.status());
    b->bytes = *bytes;
    *out = b.release();
    return BP_OK;
  });
}

void bp_budget_close(bp_budget* b) {
  try {
    delete b;
  } catch (...) {
  }
}

size_t bp_budget_tensor_count(const bp_budget* b) {
  if (b == nullptr) {
    Fail(nullptr, BP_ERR_INVALID_ARGUMENT, "bp_budget_tensor_count: budget is NULL");
    return 0;
  }
  return b->tensors.size();
}

namespace {

bp_status CheckBudgetTensor(const bp_budget* b, size_t i, const char* fn) {
  if (b == nullptr) return NullArg(nullptr, fn, "budget");
  if (i >= b->tensors.size()) {
    return Fail(b->r, BP_ERR_OUT_OF_RANGE,
                StrCat(PathOf(b->r), ": ", fn, ": no kept tensor #", i, " (the budget keeps ", b->tensors.size(), ")"));
  }
  return BP_OK;
}

}  // namespace

bp_status bp_budget_tensor(const bp_budget* b, size_t i, struct bp_budget_tensor* out) {
  return Guard(b ? b->r : nullptr, "bp_budget_tensor", [&]() -> bp_status {
    if (bp_status st = CheckBudgetTensor(b, i, "bp_budget_tensor"); st != BP_OK) return st;
    if (out == nullptr) return NullArg(b->r, "bp_budget_tensor", "out");
    const auto& t = b->tensors[i];
    if (t.shape.size() > BP_MAX_DIMS) return Fail(b->r, BP_ERR_INTERNAL, "bp_budget_tensor: rank over BP_MAX_DIMS");
    struct bp_budget_tensor info = {};
    info.tensor = t.tensor;
    info.name = t.name.c_str();
    info.ndim = static_cast<uint32_t>(t.shape.size());
    for (size_t d = 0; d < t.shape.size(); ++d) info.shape[d] = t.shape[d];
    *out = info;
    return BP_OK;
  });
}

bp_status bp_budget_bytes(const bp_budget* b, uint64_t* bytes) {
  return Guard(b ? b->r : nullptr, "bp_budget_bytes", [&]() -> bp_status {
    if (b == nullptr) return NullArg(nullptr, "bp_budget_bytes", "budget");
    if (bytes == nullptr) return NullArg(b->r, "bp_budget_bytes", "bytes");
    *bytes = b->bytes;
    return BP_OK;
  });
}

bp_status bp_budget_region_count(const bp_budget* b, size_t i, size_t* count) {
  return Guard(b ? b->r : nullptr, "bp_budget_region_count", [&]() -> bp_status {
    if (bp_status st = CheckBudgetTensor(b, i, "bp_budget_region_count"); st != BP_OK) return st;
    if (count == nullptr) return NullArg(b->r, "bp_budget_region_count", "count");
    if (!b->regions[i].ok()) return Fail(b->r, b->regions[i].status());
    *count = b->regions[i]->streams.size();
    return BP_OK;
  });
}

bp_status bp_budget_region(const bp_budget* b, size_t i, size_t k, struct bp_region* out) {
  return Guard(b ? b->r : nullptr, "bp_budget_region", [&]() -> bp_status {
    if (bp_status st = CheckBudgetTensor(b, i, "bp_budget_region"); st != BP_OK) return st;
    if (out == nullptr) return NullArg(b->r, "bp_budget_region", "out");
    if (!b->regions[i].ok()) return Fail(b->r, b->regions[i].status());
    const auto& streams = b->regions[i]->streams;
    if (k >= streams.size()) {
      return Fail(b->r, BP_ERR_OUT_OF_RANGE,
                  StrCat(PathOf(b->r), ": bp_budget_region: no region #", k, " (the tensor has ", streams.size(), ")"));
    }
    const auto& s = streams[k];
    if (s.counts.size() >= BP_MAX_DIMS) return Fail(b->r, BP_ERR_INTERNAL, "bp_budget_region: too many dimensions");
    struct bp_region reg = {};
    reg.stream = s.stream;
    reg.base = s.base.data();
    reg.base_size = s.base.size();
    reg.ndim = static_cast<uint32_t>(s.counts.size());
    for (size_t d = 0; d < s.counts.size(); ++d) {
      reg.counts[d] = s.counts[d];
      reg.strides[d] = s.strides[d];
    }
    reg.run_bytes = s.run_bytes;
    reg.total_bytes = s.total_bytes();
    *out = reg;
    return BP_OK;
  });
}

bp_status bp_budget_decoded_size(const bp_budget* b, size_t i, bp_output out, uint64_t* bytes) {
  return Guard(b ? b->r : nullptr, "bp_budget_decoded_size", [&]() -> bp_status {
    if (bp_status st = CheckBudgetTensor(b, i, "bp_budget_decoded_size"); st != BP_OK) return st;
    if (bytes == nullptr) return NullArg(b->r, "bp_budget_decoded_size", "bytes");
    boltpack::OutputType type;
    if (!ToOutputType(out, &type)) {
      return Fail(b->r, BP_ERR_INVALID_ARGUMENT,
                  StrCat("bp_budget_decoded_size: unknown output type ", static_cast<int>(out)));
    }
    auto need = boltpack::BudgetDecodedBytes(*b->r->bolt, b->tensors[i], type);
    if (!need.ok()) return Fail(b->r, need.status());
    *bytes = *need;
    return BP_OK;
  });
}

bp_status bp_budget_decode(const bp_budget* b, size_t i, bp_output out, void* dst, uint64_t dst_size) {
  return Guard(b ? b->r : nullptr, "bp_budget_decode", [&]() -> bp_status {
    if (bp_status st = CheckBudgetTensor(b, i, "bp_budget_decode"); st != BP_OK) return st;
    if (dst == nullptr && dst_size != 0) return NullArg(b->r, "bp_budget_decode", "dst");
    boltpack::OutputType type;
    if (!ToOutputType(out, &type)) {
      return Fail(b->r, BP_ERR_INVALID_ARGUMENT, StrCat("bp_budget_decode: unknown output type ", static_cast<int>(out)));
    }
    auto need = boltpack::BudgetDecodedBytes(*b->r->bolt, b->tensors[i], type);
    if (!need.ok()) return Fail(b->r, need.status());
    if (dst_size < *need) {
      return Fail(b->r, BP_ERR_INVALID_ARGUMENT,
                  StrCat(PathOf(b->r), ": tensor ", boltpack::QuoteForDisplay(b->tensors[i].name), ": the budget's part is ", *need,
                         " bytes, buffer of ", dst_size));
    }
    absl::Span<uint8_t> span(static_cast<uint8_t*>(dst), static_cast<size_t>(*need));
    return Fail(b->r, boltpack::DecodeBudget(*b->r->bolt, b->tensors[i], b->view, type, span));
  });
}
