// boltpack_cuda_check FILE.bolt...: the GPU library checked against the CPU
// one on real files (made on the CPU machine; the device machine has no
// encoder of its own):
//   - every tensor whose codec has kernels decodes on the GPU to f32, bf16
//     and f16 bit for bit as bp_decode does (NaN payloads included);
//   - GEMV at batch 1, 2, 4 and 8, y as f32 and bf16, is within the stated
//     tolerance of a double reference over the CPU-decoded W;
//   - bad descriptions are refused before anything is queued.
// Prints one line per tensor and exits non-zero on the first disagreement's
// file (after checking the rest of it).
#include <cuda_runtime.h>

#include <cfloat>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "boltpack/boltpack.h"
#include "boltpack/cuda.h"
#include "codecs/float_convert.h"

namespace {

#define CUDA_OR_DIE(call)                                                              \
  do {                                                                                 \
    cudaError_t e_ = (call);                                                           \
    if (e_ != cudaSuccess) {                                                           \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      std::exit(2);                                                                    \
    }                                                                                  \
  } while (0)

// Device memory freed on scope exit.
struct DeviceBuffer {
  void* p = nullptr;
  explicit DeviceBuffer(size_t bytes) { CUDA_OR_DIE(cudaMalloc(&p, bytes == 0 ? 16 : bytes)); }
  ~DeviceBuffer() { cudaFree(p); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

const char* OutName(bp_output o) { return o == BP_OUT_F32 ? "f32" : o == BP_OUT_BF16 ? "bf16" : "f16"; }

// GPU decode against bp_decode, bit for bit. Returns false on a mismatch.
bool CheckDecode(const bp_reader* r, size_t tensor, const bp_cuda_tensor& t, const char* name) {
  bool ok = true;
  for (bp_output out : {BP_OUT_F32, BP_OUT_BF16, BP_OUT_F16}) {
    uint64_t bytes = 0;
    if (bp_decoded_size(r, tensor, out, &bytes) != BP_OK) {
      std::printf("  %s: no CPU %s decode: %s\n", name, OutName(out), bp_last_error(r));
      continue;
    }
    std::vector<uint8_t> cpu(bytes), gpu(bytes);
    if (bp_decode(r, tensor, out, cpu.data(), bytes, 0) != BP_OK) {
      std::printf("FAIL %s: CPU decode: %s\n", name, bp_last_error(r));
      return false;
    }
    DeviceBuffer dst(bytes);
    if (bp_cuda_decode(&t, out, dst.p, bytes, nullptr) != BP_OK) {
      std::printf("FAIL %s: bp_cuda_decode %s: %s\n", name, OutName(out), bp_cuda_last_error());
      return false;
    }
    CUDA_OR_DIE(cudaMemcpy(gpu.data(), dst.p, bytes, cudaMemcpyDeviceToHost));
    if (std::memcmp(cpu.data(), gpu.data(), bytes) != 0) {
      size_t i = 0;
      while (cpu[i] == gpu[i]) ++i;
      const size_t width = out == BP_OUT_F32 ? 4 : 2;
      uint32_t c = 0, g = 0;
      std::memcpy(&c, &cpu[i / width * width], width);
      std::memcpy(&g, &gpu[i / width * width], width);
      std::printf("FAIL %s: %s decode differs at element %zu: CPU 0x%x, GPU 0x%x\n", name, OutName(out),
                  i / width, c, g);
      ok = false;
    }
  }
  return ok;
}

// The GEMV's tolerance: each product k*x of a group's integer factor and a
// bf16 x is exact in f32 (gemv_factors.cuh), a group's sum of 8 rounds at
// most 7 times, its scale is applied with the add into the lane's sum by
// one fmaf, a lane holds cols/256 groups and 5 butterfly steps follow: every
// term goes through at most cols/32 + 12 roundings of at most 2^-24 of
// partial sums bounded by sum |w||x|.
// The entropy codecs' GEMV (entropy_kernels.cu) sums a lane's products of a
// row in turn (at most cols/32 of them), adds the block's up to 128 lane
// sums of a row one by one into the row's sum, and those of the blocks a
// row spans (cols/32768 + 2) into y.
double Tolerance(int codec, uint64_t cols, double abs_sum) {
  const bool entropy = codec == BP_CUDA_CODEC_BF16_HUFFMAN || codec == BP_CUDA_CODEC_BF16_UNARY;
  const double steps = entropy ? double(cols) / 32 + 128 + double(cols) / 32768 + 4 : double(cols) / 32 + 12;
  return steps * std::ldexp(1.0, -24) * abs_sum;
}

bool CheckGemv(const bp_reader* r, size_t tensor, const bp_cuda_tensor& t, const char* name) {
  std::vector<float> w(t.rows * t.cols);
  if (bp_decode(r, tensor, BP_OUT_F32, w.data(), w.size() * 4, 0) != BP_OK) {
    std::printf("FAIL %s: CPU decode: %s\n", name, bp_last_error(r));
    return false;
  }
  constexpr int kMaxBatch = 8;
  std::mt19937 rng(static_cast<uint32_t>(tensor) * 7919u + 1);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<uint16_t> x(kMaxBatch * t.cols);
  for (uint16_t& v : x) v = boltpack::F32ToBF16(normal(rng));
  DeviceBuffer dx(x.size() * 2), dy(kMaxBatch * t.rows * 4);
  CUDA_OR_DIE(cudaMemcpy(dx.p, x.data(), x.size() * 2, cudaMemcpyHostToDevice));
  double worst = 0;  // of |err| / tolerance
  for (int batch : {1, 2, 4, 8}) {
    for (bp_output yt : {BP_OUT_F32, BP_OUT_BF16}) {
      if (bp_cuda_gemv(&t, dx.p, batch, yt, dy.p, nullptr) != BP_OK) {
        std::printf("FAIL %s: bp_cuda_gemv: %s\n", name, bp_cuda_last_error());
        return false;
      }
      std::vector<uint8_t> y(batch * t.rows * (yt == BP_OUT_F32 ? 4 : 2));
      CUDA_OR_DIE(cudaMemcpy(y.data(), dy.p, y.size(), cudaMemcpyDeviceToHost));
      for (int b = 0; b < batch; ++b) {
        for (uint64_t row = 0; row < t.rows; ++row) {
          double ref = 0, abs_sum = 0;
          for (uint64_t c = 0; c < t.cols; ++c) {
            const double p = double(w[row * t.cols + c]) * boltpack::BF16ToF32(x[b * t.cols + c]);
            ref += p;
            abs_sum += std::fabs(p);
          }
          const size_t at = b * t.rows + row;
          double got;
          if (yt == BP_OUT_F32) {
            float f;
            std::memcpy(&f, &y[at * 4], 4);
            got = f;
          } else {
            uint16_t h;
            std::memcpy(&h, &y[at * 2], 2);
            got = boltpack::BF16ToF32(h);
          }
          if (!std::isfinite(ref)) {  // NaN or inf weights: the output must not be finite either
            if (std::isfinite(got)) {
              std::printf("FAIL %s: row %" PRIu64 " batch %d: reference %g, GPU %g\n", name, row, b, ref, got);
              return false;
            }
            continue;
          }
          if (abs_sum > FLT_MAX && !std::isfinite(got)) continue;  // an f32 partial sum may overflow
          double tol = Tolerance(t.codec, t.cols, abs_sum);
          if (yt == BP_OUT_BF16) tol += std::ldexp(std::fabs(ref) + tol, -8);  // one bf16 rounding
          const double err = std::fabs(got - ref);
          if (!(err <= tol)) {
            std::printf("FAIL %s: gemv batch %d y %s row %" PRIu64 ": GPU %.9g, reference %.9g, |err| %.3g > %.3g\n",
                        name, batch, OutName(yt), row, got, ref, err, tol);
            return false;
          }
          if (tol > 0) worst = std::fmax(worst, err / tol);
        }
      }
    }
  }
  std::printf("  %s: gemv batch 1,2,4,8 f32/bf16 within tolerance (worst %.3f of it)\n", name, worst);
  return true;
}

// Descriptions the library must refuse before queueing anything.
bool CheckRefusals(const bp_cuda_tensor& good) {
  bool ok = true;
  auto expect = [&](const char* what, bp_status got) {
    if (got == BP_ERR_INVALID_ARGUMENT) return;
    std::printf("FAIL refusal '%s': status %d, message '%s'\n", what, got, bp_cuda_last_error());
    ok = false;
  };
  bp_cuda_tensor t = good;
  t.stream_bytes[0] -= 1;
  expect("short stream", bp_cuda_check(&t));
  t = good;
  t.streams[0] = static_cast<const uint8_t*>(good.streams[0]) + 1;
  expect("misaligned stream", bp_cuda_check(&t));
  t = good;
  t.cols += 8;
  expect("columns that do not match the bytes", bp_cuda_check(&t));
  DeviceBuffer dst(good.rows * good.cols * 4);
  expect("output too small", bp_cuda_decode(&good, BP_OUT_F32, dst.p, good.rows * good.cols * 4 - 1, nullptr));
  expect("batch 9", bp_cuda_gemv(&good, dst.p, 9, BP_OUT_F32, dst.p, nullptr));
  return ok;
}

// bp_cuda_upload refuses a tensor whose layout the kernels cannot take
// (layout.bolt: bf16 with 12 columns, not a multiple of 8) before it
// allocates: the status is INVALID_ARGUMENT, the message names the tensor,
// and no stream pointer is left set.
bool CheckLayoutRefusal(const bp_reader* r, size_t tensor, const char* name) {
  bp_cuda_tensor t{};
  bp_status st = bp_cuda_upload(r, tensor, &t);
  const std::string why = bp_cuda_last_error();
  bool ok = st == BP_ERR_INVALID_ARGUMENT && why.find(name) != std::string::npos &&
            why.find("columns") != std::string::npos;
  for (const void* p : t.streams) ok = ok && p == nullptr;
  std::printf("%s upload refuses %s before allocating: status %d, '%s'\n", ok ? "ok  " : "FAIL", name, st,
              why.c_str());
  bp_cuda_free(&t);
  return ok;
}

bool CheckFile(const char* path) {
  bp_reader* r = nullptr;
  if (bp_open(path, &r) != BP_OK) {
    std::printf("FAIL %s: %s\n", path, bp_last_error_message());
    return false;
  }
  if (std::string(path).ends_with("layout.bolt")) {
    struct bp_tensor_info info{};
    bool ok = bp_tensor_count(r) == 1 && bp_tensor_info(r, 0, &info) == BP_OK && CheckLayoutRefusal(r, 0, info.name);
    bp_close(r);
    return ok;
  }
  bool ok = true, refusals_checked = false;
  size_t checked = 0, skipped = 0;
  for (size_t i = 0; i < bp_tensor_count(r); ++i) {
    struct bp_tensor_info info{};
    bp_tensor_info(r, i, &info);
    bp_cuda_tensor t{};
    bp_status st = bp_cuda_upload(r, i, &t);
    if (st == BP_ERR_UNSUPPORTED || (st == BP_ERR_INVALID_ARGUMENT && info.ndim < 2)) {
      ++skipped;  // codec without kernels, or a vector the kernels' layout rules exclude
      continue;
    }
    if (st != BP_OK) {
      std::printf("FAIL %s: %s: bp_cuda_upload: %s\n", path, info.name, bp_cuda_last_error());
      ok = false;
      continue;
    }
    const std::string name = std::string(info.name) + " (" + info.codec + ", " + std::to_string(t.rows) + "x" +
                             std::to_string(t.cols) + ")";
    bool good = CheckDecode(r, i, t, name.c_str());
    good = good && CheckGemv(r, i, t, name.c_str());
    if (good && !refusals_checked) good = refusals_checked = CheckRefusals(t);
    std::printf("%s %s\n", good ? "ok  " : "FAIL", name.c_str());
    ok = ok && good;
    ++checked;
    bp_cuda_free(&t);
  }
  std::printf("%s: %zu tensors checked on the GPU, %zu without kernels\n", path, checked, skipped);
  bp_close(r);
  return ok && checked > 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FILE.bolt...\n", argv[0]);
    return 2;
  }
  bool ok = true;
  for (int i = 1; i < argc; ++i) ok = CheckFile(argv[i]) && ok;
  std::printf(ok ? "all agree\n" : "DISAGREEMENT\n");
  return ok ? 0 : 1;
}
