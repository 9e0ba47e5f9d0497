// A checksum mismatch is DATA_LOSS like any other damage, but a caller may
// need to tell "these bytes changed after they were written" (a bad disk, a
// truncated or flipped download: fetch the file again) from "the file is
// malformed" (a writer bug, a hostile file). The status carries a payload
// set where the checksum is compared, so the C API's BP_ERR_CHECKSUM does not
// depend on the wording of a message.
#ifndef BOLTPACK_COMMON_CHECKSUM_STATUS_H_
#define BOLTPACK_COMMON_CHECKSUM_STATUS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/cord.h"
#include "absl/strings/string_view.h"

namespace boltpack {

// absl::string_view: this Abseil's is not std::string_view.
inline constexpr absl::string_view kChecksumMismatchPayload = "boltpack/checksum-mismatch";

// DATA_LOSS with `message`, marked as a checksum mismatch.
inline absl::Status ChecksumMismatchError(const std::string& message) {
  absl::Status status = absl::DataLossError(message);
  status.SetPayload(kChecksumMismatchPayload, absl::Cord("1"));
  return status;
}

// Whether `status` came from ChecksumMismatchError (or a copy of it).
inline bool IsChecksumMismatch(const absl::Status& status) {
  return absl::IsDataLoss(status) && status.GetPayload(kChecksumMismatchPayload).has_value();
}

}  // namespace boltpack

#endif  // BOLTPACK_COMMON_CHECKSUM_STATUS_H_
