// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file sequence.hpp
/// The CUDA kernels of ONNX sequences and optionals: a sequence is a list of device tensors
/// kept on the host (`basic_value<cuda_tensor>::sequence_type`), so SequenceEmpty,
/// SequenceConstruct, SequenceInsert, SequenceErase, SequenceAt, SequenceLength, Optional,
/// OptionalHasElement and OptionalGetElement move no data (a position is read back when it
/// is not a constant; SequenceLength's and OptionalHasElement's scalars are uploaded);
/// SplitToSequence and ConcatFromSequence copy with the data-movement kernels
/// (`cuda_array_detail::move`); SequenceMap runs its body function on the device once per
/// element; Scan (opset 8's batch axis and sequence_lens, opset 9+'s axes and directions)
/// slices its scan inputs on the device, runs its body once per step, and stacks the scan
/// outputs. Semantics and messages follow the Eigen CPU kernels
/// (`eigen_cpu/kernels/control.hpp`).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gpass/core/error.hpp>
#include <gpass/exec/cuda/kernels/array.hpp>
#include <gpass/exec/cuda/kernels/common.hpp>
#include <gpass/exec/cuda/kernels/control.hpp>
#include <gpass/exec/cuda/policy.hpp>
#include <gpass/exec/kernel.hpp>
#include <gpass/exec/shape_rules.hpp>

namespace gpass::exec {

namespace cuda_sequence {

using cuda_detail::context;
using cuda_detail::cvalue;
using cuda_detail::fn;
using cuda_detail::lazy_library;
using i64 = std::int64_t;
using sequence = cvalue::sequence_type;

/// A position into a sequence of `size` from input `input` (default: the end when
/// inserting, the last element otherwise), negative from the end.
inline i64 position(context& ctx, std::size_t input, i64 size, bool insert) {
  i64 p = insert ? size : size - 1;
  if (ctx.has_input(input)) {
    const auto v = cuda_detail::host_ints(ctx, input);
    if (v.size() != 1) ctx.fail("position must have one element, has " + std::to_string(v.size()));
    p = v[0];
  }
  const i64 hi = insert ? size : size - 1;
  if (p < -size || p > hi) ctx.fail("position " + std::to_string(p) + " out of range for a sequence of " + std::to_string(size));
  return p < 0 ? p + size : p;
}

/// A device scalar of `v` (`T` int64 or bool).
template <class T>
cuda_tensor device_scalar(context& ctx, T v, dtype t) {
  cuda_tensor r = ctx.policy().allocate_tensor(t, {}, ctx.stream());
  ctx.policy().copy_to_device(r.data(), &v, sizeof v, ctx.stream());
  return r;
}

/// `parts` concatenated along `axis` into a new tensor (the shapes checked as Concat does).
inline cuda_tensor concat(context& ctx, lazy_library& lib, const std::vector<cuda_tensor>& parts, i64 axis_attr) {
  std::vector<const cuda_tensor*> xs;
  for (const auto& p : parts) xs.push_back(&p);
  const auto [axis, out] = shape_rules::concat_shape(xs, axis_attr, ctx.node());
  const dtype t = parts[0].element_type();
  cuda_array_detail::require_movable(ctx, t);
  cuda_tensor y = ctx.policy().allocate_tensor(t, out, ctx.stream());
  if (y.size() == 0) return y;
  const auto ost = shape_rules::strides_of(out);
  const auto es = static_cast<i64>(size_of(t));
  i64 at = 0;
  for (const auto& x : parts) {
    auto* dst = static_cast<std::byte*>(y.data()) + at * ost[axis] * es;
    cuda_array_detail::move(ctx, lib, t, dst, x.data(), x.sizes(), shape_rules::strides_of(x.sizes()), ost, 0);
    at += x.sizes()[axis];
  }
  return y;
}

/// Element `i` along `axis` of `x`, without that axis (a device copy).
inline cuda_tensor take(context& ctx, lazy_library& lib, const cuda_tensor& x, std::size_t axis, i64 i) {
  const auto st = shape_rules::strides_of(x.sizes());
  std::vector<i64> sizes = x.sizes(), in_st = st;
  sizes.erase(sizes.begin() + static_cast<std::ptrdiff_t>(axis));
  in_st.erase(in_st.begin() + static_cast<std::ptrdiff_t>(axis));
  cuda_tensor y = ctx.policy().allocate_tensor(x.element_type(), sizes, ctx.stream());
  cuda_array_detail::move(ctx, lib, x.element_type(), y.data(), x.data(), sizes, in_st, shape_rules::strides_of(sizes), i * st[axis]);
  return y;
}

/// `parts` stacked along a new axis `axis` (empty: a tensor with 0 at `axis` of `empty_type`).
inline cuda_tensor stack(context& ctx, lazy_library& lib, const std::vector<cuda_tensor>& parts, i64 axis, dtype empty_type) {
  if (parts.empty()) {
    std::vector<i64> sizes{0};
    return ctx.policy().allocate_tensor(empty_type == dtype::undefined ? dtype::f32 : empty_type, sizes, ctx.stream());
  }
  std::vector<cuda_tensor> pieces;
  for (const auto& p : parts) {
    if (p.sizes() != parts[0].sizes() || p.element_type() != parts[0].element_type())
      ctx.fail("cannot stack " + std::string(to_string(p.element_type())) + shape::of(p.sizes()).to_string() + " with " +
               std::string(to_string(parts[0].element_type())) + shape::of(parts[0].sizes()).to_string());
    std::vector<i64> ps = p.sizes();
    ps.insert(ps.begin() + axis, 1);
    pieces.push_back(p.reshaped(ps));
  }
  return concat(ctx, lib, pieces, axis);
}

}  // namespace cuda_sequence

/// Registers the sequence and optional ops.
inline void register_cuda_sequence(kernel_registry<cuda>& r) {
  using namespace cuda_sequence;
  r.add({.op = "SequenceEmpty", .type_input = -1, .make = [](const kernel_node&) -> fn {
    return [](context& ctx) { ctx.set_output(0, sequence{}); };
  }});
  r.add({.op = "SequenceConstruct", .type_input = -1, .make = [](const kernel_node&) -> fn {
    return [](context& ctx) {
      sequence s;
      for (std::size_t i = 0; i < ctx.num_inputs(); ++i) {
        s.push_back(ctx.input(i));
        if (s.back().element_type() != s.front().element_type()) ctx.fail("sequence elements have different element types");
      }
      ctx.set_output(0, std::move(s));
    };
  }});
  r.add({.op = "SequenceInsert", .type_input = -1, .make = [](const kernel_node&) -> fn {
    return [](context& ctx) {
      sequence s = ctx.input_value(0).sequence();
      const i64 p = position(ctx, 2, static_cast<i64>(s.size()), true);
      s.insert(s.begin() + p, ctx.input(1));
      ctx.set_output(0, std::move(s));
    };
  }});
  r.add({.op = "SequenceErase", .type_input = -1, .make = [](const kernel_node&) -> fn {
    return [](context& ctx) {
      sequence s = ctx.input_value(0).sequence();
      if (s.empty()) ctx.fail("cannot erase from an empty sequence");
      const i64 p = position(ctx, 1, static_cast<i64>(s.size()), false);
      s.erase(s.begin() + p);
      ctx.set_output(0, std::move(s));
    };
  }});
  r.add({.op = "SequenceAt", .type_input = -1, .make = [](const kernel_node&) -> fn {
    return [](context& ctx) {
      const auto& s = ctx.input_value(0).sequence();
      if (!ctx.has_input(1)) ctx.fail("SequenceAt needs a position");
      const i64 p = position(ctx, 1, static_cast<i64>(s.size()), false);
      ctx.set_output(0, s[static_cast<std::size_t>(p)]);
    };
  }});
  r.add({.op = "SequenceLength", .type_input = -1, .make = [](const kernel_node&) -> fn {
    return [](context& ctx) {
      ctx.set_output(0, device_scalar<std::int64_t>(ctx, static_cast<std::int64_t>(ctx.input_value(0).sequence().size()), dtype::int64));
    };
  }});
  r.add({.op = "SplitToSequence", .type_input = -1, .make = [](const kernel_node& n) -> fn {
    const i64 axis_attr = n.attr<i64>("axis", 0);
    const bool keepdims = n.attr<i64>("keepdims", 1) != 0;
    auto lib = std::make_shared<lazy_library>();
    return [axis_attr, keepdims, lib](context& ctx) {
      const cuda_tensor& x = ctx.input(0);
      cuda_array_detail::require_movable(ctx, x.element_type());
      if (x.rank() == 0) ctx.fail("input must have rank >= 1 (a scalar has no axis to split)");
      const auto axis = static_cast<std::size_t>(shape_rules::normalize_axis(axis_attr, static_cast<i64>(x.rank()), ctx.node()));
      const i64 dim = x.sizes()[axis];
      std::vector<i64> lens;
      const bool split_given = ctx.has_input(1);
      if (split_given) {
        const auto v = cuda_detail::host_ints(ctx, 1);
        if (ctx.input(1).rank() == 0) {
          if (v[0] <= 0) ctx.fail("split must be positive");
          for (i64 at = 0; at < dim; at += v[0]) lens.push_back(std::min(v[0], dim - at));
        } else {
          lens = v;
          i64 total = 0;
          for (i64 l : lens) {
            if (l < 0) ctx.fail("split lengths must be non-negative");
            total += l;
          }
          if (total != dim) ctx.fail("split lengths sum to " + std::to_string(total) + ", axis has " + std::to_string(dim));
        }
      } else {
        lens.assign(static_cast<std::size_t>(dim), 1);
      }
      const auto st = shape_rules::strides_of(x.sizes());
      sequence out;
      i64 at = 0;
      for (i64 l : lens) {
        std::vector<i64> ps = x.sizes();
        ps[axis] = l;
        cuda_tensor p = ctx.policy().allocate_tensor(x.element_type(), ps, ctx.stream());
        cuda_array_detail::move(ctx, *lib, x.element_type(), p.data(), x.data(), ps, st, shape_rules::strides_of(ps), at * st[axis]);
        if (!split_given && !keepdims) {
          ps.erase(ps.begin() + static_cast<std::ptrdiff_t>(axis));
          p = p.reshaped(ps);
        }
        out.push_back(std::move(p));
        at += l;
      }
      ctx.set_output(0, std::move(out));
    };
  }});
  r.add({.op = "ConcatFromSequence", .type_input = -1, .make = [](const kernel_node& n) -> fn {
    if (!n.has_attr("axis")) n.fail("missing attribute 'axis'");
    const i64 axis_attr = n.attr<i64>("axis");
    const bool new_axis = n.attr<i64>("new_axis", 0) != 0;
    auto lib = std::make_shared<lazy_library>();
    return [axis_attr, new_axis, lib](context& ctx) {
      const auto& s = ctx.input_value(0).sequence();
      if (s.empty()) ctx.fail("cannot concatenate an empty sequence");
      if (!new_axis) {
        ctx.set_output(0, concat(ctx, *lib, s, axis_attr));
        return;
      }
      // stacking: each element gets a dimension of 1 at the new axis, then they are concatenated
      const i64 rank = static_cast<i64>(s[0].rank()) + 1;
      const auto axis = static_cast<std::size_t>(shape_rules::normalize_axis(axis_attr, rank, ctx.node()));
      std::vector<cuda_tensor> parts;
      for (const auto& t : s) {
        if (t.sizes() != s[0].sizes()) ctx.fail("cannot stack tensors of different shapes");
        std::vector<i64> ps = t.sizes();
        ps.insert(ps.begin() + static_cast<std::ptrdiff_t>(axis), 1);
        parts.push_back(t.reshaped(ps));
      }
      ctx.set_output(0, concat(ctx, *lib, parts, static_cast<i64>(axis)));
    };
  }});
  r.add({.op = "SequenceMap", .type_input = -1, .make = [](const kernel_node& n) -> fn {
    const std::string body = cuda_detail::function_attr(n, "body");
    const std::size_t caps = static_cast<std::size_t>(n.attr<i64>("_captures", 0));
    return [body, caps](context& ctx) {
      if (ctx.num_inputs() < caps + 1) ctx.fail("SequenceMap needs a sequence input");
      const std::size_t formal = ctx.num_inputs() - caps;
      const auto& s0 = ctx.input_value(0).sequence();
      const std::size_t len = s0.size();
      for (std::size_t i = 1; i < formal; ++i)
        if (ctx.input_value(i).is_sequence() && ctx.input_value(i).sequence().size() != len)
          ctx.fail("sequence inputs have different lengths");
      std::vector<sequence> outs(ctx.num_outputs());
      for (std::size_t j = 0; j < len; ++j) {
        std::vector<cvalue> args;
        for (std::size_t i = 0; i < formal; ++i) {
          const auto& v = ctx.input_value(i);
          args.emplace_back(v.is_sequence() ? cvalue(v.sequence()[j]) : v);
        }
        for (std::size_t i = formal; i < ctx.num_inputs(); ++i) args.push_back(ctx.input_value(i));
        auto out = ctx.call(body, std::move(args));
        if (out.size() != outs.size()) ctx.fail("SequenceMap body returned the wrong number of values");
        for (std::size_t k = 0; k < out.size(); ++k) outs[k].push_back(out[k].tensor());
      }
      for (std::size_t k = 0; k < outs.size(); ++k) ctx.set_output(k, std::move(outs[k]));
    };
  }});
  // Scan (opset 9+: no batch axis; opset 8: a batch axis and sequence_lens)
  r.add({.op = "Scan", .type_input = -1, .make = [](const kernel_node& n) -> fn {
    const std::string body = cuda_detail::function_attr(n, "body");
    const auto caps = static_cast<std::size_t>(n.attr<i64>("_captures", 0));
    const auto num_scan_in = static_cast<std::size_t>(n.attr<i64>("num_scan_inputs"));
    const bool v8 = n.opset > 0 && n.opset < 9;
    const std::size_t first = v8 ? 1 : 0;  // Scan-8: sequence_lens first
    if (n.num_inputs() < first + num_scan_in + caps) n.fail("Scan has fewer inputs than num_scan_inputs");
    const std::size_t num_state = n.num_inputs() - first - num_scan_in - caps;
    if (num_state > n.num_outputs()) n.fail("Scan has fewer outputs than states");
    const std::size_t num_scan_out = n.num_outputs() - num_state;
    auto axes_of = [&](const char* a, std::size_t count) {
      auto v = n.attr<std::vector<i64>>(a, std::vector<i64>(count, 0));
      if (v.size() != count) n.fail(std::string("attribute '") + a + "' has the wrong length");
      return v;
    };
    const auto in_axes = axes_of(v8 ? "__none__" : "scan_input_axes", num_scan_in);
    const auto in_dirs = axes_of(v8 ? "directions" : "scan_input_directions", num_scan_in);
    const auto out_axes = axes_of(v8 ? "__none__" : "scan_output_axes", num_scan_out);
    const auto out_dirs = axes_of(v8 ? "__none__" : "scan_output_directions", num_scan_out);
    std::vector<dtype> out_types;
    for (std::size_t k = num_state; k < n.num_outputs(); ++k)
      out_types.push_back(k < n.output_types.size() && n.output_types[k].is_tensor() ? n.output_types[k].tensor().element : dtype::undefined);
    auto lib = std::make_shared<lazy_library>();
    return [=](context& ctx) {
      const auto& nd = ctx.node();
      std::vector<cuda_tensor> state_in, scan_in;
      for (std::size_t k = 0; k < num_state; ++k) state_in.push_back(ctx.input(first + k));
      for (std::size_t k = 0; k < num_scan_in; ++k) scan_in.push_back(ctx.input(first + num_state + k));
      std::vector<cvalue> captured;
      for (std::size_t i = ctx.num_inputs() - caps; i < ctx.num_inputs(); ++i) captured.push_back(ctx.input_value(i));
      if (v8)
        for (const auto* v : {&state_in, &scan_in})
          for (const auto& t : *v)
            if (t.rank() == 0) ctx.fail("Scan-8 inputs need a batch axis");
      const i64 batches = v8 ? (num_state ? state_in[0].sizes()[0] : scan_in.empty() ? 0 : scan_in[0].sizes()[0]) : 1;
      std::vector<i64> lens8;
      if (v8 && ctx.has_input(0)) lens8 = cuda_detail::host_ints(ctx, 0);
      std::vector<std::vector<cuda_tensor>> state_out(num_state), scan_out(num_scan_out);
      for (i64 b = 0; b < batches; ++b) {
        std::vector<cuda_tensor> st, sc;
        for (auto& t : state_in) st.push_back(v8 ? take(ctx, *lib, t, 0, b) : t);
        for (auto& t : scan_in) sc.push_back(v8 ? take(ctx, *lib, t, 0, b) : t);
        std::vector<std::size_t> axis(num_scan_in);
        i64 len = -1;
        for (std::size_t k = 0; k < num_scan_in; ++k) {
          if (sc[k].rank() == 0) ctx.fail("scan input " + std::to_string(k) + " is a scalar");
          axis[k] = static_cast<std::size_t>(shape_rules::normalize_axis(in_axes[k], static_cast<i64>(sc[k].rank()), nd));
          const i64 l = sc[k].sizes()[axis[k]];
          if (len >= 0 && l != len) ctx.fail("scan inputs have different lengths");
          len = l;
        }
        if (static_cast<i64>(lens8.size()) > b) len = std::min(len, lens8[static_cast<std::size_t>(b)]);
        std::vector<std::vector<cuda_tensor>> outs(num_scan_out);
        for (i64 i = 0; i < std::max<i64>(len, 0); ++i) {
          ctx.check_iteration(i);
          std::vector<cvalue> args;
          for (auto& t : st) args.emplace_back(t);
          for (std::size_t k = 0; k < num_scan_in; ++k) args.emplace_back(take(ctx, *lib, sc[k], axis[k], in_dirs[k] ? len - 1 - i : i));
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
          const i64 rank = parts.empty() ? 1 : static_cast<i64>(parts[0].rank()) + 1;
          const i64 ax = shape_rules::normalize_axis(out_axes[k], rank, nd);
          scan_out[k].push_back(stack(ctx, *lib, parts, ax, out_types[k]));
        }
      }
      for (std::size_t k = 0; k < num_state; ++k)
        ctx.set_output(k, v8 ? stack(ctx, *lib, state_out[k], 0, dtype::f32) : state_out[k][0]);
      for (std::size_t k = 0; k < num_scan_out; ++k)
        ctx.set_output(num_state + k, v8 ? stack(ctx, *lib, scan_out[k], 0, out_types[k]) : scan_out[k][0]);
    };
  }});
  // optionals: an empty optional is a `none` value
  r.add({.op = "Optional", .type_input = -1, .make = [](const kernel_node&) -> fn {
    return [](context& ctx) { ctx.set_output(0, ctx.input_value(0)); };
  }});
  r.add({.op = "OptionalHasElement", .type_input = -1, .make = [](const kernel_node&) -> fn {
    return [](context& ctx) { ctx.set_output(0, device_scalar<bool>(ctx, !ctx.input_value(0).is_none(), dtype::bool_)); };
  }});
  r.add({.op = "OptionalGetElement", .type_input = -1, .make = [](const kernel_node&) -> fn {
    return [](context& ctx) {
      if (ctx.input_value(0).is_none()) ctx.fail("the optional is empty");
      ctx.set_output(0, ctx.input_value(0));
    };
  }});
}

}  // namespace gpass::exec
