// bolt-pack merge PARTS... -o OUT.bolt: see format/part_merge.h.
#include <cstdio>

#include "common/str_cat.h"
#include "format/part_merge.h"
#include "tools/commands.h"

namespace boltpack::tools {

int RunMerge(const MergeArgs& args) {
  if (args.output.size() < 5 || args.output.substr(args.output.size() - 5) != ".bolt") {
    PrintError(StrCat(args.output, ": merge writes a .bolt file"));
    return 2;
  }
  format::MergeOptions options;
  options.durable = !args.no_fsync;
  absl::Status st = format::MergeParts(args.parts, args.output, options);
  if (!st.ok()) {
    PrintError(std::string(st.message()));
    return absl::IsInvalidArgument(st) && st.message().find("merge:") == 0 ? 2 : 1;
  }
  std::fprintf(stderr, "wrote %s (%zu parts)\n", args.output.c_str(), args.parts.size());
  return 0;
}

}  // namespace boltpack::tools
