// Checksums would stop almost every mutation of a .bolt file at the door, so
// fuzz targets repair the header, manifest and footer checksums (and the
// footer's size and file id) of their copy for most inputs; stream
// checksums stay as mutated, so the data paths meet their checks.
#ifndef BOLTPACK_FUZZ_REPAIR_CHECKSUMS_H_
#define BOLTPACK_FUZZ_REPAIR_CHECKSUMS_H_

#include <cstdint>
#include <cstring>
#include <vector>

#include "absl/base/internal/endian.h"
#include "format/layout.h"

namespace boltpack::fuzz {

inline void RepairChecksums(std::vector<uint8_t>& b) {
  using boltpack::format::Xxh3;
  if (b.size() < 128) return;
  absl::little_endian::Store64(b.data() + 56, Xxh3({b.data(), 56}));
  uint8_t* footer = b.data() + b.size() - 64;
  uint64_t offset = absl::little_endian::Load64(footer);
  uint64_t length = absl::little_endian::Load64(footer + 8);
  if (offset <= b.size() - 64 && length <= b.size() - 64 - offset) {
    absl::little_endian::Store64(footer + 16, Xxh3({b.data() + offset, length}));
  }
  std::memcpy(footer + 32, b.data() + 24, 8);  // file id
  absl::little_endian::Store64(footer + 40, b.size());
  absl::little_endian::Store64(footer + 48, Xxh3({footer, 48}));
}

}  // namespace boltpack::fuzz

#endif  // BOLTPACK_FUZZ_REPAIR_CHECKSUMS_H_
