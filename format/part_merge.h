// `bolt-pack merge PARTS... -o OUT.bolt`: joins the part files of a convert
// spread over machines (`convert --part I/N`) into one multi-file model
// whose siblings are the parts themselves (format 1.3 part shards,
// spec/container.md §8.5). Only a new shard 0 is written: a header, the
// manifest of every tensor (each stream naming its part) and a footer; no
// tensor byte is copied. The parts must lie in OUT's folder (a shard is
// named by bare file name) and stay there.
#ifndef BOLTPACK_FORMAT_PART_MERGE_H_
#define BOLTPACK_FORMAT_PART_MERGE_H_

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace boltpack::format {

struct MergeOptions {
  bool durable = true;  // fsync before the rename (common/atomic_file.h)
};

// Checks that `parts` are the N parts of one convert (same plan, count,
// tensor total, metadata, alignment and elastic manifest; each index once;
// their tensors' places cover the model once), then writes `output`
// atomically. The merged model lists the tensors in the one-process order
// with the parts' shared metadata (the part keys left out) and the
// elastic manifest, checked against every tensor.
absl::Status MergeParts(const std::vector<std::string>& parts, const std::string& output,
                        const MergeOptions& options = {});

}  // namespace boltpack::format

#endif  // BOLTPACK_FORMAT_PART_MERGE_H_
