// SPDX-License-Identifier: Apache-2.0
// TensorFlow's spectral and complex ops (ops/tf/matrix.hpp, exec/eigen_cpu/kernels/
// tf_spectral.hpp) on hand-written graphs: shapes from fft_length, values with a known
// answer (impulses, a Hermitian spectrum whose DC and Nyquist imaginary parts do not count,
// odd lengths through Bluestein), and the errors TensorFlow's kernels report. Their values
// against TensorFlow are checked by the fixture tests/data/tf/spectral.

#include <doctest/doctest.h>

#include <cmath>
#include <complex>
#include <cstdint>
#include <string>
#include <vector>

#include <gpass/exec/eigen_cpu.hpp>

#include "text_graphs.hpp"

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_tf_spectral_ops {

namespace {

using gpass_test::tf_text::out_of;
using gpass_test::tf_text::run;
using c64 = std::complex<float>;

gpass::tensor complexes(std::vector<c64> v, std::vector<std::int64_t> sizes) {
  gpass::tensor t(gpass::dtype::complex64, std::move(sizes));
  for (std::size_t i = 0; i < v.size(); ++i) t.data<c64>()[i] = v[i];
  return t;
}

gpass::tensor lengths(std::vector<std::int32_t> v) { return gpass::tensor::from<std::int32_t>(v, {static_cast<std::int64_t>(v.size())}); }

// RFFT* (f32 -> c64) or, `inverse`, IRFFT* (c64 -> f32) of fed input and fft_length
std::string real_fft(const std::string& op, bool inverse = false) {
  const std::string in = inverse ? "c64" : "f32", out = inverse ? "f32" : "c64";
  return "  %x = arg() {index = 0} -> (" + in + "[*])\n  %n = arg() {index = 1} -> (i32[*])\n  %y = tf::" + op +
         "(%x, %n) -> (" + out + "[*])\n  %r:0 = return(%y)\n";
}

}  // namespace

TEST_CASE("tf.spectral.shapes") {
  const std::string n = "%n = tf::Const() {dtype = i32, value = tensor<i32[2]> [6, 10]}\n";
  CHECK(out_of("%x = arg() {index = 0} -> (f32[b,7,12])\n" + n + "%y = tf::RFFT2D(%x, %n)") == "c64[b,6,6]");
  CHECK(out_of("%x = arg() {index = 0} -> (c64[b,7,12])\n" + n + "%y = tf::IRFFT2D(%x, %n)") == "f32[b,6,10]");
  CHECK(out_of("%x = arg() {index = 0} -> (c64[b,7,12])\n%y = tf::FFT3D(%x)") == "c64[b,7,12]");
  CHECK(out_of("%x = arg() {index = 0} -> (c128[3])\n%y = tf::ComplexAbs(%x) {T = c128, Tout = f64}") == "f64[3]");
  CHECK_THROWS_WITH_AS(out_of("%x = arg() {index = 0} -> (c64[4])\n%y = tf::FFT2D(%x)"), doctest::Contains("at least rank 2"),
                       gpass::error);
}

TEST_CASE("tf.spectral.values") {
  // FFT of an impulse is flat; IFFT brings it back (1/n)
  const std::string fft = "  %x = arg() {index = 0} -> (c64[*])\n  %y = tf::FFT(%x)\n  %z = tf::IFFT(%y)\n  %r:0 = return(%y, %z)\n";
  auto out = run(fft, {complexes({1, 0, 0, 0, 0}, {5})});
  for (int k = 0; k < 5; ++k) {
    CHECK(std::abs(out.at(0).tensor().data<c64>()[k] - c64(1)) < 1e-6f);
    CHECK(std::abs(out.at(1).tensor().data<c64>()[k] - c64(k == 0 ? 1.0f : 0.0f)) < 1e-6f);
  }
  // IRFFT of a half spectrum with imaginary parts in its DC and Nyquist bins: they do not count
  auto ir = run(real_fft("IRFFT", true), {complexes({{4, 7}, {0, 0}, {0, -3}}, {3}), lengths({4})});
  const float* y = ir.at(0).tensor().data<float>();
  for (int k = 0; k < 4; ++k) CHECK(y[k] == doctest::Approx(1.0));
  // RFFT of an odd length (Bluestein) against the direct sum
  gpass::tensor x(gpass::dtype::f32, {7});
  for (int i = 0; i < 7; ++i) x.data<float>()[i] = static_cast<float>(std::sin(i + 1.0));
  auto rf = run(real_fft("RFFT"), {x, lengths({7})});
  REQUIRE(rf.at(0).tensor().sizes() == std::vector<std::int64_t>{4});
  for (int k = 0; k < 4; ++k) {
    std::complex<double> want = 0;
    for (int i = 0; i < 7; ++i) want += std::polar(static_cast<double>(x.data<float>()[i]), -2 * std::acos(-1.0) * k * i / 7);
    CHECK(std::abs(std::complex<double>(rf.at(0).tensor().data<c64>()[k]) - want) < 1e-5);
  }
}

TEST_CASE("tf.spectral.errors_as_tensorflow_reports_them") {
  gpass::tensor x(gpass::dtype::f32, {2, 8});
  CHECK_THROWS_WITH_AS(run(real_fft("RFFT"), {x, lengths({11})}),
                       doctest::Contains("Input dimension 1 must have length of at least 11 but got: 8"), gpass::error);
  CHECK_THROWS_WITH_AS(run(real_fft("RFFT"), {x, lengths({-2})}), doctest::Contains("fft_length must >= 0"), gpass::error);
  CHECK_THROWS_WITH_AS(run(real_fft("RFFT2D"), {x, lengths({2})}), doctest::Contains("fft_length must be a vector of 2"),
                       gpass::error);
  CHECK_THROWS_WITH_AS(run(real_fft("RFFT3D"), {x, lengths({1, 2, 8})}), doctest::Contains("at least rank 3"), gpass::error);
  CHECK_THROWS_WITH_AS(run(real_fft("IRFFT", true), {complexes({1, 2, 3}, {3}), lengths({6})}),
                       doctest::Contains("must have length of at least 4 but got: 3"), gpass::error);
  CHECK_THROWS_WITH_AS(run("  %x = arg() {index = 0} -> (f64[*])\n  %n = arg() {index = 1} -> (i32[*])\n"
                           "  %y = tf::RFFT(%x, %n) {Treal = f64}\n  %r:0 = return(%y)\n",
                           {gpass::tensor(gpass::dtype::f64, {4}), lengths({4})}),
                       doctest::Contains("goes with Tcomplex complex128"), gpass::error);
}

TEST_CASE("tf.spectral.scratch_within_limits") {
  // a transform's complex grid (16 bytes a point) and its plan (up to ~200 bytes a point for
  // Bluestein's lengths) are counted against max_tensor_bytes: an FFT of 40,000 odd points
  // (320 KB in and out) needs about 3 MB of tables
  const std::string body = "  %x = arg() {index = 0} -> (c64[*])\n  %y = tf::FFT(%x)\n  %r:0 = return(%y)\n";
  gpass::graph<> g = gpass::parse_text("graph {\n" + body + "}\n");
  gpass::exec::eigen_cpu cpu({.threads = 1});
  const gpass::tensor x(gpass::dtype::complex64, {40001});
  gpass::exec::plan<gpass::exec::eigen_cpu> small(g, cpu, {.limits = {.max_tensor_bytes = 1 << 20}});
  CHECK_THROWS_WITH_AS(small.run({x}), doctest::Contains("the plan of an FFT of 40001 points needs"), gpass::error);
  gpass::exec::plan<gpass::exec::eigen_cpu> tiny(g, cpu, {.limits = {.max_tensor_bytes = 400000}});
  CHECK_THROWS_WITH_AS(tiny.run({x}), doctest::Contains("the complex grid of an FFT needs 640016 bytes"), gpass::error);
  gpass::exec::plan<gpass::exec::eigen_cpu> enough(g, cpu, {.limits = {.max_tensor_bytes = 8 << 20}});
  CHECK(enough.run({x}).at(0).tensor().sizes() == std::vector<std::int64_t>{40001});
}

}  // namespace gpass_test_tf_spectral_ops
