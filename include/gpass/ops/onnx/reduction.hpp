// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file reduction.hpp
/// ONNX reductions: ReduceSum/Mean/Max/Min/Prod/L1/L2/LogSum/LogSumExp/SumSquare (axes as an
/// attribute; ReduceSum takes them as an input from opset 13, the others from opset 18), ArgMax/ArgMin; value
/// propagation of ReduceProd/Sum/Max/Min over small integer vectors (element counts computed
/// from `Shape`).

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <gpass/ops/onnx/common.hpp>

namespace gpass {

/// Registers the ONNX reductions into `r` (see the file comment).
void register_onnx_reduction_ops(op_registry& r);

namespace detail::onnx_ops {

using namespace gpass::onnx_shape;

inline void reduce_infer(infer_context& c) {
  const bool keep = c.attr_int("keepdims", 1) != 0;
  std::optional<std::vector<std::int64_t>> ax;
  bool axes_given = false;
  if (c.has_input(1)) {
    axes_given = true;
    ax = c.input_ints(1);
  } else if (c.attr("axes")) {
    axes_given = true;
    ax = c.attr_ints("axes");
  }
  auto r = c.input_rank(0);
  if (!r) return;
  shape s = c.input_shape(0);
  if (axes_given && !ax) {  // axes computed at run time
    if (keep) c.set_shape(0, shape::unknown_dims(*r));
    else if (shape as = c.input_shape(1); as.has_rank() && as.rank() == 1 && as[0].is_known() &&
                                          static_cast<std::size_t>(as[0].value()) <= *r)
      c.set_shape(0, shape::unknown_dims(*r - static_cast<std::size_t>(as[0].value())));
    return;
  }
  if (!ax || ax->empty()) {
    if (c.attr_int("noop_with_empty_axes", 0) != 0) {
      c.set_shape(0, s);
      return;
    }
    ax.emplace();
    for (std::size_t i = 0; i < *r; ++i) ax->push_back(static_cast<std::int64_t>(i));
  }
  auto axs = axes(c, *ax, *r);
  std::vector<dim> out;
  for (std::size_t i = 0; i < *r; ++i) {
    bool red = std::find(axs.begin(), axs.end(), i) != axs.end();
    if (!red) out.push_back(s[i]);
    else if (keep) out.push_back(dim(1));
  }
  c.set_shape(0, shape(std::move(out)));
}

// ReduceProd/Sum/Max/Min of a 1-D integer vector over its only axis.
inline void reduce_value(infer_context& c, char op) {
  if (c.input_rank(0) != std::optional<std::size_t>(1)) return;
  auto d = c.input_dims(0);
  if (!d) return;
  dim acc;
  if (op == '*') acc = product(*d);
  else if (op == '+') {
    acc = dim(0);
    for (const auto& x : *d) acc = add_dims(acc, x);
  } else {
    if (d->empty()) return;
    acc = (*d)[0];
    for (const auto& x : *d) {
      if (x == acc) continue;
      if (!x.is_known() || !acc.is_known()) return;
      if ((op == '>' && x.value() > acc.value()) || (op == '<' && x.value() < acc.value())) acc = x;
    }
  }
  c.set_dims_value(0, {acc});
}

inline void arg_reduce_infer(infer_context& c) {
  auto r = c.input_rank(0);
  if (!r) return;
  shape s = c.input_shape(0);
  std::size_t a = axis(c, c.attr_int("axis", 0), *r);
  std::vector<dim> out;
  for (std::size_t i = 0; i < *r; ++i) {
    if (i != a) out.push_back(s[i]);
    else if (c.attr_int("keepdims", 1) != 0) out.push_back(dim(1));
  }
  c.set_shape(0, shape(std::move(out)));
}

}  // namespace detail::onnx_ops
}  // namespace gpass

inline void gpass::register_onnx_reduction_ops(op_registry& r) {
  using namespace detail::onnx_ops;
  namespace ot = onnx_types;
  const auto num = ot::numeric();
  struct red {
    const char* name;
    char value;  // 0: no value propagation
  };
  for (auto x : {red{"ReduceSum", '+'}, red{"ReduceMean", 0}, red{"ReduceMax", '>'}, red{"ReduceMin", '<'},
                 red{"ReduceProd", '*'}, red{"ReduceL1", 0}, red{"ReduceL2", 0}, red{"ReduceLogSum", 0},
                 red{"ReduceLogSumExp", 0}, red{"ReduceSumSquare", 0}}) {
    char v = x.value;
    infer_function prop;
    if (v) prop = [v](infer_context& c) { reduce_value(c, v); };
    if (std::string(x.name) == "ReduceSum") {
      onnx_op(x.name, 1).until(12).in("data:T").out("reduced:T").tc("T", num).opt("axes", "ints")
          .attr("keepdims", "int", std::int64_t{1}).infer(reduce_infer).propagate(prop).add(r);
      onnx_op(x.name, 13).in("data:T").in("axes?:i64").out("reduced:T").tc("T", num)
          .attr("keepdims", "int", std::int64_t{1}).attr("noop_with_empty_axes", "int", std::int64_t{0})
          .infer(reduce_infer).propagate(prop).add(r);
    } else {
      // opset 18 moves the axes of every other reduction to an input; ReduceMax/Min-20 add
      // bool (a types-only change)
      onnx_op(x.name, 1).until(17).in("data:T").out("reduced:T").tc("T", num).opt("axes", "ints")
          .attr("keepdims", "int", std::int64_t{1}).infer(reduce_infer).propagate(prop).add(r);
      const bool minmax = std::string(x.name) == "ReduceMax" || std::string(x.name) == "ReduceMin";
      auto types = num;
      if (minmax) types.push_back(dtype::bool_);
      onnx_op(x.name, 18).in("data:T").in("axes?:i64").out("reduced:T").tc("T", types)
          .attr("keepdims", "int", std::int64_t{1}).attr("noop_with_empty_axes", "int", std::int64_t{0})
          .infer(reduce_infer).propagate(prop).add(r);
    }
  }
  for (const char* n : {"ArgMax", "ArgMin"})
    onnx_op(n, 1).in("data:T").out("reduced:i64").tc("T", num).attr("axis", "int", std::int64_t{0})
        .attr("keepdims", "int", std::int64_t{1}).attr("select_last_index", "int", std::int64_t{0})
        .infer(arg_reduce_infer).add(r);
}
