// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file fuse_elementwise.hpp
/// `gpass::fuse_elementwise`: the "fuse-elementwise" pass: a chain (a tree) of element-wise
/// ops whose intermediate results nothing else reads becomes one `gpass::FusedElementwise`,
/// which the CPU executor runs as one loop over cache-sized blocks instead of one pass over
/// memory per op.

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gpass/config.hpp>
#include <gpass/core/type.hpp>
#include <gpass/graph/graph.hpp>
#include <gpass/ops/fused_elementwise.hpp>
#include <gpass/pass/context.hpp>
#include <gpass/pass/pass_base.hpp>
#include <gpass/pass/rewrite.hpp>

namespace gpass {

namespace detail {

/// Most ops and inputs in one fused group (the kernel keeps a block buffer per step).
inline constexpr std::size_t max_fused_ops = 64;
inline constexpr std::size_t max_fused_inputs = 16;

/// True when `v` can be a step of a fused program: an op of `fused_unary_ops` /
/// `fused_binary_ops` (default domain) with all its operands, one f32 or f64 tensor output
/// of a known type, no control edges.
template <class G>
bool fusable_elementwise(const G& g, typename G::node_id v) {
  const auto& n = g[v];
  if (!n.domain.empty() || n.outputs.size() != 1) return false;
  const int arity = fused_op_arity(n.op);
  if (arity == 0 || g.num_inputs(v) != static_cast<std::size_t>(arity)) return false;
  for (int i = 0; i < arity; ++i)
    if (g.input(v, i).empty) return false;
  const type& t = n.outputs[0];
  if (!t.is_tensor() || (t.tensor().element != dtype::f32 && t.tensor().element != dtype::f64)) return false;
  return g.control_inputs(v).empty() && g.control_outputs(v).empty();
}

/// The group whose last op is `sink`: the element-wise producers (recursively) that only
/// the group reads, of the sink's type, on its device; `sink` must not itself be the only
/// operand of a fusable op of its type (that op is the sink then). Becomes
/// `gpass::FusedElementwise(inputs...) {program}`, named as the sink. Declines groups of one
/// op and groups that would need more than `max_fused_inputs` inputs.
template <class G>
bool fuse_elementwise_group(rewriter<G>& rw, typename G::node_id sink) {
  using node_id = typename G::node_id;
  G& g = rw.graph();
  if (!fusable_elementwise(g, sink)) return false;
  const type& yt = g[sink].outputs[0];
  const std::string& device = g[sink].device;
  auto member = [&](node_id v) {
    return fusable_elementwise(g, v) && g[v].device == device && match::same_known_tensor_type(g[v].outputs[0], yt);
  };
  if (!match::same_known_tensor_type(yt, yt)) return false;  // a known type
  if (const auto us = g.uses(sink); us.size() == 1 && member(us[0].node)) return false;
  // post-order over the tree below the sink: operands before the steps that read them
  struct frame {
    node_id v;
    int next = 0;
  };
  std::vector<node_id> order;
  std::vector<frame> stack{{sink}};
  std::size_t members = 1;
  auto absorbed = [&](node_id v, int i) {
    const auto in = g.input(v, i);
    return in.port == 0 && g.uses(in.node).size() == 1 && member(in.node) && members < max_fused_ops;
  };
  while (!stack.empty()) {
    frame& f = stack.back();
    if (f.next < static_cast<int>(g.num_inputs(f.v))) {
      const int i = f.next++;
      if (absorbed(f.v, i)) {
        ++members;
        stack.push_back({g.input(f.v, i).node});
      }
      continue;
    }
    order.push_back(f.v);
    stack.pop_back();
  }
  if (order.size() < 2) return false;
  // the program; every value from outside is an input, once
  std::vector<std::pair<node_id, int>> inputs;
  std::vector<std::string> program;
  std::vector<std::pair<node_id, int>> step_of;  // (member, step index)
  auto step_index = [&](node_id v) {
    for (const auto& [m, s] : step_of)
      if (m == v) return s;
    return -1;
  };
  for (node_id v : order) {
    std::string text = g[v].op;
    for (int i = 0; i < static_cast<int>(g.num_inputs(v)); ++i) {
      const auto in = g.input(v, i);
      int arg = in.port == 0 ? step_index(in.node) : -1;
      if (arg >= 0) {
        arg = -arg - 1;
      } else {
        const std::pair<node_id, int> value{in.node, in.port};
        std::size_t k = 0;
        while (k < inputs.size() && inputs[k] != value) ++k;
        if (k == inputs.size()) inputs.push_back(value);
        arg = static_cast<int>(k);
      }
      text += " " + fused_operand_text(arg);
    }
    step_of.emplace_back(v, static_cast<int>(program.size()));
    program.push_back(std::move(text));
  }
  if (inputs.size() > max_fused_inputs) return false;
  typename G::node_type n;
  n.op = "FusedElementwise";
  n.domain = "gpass";
  n.device = device;
  n.attrs["program"] = program;
  n.outputs = g[sink].outputs;
  rw.replace_with(sink, std::move(n), inputs);
  for (auto it = order.rbegin() + 1; it != order.rend(); ++it) rw.erase(*it);  // each after its reader
  return true;
}

}  // namespace detail

/// Pass "fuse-elementwise" (`op_fuse_pass`'s element-wise chains; what TVM and XLA call
/// loop fusion): every maximal tree of element-wise ops (`gpass::fused_unary_ops` and
/// `fused_binary_ops` on f32 or f64 tensors) whose inner results are read only inside it and
/// have its result's type becomes one `gpass::FusedElementwise(inputs) {program}` (see
/// gpass/ops/fused_elementwise.hpp), named as its last op. Inputs may broadcast (scalars,
/// bias vectors, any NumPy broadcast). At most 64 ops and 16 inputs a group. The CPU kernel
/// runs the program on blocks of 512 elements; the op exports to ONNX in domain `gpass`
/// (this is `-O3`). Statistics: `groups` (rewrites) and per-pattern hits. O(V + E).
/// \code
///   gpass::fuse_elementwise(g, ctx);   // Tanh(Add(Mul(x, w), b)) -> gpass::FusedElementwise(x, w, b)
/// \endcode
struct fuse_elementwise_fn : pass_base<fuse_elementwise_fn> {
  static constexpr std::string_view name = "fuse-elementwise";
  static constexpr std::string_view description = "Fuse chains of element-wise ops into one gpass::FusedElementwise loop";

  template <class G>
  void run(G& g, pass_context& ctx) const {
    std::vector<op_ref> roots;
    for (auto op : fused_unary_ops) roots.push_back({"", std::string(op)});
    for (auto op : fused_binary_ops) roots.push_back({"", std::string(op)});
    const std::vector<rewrite_pattern<G>> ps{
        {.name = "elementwise-group", .roots = roots, .when = {}, .rewrite = detail::fuse_elementwise_group<G>}};
    report_edits(ctx, {{"groups", apply_patterns_everywhere(g, ps, ctx)}});
  }
};

/// The `fuse-elementwise` pass object (see `fuse_elementwise_fn`).
inline constexpr fuse_elementwise_fn fuse_elementwise{};
#if !GPASS_HEADER_ONLY
// Instantiated once for the default graph type, by the unit passes/src/passes.cpp.
extern template void fuse_elementwise_fn::run<graph<>>(graph<>& g, pass_context& ctx) const;
#endif

}  // namespace gpass
