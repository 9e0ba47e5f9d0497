#include "format/layout.h"

#include <cstring>
#include <string>

#include "absl/base/internal/endian.h"
#include "absl/status/status.h"
#include "common/checksum_status.h"
#include "common/str_cat.h"
#include "absl/strings/str_format.h"

namespace boltpack::format {
namespace {

void Put16(uint8_t* p, uint16_t v) { absl::little_endian::Store16(p, v); }
void Put32(uint8_t* p, uint32_t v) { absl::little_endian::Store32(p, v); }
void Put64(uint8_t* p, uint64_t v) { absl::little_endian::Store64(p, v); }
uint16_t Get16(const uint8_t* p) { return absl::little_endian::Load16(p); }
uint32_t Get32(const uint8_t* p) { return absl::little_endian::Load32(p); }
uint64_t Get64(const uint8_t* p) { return absl::little_endian::Load64(p); }

bool AllZero(const uint8_t* p, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (p[i] != 0) return false;
  }
  return true;
}

absl::Status Corrupt(const std::string& file, std::string_view what) {
  return absl::DataLossError(StrCat(file, ": ", what));
}

}  // namespace

std::array<uint8_t, kHeaderSize> EncodeHeader(const Header& header) {
  std::array<uint8_t, kHeaderSize> b{};
  std::memcpy(b.data(), kHeaderMagic.data(), kHeaderMagic.size());
  Put16(b.data() + 8, static_cast<uint16_t>(header.format_major));
  Put16(b.data() + 10, static_cast<uint16_t>(header.format_minor));
  Put32(b.data() + 12, kHeaderSize);
  Put32(b.data() + 16, kByteOrderMark);
  Put32(b.data() + 20, 0);
  Put64(b.data() + 24, header.file_id);
  Put64(b.data() + 32, header.alignment);
  Put64(b.data() + 56, Xxh3({b.data(), 56}));
  return b;
}

std::array<uint8_t, kFooterSize> EncodeFooter(const Footer& footer) {
  std::array<uint8_t, kFooterSize> b{};
  Put64(b.data() + 0, footer.manifest_offset);
  Put64(b.data() + 8, footer.manifest_length);
  Put64(b.data() + 16, footer.manifest_xxh3);
  Put16(b.data() + 24, static_cast<uint16_t>(footer.format_major));
  Put16(b.data() + 26, static_cast<uint16_t>(footer.format_minor));
  Put64(b.data() + 32, footer.file_id);
  Put64(b.data() + 40, footer.file_size);
  Put64(b.data() + 48, Xxh3({b.data(), 48}));
  std::memcpy(b.data() + 56, kFooterMagic.data(), kFooterMagic.size());
  return b;
}

absl::StatusOr<Header> ParseHeader(absl::Span<const uint8_t> bytes, const std::string& file) {
  if (bytes.size() < kHeaderSize) {
    // [C-3.2.1]
    return absl::InvalidArgumentError(
        StrCat(file, ": not a bolt-pack file (", bytes.size(), " bytes, shorter than the 64-byte header)"));
  }
  const uint8_t* p = bytes.data();
  if (std::memcmp(p, kHeaderMagic.data(), kHeaderMagic.size()) != 0) {
    // [C-3.2.2]
    return absl::InvalidArgumentError(StrCat(file, ": not a bolt-pack file (bad magic)"));
  }
  // [C-3.2.3]
  if (Get64(p + 56) != Xxh3({p, 56})) return ChecksumMismatchError(StrCat(file, ": header checksum mismatch"));
  // Order ([C-3.2.3] to [C-3.2.7]): byte order, then the major version, then the fields
  // a new major version may redefine.
  // [C-3.2.4]
  if (Get32(p + 16) != kByteOrderMark) return Corrupt(file, "byte order mark is not little-endian 0x01020304");
  Header h;
  h.format_major = Get16(p + 8);
  h.format_minor = Get16(p + 10);
  if (h.format_major != kFormatMajor) {
    // [C-3.2.5] [C-5.1.3]
    return absl::UnimplementedError(absl::StrFormat(
        "%s: format version %d.%d is not supported (this reader reads %d.x)", file, h.format_major,
        h.format_minor, kFormatMajor));
  }
  // [C-3.2.6]
  if (Get32(p + 12) != kHeaderSize) return Corrupt(file, "header_size is not 64");
  // [C-3.2.7]
  if (Get32(p + 20) != 0) return Corrupt(file, "reserved header flags are not zero");
  if (!AllZero(p + 40, 16)) return Corrupt(file, "reserved header bytes are not zero");
  h.file_id = Get64(p + 24);
  h.alignment = Get64(p + 32);
  return h;
}

absl::StatusOr<Footer> ParseFooter(absl::Span<const uint8_t> bytes, const std::string& file) {
  if (bytes.size() != kFooterSize) return Corrupt(file, "footer is not 64 bytes");
  const uint8_t* p = bytes.data();
  if (std::memcmp(p + 56, kFooterMagic.data(), kFooterMagic.size()) != 0) {
    // [C-4.2.2]
    return Corrupt(file, "bad footer magic (the file is truncated or was not closed by its writer)");
  }
  // [C-4.2.3]
  if (Get64(p + 48) != Xxh3({p, 48})) return ChecksumMismatchError(StrCat(file, ": footer checksum mismatch"));
  // [C-4.2.4]
  if (Get32(p + 28) != 0) return Corrupt(file, "reserved footer bytes are not zero");
  Footer f;
  f.manifest_offset = Get64(p + 0);
  f.manifest_length = Get64(p + 8);
  f.manifest_xxh3 = Get64(p + 16);
  f.format_major = Get16(p + 24);
  f.format_minor = Get16(p + 26);
  f.file_id = Get64(p + 32);
  f.file_size = Get64(p + 40);
  return f;
}

}  // namespace boltpack::format
