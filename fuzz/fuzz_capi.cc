// Fuzzes the public C API (include/boltpack/boltpack.h) as an engine drives
// it: open a file (bp_open, bp_open_flags, bp_open_view with each view the
// file lists), read its tensor, stream and metadata descriptions with every
// getter of every type, decode every tensor to every output type, read row
// and column ranges (valid and invalid ones), open every budget, and verify.
//
// The oracle, beside the sanitizers: every call's status is checked, every
// failed call leaves a non-NULL, non-empty message (bp_last_error_message
// and bp_last_error), no status is outside the documented kinds, a range the
// header calls invalid fails, a full-range bp_decode_range gives bp_decode's
// bytes, and metadata getters agree with bp_metadata_type.
//
// Input: byte 0 is control (bits 0-1: the file's extension, .bolt, .gguf,
// .safetensors, or from its magic; bit 2: repair a .bolt's open-time
// checksums, fuzz/repair_checksums.h; bit 3: BP_OPEN_NO_VERIFY; bit 4: two
// decode threads; bit 5: a wrong dst_size for bp_decode_range), bytes 1-4
// pick the ranges, the rest is the file, written to a temporary file under
// /tmp (the API opens paths; the format is chosen by the extension) and
// removed before returning.
//
// Seeds (fuzz/corpus/capi): that 5-byte prefix before small valid files:
// spec/vectors/valid .bolt files, testdata/gguf's ggml-writer-metaonly, the
// GGUF and safetensors seeds of fuzz/corpus/pipeline (without its byte 0),
// and a 2-tensor f32 safetensors converted by the CLI (--alignment 64) to
// q8_0, int4-g128, nvfp4, mxfp4 and bf16-huffman .bolt files and a q8_0 GGUF.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "boltpack/boltpack.h"
#include "fuzz/repair_checksums.h"
#include "google/protobuf/stubs/logging.h"

namespace {

constexpr uint64_t kMaxDecodeBytes = uint64_t{4} << 20;
constexpr size_t kMaxTensors = 64;
constexpr size_t kMaxMetadata = 256;
constexpr size_t kMaxArrayElements = 16;
constexpr size_t kMaxViews = 4;
constexpr size_t kMaxBudgets = 8;
constexpr size_t kPrefix = 5;

struct Control {
  bool no_verify = false;
  int threads = 1;
  bool wrong_range_size = false;
  uint8_t range[4] = {0, 0, 0, 0};
};

// A failed call must say why; a successful one must not be out of kind.
void CheckStatus(bp_status st, const bp_reader* r) {
  if (st == BP_OK) return;
  const bp_status kind = bp_status_kind(st);
  if (kind == BP_OK || kind == BP_ERR_INTERNAL) __builtin_trap();  // a bug, or an undocumented code
  const char* msg = bp_last_error_message();
  if (msg == nullptr || msg[0] == '\0') __builtin_trap();
  if (r != nullptr && bp_last_error(r) == nullptr) __builtin_trap();
  if (bp_status_name(st) == nullptr) __builtin_trap();
}

bool Ok(bp_status st, const bp_reader* r) {
  CheckStatus(st, r);
  return st == BP_OK;
}

void ExerciseMetadataEntry(const bp_reader* r, size_t i) {
  const char* key = bp_metadata_key(r, i);
  if (key == nullptr) __builtin_trap();
  size_t found = 0;
  if (!Ok(bp_metadata_find(r, key, &found), r)) __builtin_trap();
  if (found > i || std::strcmp(bp_metadata_key(r, found), key) != 0) __builtin_trap();
  const int type = bp_metadata_type(r, i);
  uint64_t u = 0;
  int64_t s = 0;
  double f = 0;
  int b = 0;
  const char* str = nullptr;
  size_t len = 0;
  const bool is_u = Ok(bp_metadata_get_u64(r, i, &u), r);
  const bool is_i = Ok(bp_metadata_get_i64(r, i, &s), r);
  const bool is_f = Ok(bp_metadata_get_f64(r, i, &f), r);
  const bool is_b = Ok(bp_metadata_get_bool(r, i, &b), r);
  const bool is_s = Ok(bp_metadata_get_string(r, i, &str, &len), r);
  if (is_s && (str == nullptr || str[len] != '\0')) __builtin_trap();
  const bool is_a = Ok(bp_metadata_array_len(r, i, &len), r);
  // Exactly the getter of the entry's type answers.
  const int answered = is_u + is_i + is_f + is_b + is_s + is_a;
  if (answered != (type == BP_VALUE_UNSPECIFIED ? 0 : 1)) __builtin_trap();
  if (is_a != (type == BP_VALUE_ARRAY) || is_s != (type == BP_VALUE_STRING) ||
      is_b != (type == BP_VALUE_BOOL)) {
    __builtin_trap();
  }
  if (!is_a) return;
  int element_type = 0;
  (void)Ok(bp_metadata_array_type(r, i, &element_type), r);
  for (size_t j = 0; j <= len && j <= kMaxArrayElements; ++j) {
    // j == len is past the end: every getter must fail there.
    const bool a = Ok(bp_metadata_array_get_u64(r, i, j, &u), r);
    const bool c = Ok(bp_metadata_array_get_i64(r, i, j, &s), r);
    const bool d = Ok(bp_metadata_array_get_f64(r, i, j, &f), r);
    const bool e = Ok(bp_metadata_array_get_bool(r, i, j, &b), r);
    const bool g = Ok(bp_metadata_array_get_string(r, i, j, &str, &len), r);
    if (j == len && (a || c || d || e || g)) __builtin_trap();
    if (g && str == nullptr) __builtin_trap();
    if (a + c + d + e + g > 1) __builtin_trap();
  }
}

void ExerciseMetadata(const bp_reader* r) {
  const size_t n = bp_metadata_count(r);
  for (size_t i = 0; i < n && i < kMaxMetadata; ++i) ExerciseMetadataEntry(r, i);
  uint64_t u = 0;
  if (Ok(bp_metadata_get_u64(r, n, &u), r)) __builtin_trap();
  if (bp_metadata_key(r, n) != nullptr) __builtin_trap();
  size_t index = 0;
  (void)Ok(bp_metadata_find(r, "general.architecture", &index), r);
}

// Rows and columns of a tensor as bp_decode_range counts them.
void RowsAndColumns(const struct bp_tensor_info& info, uint64_t* rows, uint64_t* cols) {
  if (info.ndim == 0) {
    *rows = *cols = 1;
  } else if (info.ndim == 1) {
    *rows = info.shape[0];
    *cols = 1;
  } else {
    *rows = info.shape[0];
    *cols = info.shape[info.ndim - 1];
  }
}

// bp_decode_range over a range picked by the input: an invalid one must
// fail; all rows and columns must give `whole` (bp_decode's bytes) when known.
void ExerciseRange(const bp_reader* r, size_t t, const struct bp_tensor_info& info, bp_output out,
                   uint64_t whole_bytes, const std::vector<uint8_t>* whole, const Control& c) {
  uint64_t rows = 0, cols = 0;
  RowsAndColumns(info, &rows, &cols);
  const uint64_t r0 = c.range[0] % (rows + 2), r1 = rows + 1 - c.range[1] % (rows + 2);
  const uint64_t c0 = c.range[2] % (cols + 2), c1 = cols + 1 - c.range[3] % (cols + 2);
  const bool valid = r0 <= r1 && r1 <= rows && c0 <= c1 && c1 <= cols;
  uint64_t bytes = 0;
  if (valid && rows > 0 && cols > 0) {
    // whole_bytes is rows x (middle) x cols elements' bytes.
    const uint64_t per_row_col = whole_bytes / rows / cols;
    bytes = (r1 - r0) * (c1 - c0) * per_row_col;
  }
  if (c.wrong_range_size) bytes += 1;
  if (bytes > kMaxDecodeBytes) return;
  std::vector<uint8_t> dst(bytes);
  const bool ok = Ok(bp_decode_range(r, t, r0, r1, c0, c1, out, dst.data(), bytes, c.threads), r);
  if (ok && !valid) __builtin_trap();
  // (The size estimate above is exact for element outputs; a native block
  // output's rows are not whole elements per column.)
  if (ok && c.wrong_range_size && out != BP_OUT_NATIVE) __builtin_trap();
  // All rows and columns: the same bytes as bp_decode.
  std::vector<uint8_t> all(whole_bytes);
  if (whole != nullptr && rows > 0 && cols > 0 &&
      Ok(bp_decode_range(r, t, 0, rows, 0, cols, out, all.data(), whole_bytes, c.threads), r) &&
      all != *whole) {
    __builtin_trap();
  }
}

void ExerciseDecodes(const bp_reader* r, size_t t, const struct bp_tensor_info& info, const Control& c) {
  for (bp_output out : {BP_OUT_F32, BP_OUT_BF16, BP_OUT_F16, BP_OUT_NATIVE, static_cast<bp_output>(9)}) {
    uint64_t bytes = 0;
    if (!Ok(bp_decoded_size(r, t, out, &bytes), r)) {
      // bp_decode fails as bp_decoded_size does.
      if (Ok(bp_decode(r, t, out, nullptr, 0, 1), r)) __builtin_trap();
      continue;
    }
    if (out == 9) __builtin_trap();
    if (bytes > kMaxDecodeBytes) continue;
    std::vector<uint8_t> dst(bytes);
    const bool ok = Ok(bp_decode(r, t, out, dst.data(), bytes, c.threads), r);
    if (bytes > 0 && Ok(bp_decode(r, t, out, dst.data(), bytes - 1, 1), r)) __builtin_trap();
    ExerciseRange(r, t, info, out, bytes, ok ? &dst : nullptr, c);
  }
}

// The file at `path` holds `bytes` (their first 64) at `offset`.
void ExpectBytesAt(const char* path, uint64_t offset, const uint8_t* bytes, uint64_t size) {
  if (path == nullptr) __builtin_trap();
  FILE* f = std::fopen(path, "rb");
  if (f == nullptr) __builtin_trap();
  uint8_t got[64];
  const size_t n = size < sizeof(got) ? static_cast<size_t>(size) : sizeof(got);
  const bool same = fseeko(f, static_cast<off_t>(offset), SEEK_SET) == 0 && std::fread(got, 1, n, f) == n &&
                    std::memcmp(got, bytes, n) == 0;
  std::fclose(f);
  if (!same) __builtin_trap();
}

// The checked zero-copy elements and the codec parameters' JSON: a checked
// view holds exactly bp_decode's native bytes; the JSON's length is the
// same asked with no buffer and with one, and it comes NUL-terminated.
void ExerciseElements(const bp_reader* r, size_t t) {
  const void* data = nullptr;
  uint64_t size = 0;
  if (Ok(bp_tensor_elements(r, t, &data, &size), r)) {
    if (size > 0 && data == nullptr) __builtin_trap();
    uint64_t native = 0;
    if (size <= kMaxDecodeBytes && Ok(bp_decoded_size(r, t, BP_OUT_NATIVE, &native), r)) {
      std::vector<uint8_t> dst(native);
      if (Ok(bp_decode(r, t, BP_OUT_NATIVE, dst.data(), native, 1), r) &&
          (native != size || (size > 0 && std::memcmp(dst.data(), data, size) != 0))) {
        __builtin_trap();
      }
    }
  } else if (data != nullptr || size != 0) {
    __builtin_trap();
  }
  size_t length = 0;
  const bp_status probe = bp_tensor_codec_params(r, t, nullptr, 0, &length);
  if (probe != BP_ERR_OUT_OF_RANGE) {
    Ok(probe, r);  // checks the message
    return;
  }
  std::vector<char> json(length + 1, 'x');
  size_t again = 0;
  if (!Ok(bp_tensor_codec_params(r, t, json.data(), json.size(), &again), r)) __builtin_trap();
  if (again != length || json[length] != '\0' || json[0] != '{' || json[length - 1] != '}') __builtin_trap();
}

void ExerciseTensor(const bp_reader* r, size_t t, const Control& c) {
  struct bp_tensor_info info;
  if (!Ok(bp_tensor_info(r, t, &info), r)) return;
  if (info.name == nullptr || info.codec == nullptr || info.ndim > BP_MAX_DIMS) __builtin_trap();
  if (bp_dtype_name(info.dtype) == nullptr) __builtin_trap();
  size_t found = 0;
  if (Ok(bp_find_tensor(r, info.name, &found), r) && found > t) __builtin_trap();
  for (uint32_t s = 0; s <= info.stream_count; ++s) {
    struct bp_stream_info si;
    const void* data = nullptr;
    uint64_t size = 0;
    const bool has = Ok(bp_stream_info(r, t, s, &si), r);
    const bool mapped = Ok(bp_stream_data(r, t, s, &data, &size), r);
    if (s == info.stream_count && (has || mapped)) __builtin_trap();
    if (has && si.role == nullptr) __builtin_trap();
    if (has && mapped && size != si.stored_length) __builtin_trap();
    if (mapped && size > 0 && data == nullptr) __builtin_trap();
    // Touch the mapped bytes (ASan sees a read past the mapping).
    if (mapped && size > 0) {
      volatile uint8_t sink = static_cast<const uint8_t*>(data)[size - 1];
      (void)sink;
    }
    // Where the stream lies: its file holds the same first bytes there.
    const char* path = nullptr;
    uint64_t offset = 0;
    const bool located = Ok(bp_stream_location(r, t, s, &path, &offset), r);
    if (located != has) __builtin_trap();
    if (located && mapped && size > 0) ExpectBytesAt(path, offset, static_cast<const uint8_t*>(data), size);
  }
  ExerciseElements(r, t);
  ExerciseDecodes(r, t, info, c);
}

void ExerciseBudget(const bp_reader* r, const char* name) {
  bp_budget* b = nullptr;
  if (!Ok(bp_budget_open(r, name, nullptr, &b), r)) {
    if (b != nullptr) __builtin_trap();
    return;
  }
  uint64_t bytes = 0;
  (void)Ok(bp_budget_bytes(b, &bytes), r);
  const size_t n = bp_budget_tensor_count(b);
  for (size_t i = 0; i <= n && i < kMaxTensors; ++i) {
    struct bp_budget_tensor bt;
    const bool has = Ok(bp_budget_tensor(b, i, &bt), r);
    if (i == n && has) __builtin_trap();
    if (has && (bt.name == nullptr || bt.ndim > BP_MAX_DIMS)) __builtin_trap();
    size_t regions = 0;
    if (Ok(bp_budget_region_count(b, i, &regions), r)) {
      for (size_t k = 0; k <= regions && k < 16; ++k) {
        struct bp_region region;
        const bool got = Ok(bp_budget_region(b, i, k, &region), r);
        if (k == regions && got) __builtin_trap();
        if (got && region.ndim >= BP_MAX_DIMS) __builtin_trap();
        if (got && region.base_size > 0) {
          volatile uint8_t sink = region.base[region.base_size - 1];
          (void)sink;
        }
      }
    }
    for (bp_output out : {BP_OUT_F32, BP_OUT_BF16, BP_OUT_NATIVE}) {
      uint64_t size = 0;
      if (!Ok(bp_budget_decoded_size(b, i, out, &size), r) || size > kMaxDecodeBytes) continue;
      std::vector<uint8_t> dst(size);
      (void)Ok(bp_budget_decode(b, i, out, dst.data(), size), r);
    }
  }
  bp_budget_close(b);
}

void ExerciseReader(const bp_reader* r, const Control& c, bool everything) {
  uint32_t major = 0, minor = 0;
  (void)Ok(bp_format_version(r, &major, &minor), r);
  uint64_t bytes = 0;
  (void)Ok(bp_view_bytes(r, nullptr, &bytes), r);
  const size_t n = bp_tensor_count(r);
  for (size_t t = 0; t < n && t < kMaxTensors; ++t) ExerciseTensor(r, t, c);
  struct bp_tensor_info info;
  if (Ok(bp_tensor_info(r, n, &info), r)) __builtin_trap();
  size_t index = 0;
  if (Ok(bp_find_tensor(r, "\x01no such tensor", &index), r)) __builtin_trap();
  if (!everything) return;
  ExerciseMetadata(r);
  const size_t budgets = bp_budget_count(r);
  for (size_t i = 0; i < budgets && i < kMaxBudgets; ++i) {
    const char* name = bp_budget_name(r, i);
    if (name == nullptr) __builtin_trap();
    ExerciseBudget(r, name);
  }
  bp_budget* none = nullptr;
  if (Ok(bp_budget_open(r, "\x01no such budget", nullptr, &none), r)) __builtin_trap();
  (void)Ok(bp_verify(r), r);
}

const char* Extension(uint8_t control, const uint8_t* file, size_t size) {
  switch (control & 3) {
    case 0: return ".bolt";
    case 1: return ".gguf";
    case 2: return ".safetensors";
    default: break;
  }
  if (size >= 4 && std::memcmp(file, "GGUF", 4) == 0) return ".gguf";
  if (size >= 9 && file[8] == '{') return ".safetensors";
  return ".bolt";
}

// The file at a fresh /tmp path with the extension; "" on failure.
std::string WriteTemp(const std::vector<uint8_t>& bytes, const char* ext) {
  std::string path = std::string("/tmp/fuzz_capi_XXXXXX") + ext;
  const int fd = mkstemps(path.data(), static_cast<int>(std::strlen(ext)));
  if (fd < 0) return "";
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t w = write(fd, bytes.data() + done, bytes.size() - done);
    if (w <= 0) break;
    done += static_cast<size_t>(w);
  }
  close(fd);
  if (done != bytes.size()) {
    unlink(path.c_str());
    return "";
  }
  return path;
}

void ExercisePath(const std::string& path, const Control& c) {
  bp_reader* r = nullptr;
  const bp_status st = c.no_verify ? bp_open_flags(path.c_str(), nullptr, BP_OPEN_NO_VERIFY, &r)
                                   : bp_open(path.c_str(), &r);
  if (!Ok(st, nullptr)) {
    if (r != nullptr) __builtin_trap();
    return;
  }
  ExerciseReader(r, c, true);
  // Every view the file lists, opened on its own ("full" is view 0).
  const size_t views = bp_view_count(r);
  if (views == 0) __builtin_trap();
  for (size_t v = 0; v < views && v < kMaxViews; ++v) {
    const char* name = bp_view_name(r, v);
    if (name == nullptr) __builtin_trap();
    uint64_t bytes = 0;
    (void)Ok(bp_view_bytes(r, name, &bytes), r);
    bp_reader* rv = nullptr;
    if (Ok(bp_open_view(path.c_str(), name, &rv), nullptr)) {
      ExerciseReader(rv, c, false);
      bp_close(rv);
    }
  }
  if (bp_view_name(r, views) != nullptr) __builtin_trap();
  bp_reader* bad = nullptr;
  if (Ok(bp_open_flags(path.c_str(), nullptr, 0x80000000u, &bad), nullptr)) __builtin_trap();
  bp_close(r);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < kPrefix) return 0;
  Control c;
  const uint8_t control = data[0];
  c.no_verify = (control & 8) != 0;
  c.threads = (control & 16) != 0 ? 2 : 1;
  c.wrong_range_size = (control & 32) != 0;
  std::memcpy(c.range, data + 1, 4);
  std::vector<uint8_t> file(data + kPrefix, data + size);
  const char* ext = Extension(control, file.data(), file.size());
  if ((control & 4) != 0 && std::strcmp(ext, ".bolt") == 0) boltpack::fuzz::RepairChecksums(file);
  const std::string path = WriteTemp(file, ext);
  if (path.empty()) return 0;
  ExercisePath(path, c);
  unlink(path.c_str());
  return 0;
}
