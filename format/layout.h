// The fixed binary parts of a .bolt file (spec/container.md §3-§5): the
// 64-byte header at offset 0 and the 64-byte footer at the end. All integers
// are little-endian.
//
//   header (64 B)  0  magic "\x89BPK\r\n\x1a\n"
//                  8  u16 format_major, u16 format_minor
//                 12  u32 header_size (= 64)
//                 16  u32 byte_order_mark (0x01020304, bytes 04 03 02 01)
//                 20  u32 flags (0; reserved)
//                 24  u64 file_id (random, identifies this write)
//                 32  u64 alignment (default stream alignment)
//                 40  16 reserved bytes (0)
//                 56  u64 XXH3-64 of bytes 0..56
//   streams        each at a multiple of its alignment, zero padding between
//   manifest       protobuf boltpack.v1.Manifest
//   footer (64 B)  0  u64 manifest_offset
//                  8  u64 manifest_length
//                 16  u64 XXH3-64 of the manifest bytes
//                 24  u16 format_major, u16 format_minor
//                 28  u32 reserved (0)
//                 32  u64 file_id (equal to the header's)
//                 40  u64 file_size (the whole file, footer included)
//                 48  u64 XXH3-64 of footer bytes 0..48
//                 56  magic "BPKEND\r\n"
#ifndef BOLTPACK_FORMAT_LAYOUT_H_
#define BOLTPACK_FORMAT_LAYOUT_H_

#include <array>
#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/xxh3.h"

namespace boltpack::format {

inline constexpr uint32_t kFormatMajor = 1;
// The newest minor version this library implements (1.1: views and the
// elastic manifest; 1.2: grouped axes, segmented and product dimensions
// in the elastic manifest, its version 2, and line-prefix checksums; 1.3:
// part shards, spec/container.md §8.5; 1.4: flat bindings in the elastic
// manifest, its version 3). A writer stamps the lowest minor whose
// additions the file uses, so a file without them stays a 1.0 file and one
// with views or a version-1 elastic manifest a 1.1 file (VERSIONING.md).
inline constexpr uint32_t kFormatMinor = 4;
inline constexpr uint32_t kFormatMinorBase = 0;
inline constexpr size_t kHeaderSize = 64;
inline constexpr size_t kFooterSize = 64;
inline constexpr std::array<uint8_t, 8> kHeaderMagic = {0x89, 'B', 'P', 'K', '\r', '\n', 0x1a, '\n'};
inline constexpr std::array<uint8_t, 8> kFooterMagic = {'B', 'P', 'K', 'E', 'N', 'D', '\r', '\n'};
inline constexpr uint32_t kByteOrderMark = 0x01020304;

struct Header {
  uint32_t format_major = kFormatMajor;
  uint32_t format_minor = kFormatMinorBase;
  uint64_t file_id = 0;
  uint64_t alignment = 4096;
};

struct Footer {
  uint64_t manifest_offset = 0;
  uint64_t manifest_length = 0;
  uint64_t manifest_xxh3 = 0;
  uint32_t format_major = kFormatMajor;
  uint32_t format_minor = kFormatMinorBase;
  uint64_t file_id = 0;
  uint64_t file_size = 0;
};

std::array<uint8_t, kHeaderSize> EncodeHeader(const Header& header);
std::array<uint8_t, kFooterSize> EncodeFooter(const Footer& footer);
// Parse and check magic, size fields, reserved bytes and checksum. Errors name
// the field; `file` prefixes the message.
absl::StatusOr<Header> ParseHeader(absl::Span<const uint8_t> bytes, const std::string& file);
absl::StatusOr<Footer> ParseFooter(absl::Span<const uint8_t> bytes, const std::string& file);

using ::boltpack::Xxh3;

}  // namespace boltpack::format

#endif  // BOLTPACK_FORMAT_LAYOUT_H_
