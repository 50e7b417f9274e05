// SPDX-License-Identifier: Apache-2.0
// Sessions on `cuda_devices()`: nodes go to GPU:0 when it has their kernels and holds their
// types, the rest to the CPU, and the outputs equal a CPU session's.

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <gpass/io/text.hpp>
#include <gpass/session.hpp>
#include <gpass/session/cuda_devices.hpp>

#include "fixture.hpp"

namespace gpass_test_cuda_session {

namespace {

using G = gpass::graph<>;
namespace ex = gpass::exec;

// an MLP-like chain with a string op in the middle of nowhere (its own branch) that only the
// CPU can run
const char* model = R"(graph {
  %x = arg() {index = 0} -> (f32[2,4])
  %w = Constant() {value = tensor<f32[4]> [1.0, -2.0, 3.0, -4.0]}
  %b = Constant() {value = tensor<f32[]> [0.5]}
  %m = Mul(%x, %w)
  %a = Add(%m, %b)
  %r = Relu(%a)
  %t = Tanh(%r)
  %s = Constant() {value = tensor<str[4]> ["a", "b", "a", "b"]}
  %e = Equal(%s, %s)
  %c = Cast(%e) {to = 1}
  %y = Add(%t, %c)
  %ret:0 = return(%y) {names = ["y"]}
})";

// TensorFlow's spectral ops: complex values stay on the GPU between the kernels that take
// them (RFFT, a view, ComplexAbs, IRFFT, FFT); a ConcatV2 of complex values has no CUDA
// kernel and goes to the CPU
const char* spectral_model = R"(graph {
  %x = arg() {index = 0} -> (f32[3,16])
  %n = tf::Const() {dtype = i32, value = tensor<i32[1]> [16]}
  %f = tf::RFFT(%x, %n)
  %s = tf::Const() {dtype = i32, value = tensor<i32[2]> [3, 9]}
  %r = tf::Reshape(%f, %s)
  %a = tf::ComplexAbs(%r) {T = c64, Tout = f32}
  %i = tf::IRFFT(%r, %n)
  %z = tf::Const() {dtype = i32, value = tensor<i32[]> [0]}
  %c = tf::ConcatV2(%f, %f, %z) {N = 2}
  %g = tf::FFT(%c)
  %ret:0 = return(%a, %i, %g) {names = ["a", "i", "g"]}
})";

}  // namespace

TEST_CASE("cuda: a while loop runs on the GPU with its body; results match the CPU's") {
  GPASS_REQUIRE_GPU();
  const auto x = gpass::tensor::from<float>({0.5f, -1.0f, 2.0f});
  const auto n = gpass::tensor::scalar<std::int64_t>(7);
  gpass::session<G> cpu(gpass::parse_text(gpass_test_cuda::while_loop), {});
  const auto want = cpu.run({{"x", x}, {"n", n}}, {"out", "count"});
  gpass::session<G> gpu(gpass::parse_text(gpass_test_cuda::while_loop), {.devices = gpass::cuda_devices<G>()});
  const auto got = gpu.run({{"x", x}, {"n", n}}, {"out", "count"});
  gpass_test_cuda::check_close(got.at(0).tensor(), want.at(0).tensor(), 1e-6, 1e-6);
  CHECK(got.at(1).tensor().data<std::int64_t>()[0] == 7);
  const auto placed = gpu.last_placement();
  CHECK(placed.at("loop").find("GPU:0") != std::string::npos);
  CHECK(placed.at("body/t").find("GPU:0") != std::string::npos);
  CHECK(placed.at("cond/c").find("GPU:0") != std::string::npos);
}

TEST_CASE("cuda: cuda_devices is the GPUs then the CPU, or the CPU alone") {
  auto devs = gpass::cuda_devices<G>();
  REQUIRE(!devs.empty());
  CHECK(devs.back()->name().to_string() == "/job:localhost/replica:0/task:0/device:CPU:0");
  CHECK(devs.size() == static_cast<std::size_t>(std::min(1, ex::cuda_device_count())) + 1);
  CHECK(gpass::cuda_devices<G>({.max_gpus = 0}).size() == 1);
}

TEST_CASE("cuda: a session places what the GPU can run on it and the rest on the CPU; outputs match the CPU's") {
  GPASS_REQUIRE_GPU();
  const auto x = gpass_test_cuda::random_tensor(gpass::dtype::f32, {2, 4}, -2, 2, 11);
  gpass::session<G> cpu(gpass::parse_text(model), {});
  const auto want = cpu.run({{"x", x}}, {"y"});
  gpass::session<G> gpu(gpass::parse_text(model), {.devices = gpass::cuda_devices<G>()});
  const auto got = gpu.run({{"x", x}}, {"y"});
  gpass_test_cuda::check_close(got.at(0).tensor(), want.at(0).tensor(), 1e-6, 1e-6);
  const auto placed = gpu.last_placement();
  const std::string g0 = "/job:localhost/replica:0/task:0/device:GPU:0", c0 = "/job:localhost/replica:0/task:0/device:CPU:0";
  CHECK(placed.at("m") == g0);
  CHECK(placed.at("t") == g0);
  CHECK(placed.at("s") == c0);  // a string constant: the GPU holds no strings
  CHECK(placed.at("e") == c0);
  // a second run reuses the compiled kernels and the uploaded constants
  const auto again = gpu.run({{"x", x}}, {"y"});
  gpass_test_cuda::check_close(again.at(0).tensor(), want.at(0).tensor(), 1e-6, 1e-6);
}

TEST_CASE("cuda: the GPU holds complex values for the kernels that take them, and no others") {
  using gpass::dtype;
  using ex::cuda;
  CHECK(cuda::holds(dtype::complex64));
  CHECK(cuda::holds(dtype::complex128));
  CHECK_FALSE(cuda::holds(dtype::string));
  auto q = [](std::string_view domain, std::string_view op, std::vector<dtype> in, std::vector<dtype> out) {
    return ex::kernel_query{.domain = domain, .op = op, .inputs = std::move(in), .outputs = std::move(out)};
  };
  const dtype c64 = dtype::complex64, f32 = dtype::f32, i32 = dtype::int32;
  CHECK(cuda::serves_types(q("tf", "RFFT2D", {f32, i32}, {c64})));
  CHECK(cuda::serves_types(q("tf", "ComplexAbs", {c64}, {f32})));
  CHECK(cuda::serves_types(q("tf", "Complex", {f32, f32}, {c64})));
  CHECK(cuda::serves_types(q("tf", "Reshape", {c64, i32}, {c64})));
  CHECK(cuda::serves_types(q("tf", "Const", {}, {c64})));
  CHECK(cuda::serves_types(q("", "Add", {f32, f32}, {f32})));
  CHECK(cuda::serves_types(q("tf", "Fill", {i32, f32}, {f32})));
  // a kernel's dtype list names one input: the complex operand of these would reach arithmetic
  // the kernels do not generate for it
  CHECK_FALSE(cuda::serves_types(q("tf", "Cast", {f32}, {c64})));
  CHECK_FALSE(cuda::serves_types(q("tf", "Fill", {i32, c64}, {c64})));
  CHECK_FALSE(cuda::serves_types(q("tf", "ConcatV2", {c64, c64, i32}, {c64})));
  CHECK_FALSE(cuda::serves_types(q("", "Add", {c64, c64}, {c64})));
}

TEST_CASE("cuda: a session keeps TensorFlow's complex values on the GPU between the spectral kernels") {
  GPASS_REQUIRE_GPU();
  const auto x = gpass_test_cuda::random_tensor(gpass::dtype::f32, {3, 16}, -2, 2, 12);
  gpass::session<G> cpu(gpass::parse_text(spectral_model), {});
  const auto want = cpu.run({{"x", x}}, {"a", "i", "g"});
  gpass::session<G> gpu(gpass::parse_text(spectral_model), {.devices = gpass::cuda_devices<G>()});
  const auto got = gpu.run({{"x", x}}, {"a", "i", "g"});
  for (std::size_t k = 0; k < 3; ++k) gpass_test_cuda::check_close(got.at(k).tensor(), want.at(k).tensor(), 1e-5, 1e-5);
  const auto placed = gpu.last_placement();
  const std::string g0 = "/job:localhost/replica:0/task:0/device:GPU:0", c0 = "/job:localhost/replica:0/task:0/device:CPU:0";
  for (const char* n : {"f", "r", "a", "i", "g"}) {
    CAPTURE(n);
    CHECK(placed.at(n) == g0);
  }
  CHECK(placed.at("c") == c0);
}

}  // namespace gpass_test_cuda_session
