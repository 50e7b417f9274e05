// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file control_flow.hpp
/// ONNX control flow: If, Loop, Scan (opset 8 and 9+) and SequenceMap, over functions of the
/// graph's library (`function_ref` attributes `then_branch`, `else_branch`, `body`).
///
/// Layout (as the gpass ONNX importer makes it): values a body captures from the enclosing
/// graph are explicit, appended as the node's last inputs and the body's last arguments;
/// their number is the int attribute `_captures` (0 when absent).
/// - If: inputs `cond, captures...`; each branch takes `captures...`. Outputs: the join of
///   the branches' results (only the taken branch when `cond` is known).
/// - Loop: inputs `M?, cond?, v_initial[N], captures[K]`; body takes `iter (i64[]), cond
///   (bool[]), v[N], captures` and returns `cond, v[N], scan[S]`. Outputs: the carried values
///   at their fixed point (`loop_fixed_point`: dims that change across iterations become
///   fresh symbols), then the scan outputs `[trips, element...]` (trips = M when known and
///   no condition is given, else a fresh symbol).
/// - Scan (9+): inputs `state[N], scan_in[M], captures`; body takes `state, element of each
///   scan input (scan axis removed), captures`, returns `state, scan_out elements`.
///   Opset 8 has a leading optional `sequence_lens` and a batch axis 0.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <gpass/ops/core_ops.hpp>
#include <gpass/ops/loop_fixed_point.hpp>
#include <gpass/ops/onnx/common.hpp>

namespace gpass {

/// Registers ONNX If, Loop, Scan and SequenceMap into `r` (see the file comment).
void register_onnx_control_flow_ops(op_registry& r);

namespace detail::onnx_ops {

using namespace gpass::onnx_shape;

inline std::size_t num_captures(infer_context& c) {
  std::int64_t k = c.attr_int("_captures", 0);
  if (k < 0 || static_cast<std::size_t>(k) > c.num_inputs()) c.fail("_captures is " + std::to_string(k) + " but the node has " +
                                                                    std::to_string(c.num_inputs()) + " inputs");
  return static_cast<std::size_t>(k);
}

inline std::vector<port_info> capture_args(infer_context& c) {
  std::size_t k = num_captures(c);
  std::vector<port_info> a;
  for (std::size_t i = c.num_inputs() - k; i < c.num_inputs(); ++i) a.push_back(c.input(i));
  return a;
}

inline void if_infer(infer_context& c) {
  if (auto r = c.input_rank(0); r && *r != 0 && !(*r == 1 && c.input_shape(0)[0] == dim(1)))
    c.fail("cond must be a single element, got " + c.input_shape(0).to_string());
  std::vector<port_info> args = capture_args(c);
  auto tb = c.attr_function("then_branch");
  auto eb = c.attr_function("else_branch");
  std::vector<port_info> a = tb ? c.call(*tb, args) : std::vector<port_info>{};
  std::vector<port_info> b = eb ? c.call(*eb, args) : std::vector<port_info>{};
  if (tb && eb && !a.empty() && !b.empty() && a.size() != b.size())
    c.fail("branches return " + std::to_string(a.size()) + " and " + std::to_string(b.size()) + " values");
  join_branches(c, a, b, known_predicate(c, 0));
}

// Inserts `d` at position `axis` of `s` (a scan output's stacking axis).
inline type stacked(infer_context& c, const type& elem, const dim& d, std::int64_t axis_attr) {
  if (!elem.is_tensor()) return type{};
  tensor_type t = elem.tensor();
  if (!t.shape.has_rank()) return tensor_type{t.element, shape()};
  auto r = static_cast<std::int64_t>(t.shape.rank()) + 1;
  if (axis_attr < -r || axis_attr >= r) c.fail("scan output axis " + std::to_string(axis_attr) + " out of range");
  if (axis_attr < 0) axis_attr += r;
  auto dims = t.shape.dims();
  dims.insert(dims.begin() + axis_attr, d);
  return tensor_type{t.element, shape(std::move(dims))};
}

inline void loop_infer(infer_context& c) {
  auto body = c.attr_function("body");
  const std::size_t k = num_captures(c);
  if (c.num_inputs() < 2 + k) c.fail("Loop needs M and cond inputs (possibly empty)");
  const std::size_t n = c.num_inputs() - 2 - k;
  if (c.num_outputs() < n) c.fail("Loop has " + std::to_string(n) + " carried values but " +
                                  std::to_string(c.num_outputs()) + " outputs");
  const std::size_t s = c.num_outputs() - n;
  std::vector<port_info> caps = capture_args(c);
  std::vector<port_info> init;
  for (std::size_t i = 0; i < n; ++i) init.push_back(c.input(2 + i));
  auto make_args = [&](const std::vector<port_info>& st) {
    std::vector<port_info> a;
    a.push_back(port_info{tensor_type{dtype::int64, shape::scalar()}, {}});
    a.push_back(port_info{tensor_type{dtype::bool_, shape::scalar()}, {}});
    a.insert(a.end(), st.begin(), st.end());
    a.insert(a.end(), caps.begin(), caps.end());
    return a;
  };
  std::vector<port_info> last;
  auto state = loop_fixed_point(c, init, [&](const std::vector<port_info>& st) -> std::optional<std::vector<port_info>> {
    if (!body) return std::nullopt;
    auto r = c.call(*body, make_args(st));
    if (r.size() < 1 + n) return std::nullopt;
    if (r.size() != 1 + n + s)
      c.fail("body returns " + std::to_string(r.size()) + " values, expected " + std::to_string(1 + n + s) +
             " (cond, " + std::to_string(n) + " carried, " + std::to_string(s) + " scan outputs)");
    return std::vector<port_info>(r.begin() + 1, r.begin() + 1 + static_cast<std::ptrdiff_t>(n));
  });
  for (std::size_t i = 0; i < n; ++i) c.output(i) = state[i];
  if (s == 0 || !body) return;
  auto r = c.call(*body, make_args(state));  // the fixed-point iteration (memoized)
  if (r.size() != 1 + n + s) return;
  dim trips = c.fresh_dim("trips");
  if (!c.has_input(1))
    if (auto m = c.input_int(0)) trips = dim(*m);
  for (std::size_t j = 0; j < s; ++j) c.set_output(n + j, stacked(c, r[1 + n + j].type, trips, 0));
}

inline void scan_infer(infer_context& c) {
  auto body = c.attr_function("body");
  const bool v8 = c.opset() != 0 && c.opset() < 9;
  const std::size_t k = num_captures(c);
  const std::size_t first = v8 ? 1 : 0;  // opset 8: sequence_lens first
  const std::int64_t m_attr = c.attr_int("num_scan_inputs", 0);
  if (m_attr < 0) c.fail("num_scan_inputs must not be negative, got " + std::to_string(m_attr));  // (it wrapped as size_t)
  const auto m = static_cast<std::size_t>(m_attr);
  if (c.num_inputs() < first + m + k) c.fail("fewer inputs than num_scan_inputs");
  const std::size_t n = c.num_inputs() - first - m - k;
  if (c.num_outputs() < n) c.fail("fewer outputs than state variables");
  const std::size_t so = c.num_outputs() - n;
  auto in_axes = c.attr_ints("scan_input_axes").value_or(std::vector<std::int64_t>(m, 0));
  auto out_axes = c.attr_ints("scan_output_axes").value_or(std::vector<std::int64_t>(so, 0));
  if (in_axes.size() != m) c.fail("scan_input_axes has " + std::to_string(in_axes.size()) + " values for " + std::to_string(m) + " scan inputs");
  if (out_axes.size() != so) c.fail("scan_output_axes has " + std::to_string(out_axes.size()) + " values for " + std::to_string(so) + " scan outputs");
  dim batch, seq;
  std::vector<port_info> args;
  auto drop = [](const tensor_type& t, std::size_t at) {
    auto d = t.shape.dims();
    d.erase(d.begin() + static_cast<std::ptrdiff_t>(at));
    return tensor_type{t.element, shape(std::move(d))};
  };
  for (std::size_t i = 0; i < n; ++i) {
    port_info p = c.input(first + i);
    if (v8 && p.type.is_tensor() && p.type.tensor().shape.has_rank() && p.type.tensor().shape.rank() >= 1) {
      batch = c.unify(batch, p.type.tensor().shape[0], "(batch of state " + std::to_string(i) + ")");
      p.type = drop(p.type.tensor(), 0);
    }
    p.value = {};
    args.push_back(p);
  }
  for (std::size_t j = 0; j < m; ++j) {
    tensor_type t = c.input_tensor(first + n + j);
    if (!t.shape.has_rank()) {
      args.push_back(port_info{tensor_type{t.element, shape()}, {}});
      continue;
    }
    std::size_t ax;
    if (v8) {
      if (t.shape.rank() < 2) c.fail("scan input " + std::to_string(j) + " needs batch and sequence axes");
      batch = c.unify(batch, t.shape[0], "(batch of scan input " + std::to_string(j) + ")");
      t = drop(t, 0);
      ax = 0;
    } else {
      ax = axis(c, in_axes[j], t.shape.rank(), "scan_input_axes");
    }
    seq = c.unify(seq, t.shape[ax], "(sequence length of scan input " + std::to_string(j) + ")");
    args.push_back(port_info{drop(t, ax), {}});
  }
  std::vector<port_info> caps = capture_args(c);
  std::vector<port_info> init(args.begin(), args.begin() + static_cast<std::ptrdiff_t>(n));
  std::vector<port_info> elems(args.begin() + static_cast<std::ptrdiff_t>(n), args.end());
  auto make_args = [&](const std::vector<port_info>& st) {
    std::vector<port_info> a = st;
    a.insert(a.end(), elems.begin(), elems.end());
    a.insert(a.end(), caps.begin(), caps.end());
    return a;
  };
  auto state = loop_fixed_point(c, init, [&](const std::vector<port_info>& st) -> std::optional<std::vector<port_info>> {
    if (!body) return std::nullopt;
    auto r = c.call(*body, make_args(st));
    if (r.size() < n) return std::nullopt;
    if (r.size() != n + so)
      c.fail("body returns " + std::to_string(r.size()) + " values, expected " + std::to_string(n + so));
    return std::vector<port_info>(r.begin(), r.begin() + static_cast<std::ptrdiff_t>(n));
  });
  for (std::size_t i = 0; i < n; ++i)
    c.set_output(i, v8 ? stacked(c, state[i].type, batch, 0) : state[i].type);
  if (so == 0 || !body) return;
  auto r = c.call(*body, make_args(state));
  if (r.size() != n + so) return;
  for (std::size_t j = 0; j < so; ++j) {
    type t = stacked(c, r[n + j].type, seq, v8 ? 0 : out_axes[j]);
    if (v8 && t.is_tensor()) t = stacked(c, t, batch, 0);
    c.set_output(n + j, t);
  }
}

inline void sequence_map_infer(infer_context& c) {
  auto body = c.attr_function("body");
  if (!body) return;
  const std::size_t k = num_captures(c);
  std::vector<port_info> args;
  dim len;
  for (std::size_t i = 0; i + k < c.num_inputs(); ++i) {
    const type& t = c.input_type(i);
    if (t.is_list()) {
      args.push_back(port_info{t.list().element, {}});
      if (i == 0) len = t.list().length;
    } else {
      args.push_back(c.input(i));
    }
  }
  auto caps = capture_args(c);
  args.insert(args.end(), caps.begin(), caps.end());
  auto r = c.call(*body, args);
  for (std::size_t j = 0; j < c.num_outputs() && j < r.size(); ++j) {
    list_type l;
    if (r[j].type.is_tensor()) l.element = r[j].type.tensor();
    l.length = len;
    c.set_output(j, l);
  }
}

}  // namespace detail::onnx_ops
}  // namespace gpass

inline void gpass::register_onnx_control_flow_ops(op_registry& r) {
  using namespace detail::onnx_ops;
  onnx_op("If", 1).in("cond:B").in("captures~0:V").out("outputs~:V").tc("B", {dtype::bool_})
      .req("then_branch", "func").req("else_branch", "func").infer(if_infer).add(r);
  onnx_op("Loop", 1).in("M?:I").in("cond?:B").in("v_initial~0:V").out("v_final_and_scan_outputs~:V")
      .tc("I", {dtype::int64}).tc("B", {dtype::bool_}).req("body", "func").infer(loop_infer).add(r);
  onnx_op("Scan", 8).until(8).in("sequence_lens?:I").in("initial_state_and_scan_inputs~:V")
      .out("final_state_and_scan_outputs~:V").tc("I", {dtype::int64}).req("body", "func")
      .req("num_scan_inputs", "int").opt("directions", "ints").infer(scan_infer).add(r);
  onnx_op("Scan", 9).in("initial_state_and_scan_inputs~:V").out("final_state_and_scan_outputs~:V")
      .req("body", "func").req("num_scan_inputs", "int").opt("scan_input_axes", "ints")
      .opt("scan_input_directions", "ints").opt("scan_output_axes", "ints").opt("scan_output_directions", "ints")
      .infer(scan_infer).add(r);
  onnx_op("SequenceMap", 17).in("input_sequence:S").in("additional_inputs~0:V").out("out_sequence~:S")
      .req("body", "func").infer(sequence_map_infer).add(r);
}
