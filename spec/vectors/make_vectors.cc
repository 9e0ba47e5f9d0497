// make_vectors: writes the golden vectors of spec/container.md (Appendix B).
//
//   make_vectors <dir>        normally spec/vectors of the source tree
//
// It writes <dir>/valid/<name>.bolt with <name>.expected.json (what a
// conforming reader lists and decodes) and <dir>/invalid/<name>.bolt with
// <name>.expected_error.txt (the stage, error class and message substring a
// conforming reader reports). Sibling shard files end in ".boltshard".
//
// Valid vectors are written with the library's Writer and EncodeTensor; the
// expected decoded bytes are computed here by independent reference
// conversions (exact nearest-value rounding in double for f16 and
// bf16), and the generator dies if the Writer stored anything else. Vectors
// the Writer cannot produce (shards, future versions, unknown codecs) and
// every invalid vector are made by editing bytes or by building the
// manifest with the generated boltpack.pb.h and writing a correct header and
// footer around it (format/layout.h), so each invalid vector breaks exactly
// one rule.
//
// Output is deterministic: each file's file_id is the XXH3-64 of its name,
// and the writer name is fixed. zstd streams depend on the zstd library
// version; the committed files are the reference, not a re-run.
#include "spec/vectors/vectors_common.h"

namespace {


// ---------------------------------------------------------------------------
// Valid vectors

MetaValue U8(uint64_t v) { return MetaValue::Uint(ValueType::kUint8, v); }
MetaValue Arr(ValueType et, std::vector<MetaValue> el) { return MetaValue::Array(et, std::move(el)); }

void ValidEmpty() {
  // The smallest file the Writer makes: no metadata, no tensors, the default
  // alignment. Appendix A dumps it.
  Bytes b = WriteWith("empty", Options(fmt::kDefaultAlignment), [](bp::Writer&) {});
  SaveValid("empty", b, {}, {});
}

void ValidMetadata() {
  using VT = ValueType;
  std::vector<std::pair<std::string, MetaValue>> md;
  // Deliberately not sorted: order is part of the data.
  md.push_back({"z.first_in_file", MetaValue::String("metadata keeps writer order")});
  md.push_back({"general.architecture", MetaValue::String("llama")});
  md.push_back({"u8.min", U8(0)});
  md.push_back({"u8.max", U8(255)});
  md.push_back({"i8.min", MetaValue::Int(VT::kInt8, -128)});
  md.push_back({"i8.max", MetaValue::Int(VT::kInt8, 127)});
  md.push_back({"u16.max", MetaValue::Uint(VT::kUint16, 65535)});
  md.push_back({"i16.min", MetaValue::Int(VT::kInt16, -32768)});
  md.push_back({"u32.max", MetaValue::Uint(VT::kUint32, 4294967295ull)});
  md.push_back({"i32.min", MetaValue::Int(VT::kInt32, std::numeric_limits<int32_t>::min())});
  md.push_back({"u64.max", MetaValue::Uint(VT::kUint64, std::numeric_limits<uint64_t>::max())});
  md.push_back({"i64.min", MetaValue::Int(VT::kInt64, std::numeric_limits<int64_t>::min())});
  md.push_back({"i64.max", MetaValue::Int(VT::kInt64, std::numeric_limits<int64_t>::max())});
  md.push_back({"f32.value", MetaValue::Float32(1e-5f)});
  md.push_back({"f32.negative_zero", MetaValue::Float32(-0.0f)});
  md.push_back({"f32.subnormal", MetaValue::Float32(BitsF32(0x00000001u))});
  md.push_back({"f32.infinity", MetaValue::Float32(std::numeric_limits<float>::infinity())});
  md.push_back({"f32.nan_payload", MetaValue::Float32(BitsF32(0x7fa00001u))});  // signalling, payload kept
  md.push_back({"f64.value", MetaValue::Float64(3.141592653589793)});
  md.push_back({"f64.negative_zero", MetaValue::Float64(-0.0)});
  md.push_back({"f64.nan", MetaValue::Float64(std::bit_cast<double>(0xfff8000000000123ull))});
  md.push_back({"bool.true", MetaValue::Bool(true)});
  md.push_back({"bool.false", MetaValue::Bool(false)});
  md.push_back({"string.utf8", MetaValue::String("h\xc3\xa9llo \xe2\x9c\x93")});
  md.push_back({"string.empty", MetaValue::String("")});
  md.push_back({"string.nul_inside", MetaValue::String(std::string("a\0b", 3))});
  md.push_back({"string.not_utf8", MetaValue::String("\xff\xfe GGUF bytes")});
  md.push_back({"array.uint8", Arr(VT::kUint8, {U8(0), U8(1), U8(255)})});
  md.push_back({"array.int8", Arr(VT::kInt8, {MetaValue::Int(VT::kInt8, -128), MetaValue::Int(VT::kInt8, 127)})});
  md.push_back({"array.uint16", Arr(VT::kUint16, {MetaValue::Uint(VT::kUint16, 65535)})});
  md.push_back({"array.int16", Arr(VT::kInt16, {MetaValue::Int(VT::kInt16, -32768), MetaValue::Int(VT::kInt16, 1)})});
  md.push_back({"array.uint32", Arr(VT::kUint32, {MetaValue::Uint(VT::kUint32, 1), MetaValue::Uint(VT::kUint32, 4294967295ull)})});
  md.push_back({"array.int32", Arr(VT::kInt32, {MetaValue::Int(VT::kInt32, -1), MetaValue::Int(VT::kInt32, 2147483647)})});
  md.push_back({"array.uint64", Arr(VT::kUint64, {MetaValue::Uint(VT::kUint64, std::numeric_limits<uint64_t>::max())})});
  md.push_back({"array.int64", Arr(VT::kInt64, {MetaValue::Int(VT::kInt64, std::numeric_limits<int64_t>::min())})});
  md.push_back({"array.float32", Arr(VT::kFloat32, {MetaValue::Float32(0.5f), MetaValue::Float32(-0.0f),
                                                     MetaValue::Float32(BitsF32(0xffc00000u))})});
  md.push_back({"array.float64", Arr(VT::kFloat64, {MetaValue::Float64(1e300), MetaValue::Float64(-2.5)})});
  md.push_back({"array.bool", Arr(VT::kBool, {MetaValue::Bool(true), MetaValue::Bool(false), MetaValue::Bool(true)})});
  md.push_back({"array.string", Arr(VT::kString, {MetaValue::String("<s>"), MetaValue::String(""),
                                                   MetaValue::String("\xc4\xa0the")})});
  md.push_back({"array.empty", Arr(VT::kUint32, {})});
  md.push_back({"array.nested", Arr(VT::kArray, {Arr(VT::kInt32, {MetaValue::Int(VT::kInt32, 1), MetaValue::Int(VT::kInt32, 2)}),
                                                  Arr(VT::kInt32, {}),
                                                  Arr(VT::kString, {MetaValue::String("x")})})});
  // Eight arrays deep: the deepest nesting §9 allows.
  MetaValue deep = Arr(VT::kUint8, {U8(8)});
  for (int level = 7; level >= 1; --level) deep = Arr(VT::kArray, {deep});
  md.push_back({"array.depth_8", deep});
  Bytes b = WriteWith("metadata", Options(), [&](bp::Writer& w) {
    for (const auto& [k, v] : md) Check(w.AddMetadata(k, v), k);
  });
  // The manifest must say exactly what went in (order, types, bits).
  v1::Manifest m = ManifestOf(b);
  if (static_cast<size_t>(m.metadata_size()) != md.size()) Die("metadata count");
  for (size_t i = 0; i < md.size(); ++i) {
    if (m.metadata(static_cast<int>(i)).key() != md[i].first ||
        !(FromProtoValue(m.metadata(static_cast<int>(i)).value()) == md[i].second)) {
      Die(StrCat("metadata entry ", md[i].first, " changed on the way"));
    }
  }
  SaveValid("metadata", b, {}, {});
}

void ValidF32() {
  std::vector<TensorSpec> ts;
  ts.push_back(F32Tensor("scalar", {}, {3.25f}));
  ts.push_back(F32Tensor("matrix", {2, 3}, {1, 2, 3, 4, 5, 6}));
  ts.push_back(F32BitsTensor("special", {12},
                             {0x00000000u, 0x80000000u, 0x3f800000u, 0xbfc00000u, 0x7f7fffffu, 0x00000001u,
                              0x00800000u, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0x7f800001u, 0xffc00001u}));
  ts.push_back(F32Tensor("empty_rows", {0, 4}, {}));
  ts.push_back(F32Tensor("empty_1d", {0}, {}));
  ts.push_back(TensorSpec{"from_f64", {4}, DType::kF64, "f32", Raw(std::vector<double>{1.0000000001, 1e300, -1e-50, 0.1})});
  ts.push_back(TensorSpec{"from_f16", {4}, DType::kF16, "f32",
                          Raw(std::vector<uint16_t>{0x3c00, 0x0001, 0x7c01, 0xfbff})});
  ts.push_back(TensorSpec{"from_bf16", {3}, DType::kBF16, "f32", Raw(std::vector<uint16_t>{0x3f80, 0x7f81, 0x8001})});
  Bytes b = WriteWith("f32", Options(), [&](bp::Writer& w) {
    for (const auto& t : ts) Add(w, t);
  });
  SaveValid("f32", b, {}, DecodesOf(ts));
}

void ValidF16() {
  std::vector<TensorSpec> ts;
  const float one = 1.0f;
  ts.push_back(F32BitsTensor(
      "rounding", {21},
      {F32Bits(one), F32Bits(1.0f + 0x1p-11f) /* tie -> even (1.0) */, F32Bits(1.0f + 3 * 0x1p-11f) /* tie -> 1+2^-9 */,
       F32Bits(0.1f), F32Bits(65504.0f), F32Bits(65519.99f) /* -> 65504 */, F32Bits(65520.0f) /* -> inf */,
       F32Bits(-70000.0f) /* -> -inf */, F32Bits(0x1p-24f) /* smallest subnormal */, F32Bits(0x1p-25f) /* tie -> 0 */,
       F32Bits(3 * 0x1p-26f) /* -> 2^-24 */, F32Bits(0x1p-14f) /* smallest normal */,
       F32Bits(0x1p-14f - 0x1p-25f) /* tie -> 0x0400 */, F32Bits(1e-8f) /* -> 0 */, 0x80000000u,
       0x7f800000u, 0xff800000u, 0x7fc00000u /* -> 7e00 */, 0xff800001u /* -> fe00 */, 0x00000001u /* -> 0 */,
       F32Bits(-2.5f)},
      "f16"));
  ts.push_back(TensorSpec{"identity", {4}, DType::kF16, "f16", Raw(std::vector<uint16_t>{0x3c00, 0x0001, 0x7c01, 0xfc00})});
  ts.push_back(TensorSpec{"from_bf16", {3}, DType::kBF16, "f16", Raw(std::vector<uint16_t>{0x3f80, 0x4780, 0x7fc1})});
  ts.push_back(TensorSpec{"from_f64", {2}, DType::kF64, "f16", Raw(std::vector<double>{1.0 + 0x1p-11 + 0x1p-40, -1e10})});
  ts.push_back(F32Tensor("zero_d", {}, {-1.0f}, "f16"));
  ts.push_back(F32Tensor("zero_size", {3, 0}, {}, "f16"));
  Bytes b = WriteWith("f16", Options(), [&](bp::Writer& w) {
    for (const auto& t : ts) Add(w, t);
  });
  SaveValid("f16", b, {}, DecodesOf(ts));
}

void ValidBF16() {
  std::vector<TensorSpec> ts;
  ts.push_back(F32BitsTensor(
      "rounding", {16},
      {0x3f800000u, F32Bits(1.0f + 0x1p-8f) /* tie -> 1.0 */, F32Bits(1.0f + 3 * 0x1p-8f) /* tie -> 1+2^-6 */,
       0x3f808001u /* above the tie -> up */, 0x7f7fffffu /* -> inf */, 0x7f7f7fffu /* -> 7f7f */,
       0x7f7f8000u /* tie, odd -> inf */, 0x00008000u /* tie -> 0 */, 0x00018000u /* tie -> 0x0002 */,
       0x7f800001u /* -> 7fc0 */, 0xff800001u /* -> ffc0 */, 0x7fa5a5a5u /* -> 7fe5 */, 0x7f800000u, 0x80000000u,
       F32Bits(0.1f), F32Bits(-3.0e38f)},
      "bf16"));
  ts.push_back(TensorSpec{"identity", {3}, DType::kBF16, "bf16", Raw(std::vector<uint16_t>{0x3f80, 0x7f81, 0x0001})});
  ts.push_back(TensorSpec{"from_f16", {3}, DType::kF16, "bf16", Raw(std::vector<uint16_t>{0x3c00, 0x0001, 0x7bff})});
  ts.push_back(TensorSpec{"from_f64", {2}, DType::kF64, "bf16", Raw(std::vector<double>{1.0 / 3.0, 1e39})});
  ts.push_back(F32Tensor("matrix", {2, 2}, {1.5f, -2.25f, 1e-3f, 1e3f}, "bf16"));
  Bytes b = WriteWith("bf16", Options(), [&](bp::Writer& w) {
    for (const auto& t : ts) Add(w, t);
  });
  SaveValid("bf16", b, {}, DecodesOf(ts));
}

void ValidRaw() {
  std::vector<TensorSpec> ts;
  auto add = [&](const char* name, DType d, std::vector<uint64_t> shape, Bytes bytes) {
    ts.push_back(TensorSpec{name, std::move(shape), d, "raw", std::move(bytes)});
  };
  add("i8", DType::kI8, {4}, Raw(std::vector<int8_t>{-128, -1, 0, 127}));
  add("u8", DType::kU8, {3}, Raw(std::vector<uint8_t>{0, 1, 255}));
  add("i16", DType::kI16, {2}, Raw(std::vector<int16_t>{-32768, 32767}));
  add("u16", DType::kU16, {2}, Raw(std::vector<uint16_t>{1, 65535}));
  add("i32", DType::kI32, {2, 2}, Raw(std::vector<int32_t>{-1, 0, 1, std::numeric_limits<int32_t>::min()}));
  add("u32", DType::kU32, {1}, Raw(std::vector<uint32_t>{0xdeadbeefu}));
  add("i64", DType::kI64, {2}, Raw(std::vector<int64_t>{std::numeric_limits<int64_t>::min(), 42}));
  add("u64", DType::kU64, {}, Raw(std::vector<uint64_t>{std::numeric_limits<uint64_t>::max()}));
  add("bool", DType::kBool, {3}, Raw(std::vector<uint8_t>{0, 1, 1}));
  add("f8_e4m3", DType::kF8E4M3, {4}, Raw(std::vector<uint8_t>{0x00, 0x38, 0x7e, 0xfe}));
  add("f8_e5m2", DType::kF8E5M2, {2}, Raw(std::vector<uint8_t>{0x3c, 0x7b}));
  add("f8_e8m0", DType::kF8E8M0, {2}, Raw(std::vector<uint8_t>{0x7f, 0xff}));
  add("c64", DType::kC64, {2}, Raw(std::vector<float>{1.0f, -1.0f, 0.5f, 2.0f}));
  add("f64", DType::kF64, {3}, Raw(std::vector<double>{1.5, -1e300, 1e-320}));
  add("f32", DType::kF32, {2}, Raw(std::vector<float>{1.0f + 0x1p-9f, -0.0f}));
  add("f16", DType::kF16, {2}, Raw(std::vector<uint16_t>{0x3c01, 0x8400}));
  add("bf16", DType::kBF16, {2}, Raw(std::vector<uint16_t>{0x3f81, 0xff80}));
  add("u8_empty", DType::kU8, {2, 0, 3}, Bytes{});
  Bytes b = WriteWith("raw", Options(), [&](bp::Writer& w) {
    for (const auto& t : ts) Add(w, t);
  });
  SaveValid("raw", b, {}, DecodesOf(ts));
}

void ValidZstd() {
  std::vector<TensorSpec> ts;
  std::vector<float> chunked(8 * 16);
  for (size_t i = 0; i < chunked.size(); ++i) chunked[i] = static_cast<float>(i % 16 < 8 ? 1 : 2);
  ts.push_back(F32Tensor("chunked", {8, 16}, chunked));
  ts.push_back(F32Tensor("whole", {256}, std::vector<float>(256, 0.25f)));
  ts.push_back(F32Tensor("incompressible", {5}, {0.1f, -7.5f, 3e10f, 1e-20f, 42.0f}));
  ts.push_back(F32Tensor("chunked_bf16", {6, 8}, std::vector<float>(48, -1.0f), "bf16"));
  Bytes b = WriteWith("zstd", Options(64, 3), [&](bp::Writer& w) {
    Add(w, ts[0], [](bp::EncodedTensor& e) { SetRowChunks(e, 8, 2); });
    Add(w, ts[1]);
    Add(w, ts[2]);
    Add(w, ts[3], [](bp::EncodedTensor& e) { SetRowChunks(e, 6, 4); });
  });
  v1::Manifest m = ManifestOf(b);
  if (m.tensors(0).streams(0).compression() != v1::COMPRESSION_ZSTD || m.tensors(0).streams(0).chunks_size() != 4 ||
      m.tensors(1).streams(0).compression() != v1::COMPRESSION_ZSTD ||
      m.tensors(2).streams(0).compression() != v1::COMPRESSION_NONE) {
    Die("zstd vector: the writer did not compress as planned");
  }
  SaveValid("zstd", b, {}, DecodesOf(ts));
}

void ValidZstdLarge() {
  // Over 1 MiB raw: the f32 codec makes its own chunks of whole rows (256
  // rows of 4 KiB, then 4), each compressed alone.
  const uint64_t rows = 260, cols = 1024;
  std::vector<float> v(rows * cols);
  for (uint64_t r = 0; r < rows; ++r)
    for (uint64_t c = 0; c < cols; ++c) v[r * cols + c] = static_cast<float>((r + c) % 7) - 3.0f;
  std::vector<TensorSpec> ts{F32Tensor("large", {rows, cols}, v)};
  Bytes b = WriteWith("zstd_large", Options(64, 19), [&](bp::Writer& w) { Add(w, ts[0]); });
  v1::Manifest m = ManifestOf(b);
  if (m.tensors(0).streams(0).chunks_size() < 2) Die("zstd_large: expected codec chunks");
  SaveValid("zstd_large", b, {}, DecodesOf(ts));
}

void ValidAlign4096() {
  std::vector<TensorSpec> ts{F32Tensor("first", {4}, {1, 2, 3, 4}), F32Tensor("second", {2}, {5, 6})};
  Bytes b = WriteWith("align4096", Options(4096), [&](bp::Writer& w) {
    for (const auto& t : ts) Add(w, t);
  });
  SaveValid("align4096", b, {}, DecodesOf(ts));
}

// A small Writer-made file the hand-edited vectors start from.
Bytes SmallFile(const std::string& name, std::vector<TensorSpec>* ts) {
  *ts = {F32Tensor("weight", {2, 2}, {1, 2, 3, 4}), F32Tensor("bias", {2}, {0.5f, -0.5f})};
  return WriteWith(name, Options(), [&](bp::Writer& w) {
    Check(w.AddMetadata("general.name", MetaValue::String(name)), "metadata");
    for (const auto& t : *ts) Add(w, t);
  });
}

void ValidUnknownRequiredFeature() {
  std::vector<TensorSpec> ts;
  Bytes b = SmallFile("unknown_required_feature", &ts);
  b = EditManifest(b, [](v1::Manifest& m) { m.add_required_features("x-future-feature"); });
  std::vector<Decodes> d;
  for (const auto& t : ts) {
    d.push_back({t.name, DecodeErrorJson("UNIMPLEMENTED", "needs feature \"x-future-feature\"")});
  }
  SaveValid("unknown_required_feature", b, {"x-future-feature"}, d);
}

// [C-5.3.10]: a feature named twice in a list (and a known one the file
// does not use) is no error and adds nothing.
void ValidRepeatedFeature() {
  std::vector<TensorSpec> ts;
  Bytes b = SmallFile("repeated_feature", &ts);
  b = EditManifest(b, [](v1::Manifest& m) {
    m.add_required_features("zstd");
    m.add_required_features("zstd");
  });
  SaveValid("repeated_feature", b, {}, DecodesOf(ts));
}

// [C-7.3.4]: a zstd stream of raw_length 0 with 0 stored bytes (zero
// frames) decodes to nothing.
void ValidEmptyZstdStream() {
  std::vector<TensorSpec> ts{F32Tensor("empty", {0}, {}), F32Tensor("bias", {2}, {0.5f, -0.5f})};
  Bytes b = WriteWith("empty_zstd_stream", Options(), [&](bp::Writer& w) {
    for (const auto& t : ts) Add(w, t);
  });
  b = EditManifest(b, [](v1::Manifest& m) {
    v1::Stream* s = FindTensor(m, "empty")->mutable_streams(0);
    if (s->raw_length() != 0) Die("empty_zstd_stream: the empty tensor's stream is not empty");
    s->set_compression(v1::COMPRESSION_ZSTD);
    m.add_required_features("zstd");
  });
  SaveValid("empty_zstd_stream", b, {}, DecodesOf(ts));
}

void ValidUnknownTensorFeature() {
  std::vector<TensorSpec> ts;
  Bytes b = SmallFile("unknown_tensor_feature", &ts);
  b = EditManifest(b, [](v1::Manifest& m) { FindTensor(m, "bias")->add_required_features("x-future-tensor-feature"); });
  std::vector<Decodes> d{{ts[0].name, DecodeJson(ts[0])},
                         {ts[1].name, DecodeErrorJson("UNIMPLEMENTED", "needs feature \"x-future-tensor-feature\"")}};
  SaveValid("unknown_tensor_feature", b, {}, d);
}

void ValidUnknownCodec() {
  std::vector<TensorSpec> ts;
  Bytes b = SmallFile("unknown_codec", &ts);
  b = EditManifest(b, [](v1::Manifest& m) {
    v1::Tensor* t = FindTensor(m, "weight");
    t->mutable_codec()->set_id("x-future-codec");
    auto* p = t->mutable_codec()->add_params();
    p->set_key("block");
    p->mutable_value()->set_type(v1::UINT32);
    p->mutable_value()->set_u(32);
    p = t->mutable_codec()->add_params();
    p->set_key("mode");
    p->mutable_value()->set_type(v1::STRING);
    p->mutable_value()->set_s("fast");
    t->mutable_streams(0)->set_role("payload");
  });
  std::vector<Decodes> d{{ts[0].name, DecodeErrorJson("UNIMPLEMENTED", "codec \"x-future-codec\" is unknown")},
                         {ts[1].name, DecodeJson(ts[1])}};
  SaveValid("unknown_codec", b, {}, d);
}

// A dtype or compression a later minor version adds: the file opens and
// lists, the tensor is copied through but not decoded (spec §6.7, §6.9).
void ValidUnknownDtype() {
  std::vector<TensorSpec> ts;
  Bytes b = SmallFile("unknown_dtype", &ts);
  b = EditManifest(b, [](v1::Manifest& m) { FindTensor(m, "weight")->set_dtype(static_cast<v1::DType>(99)); });
  std::vector<Decodes> d{{ts[0].name, DecodeErrorJson("UNIMPLEMENTED", "dtype 99 is unknown")},
                         {ts[1].name, DecodeJson(ts[1])}};
  SaveValid("unknown_dtype", b, {}, d);
}

void ValidUnknownCompression() {
  std::vector<TensorSpec> ts;
  Bytes b = SmallFile("unknown_compression", &ts);
  b = EditManifest(b, [](v1::Manifest& m) {
    FindTensor(m, "weight")->mutable_streams(0)->set_compression(static_cast<v1::Compression>(7));
  });
  std::vector<Decodes> d{{ts[0].name, DecodeErrorJson("UNIMPLEMENTED", "compression 7 is unknown")},
                         {ts[1].name, DecodeJson(ts[1])}};
  SaveValid("unknown_compression", b, {}, d);
}

void ValidNewerMinor() {
  // Format 1.1 as a 1.0 reader sees it: fields it does not know (here numbers
  // 100+) in several messages, and an optional feature it does not know.
  std::vector<TensorSpec> ts;
  Bytes b = SmallFile("newer_minor", &ts);
  v1::Manifest m = ManifestOf(b);
  m.set_format_minor(1);
  m.add_optional_features("x-future-hint");
  m.GetReflection()->MutableUnknownFields(&m)->AddVarint(100, 7);
  v1::Tensor* t = FindTensor(m, "weight");
  t->GetReflection()->MutableUnknownFields(t)->AddLengthDelimited(100, "a field from 1.1");
  v1::Stream* s = t->mutable_streams(0);
  s->GetReflection()->MutableUnknownFields(s)->AddFixed64(101, 0x0123456789abcdefull);
  v1::Value* v = m.mutable_metadata(0)->mutable_value();
  v->GetReflection()->MutableUnknownFields(v)->AddFixed32(102, 5);
  b = Rewrap(b, m);
  Put16(b.data() + 10, 1);  // header format_minor
  ResealHeader(b);
  Put16(b.data() + b.size() - 64 + 26, 1);  // footer format_minor
  ResealFooter(b);
  SaveValid("newer_minor", b, {}, DecodesOf(ts));
}

void ValidSharded() {
  // Two files: sharded.bolt holds the manifest and tensor "local";
  // sharded-1.boltshard (header + data section only) holds "remote".
  const uint64_t align = 64;
  TensorSpec local = F32Tensor("local", {2}, {1.0f, 2.0f});
  TensorSpec remote = F32Tensor("remote", {2, 2}, {3.0f, 4.0f, 5.0f, 6.0f});
  Assembly sib;
  uint64_t remote_offset = sib.Append(remote.StoredBytes(), align);
  fmt::Header sh;
  sh.file_id = FileId("sharded-1.boltshard");
  sh.alignment = align;
  sib.SealHeader(sh);
  Bytes sibling = sib.bytes;

  Assembly main;
  uint64_t local_offset = main.Append(local.StoredBytes(), align);
  v1::Manifest m;
  m.set_format_major(1);
  m.set_alignment(align);
  m.set_writer(kWriterName);
  m.add_required_features("shards");
  m.add_shards();  // shard 0: this file
  auto* s1 = m.add_shards();
  s1->set_file_name("sharded-1.boltshard");
  s1->set_size(sibling.size());
  s1->set_file_id(sh.file_id);
  auto add = [&](const TensorSpec& t, uint32_t shard, uint64_t offset) {
    auto* pt = m.add_tensors();
    pt->set_name(t.name);
    for (uint64_t d : t.shape) pt->add_shape(d);
    pt->set_dtype(v1::F32);
    pt->mutable_codec()->set_id("f32");
    SetStream(pt->add_streams(), "data", shard, offset, t.StoredBytes(), align);
  };
  add(local, 0, local_offset);
  add(remote, 1, remote_offset);
  fmt::Header h;
  h.file_id = FileId("sharded");
  h.alignment = align;
  Bytes b = main.Finish(h, Serialize(m));
  WriteFile(g_out / "valid" / "sharded-1.boltshard", sibling);
  std::printf("valid/sharded-1.boltshard (%zu bytes)\n", sibling.size());
  SaveValid("sharded", b, {}, DecodesOf({local, remote}));
}

// ---------------------------------------------------------------------------
// Format 1.3: part shards (container.md §8.5).

// A part file of `convert --part`: `tensors` at their `places` in a model
// of `total` tensors, with the part keys (§8.5 [C-8.5.6]) after `shared`.
Bytes PartFile(const std::string& name, uint32_t index, uint32_t count, uint64_t total,
               const std::vector<TensorSpec>& tensors, const std::vector<uint64_t>& places) {
  return WriteWith(name, Options(), [&](bp::Writer& w) {
    Check(w.AddMetadata("general.name", MetaValue::String("parts")), "part metadata");
    Check(w.AddMetadata("boltpack.part.index", MetaValue::Uint(ValueType::kUint32, index)), "part index");
    Check(w.AddMetadata("boltpack.part.count", MetaValue::Uint(ValueType::kUint32, count)), "part count");
    Check(w.AddMetadata("boltpack.part.plan", MetaValue::Uint(ValueType::kUint64, 0x5eed)), "part plan");
    Check(w.AddMetadata("boltpack.part.tensors", MetaValue::Uint(ValueType::kUint64, total)), "part tensors");
    std::vector<MetaValue> order;
    for (uint64_t p : places) order.push_back(MetaValue::Uint(ValueType::kUint64, p));
    Check(w.AddMetadata("boltpack.part.order", MetaValue::Array(ValueType::kUint64, std::move(order))), "part order");
    for (const auto& t : tensors) Add(w, t);
  });
}

// Shard 0 of a merged model: no data of its own, the tensors of `parts`
// (file names and bytes) in `order` (pairs of part, tensor in the part).
Bytes MergedShard0(const std::string& name, const std::vector<std::pair<std::string, Bytes>>& parts,
                   const std::vector<std::pair<int, int>>& order) {
  v1::Manifest m;
  m.set_format_major(1);
  m.set_format_minor(3);
  m.set_alignment(64);
  m.set_writer(kWriterName);
  m.add_required_features("shards");
  m.add_required_features("part_shards");
  auto* e = m.add_metadata();
  e->set_key("general.name");
  e->mutable_value()->set_type(v1::STRING);
  e->mutable_value()->set_s("parts");
  m.add_shards();  // shard 0: this file
  std::vector<v1::Manifest> part_manifests;
  for (const auto& [file, bytes] : parts) {
    auto* s = m.add_shards();
    s->set_file_name(file);
    s->set_size(bytes.size());
    s->set_file_id(Take(fmt::ParseHeader(bytes, file), "part header").file_id);
    s->set_data_end(FooterOf(bytes).manifest_offset);
    part_manifests.push_back(ManifestOf(bytes));
  }
  for (const auto& [part, tensor] : order) {
    v1::Tensor* t = m.add_tensors();
    *t = part_manifests[part].tensors(tensor);
    for (auto& st : *t->mutable_streams()) st.set_shard(part + 1);
  }
  fmt::Header h;
  h.format_minor = 3;
  h.file_id = FileId(name);
  h.alignment = 64;
  return Assembly().Finish(h, Serialize(m));
}

void ValidParts() {
  // Tensors a, b, c of one model; part 1 holds a and c, part 2 holds b.
  TensorSpec a = F32Tensor("a", {2}, {1.0f, 2.0f});
  TensorSpec b = F32Tensor("b", {2, 2}, {3.0f, 4.0f, 5.0f, 6.0f});
  TensorSpec c = F32Tensor("c", {3}, {7.0f, 8.0f, 9.0f});
  const std::string p1 = "parts_part_0001_of_0002", p2 = "parts_part_0002_of_0002";  // gtest names: no dots or dashes
  Bytes part1 = PartFile(p1, 1, 2, 3, {a, c}, {0, 2});
  Bytes part2 = PartFile(p2, 2, 2, 3, {b}, {1});
  SaveValid(p1, part1, {}, DecodesOf({a, c}));
  SaveValid(p2, part2, {}, DecodesOf({b}));
  Bytes merged = MergedShard0("parts", {{p1 + ".bolt", part1}, {p2 + ".bolt", part2}}, {{0, 0}, {1, 0}, {0, 1}});
  SaveValid("parts", merged, {}, DecodesOf({a, b, c}));
}

// ---------------------------------------------------------------------------
// Format 1.1 valid vectors: views (container.md §15) and the elastic manifest
// (spec/elastic.md).

// Decodes of bf16 values (every target from the bf16 bits, §10.5).
Json BF16DecodeJson(const std::vector<uint16_t>& bits) {
  TensorSpec t{"", {}, DType::kBF16, "bf16", Raw(bits)};
  return DecodeJson(t);
}

// bf16-spec's draft value of a bf16 tensor of rows x cols (spec/codecs-bf16-spec.md
// §3 reference selection by magnitude, ties to the lower column; §5 draft
// view: pruned -> +0, kept -> top `mbits` mantissa bits and the midpoint fill).
std::vector<uint16_t> RefBF16SpecDraft(const std::vector<uint16_t>& v, size_t rows, size_t cols, size_t kept,
                                       int mbits) {
  std::vector<uint16_t> out(v.size(), 0);
  for (size_t r = 0; r < rows; ++r) {
    std::vector<size_t> idx(cols);
    for (size_t c = 0; c < cols; ++c) idx[c] = r * cols + c;
    std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return (v[a] & 0x7fff) > (v[b] & 0x7fff); });
    for (size_t j = 0; j < kept; ++j) {
      const uint16_t x = v[idx[j]];
      const uint16_t e = (x >> 7) & 0xff;
      const uint16_t low_mask = static_cast<uint16_t>((1u << (7 - mbits)) - 1);
      const uint16_t fill = (mbits < 7 && e >= 1 && e <= 254) ? static_cast<uint16_t>(1u << (6 - mbits)) : 0;
      out[idx[j]] = static_cast<uint16_t>((x & ~low_mask) | fill);
    }
  }
  return out;
}

// One bf16-spec tensor (its verification stream is read only by "full" and
// is placed last by the Writer, §15.4) and one f32 tensor every view reads.
// The Writer declares "draft" and records its range.
Bytes ViewsFile(const std::string& name, std::vector<Decodes>* decodes) {
  const std::vector<uint16_t> w = {0x3fc7, 0xbec1, 0x4049, 0x3c00,   // row 0: keeps 0x4049, 0x3fc7
                                   0xc031, 0x0001, 0x42c9, 0x7f80};  // row 1: keeps +inf, 0x42c9
  const std::vector<uint64_t> w_shape = {2, 4};
  const Bytes w_bytes = Raw(w);
  TensorSpec norm = F32Tensor("norm", {4}, {1.0f, 0.5f, -2.0f, 0.25f});
  Bytes b = WriteWith(name, Options(), [&](bp::Writer& wr) {
    bp::TensorSource src;
    src.name = "weight";
    src.dtype = DType::kBF16;
    src.shape = absl::MakeConstSpan(w_shape);
    src.bytes = absl::MakeConstSpan(w_bytes);
    bp::CodecParams params = {{"keep", MetaValue::Float64(0.5)}, {"mbits", MetaValue::Int(ValueType::kInt64, 3)}};
    auto enc = Take(bp::EncodeTensor("bf16-spec", src, params, {}), "encode weight (bf16-spec)");
    if (enc.streams.size() != 2 || !enc.streams[0].views.empty() || enc.streams[1].views != std::vector<std::string>{"full"}) {
      Die("bf16-spec: expected a speculation stream (every view) and a verification stream ([\"full\"])");
    }
    Check(wr.AddTensor("weight", w_shape, DType::kBF16, "bf16-spec", std::move(enc)), "add weight");
    Add(wr, norm);
  });
  v1::Manifest m = ManifestOf(b);
  if (m.format_minor() != 1 || m.views_size() != 1 || m.views(0).name() != "draft" || m.views(0).ranges_size() != 1 ||
      m.tensors(0).streams(1).offset() < m.tensors(1).streams(0).offset()) {
    Die("views vector: the Writer did not declare \"draft\" or place the verification stream last");
  }
  const std::vector<uint16_t> draft = RefBF16SpecDraft(w, 2, 4, 2, 3);
  decodes->clear();
  decodes->push_back({"weight", BF16DecodeJson(w), {{"draft", BF16DecodeJson(draft)}}});
  decodes->push_back({"norm", DecodeJson(norm), {{"draft", DecodeJson(norm)}}});
  // The library's draft decode must be the reference's.
  std::filesystem::path tmp = g_scratch / (name + ".check.bolt");
  WriteFile(tmp, b);
  auto r = Take(bp::Reader::Open(tmp.string()), "open views vector");
  std::vector<uint8_t> got(w.size() * 2);
  Check(r->Decode(0, "draft", bp::OutputType::kNative, absl::MakeSpan(got)), "draft decode");
  if (got != Raw(draft)) Die(StrCat("bf16-spec draft decode differs from the reference: ", Hex(got), " vs ", Hex(Raw(draft))));
  r.reset();
  std::filesystem::remove(tmp);
  return b;
}

void ValidViews() {
  std::vector<Decodes> d;
  Bytes b = ViewsFile("views_draft", &d);
  SaveValid("views_draft", b, {}, d);
}

// One dimension's kept runs, [start, length] pairs (Appendix B.1 budget_runs).
Json RunsDim(std::initializer_list<std::pair<uint64_t, uint64_t>> runs) {
  Json a = Json::Arr();
  for (auto [start, length] : runs) a.Push(Json::Arr().Push(U(start)).Push(U(length)));
  return a;
}

// A kept tensor of budget_runs: its name after renumbering and, when that
// differs, its parent's name (so a runner finds the parent's decode).
Json RunsTensor(const std::string& name, std::vector<Json> dims, const std::string& parent = "") {
  Json runs = Json::Arr();
  for (auto& d : dims) runs.Push(std::move(d));
  Json o = Json::Obj().Add("tensor", S(name));
  if (!parent.empty()) o.Add("parent", S(parent));
  return o.Add("runs", runs);
}

// Two layers, one per-layer axis bound by one template, two nested budgets.
bp::ElasticManifest SmallElastic() {
  bp::ElasticManifest e;
  e.layer_count = 2;
  e.layer_pattern = "blk.{L}.";
  bp::ElasticAxis ffn;
  ffn.name = "ffn";
  ffn.scope = bp::ElasticScope::kLayer;
  ffn.granularity = 2;
  ffn.unit_elems = 1;
  ffn.parent = {4, 4};
  e.axes.push_back(ffn);
  e.bindings.push_back({"blk.{L}.ffn_up.weight", {"ffn", "-"}});
  e.budgets.push_back({"half", {true, true}, {{"ffn", {2, 2}}}, ""});
  e.budgets.push_back({"small", {true, false}, {{"ffn", {2, 0}}}, "half"});
  return e;
}

Bytes ElasticFile(const std::string& name, std::vector<TensorSpec>* ts) {
  *ts = {F32Tensor("token_embd.weight", {3, 2}, {0.5f, 1, 1.5f, 2, 2.5f, 3}),
         F32Tensor("blk.0.ffn_up.weight", {4, 2}, {1, 2, 3, 4, 5, 6, 7, 8}),
         F32Tensor("blk.1.ffn_up.weight", {4, 2}, {-1, -2, -3, -4, -5, -6, -7, -8})};
  Bytes b = WriteWith(name, Options(), [&](bp::Writer& w) {
    for (const auto& t : *ts) Add(w, t);
    Check(w.SetElastic(SmallElastic()), "elastic");
  });
  v1::Manifest m = ManifestOf(b);
  if (m.format_minor() != 1 || !m.has_elastic() || m.optional_features_size() != 1 || m.optional_features(0) != "elastic") {
    Die("elastic vector: the Writer did not stamp 1.1 or declare \"elastic\"");
  }
  return b;
}

void ValidElastic() {
  std::vector<TensorSpec> ts;
  Bytes b = ElasticFile("elastic", &ts);
  SaveValid("elastic", b, {}, DecodesOf(ts));
}

// Layer renumbering (elastic.md §5.2, conformance.md [K-6.3]): the tensors of
// SmallElastic plus "blk.7.norm.weight", whose index is past layer_count (not a
// tensor of a layer: kept, never renamed), and a budget "late" that drops
// layer 0, so its blk.1 tensors are printed as blk.0.
void ValidElasticRenumber() {
  std::vector<TensorSpec> ts = {F32Tensor("token_embd.weight", {3, 2}, {0.5f, 1, 1.5f, 2, 2.5f, 3}),
                                F32Tensor("blk.0.ffn_up.weight", {4, 2}, {1, 2, 3, 4, 5, 6, 7, 8}),
                                F32Tensor("blk.1.ffn_up.weight", {4, 2}, {-1, -2, -3, -4, -5, -6, -7, -8}),
                                F32Tensor("blk.7.norm.weight", {2}, {0.25f, -0.25f})};
  bp::ElasticManifest e = SmallElastic();
  e.budgets.push_back({"late", {false, true}, {{"ffn", {0, 2}}}, ""});
  Bytes b = WriteWith("elastic_renumber", Options(), [&](bp::Writer& w) {
    for (const auto& t : ts) Add(w, t);
    Check(w.SetElastic(e), "elastic renumber");
  });
  auto whole = [](const std::string& n, uint64_t rows, uint64_t cols) {
    return RunsTensor(n, {RunsDim({{0, rows}}), RunsDim({{0, cols}})});
  };
  Json norm = RunsTensor("blk.7.norm.weight", {RunsDim({{0, 2}})});
  Json half = Json::Arr().Push(whole("token_embd.weight", 3, 2)).Push(whole("blk.0.ffn_up.weight", 2, 2))
                  .Push(whole("blk.1.ffn_up.weight", 2, 2)).Push(norm);
  Json small = Json::Arr().Push(whole("token_embd.weight", 3, 2)).Push(whole("blk.0.ffn_up.weight", 2, 2)).Push(norm);
  Json late = Json::Arr()
                  .Push(whole("token_embd.weight", 3, 2))
                  .Push(RunsTensor("blk.0.ffn_up.weight", {RunsDim({{0, 2}}), RunsDim({{0, 2}})}, "blk.1.ffn_up.weight"))
                  .Push(norm);
  auto budget = [](const char* n, Json t) { return Json::Obj().Add("budget", S(n)).Add("tensors", std::move(t)); };
  Json runs = Json::Arr().Push(budget("half", half)).Push(budget("small", small)).Push(budget("late", late));
  SaveValid("elastic_renumber", b, {}, DecodesOf(ts), {{"budget_runs", runs}});
}

// Format 1.2: elastic manifest version 2. One layer; "heads" in 2 groups
// (GQA) of 2 units of 2 rows; a fused gate_up of segments {ffn, ffn, 2
// fixed rows}. "half" keeps one head per group and one ffn unit per segment.
bp::ElasticManifest GroupedElastic() {
  bp::ElasticManifest e;
  e.version = 2;
  e.layer_count = 1;
  e.layer_pattern = "blk.{L}.";
  bp::ElasticAxis heads;
  heads.name = "heads";
  heads.scope = bp::ElasticScope::kLayer;
  heads.unit_elems = 2;
  heads.parent = {4};
  heads.groups = 2;
  e.axes.push_back(heads);
  bp::ElasticAxis ffn;
  ffn.name = "ffn";
  ffn.scope = bp::ElasticScope::kLayer;
  ffn.parent = {2};
  e.axes.push_back(ffn);
  e.bindings.push_back({"blk.{L}.attn_q.weight", {"heads", "-"}, {}});
  e.bindings.push_back({"blk.{L}.ffn_gate_up.weight", {"+", "-"}, {{0, {{"ffn", 0}, {"ffn", 0}, {"", 2}}}}});
  e.budgets.push_back({"half", {true}, {{"heads", {2}}, {"ffn", {1}}}, ""});
  return e;
}

// `ts` written with elastic manifest `e`, checked to carry the format minor
// and manifest version its features need (elastic.md §1, VERSIONING.md).
Bytes ElasticFile(const std::string& name, const std::vector<TensorSpec>& ts, const bp::ElasticManifest& e,
                  uint32_t minor, uint32_t version, const std::string& label) {
  Bytes b = WriteWith(name, Options(), [&](bp::Writer& w) {
    for (const auto& t : ts) Add(w, t);
    Check(w.SetElastic(e), label);
  });
  v1::Manifest m = ManifestOf(b);
  if (m.format_minor() != minor || m.elastic().version() != version) {
    Die(StrCat(label, " vector: the Writer did not stamp 1.", minor, " with manifest version ", version));
  }
  return b;
}

Bytes GroupedFile(const std::string& name, std::vector<TensorSpec>* ts) {
  *ts = {F32Tensor("blk.0.attn_q.weight", {8, 2}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}),
         F32Tensor("blk.0.ffn_gate_up.weight", {6, 2}, {-1, -2, -3, -4, -5, -6, -7, -8, -9, -10, -11, -12})};
  return ElasticFile(name, *ts, GroupedElastic(), 2, 2, "elastic v2");
}

void ValidElasticGroups() {
  std::vector<TensorSpec> ts;
  Bytes b = GroupedFile("elastic_groups", &ts);
  // "half": one head of each group of 2 (rows [0, 2) and [4, 6)), one ffn
  // unit of each ffn segment, the fixed segment whole.
  Json half = Json::Arr()
                  .Push(RunsTensor("blk.0.attn_q.weight", {RunsDim({{0, 2}, {4, 2}}), RunsDim({{0, 2}})}))
                  .Push(RunsTensor("blk.0.ffn_gate_up.weight", {RunsDim({{0, 1}, {2, 1}, {4, 2}}), RunsDim({{0, 2}})}));
  Json runs = Json::Arr().Push(Json::Obj().Add("budget", S("half")).Add("tensors", half));
  SaveValid("elastic_groups", b, {}, DecodesOf(ts), {{"budget_runs", runs}});
}

// Format 1.2: product dimensions (elastic.md §1), a tiny Mamba-2 mixer. One
// layer; "heads" (2) x "ch" (2 channels per head): ssm_out [2, heads*ch]
// (listed first, so a vector that breaks its product fails there),
// ssm_in [z: heads*ch, x: heads*ch, dt: heads] and the per-head ssm_a.
// "channels" keeps channel 0 of both heads: ssm_out columns {0, 2}, ssm_in
// rows {0, 2, 4, 6, 8, 9}; "half" (nested) keeps head 0 and its channel 0:
// ssm_out column {0}, ssm_in rows {0, 4, 8}.
bp::ElasticManifest ProductElastic() {
  bp::ElasticManifest e;
  e.version = 2;
  e.layer_count = 1;
  e.layer_pattern = "blk.{L}.";
  bp::ElasticAxis heads;
  heads.name = "heads";
  heads.scope = bp::ElasticScope::kLayer;
  heads.parent = {2};
  e.axes.push_back(heads);
  bp::ElasticAxis ch;
  ch.name = "ch";
  ch.scope = bp::ElasticScope::kLayer;
  ch.parent = {2};
  e.axes.push_back(ch);
  e.bindings.push_back({"blk.{L}.ssm_out.weight", {"-", "heads*ch"}, {}});
  e.bindings.push_back(
      {"blk.{L}.ssm_in.weight", {"+", "-"}, {{0, {{"heads*ch", 0}, {"heads*ch", 0}, {"heads", 0}}}}});
  e.bindings.push_back({"blk.{L}.ssm_a", {"heads"}, {}});
  e.budgets.push_back({"channels", {true}, {{"heads", {2}}, {"ch", {1}}}, ""});
  e.budgets.push_back({"half", {true}, {{"heads", {1}}, {"ch", {1}}}, "channels"});
  return e;
}

Bytes ProductFile(const std::string& name, std::vector<TensorSpec>* ts) {
  *ts = {F32Tensor("blk.0.ssm_out.weight", {2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}),
         F32Tensor("blk.0.ssm_in.weight", {10, 1}, {-1, -2, -3, -4, -5, -6, -7, -8, -9, -10}),
         F32Tensor("blk.0.ssm_a", {2}, {0.25f, 0.5f})};
  return ElasticFile(name, *ts, ProductElastic(), 2, 2, "elastic product");
}

// The kept runs of every tensor of every budget (elastic.md §1), written
// out from the definition above: "budget_runs" is a key of this vector's
// expectation only, so older expectations keep their bytes.
Json ProductBudgetRuns() {
  auto dim = RunsDim;
  auto tensor = [](const std::string& name, std::vector<Json> dims) { return RunsTensor(name, std::move(dims)); };
  Json channels = Json::Arr()
                      .Push(tensor("blk.0.ssm_out.weight", {dim({{0, 2}}), dim({{0, 1}, {2, 1}})}))
                      .Push(tensor("blk.0.ssm_in.weight", {dim({{0, 1}, {2, 1}, {4, 1}, {6, 1}, {8, 2}}), dim({{0, 1}})}))
                      .Push(tensor("blk.0.ssm_a", {dim({{0, 2}})}));
  Json half = Json::Arr()
                  .Push(tensor("blk.0.ssm_out.weight", {dim({{0, 2}}), dim({{0, 1}})}))
                  .Push(tensor("blk.0.ssm_in.weight", {dim({{0, 1}, {4, 1}, {8, 1}}), dim({{0, 1}})}))
                  .Push(tensor("blk.0.ssm_a", {dim({{0, 1}})}));
  return Json::Arr()
      .Push(Json::Obj().Add("budget", S("channels")).Add("tensors", channels))
      .Push(Json::Obj().Add("budget", S("half")).Add("tensors", half));
}

void ValidElasticProduct() {
  std::vector<TensorSpec> ts;
  Bytes b = ProductFile("elastic_product", &ts);
  SaveValid("elastic_product", b, {}, DecodesOf(ts), {{"budget_runs", ProductBudgetRuns()}});
}

// Format 1.2: line-prefix checksums (container.md §6.10.1), computed here
// from the definition: XXH3-64 of the first `prefix` bytes of every
// `line`-byte line of `chunk`, concatenated in order.
uint64_t RefLinePrefixXxh3(const Bytes& chunk, uint64_t line, uint64_t prefix) {
  Bytes kept;
  for (uint64_t at = 0; at < chunk.size(); at += line) {
    const uint64_t n = std::min<uint64_t>(prefix, chunk.size() - at);
    kept.insert(kept.end(), chunk.begin() + static_cast<ptrdiff_t>(at), chunk.begin() + static_cast<ptrdiff_t>(at + n));
  }
  return Xxh3(kept);
}

// The stored bytes of chunk `k` of stream `s` of file `b`.
Bytes ChunkBytes(const Bytes& b, const v1::Stream& s, int k) {
  const auto& c = s.chunks(k);
  const uint64_t at = s.offset() + c.stored_offset();
  return Bytes(b.begin() + static_cast<ptrdiff_t>(at), b.begin() + static_cast<ptrdiff_t>(at + c.stored_length()));
}

// Every chunk of every stream of `b` that has prefix_bytes carries exactly
// the reference checksums; the streams of `want` (tensor -> line_bytes,
// prefix_bytes) have them and no other stream has any.
void CheckLinePrefixes(const std::string& name, const Bytes& b,
                       const std::vector<std::pair<std::string, std::pair<uint64_t, std::vector<uint64_t>>>>& want) {
  v1::Manifest m = ManifestOf(b);
  if (m.format_minor() != 2) Die(StrCat(name, ": the Writer did not stamp format minor 2"));
  for (const auto& t : m.tensors()) {
    uint64_t line = 0;
    std::vector<uint64_t> prefixes;
    for (const auto& [tensor, lp] : want) {
      if (tensor == t.name()) std::tie(line, prefixes) = lp;
    }
    for (const auto& s : t.streams()) {
      if (s.line_bytes() != line || std::vector<uint64_t>(s.prefix_bytes().begin(), s.prefix_bytes().end()) != prefixes) {
        Die(StrCat(name, ": tensor \"", t.name(), "\" got line_bytes ", s.line_bytes(), " and ", s.prefix_bytes_size(),
                   " prefix_bytes, not ", line, " and ", prefixes.size()));
      }
      for (int k = 0; k < s.chunks_size(); ++k) {
        const auto& c = s.chunks(k);
        if (c.prefix_xxh3_size() != s.prefix_bytes_size()) Die(StrCat(name, ": chunk ", k, " prefix checksum count"));
        for (int p = 0; p < s.prefix_bytes_size(); ++p) {
          if (c.prefix_xxh3(p) != RefLinePrefixXxh3(ChunkBytes(b, s, k), line, s.prefix_bytes(p))) {
            Die(StrCat(name, ": tensor \"", t.name(), "\" chunk ", k, " prefix checksum ", p,
                       " differs from the reference"));
          }
        }
      }
    }
  }
}

// Values q8_0 stores exactly: multiples of 1/8 in [-127/8, 127/8], each
// block of 32 holding one of magnitude 127/8, so that its scale is 1/8
// (exact in f16) and every element is 8 x value. Decoding gives them back.
std::vector<float> ExactQ8Values(size_t n, size_t seed) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    int k = static_cast<int>((i * 37 + seed) % 255) - 127;
    if (i % 32 == 0) k = (i / 32) % 2 == 0 ? 127 : -127;
    v[i] = static_cast<float>(k) / 8.0f;
  }
  return v;
}

// Two global axes: "ffn" (128) on the innermost dimension of a 2-D tensor,
// "expert_ffn" (64) on that of a 3-D expert tensor. "large" cuts ffn to 64
// and keeps all of expert_ffn; "small" (nested) keeps 32 of each.
bp::ElasticManifest LinePrefixElastic() {
  bp::ElasticManifest e;
  for (auto [name, parent] : {std::pair<const char*, uint64_t>{"ffn", 128}, {"expert_ffn", 64}}) {
    bp::ElasticAxis a;
    a.name = name;
    a.scope = bp::ElasticScope::kGlobal;
    a.parent = {parent};
    e.axes.push_back(a);
  }
  e.bindings.push_back({"ffn_down.weight", {"-", "ffn"}, {}});
  e.bindings.push_back({"ffn_down_exps.weight", {"-", "-", "expert_ffn"}, {}});
  e.budgets.push_back({"large", {}, {{"ffn", {64}}, {"expert_ffn", {64}}}, ""});
  e.budgets.push_back({"small", {}, {{"ffn", {32}}, {"expert_ffn", {32}}}, "large"});
  return e;
}

// Two q8_0 tensors (blocks of 32 elements in 34-byte cells), chunked by
// rows, written with WriterOptions::line_prefixes and the elastic manifest
// set before them:
//   ffn_down.weight [4, 128]: lines of 4 cells (136 bytes), 2 chunks of 2
//     rows; "large" and "small" cut it to 64 and 32 elements: prefix_bytes
//     {34, 68};
//   ffn_down_exps.weight [2, 2, 64]: lines of 2 cells (68 bytes), one chunk
//     per expert (2 lines each); only "small" cuts it (32 elements):
//     prefix_bytes {34}.
Bytes LinePrefixFile(const std::string& name, std::vector<TensorSpec>* ts) {
  *ts = {TensorSpec{"ffn_down.weight", {4, 128}, DType::kF32, "q8_0", Raw(ExactQ8Values(4 * 128, 11))},
         TensorSpec{"ffn_down_exps.weight", {2, 2, 64}, DType::kF32, "q8_0", Raw(ExactQ8Values(2 * 2 * 64, 5))}};
  const std::vector<uint64_t> rows_per_chunk = {2, 1};
  bp::WriterOptions options = Options();
  options.line_prefixes = true;
  Bytes b = WriteWith(name, options, [&](bp::Writer& w) {
    Check(w.SetElastic(LinePrefixElastic()), "elastic line prefixes");
    for (size_t i = 0; i < ts->size(); ++i) {
      const TensorSpec& t = (*ts)[i];
      bp::TensorSource src;
      src.name = t.name;
      src.dtype = t.dtype;
      src.shape = absl::MakeConstSpan(t.shape);
      src.bytes = absl::MakeConstSpan(t.source);
      auto enc = Take(bp::EncodeTensor("q8_0", src, {}, {}), StrCat("encode ", t.name));
      if (enc.streams.size() != 1) Die("q8_0: expected one stream");
      SetRowChunks(enc, t.shape[0], rows_per_chunk[i]);
      Check(w.AddTensor(t.name, t.shape, t.dtype, "q8_0", std::move(enc)), StrCat("add ", t.name));
    }
  });
  CheckLinePrefixes(name, b, {{"ffn_down.weight", {136, {34, 68}}}, {"ffn_down_exps.weight", {68, {34}}}});
  // The values were chosen so that q8_0 keeps them exactly: the decodes
  // below are the source's.
  std::filesystem::path tmp = g_scratch / (name + ".check.bolt");
  WriteFile(tmp, b);
  auto r = Take(bp::Reader::Open(tmp.string()), "open line prefix vector");
  for (size_t i = 0; i < ts->size(); ++i) {
    std::vector<uint8_t> got((*ts)[i].source.size());
    Check(r->Decode(i, bp::OutputType::kF32, absl::MakeSpan(got)), "q8_0 decode");
    if (got != (*ts)[i].source) Die(StrCat(name, ": q8_0 did not keep the values of ", (*ts)[i].name, " exactly"));
  }
  r.reset();
  std::filesystem::remove(tmp);
  return b;
}

// The decodes of an f32 tensor as sizes and checksums (Appendix B.1), for
// tensors whose decoded values are not what their vector is about: `native`
// (for a quantizing codec, its blocks as stored) and the float targets of
// the values `t.source`.
Json DigestDecodeJson(const TensorSpec& t, const Bytes& native) {
  Json d = Json::Obj();
  // sha256 too: the conformance runner (spec/conformance.md) compares it.
  auto digest = [](const Bytes& b) {
    return Json::Obj().Add("bytes", U(b.size())).Add("xxh3", S(HexU(Xxh3(b), 16))).Add("sha256", S(bp::Sha256Hex(b)));
  };
  d.Add("native", digest(native));
  for (const auto& [name, to] : {std::pair<const char*, DType>{"f32", DType::kF32}, {"f16", DType::kF16},
                                 {"bf16", DType::kBF16}}) {
    d.Add(name, digest(Convert(DType::kF32, to, t.source)));
  }
  return d;
}

void ValidElasticLinePrefixes() {
  std::vector<TensorSpec> ts;
  Bytes b = LinePrefixFile("elastic_line_prefixes", &ts);
  const v1::Manifest m = ManifestOf(b);
  std::vector<Decodes> d;
  for (size_t i = 0; i < ts.size(); ++i) {
    // q8_0 decodes to `native` as its blocks: the one stream's bytes.
    const v1::Stream& s = m.tensors(static_cast<int>(i)).streams(0);
    const Bytes blocks(b.begin() + static_cast<ptrdiff_t>(s.offset()),
                       b.begin() + static_cast<ptrdiff_t>(s.offset() + s.length()));
    d.push_back({ts[i].name, DigestDecodeJson(ts[i], blocks)});
  }
  // Both budgets cut the innermost dimension of ffn_down.weight; "small" also
  // that of ffn_down_exps.weight ("large" keeps it whole): in `native` (q8_0
  // blocks, no whole bytes per element) a cut tensor is refused, one kept
  // whole prints the parent's decode (conformance.md [K-6.5]).
  // The decodes give no hex, so a cut tensor carries its kept bytes' digest
  // per float target (Appendix B.1 "decode"), from the source values (which
  // q8_0 stores exactly here, as the parent's digests assume).
  auto kept = [](const TensorSpec& t, uint64_t keep) {
    Json digests = Json::Obj();
    const uint64_t cols = t.shape.back();
    for (const auto& [target, to] : {std::pair<const char*, DType>{"f32", DType::kF32}, {"f16", DType::kF16},
                                     {"bf16", DType::kBF16}}) {
      const Bytes all = Convert(DType::kF32, to, t.source);
      const uint64_t size = all.size() / (t.source.size() / 4);
      Bytes cut;
      for (uint64_t row = 0; row * cols * size < all.size(); ++row) {
        auto at = all.begin() + static_cast<ptrdiff_t>(row * cols * size);
        cut.insert(cut.end(), at, at + static_cast<ptrdiff_t>(keep * size));
      }
      digests.Add(target, Json::Obj().Add("bytes", U(cut.size())).Add("sha256", S(bp::Sha256Hex(cut))));
    }
    return digests;
  };
  auto budget = [&](const char* name, uint64_t ffn, uint64_t expert_ffn) {
    Json down = RunsTensor("ffn_down.weight", {RunsDim({{0, 4}}), RunsDim({{0, ffn}})});
    down.Add("decode", kept(ts[0], ffn));
    Json exps = RunsTensor("ffn_down_exps.weight", {RunsDim({{0, 2}}), RunsDim({{0, 2}}), RunsDim({{0, expert_ffn}})});
    if (expert_ffn != 64) exps.Add("decode", kept(ts[1], expert_ffn));
    Json t = Json::Arr().Push(std::move(down)).Push(std::move(exps));
    return Json::Obj().Add("budget", S(name)).Add("tensors", std::move(t));
  };
  Json runs = Json::Arr().Push(budget("large", 64, 64)).Push(budget("small", 32, 32));
  SaveValid("elastic_line_prefixes", b, {}, d, {{"budget_runs", runs}});
}

// ---------------------------------------------------------------------------
// Invalid vectors

struct Base {
  Bytes bytes;
  uint64_t weight_offset = 0, bias_offset = 0;
};

// Re-stamps a copy of the base with the vector's own file_id.
Bytes Named(const Bytes& base, const std::string& name) {
  Bytes b = base;
  SetFileId(b, FileId(name));
  return b;
}

void Invalid(const std::string& name, const Bytes& base, const std::function<void(Bytes&)>& edit,
             const ErrorSpec& e) {
  Bytes b = Named(base, name);
  edit(b);
  SaveInvalid(name, std::move(b), e);
}

void InvalidManifest(const std::string& name, const Bytes& base, const std::function<void(v1::Manifest&)>& edit,
                     const ErrorSpec& e) {
  SaveInvalid(name, EditManifest(Named(base, name), edit), e);
}

const char* kDataLoss = "DATA_LOSS";
const char* kInvalidArgument = "INVALID_ARGUMENT";
const char* kResourceExhausted = "RESOURCE_EXHAUSTED";
const char* kUnimplemented = "UNIMPLEMENTED";
const char* kNotFound = "NOT_FOUND";

ErrorSpec Open(const char* cls, std::string message, std::string rule) {
  return ErrorSpec{"open", cls, std::move(message), std::move(rule)};
}

v1::Value* AddMeta(v1::Manifest& m, const std::string& key, v1::ValueType type) {
  auto* e = m.add_metadata();
  e->set_key(key);
  e->mutable_value()->set_type(type);
  return e->mutable_value();
}

void InvalidHeaderAndFooter(const Bytes& base) {
  auto footer = [](Bytes& b) { return b.data() + b.size() - 64; };
  Invalid("too_short", base, [](Bytes& b) { b.resize(16); },
          Open(kInvalidArgument, "shorter than the 64-byte header", "C-3.2.1"));
  Invalid("bad_magic", base, [](Bytes& b) { b[3] = 'G'; ResealHeader(b); },
          Open(kInvalidArgument, "not a bolt-pack file (bad magic)", "C-3.2.2"));
  Invalid("header_checksum", base, [](Bytes& b) { b[33] ^= 0x01; },
          Open(kDataLoss, "header checksum mismatch", "C-3.2.3"));
  Invalid("header_size", base, [](Bytes& b) { Put32(b.data() + 12, 128); ResealHeader(b); },
          Open(kDataLoss, "header_size is not 64", "C-3.2.6"));
  Invalid("byte_order_mark", base,
          [](Bytes& b) { b[16] = 1; b[17] = 2; b[18] = 3; b[19] = 4; ResealHeader(b); },
          Open(kDataLoss, "byte order mark", "C-3.2.4"));
  Invalid("header_flags", base, [](Bytes& b) { Put32(b.data() + 20, 1); ResealHeader(b); },
          Open(kDataLoss, "reserved header flags are not zero", "C-3.2.7"));
  Invalid("header_reserved", base, [](Bytes& b) { b[47] = 0x80; ResealHeader(b); },
          Open(kDataLoss, "reserved header bytes are not zero", "C-3.2.7"));
  Invalid("major_version_2", base, [](Bytes& b) { Put16(b.data() + 8, 2); ResealHeader(b); },
          Open(kUnimplemented, "format version 2.0 is not supported", "C-3.2.5, C-5.1.3"));
  // A plausible 2.0 header: a new size and flags. A 1.x reader must still say
  // "unsupported version", which needs the version checked before them.
  Invalid("major_version_2_new_header", base,
          [](Bytes& b) { Put16(b.data() + 8, 2); Put32(b.data() + 12, 128); Put32(b.data() + 20, 1); ResealHeader(b); },
          Open(kUnimplemented, "format version 2.0 is not supported", "C-3.2.5, C-3.1.5"));
  Invalid("header_only", base, [](Bytes& b) { b.resize(64); },
          Open(kDataLoss, "no room for a footer", "C-4.2.1"));
  Invalid("footer_truncated", base, [](Bytes& b) { b.pop_back(); },
          Open(kDataLoss, "bad footer magic", "C-4.2.2"));
  Invalid("footer_checksum", base, [&](Bytes& b) { footer(b)[8] ^= 0x04; },
          Open(kDataLoss, "footer checksum mismatch", "C-4.2.3"));
  Invalid("footer_reserved", base, [&](Bytes& b) { Put32(footer(b) + 28, 5); ResealFooter(b); },
          Open(kDataLoss, "reserved footer bytes are not zero", "C-4.2.4"));
  Invalid("appended_bytes", base,
          [](Bytes& b) { Bytes tail(b.end() - 64, b.end()); b.insert(b.end(), tail.begin(), tail.end()); },
          Open(kDataLoss, "(truncated or appended to)", "C-4.2.5"));
  Invalid("file_id_mismatch", base, [&](Bytes& b) { footer(b)[32] ^= 0x10; ResealFooter(b); },
          Open(kDataLoss, "file_id differs", "C-4.2.6"));
  Invalid("version_mismatch", base, [&](Bytes& b) { Put16(footer(b) + 26, 1); ResealFooter(b); },
          Open(kDataLoss, "disagree on the format version", "C-4.2.7"));
  Invalid("manifest_too_large", base, [&](Bytes& b) { Put64(footer(b) + 8, 300ull << 20); ResealFooter(b); },
          Open(kResourceExhausted, "exceeds the limit of 268435456", "C-4.2.8, C-9.2"));
  Invalid("manifest_misplaced", base,
          [&](Bytes& b) { uint64_t off; std::memcpy(&off, footer(b), 8); Put64(footer(b), off + 1); ResealFooter(b); },
          Open(kDataLoss, "does not end where the footer starts", "C-4.2.9"));
  Invalid("manifest_checksum", base,
          [&](Bytes& b) { uint64_t off; std::memcpy(&off, footer(b), 8); b[off + 3] ^= 0x20; },
          Open(kDataLoss, "manifest checksum mismatch", "C-4.2.10"));
  SaveInvalid("manifest_not_protobuf", RewrapBytes(Named(base, "manifest_not_protobuf"), "not a protobuf"),
              Open(kDataLoss, "is not a valid boltpack.v1.Manifest", "C-6.1.2"));
  {
    // A tensor name that is not UTF-8: protobuf's parser refuses the string.
    v1::Manifest m = ManifestOf(base);
    FindTensor(m, "bias")->set_name("@@NAME@@");
    std::string s = Serialize(m);
    size_t at = s.find("@@NAME@@");
    s.replace(at, 8, std::string("bias\xff\xfe\xfd\xfc", 8));
    SaveInvalid("tensor_name_not_utf8", RewrapBytes(Named(base, "tensor_name_not_utf8"), s),
                Open(kDataLoss, "is not a valid boltpack.v1.Manifest", "C-6.1.2"));
  }
  InvalidManifest("manifest_major_mismatch", base, [](v1::Manifest& m) { m.set_format_major(2); },
                  Open(kDataLoss, "manifest format_major 2 disagrees with the header", "C-6.2.1"));
  InvalidManifest("manifest_minor_mismatch", base, [](v1::Manifest& m) { m.set_format_minor(1); },
                  Open(kDataLoss, "manifest format_minor disagrees with the header", "C-6.2.2"));
  InvalidManifest("manifest_alignment_mismatch", base, [](v1::Manifest& m) { m.set_alignment(128); },
                  Open(kDataLoss, "manifest alignment disagrees with the header", "C-6.2.5"));
  auto both_alignments = [&](const std::string& name, uint64_t a) {
    Bytes b = Named(base, name);
    Put64(b.data() + 32, a);
    ResealHeader(b);
    b = EditManifest(b, [a](v1::Manifest& m) { m.set_alignment(a); });
    SaveInvalid(name, b, Open(kDataLoss, StrCat("alignment ", a, " is not a power of two in [64, 2^30]"), "C-7.1.2"));
  };
  both_alignments("alignment_not_power_of_two", 96);
  both_alignments("alignment_too_small", 32);
  both_alignments("alignment_too_large", 1ull << 31);
}

void InvalidIntegrity(const Base& base, const Bytes& chunked) {
  Invalid("stream_corrupt", base.bytes, [&](Bytes& b) { b[base.weight_offset + 5] ^= 0x01; },
          ErrorSpec{"verify", kDataLoss, "checksum mismatch", "C-7.4.1"});
  const uint64_t pad = base.weight_offset + 16 + 7;  // inside the padding after "weight"
  if (pad >= base.bias_offset) Die("padding layout");
  Invalid("padding_not_zero", base.bytes, [&](Bytes& b) { b[pad] = 0x5a; },
          ErrorSpec{"verify", kDataLoss, StrCat("padding byte at offset ", pad, " is not zero"), "C-7.2.2, C-7.4.1"});
  InvalidManifest("chunk_checksum", chunked,
                  [](v1::Manifest& m) { m.mutable_tensors(0)->mutable_streams(0)->mutable_chunks(1)->set_xxh3(0x1234); },
                  ErrorSpec{"verify", kDataLoss, "chunk 1 checksum mismatch", "C-7.4.1"});
}

void InvalidStreams(const Base& base) {
  const Bytes& b0 = base.bytes;
  auto weight = [](v1::Manifest& m) { return FindTensor(m, "weight")->mutable_streams(0); };
  InvalidManifest("stream_out_of_bounds", b0,
                  [&](v1::Manifest& m) {
                    // Reaches one byte into the manifest.
                    uint64_t end = FooterOf(b0).manifest_offset + 1;
                    auto* s = FindTensor(m, "bias")->mutable_streams(0);
                    s->set_length(end - s->offset());
                    s->set_raw_length(s->length());
                  },
                  Open(kDataLoss, "lie outside the data section", "C-6.9.5"));
  InvalidManifest("stream_in_header", b0, [&](v1::Manifest& m) { weight(m)->set_offset(0); },
                  Open(kDataLoss, "lie outside the data section", "C-6.9.5"));
  InvalidManifest("stream_offset_overflow", b0,
                  [&](v1::Manifest& m) {
                    auto* s = weight(m);
                    s->set_offset(~0ull - 63);
                    s->set_length(128);
                    s->set_raw_length(128);
                  },
                  Open(kDataLoss, "lie outside the data section", "C-6.9.5, C-13.1.1"));
  InvalidManifest("overlapping_streams", b0,
                  [&](v1::Manifest& m) {
                    // "bias" aliases the first 8 bytes of "weight".
                    auto* s = FindTensor(m, "bias")->mutable_streams(0);
                    s->set_offset(weight(m)->offset());
                  },
                  Open(kDataLoss, "overlap in shard 0", "C-7.2.1"));
  InvalidManifest("misaligned_stream", b0, [&](v1::Manifest& m) { weight(m)->set_offset(weight(m)->offset() + 16); },
                  Open(kDataLoss, "is not a multiple of its alignment 64", "C-6.9.4, C-7.1.1"));
  InvalidManifest("stream_alignment_invalid", b0, [&](v1::Manifest& m) { weight(m)->set_alignment(48); },
                  Open(kDataLoss, "alignment 48 is not a power of two in [64, 2^30]", "C-6.9.3, C-7.1.2"));
  InvalidManifest("stream_shard_missing", b0, [&](v1::Manifest& m) { weight(m)->set_shard(1); },
                  Open(kDataLoss, "shard 1 does not exist", "C-6.9.2"));
  InvalidManifest("compression_out_of_range", b0, [&](v1::Manifest& m) { weight(m)->set_compression(static_cast<v1::Compression>(300)); },
                  Open(kDataLoss, "compression 300 is out of range", "C-6.9.6"));
  // An enum read as protobuf reads it: -1 (a 10-byte varint) and 2^31 (its
  // low 32 bits negative) are negative, so out of 0..255.
  InvalidManifest("compression_negative", b0, [&](v1::Manifest& m) { weight(m)->set_compression(static_cast<v1::Compression>(-1)); },
                  Open(kDataLoss, "compression -1 is out of range", "C-5.2.3"));
  InvalidManifest("dtype_negative", b0,
                  [](v1::Manifest& m) { FindTensor(m, "weight")->set_dtype(static_cast<v1::DType>(INT32_MIN)); },
                  Open(kDataLoss, "dtype -2147483648 is out of range", "C-5.2.3"));
  InvalidManifest("raw_length_mismatch", b0, [&](v1::Manifest& m) { weight(m)->set_raw_length(17); },
                  Open(kDataLoss, "uncompressed but raw_length 17 != length 16", "C-6.9.6"));
  InvalidManifest("duplicate_stream_role", b0,
                  [&](v1::Manifest& m) {
                    auto* t = FindTensor(m, "weight");
                    SetStream(t->add_streams(), "data", 0, 64, {}, 64);
                  },
                  Open(kDataLoss, "two streams have the role \"data\"", "C-6.9.1"));
  InvalidManifest("empty_stream_role", b0, [&](v1::Manifest& m) { weight(m)->set_role(""); },
                  Open(kDataLoss, "role must be 1..64 bytes", "C-6.9.1"));
  InvalidManifest("too_many_streams", b0,
                  [&](v1::Manifest& m) {
                    auto* t = FindTensor(m, "weight");
                    for (int k = 0; k < 64; ++k) SetStream(t->add_streams(), StrCat("extra", k), 0, 64, {}, 64);
                  },
                  Open(kResourceExhausted, "more than 64 streams", "C-6.6.5, C-9.8"));
  // [C-9.20]: the counts of §9 are checked over the whole manifest before any
  // validity rule, so the first tensor's invalid dtype does not decide.
  InvalidManifest("limit_before_validity", b0,
                  [&](v1::Manifest& m) {
                    FindTensor(m, "weight")->set_dtype(v1::DTYPE_UNSPECIFIED);
                    auto* t = FindTensor(m, "bias");
                    for (int k = 0; k < 64; ++k) SetStream(t->add_streams(), StrCat("extra", k), 0, 64, {}, 64);
                  },
                  Open(kResourceExhausted, "more than 64 streams", "C-9.20, C-9.8"));
}

void InvalidChunks(const Bytes& chunked, const Bytes& zstd) {
  auto stream = [](v1::Manifest& m) { return m.mutable_tensors(0)->mutable_streams(0); };
  InvalidManifest("chunk_gap", chunked,
                  [&](v1::Manifest& m) {
                    auto* c = stream(m)->mutable_chunks(1);
                    c->set_stored_offset(c->stored_offset() + 4);
                    c->set_raw_offset(c->raw_offset() + 4);
                    c->set_stored_length(c->stored_length() - 4);
                    c->set_raw_length(c->raw_length() - 4);
                  },
                  Open(kDataLoss, "chunk 1 does not start where chunk 0 ended", "C-6.10.2"));
  InvalidManifest("chunks_short", chunked, [&](v1::Manifest& m) { stream(m)->mutable_chunks()->RemoveLast(); },
                  Open(kDataLoss, "chunks do not cover the stream", "C-6.10.4"));
  InvalidManifest("chunk_rows_short", chunked,
                  [&](v1::Manifest& m) { stream(m)->mutable_chunks(1)->set_row_count(1); },
                  Open(kDataLoss, "chunks do not cover the stream", "C-6.10.4"));
  InvalidManifest("chunk_lengths_differ", chunked,
                  [&](v1::Manifest& m) { stream(m)->mutable_chunks(0)->set_stored_length(40); },
                  Open(kDataLoss, "stored and raw lengths differ in an uncompressed stream", "C-6.10.3"));
  InvalidManifest("zstd_without_feature", zstd, [](v1::Manifest& m) { m.clear_required_features(); },
                  Open(kDataLoss, "does not declare the \"zstd\" feature", "C-6.9.6, C-5.3.8"));
  InvalidManifest("zstd_raw_length_over_limit", zstd,
                  [&](v1::Manifest& m) { stream(m)->set_raw_length((1ull << 48) + 1); },
                  Open(kResourceExhausted, "exceeds 2^48", "C-6.9.6, C-9.15"));
}

void InvalidTensors(const Bytes& b0) {
  auto weight = [](v1::Manifest& m) { return FindTensor(m, "weight"); };
  InvalidManifest("too_many_dims", b0,
                  [&](v1::Manifest& m) {
                    auto* t = weight(m);
                    t->clear_shape();
                    for (uint64_t d : {1, 1, 1, 1, 1, 1, 1, 2, 2}) t->add_shape(d);
                  },
                  Open(kResourceExhausted, "9 dimensions exceed the limit of 8", "C-6.6.2, C-9.6"));
  InvalidManifest("too_many_elements", b0,
                  [&](v1::Manifest& m) {
                    auto* t = weight(m);
                    t->clear_shape();
                    t->add_shape(1ull << 28);
                    t->add_shape(1ull << 29);
                  },
                  Open(kResourceExhausted, "element count exceeds 2^56", "C-6.6.7, C-9.7"));
  InvalidManifest("shape_overflow", b0,
                  [&](v1::Manifest& m) {
                    auto* t = weight(m);
                    t->clear_shape();
                    t->add_shape(1ull << 32);
                    t->add_shape(1ull << 32);
                  },
                  Open(kResourceExhausted, "element count exceeds 2^56", "C-6.6.7, C-13.1.1"));
  InvalidManifest("zero_size_huge_dims", b0,
                  [&](v1::Manifest& m) {
                    // Zero elements, but shape[1:] multiplies past 2^64: a
                    // codec computing the row size would overflow.
                    auto* t = weight(m);
                    t->clear_shape();
                    t->add_shape(0);
                    t->add_shape(1ull << 40);
                    t->add_shape(1ull << 40);
                    auto* s = t->mutable_streams(0);
                    s->set_length(0);
                    s->set_raw_length(0);
                    s->set_xxh3(Xxh3(Bytes{}));
                  },
                  Open(kResourceExhausted, "element count exceeds 2^56", "C-6.6.7"));
  InvalidManifest("dtype_out_of_range", b0, [&](v1::Manifest& m) { weight(m)->set_dtype(static_cast<v1::DType>(300)); },
                  Open(kDataLoss, "dtype 300 is out of range", "C-6.7.2"));
  InvalidManifest("unspecified_dtype", b0, [&](v1::Manifest& m) { weight(m)->set_dtype(v1::DTYPE_UNSPECIFIED); },
                  Open(kDataLoss, "dtype 0 (unspecified) is invalid", "C-6.7.2"));
  InvalidManifest("duplicate_tensor_name", b0, [](v1::Manifest& m) { FindTensor(m, "bias")->set_name("weight"); },
                  Open(kDataLoss, "duplicate tensor name \"weight\"", "C-6.3.3"));
  InvalidManifest("empty_tensor_name", b0, [](v1::Manifest& m) { FindTensor(m, "bias")->set_name(""); },
                  Open(kDataLoss, "empty tensor name", "C-6.3.1"));
  InvalidManifest("tensor_name_nul", b0,
                  [](v1::Manifest& m) { FindTensor(m, "bias")->set_name(std::string("bias\0x", 6)); },
                  Open(kDataLoss, "contains a NUL byte", "C-6.3.2"));
  InvalidManifest("tensor_name_too_long", b0,
                  [](v1::Manifest& m) { FindTensor(m, "bias")->set_name(std::string(4097, 'n')); },
                  Open(kResourceExhausted, "tensor name of 4097 bytes exceeds the limit of 4096", "C-6.3.1, C-9.5"));
  InvalidManifest("invalid_codec_id", b0, [&](v1::Manifest& m) { weight(m)->mutable_codec()->set_id("Q8_0"); },
                  Open(kDataLoss, "invalid codec id \"Q8_0\"", "C-6.8.1"));
  InvalidManifest("empty_codec_id", b0, [&](v1::Manifest& m) { weight(m)->mutable_codec()->clear_id(); },
                  Open(kDataLoss, "invalid codec id \"\"", "C-6.8.1"));
  auto param = [](v1::Tensor* t, const std::string& key, v1::ValueType type, uint64_t u) {
    auto* p = t->mutable_codec()->add_params();
    p->set_key(key);
    p->mutable_value()->set_type(type);
    p->mutable_value()->set_u(u);
  };
  InvalidManifest("codec_param_duplicate", b0,
                  [&](v1::Manifest& m) {
                    param(weight(m), "block", v1::UINT32, 32);
                    param(weight(m), "block", v1::UINT32, 64);
                  },
                  Open(kDataLoss, "codec parameter key \"block\" is empty, too long or repeated", "C-6.8.3"));
  InvalidManifest("codec_param_out_of_range", b0, [&](v1::Manifest& m) { param(weight(m), "bits", v1::UINT8, 300); },
                  Open(kDataLoss, "300 out of range for UINT8", "C-6.4.2, C-6.8.4"));
  InvalidManifest("too_many_codec_params", b0,
                  [&](v1::Manifest& m) {
                    for (int k = 0; k < 65; ++k) param(weight(m), StrCat("p", k), v1::UINT8, 1);
                  },
                  Open(kResourceExhausted, "more than 64 codec parameters", "C-6.8.2, C-9.11"));
  InvalidManifest("tensor_feature_too_long", b0,
                  [&](v1::Manifest& m) { weight(m)->add_required_features(std::string(65, 'f')); },
                  Open(kDataLoss, "feature names must be 1..64 bytes", "C-5.3.1"));
}

void InvalidMetadata(const Bytes& b0) {
  InvalidManifest("duplicate_metadata_key", b0,
                  [](v1::Manifest& m) { AddMeta(m, "general.name", v1::STRING)->set_s("again"); },
                  Open(kDataLoss, "duplicate metadata key \"general.name\"", "C-6.3.3"));
  InvalidManifest("empty_metadata_key", b0, [](v1::Manifest& m) { AddMeta(m, "", v1::BOOLEAN); },
                  Open(kDataLoss, "empty metadata key", "C-6.3.1"));
  InvalidManifest("metadata_uint8_out_of_range", b0, [](v1::Manifest& m) { AddMeta(m, "k", v1::UINT8)->set_u(256); },
                  Open(kDataLoss, "256 out of range for UINT8", "C-6.4.2"));
  InvalidManifest("metadata_int8_out_of_range", b0, [](v1::Manifest& m) { AddMeta(m, "k", v1::INT8)->set_i(-129); },
                  Open(kDataLoss, "-129 out of range for INT8", "C-6.4.2"));
  InvalidManifest("metadata_uint32_out_of_range", b0,
                  [](v1::Manifest& m) { AddMeta(m, "k", v1::UINT32)->set_u(1ull << 32); },
                  Open(kDataLoss, "4294967296 out of range for UINT32", "C-6.4.2"));
  InvalidManifest("metadata_int32_out_of_range", b0,
                  [](v1::Manifest& m) { AddMeta(m, "k", v1::INT32)->set_i(1ll << 31); },
                  Open(kDataLoss, "2147483648 out of range for INT32", "C-6.4.2"));
  InvalidManifest("metadata_array_element_out_of_range", b0,
                  [](v1::Manifest& m) {
                    auto* a = AddMeta(m, "k", v1::ARRAY)->mutable_array();
                    a->set_element_type(v1::UINT16);
                    a->add_uints(1);
                    a->add_uints(70000);
                  },
                  Open(kDataLoss, "array element 70000 out of range for UINT16", "C-6.4.8"));
  InvalidManifest("metadata_unknown_type", b0,
                  [](v1::Manifest& m) { AddMeta(m, "k", static_cast<v1::ValueType>(14)); },
                  Open(kDataLoss, "unknown value type 14", "C-6.4.1"));
  InvalidManifest("metadata_unspecified_type", b0,
                  [](v1::Manifest& m) { AddMeta(m, "k", v1::VALUE_TYPE_UNSPECIFIED); },
                  Open(kDataLoss, "unknown value type 0", "C-6.4.1"));
  InvalidManifest("metadata_array_mixed", b0,
                  [](v1::Manifest& m) {
                    auto* a = AddMeta(m, "k", v1::ARRAY)->mutable_array();
                    a->set_element_type(v1::UINT32);
                    a->add_uints(1);
                    a->add_strings("x");
                  },
                  Open(kDataLoss, "array of UINT32 holds elements of another type", "C-6.4.7"));
  InvalidManifest("metadata_array_wrong_field", b0,
                  [](v1::Manifest& m) {
                    auto* a = AddMeta(m, "k", v1::ARRAY)->mutable_array();
                    a->set_element_type(v1::STRING);
                    a->add_uints(1);
                  },
                  Open(kDataLoss, "array of STRING holds elements of another type", "C-6.4.7"));
  InvalidManifest("metadata_array_unknown_element_type", b0,
                  [](v1::Manifest& m) { AddMeta(m, "k", v1::ARRAY)->mutable_array()->set_element_type(v1::VALUE_TYPE_UNSPECIFIED); },
                  Open(kDataLoss, "unknown array element type 0", "C-6.4.8"));
  InvalidManifest("metadata_nested_too_deep", b0,
                  [](v1::Manifest& m) {
                    auto* a = AddMeta(m, "k", v1::ARRAY)->mutable_array();
                    for (int level = 1; level < 9; ++level) {
                      a->set_element_type(v1::ARRAY);
                      a = a->add_arrays();
                    }
                    a->set_element_type(v1::UINT8);
                    a->add_uints(9);
                  },
                  Open(kResourceExhausted, "arrays nested deeper than 8", "C-6.4.9, C-9.14"));
}

void InvalidFeatures(const Bytes& b0) {
  InvalidManifest("too_many_features", b0,
                  [](v1::Manifest& m) {
                    for (int k = 0; k < 65; ++k) m.add_optional_features(StrCat("x-hint-", k));
                  },
                  Open(kResourceExhausted, "more than 64 features", "C-5.3.1, C-9.12"));
  InvalidManifest("feature_name_too_long", b0,
                  [](v1::Manifest& m) { m.add_required_features(std::string(65, 'f')); },
                  Open(kDataLoss, "feature names must be 1..64 bytes", "C-5.3.1"));
  InvalidManifest("empty_feature", b0, [](v1::Manifest& m) { m.add_optional_features(""); },
                  Open(kDataLoss, "feature names must be 1..64 bytes", "C-5.3.1"));
}

void InvalidShards(const Bytes& b0) {
  auto shards = [](v1::Manifest& m, const std::string& sibling, bool feature) {
    m.add_shards();
    auto* s = m.add_shards();
    s->set_file_name(sibling);
    s->set_size(128);
    s->set_file_id(1);
    if (feature) m.add_required_features("shards");
  };
  InvalidManifest("shard0_named", b0, [](v1::Manifest& m) { m.add_shards()->set_file_name("self.bolt"); },
                  Open(kDataLoss, "shard 0 must be the manifest's own file", "C-8.2.3"));
  InvalidManifest("shard0_size", b0, [](v1::Manifest& m) { m.add_shards()->set_size(12345); },
                  Open(kDataLoss, "shard 0", "C-8.2.3"));
  const std::pair<const char*, const char*> bad_names[] = {
      {"shard_name_parent", "../evil.boltshard"},
      {"shard_name_dotdot", ".."},
      {"shard_name_slash", "sub/evil.boltshard"},
      {"shard_name_absolute", "/etc/passwd"},
      {"shard_name_backslash", "..\\evil.boltshard"},
      {"shard_name_colon", "C:evil.boltshard"},
  };
  for (const auto& [name, sibling] : bad_names) {
    std::string sib = sibling;
    InvalidManifest(name, b0, [&](v1::Manifest& m) { shards(m, sib, true); },
                    Open(kDataLoss, "is not a bare file name", "C-8.2.4"));
  }
  InvalidManifest("shards_without_feature", b0,
                  [&](v1::Manifest& m) { shards(m, "shards_without_feature-1.boltshard", false); },
                  Open(kDataLoss, "does not declare the \"shards\" feature", "C-8.2.6, C-5.3.9"));
  InvalidManifest("shard_missing_file", b0,
                  [&](v1::Manifest& m) { shards(m, "shard_missing_file-1.boltshard", true); },
                  Open(kNotFound, "shard_missing_file-1.boltshard", "C-8.3.1"));
  // Sibling files that exist but are not the ones the manifest names.
  auto sibling_vector = [&](const std::string& name, bool wrong_id, bool wrong_size) {
    Assembly sib;
    sib.Append(Raw(std::vector<float>{7, 8}), 64);
    fmt::Header sh;
    sh.file_id = FileId(name + "-1.boltshard");
    sh.alignment = 64;
    sib.SealHeader(sh);
    WriteFile(g_out / "invalid" / (name + "-1.boltshard"), sib.bytes);
    InvalidManifest(name, b0,
                    [&](v1::Manifest& m) {
                      shards(m, name + "-1.boltshard", true);
                      m.mutable_shards(1)->set_size(sib.bytes.size() + (wrong_size ? 64 : 0));
                      m.mutable_shards(1)->set_file_id(sh.file_id ^ (wrong_id ? 0x100 : 0));
                    },
                    Open(kDataLoss, "is not the shard", "C-8.3.3"));
  };
  sibling_vector("shard_wrong_file_id", true, false);
  sibling_vector("shard_wrong_size", false, true);

  // Two shard entries naming the same sibling: streams of shards 1 and 2
  // could alias the same bytes without the per-shard overlap check seeing it.
  {
    const std::string name = "shard_duplicate_name";
    Assembly sib;
    sib.Append(Raw(std::vector<float>{7, 8}), 64);
    fmt::Header sh;
    sh.file_id = FileId(name + "-1.boltshard");
    sh.alignment = 64;
    sib.SealHeader(sh);
    WriteFile(g_out / "invalid" / (name + "-1.boltshard"), sib.bytes);
    InvalidManifest(name, b0,
                    [&](v1::Manifest& m) {
                      m.add_required_features("shards");
                      m.add_shards();
                      for (int k = 0; k < 2; ++k) {
                        auto* s = m.add_shards();
                        s->set_file_name(name + "-1.boltshard");
                        s->set_size(sib.bytes.size());
                        s->set_file_id(sh.file_id);
                      }
                    },
                    Open(kDataLoss, "shard 2", "C-8.2.5"));
  }
  // A "sibling" that is the manifest file itself (same name, File_Id and
  // size): its data section would include the manifest and the footer.
  {
    const std::string name = "shard_names_self";
    Bytes b = Named(b0, name);
    uint64_t size = b.size();
    Bytes out;
    for (int round = 0; round < 8; ++round) {  // the size is part of the manifest: iterate to a fixed point
      out = EditManifest(b, [&](v1::Manifest& m) {
        m.add_required_features("shards");
        m.add_shards();
        auto* s = m.add_shards();
        s->set_file_name(name + ".bolt");
        s->set_size(size);
        s->set_file_id(FileId(name));
      });
      if (out.size() == size) break;
      size = out.size();
    }
    if (out.size() != size) Die("shard_names_self: no fixed point");
    SaveInvalid(name, out, Open(kDataLoss, "shard 1", "C-8.2.5"));
  }
}

Bytes ZstdFrame(const Bytes& content) {
  Bytes out(ZSTD_compressBound(content.size()));
  size_t n = ZSTD_compress(out.data(), out.size(), content.data(), content.size(), 3);
  if (ZSTD_isError(n)) Die("zstd");
  out.resize(n);
  return out;
}

void InvalidDecode(const Base& base) {
  const Bytes& b0 = base.bytes;
  auto decode = [](const char* cls, std::string message, std::string rule) {
    return ErrorSpec{"decode", cls, std::move(message), std::move(rule)};
  };
  // Stored bytes that are not a zstd frame (checksums correct).
  InvalidManifest("zstd_not_a_frame", b0,
                  [](v1::Manifest& m) {
                    m.add_required_features("zstd");
                    FindTensor(m, "weight")->mutable_streams(0)->set_compression(v1::COMPRESSION_ZSTD);
                  },
                  decode(kDataLoss, "zstd: ", "C-7.3.2"));
  // Frames whose content is shorter / longer than raw_length.
  auto frame_vector = [&](const std::string& name, size_t content_bytes, const std::string& message) {
    Bytes b = Named(b0, name);
    fmt::Footer f = FooterOf(b);
    fmt::Header h = Take(fmt::ParseHeader(absl::MakeConstSpan(b.data(), 64), name), "header");
    v1::Manifest m = ManifestOf(b);
    Assembly a;
    a.bytes.assign(b.begin(), b.begin() + static_cast<ptrdiff_t>(f.manifest_offset));
    // The weight's old bytes become padding, which must be zero.
    std::fill(a.bytes.begin() + static_cast<ptrdiff_t>(base.weight_offset),
              a.bytes.begin() + static_cast<ptrdiff_t>(base.weight_offset + 16), 0);
    Bytes frame = ZstdFrame(Bytes(content_bytes, 0x11));
    uint64_t offset = a.Append(frame, 64);
    m.add_required_features("zstd");
    auto* s = FindTensor(m, "weight")->mutable_streams(0);
    s->set_offset(offset);
    s->set_length(frame.size());
    s->set_xxh3(Xxh3(frame));
    s->set_compression(v1::COMPRESSION_ZSTD);
    s->set_raw_length(16);
    SaveInvalid(name, a.Finish(h, Serialize(m)), decode(kDataLoss, message, "C-7.3.2"));
  };
  frame_vector("zstd_content_short", 12, "zstd data holds 12 bytes, the manifest says 16");
  frame_vector("zstd_content_long", 20, "zstd: ");
  // Records the container accepts but the raw codec does not.
  InvalidManifest("codec_record_length", b0,
                  [&](v1::Manifest& m) {
                    auto* s = FindTensor(m, "weight")->mutable_streams(0);
                    Bytes stored(b0.begin() + static_cast<ptrdiff_t>(base.weight_offset),
                                 b0.begin() + static_cast<ptrdiff_t>(base.weight_offset + 20));
                    s->set_length(20);
                    s->set_raw_length(20);
                    s->set_xxh3(Xxh3(stored));
                  },
                  decode(kDataLoss, "data stream raw length is 20", "C-10.3.1"));
  InvalidManifest("codec_record_role", b0,
                  [](v1::Manifest& m) { FindTensor(m, "weight")->mutable_streams(0)->set_role("payload"); },
                  decode(kDataLoss, "expected \"data\"", "C-10.3.1"));
  InvalidManifest("codec_record_params", b0,
                  [](v1::Manifest& m) {
                    auto* p = FindTensor(m, "weight")->mutable_codec()->add_params();
                    p->set_key("block");
                    p->mutable_value()->set_type(v1::UINT32);
                    p->mutable_value()->set_u(32);
                  },
                  decode(kDataLoss, "takes no parameters", "C-10.3.1"));
  InvalidManifest("codec_record_dtype", b0,
                  [](v1::Manifest& m) { FindTensor(m, "weight")->set_dtype(v1::I32); },
                  decode(kDataLoss, "stores float tensors", "C-10.3.1"));
}

void InvalidChunkRows(const Bytes& chunked) {
  // The container's tiling holds, but chunk 0 is not whole rows (24 bytes of
  // 16-byte rows) as the raw codecs require.
  InvalidManifest("codec_chunk_not_whole_rows", chunked,
                  [&](v1::Manifest& m) {
                    auto* s = m.mutable_tensors(0)->mutable_streams(0);
                    auto* c0 = s->mutable_chunks(0);
                    auto* c1 = s->mutable_chunks(1);
                    c0->set_stored_length(24);
                    c0->set_raw_length(24);
                    c1->set_stored_offset(24);
                    c1->set_raw_offset(24);
                    c1->set_stored_length(40);
                    c1->set_raw_length(40);
                    Bytes stored(chunked.begin() + static_cast<ptrdiff_t>(s->offset()),
                                 chunked.begin() + static_cast<ptrdiff_t>(s->offset() + s->length()));
                    c0->set_xxh3(Xxh3(Bytes(stored.begin(), stored.begin() + 24)));
                    c1->set_xxh3(Xxh3(Bytes(stored.begin() + 24, stored.end())));
                  },
                  ErrorSpec{"decode", kDataLoss, "is not whole rows", "C-10.3.1"});
}

// Format 1.1: views (container.md §15). Each vector edits the valid views
// file so that exactly one rule breaks.
void InvalidViews() {
  std::vector<Decodes> unused;
  const Bytes b0 = ViewsFile("views_base", &unused);
  const v1::Manifest m0 = ManifestOf(b0);
  const v1::ByteRange draft_range = m0.views(0).ranges(0);
  auto add_view = [&](v1::Manifest& m, const std::string& name) {
    auto* v = m.add_views();
    v->set_name(name);
    *v->add_ranges() = draft_range;  // reads what draft reads: the range rule holds
  };
  // §15.2: the stream lists.
  // The lists are edited on "norm", which every view reads either way (the
  // layout and ranges stay right, and bf16-spec's own rule on its streams'
  // lists is not involved).
  InvalidManifest("view_undeclared", b0,
                  [](v1::Manifest& m) {
                    auto* s = FindTensor(m, "norm")->mutable_streams(0);
                    s->add_views("full");
                    s->add_views("draft");
                    s->add_views("x-other");
                  },
                  Open(kDataLoss, "names view \"x-other\", which the manifest does not declare", "C-15.2.1"));
  InvalidManifest("view_listed_twice", b0,
                  [](v1::Manifest& m) {
                    auto* s = FindTensor(m, "norm")->mutable_streams(0);
                    s->add_views("full");
                    s->add_views("draft");
                    s->add_views("draft");
                  },
                  Open(kDataLoss, "lists view \"draft\" twice", "C-15.2.2"));
  InvalidManifest("view_list_without_full", b0,
                  [](v1::Manifest& m) { FindTensor(m, "norm")->mutable_streams(0)->add_views("draft"); },
                  Open(kDataLoss, "lists views without \"full\"", "C-15.2.3"));
  // §15.1, §15.3: the declarations.
  InvalidManifest("view_declared_full", b0,
                  [&](v1::Manifest& m) {
                    auto* v = m.add_views();
                    v->set_name("full");
                    uint64_t begin = ~0ull, end = 0;
                    for (const auto& t : m.tensors())
                      for (const auto& st : t.streams()) {
                        begin = std::min<uint64_t>(begin, st.offset());
                        end = std::max<uint64_t>(end, st.offset() + st.length());
                      }
                    auto* r = v->add_ranges();
                    r->set_offset(begin);
                    r->set_length(end - begin);
                  },
                  Open(kDataLoss, "the \"full\" view is implicit and must not be declared", "C-15.1.2, C-15.3.2"));
  InvalidManifest("view_declared_twice", b0, [&](v1::Manifest& m) { add_view(m, "draft"); },
                  Open(kDataLoss, "duplicate view \"draft\"", "C-15.3.2"));
  InvalidManifest("view_name_upper_case", b0, [&](v1::Manifest& m) { add_view(m, "Draft"); },
                  Open(kDataLoss, "view name \"Draft\" is not 1..64 bytes of [a-z0-9_-]", "C-15.1.1, C-15.3.2"));
  InvalidManifest("view_name_leading_dash", b0, [&](v1::Manifest& m) { add_view(m, "-draft"); },
                  Open(kDataLoss, "view name \"-draft\" is not 1..64 bytes of [a-z0-9_-]", "C-15.1.1, C-15.3.2"));
  InvalidManifest("view_name_too_long", b0, [&](v1::Manifest& m) { add_view(m, std::string(65, 'd')); },
                  Open(kDataLoss, StrCat("view name \"", std::string(65, 'd'), "\" is not 1..64 bytes"),
                       "C-15.1.1, C-15.3.2"));
  InvalidManifest("too_many_views", b0,
                  [&](v1::Manifest& m) {
                    for (int k = 0; k < 64; ++k) add_view(m, StrCat("v", k));
                  },
                  Open(kResourceExhausted, "65 views exceed the limit of 64", "C-15.3.1, C-9.16"));
  // §15.4: the range of "draft" one byte short.
  InvalidManifest("view_range_mismatch", b0,
                  [](v1::Manifest& m) {
                    auto* r = m.mutable_views(0)->mutable_ranges(0);
                    r->set_length(r->length() - 1);
                  },
                  Open(kDataLoss, "view \"draft\": its ranges do not match its streams", "C-15.4.2"));
  // §15.4: the verification stream (only "full" reads it) moved before the
  // streams "draft" reads; the draft range still spans exactly those.
  {
    const std::string name = "view_layout_full_first";
    const Bytes b = Named(b0, name);
    fmt::Header h = Take(fmt::ParseHeader(absl::MakeConstSpan(b.data(), 64), name), "header");
    v1::Manifest m = ManifestOf(b);
    auto stored = [&](const v1::Stream& st) {
      return Bytes(b.begin() + static_cast<ptrdiff_t>(st.offset()),
                   b.begin() + static_cast<ptrdiff_t>(st.offset() + st.length()));
    };
    v1::Stream* spec = FindTensor(m, "weight")->mutable_streams(0);
    v1::Stream* verif = FindTensor(m, "weight")->mutable_streams(1);
    v1::Stream* norm = FindTensor(m, "norm")->mutable_streams(0);
    const Bytes spec_b = stored(*spec), verif_b = stored(*verif), norm_b = stored(*norm);
    Assembly a;
    verif->set_offset(a.Append(verif_b, 64));
    spec->set_offset(a.Append(spec_b, 64));
    norm->set_offset(a.Append(norm_b, 64));
    auto* r = m.mutable_views(0)->mutable_ranges(0);
    r->set_offset(spec->offset());
    r->set_length(norm->offset() + norm->length() - spec->offset());
    SaveInvalid(name, a.Finish(h, Serialize(m)),
                Open(kDataLoss,
                     "view \"draft\": a stream of tensor \"weight\" it does not read lies before a stream of tensor",
                     "C-15.4.1"));
  }
}

// Format 1.2: elastic manifest version 2 (groups, segments; spec/elastic.md
// §2). Each vector edits the valid elastic_groups file so that exactly one
// rule breaks.
void InvalidElasticV2() {
  std::vector<TensorSpec> unused;
  const Bytes b0 = GroupedFile("elastic_groups_base", &unused);
  auto seg = [](v1::Manifest& m, int i) {
    return m.mutable_elastic()->mutable_bindings(1)->mutable_segmented(0)->mutable_segments(i);
  };
  InvalidManifest("elastic_v2_features_in_version_1", b0, [](v1::Manifest& m) { m.mutable_elastic()->set_version(1); },
                  Open(kDataLoss, "need version 2", "E-2.1"));
  InvalidManifest("elastic_groups_not_dividing_parent", b0,
                  [](v1::Manifest& m) { m.mutable_elastic()->mutable_axes(0)->set_groups(3); },
                  Open(kDataLoss, "axis \"heads\": parent size 4 in layer 0 is not divisible by its 3 groups",
                       "E-2.2"));
  InvalidManifest("elastic_count_not_divisible_by_groups", b0,
                  [](v1::Manifest& m) { m.mutable_elastic()->mutable_budgets(0)->mutable_sizes(0)->set_counts(0, 3); },
                  Open(kDataLoss, "budget \"half\": axis \"heads\" in layer 0 keeps 3 units, not divisible by its 2 groups",
                       "E-2.5"));
  InvalidManifest("elastic_segments_sum_mismatch", b0, [&](v1::Manifest& m) { seg(m, 2)->set_fixed_elems(3); },
                  Open(kDataLoss, "tensor \"blk.0.ffn_gate_up.weight\": dimension 0 is 6 but its segments add up to 7",
                       "E-2.4"));
  InvalidManifest("elastic_segment_axis_and_fixed", b0, [&](v1::Manifest& m) { seg(m, 0)->set_fixed_elems(1); },
                  Open(kDataLoss, "dim 0 segment 0 must set exactly one of axis and fixed_elems", "E-2.3"));
  InvalidManifest("elastic_segment_unknown_axis", b0, [&](v1::Manifest& m) { seg(m, 1)->set_axis("ffn2"); },
                  Open(kDataLoss, "binding \"blk.{L}.ffn_gate_up.weight\": unknown axis \"ffn2\"", "E-2.3"));
  InvalidManifest("elastic_segmented_dim_not_marked", b0,
                  [](v1::Manifest& m) { m.mutable_elastic()->mutable_bindings(1)->set_dims(0, "-"); },
                  Open(kDataLoss, "segmented dim 0 is not a dimension marked \"+\"", "E-2.3"));
  // A grouped axis on the innermost dimension of a q8_0 tensor: 2 groups of
  // 64 elements; keeping 32 per group is whole blocks, 16 per group splits.
  {
    std::vector<float> v(2 * 128);
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(static_cast<int>(i % 13) - 6) / 8.0f;
    const std::vector<uint64_t> shape = {2, 128};
    const Bytes src_bytes = Raw(v);
    bp::ElasticManifest e;
    e.version = 2;
    bp::ElasticAxis hidden;
    hidden.name = "hidden";
    hidden.scope = bp::ElasticScope::kGlobal;
    hidden.parent = {128};
    hidden.groups = 2;
    e.axes.push_back(hidden);
    e.bindings.push_back({"o_proj.weight", {"-", "hidden"}, {}});
    e.budgets.push_back({"half", {}, {{"hidden", {64}}}, ""});
    Bytes q = WriteQ8Elastic("elastic_groups_q8_0_base", "o_proj.weight", shape, src_bytes, e);
    InvalidManifest("elastic_grouped_cut_splits_block", q,
                    [](v1::Manifest& m) { m.mutable_elastic()->mutable_budgets(0)->mutable_sizes(0)->set_counts(0, 32); },
                    Open(kDataLoss,
                         "budget \"half\": tensor \"o_proj.weight\" keeps 16 elements at the start of each of 2 groups",
                         "E-2.6"));
  }
}

// Format 1.2: product dimensions (elastic.md §1, §2). Each vector edits the
// valid elastic_product file so that exactly one rule breaks.
void InvalidElasticProduct() {
  std::vector<TensorSpec> unused;
  const Bytes b0 = ProductFile("elastic_product_base", &unused);
  auto out_dims = [](v1::Manifest& m, const std::string& entry) {
    m.mutable_elastic()->mutable_bindings(0)->set_dims(1, entry);
  };
  InvalidManifest("elastic_product_in_version_1", b0, [](v1::Manifest& m) { m.mutable_elastic()->set_version(1); },
                  Open(kDataLoss,
                       "version 1 but binding \"blk.{L}.ssm_out.weight\" has the product dims entry \"heads*ch\", "
                       "which needs version 2",
                       "E-2.1"));
  InvalidManifest("elastic_product_unknown_axis", b0, [&](v1::Manifest& m) { out_dims(m, "heads*ch2"); },
                  Open(kDataLoss, "binding \"blk.{L}.ssm_out.weight\": unknown axis \"ch2\"", "E-2.3"));
  InvalidManifest("elastic_product_same_axis", b0, [&](v1::Manifest& m) { out_dims(m, "ch*ch"); },
                  Open(kDataLoss, "binding \"blk.{L}.ssm_out.weight\": product \"ch*ch\" names axis \"ch\" twice",
                       "E-2.3"));
  InvalidManifest("elastic_product_three_axes", b0, [&](v1::Manifest& m) { out_dims(m, "heads*ch*heads"); },
                  Open(kDataLoss,
                       "binding \"blk.{L}.ssm_out.weight\": product \"heads*ch*heads\" has more than two axes",
                       "E-2.3"));
  InvalidManifest("elastic_product_scopes_differ", b0,
                  [&](v1::Manifest& m) {
                    // A global axis of the same size: only the scopes are wrong.
                    auto* g = m.mutable_elastic()->add_axes();
                    g->set_name("embd");
                    g->set_scope(v1::ELASTIC_SCOPE_GLOBAL);
                    g->set_granularity(1);
                    g->set_unit_elems(1);
                    g->add_parent(2);
                    out_dims(m, "heads*embd");
                  },
                  Open(kDataLoss,
                       "binding \"blk.{L}.ssm_out.weight\": product \"heads*embd\" multiplies axes of different scopes",
                       "E-2.3"));
  InvalidManifest("elastic_product_size_mismatch", b0,
                  [](v1::Manifest& m) { m.mutable_elastic()->mutable_axes(1)->set_unit_elems(2); },
                  Open(kDataLoss,
                       "tensor \"blk.0.ssm_out.weight\": dimension 1 is 4 but product \"heads*ch\" has 2 units of 1 "
                       "x 2 units of 2 = 8 elements there",
                       "E-2.4"));
  InvalidManifest("elastic_product_overflow", b0,
                  [](v1::Manifest& m) {
                    m.mutable_elastic()->mutable_axes(0)->set_unit_elems(uint64_t{1} << 32);
                    m.mutable_elastic()->mutable_axes(1)->set_unit_elems(uint64_t{1} << 32);
                  },
                  Open(kDataLoss,
                       "tensor \"blk.0.ssm_out.weight\": dimension 1: product \"heads*ch\" spans more than 2^64 "
                       "elements",
                       "E-2.4"));
  InvalidManifest("elastic_product_layer_lacks_axis", b0,
                  [](v1::Manifest& m) {
                    m.mutable_elastic()->mutable_axes(1)->set_parent(0, 0);
                    for (auto& b : *m.mutable_elastic()->mutable_budgets()) b.mutable_sizes(1)->set_counts(0, 0);
                  },
                  Open(kDataLoss,
                       "tensor \"blk.0.ssm_out.weight\": dimension 1 is the product \"heads*ch\" but this layer "
                       "lacks axis \"ch\"",
                       "E-2.4"));
  // A product on the innermost dimension of a q8_0 tensor: 2 heads of 64
  // channels; 32 channels of a head are whole blocks, 16 split one.
  {
    std::vector<float> v(2 * 128);
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(static_cast<int>(i % 11) - 5) / 8.0f;
    const std::vector<uint64_t> shape = {2, 128};
    const Bytes src_bytes = Raw(v);
    bp::ElasticManifest e;
    e.version = 2;
    for (auto [name, parent] : {std::pair<const char*, uint64_t>{"heads", 2}, {"ch", 64}}) {
      bp::ElasticAxis a;
      a.name = name;
      a.scope = bp::ElasticScope::kGlobal;
      a.parent = {parent};
      e.axes.push_back(a);
    }
    e.bindings.push_back({"ssm_out.weight", {"-", "heads*ch"}, {}});
    e.budgets.push_back({"half", {}, {{"heads", {1}}, {"ch", {32}}}, ""});
    Bytes q = WriteQ8Elastic("elastic_product_q8_0_base", "ssm_out.weight", shape, src_bytes, e);
    InvalidManifest("elastic_product_cut_splits_block", q,
                    [](v1::Manifest& m) { m.mutable_elastic()->mutable_budgets(0)->mutable_sizes(1)->set_counts(0, 16); },
                    Open(kDataLoss,
                         "budget \"half\": tensor \"ssm_out.weight\" keeps elements [0, 16) of its innermost "
                         "dimension (product \"heads*ch\"), which splits its codec's blocks of 32 elements",
                         "E-2.6"));
  }
}

// Format 1.2: line-prefix checksums (container.md §6.10.1). Each vector
// edits a small valid file so that exactly one rule breaks: one f32 tensor
// [4, 20] (lines of 80 bytes, 2 chunks of 2 rows) whose innermost dimension
// two budgets cut to 10 and 5 elements: prefix_bytes {20, 40}.
void InvalidLinePrefixes() {
  std::vector<float> v(4 * 20);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(static_cast<int>(i % 23) - 11) / 4.0f;
  TensorSpec t = F32Tensor("ffn_down.weight", {4, 20}, v);
  bp::ElasticManifest e;
  bp::ElasticAxis ffn;
  ffn.name = "ffn";
  ffn.scope = bp::ElasticScope::kGlobal;
  ffn.parent = {20};
  e.axes.push_back(ffn);
  e.bindings.push_back({"ffn_down.weight", {"-", "ffn"}, {}});
  e.budgets.push_back({"half", {}, {{"ffn", {10}}}, ""});
  e.budgets.push_back({"quarter", {}, {{"ffn", {5}}}, "half"});
  bp::WriterOptions options = Options();
  options.line_prefixes = true;
  const Bytes b0 = WriteWith("line_prefixes_base", options, [&](bp::Writer& w) {
    Check(w.SetElastic(e), "elastic line prefixes base");
    Add(w, t, [](bp::EncodedTensor& enc) { SetRowChunks(enc, 4, 2); });
  });
  CheckLinePrefixes("line_prefixes_base", b0, {{"ffn_down.weight", {80, {20, 40}}}});
  auto stream = [](v1::Manifest& m) { return m.mutable_tensors(0)->mutable_streams(0); };
  // Gives the stream `prefixes` (and `line` bytes per line) with every
  // chunk's checksums computed for them, so that only the rule under test
  // breaks.
  auto set_prefixes = [&](v1::Manifest& m, uint64_t line, const std::vector<uint64_t>& prefixes) {
    v1::Stream* s = stream(m);
    s->set_line_bytes(line);
    s->clear_prefix_bytes();
    for (uint64_t p : prefixes) s->add_prefix_bytes(p);
    for (int k = 0; k < s->chunks_size(); ++k) {
      v1::Chunk* c = s->mutable_chunks(k);
      c->clear_prefix_xxh3();
      const Bytes bytes = ChunkBytes(b0, *s, k);
      for (uint64_t p : prefixes) c->add_prefix_xxh3(RefLinePrefixXxh3(bytes, line, p));
    }
  };
  const std::string need = "prefix_bytes need an uncompressed stream with chunks and a line_bytes > 0";
  // Rule 1: no prefix_bytes, then no line_bytes and no chunk checksums.
  InvalidManifest("line_prefix_line_bytes_alone", b0, [&](v1::Manifest& m) { set_prefixes(m, 80, {}); },
                  Open(kDataLoss, "stream \"data\": line_bytes without prefix_bytes", "C-6.10.1.1"));
  InvalidManifest("line_prefix_checksums_alone", b0,
                  [&](v1::Manifest& m) {
                    stream(m)->set_line_bytes(0);
                    stream(m)->clear_prefix_bytes();
                  },
                  Open(kDataLoss, "chunk 0 has prefix checksums but the stream no prefix_bytes", "C-6.10.1.1"));
  // Rule 2: 65 prefixes 1..65 of an 80-byte line (each rule else holds).
  InvalidManifest("too_many_line_prefixes", b0,
                  [&](v1::Manifest& m) {
                    std::vector<uint64_t> prefixes;
                    for (uint64_t p = 1; p <= fmt::kMaxLinePrefixes + 1; ++p) prefixes.push_back(p);
                    set_prefixes(m, 80, prefixes);
                  },
                  Open(kResourceExhausted, "more than 64 prefix_bytes", "C-6.10.1.2, C-9.10"));
  // Rule 3: an uncompressed stream with chunks and line_bytes > 0. The
  // compressed one is real zstd (a frame per chunk, "zstd" declared); its
  // checksums stay those of the uncompressed lines.
  {
    const std::string name = "line_prefix_compressed";
    const Bytes b = Named(b0, name);
    const fmt::Footer f = FooterOf(b);
    const fmt::Header h = Take(fmt::ParseHeader(absl::MakeConstSpan(b.data(), 64), name), "header");
    v1::Manifest m = ManifestOf(b);
    v1::Stream* s = stream(m);
    Bytes packed;
    for (int k = 0; k < s->chunks_size(); ++k) {
      const Bytes frame = ZstdFrame(ChunkBytes(b, *s, k));
      v1::Chunk* c = s->mutable_chunks(k);
      c->set_stored_offset(packed.size());
      c->set_stored_length(frame.size());
      c->set_xxh3(Xxh3(frame));
      packed.insert(packed.end(), frame.begin(), frame.end());
    }
    Assembly a;
    a.bytes.assign(b.begin(), b.begin() + static_cast<ptrdiff_t>(f.manifest_offset));
    // The uncompressed bytes become padding, which must be zero.
    std::fill(a.bytes.begin() + static_cast<ptrdiff_t>(s->offset()),
              a.bytes.begin() + static_cast<ptrdiff_t>(s->offset() + s->length()), 0);
    s->set_offset(a.Append(packed, 64));
    s->set_length(packed.size());
    s->set_xxh3(Xxh3(packed));
    s->set_compression(v1::COMPRESSION_ZSTD);
    m.add_required_features("zstd");
    SaveInvalid(name, a.Finish(h, Serialize(m)), Open(kDataLoss, need, "C-6.10.1.3"));
  }
  InvalidManifest("line_prefix_without_chunks", b0, [&](v1::Manifest& m) { stream(m)->clear_chunks(); },
                  Open(kDataLoss, need, "C-6.10.1.3"));
  InvalidManifest("line_prefix_line_bytes_zero", b0, [&](v1::Manifest& m) { stream(m)->set_line_bytes(0); },
                  Open(kDataLoss, need, "C-6.10.1.3"));
  // Rule 4: strictly ascending, each inside (0, line_bytes).
  InvalidManifest("line_prefix_not_ascending", b0, [&](v1::Manifest& m) { set_prefixes(m, 80, {40, 20}); },
                  Open(kDataLoss, "prefix_bytes must ascend strictly inside (0, line_bytes 80); found 20 after 40",
                       "C-6.10.1.4"));
  InvalidManifest("line_prefix_repeated", b0, [&](v1::Manifest& m) { set_prefixes(m, 80, {20, 20}); },
                  Open(kDataLoss, "found 20 after 20", "C-6.10.1.4"));
  InvalidManifest("line_prefix_zero", b0, [&](v1::Manifest& m) { set_prefixes(m, 80, {0, 40}); },
                  Open(kDataLoss, "found 0 after 0", "C-6.10.1.4"));
  InvalidManifest("line_prefix_whole_line", b0, [&](v1::Manifest& m) { set_prefixes(m, 80, {20, 80}); },
                  Open(kDataLoss, "found 80 after 20", "C-6.10.1.4"));
  // Rule 5: lines of 60 bytes do not tile a 160-byte chunk.
  InvalidManifest("line_prefix_chunk_not_whole_lines", b0, [&](v1::Manifest& m) { set_prefixes(m, 60, {20, 40}); },
                  Open(kDataLoss, "chunk 0 (160 bytes) is not whole lines of 60", "C-6.10.1.5"));
  // Rule 6: one checksum per prefix in every chunk.
  InvalidManifest("line_prefix_checksum_count", b0,
                  [&](v1::Manifest& m) { stream(m)->mutable_chunks(1)->mutable_prefix_xxh3()->RemoveLast(); },
                  Open(kDataLoss, "chunk 1 has 1 prefix checksums, the stream 2 prefixes", "C-6.10.1.6"));
  // Verification (§7.4): a prefix checksum that is not that of the bytes.
  InvalidManifest("line_prefix_checksum_mismatch", b0,
                  [&](v1::Manifest& m) {
                    v1::Chunk* c = stream(m)->mutable_chunks(1);
                    c->set_prefix_xxh3(1, c->prefix_xxh3(1) ^ 1);
                  },
                  ErrorSpec{"verify", kDataLoss,
                            "chunk 1 line-prefix checksum mismatch (prefix 1: the first 40 bytes of each 80-byte line)",
                            "C-7.4.1, C-6.10.1.9"});
}

// Format 1.1: the elastic manifest (spec/elastic.md §2). Each vector edits
// the valid elastic file so that exactly one rule breaks.
void InvalidElastic() {
  std::vector<TensorSpec> unused;
  const Bytes b0 = ElasticFile("elastic_base", &unused);
  auto budget = [](v1::Manifest& m, int i) { return m.mutable_elastic()->mutable_budgets(i); };
  InvalidManifest("elastic_binding_unknown_axis", b0,
                  [](v1::Manifest& m) { m.mutable_elastic()->mutable_bindings(0)->set_dims(1, "ffn2"); },
                  Open(kDataLoss, "binding \"blk.{L}.ffn_up.weight\": unknown axis \"ffn2\"", "E-2.3"));
  InvalidManifest("elastic_binding_matches_nothing", b0,
                  [](v1::Manifest& m) {
                    auto* b = m.mutable_elastic()->add_bindings();
                    b->set_tensor("blk.{L}.ffn_down.weight");
                    b->add_dims("-");
                    b->add_dims("ffn");
                  },
                  Open(kDataLoss, "binding \"blk.{L}.ffn_down.weight\" matches no tensor", "E-2.4"));
  // Parent 6 (a multiple of the granularity, above every budget's counts)
  // where the tensors have 4 rows.
  InvalidManifest("elastic_dimension_mismatch", b0,
                  [](v1::Manifest& m) { m.mutable_elastic()->mutable_axes(0)->set_parent(1, 6); },
                  Open(kDataLoss, "tensor \"blk.1.ffn_up.weight\": dimension 0 is 4 but axis \"ffn\" has 6 units of 1 there",
                       "E-2.4"));
  InvalidManifest("elastic_layer_keep_length", b0,
                  [&](v1::Manifest& m) { budget(m, 1)->mutable_layer_keep()->RemoveLast(); },
                  Open(kDataLoss, "budget \"small\": layer_keep has 1 entries, layer_count is 2", "E-2.5"));
  // 6 of 4: a multiple of the granularity 2; "small" (2) stays nested.
  InvalidManifest("elastic_count_over_parent", b0,
                  [&](v1::Manifest& m) { budget(m, 0)->mutable_sizes(0)->set_counts(0, 6); },
                  Open(kDataLoss, "budget \"half\": axis \"ffn\" in layer 0 keeps 6 of 4 units", "E-2.5"));
  InvalidManifest("elastic_count_off_granularity", b0,
                  [&](v1::Manifest& m) { budget(m, 0)->mutable_sizes(0)->set_counts(0, 3); },
                  Open(kDataLoss, "budget \"half\": axis \"ffn\" in layer 0 keeps 3 units, not a multiple of its granularity 2",
                       "E-2.5"));
  // "small" keeps all 4 units of layer 0 (its parent size), "half" only 2.
  InvalidManifest("elastic_not_nested", b0,
                  [&](v1::Manifest& m) { budget(m, 1)->mutable_sizes(0)->set_counts(0, 4); },
                  Open(kDataLoss,
                       "budget \"small\": axis \"ffn\" in layer 0 keeps 4 units, more than \"half\" (2), so it is not nested in it",
                       "E-2.5"));
  // Block alignment: a q8_0 tensor (blocks of 32 along its innermost
  // dimension) bound to a global axis of granularity 16; a budget of 32 of
  // 64 is valid, 16 of 64 splits a block.
  {
    std::vector<float> v(2 * 64);
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(static_cast<int>(i % 17) - 8) / 8.0f;
    const std::vector<uint64_t> shape = {2, 64};
    const Bytes src_bytes = Raw(v);
    bp::ElasticManifest e;
    bp::ElasticAxis hidden;
    hidden.name = "hidden";
    hidden.scope = bp::ElasticScope::kGlobal;
    hidden.granularity = 16;
    hidden.parent = {64};
    e.axes.push_back(hidden);
    e.bindings.push_back({"ffn_down.weight", {"-", "hidden"}});
    e.budgets.push_back({"half", {}, {{"hidden", {32}}}, ""});
    Bytes q = WriteQ8Elastic("elastic_q8_0_base", "ffn_down.weight", shape, src_bytes, e);
    InvalidManifest("elastic_cut_splits_block", q,
                    [&](v1::Manifest& m) { budget(m, 0)->mutable_sizes(0)->set_counts(0, 16); },
                    Open(kDataLoss,
                         "budget \"half\": tensor \"ffn_down.weight\" keeps 16 of 64 elements of its innermost dimension "
                         "(axis \"hidden\"), not a multiple of its codec's block of 32 elements",
                         "E-2.6"));
  }
  InvalidElasticV2();
  InvalidElasticProduct();
}

void InvalidParts() {
  // A part file that exists (a .boltshard name here, so that the vector
  // list holds only shard 0), and shard 0 naming it with an edited entry.
  TensorSpec a = F32Tensor("a", {2}, {1.0f, 2.0f});
  auto vector = [&](const std::string& name, const std::function<void(v1::Manifest&, Bytes&)>& edit,
                    const ErrorSpec& e) {
    const std::string file = name + "-1.boltshard";
    Bytes part = PartFile(file, 1, 1, 1, {a}, {0});
    Bytes merged = MergedShard0(name, {{file, part}}, {{0, 0}});
    v1::Manifest m = ManifestOf(merged);
    edit(m, part);
    WriteFile(g_out / "invalid" / file, part);
    SaveInvalid(name, Rewrap(merged, m), e);
  };
  vector("part_shards_without_feature", [](v1::Manifest& m, Bytes&) { m.mutable_required_features()->RemoveLast(); },
         Open(kDataLoss, "does not declare the \"part_shards\" feature", "C-8.5.1"));
  vector("part_data_end_too_large",
         [](v1::Manifest& m, Bytes&) { m.mutable_shards(1)->set_data_end(m.shards(1).size() - 63); },
         Open(kDataLoss, "leaves no room for the part's manifest and footer", "C-8.5.2"));
  vector("part_data_end_mismatch",
         [](v1::Manifest& m, Bytes&) { m.mutable_shards(1)->set_data_end(m.shards(1).data_end() - 4); },
         Open(kDataLoss, "the part's manifest starts at", "C-8.5.4"));
  vector("part_footer_mismatch",
         [](v1::Manifest&, Bytes& part) {
           Put64(part.data() + part.size() - 64 + 32, FileId("another write"));  // the footer's File_Id
           ResealFooter(part);
         },
         Open(kDataLoss, "is not the part the manifest names", "C-8.5.3"));
  vector("part_manifest_checksum",
         [](v1::Manifest&, Bytes& part) { part[FooterOf(part).manifest_offset] ^= 0x01; },
         Open(kDataLoss, "the part's manifest checksum mismatch", "C-8.5.5"));
}

void InvalidVectors() {
  std::vector<TensorSpec> ts;
  Base base;
  base.bytes = SmallFile("base", &ts);
  {
    v1::Manifest m = ManifestOf(base.bytes);
    base.weight_offset = FindTensor(m, "weight")->streams(0).offset();
    base.bias_offset = FindTensor(m, "bias")->streams(0).offset();
  }
  // A chunked uncompressed stream (4 rows of 16 bytes, 2 chunks).
  TensorSpec rows = F32Tensor("rows", {4, 4}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16});
  Bytes chunked = WriteWith("chunked", Options(), [&](bp::Writer& w) {
    Add(w, rows, [](bp::EncodedTensor& e) { SetRowChunks(e, 4, 2); });
  });
  // The same, compressible and written with zstd.
  TensorSpec same = F32Tensor("rows", {4, 4}, std::vector<float>(16, 1.0f));
  Bytes zstd = WriteWith("chunked_zstd", Options(64, 3), [&](bp::Writer& w) {
    Add(w, same, [](bp::EncodedTensor& e) { SetRowChunks(e, 4, 2); });
  });
  if (ManifestOf(zstd).tensors(0).streams(0).compression() != v1::COMPRESSION_ZSTD) Die("zstd base not compressed");

  InvalidHeaderAndFooter(base.bytes);
  InvalidIntegrity(base, chunked);
  InvalidStreams(base);
  InvalidChunks(chunked, zstd);
  InvalidTensors(base.bytes);
  InvalidMetadata(base.bytes);
  InvalidFeatures(base.bytes);
  InvalidShards(base.bytes);
  InvalidDecode(base);
  InvalidChunkRows(chunked);
  InvalidViews();
  InvalidElastic();
  InvalidLinePrefixes();
  InvalidParts();
}

// Format 1.4: a flat binding (elastic.md §1 "Flat bindings"): llama.cpp's
// grouped ssm_norm [n_group = 2][4] bound as "heads*ch", heads (4, in 2
// groups) x ch (2 channels). "half" keeps head 0 of each group, both
// channels: flat runs [0, 2) and [4, 6), so each row keeps columns [0, 2)
// and the slice is [2][2]; "quarter" (nested) also channel 0 only: flat
// [0, 1) and [4, 1), columns [0, 1).
bp::ElasticManifest FlatElastic() {
  bp::ElasticManifest e;
  e.version = 3;
  e.layer_count = 1;
  e.layer_pattern = "blk.{L}.";
  bp::ElasticAxis heads;
  heads.name = "heads";
  heads.scope = bp::ElasticScope::kLayer;
  heads.parent = {4};
  heads.groups = 2;
  e.axes.push_back(heads);
  bp::ElasticAxis ch;
  ch.name = "ch";
  ch.scope = bp::ElasticScope::kLayer;
  ch.parent = {2};
  e.axes.push_back(ch);
  e.bindings.push_back({"blk.{L}.ssm_norm.weight", {"heads*ch"}, {}, true});
  e.bindings.push_back({"blk.{L}.ssm_a", {"heads"}, {}});
  e.budgets.push_back({"half", {true}, {{"heads", {2}}, {"ch", {2}}}, ""});
  e.budgets.push_back({"quarter", {true}, {{"heads", {2}}, {"ch", {1}}}, "half"});
  return e;
}

Bytes FlatFile(const std::string& name, std::vector<TensorSpec>* ts) {
  *ts = {F32Tensor("blk.0.ssm_norm.weight", {2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}),
         F32Tensor("blk.0.ssm_a", {4}, {-1, -2, -3, -4})};
  return ElasticFile(name, *ts, FlatElastic(), 4, 3, "elastic flat");
}

// The runs of every tensor per budget, from the definition: the flat
// tensor's as its own two dimensions.
Json FlatBudgetRuns() {
  auto dim = [](std::initializer_list<std::pair<uint64_t, uint64_t>> runs) {
    Json a = Json::Arr();
    for (auto [start, length] : runs) a.Push(Json::Arr().Push(U(start)).Push(U(length)));
    return a;
  };
  auto tensor = [](const std::string& name, std::vector<Json> dims) {
    Json runs = Json::Arr();
    for (auto& d : dims) runs.Push(std::move(d));
    return Json::Obj().Add("tensor", S(name)).Add("runs", runs);
  };
  Json half = Json::Arr()
                  .Push(tensor("blk.0.ssm_norm.weight", {dim({{0, 2}}), dim({{0, 2}})}))
                  .Push(tensor("blk.0.ssm_a", {dim({{0, 1}, {2, 1}})}));
  Json quarter = Json::Arr()
                     .Push(tensor("blk.0.ssm_norm.weight", {dim({{0, 2}}), dim({{0, 1}})}))
                     .Push(tensor("blk.0.ssm_a", {dim({{0, 1}, {2, 1}})}));
  return Json::Arr()
      .Push(Json::Obj().Add("budget", S("half")).Add("tensors", half))
      .Push(Json::Obj().Add("budget", S("quarter")).Add("tensors", quarter));
}

void ValidElasticFlat() {
  std::vector<TensorSpec> ts;
  Bytes b = FlatFile("elastic_flat", &ts);
  SaveValid("elastic_flat", b, {}, DecodesOf(ts), {{"budget_runs", FlatBudgetRuns()}});
}

void InvalidElasticFlat() {
  std::vector<TensorSpec> unused;
  const Bytes b0 = FlatFile("elastic_flat_base", &unused);
  InvalidManifest("elastic_flat_needs_version_3", b0, [](v1::Manifest& m) { m.mutable_elastic()->set_version(2); },
                  Open(kDataLoss,
                       "version 2 but binding \"blk.{L}.ssm_norm.weight\" is flat, which needs version 3 (format 1.4)",
                       "E-2.1"));
  InvalidManifest("elastic_flat_two_dims", b0,
                  [](v1::Manifest& m) { m.mutable_elastic()->mutable_bindings(0)->add_dims("-"); },
                  Open(kDataLoss,
                       "binding \"blk.{L}.ssm_norm.weight\": a flat binding has exactly one dims entry (the "
                       "tensor's elements taken flat), not 2",
                       "E-2.3"));
  // Heads not grouped by the rows: "half" keeps heads 0 and 1, all of row 0.
  InvalidManifest("elastic_flat_uneven_rows", b0,
                  [](v1::Manifest& m) { m.mutable_elastic()->mutable_axes(0)->set_groups(0); },
                  Open(kDataLoss,
                       "budget \"half\": tensor \"blk.0.ssm_norm.weight\" of flat binding "
                       "\"blk.{L}.ssm_norm.weight\" keeps 4 of its elements (its first kept run is [0, 4)), which "
                       "is not its outer dimensions whole",
                       "E-2.9"));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_vectors <spec/vectors dir>\n");
    return 2;
  }
  g_out = argv[1];
  g_scratch = g_out / ".scratch";
  for (const char* sub : {"valid", "invalid"}) {
    std::filesystem::remove_all(g_out / sub);
    std::filesystem::create_directories(g_out / sub);
  }
  std::filesystem::create_directories(g_scratch);

  ValidEmpty();
  ValidMetadata();
  ValidF32();
  ValidF16();
  ValidBF16();
  ValidRaw();
  ValidZstd();
  ValidZstdLarge();
  ValidAlign4096();
  ValidUnknownRequiredFeature();
  ValidUnknownTensorFeature();
  ValidRepeatedFeature();
  ValidEmptyZstdStream();
  ValidUnknownCodec();
  ValidUnknownDtype();
  ValidUnknownCompression();
  ValidNewerMinor();
  ValidSharded();
  ValidViews();
  ValidElastic();
  ValidElasticRenumber();
  ValidElasticGroups();
  ValidElasticProduct();
  ValidElasticLinePrefixes();
  ValidParts();
  InvalidVectors();
  ValidElasticFlat();
  InvalidElasticFlat();

  std::filesystem::remove_all(g_scratch);
  if (g_mismatches > 0) {
    std::fprintf(stderr, "make_vectors: %d vector(s) where this build's reader differs from the spec (see above)\n",
                 g_mismatches);
  }
  return 0;
}
