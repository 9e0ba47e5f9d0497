// The calling thread's last bp_cuda_* error message (bp_cuda_last_error),
// and the status returned with it.
#ifndef BOLTPACK_GPU_LAST_ERROR_H_
#define BOLTPACK_GPU_LAST_ERROR_H_

#include <string>

#include "boltpack/cuda.h"

namespace boltpack::gpu {

bp_status Fail(bp_status status, std::string message);
// BP_OK, after clearing the message.
bp_status Ok();
const char* LastError();

}  // namespace boltpack::gpu

#endif  // BOLTPACK_GPU_LAST_ERROR_H_
