// Conversions between the protobuf manifest (spec/boltpack.proto) and the
// public C++ structs. Validation happens in manifest_validate.h; these
// functions assume a validated manifest.
#ifndef BOLTPACK_FORMAT_MANIFEST_CONVERT_H_
#define BOLTPACK_FORMAT_MANIFEST_CONVERT_H_

#include "boltpack/tensor_info.h"
#include "boltpack/types.h"
#include "boltpack_proto/boltpack.pb.h"

namespace boltpack::format {

MetaValue FromProto(const v1::Value& value);
void ToProto(const MetaValue& value, v1::Value* out);
TensorInfo FromProto(const v1::Tensor& tensor);
void ToProto(const TensorInfo& info, v1::Tensor* out);

}  // namespace boltpack::format

#endif  // BOLTPACK_FORMAT_MANIFEST_CONVERT_H_
