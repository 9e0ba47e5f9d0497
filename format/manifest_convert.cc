#include "format/manifest_convert.h"

#include <cstring>

namespace boltpack::format {
namespace {

// The elements of a repeated integer field at the element type's width,
// straight into the packed buffer (no value per element).
template <typename Field>
std::string PackIntegers(const Field& field, int width) {
  std::string bytes(static_cast<size_t>(field.size()) * width, '\0');
  char* at = bytes.data();
  for (auto x : field) {
    std::memcpy(at, &x, static_cast<size_t>(width));  // little-endian: the low bytes
    at += width;
  }
  return bytes;
}

template <typename Field>
std::string PackFloats(const Field& field) {
  std::string bytes(static_cast<size_t>(field.size()) * sizeof(*field.data()), '\0');
  if (!bytes.empty()) std::memcpy(bytes.data(), field.data(), bytes.size());
  return bytes;
}

MetaValue StringsFromProto(const google::protobuf::RepeatedPtrField<std::string>& strings) {
  size_t total = 0;
  for (const auto& x : strings) total += x.size();
  MetaValue::StringArrayBuilder out;
  out.Reserve(static_cast<size_t>(strings.size()), total);
  for (const auto& x : strings) out.Add(x);
  return out.Build();
}

MetaValue ArrayFromProto(const v1::Array& array) {
  const auto et = static_cast<ValueType>(array.element_type());
  const int width = ValueTypeWidth(et);
  if (IsUnsignedInt(et)) return MetaValue::PackedArray(et, PackIntegers(array.uints(), width));
  if (IsSignedInt(et)) return MetaValue::PackedArray(et, PackIntegers(array.ints(), width));
  if (et == ValueType::kFloat32) return MetaValue::PackedArray(et, PackFloats(array.f32s()));
  if (et == ValueType::kFloat64) return MetaValue::PackedArray(et, PackFloats(array.f64s()));
  if (et == ValueType::kBool) return MetaValue::PackedArray(et, PackIntegers(array.bools(), 1));
  if (et == ValueType::kString) return StringsFromProto(array.strings());
  if (et == ValueType::kArray) {
    MetaValue::NestedArrayBuilder children;
    children.Reserve(static_cast<size_t>(array.arrays_size()));
    for (const auto& x : array.arrays()) children.Add(ArrayFromProto(x));
    return children.Build();
  }
  return MetaValue::Array(et, {});
}

void ArrayToProto(const MetaValue& value, v1::Array* out) {
  const ValueType et = value.element_type;
  out->set_element_type(static_cast<v1::ValueType>(et));
  const size_t n = value.array_size();
  if (IsUnsignedInt(et)) {
    out->mutable_uints()->Reserve(static_cast<int>(n));
    for (size_t k = 0; k < n; ++k) out->add_uints(value.uint_element(k));
  } else if (IsSignedInt(et)) {
    out->mutable_ints()->Reserve(static_cast<int>(n));
    for (size_t k = 0; k < n; ++k) out->add_ints(value.int_element(k));
  } else if (et == ValueType::kFloat32) {
    out->mutable_f32s()->Reserve(static_cast<int>(n));
    for (size_t k = 0; k < n; ++k) out->add_f32s(value.f32_element(k));
  } else if (et == ValueType::kFloat64) {
    out->mutable_f64s()->Reserve(static_cast<int>(n));
    for (size_t k = 0; k < n; ++k) out->add_f64s(value.f64_element(k));
  } else if (et == ValueType::kBool) {
    out->mutable_bools()->Reserve(static_cast<int>(n));
    for (size_t k = 0; k < n; ++k) out->add_bools(value.bool_element(k));
  } else if (et == ValueType::kString) {
    out->mutable_strings()->Reserve(static_cast<int>(n));
    for (size_t k = 0; k < n; ++k) out->add_strings(std::string(value.string_element(k)));
  } else if (et == ValueType::kArray) {
    for (size_t k = 0; k < n; ++k) ArrayToProto(value.child(k), out->add_arrays());
  }
}

}  // namespace

MetaValue FromProto(const v1::Value& value) {
  auto type = static_cast<ValueType>(value.type());
  if (type == ValueType::kArray) return ArrayFromProto(value.array());
  MetaValue v;
  v.type = type;
  if (IsUnsignedInt(type)) v.u = value.u();
  else if (IsSignedInt(type)) v.i = value.i();
  else if (type == ValueType::kFloat32) v.f32 = value.f32();
  else if (type == ValueType::kFloat64) v.f64 = value.f64();
  else if (type == ValueType::kBool) v.b = value.b();
  else if (type == ValueType::kString) v.s = value.s();
  return v;
}

void ToProto(const MetaValue& value, v1::Value* out) {
  ValueType type = value.type;
  out->set_type(static_cast<v1::ValueType>(type));
  if (IsUnsignedInt(type)) out->set_u(value.u);
  else if (IsSignedInt(type)) out->set_i(value.i);
  else if (type == ValueType::kFloat32) out->set_f32(value.f32);
  else if (type == ValueType::kFloat64) out->set_f64(value.f64);
  else if (type == ValueType::kBool) out->set_b(value.b);
  else if (type == ValueType::kString) out->set_s(value.s);
  else if (type == ValueType::kArray) ArrayToProto(value, out->mutable_array());
}

TensorInfo FromProto(const v1::Tensor& tensor) {
  TensorInfo info;
  info.name = tensor.name();
  info.shape.assign(tensor.shape().begin(), tensor.shape().end());
  info.dtype = static_cast<DType>(tensor.dtype());
  info.codec_id = tensor.codec().id();
  for (const auto& p : tensor.codec().params()) {
    info.codec_params.emplace_back(p.key(), FromProto(p.value()));
  }
  for (const auto& s : tensor.streams()) {
    StreamInfo si;
    si.role = s.role();
    si.shard = s.shard();
    si.offset = s.offset();
    si.length = s.length();
    si.alignment = s.alignment();
    si.xxh3 = s.xxh3();
    si.compression = static_cast<Compression>(s.compression());
    si.raw_length = s.raw_length();
    si.chunks.reserve(s.chunks_size());
    for (const auto& c : s.chunks()) {
      si.chunks.push_back(ChunkInfo{c.stored_offset(), c.stored_length(), c.raw_offset(), c.raw_length(),
                                    c.first_row(), c.row_count(), c.xxh3()});
      si.prefix_xxh3.insert(si.prefix_xxh3.end(), c.prefix_xxh3().begin(), c.prefix_xxh3().end());
    }
    si.views.assign(s.views().begin(), s.views().end());
    si.line_bytes = s.line_bytes();
    si.prefix_bytes.assign(s.prefix_bytes().begin(), s.prefix_bytes().end());
    info.streams.push_back(std::move(si));
  }
  info.required_features.assign(tensor.required_features().begin(),
                                tensor.required_features().end());
  return info;
}

void ToProto(const TensorInfo& info, v1::Tensor* out) {
  out->set_name(info.name);
  for (uint64_t d : info.shape) out->add_shape(d);
  out->set_dtype(static_cast<v1::DType>(info.dtype));
  out->mutable_codec()->set_id(info.codec_id);
  for (const auto& [key, value] : info.codec_params) {
    auto* p = out->mutable_codec()->add_params();
    p->set_key(key);
    ToProto(value, p->mutable_value());
  }
  for (const auto& s : info.streams) {
    auto* ps = out->add_streams();
    ps->set_role(s.role);
    ps->set_shard(s.shard);
    ps->set_offset(s.offset);
    ps->set_length(s.length);
    ps->set_alignment(s.alignment);
    ps->set_xxh3(s.xxh3);
    ps->set_compression(static_cast<v1::Compression>(s.compression));
    ps->set_raw_length(s.raw_length);
    for (size_t k = 0; k < s.chunks.size(); ++k) {
      const ChunkInfo& c = s.chunks[k];
      auto* pc = ps->add_chunks();
      pc->set_stored_offset(c.stored_offset);
      pc->set_stored_length(c.stored_length);
      pc->set_raw_offset(c.raw_offset);
      pc->set_raw_length(c.raw_length);
      pc->set_first_row(c.first_row);
      pc->set_row_count(c.row_count);
      pc->set_xxh3(c.xxh3);
      for (uint64_t h : s.ChunkPrefixXxh3(k)) pc->add_prefix_xxh3(h);
    }
    for (const auto& v : s.views) ps->add_views(v);
    ps->set_line_bytes(s.line_bytes);
    for (uint64_t p : s.prefix_bytes) ps->add_prefix_bytes(p);
  }
  for (const auto& f : info.required_features) out->add_required_features(f);
}

}  // namespace boltpack::format
