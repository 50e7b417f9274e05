// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file inline_functions.hpp
/// `gpass::inline_functions`: replaces `call` nodes (ONNX model-local functions) by the
/// bodies of the functions they call.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gpass/config.hpp>
#include <gpass/core/attribute.hpp>
#include <gpass/graph/graph.hpp>
#include <gpass/graph/library.hpp>
#include <gpass/pass/context.hpp>
#include <gpass/pass/pass_base.hpp>
#include <gpass/passes/detail/inline_call.hpp>

namespace gpass {

/// Pass `inline-functions`: every core `call` node (op `call`, default domain, its function
/// in attribute `f`; the ONNX importer makes one per call of a model-local function), in the
/// graph and in every function of its library (loop bodies, branches), is replaced by a copy
/// of the called function's body (`detail::inline_call`: the copies are named
/// `<call>/<node>`, the call's uses read the body's results). Calls the copies bring in are
/// inlined in turn, up to 64 levels (a deeper nesting, or a function that calls itself, is an
/// error naming the call), and up to `max_nodes` copied nodes in all (functions that call
/// each other twice per level grow exponentially: an error, not an exhausted machine). Then
/// the functions no node refers to any more are removed.
///
/// Statistics: `calls` (calls inlined), `nodes` (nodes copied), `removed-functions`. Linear
/// in the size of the result.
/// \code
///   auto g = gpass::read_onnx_file("torch_export.onnx");   // model-local functions -> calls
///   gpass::pass_context ctx;
///   gpass::inline_functions(g, ctx);                     // a flat graph
/// \endcode
struct inline_functions_fn : pass_base<inline_functions_fn> {
  static constexpr std::string_view name = "inline-functions";
  static constexpr std::string_view description =
      "Replace call nodes (ONNX model-local functions) by the bodies of their functions";
  static constexpr int max_depth = 64;
  static constexpr std::int64_t max_nodes = 50'000'000;

  template <class G>
  void run(G& g, pass_context& ctx) const {
    using node_id = typename G::node_id;
    std::int64_t calls = 0, nodes = 0;
    auto is_call = [](const typename G::node_type& n) { return n.domain.empty() && n.op == "call"; };
    for (G* h : all_graphs(g)) {
      std::vector<std::pair<node_id, int>> work;  // (call, depth)
      for (auto v : h->nodes())
        if (is_call((*h)[v])) work.emplace_back(v, 0);
      while (!work.empty()) {
        auto [c, depth] = work.back();
        work.pop_back();
        const auto& n = (*h)[c];
        if (depth >= max_depth)
          fail("calls nest deeper than " + std::to_string(max_depth) + " levels (a recursive function?)", n.name, n.op);
        auto it = n.attrs.find("f");
        if (it == n.attrs.end() || !it->second.template is<function_ref>())
          fail("call has no function attribute 'f'", n.name, n.op);
        const std::string fname = it->second.template as<function_ref>().name;
        const std::string call_name = n.name;
        const G* f = g.find_function(fname);
        if (!f) fail("call of function '" + fname + "', which the library does not have", n.name, n.op);
        auto added = detail::inline_call(*h, c, *f, fname, name, [](const typename G::node_type& call) {
          typename G::node_type anchor;  // an empty tuple: no data, orders the call's successors
          anchor.name = call.name;
          anchor.op = "make_tuple";
          anchor.device = call.device;
          anchor.outputs.assign(1, type{});
          return anchor;
        });
        ++calls;
        nodes += static_cast<std::int64_t>(added.size());
        if (nodes > max_nodes)
          fail("inlining copies more than " + std::to_string(max_nodes) + " nodes (calls that multiply at every level?)",
               call_name, "call");
        for (auto v : added)
          if (is_call((*h)[v])) work.emplace_back(v, depth + 1);
      }
    }
    const auto removed = static_cast<std::int64_t>(remove_unused_functions(g));
    report_edits(ctx, {{"calls", calls}, {"nodes", nodes}, {"removed-functions", removed}});
  }
};

/// The `inline-functions` pass object (see `inline_functions_fn`).
inline constexpr inline_functions_fn inline_functions{};
#if !GPASS_HEADER_ONLY
// Instantiated once for the default graph type, by the unit passes/src/passes.cpp.
extern template void inline_functions_fn::run<graph<>>(graph<>& g, pass_context& ctx) const;
#endif

}  // namespace gpass
