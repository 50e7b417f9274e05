// SPDX-License-Identifier: Apache-2.0
// The CUDA kernels of tf_spectral.hpp (TensorFlow's FFT family, Complex, Real, Imag,
// ComplexAbs, Angle, Conj): which nodes the GPU serves (no GPU needed), each against the Eigen
// CPU kernel on a GPU (without one, the CPU side of each comparison runs), and the errors
// naming the node.

#include <doctest/doctest.h>

#include <complex>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <gpass/exec/cuda.hpp>

#include "fixture.hpp"

namespace gpass_test_cuda_tf_spectral {

namespace {

using namespace gpass_test_cuda::prelude;

gpass::exec::kernel_node tf(std::string op, gpass::attribute_map attrs = {}) { return node(std::move(op), 1, std::move(attrs), 1, "tf"); }

std::string suffix(std::size_t k) { return k == 1 ? "" : std::to_string(k) + "D"; }

tensor lengths(std::vector<std::int32_t> v) {
  const i64 n = static_cast<i64>(v.size());
  return tensor::from<std::int32_t>(std::move(v), {n});
}

}  // namespace

TEST_CASE("cuda: the TensorFlow FFT family and complex ops the GPU serves") {
  for (std::size_t k = 1; k <= 3; ++k) {
    CAPTURE(k);
    for (dtype t : {dtype::complex64, dtype::complex128}) {
      CHECK(gpass_test_cuda::serves_in("tf", ("FFT" + suffix(k)).c_str(), {t}));
      CHECK(gpass_test_cuda::serves_in("tf", ("IFFT" + suffix(k)).c_str(), {t}));
      CHECK(gpass_test_cuda::serves_in("tf", ("IRFFT" + suffix(k)).c_str(), {t, dtype::int32}));
    }
    CHECK(gpass_test_cuda::serves_in("tf", ("RFFT" + suffix(k)).c_str(), {dtype::f32, dtype::int32}));
    CHECK(gpass_test_cuda::serves_in("tf", ("RFFT" + suffix(k)).c_str(), {dtype::f64, dtype::int32}));
    CHECK_FALSE(gpass_test_cuda::serves_in("tf", ("RFFT" + suffix(k)).c_str(), {dtype::f16, dtype::int32}));
  }
  for (const char* op : {"Real", "Imag", "ComplexAbs", "Angle", "Conj"}) {
    CAPTURE(op);
    CHECK(gpass_test_cuda::serves_in("tf", op, {dtype::complex64}));
    CHECK(gpass_test_cuda::serves_in("tf", op, {dtype::complex128}));
  }
  CHECK(gpass_test_cuda::serves_in("tf", "Complex", {dtype::f32, dtype::f32}));
  CHECK(gpass_test_cuda::serves_in("tf", "Complex", {dtype::f64, dtype::f64}));
}

TEST_CASE("cuda: TensorFlow FFT, IFFT and their 2-D and 3-D forms match the CPU kernels") {
  GPASS_GPU_OR_CPU_SIDE();
  // powers of two (radix 2) and other lengths (Bluestein), each rank, both complex types
  const std::vector<std::vector<i64>> shapes[] = {
      {{16}, {3, 5}, {2, 12}, {4, 1}, {2, 100}, {0, 8}},
      {{4, 8}, {2, 3, 7}, {2, 16, 5}, {1, 1}, {3, 0, 4}},
      {{2, 4, 8}, {2, 3, 5, 6}, {1, 7, 1, 9}}};
  for (std::size_t k = 1; k <= 3; ++k)
    for (const auto& sizes : shapes[k - 1])
      for (dtype t : {dtype::complex64, dtype::complex128})
        for (bool inverse : {false, true}) {
          CAPTURE(k);
          CAPTURE(gpass::shape::of(sizes).to_string());
          CAPTURE(to_string(t));
          CAPTURE(inverse);
          const double tol = t == dtype::complex64 ? 1e-5 : 1e-12;
          differential(tf((inverse ? "IFFT" : "FFT") + suffix(k)), {rnd(sizes, 3 + sizes.size(), t)}, tol, tol * 10);
        }
}

TEST_CASE("cuda: TensorFlow RFFT and IRFFT of rank 1 to 3 match the CPU kernels") {
  GPASS_GPU_OR_CPU_SIDE();
  struct c {
    std::vector<i64> sizes;
    std::vector<std::int32_t> len;
  };
  // fft_length equal to the dims, cropping them, odd and even, powers of two and not, none
  const std::vector<c> real_cases[] = {
      {{{3, 16}, {16}}, {{2, 12}, {12}}, {{2, 12}, {7}}, {{5}, {5}}, {{2, 9}, {1}}, {{2, 9}, {0}}, {{2, 100}, {100}}},
      {{{4, 8}, {4, 8}}, {{2, 6, 10}, {5, 9}}, {{3, 7, 4}, {7, 3}}, {{2, 5, 6}, {0, 6}}},
      {{{2, 4, 4, 8}, {4, 4, 8}}, {{3, 5, 6}, {3, 4, 5}}}};
  for (std::size_t k = 1; k <= 3; ++k)
    for (const auto& cs : real_cases[k - 1])
      for (dtype t : {dtype::f32, dtype::f64}) {
        CAPTURE(k);
        CAPTURE(gpass::shape::of(cs.sizes).to_string());
        CAPTURE(to_string(t));
        const double tol = t == dtype::f32 ? 1e-5 : 1e-12;
        const dtype ct = t == dtype::f32 ? dtype::complex64 : dtype::complex128;
        differential(tf("RFFT" + suffix(k), {{"Tcomplex", ct}}), {rnd(cs.sizes, 7 + cs.sizes.size(), t), lengths(cs.len)}, tol, tol * 10);
        // IRFFT: the half spectrum has fft_length / 2 + 1 bins in the last dim (more are cropped)
        std::vector<i64> half = cs.sizes;
        half.back() = cs.len.back() / 2 + 1 + (cs.len.back() % 3 == 1 ? 2 : 0);
        for (std::size_t d = 0; d + 1 < k; ++d) half[half.size() - k + d] = std::max<i64>(half[half.size() - k + d], cs.len[d]);
        differential(tf("IRFFT" + suffix(k), {{"Treal", t}}), {rnd(half, 11 + half.size(), ct), lengths(cs.len)}, tol, tol * 10);
      }
}

TEST_CASE("cuda: TensorFlow Complex, Real, Imag, ComplexAbs, Angle and Conj match the CPU kernels") {
  GPASS_GPU_OR_CPU_SIDE();
  for (dtype t : {dtype::f32, dtype::f64}) {
    CAPTURE(to_string(t));
    const dtype ct = t == dtype::f32 ? dtype::complex64 : dtype::complex128;
    differential(tf("Complex", {{"Tout", ct}}), {rnd({3, 4}, 1, t), rnd({3, 4}, 2, t)}, 0, 0);
    differential(tf("Complex", {{"Tout", ct}}), {rnd({3, 1, 5}, 3, t), rnd({4, 1}, 4, t)}, 0, 0);  // broadcast
    differential(tf("Complex", {{"Tout", ct}}), {rnd({}, 5, t), rnd({6}, 6, t)}, 0, 0);
    tensor z = rnd({5, 7}, 7, ct);
    // zeros, signed zeros, infinities and NaN among them
    using R = double;
    auto set = [&](i64 i, R re, R im) {
      if (ct == dtype::complex64) z.data<std::complex<float>>()[i] = {static_cast<float>(re), static_cast<float>(im)};
      else z.data<std::complex<double>>()[i] = {re, im};
    };
    const R inf = std::numeric_limits<R>::infinity();
    set(0, 0.0, 0.0);
    set(1, -0.0, 0.0);
    set(2, 0.0, -0.0);
    set(3, inf, 1.0);
    set(4, -inf, -inf);
    set(5, std::numeric_limits<R>::quiet_NaN(), 1.0);
    set(6, 3e30, 4e30);
    set(7, std::numeric_limits<R>::quiet_NaN(), -inf);  // |z| is +inf beside a NaN
    for (const char* op : {"Real", "Imag", "ComplexAbs", "Angle", "Conj"}) {
      CAPTURE(op);
      // the parts exactly; |z| and the angle within an ulp or two of glibc's
      const bool exact = std::string(op) == "Real" || std::string(op) == "Imag" || std::string(op) == "Conj";
      differential(tf(op), {z}, exact ? 0 : ct == dtype::complex64 ? 2.4e-7 : 1e-15, 0);
      differential(tf(op), {rnd({0, 3}, 8, ct)});
    }
  }
}

TEST_CASE("cuda: the TensorFlow FFT family fails as the CPU's does, naming the node") {
  using gpass_test_cuda::fails_alike;
  fails_alike(tf("FFT2D"), {rnd({8}, 1, dtype::complex64)}, "input must be at least rank 2");
  fails_alike(tf("RFFT"), {rnd({2, 8}, 2), lengths({10})}, "Input dimension 1 must have length of at least 10 but got: 8");
  fails_alike(tf("IRFFT"), {rnd({2, 4}, 3, dtype::complex64), lengths({8})}, "Input dimension 1 must have length of at least 5 but got: 4");
  fails_alike(tf("RFFT2D"), {rnd({2, 8}, 4), lengths({8})}, "fft_length must be a vector of 2 values");
  fails_alike(tf("RFFT"), {rnd({2, 8}, 5), lengths({-1})}, "fft_length must >= 0");
  fails_alike(tf("RFFT", {{"Tcomplex", dtype::complex128}}), {rnd({2, 8}, 6), lengths({8})}, "goes with Tcomplex complex64");
  fails_alike(tf("IRFFT", {{"Treal", dtype::f32}}), {rnd({2, 8}, 7, dtype::complex128), lengths({8})}, "goes with Treal f64");
  fails_alike(tf("Complex"), {rnd({2}, 8, dtype::f32), rnd({2}, 9, dtype::f64)}, "different element types");
  fails_alike(tf("Complex"), {rnd({2}, 8, dtype::f32), rnd({3}, 9, dtype::f32)}, "broadcast");
  fails_alike(tf("Complex", {{"Tout", dtype::complex128}}), {rnd({2}, 8, dtype::f32), rnd({2}, 9, dtype::f32)}, "Tout must be c64");
}

}  // namespace gpass_test_cuda_tf_spectral
