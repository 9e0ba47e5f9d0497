// IQ2_XXS encode on one core beside ggml's, in the same run, on the same
// weights: ../shared/anchors/ggml_anchor's (glibc rand(), srand(1):
// 0.02 * N(0,1) weights, importance 1 + (rand() % 100) / 10 per column),
// rebuilt here bit for bit, so the relative RMS errors compare too.
//   taskset -c 1 build/bench/iq2_xxs_peer_bench [ROWS COLS [ANCHOR]]
// runs bolt-pack's QuantizeRow over every row, decodes, prints M weights/s
// and rel_rmse, then runs the anchor (default ../shared/anchors/ggml_anchor
// from the source folder) and prints the ratio; "peer not measured" when it
// is not there. Both sides are the best of 3 (passes here, anchor runs
// there), so a core shared with other work skews the ratio less.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>
#include <string>
#include <vector>

#include "codecs/iq2_xxs/iq2_xxs_kernels.h"

namespace {

float Randn() {  // the anchor's
  double u1 = (rand() + 1.0) / (RAND_MAX + 2.0), u2 = (rand() + 1.0) / (RAND_MAX + 2.0);
  return static_cast<float>(std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2));
}

// The anchor's iq2_xxs line: its quant M/s and rel_rmse, or false.
bool RunAnchor(const std::string& anchor, long rows, long cols, double* mps, double* err) {
  std::string cmd = anchor + " " + std::to_string(rows) + " " + std::to_string(cols) + " 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return false;
  char line[512];
  bool found = false;
  while (std::fgets(line, sizeof line, p) != nullptr) {
    if (std::strncmp(line, "iq2_xxs", 7) != 0) continue;
    const char* q = std::strstr(line, "quant=");
    const char* e = std::strstr(line, "rel_rmse=");
    if (q != nullptr && e != nullptr) {
      *mps = std::atof(q + 6);
      *err = std::atof(e + 9);
      found = true;
    }
  }
  return pclose(p) == 0 && found;
}

}  // namespace

int main(int argc, char** argv) {
  const long rows = argc > 2 ? std::atol(argv[1]) : 1024, cols = argc > 2 ? std::atol(argv[2]) : 4096;
  // ../shared beside the checkout (a worktree's is one folder further up).
  std::string anchor = argc > 3 ? argv[3] : std::string(BOLTPACK_SOURCE_DIR) + "/../shared/anchors/ggml_anchor";
  if (argc <= 3 && access(anchor.c_str(), X_OK) != 0) {
    anchor = std::string(BOLTPACK_SOURCE_DIR) + "/../../shared/anchors/ggml_anchor";
  }
  const size_t n = static_cast<size_t>(rows * cols);
  std::vector<float> x(n), y(n), imat(static_cast<size_t>(cols));
  srand(1);
  for (auto& v : x) v = 0.02f * Randn();
  for (auto& v : imat) v = 1.0f + static_cast<float>(rand() % 100) / 10.0f;
  const size_t row_bytes = static_cast<size_t>(cols) / 256 * boltpack::iq2_xxs::kBlockBytes;
  std::vector<uint8_t> q(row_bytes * static_cast<size_t>(rows));
  double best = 1e30;
  for (int pass = 0; pass < 3; ++pass) {
    const auto t0 = std::chrono::steady_clock::now();
    for (long r = 0; r < rows; ++r) {
      boltpack::iq2_xxs::QuantizeRow(x.data() + r * cols, imat.data(), static_cast<size_t>(cols),
                                     q.data() + r * row_bytes);
    }
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  boltpack::iq2_xxs::DecodeBlocksF32(q.data(), n / 256, y.data());
  double e2 = 0, r2 = 0;
  for (size_t i = 0; i < n; ++i) {
    const double d = x[i] - y[i];
    e2 += d * d;
    r2 += static_cast<double>(x[i]) * x[i];
  }
  const double mps = n / best / 1e6, err = std::sqrt(e2 / r2);
  std::printf("bolt-pack iq2_xxs (imatrix), 1 thread: %.1f M weights/s, rel_rmse %.5f\n", mps, err);
  double gm = 0, ge = 0;
  for (int run = 0; run < 3; ++run) {
    double m = 0, e = 0;
    if (!RunAnchor(anchor, rows, cols, &m, &e)) {
      std::printf("ggml: peer not measured (%s not there)\n", anchor.c_str());
      return 0;
    }
    if (m > gm) gm = m;
    ge = e;
  }
  std::printf("ggml iq2_xxs (imatrix), 1 thread:      %.1f M weights/s, rel_rmse %.5f\n", gm, ge);
  std::printf("ratio: %.1fx ggml's speed, error %.4f of ggml's\n", mps / gm, err / ge);
  return 0;
}
