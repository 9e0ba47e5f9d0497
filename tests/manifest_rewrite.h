// Test helpers that rewrite the manifest of an in-memory .bolt file (new
// footer with its checksum), so a test can hand the reader a well-formed file
// whose manifest breaks exactly one rule.
#ifndef BOLTPACK_TESTS_MANIFEST_REWRITE_H_
#define BOLTPACK_TESTS_MANIFEST_REWRITE_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "boltpack_proto/boltpack.pb.h"
#include "format/layout.h"
#include "gtest/gtest.h"

namespace boltpack::testing {

inline v1::Manifest ManifestOf(const std::vector<uint8_t>& file) {
  v1::Manifest m;
  auto footer = format::ParseFooter(absl::MakeConstSpan(file).subspan(file.size() - format::kFooterSize), "test");
  EXPECT_TRUE(footer.ok()) << footer.status();
  if (!footer.ok()) return m;
  EXPECT_TRUE(m.ParseFromArray(file.data() + footer->manifest_offset, static_cast<int>(footer->manifest_length)));
  return m;
}

// `file` with its manifest replaced by the serialized `bytes` (stored where
// the old one was, which may be any wire data: a test's hand-made records).
inline std::vector<uint8_t> WithManifestBytes(const std::vector<uint8_t>& file, const std::string& bytes) {
  auto footer = format::ParseFooter(absl::MakeConstSpan(file).subspan(file.size() - format::kFooterSize), "test");
  EXPECT_TRUE(footer.ok()) << footer.status();
  if (!footer.ok()) return file;
  std::vector<uint8_t> out(file.begin(), file.begin() + static_cast<long>(footer->manifest_offset));
  out.insert(out.end(), bytes.begin(), bytes.end());
  format::Footer f = *footer;
  f.manifest_length = bytes.size();
  f.manifest_xxh3 = format::Xxh3({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
  f.file_size = out.size() + format::kFooterSize;
  auto encoded = format::EncodeFooter(f);
  out.insert(out.end(), encoded.begin(), encoded.end());
  return out;
}

// `file` with its manifest replaced by `m`.
inline std::vector<uint8_t> WithManifest(const std::vector<uint8_t>& file, const v1::Manifest& m) {
  return WithManifestBytes(file, m.SerializeAsString());
}

inline std::vector<uint8_t> RewriteManifest(const std::vector<uint8_t>& file,
                                            const std::function<void(v1::Manifest&)>& edit) {
  v1::Manifest m = ManifestOf(file);
  edit(m);
  return WithManifest(file, m);
}

}  // namespace boltpack::testing

#endif  // BOLTPACK_TESTS_MANIFEST_REWRITE_H_
