// SPDX-License-Identifier: Apache-2.0
#pragma once
// Test support for the TF op tests on hand-written text-IR graphs: a graph body inferred
// (`infer`, `out_of`: the type of one node's output), or run on the Eigen CPU executor.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <gpass/exec/eigen_cpu.hpp>
#include <gpass/exec/plan.hpp>
#include <gpass/io/text.hpp>
#include <gpass/passes/common/infer_shapes.hpp>

namespace gpass_test::tf_text {

/// The graph of `body` (text IR lines) after shape inference.
inline gpass::graph<> infer(std::string_view body) {
  gpass::graph<> g = gpass::parse_text("graph {\n" + std::string(body) + "\n}\n");
  gpass::pass_context ctx;
  gpass::infer_shapes(g, ctx);
  return g;
}

/// The inferred type of output `port` of node `node` of `body`, as text.
inline std::string out_of(std::string_view body, const char* node = "y", std::size_t port = 0) {
  const gpass::graph<> g = infer(body);
  return g[g.at(node)].outputs.at(port).to_string();
}

/// The outputs of `body` run with the inputs `in` on one CPU thread.
inline std::vector<gpass::exec::value> run(const std::string& body, std::vector<gpass::exec::value> in = {}) {
  gpass::graph<> g = gpass::parse_text("graph {\n" + body + "}\n");
  gpass::exec::eigen_cpu cpu({.threads = 1});
  gpass::exec::plan<gpass::exec::eigen_cpu> p(g, cpu);
  return p.run(std::move(in));
}

}  // namespace gpass_test::tf_text
