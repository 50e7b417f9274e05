// SPDX-License-Identifier: Apache-2.0
// eigen_gemm: single-threaded f32 GEMM throughput on this machine, the hardware reference of
// the executor benchmark. One line per size n: Eigen's best and mean GFLOP/s over repeated
// C.noalias() = A * B (n x n, 2 n^3 flops per product), then the same for gpass's GEMM engine
// (`kernels/sgemm.hpp`, the kernel it picks at run time) as the executor uses it: B packed
// once (a constant weight), A read in place, C overwritten.
#include <Eigen/Core>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>

#include <gpass/exec/eigen_cpu/kernels/sgemm.hpp>

namespace {

template <class F, class G>
void measure(const char* what, int n, int reps, F&& product, G&& check) {
  const double flops = 2.0 * n * n * static_cast<double>(n);
  product();  // warm-up
  double best = 1e30, total = 0;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    product();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::min(best, s);
    total += s;
  }
  std::printf("{\"gemm\": \"%s\", \"gemm_n\": %d, \"best_gflops\": %.1f, \"mean_gflops\": %.1f, \"check\": %.3f}\n", what, n,
              flops / best * 1e-9, flops / (total / reps) * 1e-9, check());
}

}  // namespace

int main() {
  namespace sg = gpass::exec::cpu_detail::sgemm;
  Eigen::setNbThreads(1);
  const sg::kernel_info& ki = sg::kernel();
  const std::string gpass_name = "gpass-" + std::string(ki.name);
  for (int n : {512, 1024}) {
    using row_major = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    row_major a = row_major::Random(n, n), b = row_major::Random(n, n), c(n, n), d(n, n);
    const int reps = n <= 512 ? 20 : 5;
    measure("eigen", n, reps, [&] { c.noalias() = a * b; }, [&] { return static_cast<double>(c(0, 0)); });
    const sg::packed_b pb(b.data(), n, false, n, n);
    measure(gpass_name.c_str(), n, reps,
            [&] { sg::multiply(ki, a.data(), 0, n, pb.data.data(), pb.panel_stride(), n, n, d.data(), n, false, 0, -1, n); },
            [&] { return static_cast<double>(d(0, 0)); });
    if (std::abs(c(0, 0) - d(0, 0)) > 1e-3f * (1.0f + std::abs(c(0, 0)))) {
      std::fprintf(stderr, "gpass GEMM disagrees with Eigen: %g vs %g\n", static_cast<double>(d(0, 0)), static_cast<double>(c(0, 0)));
      return 1;
    }
  }
  return 0;
}
