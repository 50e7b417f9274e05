// SPDX-License-Identifier: Apache-2.0
// `cuda_graph_plan`: a plan<cuda> captured once per input signature and replayed as one CUDA
// graph launch; its outputs equal the plan's own run by run, outputs kept across runs stay
// as they were, a new signature gets its own graph, and a plan that reads values back to the
// host (a loop's condition) keeps running as a plan.

#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include <gpass/exec/cuda.hpp>
#include <gpass/exec/plan.hpp>
#include <gpass/io/text.hpp>

#include "fixture.hpp"

namespace gpass_test_cuda_graph {

namespace {

namespace ex = gpass::exec;
using dev_value = ex::basic_value<ex::cuda_tensor>;

// cuDNN (Conv), a generated element-wise kernel, Resize (its per-axis plan is uploaded from the
// host on every run: in a graph, from memory the graph keeps), cuBLASLt (MatMul), a softmax; a
// symbolic batch
const char* model = R"(graph {
  %x = arg() {index = 0} -> (f32[n,2,6,6])
  %w = arg() {index = 1} -> (f32[3,2,3,3])
  %m = arg() {index = 2} -> (f32[108,5])
  %b = Constant() {value = tensor<f32[3]> [0.25, -0.5, 0.125]}
  %c = Conv(%x, %w, %b) {pads = [1, 1, 1, 1], kernel_shape = [3, 3]}
  %r = Relu(%c)
  %s = Constant() {value = tensor<f32[4]> [1.0, 1.0, 2.0, 2.0]}
  %u = Resize(%r, _, %s) {mode = "linear"}
  %p = MaxPool(%u) {kernel_shape = [2, 2], strides = [2, 2]}
  %f = Flatten(%p) {axis = 1}
  %y = MatMul(%f, %m)
  %k = Constant() {value = tensor<f32[5]> [0.1, 0.2, 0.3, 0.4, 0.5]}
  %z = Add(%y, %k)
  %o = Softmax(%z) {axis = -1}
  %ret:0 = return(%o, %r) {names = ["o", "r"]}
})";

std::vector<dev_value> upload(ex::cuda& g, const std::vector<gpass::tensor>& in) {
  std::vector<dev_value> r;
  for (const auto& t : in) r.emplace_back(g.upload(t, g.default_stream()));
  return r;
}

std::vector<gpass::tensor> download(ex::cuda& g, const std::vector<dev_value>& out) {
  std::vector<gpass::tensor> r;
  for (const auto& v : out) r.push_back(g.download(v.tensor(), g.default_stream()));
  return r;
}

std::vector<gpass::tensor> inputs(std::int64_t batch, unsigned seed) {
  using gpass_test_cuda::random_tensor;
  return {random_tensor(gpass::dtype::f32, {batch, 2, 6, 6}, -2, 2, seed), random_tensor(gpass::dtype::f32, {3, 2, 3, 3}, -1, 1, seed + 1),
          random_tensor(gpass::dtype::f32, {108, 5}, -0.5, 0.5, seed + 2)};
}

}  // namespace

TEST_CASE("cuda: a plan run as CUDA graphs gives the plan outputs, captured once per signature") {
  GPASS_REQUIRE_GPU();
  auto& gpu = *gpass_test_cuda::gpu();
  const auto g = gpass::parse_text(model);
  ex::plan<ex::cuda> p(g, gpu);
  ex::cuda_graph_plan<> gp(p, gpu);
  for (unsigned run = 0; run < 4; ++run) {
    const auto in = inputs(2, 10 * run + 1);
    const auto want = download(gpu, p.run(upload(gpu, in)));
    const auto got_dev = gp.run(upload(gpu, in));
    const auto got = download(gpu, got_dev);
    REQUIRE(got.size() == 2);
    gpass_test_cuda::check_close(got[0], want[0], 1e-5, 1e-6);
    gpass_test_cuda::check_close(got[1], want[1], 1e-5, 1e-6);
  }
  auto s = gp.stats();
  CHECK(s.runs == 4);
  CHECK(s.plain_runs == 1);  // the first run of the signature compiles and picks algorithms
  CHECK(s.captures == 1);
  CHECK(s.replays == 3);
  CHECK(s.uncapturable == 0);
  CHECK(s.graph_bytes > 0);

  // an output kept from one run is not overwritten by the next (each run's outputs are its
  // own tensors, not the graph's buffers)
  const auto in_a = inputs(2, 101), in_b = inputs(2, 202);
  const auto out_a = gp.run(upload(gpu, in_a));
  const auto want_a = download(gpu, p.run(upload(gpu, in_a)));
  (void)gp.run(upload(gpu, in_b));
  gpass_test_cuda::check_close(download(gpu, out_a)[0], want_a[0], 1e-5, 1e-6);

  // another batch: its own signature, its own graph
  for (unsigned run = 0; run < 3; ++run) {
    const auto in = inputs(5, 300 + run);
    gpass_test_cuda::check_close(download(gpu, gp.run(upload(gpu, in)))[0], download(gpu, p.run(upload(gpu, in)))[0], 1e-5, 1e-6);
  }
  s = gp.stats();
  CHECK(s.captures == 2);
  CHECK(s.plain_runs == 2);

  // clear() drops the graphs: the next run of a signature runs the plan again
  gp.clear();
  CHECK(gp.stats().graph_bytes == 0);
  const auto in = inputs(2, 7);
  gpass_test_cuda::check_close(download(gpu, gp.run(upload(gpu, in)))[0], download(gpu, p.run(upload(gpu, in)))[0], 1e-5, 1e-6);
  CHECK(gp.stats().plain_runs == 3);
}

TEST_CASE("cuda: a plan that reads values back to the host runs as a plan under cuda_graph_plan") {
  GPASS_REQUIRE_GPU();
  auto& gpu = *gpass_test_cuda::gpu();
  const auto g = gpass::parse_text(gpass_test_cuda::while_loop);
  ex::plan<ex::cuda> p(g, gpu);
  ex::cuda_graph_plan<> gp(p, gpu);
  const auto x = gpass::tensor::from<float>({0.5f, -1.0f, 2.0f});
  for (std::int64_t n : {3, 3, 3, 5}) {
    const std::vector<gpass::tensor> in{x, gpass::tensor::scalar<std::int64_t>(n)};
    const auto want = download(gpu, p.run(upload(gpu, in)));
    const auto got = download(gpu, gp.run(upload(gpu, in)));
    gpass_test_cuda::check_close(got.at(0), want.at(0), 1e-6, 1e-6);
  }
  const auto s = gp.stats();
  CHECK(s.captures == 0);
  CHECK(s.uncapturable == 1);  // tried once (the second run of n = 3), then runs as a plan
  CHECK(s.plain_runs == 4);
  CHECK(s.replays == 0);
  // the policy is usable after the failed capture
  const std::vector<gpass::tensor> in{x, gpass::tensor::scalar<std::int64_t>(2)};
  gpass_test_cuda::check_close(download(gpu, p.run(upload(gpu, in))).at(0), download(gpu, gp.run(upload(gpu, in))).at(0), 1e-6, 1e-6);
}

}  // namespace gpass_test_cuda_graph
