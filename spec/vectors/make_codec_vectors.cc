// make_codec_vectors: writes the codec vectors of spec/conformance.md §7
// (group `codecs`) into <dir>/codecs of the source tree:
//
//   make_codec_vectors <dir>        normally spec/vectors
//
// <dir>/codecs/<name>.bolt with <name>.expected.json (Appendix B.1: what a
// conforming reader lists and decodes, per target and per view), and
// <dir>/codecs/invalid/<name>.bolt with <name>.expected_error.txt (stage,
// class, message substring, the rule it breaks, the codec, and the target
// a decode asks for).
//
// The streams come from the library's encoders; blocks the encoders never
// write but a decoder must take (NaN and infinite scales, scale bytes 0x7F
// and 0xFF, nibble 0 of int4) are patched into the encoded streams before
// the Writer stores them, so every checksum is the Writer's. The expected
// decodes are the library's; scripts/codec_vectors_check.py recomputes them
// from the spec with numpy (and checks its decoders on ggml's own vectors),
// so a decoder bug cannot hide in both. Multi-chunk tensors are encoded
// piece by piece (rows whose exponent multisets are equal, so every piece
// gets the tensor's one code table) and joined with a chunk index
// (codecs-bf16-exp.md §5, X-5.2).
//
// Each invalid vector breaks exactly one codec rule; the rest of the file is
// valid (the Writer seals it, or the manifest is edited and rewrapped with
// correct checksums), and the generator checks that this build's reader
// fails at the stated stage with the stated class and message.
#include <array>

#include "codecs/bf16_exp/exponent_code.h"
#include "spec/vectors/vectors_common.h"

namespace {

namespace bf16_exp = ::boltpack::bf16_exp;

std::filesystem::path g_codecs;

// ---------------------------------------------------------------------------
// Tensors

struct CodecTensor {
  std::string name;
  std::vector<uint64_t> shape;
  DType dtype = DType::kF32;
  std::string codec;
  Bytes source;
  bp::CodecParams params = {};
  // Rows per chunk, applied to every stream (0: as the encoder made it).
  uint64_t rows_per_chunk = 0;
  // Row boundaries of pieces encoded alone and joined (empty: one encode).
  std::vector<uint64_t> pieces = {};
  std::function<void(bp::EncodedTensor&)> patch = {};
};

uint64_t Elements(const std::vector<uint64_t>& shape) {
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;
  return n;
}

bp::EncodedTensor EncodeOne(const CodecTensor& t, const std::vector<uint64_t>& shape, const Bytes& bytes) {
  bp::TensorSource src;
  src.name = t.name;
  src.dtype = t.dtype;
  src.shape = absl::MakeConstSpan(shape);
  src.bytes = absl::MakeConstSpan(bytes);
  return Take(bp::EncodeTensor(t.codec, src, t.params, {}), StrCat("encode ", t.name, " (", t.codec, ")"));
}

// Every stream cut into chunks of `rpc` whole rows (each stream's bytes are
// rows × a fixed row size for the block codecs).
void SetChunksAll(bp::EncodedTensor& enc, uint64_t rows, uint64_t rpc) {
  for (auto& s : enc.streams) {
    const uint64_t row_bytes = s.bytes.size() / rows;
    s.chunks.clear();
    for (uint64_t r = 0; r < rows; r += rpc) {
      uint64_t n = std::min(rpc, rows - r);
      s.chunks.push_back(bp::EncodedChunk{r * row_bytes, n * row_bytes, r, n});
    }
  }
}

// Encodes rows [pieces[k], pieces[k+1]) alone and joins them as chunks. The
// pieces must get the same stored parameters (one code per tensor).
bp::EncodedTensor EncodePieces(const CodecTensor& t) {
  const uint64_t row_bytes = t.source.size() / t.shape[0];
  bp::EncodedTensor out;
  for (size_t k = 0; k + 1 < t.pieces.size(); ++k) {
    const uint64_t a = t.pieces[k], b = t.pieces[k + 1];
    std::vector<uint64_t> shape = t.shape;
    shape[0] = b - a;
    Bytes part(t.source.begin() + static_cast<ptrdiff_t>(a * row_bytes),
               t.source.begin() + static_cast<ptrdiff_t>(b * row_bytes));
    bp::EncodedTensor enc = EncodeOne(t, shape, part);
    if (k == 0) {
      out.params = enc.params;
      for (auto& s : enc.streams) out.streams.push_back({s.role, {}, {}, s.compressible, s.views});
    } else if (!(enc.params == out.params)) {
      Die(StrCat(t.name, ": piece ", k, " got other parameters than piece 0"));
    }
    for (size_t i = 0; i < enc.streams.size(); ++i) {
      auto& s = out.streams[i];
      if (!enc.streams[i].chunks.empty()) Die(StrCat(t.name, ": a piece has chunks of its own"));
      s.chunks.push_back(bp::EncodedChunk{s.bytes.size(), enc.streams[i].bytes.size(), a, b - a});
      s.bytes.insert(s.bytes.end(), enc.streams[i].bytes.begin(), enc.streams[i].bytes.end());
    }
  }
  return out;
}

void AddCodecTensor(bp::Writer& w, const CodecTensor& t) {
  bp::EncodedTensor enc = t.pieces.empty() ? EncodeOne(t, t.shape, t.source) : EncodePieces(t);
  if (t.rows_per_chunk != 0) SetChunksAll(enc, t.shape[0], t.rows_per_chunk);
  if (t.patch) t.patch(enc);
  Check(w.AddTensor(t.name, t.shape, t.dtype, t.codec, std::move(enc)), StrCat("add ", t.name));
}

Bytes WriteCodecFile(const std::string& name, const std::vector<CodecTensor>& ts) {
  bp::WriterOptions options = Options();
  options.writer_name = "make_codec_vectors";
  return WriteWith(name, options, [&](bp::Writer& w) {
    for (const auto& t : ts) AddCodecTensor(w, t);
  });
}

// ---------------------------------------------------------------------------
// Expectations: the library's decodes of every tensor, to every target the
// codec defines, in every view the file offers.

std::optional<Bytes> DecodeWith(const bp::Reader& r, size_t t, bp::OutputType out, const std::string& view) {
  auto n = r.DecodedBytes(t, out);
  if (!n.ok()) return std::nullopt;
  Bytes b(*n, 0xcd);
  absl::Status s = r.Decode(t, view, out, absl::MakeSpan(b));
  if (!s.ok()) {
    // A target the codec does not define is left out; anything else is a bug.
    if (s.code() == absl::StatusCode::kInvalidArgument || s.code() == absl::StatusCode::kUnimplemented) {
      return std::nullopt;
    }
    Die(StrCat("decode of tensor ", t, " failed: ", std::string(s.ToString())));
  }
  return b;
}

// Decoded bytes as hex up to 1 KiB, else their length and digests (the
// folder stays small: spec/vectors/codecs is under 400 KiB).
Json CodecBytesJson(const Bytes& b) {
  if (b.size() <= 1024) return Json::Obj().Add("hex", S(Hex(b)));
  return Json::Obj().Add("bytes", U(b.size())).Add("xxh3", S(HexU(Xxh3(b), 16))).Add("sha256", S(bp::Sha256Hex(b)));
}

Json DecodesIn(const bp::Reader& r, size_t t, const std::string& view, std::string* targets) {
  Json d = Json::Obj();
  const std::pair<const char*, bp::OutputType> outs[] = {{"native", bp::OutputType::kNative},
                                                         {"f32", bp::OutputType::kF32},
                                                         {"f16", bp::OutputType::kF16},
                                                         {"bf16", bp::OutputType::kBF16}};
  for (const auto& [name, out] : outs) {
    std::optional<Bytes> b = DecodeWith(r, t, out, view);
    if (!b) continue;
    d.Add(name, CodecBytesJson(*b));
    *targets += StrCat(" ", name);
  }
  return d;
}

std::vector<Decodes> LibraryDecodes(const std::string& name, const Bytes& b) {
  std::filesystem::path tmp = g_scratch / (name + ".check.bolt");
  WriteFile(tmp, b);
  auto r = Take(bp::Reader::Open(tmp.string()), StrCat("open ", name));
  std::vector<Decodes> out;
  for (size_t t = 0; t < r->tensors().size(); ++t) {
    std::string targets;
    Decodes d{std::string(r->TensorName(t)), DecodesIn(*r, t, "full", &targets)};
    if (r->views().size() > 1) {
      for (const auto& v : r->views()) d.views.push_back({v.name, DecodesIn(*r, t, v.name, &targets)});
    }
    std::printf("  %s: %s\n", d.tensor.c_str(), targets.c_str());
    out.push_back(std::move(d));
  }
  r.reset();
  std::filesystem::remove(tmp);
  return out;
}

void SaveCodecValid(const std::string& name, const Bytes& b) {
  std::vector<Decodes> decodes = LibraryDecodes(name, b);
  auto path = g_codecs / (name + ".bolt");
  WriteFile(path, b);
  WriteText(g_codecs / (name + ".expected.json"), Render(ExpectedJson(b, {}, decodes)));
  auto r = bp::Reader::Open(path.string());
  if (!r.ok() || !(*r)->VerifyContainer().ok()) {
    std::fprintf(stderr, "  !! codecs/%s does not open or verify\n", name.c_str());
    ++g_mismatches;
  }
  std::printf("codecs/%s.bolt (%zu bytes)\n", name.c_str(), b.size());
}

// ---------------------------------------------------------------------------
// Invalid vectors

struct CodecError {
  std::string stage;  // open | verify | decode
  std::string cls;
  std::string message;
  std::string rule;
  std::string codec;
  std::string target = "native";  // the decode target the runner and the test ask for
};

std::string CodecStageError(const std::filesystem::path& path, const CodecError& e) {
  auto r = bp::Reader::Open(path.string());
  if (!r.ok()) return StrCat("open: ", std::string(r.status().ToString()));
  if (e.stage == "open") return "open: OK";
  absl::Status v = (*r)->VerifyContainer();
  if (e.stage == "verify" || !v.ok()) return StrCat("verify: ", v.ok() ? std::string("OK") : std::string(v.ToString()));
  bp::OutputType out = *bp::OutputTypeFromName(e.target);
  for (size_t t = 0; t < (*r)->tensors().size(); ++t) {
    auto n = (*r)->DecodedBytes(t, out);
    if (!n.ok()) return StrCat("decode: ", std::string(n.status().ToString()));
    Bytes buf(*n);
    absl::Status s = (*r)->Decode(t, out, absl::MakeSpan(buf));
    if (!s.ok()) return StrCat("decode: ", std::string(s.ToString()));
  }
  return "decode: OK";
}

void SaveCodecInvalid(const std::string& name, const Bytes& b, const CodecError& e) {
  auto path = g_codecs / "invalid" / (name + ".bolt");
  WriteFile(path, b);
  std::string txt = StrCat("stage: ", e.stage, "\nclass: ", e.cls, "\nmessage: ", e.message, "\nrule: ", e.rule,
                           "\ncodec: ", e.codec, "\ntarget: ", e.target, "\n");
  WriteText(g_codecs / "invalid" / (name + ".expected_error.txt"), txt);
  std::string got = CodecStageError(path, e);
  bool match = got.rfind(e.stage + ": " + e.cls, 0) == 0 && got.find(e.message) != std::string::npos;
  std::printf("codecs/invalid/%s.bolt (%zu bytes)%s\n", name.c_str(), b.size(), match ? "" : "  [reader differs]");
  if (!match) {
    std::fprintf(stderr, "  .. codecs/invalid/%s: expected %s %s \"%s\"; the library says %s\n", name.c_str(),
                 e.stage.c_str(), e.cls.c_str(), e.message.c_str(), got.c_str());
    ++g_mismatches;
  }
}

// The manifest of `b` with one tensor edited; everything else (streams,
// checksums) unchanged.
Bytes EditTensor(const Bytes& b, const std::string& tensor, const std::function<void(v1::Tensor&)>& edit) {
  return EditManifest(b, [&](v1::Manifest& m) { edit(*FindTensor(m, tensor)); });
}

// Adds a chunk index of one chunk (the whole stream, with its correct
// checksum) to stream `k` of `t`: a 1-D tensor's forbidden chunk.
void AddWholeChunk(const Bytes& file, v1::Tensor& t, int k) {
  v1::Stream* s = t.mutable_streams(k);
  Bytes stored(file.begin() + static_cast<ptrdiff_t>(s->offset()),
               file.begin() + static_cast<ptrdiff_t>(s->offset() + s->length()));
  v1::Chunk* c = s->add_chunks();
  c->set_stored_offset(0);
  c->set_stored_length(s->length());
  c->set_raw_offset(0);
  c->set_raw_length(s->raw_length());
  c->set_first_row(0);
  c->set_row_count(t.shape(0));
  c->set_xxh3(Xxh3(stored));
}

void SetParam(v1::Tensor& t, const std::string& key, const std::function<void(v1::Value&)>& set) {
  for (auto& p : *t.mutable_codec()->mutable_params()) {
    if (p.key() == key) {
      p.clear_value();
      set(*p.mutable_value());
      return;
    }
  }
  v1::CodecParam* p = t.mutable_codec()->add_params();
  p->set_key(key);
  set(*p->mutable_value());
}

void RemoveParam(v1::Tensor& t, const std::string& key) {
  auto* params = t.mutable_codec()->mutable_params();
  for (int i = 0; i < params->size(); ++i) {
    if (params->Get(i).key() == key) {
      params->DeleteSubrange(i, 1);
      return;
    }
  }
  Die(StrCat("no parameter ", key));
}

// ---------------------------------------------------------------------------
// Source data (deterministic)

uint32_t Lcg(uint32_t& s) {
  s = s * 1664525u + 1013904223u;
  return s >> 8;
}

// Values of a trained-weight-like spread, with ±0, f32 subnormals, values
// that round to ties, and one outlier per `outlier_every` elements.
std::vector<float> BlockValues(size_t n, uint32_t seed, size_t outlier_every) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    float u = static_cast<float>(Lcg(seed) % 20001) / 10000.0f - 1.0f;
    v[i] = u * 0.05f;
    if (outlier_every != 0 && i % outlier_every == 7) v[i] = (i & 1) ? -1.75f : 3.5f;
  }
  if (n >= 8) {
    v[0] = 0.0f;
    v[1] = -0.0f;
    v[2] = BitsF32(0x00000001);   // the smallest subnormal
    v[3] = -BitsF32(0x007fffff);  // the largest negative subnormal
  }
  return v;
}

Bytes F32Source(const std::vector<float>& v) { return Raw(v); }

Bytes F16Source(const std::vector<float>& v) {
  std::vector<uint16_t> h;
  for (float f : v) h.push_back(RefF32ToF16(F32Bits(f)));
  return Raw(h);
}

Bytes BF16Source(const std::vector<float>& v) {
  std::vector<uint16_t> h;
  for (float f : v) h.push_back(RefF32ToBF16(F32Bits(f)));
  return Raw(h);
}

// Writes little-endian `v` at byte `at` of stream `k`.
void Poke16(bp::EncodedTensor& enc, size_t k, size_t at, uint16_t v) { Put16(enc.streams[k].bytes.data() + at, v); }
void Poke8(bp::EncodedTensor& enc, size_t k, size_t at, uint8_t v) { enc.streams[k].bytes[at] = v; }

// ---------------------------------------------------------------------------
// Block codecs (codecs.md, codecs-iq2_xxs.md)

CodecTensor BlockTensor(std::string name, std::vector<uint64_t> shape, DType dtype, std::string codec, uint32_t seed,
                        size_t outlier_every = 45) {
  std::vector<float> v = BlockValues(Elements(shape), seed, outlier_every);
  Bytes src = dtype == DType::kF32 ? F32Source(v) : dtype == DType::kF16 ? F16Source(v) : BF16Source(v);
  return CodecTensor{std::move(name), std::move(shape), dtype, std::move(codec), std::move(src)};
}

// A tensor of `codec` in every source dtype, 1-D and 2-D, one with chunks
// (the last one short) whose scales `patch` overwrites.
std::vector<CodecTensor> BlockFamily(const std::string& codec, uint64_t bk, uint64_t rows, uint64_t rpc,
                                     const std::function<void(bp::EncodedTensor&)>& patch) {
  CodecTensor w = BlockTensor("w", {rows, 2 * bk}, DType::kF32, codec, 11);
  w.rows_per_chunk = rpc;
  w.patch = patch;
  std::vector<CodecTensor> ts = {w, BlockTensor("v", {3 * bk}, DType::kF32, codec, 12),
                                 BlockTensor("h", {2, bk}, DType::kF16, codec, 13),
                                 BlockTensor("b", {2, bk}, DType::kBF16, codec, 14)};
  // Tiny values: ggml-style codecs store d = 0 (all zeros) for such blocks.
  std::vector<float> tiny(bk, 1e-7f);
  tiny[1] = -3e-7f;
  ts.push_back(CodecTensor{"tiny", {1, bk}, DType::kF32, codec, F32Source(tiny)});
  return ts;
}

void ValidQ8() {
  // Block b's d at 34·b: +inf (with a q = 0: the default NaN), a NaN with a
  // payload, -inf, the smallest f16 subnormal, -0; q = -128 (never encoded).
  auto patch = [](bp::EncodedTensor& e) {
    Poke16(e, 0, 34 * 3, 0x7c00);
    Poke8(e, 0, 34 * 3 + 2, 0);
    Poke16(e, 0, 34 * 4, 0x7e01);
    Poke16(e, 0, 34 * 5, 0xfc00);
    Poke8(e, 0, 34 * 5 + 3, 0);
    Poke16(e, 0, 34 * 6, 0x0001);
    Poke16(e, 0, 34 * 7, 0x8000);
    Poke8(e, 0, 34 * 8 + 2, 0x80);
  };
  SaveCodecValid("q8_0", WriteCodecFile("q8_0", BlockFamily("q8_0", 32, 5, 2, patch)));
}

void ValidInt4() {
  // Scales (stream 1, 2 bytes per group): +inf, NaN payload, f16 subnormal,
  // -0, -inf; values: nibble 0 (-8, never encoded) next to nibble 15.
  auto patch = [](bp::EncodedTensor& e) {
    Poke16(e, 1, 2 * 1, 0x7c00);
    Poke8(e, 0, 64 * 1, 0x80);
    Poke16(e, 1, 2 * 2, 0x7d55);
    Poke16(e, 1, 2 * 3, 0x0001);
    Poke16(e, 1, 2 * 4, 0x8000);
    Poke16(e, 1, 2 * 5, 0xfc00);
    Poke8(e, 0, 5, 0x0f);
  };
  SaveCodecValid("int4_g128", WriteCodecFile("int4_g128", BlockFamily("int4-g128", 128, 3, 2, patch)));
}

void ValidMxfp4() {
  // E8M0 bytes 0, 1, 2 (the two "half" cases and the first plain one), 254,
  // 255 (2^127, not NaN); a qs byte of code 8 (decodes as +0).
  auto patch = [](bp::EncodedTensor& e) {
    Poke8(e, 0, 17 * 1, 0);
    Poke8(e, 0, 17 * 2, 1);
    Poke8(e, 0, 17 * 3, 2);
    Poke8(e, 0, 17 * 4, 254);
    Poke8(e, 0, 17 * 5, 255);
    Poke8(e, 0, 17 * 6 + 1, 0x88);
  };
  SaveCodecValid("mxfp4", WriteCodecFile("mxfp4", BlockFamily("mxfp4", 32, 4, 3, patch)));
}

void ValidNvfp4Ggml() {
  // UE4M3 d bytes: 0x7F (0), 0x80 (bit 7 not masked: 0), 0xFF (480), 0x01
  // (subnormal), 0x7E (the largest the encoder writes).
  auto patch = [](bp::EncodedTensor& e) {
    Poke8(e, 0, 36 * 1 + 0, 0x7f);
    Poke8(e, 0, 36 * 1 + 1, 0x80);
    Poke8(e, 0, 36 * 1 + 2, 0xff);
    Poke8(e, 0, 36 * 1 + 3, 0x01);
    Poke8(e, 0, 36 * 2 + 0, 0x7e);
  };
  SaveCodecValid("nvfp4_ggml", WriteCodecFile("nvfp4_ggml", BlockFamily("nvfp4-ggml", 64, 3, 2, patch)));
}

void ValidNvfp4() {
  // Scales (stream 1, one e4m3fn byte per 16): 0x7F (NaN), 0xFF (-NaN, sign
  // honoured), 0x80 (-0), 0x01 (2^-9), 0x7E (448); a code 8 (-0) nibble.
  auto patch = [](bp::EncodedTensor& e) {
    Poke8(e, 1, 0, 0x7f);
    Poke8(e, 1, 1, 0xff);
    Poke8(e, 1, 2, 0x80);
    Poke8(e, 1, 3, 0x01);
    Poke8(e, 1, 4, 0x7e);
    Poke8(e, 0, 8 * 5, 0x88);
  };
  std::vector<CodecTensor> ts = BlockFamily("nvfp4", 16, 4, 3, patch);
  // A tensor scale given to the encoder (any number type, stored FLOAT32).
  CodecTensor given = BlockTensor("given_scale", {2, 32}, DType::kF32, "nvfp4", 15);
  given.params = {{"tensor_scale", MetaValue::Float64(0.000244140625)}};
  ts.push_back(given);
  SaveCodecValid("nvfp4", WriteCodecFile("nvfp4", ts));
}

void ValidIq2xxs() {
  // d of blocks 1..4 (66 bytes each): +inf, NaN payload, f16 subnormal, -0.
  auto patch = [](bp::EncodedTensor& e) {
    Poke16(e, 0, 66 * 1, 0x7c00);
    Poke16(e, 0, 66 * 2, 0x7e01);
    Poke16(e, 0, 66 * 3, 0x0001);
    Poke16(e, 0, 66 * 4, 0x8000);
  };
  std::vector<CodecTensor> ts = BlockFamily("iq2_xxs", 256, 3, 2, patch);
  SaveCodecValid("iq2_xxs", WriteCodecFile("iq2_xxs", ts));
}

// The invalid records every block codec's decoder refuses, from a file of
// one 2-D tensor "w" ([4, 2·bk]) and one 1-D tensor "v" ([3·bk]).
void InvalidBlockRecords(const std::string& codec, uint64_t bk, const std::string& prefix, const std::string& target,
                         const std::string& rule_block, const std::string& rule_stream, const std::string& rule_1d) {
  std::vector<CodecTensor> ts = {BlockTensor("w", {4, 2 * bk}, DType::kF32, codec, 21),
                                 BlockTensor("v", {3 * bk}, DType::kF32, codec, 22)};
  const std::string base_name = prefix + "_base";
  Bytes b = WriteCodecFile(base_name, ts);
  auto err = [&](const std::string& msg, const std::string& rule) {
    return CodecError{"decode", "DATA_LOSS", msg, rule, codec, target};
  };
  // The innermost dimension is not whole blocks (the streams are unchanged).
  SaveCodecInvalid(prefix + "_shape_not_blocks",
                   EditTensor(b, "w", [&](v1::Tensor& t) { t.set_shape(1, 2 * bk + bk / 2); }),
                   err("multiple of", rule_block));
  // One more row than the streams hold blocks for.
  SaveCodecInvalid(prefix + "_stream_short", EditTensor(b, "w", [&](v1::Tensor& t) { t.set_shape(0, 5); }),
                   err("raw length", rule_stream));
  // A stream of another role.
  SaveCodecInvalid(prefix + "_stream_role",
                   EditTensor(b, "w", [&](v1::Tensor& t) { t.mutable_streams(0)->set_role("data0"); }),
                   err("stream", rule_stream));
  // A 1-D tensor's stream with a chunk index (one chunk, correct checksum).
  SaveCodecInvalid(prefix + "_1d_chunks", EditTensor(b, "v", [&](v1::Tensor& t) { AddWholeChunk(b, t, 0); }),
                   err("chunk", rule_1d));
}

void InvalidBlockCodecs() {
  InvalidBlockRecords("q8_0", 32, "q8_0", "native", "Q-0.1", "Q-0.6", "Q-0.4");
  InvalidBlockRecords("int4-g128", 128, "int4_g128", "f32", "Q-0.1", "Q-0.6", "Q-0.4");
  InvalidBlockRecords("mxfp4", 32, "mxfp4", "native", "Q-0.1", "Q-0.6", "Q-0.4");
  InvalidBlockRecords("nvfp4-ggml", 64, "nvfp4_ggml", "native", "Q-0.1", "Q-0.6", "Q-0.4");
  InvalidBlockRecords("nvfp4", 16, "nvfp4", "f32", "Q-0.1", "Q-0.6", "Q-0.4");
  InvalidBlockRecords("iq2_xxs", 256, "iq2_xxs", "native", "I-1.3", "I-1.5", "I-1.6");
  // Parameters where the codec takes none.
  for (const auto& [codec, prefix, bk, rule] : std::vector<std::tuple<std::string, std::string, uint64_t, std::string>>{
           {"q8_0", "q8_0", 32, "Q-0.7"},
           {"int4-g128", "int4_g128", 128, "Q-0.7"},
           {"iq2_xxs", "iq2_xxs", 256, "I-1.4"}}) {
    Bytes b = WriteCodecFile(prefix + "_param", {BlockTensor("w", {2, bk}, DType::kF32, codec, 23)});
    Bytes bad = EditTensor(b, "w", [](v1::Tensor& t) {
      SetParam(t, "scale", [](v1::Value& v) {
        v.set_type(v1::FLOAT32);
        v.set_f32(1);
      });
    });
    SaveCodecInvalid(
        prefix + "_param", bad,
        CodecError{"decode", "DATA_LOSS", "parameter", rule, codec, codec == "int4-g128" ? "f32" : "native"});
  }
  // nvfp4's tensor_scale: missing, zero, negative, NaN, infinite, FLOAT64.
  Bytes nv = WriteCodecFile("nvfp4_scale", {BlockTensor("w", {2, 32}, DType::kF32, "nvfp4", 24)});
  auto scale = [&](const std::string& name, const std::function<void(v1::Tensor&)>& edit) {
    SaveCodecInvalid(name, EditTensor(nv, "w", edit),
                     CodecError{"decode", "DATA_LOSS", "tensor_scale", "Q-4.2", "nvfp4", "f32"});
  };
  scale("nvfp4_tensor_scale_missing", [](v1::Tensor& t) { RemoveParam(t, "tensor_scale"); });
  for (const auto& [name, value] :
       std::vector<std::pair<std::string, float>>{{"zero", 0.0f},
                                                  {"negative", -1.0f},
                                                  {"nan", std::numeric_limits<float>::quiet_NaN()},
                                                  {"inf", std::numeric_limits<float>::infinity()}}) {
    float f = value;
    scale("nvfp4_tensor_scale_" + name, [f](v1::Tensor& t) {
      SetParam(t, "tensor_scale", [f](v1::Value& v) {
        v.set_type(v1::FLOAT32);
        v.set_f32(f);
      });
    });
  }
  scale("nvfp4_tensor_scale_f64", [](v1::Tensor& t) {
    SetParam(t, "tensor_scale", [](v1::Value& v) {
      v.set_type(v1::FLOAT64);
      v.set_f64(1.0);
    });
  });
}

// ---------------------------------------------------------------------------
// bf16 codecs (codecs-bf16-exp.md, codecs-bf16-spec.md)

// bf16 rows of `cols` whose exponents are each a permutation of one
// multiset (so pieces of any rows get proportional exponent counts and the
// same code table): a spread around 2^-6, rare far exponents, and ±0,
// subnormals, ±inf and NaNs with payloads (exponents 0 and 255).
std::vector<uint16_t> Bf16Rows(uint64_t rows, uint64_t cols, uint32_t seed) {
  std::vector<uint8_t> base(cols);
  uint32_t s = seed;
  for (uint64_t i = 0; i < cols; ++i) {
    uint32_t u = Lcg(s) % 64;
    base[i] = static_cast<uint8_t>(u < 32 ? 120 : u < 48 ? 119 : u < 56 ? 121 : u < 60 ? 118 : 110 + u % 20);
  }
  const uint8_t specials[] = {0, 0, 255, 255, 1, 254, 150};
  for (size_t k = 0; k < sizeof specials && k < cols; ++k) base[(k * 7 + 3) % cols] = specials[k];
  std::vector<uint16_t> v(rows * cols);
  for (uint64_t r = 0; r < rows; ++r) {
    std::vector<uint8_t> e = base;
    for (uint64_t i = cols; i > 1; --i) std::swap(e[i - 1], e[Lcg(s) % i]);
    for (uint64_t i = 0; i < cols; ++i) {
      uint32_t sm = Lcg(s) & 0xff;
      // Exponents 0 and 255: every third one with mantissa 0 (±0, ±inf).
      if ((e[i] == 0 || e[i] == 255) && (r + i) % 3 == 0) sm &= 0x80;
      v[r * cols + i] = static_cast<uint16_t>((sm & 0x80) << 8 | e[i] << 7 | (sm & 0x7f));
    }
  }
  return v;
}

CodecTensor Bf16Tensor(std::string name, std::vector<uint64_t> shape, std::string codec, uint32_t seed) {
  const uint64_t rows = shape.empty() ? 1 : shape[0];
  const uint64_t n = Elements(shape);
  std::vector<uint16_t> v = Bf16Rows(rows, rows == 0 ? 0 : n / rows, seed);
  return CodecTensor{std::move(name), std::move(shape), DType::kBF16, std::move(codec), Raw(v)};
}

// F32 source with from_f32 = true: rounding ties, a NaN payload (quieted)
// and values that round up to the next binade and to infinity.
CodecTensor FromF32Tensor(const std::string& codec, bp::CodecParams params) {
  std::vector<uint32_t> u = {0x3f808000, 0x3f818000, 0x7f800001, 0xff812345, 0x3fffffff, 0x7f7fffff,
                             0x80000001, 0x00000000, 0xbf800000, 0x40490fdb, 0x3c23d70a, 0xc2f6e979,
                             0x7f800000, 0x00400000, 0x3e99999a, 0x80000000};
  params.push_back({"from_f32", MetaValue::Bool(true)});
  return CodecTensor{"from_f32", {2, 8}, DType::kF32, codec, Raw(u), params};
}

// The lossless codecs must give back every source bit.
void CheckLossless(const std::string& name, const Bytes& file, const std::vector<CodecTensor>& ts) {
  std::filesystem::path tmp = g_scratch / (name + ".lossless.bolt");
  WriteFile(tmp, file);
  auto r = Take(bp::Reader::Open(tmp.string()), StrCat("open ", name));
  for (size_t t = 0; t < ts.size(); ++t) {
    if (ts[t].dtype != DType::kBF16) continue;
    std::optional<Bytes> got = DecodeWith(*r, t, bp::OutputType::kBF16, "full");
    if (!got || *got != ts[t].source) Die(StrCat(name, ": tensor ", ts[t].name, " does not round trip"));
  }
  r.reset();
  std::filesystem::remove(tmp);
}

// bf16-huffman and bf16-unary: a multi-chunk tensor (a 4-lane piece of
// 16384 values, a 1-lane piece, a last piece of one row), small and 1-D
// ones, a single exponent, 0-d, and an F32 source.
void ValidBf16Exp(const std::string& codec, const std::string& name) {
  CodecTensor w = Bf16Tensor("w", {40, 512}, codec, 31);
  w.pieces = {0, 32, 39, 40};
  std::vector<uint16_t> one(6, 0x3f80);
  one[1] = 0xbf80;
  one[2] = 0x3fff;
  std::vector<CodecTensor> ts = {w,
                                 Bf16Tensor("small", {3, 5}, codec, 32),
                                 Bf16Tensor("v", {24}, codec, 33),
                                 CodecTensor{"one_exponent", {6}, DType::kBF16, codec, Raw(one)},
                                 Bf16Tensor("scalar", {}, codec, 34),
                                 FromF32Tensor(codec, {})};
  Bytes b = WriteCodecFile(name, ts);
  CheckLossless(name, b, ts);
  SaveCodecValid(name, b);
}

// Blocks of 32 over the whole tensor (the last one short): a block of
// exponent 255 (inf, NaN payloads kept), small values far below the block
// maximum (t = 7, rounded), subnormals, an all-zero block (E = 1).
void ValidBf16Mx() {
  std::vector<uint16_t> v = Bf16Rows(3, 45, 41);
  for (size_t i = 32; i < 64; ++i) v[i] = static_cast<uint16_t>((i & 1) << 15 | 0x7f80 | (i % 3 == 0 ? 0 : i));
  for (size_t i = 64; i < 96; ++i) v[i] = 0x0000;
  v[65] = 0x8000;
  for (size_t i = 96; i < 128; ++i) v[i] = static_cast<uint16_t>(i % 2 ? 0x4300 + i : 0x3000 + 7 * i);
  std::vector<CodecTensor> ts = {CodecTensor{"w", {3, 45}, DType::kBF16, "bf16-mx", Raw(v)},
                                 Bf16Tensor("v", {40}, "bf16-mx", 42), FromF32Tensor("bf16-mx", {})};
  SaveCodecValid("bf16_mx", WriteCodecFile("bf16_mx", ts));
}

bp::CodecParams SpecParams(double keep, int mbits) {
  return {{"keep", MetaValue::Float64(keep)}, {"mbits", MetaValue::Int(ValueType::kInt64, mbits)}};
}

// Draft and full views: a multi-chunk tensor (pieces of 2, 2 and 1 rows),
// mbits 0 and 7, keep 1 (no bitmap), 1-D (kept whole), rows of 5 (bitmap
// and field padding).
void ValidBf16Spec() {
  CodecTensor w = Bf16Tensor("w", {5, 64}, "bf16-spec", 51);
  w.params = SpecParams(0.5, 3);
  w.pieces = {0, 2, 4, 5};
  CodecTensor m0 = Bf16Tensor("mbits0", {2, 16}, "bf16-spec", 52);
  m0.params = SpecParams(0.25, 0);
  CodecTensor m7 = Bf16Tensor("mbits7_keep1", {2, 16}, "bf16-spec", 53);
  m7.params = SpecParams(1.0, 7);
  CodecTensor v = Bf16Tensor("v", {12}, "bf16-spec", 54);
  v.params = SpecParams(0.5, 2);
  CodecTensor odd = Bf16Tensor("odd", {3, 5}, "bf16-spec", 55);
  odd.params = SpecParams(0.4, 5);
  std::vector<CodecTensor> ts = {w, m0, m7, v, odd};
  Bytes b = WriteCodecFile("bf16_spec", ts);
  CheckLossless("bf16_spec", b, ts);
  SaveCodecValid("bf16_spec", b);
}

// ---------------------------------------------------------------------------
// Invalid bf16 records and streams

std::string ParamString(const bp::CodecParams& params, const std::string& key) {
  for (const auto& [k, v] : params) {
    if (k == key) return v.s;
  }
  Die(StrCat("no parameter ", key));
}

std::string* MutableParamString(v1::Tensor& t, const std::string& key) {
  for (auto& p : *t.mutable_codec()->mutable_params()) {
    if (p.key() == key) return p.mutable_value()->mutable_s();
  }
  Die(StrCat("no parameter ", key));
}

// Bits the exponents of `src` (bf16) take in one lane with `len[e]`.
uint64_t LaneBits(const Bytes& src, const std::array<uint8_t, 256>& len) {
  uint64_t bits = 0;
  for (size_t i = 0; i + 1 < src.size(); i += 2) bits += len[(src[i + 1] & 0x7f) << 1 | src[i] >> 7];
  return bits;
}

std::array<uint8_t, 256> UnaryLengths(const std::vector<uint8_t>& ranks) {
  std::array<uint8_t, 256> len;
  len.fill(static_cast<uint8_t>(ranks.size() + 8));
  for (size_t r = 0; r < ranks.size(); ++r) len[ranks[r]] = static_cast<uint8_t>(r + 1);
  return len;
}

// A unary lane of `src`'s exponents with element `escaped` coded as an
// escape (K zero bits and its 8 bits) although it has a rank.
Bytes UnaryLaneWithEscape(const Bytes& src, const std::vector<uint8_t>& ranks, size_t escaped) {
  Bytes out;
  uint64_t acc = 0;
  int nbits = 0;
  auto put = [&](uint32_t code, int len) {
    for (int b = len - 1; b >= 0; --b) {
      acc = acc << 1 | ((code >> b) & 1);
      if (++nbits == 8) {
        out.push_back(static_cast<uint8_t>(acc));
        acc = 0;
        nbits = 0;
      }
    }
  };
  const int k = static_cast<int>(ranks.size());
  for (size_t i = 0; i * 2 + 1 < src.size(); ++i) {
    const uint8_t e = static_cast<uint8_t>((src[2 * i + 1] & 0x7f) << 1 | src[2 * i] >> 7);
    auto r = std::find(ranks.begin(), ranks.end(), e);
    if (r != ranks.end() && i != escaped) {
      put(1, static_cast<int>(r - ranks.begin()) + 1);
    } else {
      put(0, k);
      put(e, 8);
    }
  }
  if (nbits > 0) out.push_back(static_cast<uint8_t>(acc << (8 - nbits)));
  return out;
}

// One lane's fault: the last byte's padding bits not zero, a byte past the
// last code word, the last byte cut off.
void InvalidLanes(const std::string& prefix, const std::string& codec, const CodecTensor& t,
                  const std::array<uint8_t, 256>& len) {
  const uint64_t bits = LaneBits(t.source, len);
  if (bits % 8 == 0) Die(StrCat(prefix, ": the lane has no padding bits"));
  auto with = [&](const std::string& name, const std::function<void(Bytes&)>& edit, const std::string& msg) {
    CodecTensor bad = t;
    bad.patch = [edit](bp::EncodedTensor& e) { edit(e.streams[1].bytes); };
    SaveCodecInvalid(prefix + name, WriteCodecFile(prefix + name, {bad}),
                     CodecError{"decode", "DATA_LOSS", msg, "X-2.1", codec, "native"});
  };
  with(
      "_lane_padding", [](Bytes& b) { b.back() |= 1; }, "padding");
  with(
      "_lane_unused_byte", [](Bytes& b) { b.push_back(0); }, "unused");
  with(
      "_lane_truncated", [](Bytes& b) { b.pop_back(); }, "end");
}

// Record faults common to bf16-huffman and bf16-unary.
void InvalidBf16ExpRecords(const std::string& prefix, const std::string& codec) {
  Bytes b = WriteCodecFile(prefix + "_records", {Bf16Tensor("w", {3, 8}, codec, 61)});
  auto err = [&](const std::string& msg, const std::string& rule) {
    return CodecError{"decode", "DATA_LOSS", msg, rule, codec, "native"};
  };
  SaveCodecInvalid(prefix + "_streams_swapped",
                   EditTensor(b, "w", [](v1::Tensor& t) { t.mutable_streams()->SwapElements(0, 1); }),
                   err("stream", "X-3.2"));
  SaveCodecInvalid(prefix + "_from_f32_on_bf16",
                   EditTensor(b, "w",
                              [](v1::Tensor& t) {
                                SetParam(t, "from_f32", [](v1::Value& v) {
                                  v.set_type(v1::BOOLEAN);
                                  v.set_b(true);
                                });
                              }),
                   err("from_f32", "X-1.1"));
  SaveCodecInvalid(prefix + "_unknown_param",
                   EditTensor(b, "w",
                              [](v1::Tensor& t) {
                                SetParam(t, "level", [](v1::Value& v) {
                                  v.set_type(v1::UINT32);
                                  v.set_u(1);
                                });
                              }),
                   err("parameter", "X-1.2"));
  SaveCodecInvalid(prefix + "_sign_mantissa_short", EditTensor(b, "w", [](v1::Tensor& t) { t.set_shape(0, 4); }),
                   err("raw length", "X-3.2"));
  // Pieces: an exponents chunk index without the sign_mantissa one.
  CodecTensor pieces = Bf16Tensor("w", {4, 8}, codec, 62);
  pieces.pieces = {0, 2, 4};
  Bytes pb = WriteCodecFile(prefix + "_pieces", {pieces});
  SaveCodecInvalid(prefix + "_chunks_one_stream",
                   EditTensor(pb, "w", [](v1::Tensor& t) { t.mutable_streams(0)->clear_chunks(); }),
                   err("chunk", "X-5.2"));
}

void InvalidBf16Huffman() {
  const std::string codec = "bf16-huffman";
  CodecTensor t = Bf16Tensor("w", {3, 8}, codec, 63);
  bp::EncodedTensor enc = EncodeOne(t, t.shape, t.source);
  const std::string hex = ParamString(enc.params, "exp_code_lengths");
  auto len = Take(bf16_exp::ExponentCode::LengthsFromHex(hex), "lengths");
  InvalidLanes("bf16_huffman", codec, t, len);
  InvalidBf16ExpRecords("bf16_huffman", codec);
  // Tables: incomplete (the longest code one bit longer), over-subscribed
  // (a code one bit shorter), a length digit past 12, a digit too few.
  Bytes b = WriteCodecFile("bf16_huffman_tables", {t});
  int longest = 0, shorten = -1;
  for (int e = 0; e < 256; ++e) {
    if (len[e] > len[longest]) longest = e;
    if (len[e] > 1 && shorten < 0) shorten = e;
  }
  auto table = [&](const std::string& name, const std::function<void(std::string&)>& edit, const std::string& msg) {
    SaveCodecInvalid("bf16_huffman_" + name,
                     EditTensor(b, "w", [&](v1::Tensor& tt) { edit(*MutableParamString(tt, "exp_code_lengths")); }),
                     CodecError{"decode", "DATA_LOSS", msg, "X-3.1", codec, "native"});
  };
  const char* digits = "0123456789abc";
  table("table_incomplete", [&](std::string& h) { h[longest] = digits[len[longest] + 1]; }, "incomplete");
  table("table_oversubscribed", [&](std::string& h) { h[shorten] = digits[len[shorten] - 1]; }, "over-subscribed");
  table("table_length_13", [&](std::string& h) { h[longest] = 'd'; }, "not 0..12");
  table("table_short", [](std::string& h) { h.pop_back(); }, "255 digits");
  // One exponent (code "0"): the bit 1 is not a code word.
  std::vector<uint16_t> one(8, 0x3f80);
  CodecTensor single{"w", {8}, DType::kBF16, codec, Raw(one)};
  single.patch = [](bp::EncodedTensor& e) { e.streams[1].bytes[0] = 0x80; };
  SaveCodecInvalid("bf16_huffman_invalid_code_word", WriteCodecFile("bf16_huffman_invalid_code_word", {single}),
                   CodecError{"decode", "DATA_LOSS", "code", "X-3.1", codec, "native"});
  // Four lanes (16384 values of one exponent): lane 0's length past the bytes.
  std::vector<uint16_t> many(16384);
  for (size_t i = 0; i < many.size(); ++i) many[i] = static_cast<uint16_t>(0x3f80 | (i * 37) % 128 | (i & 1) << 15);
  CodecTensor lanes{"w", {2, 8192}, DType::kBF16, codec, Raw(many)};
  lanes.patch = [](bp::EncodedTensor& e) { Put32(e.streams[1].bytes.data(), 0x7fffffff); };
  SaveCodecInvalid("bf16_huffman_lane_header", WriteCodecFile("bf16_huffman_lane_header", {lanes}),
                   CodecError{"decode", "DATA_LOSS", "lane", "X-5.1", codec, "native"});
  // Lanes 0 and 1 each half the bytes: each fits, their sum does not.
  lanes.patch = [](bp::EncodedTensor& e) {
    auto& x = e.streams[1].bytes;
    Put32(x.data(), static_cast<uint32_t>(x.size() / 2));
    Put32(x.data() + 4, static_cast<uint32_t>(x.size() / 2));
  };
  SaveCodecInvalid("bf16_huffman_lane_header_sum", WriteCodecFile("bf16_huffman_lane_header_sum", {lanes}),
                   CodecError{"decode", "DATA_LOSS", "lane", "X-5.1", codec, "native"});
}

void InvalidBf16Unary() {
  const std::string codec = "bf16-unary";
  // The first seed whose lane has padding bits and ranks.
  CodecTensor t;
  std::vector<uint8_t> ranks;
  for (uint32_t seed = 64;; ++seed) {
    if (seed == 164) Die("bf16-unary: no seed gives a lane with padding bits");
    // Few exponents (16 of 2^-7, 6 of 2^-6, 2 of 2^-8), so that ranks pay.
    std::vector<uint16_t> v(24);
    uint32_t st = seed;
    for (size_t i = 0; i < v.size(); ++i) {
      const uint32_t e = i < 16 ? 120 : i < 22 ? 121 : 119;
      v[(i * 5 + seed) % 24] = static_cast<uint16_t>((Lcg(st) & 0x807f) | e << 7);
    }
    t = CodecTensor{"w", {3, 8}, DType::kBF16, codec, Raw(v)};
    bp::EncodedTensor enc = EncodeOne(t, t.shape, t.source);
    ranks = Take(bf16_exp::ExponentCode::RanksFromHex(ParamString(enc.params, "exp_ranks")), "ranks");
    if (!ranks.empty() && LaneBits(t.source, UnaryLengths(ranks)) % 8 != 0) break;
  }
  InvalidLanes("bf16_unary", codec, t, UnaryLengths(ranks));
  InvalidBf16ExpRecords("bf16_unary", codec);
  // An escape that carries a ranked exponent.
  size_t escaped = 0;
  while (std::find(ranks.begin(), ranks.end(), (t.source[2 * escaped + 1] & 0x7f) << 1 | t.source[2 * escaped] >> 7) ==
         ranks.end()) {
    ++escaped;
  }
  CodecTensor esc = t;
  esc.patch = [&](bp::EncodedTensor& e) { e.streams[1].bytes = UnaryLaneWithEscape(t.source, ranks, escaped); };
  SaveCodecInvalid("bf16_unary_escape_of_ranked", WriteCodecFile("bf16_unary_escape_of_ranked", {esc}),
                   CodecError{"decode", "DATA_LOSS", "escape", "X-4.1", codec, "native"});
  Bytes b = WriteCodecFile("bf16_unary_tables", {t});
  auto table = [&](const std::string& name, const std::function<void(std::string&)>& edit, const std::string& msg) {
    SaveCodecInvalid("bf16_unary_" + name,
                     EditTensor(b, "w", [&](v1::Tensor& tt) { edit(*MutableParamString(tt, "exp_ranks")); }),
                     CodecError{"decode", "DATA_LOSS", msg, "X-4.1", codec, "native"});
  };
  table("ranks_duplicate", [](std::string& h) { h = h.substr(0, 2) + h; }, "ranked twice");
  table("ranks_21", [](std::string& h) {
    std::string out;
    for (int e = 0; e < 21; ++e) out += HexU(static_cast<uint64_t>(e + 90), 2);
    h = out;
  }, "rank table has");
  table("ranks_odd_digits", [](std::string& h) { h.pop_back(); }, "rank table has");
}

void InvalidBf16Mx() {
  Bytes b = WriteCodecFile("bf16_mx_records", {Bf16Tensor("w", {3, 40}, "bf16-mx", 71)});
  auto err = [](const std::string& msg) {
    return CodecError{"decode", "DATA_LOSS", msg, "X-6.3", "bf16-mx", "native"};
  };
  SaveCodecInvalid("bf16_mx_streams_short", EditTensor(b, "w", [](v1::Tensor& t) { t.set_shape(0, 4); }),
                   err("raw length"));
  SaveCodecInvalid("bf16_mx_chunks", EditTensor(b, "w", [&](v1::Tensor& t) { AddWholeChunk(b, t, 0); }), err("chunk"));
  SaveCodecInvalid("bf16_mx_streams_swapped",
                   EditTensor(b, "w", [](v1::Tensor& t) { t.mutable_streams()->SwapElements(0, 2); }), err("stream"));
}

void InvalidBf16Spec() {
  const std::string codec = "bf16-spec";
  auto err = [&](const std::string& msg, const std::string& rule) {
    return CodecError{"decode", "DATA_LOSS", msg, rule, codec, "native"};
  };
  // [3, 5], keep 0.4 (k = 2), mbits 2: a 2-byte bitmap (one padding bit),
  // 18 bits of kept fields (6 padding bits).
  CodecTensor t = Bf16Tensor("w", {3, 5}, codec, 81);
  t.params = SpecParams(0.4, 2);
  auto stream_patch = [&](const std::string& name, size_t k, const std::function<void(Bytes&)>& edit,
                          const std::string& msg, const std::string& rule) {
    CodecTensor bad = t;
    bad.patch = [k, edit](bp::EncodedTensor& e) { edit(e.streams[k].bytes); };
    SaveCodecInvalid("bf16_spec_" + name, WriteCodecFile("bf16_spec_" + name, {bad}), err(msg, rule));
  };
  stream_patch(
      "bitmap_count", 0, [](Bytes& s) { s[0] ^= 0x01; }, "bitmap", "S-4.1");
  stream_patch(
      "bitmap_padding", 0, [](Bytes& s) { s[1] |= 0x80; }, "padding", "S-4.1");
  stream_patch(
      "field_padding", 0, [](Bytes& s) { s[4] |= 0x80; }, "padding", "S-4.2");
  stream_patch(
      "kept_lane_unused_byte", 0, [](Bytes& s) { s.push_back(0); }, "unused", "S-4.3");
  stream_patch(
      "pruned_lane_unused_byte", 1, [](Bytes& s) { s.push_back(0); }, "unused", "S-4.7");
  Bytes b = WriteCodecFile("bf16_spec_records", {t});
  auto edit = [&](const std::string& name, const std::function<void(v1::Tensor&)>& f, const std::string& msg,
                  const std::string& rule) {
    SaveCodecInvalid("bf16_spec_" + name, EditTensor(b, "w", f), err(msg, rule));
  };
  edit(
      "speculation_views", [](v1::Tensor& tt) { tt.mutable_streams(0)->add_views("full");
        tt.mutable_streams(0)->add_views("draft"); }, "view", "S-4.4");
  edit(
      "chunk_short", [](v1::Tensor& tt) { tt.set_shape(0, 30); }, "short", "S-4.8");
  edit(
      "mbits_8",
      [](v1::Tensor& tt) {
        SetParam(tt, "mbits", [](v1::Value& v) {
          v.set_type(v1::UINT32);
          v.set_u(8);
        });
      },
      "mbits", "S-6.1");
  edit(
      "kept_per_row_over",
      [](v1::Tensor& tt) {
        SetParam(tt, "kept_per_row", [](v1::Value& v) {
          v.set_type(v1::UINT64);
          v.set_u(6);
        });
      },
      "kept_per_row", "S-6.1");
  edit(
      "param_missing", [](v1::Tensor& tt) { RemoveParam(tt, "scored_by"); }, "scored_by", "S-6.1");
  edit(
      "dtype_f32", [](v1::Tensor& tt) { tt.set_dtype(v1::F32); }, "BF16", "S-1.2");
  // Chunks (pieces of 2 rows): a verification stream without the chunk index.
  CodecTensor pieces = Bf16Tensor("w", {4, 16}, codec, 82);
  pieces.params = SpecParams(0.5, 3);
  pieces.pieces = {0, 2, 4};
  Bytes pb = WriteCodecFile("bf16_spec_pieces", {pieces});
  SaveCodecInvalid("bf16_spec_chunks_one_stream",
                   EditTensor(pb, "w", [](v1::Tensor& tt) { tt.mutable_streams(1)->clear_chunks(); }),
                   err("chunk", "S-6.1"));
}

void Bf16CodecVectors() {
  ValidBf16Exp("bf16-huffman", "bf16_huffman");
  ValidBf16Exp("bf16-unary", "bf16_unary");
  ValidBf16Mx();
  ValidBf16Spec();
  InvalidBf16Huffman();
  InvalidBf16Unary();
  InvalidBf16Mx();
  InvalidBf16Spec();
}

void BlockCodecVectors() {
  ValidQ8();
  ValidInt4();
  ValidMxfp4();
  ValidNvfp4Ggml();
  ValidNvfp4();
  ValidIq2xxs();
  InvalidBlockCodecs();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_codec_vectors <spec/vectors dir>\n");
    return 2;
  }
  g_out = argv[1];
  g_codecs = g_out / "codecs";
  g_scratch = g_codecs / ".scratch";
  std::filesystem::remove_all(g_codecs);
  std::filesystem::create_directories(g_codecs / "invalid");
  std::filesystem::create_directories(g_scratch);

  BlockCodecVectors();
  Bf16CodecVectors();

  std::filesystem::remove_all(g_scratch);
  if (g_mismatches > 0) {
    std::fprintf(stderr, "make_codec_vectors: %d vector(s) where this build's reader differs (see above)\n",
                 g_mismatches);
    return 1;
  }
  return 0;
}
