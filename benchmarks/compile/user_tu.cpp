// SPDX-License-Identifier: Apache-2.0
// A user translation unit: includes the umbrella, builds a one-node Relu graph, infers its
// shapes and runs it on the Eigen CPU policy. benchmarks/compile/run.sh measures the time and
// peak memory the compiler needs for it (in the compiled-kernels mode and fully header-only).
#include <gpass/all.hpp>
#include <gpass/exec/eigen_cpu.hpp>
#include <gpass/exec/plan.hpp>

#include <cstdio>

int main() {
  gpass::graph<> g;
  auto x = g.add_node({.name = "x", .op = "arg", .attrs = {{"index", std::int64_t{0}}}});
  auto y = g.add_node({.name = "y", .op = "Relu"});
  g.add_input(y, x);
  auto r = g.add_node({.name = "r", .op = "return", .outputs = {}});
  g.add_input(r, y);
  g[x].outputs = {gpass::tensor_type{gpass::dtype::f32, gpass::shape{4}}};
  gpass::pass_context ctx;
  gpass::infer_shapes(g, ctx);
  gpass::exec::eigen_cpu cpu({.threads = 1});
  gpass::exec::plan plan(g, cpu);
  gpass::tensor in(gpass::dtype::f32, {4});
  float v[] = {-1.f, 2.f, -3.f, 4.f};
  for (int i = 0; i < 4; ++i) in.data<float>()[i] = v[i];
  auto out = plan.run({in});
  const float* o = out.at(0).tensor().data<float>();
  std::printf("%g %g %g %g\n", o[0], o[1], o[2], o[3]);
  return o[0] == 0.f && o[1] == 2.f && o[2] == 0.f && o[3] == 4.f ? 0 : 1;
}
