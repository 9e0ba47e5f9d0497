// `bolt-pack convert` as a library call, for front ends other than the
// command line (the Python module's save_file converts tensors held in
// memory): prepare the rules and the output's format, open the inputs any
// way (Inputs::Open, Inputs::FromMemory), convert.
#ifndef BOLTPACK_TOOLS_CONVERT_H_
#define BOLTPACK_TOOLS_CONVERT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "io/imatrix.h"
#include "tools/codec_rules.h"
#include "tools/commands.h"
#include "tools/inputs.h"

namespace boltpack::tools {

// What a conversion takes from its arguments before any input is opened,
// so that a mistake in them is reported first.
struct PreparedConvert {
  std::vector<CodecRule> rules;  // --codec's, then the recipe's
  std::string ext;               // of the output: ".bolt", ".gguf" or ".safetensors"
  uint64_t split_max_bytes = 0;  // --split-max-size, 0: none
  std::unique_ptr<io::Imatrix> imatrix;
};

// Something the conversion wants its user to know (it went on).
struct ConvertNote {
  bool warning = false;  // a tensor did not get what was asked; else a note
  std::string text;
};

// The rules, the output's format and the imatrix of `args` (its inputs are
// not read).
absl::StatusOr<PreparedConvert> PrepareConvert(const ConvertArgs& args);

// Converts `in` to args.output (written whole or not at all); args.inputs
// is not read. Notes go to `notes`, also when it fails. `tensors_written`,
// when given, gets the count the output holds (a GGUF adds a ".scale"
// beside each two-level nvfp4 weight).
absl::Status ConvertInputs(const Inputs& in, const ConvertArgs& args, const PreparedConvert& prepared,
                           std::vector<ConvertNote>* notes, size_t* tensors_written = nullptr);

// Whether a failure of PrepareConvert or ConvertInputs is the caller's
// mistake in the arguments (the CLI's exit status 2) rather than in the
// inputs (1).
bool IsUsageError(const absl::Status& s);

}  // namespace boltpack::tools

#endif  // BOLTPACK_TOOLS_CONVERT_H_
