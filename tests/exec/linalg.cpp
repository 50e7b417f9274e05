// SPDX-License-Identifier: Apache-2.0
// Tests of the Eigen CPU linalg kernels (MatMul, Gemm, Conv, ConvTranspose, pooling,
// Einsum, Det, quantized products).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <numeric>
#include <set>
#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <gpass/exec/eigen_cpu.hpp>
#include <gpass/exec/eigen_cpu/kernels/linalg.hpp>  // the GEMM internals (cpu_detail::sgemm, linalg)

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_exec_linalg {

namespace {

using gpass::tensor;
using gpass::exec::eigen_cpu;
using gpass::exec::kernel_node;
using gpass::exec::kernel_registry;
using gpass::exec::value;
using i64 = std::int64_t;
using i32 = std::int32_t;

const kernel_registry<eigen_cpu>& linalg_registry() {
  static const kernel_registry<eigen_cpu> r = [] {
    kernel_registry<eigen_cpu> k;
    gpass::exec::register_eigen_cpu_linalg(k);
    return k;
  }();
  return r;
}

kernel_node make_node(std::string op, std::size_t inputs, gpass::attribute_map attrs = {}, int opset = 17,
                      std::size_t outputs = 1) {
  kernel_node n{.name = "n", .op = std::move(op), .attrs = std::move(attrs), .opset = opset};
  n.input_types.resize(inputs);
  n.output_types.resize(outputs);
  return n;
}

std::vector<value> run(const kernel_node& n, std::vector<value> in, int threads = 1) {
  eigen_cpu cpu({.threads = threads});
  return gpass::exec::run_kernel(cpu, linalg_registry(), n, std::move(in));
}

tensor run1(const kernel_node& n, std::vector<value> in, int threads = 1) { return run(n, std::move(in), threads)[0].tensor(); }

template <class T>
void check_close(const tensor& got, const std::vector<T>& want, const std::vector<i64>& sizes, double tol = 1e-4) {
  REQUIRE(got.sizes() == sizes);
  REQUIRE(got.size() == static_cast<i64>(want.size()));
  const T* p = got.data<T>();
  for (std::size_t i = 0; i < want.size(); ++i) {
    INFO("element " << i);
    CHECK(std::abs(static_cast<double>(p[i]) - static_cast<double>(want[i])) <= tol * (1.0 + std::abs(static_cast<double>(want[i]))));
  }
}

std::vector<float> random_values(std::size_t n, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

tensor random_tensor(std::vector<i64> sizes, unsigned seed) {
  i64 n = 1;
  for (i64 s : sizes) n *= s;
  return tensor::from<float>(random_values(static_cast<std::size_t>(n), seed), sizes);
}

std::vector<float> values_of(const tensor& t) { return {t.data<float>(), t.data<float>() + t.size()}; }

// Reference 2-D convolution (NCHW), direct loops.
std::vector<float> ref_conv2d(const tensor& x, const tensor& w, const float* bias, i64 G, std::array<i64, 2> s,
                              std::array<i64, 2> d, std::array<i64, 4> pads, std::vector<i64>& ys) {
  const i64 N = x.sizes()[0], C = x.sizes()[1], H = x.sizes()[2], W = x.sizes()[3];
  const i64 M = w.sizes()[0], Cg = w.sizes()[1], KH = w.sizes()[2], KW = w.sizes()[3];
  const i64 OH = (H + pads[0] + pads[2] - ((KH - 1) * d[0] + 1)) / s[0] + 1;
  const i64 OW = (W + pads[1] + pads[3] - ((KW - 1) * d[1] + 1)) / s[1] + 1;
  ys = {N, M, OH, OW};
  std::vector<float> y(static_cast<std::size_t>(N * M * OH * OW));
  const float* xp = x.data<float>();
  const float* wp = w.data<float>();
  const i64 Mg = M / G;
  (void)C;
  for (i64 n = 0; n < N; ++n)
    for (i64 m = 0; m < M; ++m)
      for (i64 oh = 0; oh < OH; ++oh)
        for (i64 ow = 0; ow < OW; ++ow) {
          double acc = bias ? bias[m] : 0.0;
          const i64 g = m / Mg;
          for (i64 c = 0; c < Cg; ++c)
            for (i64 kh = 0; kh < KH; ++kh)
              for (i64 kw = 0; kw < KW; ++kw) {
                const i64 ih = oh * s[0] - pads[0] + kh * d[0], iw = ow * s[1] - pads[1] + kw * d[1];
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                acc += static_cast<double>(xp[((n * C + g * Cg + c) * H + ih) * W + iw]) *
                       wp[((m * Cg + c) * KH + kh) * KW + kw];
              }
          y[static_cast<std::size_t>(((n * M + m) * OH + oh) * OW + ow)] = static_cast<float>(acc);
        }
  return y;
}

}  // namespace

TEST_CASE("exec.linalg.matmul_2d_and_vectors") {
  auto a = tensor::from<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  auto b = tensor::from<float>({1, 0, 0, 1, 1, 1}, {3, 2});
  auto n = make_node("MatMul", 2);
  check_close<float>(run1(n, {a, b}), {4, 5, 10, 11}, {2, 2});
  // 1-D promotion on either side
  check_close<float>(run1(n, {tensor::from<float>({1, 1, 1}), b}), {2, 2}, {2});
  check_close<float>(run1(n, {a, tensor::from<float>({1, 1, 1})}), {6, 15}, {2});
  check_close<float>(run1(n, {tensor::from<float>({1, 2}), tensor::from<float>({3, 4})}), {11}, {});
  // f64 and int
  auto ad = tensor::from<double>({1, 2, 3, 4}, {2, 2});
  check_close<double>(run1(n, {ad, ad}), {7, 10, 15, 22}, {2, 2});
  auto ai = tensor::from<std::int32_t>({1, 2, 3, 4}, {2, 2});
  check_close<std::int32_t>(run1(n, {ai, ai}), {7, 10, 15, 22}, {2, 2});
  auto ah = tensor::from<Eigen::half>({Eigen::half(1), Eigen::half(2), Eigen::half(3), Eigen::half(4)}, {2, 2});
  auto yh = run1(n, {ah, ah});
  CHECK(static_cast<float>(yh.data<Eigen::half>()[3]) == 22.f);
}

TEST_CASE("exec.linalg.matmul_batched_broadcast") {
  auto n = make_node("MatMul", 2);
  // a [2,1,2,2] x b [3,2,2] -> [2,3,2,2]
  auto a = tensor::from<float>({1, 0, 0, 1, 2, 0, 0, 2}, {2, 1, 2, 2});
  auto b = tensor::from<float>({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {3, 2, 2});
  auto y = run1(n, {a, b});
  REQUIRE(y.sizes() == std::vector<i64>{2, 3, 2, 2});
  const float* p = y.data<float>();
  for (int i = 0; i < 12; ++i) CHECK(p[i] == static_cast<float>(i + 1));
  for (int i = 0; i < 12; ++i) CHECK(p[12 + i] == static_cast<float>(2 * (i + 1)));
  // folded batch: [2,2,3] x [3,1]
  auto y2 = run1(n, {tensor::from<float>({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {2, 2, 3}), tensor::from<float>({1, 1, 1}, {3, 1})});
  check_close<float>(y2, {6, 15, 24, 33}, {2, 2, 1});
  // empty inner dimension gives zeros
  auto y3 = run1(n, {tensor(gpass::dtype::f32, {2, 0}), tensor(gpass::dtype::f32, {0, 3})});
  check_close<float>(y3, {0, 0, 0, 0, 0, 0}, {2, 3});
  // errors
  CHECK_THROWS_AS(run1(n, {tensor::from<float>({1, 2, 3}, {1, 3}), tensor::from<float>({1, 2}, {2, 1})}), gpass::error);
  CHECK_THROWS_AS(run1(n, {tensor(gpass::dtype::f32, {2, 2, 2}), tensor(gpass::dtype::f32, {3, 2, 2})}), gpass::error);
}

TEST_CASE("exec.linalg.matmul_parallel_matches_serial") {
  auto n = make_node("MatMul", 2);
  for (auto [M, K, N] : std::vector<std::array<i64, 3>>{{64, 200, 300}, {1, 512, 700}, {300, 64, 40}, {5, 7, 3}}) {
    auto a = random_tensor({M, K}, 1), b = random_tensor({K, N}, 2);
    auto y1 = run1(n, {a, b}, 1), y2 = run1(n, {a, b}, 2);
    check_close<float>(y2, values_of(y1), {M, N}, 1e-5);
    // spot check against a dot product
    const float* ap = a.data<float>();
    const float* bp = b.data<float>();
    double acc = 0;
    for (i64 k = 0; k < K; ++k) acc += static_cast<double>(ap[(M - 1) * K + k]) * bp[k * N + N - 1];
    CHECK(std::abs(y1.data<float>()[M * N - 1] - acc) < 1e-3);
  }
  // many batches in parallel
  auto a = random_tensor({8, 16, 32}, 3), b = random_tensor({8, 32, 24}, 4);
  check_close<float>(run1(n, {a, b}, 2), values_of(run1(n, {a, b}, 1)), {8, 16, 24}, 1e-5);
}

TEST_CASE("exec.linalg.products_flush_subnormals") {
  // every product (the engine's micro-kernels and Eigen's) reads subnormal operands as zero and
  // writes subnormal results as zero, and leaves the thread's floating-point mode as it was
  namespace sg = gpass::exec::cpu_detail::sgemm;
  const float tiny = 1e-39f;  // subnormal
  REQUIRE(std::fpclassify(tiny) == FP_SUBNORMAL);
#if defined(__x86_64__) || defined(__i386__)
  const unsigned csr = _mm_getcsr();
#endif
  for (const sg::kernel_info& ki : sg::available_kernels()) {
    INFO(std::string(ki.name));
    const i64 M = 3, N = 5, K = 4;
    std::vector<float> a(static_cast<std::size_t>(M * K), tiny), b(static_cast<std::size_t>(K * N), 1.0f);
    a[1] = 2.0f;      // A(0, 1): row 0 is 2 * B's row 1 = 2
    b[N + 4] = 0.5f;  // B(1, 4)
    std::vector<float> pb(static_cast<std::size_t>(sg::panels(N, ki.nr) * K * ki.nr));
    sg::pack_b(b.data(), N, false, K, N, ki.nr, pb.data());
    std::vector<float> c(static_cast<std::size_t>(M * N), -1.0f);
    sg::multiply(ki, a.data(), 0, M, pb.data(), K * ki.nr, N, K, c.data(), N, false, 0, -1, K);
    // with subnormals kept, row 0 would be 2 + 3e-39 (rounds to 2) and rows 1-2 4e-39
    for (i64 j = 0; j < N; ++j) CHECK(c[static_cast<std::size_t>(j)] == (j == 4 ? 1.0f : 2.0f));
    for (i64 i = N; i < M * N; ++i) CHECK(c[static_cast<std::size_t>(i)] == 0.0f);
  }
  // MatMul of two activations (Eigen's product): 1e-20 * 1e-20 = 1e-40 is subnormal -> 0
  const auto mm = make_node("MatMul", 2);
  auto y = run1(mm, {tensor::from<float>({1e-20f, 1e-20f}, {1, 2}), tensor::from<float>({1e-20f, 1e-20f}, {2, 1})});
  CHECK(y.data<float>()[0] == 0.0f);
  // and a subnormal operand reads as zero: 1e-39 * 1e30 would be 1e-9
  auto z = run1(mm, {tensor::from<float>({tiny, 0.0f}, {1, 2}), tensor::from<float>({1e30f, 0.0f}, {2, 1})});
  CHECK(z.data<float>()[0] == 0.0f);
#if defined(__x86_64__) || defined(__i386__)
  CHECK(_mm_getcsr() == csr);
#endif
}

TEST_CASE("exec.linalg.gemm") {
  auto a = tensor::from<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  auto b = tensor::from<float>({1, 2, 3, 4, 5, 6}, {3, 2});
  // A*B = [[22,28],[49,64]]
  check_close<float>(run1(make_node("Gemm", 2), {a, b}), {22, 28, 49, 64}, {2, 2});
  check_close<float>(run1(make_node("Gemm", 3), {a, b, tensor::scalar(1.f)}), {23, 29, 50, 65}, {2, 2});
  check_close<float>(run1(make_node("Gemm", 3), {a, b, tensor::from<float>({1, 2})}), {23, 30, 50, 66}, {2, 2});
  check_close<float>(run1(make_node("Gemm", 3), {a, b, tensor::from<float>({1, 2}, {2, 1})}), {23, 29, 51, 66}, {2, 2});
  gpass::attribute_map at{{"alpha", 0.5}, {"beta", 2.0}, {"transA", std::int64_t{1}}, {"transB", std::int64_t{1}}};
  // A^T [3,2] * B^T [2,3] with A=[2,3]: A^T*B^T = (B*A)^T ; B*A with B [3,2], A [2,3]
  auto at_ = tensor::from<float>({1, 2, 3, 4}, {2, 2});
  auto bt_ = tensor::from<float>({1, 0, 0, 1}, {2, 2});
  // A^T = [[1,3],[2,4]], B^T = I -> 0.5*A^T + 2*C, C = [[1,1],[1,1]]
  check_close<float>(run1(make_node("Gemm", 3, at), {at_, bt_, tensor::from<float>({1, 1, 1, 1}, {2, 2})}),
                     {2.5f, 3.5f, 3.f, 4.f}, {2, 2});
  // C omitted as an empty optional
  check_close<float>(run1(make_node("Gemm", 3), {a, b, value{}}), {22, 28, 49, 64}, {2, 2});
  CHECK_THROWS_AS(run1(make_node("Gemm", 3), {a, b, tensor::from<float>({1, 2, 3})}), gpass::error);
  CHECK_THROWS_AS(run1(make_node("Gemm", 2), {a, a}), gpass::error);
  // parallel with bias, transB (the usual Linear layer)
  auto x = random_tensor({64, 300}, 5), w = random_tensor({200, 300}, 6), c = random_tensor({200}, 7);
  auto lin = make_node("Gemm", 3, {{"transB", std::int64_t{1}}});
  auto y1 = run1(lin, {x, w, c}, 1);
  check_close<float>(run1(lin, {x, w, c}, 2), values_of(y1), {64, 200}, 1e-5);
  double acc = c.data<float>()[7];
  for (i64 k = 0; k < 300; ++k) acc += static_cast<double>(x.data<float>()[3 * 300 + k]) * w.data<float>()[7 * 300 + k];
  CHECK(std::abs(y1.data<float>()[3 * 200 + 7] - acc) < 1e-3);
  auto x1 = random_tensor({1, 300}, 8);
  check_close<float>(run1(lin, {x1, w, c}, 2), values_of(run1(lin, {x1, w, c}, 1)), {1, 200}, 1e-5);
}

TEST_CASE("exec.linalg.sgemm_kernels") {
  // every f32 micro-kernel this processor can run (AVX-512, AVX2, portable) against a double
  // reference: ragged rows and columns (masked / partial tiles), several depth blocks, one row
  // panel (no depth blocks), both packing orders, accumulation into C
  namespace sg = gpass::exec::cpu_detail::sgemm;
  const std::vector<sg::kernel_info>& kernels = sg::available_kernels();
  REQUIRE(!kernels.empty());
  CHECK(kernels.back().name == "generic");
  struct cfg {
    i64 M, N, K;
    bool a_cols, b_cols, acc;
  };
  for (const sg::kernel_info& ki : kernels)
    for (const cfg& c : std::vector<cfg>{{1, 1, 1, false, false, false}, {7, 33, 5, true, false, true},
                                         {9, 47, 700, false, true, false}, {16, 64, 256, false, false, true},
                                         {13, 17, 1300, true, true, false}, {3, 100, 0, false, false, false},
                                         {600, 40, 700, false, true, true},   // 600 rows: two row blocks
                                         // one row panel (M <= mr: the whole depth in one
                                         // block, panels streamed), deep and ragged
                                         {1, 77, 1300, false, false, true}, {2, 33, 600, true, true, false},
                                         {5, 40, 513, false, true, true}}) {
      INFO(std::string(ki.name) << " M=" << c.M << " N=" << c.N << " K=" << c.K);
      const auto a = random_values(static_cast<std::size_t>(c.M * c.K), 51);
      const auto b = random_values(static_cast<std::size_t>(c.K * c.N), 52);
      const i64 ldc = c.N + 3;  // C inside a wider row-major matrix
      std::vector<float> cm(static_cast<std::size_t>(c.M * ldc), 0.25f);
      std::vector<float> pa(static_cast<std::size_t>(std::max<i64>(1, sg::panels(c.M, ki.mr) * c.K * ki.mr)));
      std::vector<float> pb(static_cast<std::size_t>(std::max<i64>(1, sg::panels(c.N, ki.nr) * c.K * ki.nr)));
      // A(i, k) is a[i * K + k]; stored transposed when a_cols (same values)
      std::vector<float> at(a.size()), bt(b.size());
      for (i64 i = 0; i < c.M; ++i)
        for (i64 k = 0; k < c.K; ++k) at[static_cast<std::size_t>(k * c.M + i)] = a[static_cast<std::size_t>(i * c.K + k)];
      for (i64 k = 0; k < c.K; ++k)
        for (i64 j = 0; j < c.N; ++j) bt[static_cast<std::size_t>(j * c.K + k)] = b[static_cast<std::size_t>(k * c.N + j)];
      if (c.a_cols) sg::pack_a(at.data(), c.M, true, c.M, c.K, ki.mr, pa.data());
      else sg::pack_a(a.data(), c.K, false, c.M, c.K, ki.mr, pa.data());
      if (c.b_cols) sg::pack_b(bt.data(), c.K, true, c.K, c.N, ki.nr, pb.data());
      else sg::pack_b(b.data(), c.N, false, c.K, c.N, ki.nr, pb.data());
      sg::multiply(ki, pa.data(), c.K * ki.mr, c.M, pb.data(), c.K * ki.nr, c.N, c.K, cm.data(), ldc, c.acc);
      for (i64 i = 0; i < c.M; ++i)
        for (i64 j = 0; j < ldc; ++j) {
          double want = 0.25;
          if (j < c.N) {
            want = c.acc ? 0.25 : 0.0;
            for (i64 k = 0; k < c.K; ++k)
              want += static_cast<double>(a[static_cast<std::size_t>(i * c.K + k)]) * b[static_cast<std::size_t>(k * c.N + j)];
          }
          INFO("C(" << i << ", " << j << ")");
          CHECK(std::abs(cm[static_cast<std::size_t>(i * ldc + j)] - want) <= 1e-4 * (1.0 + std::abs(want)));
        }
      // A read in place (row-major, row stride K + 2) gives the same product
      if (c.K > 0) {
        std::vector<float> a_wide(static_cast<std::size_t>(c.M * (c.K + 2)), 7.0f);
        for (i64 i = 0; i < c.M; ++i)
          for (i64 k = 0; k < c.K; ++k) a_wide[static_cast<std::size_t>(i * (c.K + 2) + k)] = a[static_cast<std::size_t>(i * c.K + k)];
        std::vector<float> direct(static_cast<std::size_t>(c.M * ldc), 0.25f);
        sg::multiply(ki, a_wide.data(), 0, c.M, pb.data(), c.K * ki.nr, c.N, c.K, direct.data(), ldc, c.acc, 0, -1, c.K + 2);
        for (std::size_t i = 0; i < direct.size(); ++i) CHECK(std::abs(direct[i] - cm[i]) <= 1e-4 * (1.0 + std::abs(cm[i])));
      }
      // a row bias: added to C = A * B (every depth block after the first accumulates without
      // it); with accumulation it is not added
      {
        const auto bias = random_values(static_cast<std::size_t>(c.M), 53);
        std::vector<float> biased(static_cast<std::size_t>(c.M * ldc), 0.25f);
        sg::multiply(ki, pa.data(), c.K * ki.mr, c.M, pb.data(), c.K * ki.nr, c.N, c.K, biased.data(), ldc, c.acc, 0, -1, 0,
                     bias.data());
        for (i64 i = 0; i < c.M; ++i)
          for (i64 j = 0; j < ldc; ++j) {
            const std::size_t at_ij = static_cast<std::size_t>(i * ldc + j);
            const double want = j < c.N && !c.acc ? cm[at_ij] + bias[static_cast<std::size_t>(i)] : cm[at_ij];
            CHECK(std::abs(biased[at_ij] - want) <= 1e-4 * (1.0 + std::abs(want)));
          }
      }
      // a column range (the split between threads) leaves the other columns alone
      if (c.N > ki.nr && c.K > 0) {
        std::vector<float> part(static_cast<std::size_t>(c.M * ldc), -1.0f);
        sg::multiply(ki, pa.data(), c.K * ki.mr, c.M, pb.data(), c.K * ki.nr, c.N, c.K, part.data(), ldc, false, ki.nr, c.N);
        for (i64 i = 0; i < c.M; ++i) {
          CHECK(part[static_cast<std::size_t>(i * ldc)] == -1.0f);
          CHECK(part[static_cast<std::size_t>(i * ldc + c.N - 1)] != -1.0f);
        }
      }
    }
}

TEST_CASE("exec.linalg.packed_constant_weights") {
  // Gemm / MatMul with B known as a constant when the kernel is made (packed once) agree with
  // the unpacked kernel, on 1 and 2 threads (splitting columns, or rows where M > N: 300 x 48,
  // 777 x 100 with a ragged last row panel); another B at run time is not mistaken for it
  struct cfg {
    i64 M, K, N;
    bool ta, tb;
  };
  for (const cfg& c : std::vector<cfg>{{64, 300, 200, false, true}, {2, 7, 5, false, false}, {17, 1100, 130, true, true},
                                       {33, 40, 1030, true, false}, {1, 50, 60, false, true}, {300, 64, 48, false, false},
                                       {777, 33, 100, true, false}}) {
    INFO("M=" << c.M << " K=" << c.K << " N=" << c.N << " transA=" << c.ta << " transB=" << c.tb);
    auto a = random_tensor(c.ta ? std::vector<i64>{c.K, c.M} : std::vector<i64>{c.M, c.K}, 31);
    auto b = random_tensor(c.tb ? std::vector<i64>{c.N, c.K} : std::vector<i64>{c.K, c.N}, 32);
    auto bias = random_tensor({c.N}, 33);
    auto n = make_node("Gemm", 3, {{"transA", std::int64_t{c.ta}}, {"transB", std::int64_t{c.tb}}, {"alpha", 0.5}, {"beta", 2.0}});
    auto packed = n;
    packed.constant_inputs = {std::nullopt, b};
    const auto want = values_of(run1(n, {a, b, bias}));
    check_close<float>(run1(packed, {a, b, bias}, 1), want, {c.M, c.N}, 1e-5);
    check_close<float>(run1(packed, {a, b, bias}, 2), want, {c.M, c.N}, 1e-5);
    auto n2 = make_node("Gemm", 2, {{"transA", std::int64_t{c.ta}}, {"transB", std::int64_t{c.tb}}});
    auto packed2 = n2;
    packed2.constant_inputs = {std::nullopt, b};
    check_close<float>(run1(packed2, {a, b}, 2), values_of(run1(n2, {a, b})), {c.M, c.N}, 1e-5);
    auto other = random_tensor(b.sizes(), 34);
    check_close<float>(run1(packed, {a, other, bias}, 2), values_of(run1(n, {a, other, bias})), {c.M, c.N}, 1e-5);
  }
  // f64 Gemm
  {
    auto a = tensor(gpass::dtype::f64, {9, 13}), b = tensor(gpass::dtype::f64, {13, 6});
    for (i64 i = 0; i < a.size(); ++i) a.data<double>()[i] = std::sin(static_cast<double>(i));
    for (i64 i = 0; i < b.size(); ++i) b.data<double>()[i] = std::cos(static_cast<double>(i));
    auto n = make_node("Gemm", 2), packed = n;
    packed.constant_inputs = {std::nullopt, b};
    const auto got = run1(packed, {a, b}), want = run1(n, {a, b});
    for (i64 i = 0; i < want.size(); ++i) CHECK(std::abs(got.data<double>()[i] - want.data<double>()[i]) < 1e-12);
  }
  // MatMul: batched A [3, 5, K] times a constant B [K, N] (and [1, K, N])
  for (const auto& bs : std::vector<std::vector<i64>>{{70, 90}, {1, 70, 90}}) {
    auto a = random_tensor({3, 5, 70}, 41), b = random_tensor(bs, 42);
    auto n = make_node("MatMul", 2), packed = n;
    packed.constant_inputs = {std::nullopt, b};
    const auto want = run1(n, {a, b});
    check_close<float>(run1(packed, {a, b}, 1), values_of(want), want.sizes(), 1e-5);
    check_close<float>(run1(packed, {a, b}, 2), values_of(want), want.sizes(), 1e-5);
    auto a1 = random_tensor({70}, 43);  // a vector: one row (a packed GEMV)
    check_close<float>(run1(packed, {a1, b}), values_of(run1(n, {a1, b})), run1(n, {a1, b}).sizes(), 1e-5);
  }
}

TEST_CASE("exec.linalg.conv") {
  // the ONNX basic example: 5x5 input 0..24, 3x3 ones kernel
  std::vector<float> xv(25);
  for (int i = 0; i < 25; ++i) xv[i] = static_cast<float>(i);
  auto x = tensor::from<float>(xv, {1, 1, 5, 5});
  auto w = tensor::from<float>(std::vector<float>(9, 1.f), {1, 1, 3, 3});
  check_close<float>(run1(make_node("Conv", 2, {{"pads", std::vector<i64>{1, 1, 1, 1}}}), {x, w}),
                     {12, 21, 27, 33, 24, 33, 54, 63, 72, 51, 63, 99, 108, 117, 81, 93, 144, 153, 162, 111, 72, 111, 117, 123, 84},
                     {1, 1, 5, 5});
  check_close<float>(run1(make_node("Conv", 2), {x, w}), {54, 63, 72, 99, 108, 117, 144, 153, 162}, {1, 1, 3, 3});
  // SAME_LOWER, stride 2
  check_close<float>(run1(make_node("Conv", 2, {{"auto_pad", std::string("SAME_LOWER")}, {"strides", std::vector<i64>{2, 2}}}), {x, w}),
                     {12, 27, 24, 63, 108, 81, 72, 117, 84}, {1, 1, 3, 3});
  // errors
  CHECK_THROWS_AS(run1(make_node("Conv", 2), {x, tensor(gpass::dtype::f32, {1, 2, 3, 3})}), gpass::error);
  CHECK_THROWS_AS(run1(make_node("Conv", 2, {{"auto_pad", std::string("BOGUS")}}), {x, w}), gpass::error);
  CHECK_THROWS_AS(run1(make_node("Conv", 2), {x, tensor(gpass::dtype::f32, {1, 1, 7, 7})}), gpass::error);
  CHECK_THROWS_AS(run1(make_node("Conv", 2), {x, tensor(gpass::dtype::f32, {1, 1, 0, 3})}), gpass::error);
  CHECK_THROWS_AS(run1(make_node("Conv", 2, {{"kernel_shape", std::vector<i64>{2, 2}}}), {x, w}), gpass::error);
}

// An empty input whose padding makes the output (fuzz finding: im2col formed a pointer from
// the empty input's null data with the padding's offset): every tap reads padding, the
// output is the bias (then the fused step), on every path: the generic one, a packed
// constant filter (im2col panels, the in-place grid, pointwise), depthwise, ConvInteger.
TEST_CASE("exec.linalg.conv_of_an_empty_input_is_the_bias") {
  for (auto [C, M, G, K, pads] : std::vector<std::tuple<i64, i64, i64, i64, std::vector<i64>>>{
           {1, 2, 1, 3, {0, 0, 0, 71}}, {3, 4, 1, 3, {1, 1, 1, 9}}, {2, 2, 2, 3, {0, 2, 0, 5}}, {2, 3, 1, 1, {0, 0, 0, 4}}})
    for (bool constant : {false, true})
      for (const char* act : {"", "Relu"}) {
        CAPTURE(C);
        CAPTURE(M);
        CAPTURE(constant);
        const tensor x(gpass::dtype::f32, {2, C, 5, 0});
        const tensor w = random_tensor({M, C / G, K, K}, 3);
        std::vector<float> bv(static_cast<std::size_t>(M));
        for (i64 m = 0; m < M; ++m) bv[static_cast<std::size_t>(m)] = m % 2 ? 0.5f : -0.25f;
        const tensor b = tensor::from<float>(bv, {M});
        kernel_node n = make_node("FusedConv", 3, {{"pads", pads}, {"group", G}, {"activation", std::string(act)}});
        n.domain = "gpass";
        n.opset = 1;
        if (constant) n.constant_inputs = {std::nullopt, w, std::nullopt};
        const tensor y = run1(n, {x, w, b});
        const i64 OH = 5 + pads[0] + pads[2] - K + 1, OW = pads[1] + pads[3] - K + 1;
        REQUIRE(y.sizes() == std::vector<i64>{2, M, OH, OW});
        bool all = true;
        for (i64 i = 0; i < y.size(); ++i) {
          const float want = bv[static_cast<std::size_t>((i / (OH * OW)) % M)];
          all = all && y.data<float>()[i] == (std::string(act) == "Relu" ? std::max(want, 0.0f) : want);
        }
        CHECK(all);
      }
  // ConvInteger (the same loops on integers): zeros
  const tensor xi(gpass::dtype::uint8, {1, 1, 4, 0});
  const tensor wi = tensor::from<std::uint8_t>(std::vector<std::uint8_t>(9, 1), {1, 1, 3, 3});
  const tensor yi = run1(make_node("ConvInteger", 2, {{"pads", std::vector<i64>{0, 1, 0, 2}}}, 10), {xi, wi});
  REQUIRE(yi.sizes() == std::vector<i64>{1, 1, 2, 1});
  CHECK(yi.data<std::int32_t>()[0] == 0);
  CHECK(yi.data<std::int32_t>()[1] == 0);
}

// Pooling an empty input whose padding makes the output: windows entirely in padding give 0
// (LpPool and MaxPool with Indices formed the row pointer from the empty input's null data).
TEST_CASE("exec.linalg.pooling_of_an_empty_input") {
  const tensor x(gpass::dtype::f32, {1, 2, 4, 0});
  const gpass::attribute_map at{{"kernel_shape", std::vector<i64>{3, 3}}, {"pads", std::vector<i64>{1, 1, 1, 9}}};
  for (const char* op : {"LpPool", "MaxPool", "AveragePool"}) {
    CAPTURE(op);
    const auto out = run(make_node(op, 1, at, 18, std::string(op) == "MaxPool" ? 2 : 1), {x});
    const tensor& y = out[0].tensor();
    REQUIRE(y.sizes() == std::vector<i64>{1, 2, 4, 8});
    bool zeros = true;
    for (i64 i = 0; i < y.size(); ++i) zeros = zeros && y.data<float>()[i] == 0.0f;
    CHECK(zeros);
  }
}

TEST_CASE("exec.linalg.conv_against_reference") {
  struct cfg {
    i64 N, C, H, W, M, G, KH, KW;
    std::array<i64, 2> s, d;
    std::array<i64, 4> pads;
  };
  for (const cfg& c : std::vector<cfg>{{2, 4, 9, 11, 6, 2, 3, 3, {2, 1}, {1, 1}, {1, 0, 2, 1}},
                                       {1, 3, 8, 8, 4, 1, 1, 1, {1, 1}, {1, 1}, {0, 0, 0, 0}},
                                       {1, 8, 20, 20, 8, 8, 3, 3, {1, 1}, {1, 1}, {1, 1, 1, 1}},
                                       {1, 3, 10, 12, 5, 1, 3, 2, {1, 2}, {2, 2}, {2, 1, 0, 3}},
                                       {1, 16, 40, 40, 32, 1, 3, 3, {1, 1}, {1, 1}, {1, 1, 1, 1}},
                                       {1, 64, 7, 7, 128, 1, 1, 1, {1, 1}, {1, 1}, {0, 0, 0, 0}},
                                       {2, 6, 5, 5, 6, 3, 2, 2, {2, 2}, {1, 1}, {0, 0, 0, 0}},
                                       // depthwise (direct path), with a channel multiplier, strides, dilations
                                       {2, 8, 13, 17, 8, 8, 3, 3, {1, 1}, {1, 1}, {1, 1, 1, 1}},
                                       {1, 4, 12, 11, 8, 4, 3, 3, {2, 2}, {1, 1}, {1, 0, 1, 1}},
                                       {1, 3, 9, 10, 3, 3, 2, 5, {1, 3}, {2, 1}, {0, 2, 1, 2}},
                                       {1, 16, 30, 30, 16, 16, 5, 5, {1, 1}, {1, 1}, {2, 2, 2, 2}},
                                       // depthwise through the polyphase planes: small planes, strides
                                       // 2 and 3 with dilations, multipliers, tall and 1x1 filters,
                                       // pads wider than the filter, and huge dilations over huge
                                       // pads (the direct loops, no scratch planes)
                                       {1, 6, 7, 7, 6, 6, 3, 3, {2, 2}, {1, 1}, {1, 1, 1, 1}},
                                       {1, 5, 15, 14, 10, 5, 3, 3, {3, 2}, {2, 3}, {2, 1, 3, 0}},
                                       {2, 4, 6, 9, 4, 4, 7, 1, {1, 1}, {1, 1}, {3, 0, 3, 0}},
                                       {1, 3, 4, 4, 3, 3, 3, 3, {1, 1}, {1, 1}, {4, 4, 4, 4}},
                                       {1, 2, 5, 6, 2, 2, 1, 1, {2, 2}, {1, 1}, {0, 0, 0, 0}},
                                       {1, 3, 33, 35, 6, 3, 5, 4, {2, 3}, {3, 2}, {0, 5, 2, 1}},
                                       {1, 2, 3, 3, 2, 2, 3, 3, {1, 1}, {1000, 1000}, {1000, 1000, 1000, 1000}},
                                       // depthwise vectorized over channels (short rows): 3 blocks of 8, the last ragged;
                                       // stride 2 with rows too long for it (the planes)
                                       {2, 20, 7, 6, 20, 20, 3, 3, {1, 1}, {1, 1}, {1, 1, 1, 1}},
                                       {1, 6, 40, 37, 6, 6, 3, 3, {2, 2}, {1, 1}, {1, 1, 1, 1}},
                                       // grouped 1x1 read in place: a whole panel and a ragged one
                                       {2, 10, 7, 9, 24, 2, 1, 1, {1, 1}, {1, 1}, {0, 0, 0, 0}},
                                       // stride 1 on the padded input's grid: groups, dilations, ragged pads
                                       {2, 8, 12, 13, 6, 2, 3, 3, {1, 1}, {2, 2}, {2, 1, 2, 3}},
                                       {1, 5, 40, 23, 33, 1, 1, 3, {1, 1}, {1, 1}, {0, 1, 0, 1}},
                                       // many filters over a shallow depth: the grid's copy-out blocks capped (Mg x cb <= 1 MB)
                                       {1, 2, 30, 37, 600, 1, 2, 2, {1, 1}, {1, 1}, {0, 0, 0, 0}},
                                       // strided, on polyphase planes: a 7x7 stem, 1x1 stride 2, stride 3 + dilation 2
                                       {1, 3, 23, 21, 8, 1, 7, 7, {2, 2}, {1, 1}, {3, 3, 3, 3}},
                                       {2, 12, 9, 11, 10, 1, 1, 1, {2, 2}, {1, 1}, {0, 0, 0, 0}},
                                       {1, 4, 20, 25, 6, 2, 3, 3, {3, 3}, {2, 2}, {1, 2, 2, 1}},
                                       // depth C*KH*KW = 1152: several depth blocks of the packed product
                                       {1, 128, 10, 9, 40, 1, 3, 3, {1, 1}, {1, 1}, {1, 1, 1, 1}},
                                       {2, 96, 6, 6, 70, 1, 1, 1, {1, 1}, {1, 1}, {0, 0, 0, 0}}}) {
    auto x = random_tensor({c.N, c.C, c.H, c.W}, 11), w = random_tensor({c.M, c.C / c.G, c.KH, c.KW}, 12),
         b = random_tensor({c.M}, 13);
    std::vector<i64> ys;
    auto want = ref_conv2d(x, w, b.data<float>(), c.G, c.s, c.d, c.pads, ys);
    gpass::attribute_map at{{"group", c.G},
                            {"strides", std::vector<i64>{c.s[0], c.s[1]}},
                            {"dilations", std::vector<i64>{c.d[0], c.d[1]}},
                            {"pads", std::vector<i64>{c.pads[0], c.pads[1], c.pads[2], c.pads[3]}},
                            {"kernel_shape", std::vector<i64>{c.KH, c.KW}}};
    auto n = make_node("Conv", 3, at);
    check_close<float>(run1(n, {x, w, b}, 1), want, ys, 1e-4);
    check_close<float>(run1(n, {x, w, b}, 2), want, ys, 1e-4);
    // the filter known as a constant when the kernel is made (packed once)
    auto packed = n;
    packed.constant_inputs = {std::nullopt, w};
    check_close<float>(run1(packed, {x, w, b}, 1), want, ys, 1e-4);
    check_close<float>(run1(packed, {x, w, b}, 2), want, ys, 1e-4);
    check_close<float>(run1(packed, {x, w}, 2), ref_conv2d(x, w, nullptr, c.G, c.s, c.d, c.pads, ys), ys, 1e-4);
  }
  // 1-D and 3-D convolutions agree with 2-D ones with a unit dimension
  auto x = random_tensor({1, 2, 9}, 21), w = random_tensor({3, 2, 3}, 22);
  auto y1 = run1(make_node("Conv", 2, {{"pads", std::vector<i64>{1, 0}}}), {x, w});
  auto y2 = run1(make_node("Conv", 2, {{"pads", std::vector<i64>{0, 1, 0, 0}}}), {x.reshaped({1, 2, 1, 9}), w.reshaped({3, 2, 1, 3})});
  check_close<float>(y1, values_of(y2), {1, 3, 8});
  auto y3 = run1(make_node("Conv", 2, {{"pads", std::vector<i64>{0, 0, 1, 0, 0, 0}}}),
                 {x.reshaped({1, 2, 1, 1, 9}), w.reshaped({3, 2, 1, 1, 3})});
  check_close<float>(y3, values_of(y2), {1, 3, 1, 1, 8});
  // the same with the filter packed (im2col into panels through the generic row path)
  for (auto [xs, ws, pads] : std::vector<std::tuple<std::vector<i64>, std::vector<i64>, std::vector<i64>>>{
           {{1, 2, 9}, {3, 2, 3}, {1, 0}}, {{1, 2, 1, 1, 9}, {3, 2, 1, 1, 3}, {0, 0, 1, 0, 0, 0}}}) {
    auto n = make_node("Conv", 2, {{"pads", pads}});
    auto packed = n;
    const tensor wr = w.reshaped(ws);
    packed.constant_inputs = {std::nullopt, wr};
    check_close<float>(run1(packed, {x.reshaped(xs), wr}), values_of(y2), run1(n, {x.reshaped(xs), wr}).sizes());
  }
  // a packed 1-D convolution read in place (several panels, ragged last one, dilation, two
  // images, 1 and 2 threads) against the unpacked 2-D one
  auto xl = random_tensor({2, 10, 77}, 23), wl = random_tensor({20, 10, 5}, 24), bl = random_tensor({20}, 25);
  gpass::attribute_map a1{{"pads", std::vector<i64>{3, 1}}, {"dilations", std::vector<i64>{2}}};
  gpass::attribute_map a2{{"pads", std::vector<i64>{0, 3, 0, 1}}, {"dilations", std::vector<i64>{1, 2}}};
  auto yl = run1(make_node("Conv", 3, a2), {xl.reshaped({2, 10, 1, 77}), wl.reshaped({20, 10, 1, 5}), bl});
  auto n1 = make_node("Conv", 3, a1);
  n1.constant_inputs = {std::nullopt, wl};
  for (int threads : {1, 2}) check_close<float>(run1(n1, {xl, wl, bl}, threads), values_of(yl), {2, 20, 73}, 1e-4);
}

TEST_CASE("exec.linalg.fused_conv_epilogue") {
  // gpass::FusedConv: the residual input and the activation applied by each path as it writes
  // its output blocks (depthwise planes, packed im2col blocks, the in-place path), or after
  // (non-constant filters, f64), against the double reference; 1 and 2 threads
  struct geo {
    i64 C, H, W, M, G, K, s, pad;
  };
  struct act {
    std::string name;
    std::vector<double> params;
  };
  const std::vector<act> acts{{"", {}},         {"Relu", {}},        {"Clip", {0.0, 0.6}}, {"LeakyRelu", {0.1}},
                              {"Sigmoid", {}},  {"HardSigmoid", {}}, {"Tanh", {}}};
  auto activate = [](const act& a, double v) {
    if (a.name == "Relu") return std::max(v, 0.0);
    if (a.name == "Clip") return std::clamp(v, a.params[0], a.params[1]);
    if (a.name == "LeakyRelu") return v < 0 ? a.params[0] * v : v;
    if (a.name == "Sigmoid") return 1.0 / (1.0 + std::exp(-v));
    if (a.name == "HardSigmoid") return std::clamp(0.2 * v + 0.5, 0.0, 1.0);
    if (a.name == "Tanh") return std::tanh(v);
    return v;
  };
  for (const geo& c : std::vector<geo>{{6, 9, 11, 6, 6, 3, 1, 1},     // depthwise
                                       {6, 10, 13, 12, 6, 3, 2, 1},   // depthwise, multiplier 2, stride 2
                                       {16, 7, 9, 24, 1, 1, 1, 0},    // pointwise (packed, whole plane)
                                       {8, 12, 11, 10, 1, 3, 2, 1},   // im2col panels
                                       {8, 16, 16, 12, 1, 3, 1, 1},   // in place (OW a multiple of 16)
                                       {8, 9, 13, 12, 2, 3, 1, 1}})   // in place on the padded grid (OW 13)
    for (const act& a : acts)
      for (bool with_z : {false, true}) {
        INFO("C=" << c.C << " M=" << c.M << " G=" << c.G << " K=" << c.K << " stride " << c.s << " activation '" << a.name
                  << "' z=" << with_z);
        auto x = random_tensor({2, c.C, c.H, c.W}, 81), w = random_tensor({c.M, c.C / c.G, c.K, c.K}, 82),
             b = random_tensor({c.M}, 83);
        std::vector<i64> ys;
        auto want = ref_conv2d(x, w, b.data<float>(), c.G, {c.s, c.s}, {1, 1}, {c.pad, c.pad, c.pad, c.pad}, ys);
        const tensor z = random_tensor(ys, 84);
        for (std::size_t i = 0; i < want.size(); ++i)
          want[i] = static_cast<float>(activate(a, static_cast<double>(want[i]) + (with_z ? z.data<float>()[i] : 0.0f)));
        gpass::attribute_map at{{"group", c.G},
                                {"strides", std::vector<i64>{c.s, c.s}},
                                {"pads", std::vector<i64>{c.pad, c.pad, c.pad, c.pad}},
                                {"kernel_shape", std::vector<i64>{c.K, c.K}}};
        if (!a.name.empty()) {
          at["activation"] = a.name;
          if (!a.params.empty()) at["activation_params"] = a.params;
        }
        auto n = make_node("FusedConv", with_z ? 4 : 3, at);
        n.domain = "gpass";
        n.opset = 1;
        auto packed = n;
        packed.constant_inputs = {std::nullopt, w};
        std::vector<value> in{x, w, b};
        if (with_z) in.push_back(z);
        for (int threads : {1, 2}) {
          check_close<float>(run1(n, in, threads), want, ys, 1e-4);
          check_close<float>(run1(packed, in, threads), want, ys, 1e-4);
        }
        if (a.name == "Relu" && with_z) {  // f64: the pass after the product
          auto f64 = [](const tensor& t) {
            tensor r(gpass::dtype::f64, t.sizes());
            for (i64 i = 0; i < t.size(); ++i) r.data<double>()[i] = t.data<float>()[i];
            return r;
          };
          const tensor got = run1(n, {f64(x), f64(w), f64(b), f64(z)});
          for (i64 i = 0; i < got.size(); ++i) CHECK(std::abs(got.data<double>()[i] - want[static_cast<std::size_t>(i)]) < 1e-5);
        }
      }
  // a residual of the wrong shape is an error naming it
  auto n = make_node("FusedConv", 4, {{"kernel_shape", std::vector<i64>{1, 1}}});
  n.domain = "gpass";
  n.opset = 1;
  auto x = random_tensor({1, 2, 3, 3}, 85), w = random_tensor({2, 2, 1, 1}, 86);
  CHECK_THROWS_WITH_AS(run1(n, {x, w, random_tensor({2}, 87), random_tensor({1, 2, 3, 4}, 88)}),
                       doctest::Contains("the added input has shape"), gpass::error);
}

TEST_CASE("exec.linalg.conv_depthwise_f64_and_1d") {
  // the depthwise path in double (against the double reference), and 1-D depthwise
  // convolutions equal to 2-D ones with a unit height
  auto xf = random_tensor({2, 4, 11, 13}, 71), wf = random_tensor({8, 1, 3, 3}, 72), bf = random_tensor({8}, 73);
  auto as_f64 = [](const tensor& t) {
    tensor r(gpass::dtype::f64, t.sizes());
    for (i64 i = 0; i < t.size(); ++i) r.data<double>()[i] = t.data<float>()[i];
    return r;
  };
  std::vector<i64> ys;
  const auto want = ref_conv2d(xf, wf, bf.data<float>(), 4, {2, 1}, {1, 2}, {1, 2, 0, 1}, ys);
  auto n = make_node("Conv", 3, {{"group", i64{4}}, {"strides", std::vector<i64>{2, 1}}, {"dilations", std::vector<i64>{1, 2}},
                                 {"pads", std::vector<i64>{1, 2, 0, 1}}});
  for (int threads : {1, 2}) {
    const tensor got = run1(n, {as_f64(xf), as_f64(wf), as_f64(bf)}, threads);
    REQUIRE(got.sizes() == ys);
    for (i64 i = 0; i < got.size(); ++i) CHECK(std::abs(got.data<double>()[i] - want[static_cast<std::size_t>(i)]) < 1e-5);
  }
  auto x1 = random_tensor({1, 3, 40}, 74), w1 = random_tensor({6, 1, 5}, 75);
  auto n1 = make_node("Conv", 2, {{"group", i64{3}}, {"strides", std::vector<i64>{3}}, {"dilations", std::vector<i64>{2}},
                                  {"pads", std::vector<i64>{4, 1}}});
  const auto want1 = ref_conv2d(x1.reshaped({1, 3, 1, 40}), w1.reshaped({6, 1, 1, 5}), nullptr, 3, {1, 3}, {1, 2}, {0, 4, 0, 1}, ys);
  for (int threads : {1, 2}) check_close<float>(run1(n1, {x1, w1}, threads), want1, {1, 6, ys[3]}, 1e-4);
}

TEST_CASE("exec.linalg.conv_packed_every_kernel") {
  // the packed Conv on every micro-kernel this processor has: im2col panels, and the in-place
  // path (stride 1, 2-D, output width a multiple of half a panel) with dilations, asymmetric
  // pads, groups, batches and several depth blocks; 1 and 2 threads
  namespace la = gpass::exec::cpu_detail::linalg;
  namespace sg = gpass::exec::cpu_detail::sgemm;
  struct cfg {
    i64 N, C, H, W, M, G, KH, KW;
    std::array<i64, 2> s, d;
    std::array<i64, 4> pads;
  };
  const kernel_node node = make_node("Conv", 2);
  for (const sg::kernel_info& ki : sg::available_kernels())
    for (const cfg& c : std::vector<cfg>{{1, 8, 16, 16, 12, 1, 3, 3, {1, 1}, {1, 1}, {1, 1, 1, 1}},
                                         {1, 5, 20, 32, 10, 1, 3, 3, {1, 1}, {2, 2}, {2, 2, 2, 2}},
                                         {2, 6, 10, 16, 8, 2, 2, 3, {1, 1}, {1, 1}, {1, 0, 0, 2}},
                                         {1, 3, 8, 8, 7, 1, 3, 3, {1, 1}, {1, 1}, {1, 1, 1, 1}},
                                         {1, 4, 12, 11, 9, 1, 3, 3, {2, 2}, {1, 1}, {1, 1, 1, 1}},
                                         {1, 64, 8, 16, 20, 1, 3, 3, {1, 1}, {1, 1}, {1, 1, 1, 1}},
                                         {1, 16, 16, 16, 24, 1, 1, 1, {1, 1}, {1, 1}, {0, 0, 0, 0}}}) {
      INFO(std::string(ki.name) << " C=" << c.C << " H=" << c.H << " W=" << c.W << " M=" << c.M << " G=" << c.G);
      auto x = random_tensor({c.N, c.C, c.H, c.W}, 61), w = random_tensor({c.M, c.C / c.G, c.KH, c.KW}, 62),
           b = random_tensor({c.M}, 63);
      std::vector<i64> ys;
      const auto want = ref_conv2d(x, w, b.data<float>(), c.G, c.s, c.d, c.pads, ys);
      la::window_attrs wa;
      wa.strides = {c.s[0], c.s[1]};
      wa.dilations = {c.d[0], c.d[1]};
      wa.pads = {c.pads[0], c.pads[1], c.pads[2], c.pads[3]};
      const la::window_geometry g = la::resolve_window(wa, {c.H, c.W}, {c.KH, c.KW}, node);
      const la::packed_filter pf(w.data<float>(), c.M, c.G, w.size() / c.M, ki);
      for (int threads : {1, 2}) {
        eigen_cpu cpu({.threads = threads});
        tensor y = tensor::uninitialized(gpass::dtype::f32, ys);
        la::conv_forward_packed(cpu, g, c.N, c.C, c.M, c.G, x.data<float>(), pf, b.data<float>(), y.data<float>());
        check_close<float>(y, want, ys, 1e-4);
      }
    }
}

TEST_CASE("exec.linalg.conv_transpose") {
  // ONNX example: x 3x3 of 0..8, w ones [1,2,3,3] -> [1,2,5,5]
  auto x = tensor::from<float>({0, 1, 2, 3, 4, 5, 6, 7, 8}, {1, 1, 3, 3});
  auto w = tensor::from<float>(std::vector<float>(18, 1.f), {1, 2, 3, 3});
  const std::vector<float> plane{0, 1, 3, 3, 2, 3, 8, 15, 12, 7, 9, 21, 36, 27, 15, 9, 20, 33, 24, 13, 6, 13, 21, 15, 8};
  std::vector<float> want = plane;
  want.insert(want.end(), plane.begin(), plane.end());
  check_close<float>(run1(make_node("ConvTranspose", 2), {x, w}), want, {1, 2, 5, 5});
  // pads crop the border; output_shape pads the end with zeros; bias added everywhere
  auto cropped = run1(make_node("ConvTranspose", 2, {{"pads", std::vector<i64>{1, 1, 1, 1}}}), {x, w});
  check_close<float>(cropped, {8, 15, 12, 21, 36, 27, 20, 33, 24, 8, 15, 12, 21, 36, 27, 20, 33, 24}, {1, 2, 3, 3});
  auto big = run1(make_node("ConvTranspose", 3, {{"output_shape", std::vector<i64>{6, 5}}}), {x, w, tensor::from<float>({1, 2})});
  REQUIRE(big.sizes() == std::vector<i64>{1, 2, 6, 5});
  CHECK(big.data<float>()[0] == 1.f);
  CHECK(big.data<float>()[12] == 37.f);
  CHECK(big.data<float>()[29] == 1.f);  // extra row: bias only
  CHECK(big.data<float>()[30 + 29] == 2.f);
  // a 1x1 stride-1 transpose is a channel mix (same as Conv with transposed weights)
  auto xr = random_tensor({2, 4, 6, 6}, 31), wr = random_tensor({4, 3, 1, 1}, 32);
  std::vector<float> wt(12);
  for (int c = 0; c < 4; ++c)
    for (int m = 0; m < 3; ++m) wt[m * 4 + c] = wr.data<float>()[c * 3 + m];
  auto conv = run1(make_node("Conv", 2), {xr, tensor::from<float>(wt, {3, 4, 1, 1})});
  check_close<float>(run1(make_node("ConvTranspose", 2), {xr, wr}, 2), values_of(conv), {2, 3, 6, 6});
  CHECK_THROWS_AS(run1(make_node("ConvTranspose", 2), {x, tensor(gpass::dtype::f32, {2, 1, 3, 3})}), gpass::error);
}

TEST_CASE("exec.linalg.pooling") {
  std::vector<float> xv(16);
  for (int i = 0; i < 16; ++i) xv[i] = static_cast<float>(i + 1);
  auto x = tensor::from<float>(xv, {1, 1, 4, 4});
  gpass::attribute_map k2{{"kernel_shape", std::vector<i64>{2, 2}}, {"strides", std::vector<i64>{2, 2}}};
  check_close<float>(run1(make_node("MaxPool", 1, k2), {x}), {6, 8, 14, 16}, {1, 1, 2, 2});
  check_close<float>(run1(make_node("AveragePool", 1, k2), {x}), {3.5f, 5.5f, 11.5f, 13.5f}, {1, 1, 2, 2});
  // ceil mode: 3x3 windows, stride 2 on 4x4 -> 2x2 with partial windows
  gpass::attribute_map ceil{{"kernel_shape", std::vector<i64>{3, 3}}, {"strides", std::vector<i64>{2, 2}}, {"ceil_mode", std::int64_t{1}}};
  check_close<float>(run1(make_node("MaxPool", 1, ceil), {x}), {11, 12, 15, 16}, {1, 1, 2, 2});
  check_close<float>(run1(make_node("AveragePool", 1, ceil), {x}), {6, 7.5f, 12, 13.5f}, {1, 1, 2, 2});
  // pads with and without count_include_pad
  gpass::attribute_map pad{{"kernel_shape", std::vector<i64>{3, 3}}, {"pads", std::vector<i64>{1, 1, 1, 1}}, {"strides", std::vector<i64>{3, 3}}};
  check_close<float>(run1(make_node("AveragePool", 1, pad), {x}), {3.5f, 5.5f, 11.5f, 13.5f}, {1, 1, 2, 2});
  pad["count_include_pad"] = std::int64_t{1};
  check_close<float>(run1(make_node("AveragePool", 1, pad), {x}), {14.f / 9, 22.f / 9, 46.f / 9, 54.f / 9}, {1, 1, 2, 2});
  // indices, row- and column-major
  auto out = run(make_node("MaxPool", 1, k2, 12, 2), {x});
  check_close<std::int64_t>(out[1].tensor(), {5, 7, 13, 15}, {1, 1, 2, 2});
  k2["storage_order"] = std::int64_t{1};
  out = run(make_node("MaxPool", 1, k2, 12, 2), {x});
  check_close<std::int64_t>(out[1].tensor(), {5, 13, 7, 15}, {1, 1, 2, 2});
  // dilations
  check_close<float>(run1(make_node("MaxPool", 1, {{"kernel_shape", std::vector<i64>{2, 2}}, {"dilations", std::vector<i64>{2, 2}}}), {x}),
                     {11, 12, 15, 16}, {1, 1, 2, 2});
  // uint8 max pool, SAME_UPPER
  auto xu = tensor::from<std::uint8_t>({1, 9, 3, 4}, {1, 1, 2, 2});
  check_close<std::uint8_t>(run1(make_node("MaxPool", 1, {{"kernel_shape", std::vector<i64>{2, 2}}, {"auto_pad", std::string("SAME_UPPER")}}), {xu}),
                            {9, 9, 4, 4}, {1, 1, 2, 2});
  // LpPool p=2 over the whole plane
  auto x2 = tensor::from<float>({3, 4, 0, 0}, {1, 1, 2, 2});
  check_close<float>(run1(make_node("LpPool", 1, {{"kernel_shape", std::vector<i64>{2, 2}}}), {x2}), {5}, {1, 1, 1, 1});
  // global pools
  check_close<float>(run1(make_node("GlobalAveragePool", 1), {x}), {8.5f}, {1, 1, 1, 1});
  check_close<float>(run1(make_node("GlobalMaxPool", 1), {x}), {16}, {1, 1, 1, 1});
  check_close<float>(run1(make_node("GlobalLpPool", 1), {x2}), {5}, {1, 1, 1, 1});
  // 1-D and 3-D
  check_close<float>(run1(make_node("MaxPool", 1, {{"kernel_shape", std::vector<i64>{2}}}), {tensor::from<float>({1, 3, 2}, {1, 1, 3})}), {3, 3}, {1, 1, 2});
  check_close<float>(run1(make_node("AveragePool", 1, {{"kernel_shape", std::vector<i64>{2, 2, 2}}}), {x.reshaped({1, 1, 2, 2, 4})}),
                     {7.5f, 8.5f, 9.5f}, {1, 1, 1, 1, 3});
  // parallel over planes
  auto big = random_tensor({2, 16, 30, 30}, 41);
  gpass::attribute_map k3{{"kernel_shape", std::vector<i64>{3, 3}}, {"strides", std::vector<i64>{2, 2}}, {"pads", std::vector<i64>{1, 1, 1, 1}}};
  check_close<float>(run1(make_node("MaxPool", 1, k3), {big}, 2), values_of(run1(make_node("MaxPool", 1, k3), {big}, 1)), {2, 16, 15, 15});
  // the row-wise paths (max without indices, average) agree with the per-window path
  for (const auto& at : std::vector<gpass::attribute_map>{
           {{"kernel_shape", std::vector<i64>{3, 3}}, {"pads", std::vector<i64>{1, 2, 2, 1}}, {"strides", std::vector<i64>{2, 1}}},
           {{"kernel_shape", std::vector<i64>{2, 3}}, {"dilations", std::vector<i64>{2, 2}}, {"ceil_mode", std::int64_t{1}}, {"strides", std::vector<i64>{2, 2}}},
           {{"kernel_shape", std::vector<i64>{4, 4}}, {"auto_pad", std::string("SAME_LOWER")}}}) {
    auto r = random_tensor({1, 3, 11, 9}, 43);
    auto with_idx = run(make_node("MaxPool", 1, at, 12, 2), {r});
    auto plain = run1(make_node("MaxPool", 1, at), {r});
    check_close<float>(plain, values_of(with_idx[0].tensor()), with_idx[0].tensor().sizes(), 0);
    const float* rp = r.data<float>();
    const std::int64_t* ip = with_idx[1].tensor().data<std::int64_t>();
    for (i64 i = 0; i < plain.size(); ++i) CHECK(rp[ip[i]] == plain.data<float>()[i]);
    // average of ones (pads not counted) is one everywhere; LpPool p=1 of ones counts the taps
    auto ones = tensor::from<float>(std::vector<float>(3 * 11 * 9, 1.f), {1, 3, 11, 9});
    auto ra = run1(make_node("AveragePool", 1, at), {ones});
    CHECK(ra.sizes() == plain.sizes());
    for (i64 i = 0; i < ra.size(); ++i) CHECK(ra.data<float>()[i] == 1.f);
    auto lp_at = at;
    lp_at["p"] = std::int64_t{1};
    auto taps = run1(make_node("LpPool", 1, lp_at), {ones});
    CHECK(taps.sizes() == plain.sizes());
    CHECK(taps.data<float>()[0] >= 1.f);
  }
  // errors
  CHECK_THROWS_AS(run1(make_node("MaxPool", 1), {x}), gpass::error);  // no kernel_shape
  CHECK_THROWS_AS(run1(make_node("MaxPool", 1, {{"kernel_shape", std::vector<i64>{5, 5}}}), {x}), gpass::error);
  CHECK_THROWS_AS(run1(make_node("MaxPool", 1, {{"kernel_shape", std::vector<i64>{2}}}), {x}), gpass::error);
}

// A window far larger than its input (a fuzzed model: MaxPool kernel_shape [2, 54525951],
// SAME_UPPER, over 32x32 ran for minutes): the taps inside the input are found in closed
// form, so the cost is the output's size; the values are those of the whole-row window.
TEST_CASE("exec.linalg.pooling_windows_larger_than_the_input") {
  namespace la = gpass::exec::cpu_detail::linalg;
  // taps_within against a walk over every tap, on ragged geometries (negative starts, dilations)
  for (i64 k = 1; k <= 7; ++k)
    for (i64 dil = 1; dil <= 3; ++dil)
      for (i64 first = -9; first <= 9; ++first)
        for (i64 begin = -3; begin <= 2; ++begin)
          for (i64 end = begin; end <= 8; ++end) {
            i64 t0 = -1, t1 = -1;
            for (i64 t = 0; t < k; ++t)
              if (const i64 pos = first + t * dil; pos >= begin && pos < end) {
                if (t0 < 0) t0 = t;
                t1 = t + 1;
              }
            const auto [l, h] = la::pool_setup::taps_within(first, k, dil, begin, end);
            CAPTURE(k); CAPTURE(dil); CAPTURE(first); CAPTURE(begin); CAPTURE(end);
            if (t0 < 0) CHECK(l == h);
            else CHECK((l == t0 && h == t1));
          }
  std::vector<float> xv(3 * 32 * 32);
  for (std::size_t i = 0; i < xv.size(); ++i) xv[i] = static_cast<float>((i * 7919) % 1000) - 500.f;
  auto x = tensor::from<float>(xv, {1, 3, 32, 32});
  const i64 huge = 54525951;
  auto y = run1(make_node("MaxPool", 1, {{"kernel_shape", std::vector<i64>{2, huge}}, {"auto_pad", std::string("SAME_UPPER")}}), {x});
  REQUIRE(y.sizes() == std::vector<i64>{1, 3, 32, 32});
  for (i64 c = 0; c < 3; ++c)
    for (i64 h = 0; h < 32; ++h) {
      float want = -1e9f;  // rows h and h + 1 (the pad is at the end), every column
      for (i64 r = h; r < std::min<i64>(h + 2, 32); ++r)
        for (i64 w = 0; w < 32; ++w) want = std::max(want, xv[static_cast<std::size_t>((c * 32 + r) * 32 + w)]);
      for (i64 w = 0; w < 32; ++w) CHECK(y.data<float>()[(c * 32 + h) * 32 + w] == want);
    }
  // AveragePool counting the padding: the divisor is the window's taps (2 x huge here; as a
  // double, since a product of huge kernels need not fit in int64)
  auto ones = tensor::from<float>(std::vector<float>(32 * 32, 1.f), {1, 1, 32, 32});
  auto a = run1(make_node("AveragePool", 1, {{"kernel_shape", std::vector<i64>{1, huge}}, {"auto_pad", std::string("SAME_UPPER")},
                                             {"count_include_pad", std::int64_t{1}}}), {ones});
  REQUIRE(a.sizes() == std::vector<i64>{1, 1, 32, 32});
  for (i64 i = 0; i < a.size(); ++i) CHECK(a.data<float>()[i] == doctest::Approx(32.0 / static_cast<double>(huge)).epsilon(1e-6));
  auto a2 = run1(make_node("AveragePool", 1, {{"kernel_shape", std::vector<i64>{huge, huge}}, {"auto_pad", std::string("SAME_UPPER")}}), {ones});
  for (i64 i = 0; i < a2.size(); ++i) CHECK(a2.data<float>()[i] == 1.f);
  // extents past int64: errors, not wrapped windows
  CHECK_THROWS_WITH_AS(run1(make_node("MaxPool", 1, {{"kernel_shape", std::vector<i64>{3, 3}}, {"dilations", std::vector<i64>{i64{1} << 62, 1}}}), {ones}),
                       doctest::Contains("overflows int64"), gpass::error);
  CHECK_THROWS_WITH_AS(run1(make_node("MaxPool", 1, {{"kernel_shape", std::vector<i64>{2, 2}}, {"pads", std::vector<i64>{i64{1} << 62, 0, i64{1} << 62, 0}}}), {ones}),
                       doctest::Contains("overflows int64"), gpass::error);
}

TEST_CASE("exec.linalg.max_unpool") {
  gpass::attribute_map k2{{"kernel_shape", std::vector<i64>{2, 2}}, {"strides", std::vector<i64>{2, 2}}};
  auto x = tensor::from<float>({5, 6, 7, 8}, {1, 1, 2, 2});
  auto idx = tensor::from<std::int64_t>({5, 7, 13, 15}, {1, 1, 2, 2});
  check_close<float>(run1(make_node("MaxUnpool", 2, k2), {x, idx}), {0, 0, 0, 0, 0, 5, 0, 6, 0, 0, 0, 0, 0, 7, 0, 8}, {1, 1, 4, 4});
  auto y = run1(make_node("MaxUnpool", 3, k2), {x, idx, tensor::from<std::int64_t>({1, 1, 5, 5})});
  CHECK(y.sizes() == std::vector<i64>{1, 1, 5, 5});
  CHECK(y.data<float>()[18] == 8.f);  // (3,3) of the 4x4 inferred shape, placed at (3,3) of 5x5
  CHECK(y.data<float>()[6] == 5.f);
  CHECK_THROWS_AS(run1(make_node("MaxUnpool", 2, k2), {x, tensor::from<std::int64_t>({5, 7, 13, 99}, {1, 1, 2, 2})}), gpass::error);
  // pads / strides of another length than the spatial rank asks (a fuzzed model read past them)
  gpass::attribute_map short_pads = k2, short_strides = k2;
  short_pads["pads"] = std::vector<i64>{1, 1};
  short_strides["strides"] = std::vector<i64>{2};
  CHECK_THROWS_WITH_AS(run1(make_node("MaxUnpool", 2, short_pads), {x, idx}), doctest::Contains("pads has 2 values for 2 spatial axes"),
                       gpass::error);
  CHECK_THROWS_WITH_AS(run1(make_node("MaxUnpool", 2, short_strides), {x, idx}),
                       doctest::Contains("strides has 1 values for 2 spatial axes"), gpass::error);
}

TEST_CASE("exec.linalg.einsum") {
  auto a = tensor::from<double>({1, 2, 3, 4, 5, 6}, {2, 3});
  auto e = [](const char* eq, std::size_t n) { return make_node("Einsum", n, {{"equation", std::string(eq)}}); };
  check_close<double>(run1(e("ij->ji", 1), {a}), {1, 4, 2, 5, 3, 6}, {3, 2});
  check_close<double>(run1(e("ij->i", 1), {a}), {6, 15}, {2});
  check_close<double>(run1(e("ij", 1), {a}), {1, 2, 3, 4, 5, 6}, {2, 3});
  check_close<double>(run1(e("ji", 1), {a}), {1, 4, 2, 5, 3, 6}, {3, 2});  // implicit: sorted labels
  check_close<double>(run1(e("i,i", 2), {tensor::from<double>({1, 2, 3}), tensor::from<double>({4, 5, 6})}), {32}, {});
  check_close<double>(run1(e("ij, jk -> ik", 2), {a, tensor::from<double>({1, 0, 0, 1, 1, 1}, {3, 2})}), {4, 5, 10, 11}, {2, 2});
  auto sq = tensor::from<double>({1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 3, 3});
  check_close<double>(run1(e("...ii ->...i", 1), {sq}), {1, 5, 9}, {1, 3});
  check_close<double>(run1(e("bii->b", 1), {sq}), {15}, {1});
  check_close<double>(run1(e("...j,j->...", 2), {a, tensor::from<double>({1, 1, 1})}), {6, 15}, {2});
  check_close<float>(run1(e("bij,bjk->bik", 2), {tensor::from<float>({1, 2}, {1, 1, 2}), tensor::from<float>({3, 4}, {1, 2, 1})}), {11}, {1, 1, 1});
  CHECK_THROWS_AS(run1(e("ij,jk", 1), {a}), gpass::error);
  CHECK_THROWS_AS(run1(e("ijk", 1), {a}), gpass::error);
  CHECK_THROWS_AS(run1(e("ij->k", 1), {a}), gpass::error);
  CHECK_THROWS_AS(run1(e("ij,jk->ik", 2), {a, a}), gpass::error);
}

// Einsum by definition: one loop over every label, the product of the operands summed
// into the output element (the kernel contracts pairs instead).
std::vector<double> einsum_reference(const std::vector<std::string>& terms, const std::string& out,
                                     const std::vector<std::vector<double>>& values, const std::map<char, i64>& extent) {
  std::vector<char> labels;
  for (const auto& [l, e] : extent) labels.push_back(l);
  i64 nout = 1;
  for (char l : out) nout *= extent.at(l);
  std::vector<double> r(static_cast<std::size_t>(nout), 0.0);
  std::map<char, i64> at;
  for (char l : labels) at[l] = 0;
  for (;;) {
    double p = 1;
    for (std::size_t k = 0; k < terms.size(); ++k) {
      i64 off = 0;
      for (char l : terms[k]) off = off * extent.at(l) + at[l];
      p *= values[k][static_cast<std::size_t>(off)];
    }
    i64 o = 0;
    for (char l : out) o = o * extent.at(l) + at[l];
    r[static_cast<std::size_t>(o)] += p;
    std::size_t d = labels.size();
    while (d > 0 && ++at[labels[d - 1]] == extent.at(labels[d - 1])) at[labels[--d]] = 0;
    if (d == 0) return r;
  }
}

TEST_CASE("exec.linalg.einsum_contractions") {
  auto e = [](const std::string& eq, std::size_t n) { return make_node("Einsum", n, {{"equation", eq}}); };
  // random equations over up to four operands (diagonals, sums, batches, outer products,
  // scalars) against the definition, at 1 and 2 threads
  std::mt19937 rng(7);
  const std::string letters = "abcde";
  for (int trial = 0; trial < 300; ++trial) {
    std::map<char, i64> extent;
    for (char l : letters) extent[l] = 1 + static_cast<i64>(rng() % 4);
    const std::size_t nops = 1 + rng() % 4;
    std::vector<std::string> terms(nops);
    std::set<char> used;
    for (auto& t : terms) {
      const std::size_t rank = rng() % 4;
      for (std::size_t d = 0; d < rank; ++d) t += letters[rng() % letters.size()];
      used.insert(t.begin(), t.end());
    }
    std::string out;
    for (char l : used)
      if (rng() % 2) out += l;
    std::shuffle(out.begin(), out.end(), rng);
    std::map<char, i64> ext;
    for (char l : used) ext[l] = extent[l];
    std::vector<value> ins;
    std::vector<std::vector<double>> vals;
    std::string eq;
    for (std::size_t k = 0; k < nops; ++k) {
      std::vector<i64> sz;
      for (char l : terms[k]) sz.push_back(ext[l]);
      std::vector<double> v(static_cast<std::size_t>(std::accumulate(sz.begin(), sz.end(), i64{1}, std::multiplies<>())));
      for (double& x : v) x = static_cast<double>(static_cast<int>(rng() % 7) - 3);
      ins.push_back(tensor::from<double>(v, sz));
      vals.push_back(v);
      eq += (k ? "," : "") + terms[k];
    }
    eq += "->" + out;
    if (ext.empty()) ext['z'] = 1;  // (the reference loops once over no label)
    const auto want = einsum_reference(terms, out, vals, ext);
    std::vector<i64> ys;
    for (char l : out) ys.push_back(ext[l]);
    CAPTURE(eq);
    check_close<double>(run1(e(eq, nops), ins), want, ys, 1e-9);
    check_close<double>(run1(e(eq, nops), ins, 2), want, ys, 1e-9);
  }
  // a transformer's attention scores, large enough for the matrix products
  {
    const i64 B = 2, H = 3, Q = 17, K = 19, D = 24;
    std::vector<float> q(static_cast<std::size_t>(B * H * Q * D)), k(static_cast<std::size_t>(B * H * K * D));
    for (float& x : q) x = static_cast<float>(static_cast<int>(rng() % 9) - 4) / 4.f;
    for (float& x : k) x = static_cast<float>(static_cast<int>(rng() % 9) - 4) / 4.f;
    std::vector<float> want(static_cast<std::size_t>(B * H * Q * K), 0.f);
    for (i64 b = 0; b < B * H; ++b)
      for (i64 i = 0; i < Q; ++i)
        for (i64 j = 0; j < K; ++j)
          for (i64 d = 0; d < D; ++d) want[static_cast<std::size_t>((b * Q + i) * K + j)] += q[static_cast<std::size_t>((b * Q + i) * D + d)] * k[static_cast<std::size_t>((b * K + j) * D + d)];
    const auto y = run1(e("bhqd,bhkd->bhqk", 2), {tensor::from<float>(q, {B, H, Q, D}), tensor::from<float>(k, {B, H, K, D})});
    check_close<float>(y, want, {B, H, Q, K}, 1e-5);
  }
  // the work is the operands' and the output's: the definition's loop would take 10^12 steps
  {
    const tensor v = tensor::from<double>(std::vector<double>(1000, 1.0), {1000});
    check_close<double>(run1(e("a,b,c,d->", 4), {v, v, v, v}), {1e12}, {}, 0);
    check_close<double>(run1(e("a,b,b->a", 3), {v, v, v}), std::vector<double>(1000, 1000.0), {1000}, 0);
  }
  // a dimension of size 1 broadcasts against the label's size
  check_close<double>(run1(e("ij,j->ij", 2), {tensor::from<double>({1, 2}, {2, 1}), tensor::from<double>({1, 10, 100})}),
                      {1, 10, 100, 2, 20, 200}, {2, 3}, 0);
  // empty labels: a summed one gives zeros, a kept one an empty output
  check_close<double>(run1(e("ij,jk->ik", 2), {tensor(gpass::dtype::f64, {2, 0}), tensor(gpass::dtype::f64, {0, 3})}),
                      std::vector<double>(6, 0.0), {2, 3}, 0);
  check_close<double>(run1(e("ij,jk->ik", 2), {tensor(gpass::dtype::f64, {0, 2}), tensor(gpass::dtype::f64, {2, 3})}), {}, {0, 3}, 0);
  // integers wrap around (two's complement) instead of overflowing
  check_close<std::int32_t>(run1(e("i,i->", 2), {tensor::from<std::int32_t>({65536, 3}), tensor::from<std::int32_t>({65536, 1})}),
                            {3}, {}, 0);
  // an intermediate over max_tensor_bytes is an error naming it
  {
    eigen_cpu cpu({.threads = 1});
    const tensor v = tensor::from<double>(std::vector<double>(100, 1.0), {100});
    CHECK_THROWS_WITH_AS(gpass::exec::run_kernel(cpu, linalg_registry(), e("i,j->ij", 2), {v, v}, {.max_tensor_bytes = 4000}),
                         doctest::Contains("max_tensor_bytes"), gpass::error);
  }
}

TEST_CASE("exec.linalg.integer_products_wrap") {
  // int32 products and sums past 2^31 wrap as two's complement (C++ leaves signed overflow
  // undefined; the sanitizer build checks it): MatMul and Gemm with an out-of-range alpha
  const tensor a = tensor::from<std::int32_t>({65536, 65536}, {1, 2});
  const tensor b = tensor::from<std::int32_t>({65536, 1}, {2, 1});
  check_close<std::int32_t>(run1(make_node("MatMul", 2), {a, b}), {65536}, {1, 1}, 0);
  // (alpha 1e30 saturates to int64's largest value, whose low 32 bits are -1)
  check_close<std::int32_t>(run1(make_node("Gemm", 2, {{"alpha", 1e30}}), {a, b}), {-65536}, {1, 1}, 0);
}

TEST_CASE("exec.linalg.det") {
  check_close<float>(run1(make_node("Det", 1), {tensor::from<float>({1, 2, 3, 4}, {2, 2})}), {-2}, {});
  check_close<double>(run1(make_node("Det", 1), {tensor::from<double>({2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 1, 0, 1, 0, 0, 0, 0, 1}, {2, 3, 3})}),
                      {24, -1}, {2});
  check_close<float>(run1(make_node("Det", 1), {tensor::from<float>({1, 2, 2, 4}, {2, 2})}), {0}, {});
  CHECK_THROWS_AS(run1(make_node("Det", 1), {tensor(gpass::dtype::f32, {2, 3})}), gpass::error);
}

TEST_CASE("exec.linalg.quantized") {
  // MatMulInteger with per-tensor zero points
  auto a = tensor::from<std::uint8_t>({11, 7, 3, 10, 6, 2, 9, 5, 1, 8, 4, 0}, {4, 3});
  auto b = tensor::from<std::uint8_t>({1, 4, 2, 5, 3, 6}, {3, 2});
  auto y = run1(make_node("MatMulInteger", 4, {}, 10),
                {a, b, tensor::from<std::uint8_t>({12}), tensor::from<std::uint8_t>({0})});
  check_close<std::int32_t>(y, {-38, -83, -44, -98, -50, -113, -56, -128}, {4, 2});
  // QLinearMatMul (the ONNX 2-D example)
  auto qa = tensor::from<std::uint8_t>({208, 236, 0, 238, 3, 214, 255, 29}, {2, 4});
  auto qb = tensor::from<std::uint8_t>({152, 51, 244, 60, 26, 255, 0, 127, 246, 127, 254, 247}, {4, 3});
  auto qy = run1(make_node("QLinearMatMul", 8, {}, 10),
                 {qa, tensor::from<float>({0.0066f}), tensor::from<std::uint8_t>({113}), qb, tensor::from<float>({0.00705f}),
                  tensor::from<std::uint8_t>({114}), tensor::from<float>({0.0107f}), tensor::from<std::uint8_t>({118})});
  check_close<std::uint8_t>(qy, {168, 115, 255, 1, 66, 151}, {2, 3}, 0);
  // ConvInteger: x 3x3 of 2..10, zero point 1, w ones -> sums of 2x2 windows of 1..9
  auto cx = tensor::from<std::uint8_t>({2, 3, 4, 5, 6, 7, 8, 9, 10}, {1, 1, 3, 3});
  auto cw = tensor::from<std::uint8_t>({1, 1, 1, 1}, {1, 1, 2, 2});
  check_close<std::int32_t>(run1(make_node("ConvInteger", 3, {}, 10), {cx, cw, tensor::scalar<std::uint8_t>(1)}), {12, 16, 24, 28}, {1, 1, 2, 2});
  // depthwise (2 groups of one channel; the integer sums are not clamped): channel 0 as above,
  // channel 1 the same input with weights 2
  auto dx = tensor::from<std::uint8_t>({2, 3, 4, 5, 6, 7, 8, 9, 10, 2, 3, 4, 5, 6, 7, 8, 9, 10}, {1, 2, 3, 3});
  auto dwt = tensor::from<std::uint8_t>({1, 1, 1, 1, 2, 2, 2, 2}, {2, 1, 2, 2});
  check_close<std::int32_t>(run1(make_node("ConvInteger", 3, {{"group", i64{2}}}, 10), {dx, dwt, tensor::scalar<std::uint8_t>(1)}),
                            {12, 16, 24, 28, 24, 32, 48, 56}, {1, 2, 2, 2});
  // integer sums wrap (two's complement): 255 * 255 * 33026 taps overflowed int32 (undefined)
  // in the depthwise path and through a bias
  {
    const i64 k = 33026;
    const i32 wrapped = static_cast<i32>(static_cast<std::uint32_t>(65025u * static_cast<std::uint32_t>(k)));
    auto hx = tensor::from<std::uint8_t>(std::vector<std::uint8_t>(static_cast<std::size_t>(2 * k), 255), {1, 2, k});
    auto hw = tensor::from<std::uint8_t>(std::vector<std::uint8_t>(static_cast<std::size_t>(2 * k), 255), {2, 1, k});
    check_close<i32>(run1(make_node("ConvInteger", 2, {{"group", i64{2}}}, 10), {hx, hw}), {wrapped, wrapped}, {1, 2, 1});
    auto hw1 = tensor::from<std::uint8_t>(std::vector<std::uint8_t>(static_cast<std::size_t>(2 * k), 255), {1, 2, k});
    check_close<i32>(run1(make_node("ConvInteger", 2, {}, 10), {hx, hw1}), {static_cast<i32>(2u * static_cast<std::uint32_t>(wrapped))},
                     {1, 1, 1});
  }
  // QLinearConv 1x1: y = round(x * 0.5 * 2 / 1) with zero points 0
  auto qc = run1(make_node("QLinearConv", 8, {}, 10),
                 {tensor::from<std::uint8_t>({1, 2, 3, 200}, {1, 1, 2, 2}), tensor::scalar(0.5f), tensor::scalar<std::uint8_t>(0),
                  tensor::from<std::uint8_t>({2}, {1, 1, 1, 1}), tensor::from<float>({2.f}), tensor::from<std::uint8_t>({0}),
                  tensor::scalar(1.f), tensor::scalar<std::uint8_t>(0)});
  check_close<std::uint8_t>(qc, {2, 4, 6, 255}, {1, 1, 2, 2}, 0);
}

}  // namespace gpass_test_exec_linalg
