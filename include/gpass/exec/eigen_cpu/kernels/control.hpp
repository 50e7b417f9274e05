// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file control.hpp
/// Eigen CPU kernels: constants, control flow (ONNX `If`, `Loop`, `Scan`, `SequenceMap`;
/// gpass core `while`, `if`, `get_tuple`), sequences and optionals. Control flow runs the nested plans of its functions through
/// `kernel_context::call`; captures made explicit by the importer (`_captures` trailing
/// inputs) are passed after the formal inputs.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include <gpass/exec/eigen_cpu/kernels/common.hpp>

namespace gpass::exec::cpu_detail {

namespace control {

/// Copies `count` elements of the element type of `src` from `src[so...]` to `dst[do...]`.
inline void copy_elements(const gpass::tensor& src, std::int64_t so, gpass::tensor& dst, std::int64_t d0, std::int64_t count) {
  if (count <= 0) return;
  if (src.element_type() == dtype::string) {
    const auto* s = src.data<std::string>();
    auto* d = dst.data<std::string>();
    std::copy(s + so, s + so + count, d + d0);
    return;
  }
  const std::size_t es = size_of(src.element_type());
  std::memcpy(dst.raw() + d0 * es, src.raw() + so * es, static_cast<std::size_t>(count) * es);
}

/// A new tensor of `t` and `sizes` (zeroed; strings empty).
inline gpass::tensor make(dtype t, std::vector<std::int64_t> sizes) { return gpass::tensor(t, std::move(sizes)); }

/// Stacks equally shaped tensors along a new axis `axis` (0 .. rank) into the tensor
/// `alloc(dtype, sizes)` returns (a reference that stays valid).
template <class Alloc>
gpass::tensor& stack_with(const std::vector<gpass::tensor>& parts, std::int64_t axis, const kernel_node& n, dtype empty_type,
                          const std::vector<std::int64_t>& empty_sizes, Alloc&& alloc) {
  if (parts.empty()) {
    std::vector<std::int64_t> s = empty_sizes;
    s.insert(s.begin() + std::min<std::int64_t>(axis, static_cast<std::int64_t>(s.size())), 0);
    return alloc(empty_type == dtype::undefined ? dtype::f32 : empty_type, s);
  }
  const auto& first = parts.front();
  for (const auto& p : parts)
    if (p.sizes() != first.sizes() || p.element_type() != first.element_type())
      n.fail("cannot stack " + std::string(to_string(p.element_type())) + shape::of(p.sizes()).to_string() + " with " +
             std::string(to_string(first.element_type())) + shape::of(first.sizes()).to_string());
  const auto& es = first.sizes();
  if (axis < 0 || axis > static_cast<std::int64_t>(es.size())) n.fail("stack axis " + std::to_string(axis) + " out of range");
  std::vector<std::int64_t> out_sizes = es;
  out_sizes.insert(out_sizes.begin() + axis, static_cast<std::int64_t>(parts.size()));
  gpass::tensor& out = alloc(first.element_type(), out_sizes);
  std::int64_t outer = 1, inner = 1;
  for (std::int64_t d = 0; d < axis; ++d) outer *= es[d];
  for (std::size_t d = static_cast<std::size_t>(axis); d < es.size(); ++d) inner *= es[d];
  const auto count = static_cast<std::int64_t>(parts.size());
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t k = 0; k < count; ++k) copy_elements(parts[k], o * inner, out, (o * count + k) * inner, inner);
  return out;
}

/// `stack_with` into a new tensor.
inline gpass::tensor stack(const std::vector<gpass::tensor>& parts, std::int64_t axis, const kernel_node& n, dtype empty_type,
                           const std::vector<std::int64_t>& empty_sizes) {
  gpass::tensor out;
  stack_with(parts, axis, n, empty_type, empty_sizes, [&](dtype t, std::vector<std::int64_t> sizes) -> gpass::tensor& {
    return out = make(t, std::move(sizes));
  });
  return out;
}

/// An `allocate(dtype, sizes)` for `stack_with` / `concat_with` that makes output `i` of `ctx`
/// (allocate_output: the run's limits and byte count apply to the stacked tensor as to any
/// kernel's output); `Ctx`: the kernel context of a host-memory policy (register_control
/// runs on any).
template <class Ctx>
auto output_allocator(Ctx& ctx, std::size_t i) {
  return [&ctx, i](dtype t, std::vector<std::int64_t> sizes) -> gpass::tensor& { return ctx.allocate_output(i, t, std::move(sizes)); };
}

/// `stack_with` into output `i` of `ctx`.
template <class Ctx>
void stack_output(Ctx& ctx, std::size_t i, const std::vector<gpass::tensor>& parts, std::int64_t axis, dtype empty_type,
                  const std::vector<std::int64_t>& empty_sizes) {
  stack_with(parts, axis, ctx.node(), empty_type, empty_sizes, output_allocator(ctx, i));
}

/// Slice `index` of `t` along `axis` (the axis removed).
inline gpass::tensor take(const gpass::tensor& t, std::int64_t axis, std::int64_t index) {
  const auto& s = t.sizes();
  std::vector<std::int64_t> out_sizes = s;
  out_sizes.erase(out_sizes.begin() + axis);
  gpass::tensor out = make(t.element_type(), out_sizes);
  std::int64_t outer = 1, inner = 1;
  for (std::int64_t d = 0; d < axis; ++d) outer *= s[d];
  for (std::size_t d = static_cast<std::size_t>(axis) + 1; d < s.size(); ++d) inner *= s[d];
  for (std::int64_t o = 0; o < outer; ++o) copy_elements(t, (o * s[axis] + index) * inner, out, o * inner, inner);
  return out;
}

/// Concatenates tensors along an existing `axis` into the tensor `alloc(dtype, sizes)` returns.
template <class Alloc>
gpass::tensor& concat_with(const std::vector<gpass::tensor>& parts, std::int64_t axis, const kernel_node& n, Alloc&& alloc) {
  const auto& first = parts.front();
  const auto rank = static_cast<std::int64_t>(first.rank());
  if (axis < 0 || axis >= rank) n.fail("cannot concatenate along axis " + std::to_string(axis) + " of rank " + std::to_string(rank));
  std::vector<std::int64_t> out_sizes = first.sizes();
  out_sizes[axis] = 0;
  for (const auto& p : parts) {
    if (static_cast<std::int64_t>(p.rank()) != rank || p.element_type() != first.element_type())
      n.fail("cannot concatenate " + std::string(to_string(p.element_type())) + shape::of(p.sizes()).to_string() +
             " with " + std::string(to_string(first.element_type())) + shape::of(first.sizes()).to_string());
    for (std::int64_t d = 0; d < rank; ++d)
      if (d != axis && p.sizes()[d] != first.sizes()[d])
        n.fail("cannot concatenate sizes " + shape::of(p.sizes()).to_string() + " and " + shape::of(first.sizes()).to_string() +
               " along axis " + std::to_string(axis));
    out_sizes[axis] += p.sizes()[axis];
  }
  gpass::tensor& out = alloc(first.element_type(), out_sizes);
  std::int64_t outer = 1, inner = 1;
  for (std::int64_t d = 0; d < axis; ++d) outer *= out_sizes[d];
  for (std::int64_t d = axis + 1; d < rank; ++d) inner *= out_sizes[d];
  const std::int64_t row = out_sizes[axis] * inner;
  std::int64_t at = 0;
  for (const auto& p : parts) {
    const std::int64_t chunk = p.sizes()[axis] * inner;
    for (std::int64_t o = 0; o < outer; ++o) copy_elements(p, o * chunk, out, o * row + at, chunk);
    at += chunk;
  }
  return out;
}

/// `concat_with` into output `i` of `ctx`.
template <class Ctx>
void concat_output(Ctx& ctx, std::size_t i, const std::vector<gpass::tensor>& parts, std::int64_t axis) {
  concat_with(parts, axis, ctx.node(), output_allocator(ctx, i));
}

/// The dtype and sizes an output type promises, for empty results (zero iterations).
inline std::pair<dtype, std::vector<std::int64_t>> element_hint(const type& t) {
  if (!t.is_tensor()) return {dtype::undefined, {}};
  const auto& tt = t.tensor();
  std::vector<std::int64_t> s;
  if (tt.shape.has_rank())
    for (std::size_t d = 1; d < tt.shape.rank(); ++d) s.push_back(tt.shape[d].is_known() ? tt.shape[d].value() : 0);
  return {tt.element, s};
}

inline bool truthy(const gpass::tensor& t, const kernel_node& n, const char* what) {
  if (t.size() != 1) n.fail(std::string(what) + " must have one element, has " + std::to_string(t.size()));
  bool r = false;
  dispatch<type_list<bool, std::int8_t, std::int32_t, std::int64_t, std::uint8_t, float, double>>(
      t.element_type(), n, [&]<class T>() { r = t.data<T>()[0] != T(0); });
  return r;
}

inline std::int64_t scalar_int(const gpass::tensor& t, const kernel_node& n, const char* what) {
  auto v = int_values(t, n, what);
  if (v.size() != 1) n.fail(std::string(what) + " must have one element");
  return v[0];
}

}  // namespace control

/// Registers the control kernels in `r`. A template: control flow runs on the host for any
/// policy whose tensors are host tensors (`gpass::tensor`).
template <class P = eigen_cpu>
void register_control(kernel_registry<P>& r) {
  using context = kernel_context<P>;
  using fn = kernel_fn<P>;
  using namespace control;

  // ---- Constant --------------------------------------------------------------------
  r.add({.op = "Constant", .type_input = -1, .make = [](const kernel_node& n) -> fn {
    return [v = constant_attr_value(n)](context& ctx) { ctx.set_output(0, v); };
  }});

  // ---- If --------------------------------------------------------------------------
  r.add({.op = "If", .type_input = -1, .make = [](const kernel_node& n) -> fn {
    const std::string then_f = function_attr(n, "then_branch"), else_f = function_attr(n, "else_branch");
    const std::size_t caps = num_captures(n);
    return [then_f, else_f, caps](context& ctx) {
      const bool c = truthy(ctx.input(0), ctx.node(), "the If condition");
      std::vector<value> args;
      for (std::size_t i = ctx.num_inputs() - caps; i < ctx.num_inputs(); ++i) args.push_back(ctx.input_value(i));
      auto out = ctx.call(c ? then_f : else_f, std::move(args));
      if (out.size() != ctx.num_outputs())
        ctx.fail("branch '" + (c ? then_f : else_f) + "' returned " + std::to_string(out.size()) + " values for " +
                 std::to_string(ctx.num_outputs()) + " outputs");
      for (std::size_t k = 0; k < out.size(); ++k) ctx.set_output(k, std::move(out[k]));
    };
  }});

  // ---- Loop ------------------------------------------------------------------------
  r.add({.op = "Loop", .type_input = -1, .make = [](const kernel_node& n) -> fn {
    const std::string body = function_attr(n, "body");
    const std::size_t caps = num_captures(n);
    if (n.num_inputs() < 2 + caps) n.fail("Loop needs M and cond inputs");
    const std::size_t carried = n.num_inputs() - 2 - caps;
    if (carried > n.num_outputs()) n.fail("Loop has fewer outputs than loop-carried values");
    std::vector<std::pair<dtype, std::vector<std::int64_t>>> hints;
    for (std::size_t k = carried; k < n.num_outputs(); ++k) hints.push_back(element_hint(n.output_types[k]));
    return [body, caps, carried, hints](context& ctx) {
      const auto& nd = ctx.node();
      std::int64_t max_trip = -1;
      if (ctx.has_input(0)) max_trip = scalar_int(ctx.input(0), nd, "the trip count M");
      bool cond = true;
      if (ctx.has_input(1)) cond = truthy(ctx.input(1), nd, "the loop condition");
      std::vector<value> state;
      for (std::size_t k = 0; k < carried; ++k) state.push_back(ctx.input_value(2 + k));
      std::vector<value> captured;
      for (std::size_t i = ctx.num_inputs() - caps; i < ctx.num_inputs(); ++i) captured.push_back(ctx.input_value(i));
      const std::size_t num_scan = ctx.num_outputs() - carried;
      std::vector<std::vector<gpass::tensor>> scans(num_scan);
      for (std::int64_t i = 0; (max_trip < 0 || i < max_trip) && cond; ++i) {
        ctx.check_iteration(i);
        std::vector<value> args;
        args.reserve(2 + carried + caps);
        args.emplace_back(gpass::tensor::scalar<std::int64_t>(i));
        args.emplace_back(gpass::tensor::scalar<bool>(cond));
        for (auto& s : state) args.push_back(std::move(s));
        for (const auto& c : captured) args.push_back(c);
        auto out = ctx.call(body, std::move(args));
        if (out.size() != 1 + carried + num_scan)
          ctx.fail("loop body returned " + std::to_string(out.size()) + " values, expected " + std::to_string(1 + carried + num_scan));
        cond = truthy(out[0].tensor(), nd, "the body's condition output");
        for (std::size_t k = 0; k < carried; ++k) state[k] = std::move(out[1 + k]);
        for (std::size_t k = 0; k < num_scan; ++k) scans[k].push_back(out[1 + carried + k].tensor());
      }
      for (std::size_t k = 0; k < carried; ++k) ctx.set_output(k, std::move(state[k]));
      for (std::size_t k = 0; k < num_scan; ++k) {
        stack_output(ctx, carried + k, scans[k], 0, hints[k].first, hints[k].second);
        scans[k] = {};  // the iterations' parts go as soon as they are stacked
      }
    };
  }});

  // ---- core functional control flow: while, if, get_tuple ---------------------------
  // while(v...) {cond, body}: as TensorFlow runs a loop: while cond(v) is true, v = body(v);
  // no iteration limit but the run's (run_limits::max_loop_iterations). The condition must return one bool scalar.
  r.add({.op = "while", .type_input = -1, .make = [](const kernel_node& n) -> fn {
    const std::string cond = function_attr(n, "cond"), body = function_attr(n, "body");
    if (n.num_outputs() > n.num_inputs()) n.fail("while has more outputs than loop-carried inputs");
    return [cond, body](context& ctx) {
      std::vector<value> state;
      state.reserve(ctx.num_inputs());
      for (std::size_t i = 0; i < ctx.num_inputs(); ++i) state.push_back(ctx.input_value(i));
      for (std::int64_t i = 0;; ++i) {
        ctx.check_iteration(i);
        auto c = ctx.call(cond, state);
        if (c.size() != 1) ctx.fail("condition '" + cond + "' returned " + std::to_string(c.size()) + " values, expected 1");
        if (!c[0].is_tensor() || c[0].tensor().element_type() != dtype::bool_ || c[0].tensor().rank() != 0)
          ctx.fail("condition '" + cond + "' must return a bool scalar, returned " +
                   (c[0].is_tensor() ? std::string(to_string(c[0].tensor().element_type())) + shape::of(c[0].tensor().sizes()).to_string()
                                     : std::string(c[0].kind_name())));
        if (!c[0].tensor().template data<bool>()[0]) break;
        auto next = ctx.call(body, std::move(state));
        if (next.size() != ctx.num_inputs())
          ctx.fail("body '" + body + "' returned " + std::to_string(next.size()) + " values for " +
                   std::to_string(ctx.num_inputs()) + " loop-carried values");
        state = std::move(next);
      }
      for (std::size_t k = 0; k < ctx.num_outputs(); ++k) ctx.set_output(k, std::move(state[k]));
    };
  }});
  // if(pred, x...) {then_branch, else_branch}: runs one branch on x...
  r.add({.op = "if", .type_input = -1, .make = [](const kernel_node& n) -> fn {
    const std::string then_f = function_attr(n, "then_branch"), else_f = function_attr(n, "else_branch");
    return [then_f, else_f](context& ctx) {
      const bool c = truthy(ctx.input(0), ctx.node(), "the if predicate");
      std::vector<value> args;
      for (std::size_t i = 1; i < ctx.num_inputs(); ++i) args.push_back(ctx.input_value(i));
      const std::string& f = c ? then_f : else_f;
      auto out = ctx.call(f, std::move(args));
      if (out.size() != ctx.num_outputs())
        ctx.fail("branch '" + f + "' returned " + std::to_string(out.size()) + " values for " + std::to_string(ctx.num_outputs()) +
                 " outputs");
      for (std::size_t k = 0; k < out.size(); ++k) ctx.set_output(k, std::move(out[k]));
    };
  }});
  // call(x...) {f}: runs function f on x... (ONNX model-local functions)
  r.add({.op = "call", .type_input = -1, .make = [](const kernel_node& n) -> fn {
    const std::string f = function_attr(n, "f");
    return [f](context& ctx) {
      std::vector<value> args;
      for (std::size_t i = 0; i < ctx.num_inputs(); ++i) args.push_back(ctx.input_value(i));
      auto out = ctx.call(f, std::move(args));
      if (out.size() != ctx.num_outputs())
        ctx.fail("function '" + f + "' returned " + std::to_string(out.size()) + " values for " +
                 std::to_string(ctx.num_outputs()) + " outputs");
      for (std::size_t k = 0; k < out.size(); ++k) ctx.set_output(k, std::move(out[k]));
    };
  }});
  // make_tuple() with no inputs: the empty tuple, a none value (the anchor `inline-functions`
  // leaves for a call's control successors); tuples of values have no run-time form
  r.add({.op = "make_tuple", .type_input = -1, .make = [](const kernel_node& n) -> fn {
    if (n.num_inputs() != 0) n.fail("a tuple of values has no run-time form (only the empty tuple runs)");
    return [](context& ctx) { ctx.set_output(0, value{}); };
  }});
  // get_tuple of a port (TF `node:i` made explicit): the value itself. Run-time values have
  // no tuples, so a get_tuple of a real tuple (make_tuple) has no kernel here.
  r.add({.op = "get_tuple", .type_input = -1, .alias_input = 0, .make = [](const kernel_node&) -> fn {
    return [](context& ctx) { ctx.set_output(0, ctx.input_value(0)); };
  }});

  // ---- Scan (opset 9+: no batch axis; opset 8: batch axis and sequence_lens) --------
  r.add({.op = "Scan", .type_input = -1, .make = [](const kernel_node& n) -> fn {
    const std::string body = function_attr(n, "body");
    const std::size_t caps = num_captures(n);
    const auto num_scan_in = static_cast<std::size_t>(n.attr<std::int64_t>("num_scan_inputs"));
    const bool v8 = n.opset > 0 && n.opset < 9;
    const std::size_t first = v8 ? 1 : 0;  // Scan-8: sequence_lens first
    if (n.num_inputs() < first + num_scan_in + caps) n.fail("Scan has fewer inputs than num_scan_inputs");
    const std::size_t num_state = n.num_inputs() - first - num_scan_in - caps;
    if (num_state > n.num_outputs()) n.fail("Scan has fewer outputs than states");
    const std::size_t num_scan_out = n.num_outputs() - num_state;
    auto axes_of = [&](const char* a, std::size_t count) {
      auto v = n.attr<std::vector<std::int64_t>>(a, std::vector<std::int64_t>(count, 0));
      if (v.size() != count) n.fail(std::string("attribute '") + a + "' has the wrong length");
      return v;
    };
    const auto in_axes = axes_of(v8 ? "__none__" : "scan_input_axes", num_scan_in);
    const auto in_dirs = axes_of(v8 ? "directions" : "scan_input_directions", num_scan_in);
    const auto out_axes = axes_of(v8 ? "__none__" : "scan_output_axes", num_scan_out);
    const auto out_dirs = axes_of(v8 ? "__none__" : "scan_output_directions", num_scan_out);
    return [=](context& ctx) {
      const auto& nd = ctx.node();
      // Scan-8 has a leading batch axis: run each batch entry as its own scan
      std::vector<gpass::tensor> state_in, scan_in;
      for (std::size_t k = 0; k < num_state; ++k) state_in.push_back(ctx.input(first + k));
      for (std::size_t k = 0; k < num_scan_in; ++k) scan_in.push_back(ctx.input(first + num_state + k));
      std::vector<value> captured;
      for (std::size_t i = ctx.num_inputs() - caps; i < ctx.num_inputs(); ++i) captured.push_back(ctx.input_value(i));
      // Scan-8: every state and scan input leads with a batch axis of one size (the types may
      // not have said: a symbolic or unknown shape)
      std::int64_t batches = 1;
      if (v8) {
        if (num_state == 0 && num_scan_in == 0) ctx.fail("Scan-8 needs a state or a scan input: they carry the batch axis");
        batches = -1;
        auto batch_of = [&](const gpass::tensor& t, const char* what, std::size_t k, std::size_t min_rank) {
          if (t.rank() < min_rank)
            ctx.fail(std::string(what) + " " + std::to_string(k) + " has rank " + std::to_string(t.rank()) +
                     (min_rank > 1 ? "; Scan-8 needs batch and sequence axes" : "; Scan-8 needs a batch axis"));
          const std::int64_t size = t.sizes()[0];
          if (batches >= 0 && size != batches)
            ctx.fail(std::string(what) + " " + std::to_string(k) + " has batch size " + std::to_string(size) + ", an earlier input " +
                     std::to_string(batches));
          batches = size;
        };
        for (std::size_t k = 0; k < num_state; ++k) batch_of(state_in[k], "state", k, 1);
        for (std::size_t k = 0; k < num_scan_in; ++k) batch_of(scan_in[k], "scan input", k, 2);
      }
      std::vector<std::vector<gpass::tensor>> state_out(num_state), scan_out(num_scan_out);
      for (std::int64_t b = 0; b < batches; ++b) {
        ctx.check_iteration(b);  // (an empty input may have any batch size)
        std::vector<gpass::tensor> st, sc;
        for (auto& s : state_in) st.push_back(v8 ? take(s, 0, b) : s);
        for (auto& s : scan_in) sc.push_back(v8 ? take(s, 0, b) : s);
        std::vector<std::int64_t> axis(num_scan_in);
        std::int64_t len = -1;
        for (std::size_t k = 0; k < num_scan_in; ++k) {
          axis[k] = shape_rules::dim_axis(in_axes[k], static_cast<std::int64_t>(sc[k].rank()), nd);  // (a scalar has no scan axis)
          const std::int64_t l = sc[k].sizes()[axis[k]];
          if (len >= 0 && l != len) ctx.fail("scan inputs have different lengths");
          len = l;
        }
        if (v8 && ctx.has_input(0)) {
          auto lens = int_values(ctx.input(0), nd, "sequence_lens");
          if (static_cast<std::int64_t>(lens.size()) > b) len = std::min(len, lens[b]);
        }
        std::vector<std::vector<gpass::tensor>> outs(num_scan_out);
        for (std::int64_t i = 0; i < std::max<std::int64_t>(len, 0); ++i) {
          ctx.check_iteration(i);
          std::vector<value> args;
          for (auto& s : st) args.emplace_back(s);
          for (std::size_t k = 0; k < num_scan_in; ++k)
            args.emplace_back(take(sc[k], axis[k], in_dirs[k] ? len - 1 - i : i));
          for (const auto& c : captured) args.push_back(c);
          auto out = ctx.call(body, std::move(args));
          if (out.size() != num_state + num_scan_out) ctx.fail("scan body returned the wrong number of values");
          for (std::size_t k = 0; k < num_state; ++k) st[k] = out[k].tensor();
          for (std::size_t k = 0; k < num_scan_out; ++k) outs[k].push_back(out[num_state + k].tensor());
        }
        for (std::size_t k = 0; k < num_state; ++k) state_out[k].push_back(st[k]);
        for (std::size_t k = 0; k < num_scan_out; ++k) {
          auto& parts = outs[k];
          if (out_dirs[k]) std::reverse(parts.begin(), parts.end());
          const std::int64_t rank = parts.empty() ? 1 : static_cast<std::int64_t>(parts[0].rank()) + 1;
          const std::int64_t ax = normalize_axis(out_axes[k], rank, nd);
          if (v8) scan_out[k].push_back(stack(parts, ax, nd, dtype::f32, {}));
          else stack_output(ctx, num_state + k, parts, ax, dtype::f32, {});
          parts = {};
        }
      }
      for (std::size_t k = 0; k < num_state; ++k)
        ctx.set_output(k, v8 ? stack(state_out[k], 0, nd, dtype::f32, {}) : state_out[k][0]);
      if (v8)
        for (std::size_t k = 0; k < num_scan_out; ++k) stack_output(ctx, num_state + k, scan_out[k], 0, dtype::f32, {});
    };
  }});

  // ---- sequences -------------------------------------------------------------------
  r.add({.op = "SequenceEmpty", .type_input = -1, .make = [](const kernel_node&) -> fn {
    return [](context& ctx) { ctx.set_output(0, value::sequence_type{}); };
  }});
  r.add({.op = "SequenceConstruct", .type_input = -1, .make = [](const kernel_node&) -> fn {
    return [](context& ctx) {
      value::sequence_type s;
      for (std::size_t i = 0; i < ctx.num_inputs(); ++i) {
        s.push_back(ctx.input(i));
        if (s.back().element_type() != s.front().element_type()) ctx.fail("sequence elements have different element types");
      }
      ctx.set_output(0, std::move(s));
    };
  }});
  auto position = [](context& ctx, std::size_t input, std::int64_t size, bool insert) {
    std::int64_t p = insert ? size : size - 1;
    if (ctx.has_input(input)) p = scalar_int(ctx.input(input), ctx.node(), "position");
    const std::int64_t hi = insert ? size : size - 1;
    if (p < -size || p > hi) ctx.fail("position " + std::to_string(p) + " out of range for a sequence of " + std::to_string(size));
    return p < 0 ? p + size : p;
  };
  r.add({.op = "SequenceInsert", .type_input = -1, .make = [position](const kernel_node&) -> fn {
    return [position](context& ctx) {
      value::sequence_type s = ctx.input_value(0).sequence();
      const auto p = position(ctx, 2, static_cast<std::int64_t>(s.size()), true);
      s.insert(s.begin() + p, ctx.input(1));
      ctx.set_output(0, std::move(s));
    };
  }});
  r.add({.op = "SequenceErase", .type_input = -1, .make = [position](const kernel_node&) -> fn {
    return [position](context& ctx) {
      value::sequence_type s = ctx.input_value(0).sequence();
      if (s.empty()) ctx.fail("cannot erase from an empty sequence");
      const auto p = position(ctx, 1, static_cast<std::int64_t>(s.size()), false);
      s.erase(s.begin() + p);
      ctx.set_output(0, std::move(s));
    };
  }});
  r.add({.op = "SequenceAt", .type_input = -1, .make = [position](const kernel_node&) -> fn {
    return [position](context& ctx) {
      const auto& s = ctx.input_value(0).sequence();
      if (!ctx.has_input(1)) ctx.fail("SequenceAt needs a position");
      const auto p = position(ctx, 1, static_cast<std::int64_t>(s.size()), false);
      ctx.set_output(0, s[static_cast<std::size_t>(p)]);
    };
  }});
  r.add({.op = "SequenceLength", .type_input = -1, .make = [](const kernel_node&) -> fn {
    return [](context& ctx) {
      ctx.set_output(0, gpass::tensor::scalar<std::int64_t>(static_cast<std::int64_t>(ctx.input_value(0).sequence().size())));
    };
  }});
  r.add({.op = "SplitToSequence", .type_input = -1, .make = [](const kernel_node& n) -> fn {
    const std::int64_t axis_attr = n.attr<std::int64_t>("axis", 0);
    const bool keepdims = n.attr<std::int64_t>("keepdims", 1) != 0;
    return [axis_attr, keepdims](context& ctx) {
      const auto& x = ctx.input(0);
      const auto& nd = ctx.node();
      if (x.rank() == 0) ctx.fail("input must have rank >= 1 (a scalar has no axis to split)");
      const auto axis = normalize_axis(axis_attr, static_cast<std::int64_t>(x.rank()), nd);
      const std::int64_t dim = x.sizes()[axis];
      std::vector<std::int64_t> lens;
      bool split_given = ctx.has_input(1);
      if (split_given) {
        const auto& sp = ctx.input(1);
        auto v = int_values(sp, nd, "split");
        if (sp.rank() == 0) {
          if (v[0] <= 0) ctx.fail("split must be positive");
          const std::int64_t parts = dim / v[0] + (dim % v[0] != 0 ? 1 : 0);
          check_scratch(ctx, static_cast<double>(parts) * sizeof(gpass::tensor), "a sequence of " + std::to_string(parts) + " parts");
          for (std::int64_t at = 0; at < dim; at += std::min(v[0], dim - at)) lens.push_back(std::min(v[0], dim - at));
        } else {
          lens = v;
          std::int64_t total = 0;
          for (auto l : lens) {
            if (l < 0) ctx.fail("split has a negative length " + std::to_string(l));
            total = l > dim - total ? dim + 1 : total + l;  // (past dim is wrong anyway; no overflow)
          }
          if (total != dim) ctx.fail("split lengths do not sum to the axis' size " + std::to_string(dim));
        }
      } else {
        // one part per index: a sequence of dim tensors (an empty input may have any dim)
        check_scratch(ctx, static_cast<double>(dim) * sizeof(gpass::tensor), "a sequence of " + std::to_string(dim) + " parts");
        lens.assign(static_cast<std::size_t>(dim), 1);
      }
      value::sequence_type out;
      std::int64_t at = 0;
      const auto& s = x.sizes();
      std::int64_t outer = 1, inner = 1;  // (products of an empty input's sizes may overflow: unused)
      if (x.size() > 0) {
        for (std::int64_t d = 0; d < axis; ++d) outer *= s[d];
        for (std::size_t d = static_cast<std::size_t>(axis) + 1; d < s.size(); ++d) inner *= s[d];
      }
      for (auto l : lens) {
        std::vector<std::int64_t> ps = s;
        ps[axis] = l;
        gpass::tensor p = make(x.element_type(), ps);
        if (p.size() > 0)  // (an empty part of an empty input: outer may be anything)
          for (std::int64_t o = 0; o < outer; ++o) copy_elements(x, (o * dim + at) * inner, p, o * l * inner, l * inner);
        if (!split_given && !keepdims) {
          ps.erase(ps.begin() + axis);
          p = p.element_type() == dtype::string ? take(p, axis, 0) : p.reshaped(ps);
        }
        out.push_back(std::move(p));
        at += l;
      }
      ctx.set_output(0, std::move(out));
    };
  }});
  r.add({.op = "ConcatFromSequence", .type_input = -1, .make = [](const kernel_node& n) -> fn {
    const std::int64_t axis_attr = n.attr<std::int64_t>("axis");
    const bool new_axis = n.attr<std::int64_t>("new_axis", 0) != 0;
    return [axis_attr, new_axis](context& ctx) {
      const auto& s = ctx.input_value(0).sequence();
      if (s.empty()) ctx.fail("cannot concatenate an empty sequence");
      const auto rank = static_cast<std::int64_t>(s[0].rank()) + (new_axis ? 1 : 0);
      // (without new_axis a scalar has no axis to concatenate along)
      const auto axis = new_axis ? normalize_axis(axis_attr, rank, ctx.node()) : shape_rules::dim_axis(axis_attr, rank, ctx.node());
      if (new_axis) stack_output(ctx, 0, s, axis, dtype::f32, {});
      else concat_output(ctx, 0, s, axis);
    };
  }});
  r.add({.op = "SequenceMap", .type_input = -1, .make = [](const kernel_node& n) -> fn {
    const std::string body = function_attr(n, "body");
    const std::size_t caps = num_captures(n);
    return [body, caps](context& ctx) {
      const std::size_t formal = ctx.num_inputs() - caps;
      const auto& s0 = ctx.input_value(0).sequence();
      const std::size_t len = s0.size();
      for (std::size_t i = 1; i < formal; ++i)
        if (ctx.input_value(i).is_sequence() && ctx.input_value(i).sequence().size() != len)
          ctx.fail("sequence inputs have different lengths");
      std::vector<value::sequence_type> outs(ctx.num_outputs());
      for (std::size_t j = 0; j < len; ++j) {
        ctx.check_iteration(static_cast<std::int64_t>(j));
        std::vector<value> args;
        for (std::size_t i = 0; i < formal; ++i) {
          const auto& v = ctx.input_value(i);
          args.emplace_back(v.is_sequence() ? value(v.sequence()[j]) : v);
        }
        for (std::size_t i = formal; i < ctx.num_inputs(); ++i) args.push_back(ctx.input_value(i));
        auto out = ctx.call(body, std::move(args));
        if (out.size() != outs.size()) ctx.fail("SequenceMap body returned the wrong number of values");
        for (std::size_t k = 0; k < out.size(); ++k) outs[k].push_back(out[k].tensor());
      }
      for (std::size_t k = 0; k < outs.size(); ++k) ctx.set_output(k, std::move(outs[k]));
    };
  }});

  // ---- optionals: an empty optional is a `none` value --------------------------------
  r.add({.op = "Optional", .type_input = -1, .make = [](const kernel_node&) -> fn {
    return [](context& ctx) { ctx.set_output(0, ctx.input_value(0)); };
  }});
  r.add({.op = "OptionalHasElement", .type_input = -1, .make = [](const kernel_node&) -> fn {
    return [](context& ctx) { ctx.set_output(0, gpass::tensor::scalar<bool>(!ctx.input_value(0).is_none())); };
  }});
  r.add({.op = "OptionalGetElement", .type_input = -1, .make = [](const kernel_node&) -> fn {
    return [](context& ctx) {
      if (ctx.input_value(0).is_none()) ctx.fail("the optional is empty");
      ctx.set_output(0, ctx.input_value(0));
    };
  }});
}

}  // namespace gpass::exec::cpu_detail
