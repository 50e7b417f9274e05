// eigen_gemm: single-threaded Eigen f32 GEMM throughput on this machine (the hardware
// reference for the executor benchmark). Prints one line per size: n, best GFLOP/s over
// repeated C.noalias() = A * B with n x n matrices (2 n^3 flops per product).
#include <Eigen/Core>

#include <algorithm>
#include <chrono>
#include <cstdio>

int main() {
  Eigen::setNbThreads(1);
  for (int n : {512, 1024}) {
    Eigen::MatrixXf a = Eigen::MatrixXf::Random(n, n), b = Eigen::MatrixXf::Random(n, n), c(n, n);
    c.noalias() = a * b;  // warm-up
    const double flops = 2.0 * n * n * static_cast<double>(n);
    const int reps = n <= 512 ? 20 : 5;
    double best = 1e30, total = 0;
    for (int r = 0; r < reps; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      c.noalias() = a * b;
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      best = std::min(best, s);
      total += s;
    }
    std::printf("{\"gemm_n\": %d, \"best_gflops\": %.1f, \"mean_gflops\": %.1f, \"check\": %.3f}\n", n,
                flops / best * 1e-9, flops / (total / reps) * 1e-9, static_cast<double>(c(0, 0)));
  }
  return 0;
}
