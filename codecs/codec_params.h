// User text for codec parameters (`--codec PATTERN=CODEC:key=value,...`, a
// recipe's `params`) typed against what the codec declares it takes
// (Codec::ParamSpecs), so that the CLI and the recipe parser accept and
// reject exactly the same things, and a listing shows users the same specs.
#ifndef BOLTPACK_CODECS_CODEC_PARAMS_H_
#define BOLTPACK_CODECS_CODEC_PARAMS_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "boltpack/codec.h"

namespace boltpack {

// One key=value pair as a user wrote it.
struct ParamText {
  std::string key;
  std::string value;
};

// Types `given` by `codec`'s specs: kNumber as FLOAT64, kInteger as INT64,
// kBool as BOOL, kChoice and kText as STRING (types the codecs' CanEncode
// already accepted from the CLI's old guessing, so records are unchanged).
// Rejects a key the codec does not take, a stored-only key, a key given
// twice, a value of the wrong kind and one out of range; each message starts
// with `where` (the flag's text or the recipe rule) and names the codec.
absl::StatusOr<CodecParams> ParseCodecParams(const Codec& codec, absl::Span<const ParamText> given,
                                             std::string_view where);

// Checks parameters already typed (an API caller's, or ParseCodecParams')
// against `codec`'s specs, for the codec's own CanEncode: every key a
// settable one, given once, with a value of its kind (kNumber: any float or
// integer type; kInteger: any integer type; kBool: BOOL; kChoice, kText:
// STRING) within its range. Messages start "codec 'ID': ". Stored records
// are ValidateRecord's to check, not this.
absl::Status CheckEncoderParams(const Codec& codec, const CodecParams& params);

// The values a spec allows, for users: "number in (0, 1]", "integer 0..7",
// "true or false", "one of wanda, magnitude", "text".
std::string DescribeParamValues(const CodecParamSpec& spec);

// The codec's parameters, one line each, every line starting with `indent`:
//   keep=NUMBER  number in (0, 1], default 0.5: fraction of each row ...
// Stored-only ones are marked "(stored)". Empty when it declares none.
std::string DescribeCodecParams(const Codec& codec, std::string_view indent);

}  // namespace boltpack

#endif  // BOLTPACK_CODECS_CODEC_PARAMS_H_
