// SPDX-License-Identifier: Apache-2.0
#pragma once
// The laws the control-flow functionalization tests check on every converted graph.

#include <string>

#include <doctest/doctest.h>

#include <gpass/analysis/verify.hpp>
#include <gpass/io/text.hpp>
#include <gpass/pass/context.hpp>
#include <gpass/passes/tf/detail/control_flow.hpp>

namespace gpass_test::tf {

/// `g` verifies with no v1 cycle allowed, has no v1 control-flow node in any graph, and
/// running the passes again (`rerun(graph, ctx)`) changes nothing and converts nothing
/// (statistic `converted_stat` is 0).
template <class Rerun>
void check_control_flow_laws(const gpass::graph<>& g, Rerun rerun, const std::string& converted_stat) {
  gpass::verify_options o;
  o.allow_v1_control_flow_cycles = false;
  CHECK_NOTHROW(gpass::verify(g, o));
  gpass::graph<> copy = g;
  for (gpass::graph<>* h : gpass::all_graphs(copy))
    for (auto v : h->nodes()) CHECK_MESSAGE(!gpass::detail::is_v1_control_flow((*h)[v]), (*h)[v].name);
  gpass::pass_context ctx;
  rerun(copy, ctx);
  CHECK(gpass::print_text(copy) == gpass::print_text(g));
  CHECK(ctx.statistics().at(converted_stat) == 0);
}

}  // namespace gpass_test::tf
