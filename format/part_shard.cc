#include "format/part_shard.h"

#include "common/checked_math.h"
#include "common/checksum_status.h"
#include "common/status_macros.h"
#include "common/str_cat.h"

namespace boltpack::format {

absl::StatusOr<uint64_t> CheckPartShard(absl::Span<const uint8_t> bytes, const Header& header,
                                        const v1::Shard& entry, const std::string& path) {
  // ValidateShards made data_end <= size - 64, so the footer is there.
  BP_ASSIGN_OR_RETURN(Footer footer, ParseFooter(bytes.subspan(bytes.size() - kFooterSize), path));
  auto manifest_end = CheckedAdd(footer.manifest_offset, footer.manifest_length);
  // [C-8.5.3]
  if (footer.file_size != bytes.size() || footer.file_id != header.file_id ||
      footer.format_major != header.format_major || footer.format_minor != header.format_minor) {
    return absl::DataLossError(StrCat(path, ": is not the part the manifest names (its footer does not match its "
                                            "header or its size)"));
  }
  // [C-8.5.4]
  if (footer.manifest_offset != entry.data_end() || !manifest_end || *manifest_end != bytes.size() - kFooterSize) {
    return absl::DataLossError(StrCat(path, ": the part's manifest starts at ", footer.manifest_offset,
                                      ", not at the data_end ", entry.data_end(), " the manifest names"));
  }
  // [C-8.5.5] No byte of the part goes unchecked: its own manifest is
  // covered by its footer's checksum, as in the part read alone.
  if (Xxh3(bytes.subspan(footer.manifest_offset, footer.manifest_length)) != footer.manifest_xxh3) {
    return ChecksumMismatchError(StrCat(path, ": the part's manifest checksum mismatch"));
  }
  return footer.manifest_offset;
}

}  // namespace boltpack::format
