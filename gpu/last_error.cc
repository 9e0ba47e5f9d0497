#include "gpu/last_error.h"

#include <utility>

namespace boltpack::gpu {
namespace {
thread_local std::string g_last_error;
}  // namespace

bp_status Fail(bp_status status, std::string message) {
  g_last_error = std::move(message);
  return status;
}

bp_status Ok() {
  g_last_error.clear();
  return BP_OK;
}

const char* LastError() { return g_last_error.c_str(); }

}  // namespace boltpack::gpu
