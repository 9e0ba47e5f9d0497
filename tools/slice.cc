// bolt-pack slice: cuts a budget out of an elastic file. Format 1.0 reserves
// the elastic manifest but does not define it yet, so every file answers
// that it has none.
#include <cstdio>

#include "boltpack/reader.h"
#include "common/str_cat.h"
#include "tools/commands.h"
#include "tools/inputs.h"

namespace boltpack::tools {

int RunSlice(const SliceArgs& args) {
  if (Extension(args.input) != ".bolt") {
    PrintError(StrCat(args.input, ": slice reads .bolt files only"));
    return 2;
  }
  auto reader = Reader::Open(args.input);
  if (!reader.ok()) {
    PrintError(std::string(reader.status().message()));
    return 1;
  }
  PrintError(StrCat(args.input, ": has no elastic manifest, so there is no budget to slice; "
                                "slicing needs a file written with an elastic manifest (not yet supported by this version)"));
  return 1;
}

}  // namespace boltpack::tools
