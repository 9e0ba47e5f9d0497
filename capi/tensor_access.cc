// What an engine reads of a tensor without decoding it: its elements in
// place when the file stores them as they are (bp_tensor_elements, checked
// against the checksum first), a stream's stored bytes checked the same way
// (bp_stream_data_checked: what a GPU upload copies), and its codec's parameters
// (bp_tensor_codec_params), which a kernel that takes stored blocks
// directly needs beside them (nvfp4's tensor_scale, ...), and where a
// stream lies in its file (bp_stream_location), for a caller that maps it.
#include <cstring>

#include "boltpack/boltpack.h"
#include "boltpack/codec_registry.h"
#include "capi/capi_internal.h"
#include "common/checked_math.h"
#include "common/str_cat.h"
#include "io/json.h"
#include "io/metadata_json.h"

namespace {

using boltpack::StrCat;
using namespace boltpack::capi;  // NOLINT: the helpers every entry point uses

// Whether the record is its elements as they are: one uncompressed stream of
// an element codec that stores the tensor's own dtype.
bool StoredAsElements(const boltpack::TensorInfo& t) {
  const boltpack::CodecTraits traits = boltpack::TraitsOf(t.codec_id);
  return traits.element && t.streams.size() == 1 &&
         t.streams[0].compression == boltpack::Compression::kNone &&
         (traits.element_dtype == boltpack::DType::kUnspecified || traits.element_dtype == t.dtype);
}

// The stored bytes `span` of a tensor's stream to the caller, once its
// checksum holds (.bolt files, unless opened with BP_OPEN_NO_VERIFY).
bp_status HandOutChecked(const bp_reader* r, size_t tensor, size_t stream, absl::Span<const uint8_t> span,
                         const void** data, uint64_t* size) {
  if (r->bolt != nullptr && r->verify_checksums) {
    if (absl::Status s = r->bolt->VerifyStream(tensor, stream); !s.ok()) return Fail(r, s);
  }
  *data = span.data();
  *size = span.size();
  return BP_OK;
}

}  // namespace

bp_status bp_stream_data_checked(const bp_reader* r, size_t tensor, size_t stream, const void** data,
                                 uint64_t* size) {
  return Guard(r, "bp_stream_data_checked", [&]() -> bp_status {
    if (r == nullptr) return NullArg(r, "bp_stream_data_checked", "reader");
    if (data == nullptr) return NullArg(r, "bp_stream_data_checked", "data");
    if (size == nullptr) return NullArg(r, "bp_stream_data_checked", "size");
    *data = nullptr;
    *size = 0;
    if (bp_status st = CheckStream(r, tensor, stream); st != BP_OK) return st;
    const boltpack::TensorInfo& t = r->Described(tensor);
    if (t.streams[stream].compression != boltpack::Compression::kNone) {
      return Fail(r, BP_ERR_UNSUPPORTED,
                  StrCat(TensorWhere(r, tensor), ": stream ", stream, " is compressed (decode the tensor)"));
    }
    auto span = r->reader->StoredStream(tensor, stream);
    if (!span.ok()) return Fail(r, span.status());
    return HandOutChecked(r, tensor, stream, *span, data, size);
  });
}

bp_status bp_tensor_elements(const bp_reader* r, size_t tensor, const void** data, uint64_t* size) {
  return Guard(r, "bp_tensor_elements", [&]() -> bp_status {
    if (r == nullptr) return NullArg(r, "bp_tensor_elements", "reader");
    if (data == nullptr) return NullArg(r, "bp_tensor_elements", "data");
    if (size == nullptr) return NullArg(r, "bp_tensor_elements", "size");
    *data = nullptr;
    *size = 0;
    if (bp_status st = CheckTensor(r, tensor); st != BP_OK) return st;
    const boltpack::TensorInfo& t = r->Described(tensor);
    if (!StoredAsElements(t)) {
      return Fail(r, BP_ERR_UNSUPPORTED,
                  StrCat(TensorWhere(r, tensor), ": stored by codec \"", t.codec_id,
                         "\", not as its elements (decode it)"));
    }
    const std::optional<uint64_t> bytes =
        boltpack::CheckedByteSize(t.shape, static_cast<uint64_t>(boltpack::DTypeSize(t.dtype)));
    auto span = r->reader->StoredStream(tensor, 0);
    if (!span.ok()) return Fail(r, span.status());
    if (!bytes || *bytes != span->size()) {  // the reader's validation forbids it
      return Fail(r, BP_ERR_CORRUPT, StrCat(TensorWhere(r, tensor), ": ", span->size(),
                                            " stored bytes do not hold its shape"));
    }
    return HandOutChecked(r, tensor, 0, *span, data, size);
  });
}

bp_status bp_tensor_codec_params(const bp_reader* r, size_t tensor, char* buffer, size_t capacity,
                                 size_t* length) {
  return Guard(r, "bp_tensor_codec_params", [&]() -> bp_status {
    if (r == nullptr) return NullArg(r, "bp_tensor_codec_params", "reader");
    if (length == nullptr) return NullArg(r, "bp_tensor_codec_params", "length");
    if (buffer == nullptr && capacity > 0) return NullArg(r, "bp_tensor_codec_params", "buffer");
    if (bp_status st = CheckTensor(r, tensor); st != BP_OK) return st;
    const boltpack::TensorInfo& t = r->Described(tensor);
    std::string json = "{";
    for (size_t k = 0; k < t.codec_params.size(); ++k) {
      json += StrCat(k ? "," : "", boltpack::io::JsonQuote(t.codec_params[k].first), ":",
                     boltpack::io::MetaValueToJson(t.codec_params[k].second));
    }
    json += "}";
    *length = json.size();
    if (capacity < json.size() + 1) {
      return Fail(r, BP_ERR_OUT_OF_RANGE,
                  StrCat("bp_tensor_codec_params: ", TensorWhere(r, tensor), ": the JSON takes ",
                         json.size() + 1, " bytes with its NUL, the buffer has ", capacity));
    }
    std::memcpy(buffer, json.c_str(), json.size() + 1);
    return BP_OK;
  });
}

bp_status bp_stream_location(const bp_reader* r, size_t tensor, size_t stream, const char** path, uint64_t* offset) {
  return Guard(r, "bp_stream_location", [&]() -> bp_status {
    if (r == nullptr) return NullArg(r, "bp_stream_location", "reader");
    if (path == nullptr) return NullArg(r, "bp_stream_location", "path");
    if (offset == nullptr) return NullArg(r, "bp_stream_location", "offset");
    if (bp_status st = CheckStream(r, tensor, stream); st != BP_OK) return st;
    auto where = r->reader->StreamLocation(tensor, stream);
    if (!where.ok()) return Fail(r, where.status());
    *path = r->Intern(std::move(where->path));
    *offset = where->offset;
    return BP_OK;
  });
}
