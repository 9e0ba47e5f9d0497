// What the files of the C API share: the handles behind the opaque C types
// and the helpers that turn C++ statuses and exceptions into bp_status.
#ifndef BOLTPACK_CAPI_CAPI_INTERNAL_H_
#define BOLTPACK_CAPI_CAPI_INTERNAL_H_

#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <unordered_set>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "boltpack/boltpack.h"
#include "boltpack/budget_view.h"
#include "boltpack/reader.h"
#include "boltpack/tensor_info.h"
#include "capi/model.h"
#include "common/str_cat.h"

struct bp_budget {
  const bp_reader* r = nullptr;
  std::string view;
  std::vector<boltpack::BudgetTensor> tensors;
  // Per kept tensor: its zero-copy regions, or why there are none.
  std::vector<absl::StatusOr<boltpack::BudgetTensorView>> regions;
  uint64_t bytes = 0;
};

struct bp_reader {
  // What the file holds, whatever its format (capi/model.h).
  std::unique_ptr<boltpack::capi::Model> reader;
  // The .bolt reader behind `reader`, for what only a .bolt file has
  // (views, budgets, checksums); nullptr for GGUF and safetensors.
  const boltpack::Reader* bolt = nullptr;
  // False when opened with BP_OPEN_NO_VERIFY (the caller opted out).
  bool verify_checksums = true;
  // The most recent error of a call made with this reader, from any thread.
  mutable std::mutex mu;
  mutable std::string last_error;
  // The tensors described so far (bp_tensor_info, bp_stream_info), whose
  // strings stay valid until bp_close: a model builds a TensorInfo each
  // time it is asked, so the C API keeps the ones it handed out.
  mutable std::mutex described_mu;
  mutable absl::flat_hash_map<size_t, std::unique_ptr<const boltpack::TensorInfo>> described;
  // Strings handed out that no record holds (bp_stream_location's paths),
  // each kept once, valid until bp_close.
  mutable std::mutex interned_mu;
  mutable std::unordered_set<std::string> interned;  // nodes: the strings never move
  const char* Intern(std::string s) const {
    std::lock_guard<std::mutex> lock(interned_mu);
    return interned.insert(std::move(s)).first->c_str();
  }
  const boltpack::TensorInfo& Described(size_t tensor) const {
    std::lock_guard<std::mutex> lock(described_mu);
    auto& slot = described[tensor];
    if (slot == nullptr) slot = std::make_unique<const boltpack::TensorInfo>(reader->Describe(tensor));
    return *slot;
  }
};

namespace boltpack::capi {

// Records `message` for the calling thread and for `r`; returns `code`.
bp_status Fail(const bp_reader* r, bp_status code, std::string_view message) noexcept;
// The same with the code and message of `status` (BP_OK for an OK status).
bp_status Fail(const bp_reader* r, const absl::Status& status) noexcept;
bp_status NullArg(const bp_reader* r, const char* fn, const char* arg);
const std::string& PathOf(const bp_reader* r);
// Checks a tensor index; on failure records the error.
bp_status CheckTensor(const bp_reader* r, size_t tensor);
// Checks a tensor index and a stream index of it; on failure records the error.
bp_status CheckStream(const bp_reader* r, size_t tensor, size_t stream);
// "<file>: tensor <name>", for messages.
std::string TensorWhere(const bp_reader* r, size_t tensor);
bool ToOutputType(bp_output out, boltpack::OutputType* type);
// r->bolt, or nullptr with BP_ERR_UNSUPPORTED recorded: `fn` needs a .bolt file.
const boltpack::Reader* BoltOnly(const bp_reader* r, const char* fn, bp_status* st);

// Runs `body` with every exception turned into a status.
template <typename F>
bp_status Guard(const bp_reader* r, const char* fn, F&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    (void)fn;  // building a message could throw again
    return Fail(r, BP_ERR_RESOURCE, "out of memory");
  } catch (const std::exception& e) {
    try {
      return Fail(r, BP_ERR_INTERNAL, StrCat(fn, ": unexpected C++ exception: ", e.what()));
    } catch (...) {
      return Fail(r, BP_ERR_INTERNAL, "unexpected C++ exception");
    }
  } catch (...) {
    return Fail(r, BP_ERR_INTERNAL, "unexpected C++ exception");
  }
}

}  // namespace boltpack::capi

#endif  // BOLTPACK_CAPI_CAPI_INTERNAL_H_
