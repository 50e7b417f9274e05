// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file tf_array.hpp
/// Eigen CPU kernels of TensorFlow graph, shape and data-movement ops (domain "tf"), on the
/// engines of the ONNX array family (strided copies, concat, pad, top-k).
///
/// Const Placeholder PlaceholderWithDefault Identity IdentityN StopGradient Snapshot
/// PreventGradient CheckNumerics EnsureShape NoOp Assert Shape ShapeN Size Rank Reshape
/// ExpandDims Squeeze Transpose ConjugateTranspose Concat ConcatV2 Pack Unpack Split SplitV
/// Slice StridedSlice Fill ZerosLike OnesLike Range Tile GatherV2 Gather Where (one input)
/// InvertPermutation TopKV2 TopK BroadcastTo Pad PadV2 MirrorPad (REFLECT) ReverseV2 OneHot.
///
/// TF semantics: axes, shapes, begins and sizes arrive as int32/int64 input tensors;
/// StridedSlice implements the five masks as TensorFlow's documentation describes them.
/// Private (`gpass::exec::cpu_detail`).

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <type_traits>
#include <vector>

#include <gpass/exec/eigen_cpu/kernels/array.hpp>
#include <gpass/exec/eigen_cpu/kernels/tf_common.hpp>

namespace gpass::exec::cpu_detail::tf_detail {

// ---- graph plumbing ---------------------------------------------------------------------

inline void register_tf_graph(registry& r) {
  r.add({.domain = domain, .op = "Const", .type_input = -1, .make = [](const kernel_node& n) -> fn {
           const gpass::tensor value = n.attr<gpass::tensor>("value");
           const dtype t = type_attr(n, "dtype", value.element_type());
           if (t != value.element_type())
             n.fail("value has element type " + std::string(to_string(value.element_type())) + ", dtype is " + std::string(to_string(t)));
           return [value](context& ctx) { ctx.set_output(0, value); };
         }});
  r.add({.domain = domain, .op = "Placeholder", .type_input = -1, .make = [](const kernel_node& n) -> fn {
           return [name = n.name](context& ctx) {
             ctx.fail("placeholder '" + name + "' was not fed (feed it, or rewrite it into a graph input `arg`)");
           };
         }});
  auto forward = [](const kernel_node&) -> fn { return [](context& ctx) { ctx.set_output(0, ctx.input_value(0)); }; };
  for (const char* op : {"PlaceholderWithDefault", "Identity", "StopGradient", "Snapshot", "PreventGradient"})
    r.add({.domain = domain, .op = op, .alias_input = 0, .make = forward});
  r.add({.domain = domain, .op = "CheckNumerics", .alias_input = 0, .make = [](const kernel_node& n) -> fn {
           const std::string message = n.attr<std::string>("message", "");
           return [message](context& ctx) {
             const gpass::tensor& x = ctx.input(0);
             dispatch<type_list<float, double, Eigen::half, Eigen::bfloat16>>(x.element_type(), ctx.node(), [&]<class T>() {
               const T* p = x.data<T>();
               for (i64 i = 0; i < x.size(); ++i) {
                 const auto v = static_cast<compute_t<T>>(p[i]);  // (a double past FLT_MAX is finite)
                 if (!std::isfinite(v)) ctx.fail(message + " : Tensor had " + (std::isnan(v) ? "NaN" : "Inf") + " values");
               }
             });
             ctx.set_output(0, x);
           };
         }});
  r.add({.domain = domain, .op = "EnsureShape", .alias_input = 0, .make = [](const kernel_node& n) -> fn {
           const gpass::shape want = n.attr<gpass::shape>("shape", gpass::shape{});
           const bool check = n.has_attr("shape");
           return [want, check](context& ctx) {
             const gpass::tensor& x = ctx.input(0);
             if (check) tf_rules::check_ensure_shape(x.sizes(), want, ctx.node());
             ctx.set_output(0, x);
           };
         }});
  // IdentityN: output 0 shares input 0's buffer (the plan knows through alias_input); the
  // other outputs are copies, since a plan may reuse the memory of inputs it did not see aliased
  r.add({.domain = domain, .op = "IdentityN", .alias_input = 0, .make = [](const kernel_node&) -> fn {
           return [](context& ctx) {
             if (ctx.num_outputs() > ctx.num_inputs()) ctx.fail("more outputs than inputs");
             for (std::size_t i = 0; i < ctx.num_outputs(); ++i) {
               if (i == 0 || !ctx.input_value(i).is_tensor()) {
                 ctx.set_output(i, ctx.input_value(i));
                 continue;
               }
               const gpass::tensor& x = ctx.input(i);
               array_detail::copy_view(ctx, x, x.sizes(), x.sizes(), strides_of(x.sizes()), 0, i);
             }
           };
         }});
  r.add({.domain = domain, .op = "NoOp", .type_input = -1, .make = [](const kernel_node&) -> fn { return [](context&) {}; }});
  r.add({.domain = domain, .op = "Assert", .make = [](const kernel_node&) -> fn {
           return [](context& ctx) {
             const gpass::tensor& c = ctx.input(0);
             if (c.element_type() != dtype::bool_ || c.size() != 1) ctx.fail("condition must be a bool scalar");
             if (!c.data<bool>()[0]) {
               std::string what;
               for (std::size_t i = 1; i < ctx.num_inputs(); ++i)
                 if (ctx.has_input(i) && ctx.input(i).element_type() == dtype::string && ctx.input(i).size() > 0)
                   what += (what.empty() ? "" : " ") + ctx.input(i).data<std::string>()[0];
               ctx.fail("assertion failed" + (what.empty() ? std::string() : ": " + what));
             }
           };
         }});
}

// ---- shapes -----------------------------------------------------------------------------

inline void register_tf_shape(registry& r) {
  using namespace array_detail;
  r.add({.domain = domain, .op = "Shape", .make = [](const kernel_node& n) -> fn {
           const dtype t = type_attr(n, "out_type", dtype::int32);
           return [t](context& ctx) {
             const auto& s = ctx.input(0).sizes();
             write_ints(ctx, 0, t, s, {static_cast<i64>(s.size())});
           };
         }});
  r.add({.domain = domain, .op = "ShapeN", .make = [](const kernel_node& n) -> fn {
           const dtype t = type_attr(n, "out_type", dtype::int32);
           return [t](context& ctx) {
             if (ctx.num_outputs() > ctx.num_inputs()) ctx.fail("more outputs than inputs");
             for (std::size_t i = 0; i < ctx.num_outputs(); ++i) {
               const auto& s = ctx.input(i).sizes();
               write_ints(ctx, i, t, s, {static_cast<i64>(s.size())});
             }
           };
         }});
  r.add({.domain = domain, .op = "Size", .make = [](const kernel_node& n) -> fn {
           const dtype t = type_attr(n, "out_type", dtype::int32);
           return [t](context& ctx) { write_ints(ctx, 0, t, {ctx.input(0).size()}, {}); };
         }});
  r.add({.domain = domain, .op = "Rank", .make = [](const kernel_node&) -> fn {
           return [](context& ctx) { write_ints(ctx, 0, dtype::int32, {static_cast<i64>(ctx.input(0).rank())}, {}); };
         }});
  r.add({.domain = domain, .op = "Reshape", .alias_input = 0, .make = [](const kernel_node&) -> fn {
           return [](context& ctx) {
             const gpass::tensor& x = ctx.input(0);
             ctx.set_output(0, x.reshaped(reshape_sizes(x.sizes(), vector_ints(ctx.input(1), ctx.node(), "shape"), true, ctx.node())));
           };
         }});
  r.add({.domain = domain, .op = "ExpandDims", .alias_input = 0, .make = [](const kernel_node&) -> fn {
           return [](context& ctx) {
             const gpass::tensor& x = ctx.input(0);
             const i64 rank = static_cast<i64>(x.rank());
             const i64 a = tf_axis(scalar_int(ctx.input(1), ctx.node(), "dim"), rank + 1, ctx.node(), "dim");
             std::vector<i64> s = x.sizes();
             s.insert(s.begin() + a, 1);
             ctx.set_output(0, x.reshaped(std::move(s)));
           };
         }});
  r.add({.domain = domain, .op = "Squeeze", .alias_input = 0, .make = [](const kernel_node& n) -> fn {
           std::vector<i64> dims = int_list(n, "squeeze_dims");
           if (dims.empty()) dims = int_list(n, "axis");
           return [dims](context& ctx) {
             const gpass::tensor& x = ctx.input(0);
             ctx.set_output(0, x.reshaped(tf_rules::squeeze_sizes(x.sizes(), dims, ctx.node())));
           };
         }});
}

// ---- data movement ----------------------------------------------------------------------

/// The permutation input of Transpose: a permutation of [0, rank).
inline std::vector<i64> permutation(const gpass::tensor& p, std::size_t rank, const kernel_node& n) {
  const auto perm = vector_ints(p, n, "perm");
  if (perm.size() != rank) n.fail("perm has " + std::to_string(perm.size()) + " entries for rank " + std::to_string(rank));
  std::vector<char> seen(rank, 0);
  for (i64 a : perm) {
    if (a < 0 || a >= static_cast<i64>(rank) || seen[static_cast<std::size_t>(a)])
      n.fail("perm is not a permutation of [0, " + std::to_string(rank) + ")");
    seen[static_cast<std::size_t>(a)] = 1;
  }
  return perm;
}

/// Output `out` = the part [start, start + len) of `x` along `axis` (a strided copy).
inline void copy_part(context& ctx, const gpass::tensor& x, std::size_t axis, i64 start, i64 len, std::size_t out,
                      std::vector<i64> out_sizes) {
  const auto st = strides_of(x.sizes());
  std::vector<i64> s = x.sizes();
  s[axis] = len;
  array_detail::copy_view(ctx, x, std::move(out_sizes), s, st, len > 0 ? start * st[axis] : 0, out);
}

/// Outputs = `x` split along `axis` into parts of `sizes`.
inline void split_parts(context& ctx, const gpass::tensor& x, std::size_t axis, const std::vector<i64>& sizes) {
  if (sizes.size() != ctx.num_outputs())
    ctx.fail(std::to_string(sizes.size()) + " parts for " + std::to_string(ctx.num_outputs()) + " outputs");
  i64 start = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    std::vector<i64> s = x.sizes();
    s[axis] = sizes[i];
    copy_part(ctx, x, axis, start, sizes[i], i, s);
    start += sizes[i];
  }
}

inline void register_tf_move(registry& r) {
  using namespace array_detail;
  auto transpose = [](const kernel_node&) -> fn {
    return [](context& ctx) {
      const gpass::tensor& x = ctx.input(0);
      const auto p = permutation(ctx.input(1), x.rank(), ctx.node());
      const auto st = strides_of(x.sizes());
      std::vector<i64> os, ost;
      for (i64 a : p) {
        os.push_back(x.sizes()[static_cast<std::size_t>(a)]);
        ost.push_back(st[static_cast<std::size_t>(a)]);
      }
      copy_view(ctx, x, os, os, ost, 0);
    };
  };
  r.add({.domain = domain, .op = "Transpose", .make = transpose});
  r.add({.domain = domain, .op = "ConjugateTranspose", .make = transpose});
  r.add({.domain = domain, .op = "ConcatV2", .make = [](const kernel_node&) -> fn {
           return [](context& ctx) {
             const std::size_t k = ctx.num_inputs();
             if (k < 2) ctx.fail("needs values and an axis");
             std::vector<const gpass::tensor*> xs;
             for (std::size_t i = 0; i + 1 < k; ++i) xs.push_back(&ctx.input(i));
             const i64 rank = static_cast<i64>(xs[0]->rank());
             concat_into(ctx, xs, tf_axis(scalar_int(ctx.input(k - 1), ctx.node(), "axis"), rank, ctx.node()));
           };
         }});
  r.add({.domain = domain, .op = "Concat", .type_input = 1, .make = [](const kernel_node&) -> fn {
           return [](context& ctx) {
             const std::size_t k = ctx.num_inputs();
             if (k < 2) ctx.fail("needs an axis and values");
             std::vector<const gpass::tensor*> xs;
             for (std::size_t i = 1; i < k; ++i) xs.push_back(&ctx.input(i));
             const i64 rank = static_cast<i64>(xs[0]->rank());
             concat_into(ctx, xs, tf_axis(scalar_int(ctx.input(0), ctx.node(), "concat_dim"), rank, ctx.node()));
           };
         }});
  r.add({.domain = domain, .op = "Pack", .make = [](const kernel_node& n) -> fn {
           const i64 axis_attr = n.attr<i64>("axis", 0);
           return [axis_attr](context& ctx) {
             if (ctx.num_inputs() == 0) ctx.fail("no values");
             const gpass::tensor& x0 = ctx.input(0);
             const i64 rank = static_cast<i64>(x0.rank());
             const i64 axis = tf_axis(axis_attr, rank + 1, ctx.node());
             std::vector<i64> s = x0.sizes();
             s.insert(s.begin() + axis, 1);
             std::vector<gpass::tensor> views;
             std::vector<const gpass::tensor*> xs;
             views.reserve(ctx.num_inputs());
             for (std::size_t i = 0; i < ctx.num_inputs(); ++i) {
               const gpass::tensor& x = ctx.input(i);
               if (x.sizes() != x0.sizes())
                 ctx.fail("values have different sizes " + x0.shape().to_string() + " and " + x.shape().to_string());
               views.push_back(x.reshaped(s));
             }
             for (const auto& v : views) xs.push_back(&v);
             concat_into(ctx, xs, axis);
           };
         }});
  r.add({.domain = domain, .op = "Unpack", .make = [](const kernel_node& n) -> fn {
           const i64 axis_attr = n.attr<i64>("axis", 0);
           const i64 num = n.attr<i64>("num", -1);
           return [axis_attr, num](context& ctx) {
             const gpass::tensor& x = ctx.input(0);
             const std::size_t axis = tf_rules::unpack_axis(x.sizes(), axis_attr, num, ctx.num_outputs(), ctx.node());
             const i64 dim = x.sizes()[axis];
             std::vector<i64> s = x.sizes();
             s.erase(s.begin() + static_cast<std::ptrdiff_t>(axis));
             for (i64 i = 0; i < dim; ++i) copy_part(ctx, x, axis, i, 1, static_cast<std::size_t>(i), s);
           };
         }});
  r.add({.domain = domain, .op = "Split", .type_input = 1, .make = [](const kernel_node& n) -> fn {
           const i64 num = n.attr<i64>("num_split", -1);
           return [num](context& ctx) {
             const gpass::tensor& x = ctx.input(1);
             const auto axis = static_cast<std::size_t>(
                 tf_axis(scalar_int(ctx.input(0), ctx.node(), "split_dim"), static_cast<i64>(x.rank()), ctx.node(), "split_dim"));
             split_parts(ctx, x, axis,
                         tf_rules::split_equal_sizes(x.sizes()[axis], axis, static_cast<i64>(ctx.num_outputs()), num, ctx.node()));
           };
         }});
  r.add({.domain = domain, .op = "SplitV", .make = [](const kernel_node&) -> fn {
           return [](context& ctx) {
             const gpass::tensor& x = ctx.input(0);
             auto sizes = vector_ints(ctx.input(1), ctx.node(), "size_splits");
             const auto axis = static_cast<std::size_t>(
                 tf_axis(scalar_int(ctx.input(2), ctx.node(), "split_dim"), static_cast<i64>(x.rank()), ctx.node(), "split_dim"));
             split_parts(ctx, x, axis, tf_rules::split_v_sizes(std::move(sizes), x.sizes()[axis], axis, ctx.node()));
           };
         }});
  r.add({.domain = domain, .op = "Tile", .make = [](const kernel_node&) -> fn {
           return [](context& ctx) {
             array_detail::tile_into(ctx, ctx.input(0), vector_ints(ctx.input(1), ctx.node(), "multiples"), "multiples");
           };
         }});
  r.add({.domain = domain, .op = "BroadcastTo", .make = [](const kernel_node&) -> fn {
           return [](context& ctx) {
             const gpass::tensor& x = ctx.input(0);
             const auto s = vector_ints(ctx.input(1), ctx.node(), "shape");
             for (i64 v : s)
               if (v < 0) ctx.fail("shape has a negative size " + std::to_string(v));
             if (s.size() < x.rank() || broadcast_sizes(x.sizes(), s, ctx.node()) != s)
               ctx.fail("cannot broadcast sizes " + x.shape().to_string() + " to " + shape::of(s).to_string());
             copy_view(ctx, x, s, s, broadcast_strides(x.sizes(), s), 0);
           };
         }});
  r.add({.domain = domain, .op = "ReverseV2", .make = [](const kernel_node&) -> fn {
           return [](context& ctx) {
             const gpass::tensor& x = ctx.input(0);
             const auto v = tf_rules::reverse_view(x.sizes(), vector_ints(ctx.input(1), ctx.node(), "axis"), ctx.node());
             copy_view(ctx, x, v.sizes, v.sizes, v.strides, v.offset);
           };
         }});
}

// ---- slicing ----------------------------------------------------------------------------

/// Slice: begin[i] in [0, dim], size[i] = -1 (to the end) or begin + size <= dim.
inline void slice(context& ctx) {
  const gpass::tensor& x = ctx.input(0);
  const auto v = tf_rules::slice_view(x.sizes(), vector_ints(ctx.input(1), ctx.node(), "begin"), vector_ints(ctx.input(2), ctx.node(), "size"),
                                      ctx.node());
  array_detail::copy_view(ctx, x, v.sizes, v.sizes, v.strides, v.offset);
}

inline void register_tf_slice(registry& r) {
  r.add({.domain = domain, .op = "Slice", .make = [](const kernel_node&) -> fn { return slice; }});
  r.add({.domain = domain, .op = "StridedSlice", .make = [](const kernel_node& n) -> fn {
           const i64 bm = n.attr<i64>("begin_mask", 0), em = n.attr<i64>("end_mask", 0), el = n.attr<i64>("ellipsis_mask", 0),
                     na = n.attr<i64>("new_axis_mask", 0), sm = n.attr<i64>("shrink_axis_mask", 0);
           return [=](context& ctx) {
             const gpass::tensor& x = ctx.input(0);
             const kernel_node& nd = ctx.node();
             const auto p = tf_rules::plan_strided_slice(x.sizes(), vector_ints(ctx.input(1), nd, "begin"), vector_ints(ctx.input(2), nd, "end"),
                                               vector_ints(ctx.input(3), nd, "strides"), bm, em, el, na, sm, nd);
             array_detail::copy_view(ctx, x, p.final_sizes, p.sizes, p.strides, p.offset);
           };
         }});
}

// ---- making tensors -----------------------------------------------------------------------

/// Output 0 = a tensor of `sizes` with every element `v[0]` (any element type).
inline void fill_with(context& ctx, const gpass::tensor& v, std::vector<i64> sizes) {
  gpass::tensor& y = ctx.allocate_output(0, v.element_type(), std::move(sizes));
  if (y.size() == 0) return;
  check_string_copies(ctx, {&v}, y.size(),
                      [&] { return static_cast<double>(y.size()) * static_cast<double>(v.data<std::string>()[0].size()); });
  array_detail::dispatch_move(v.element_type(), ctx.node(), [&]<class U>() {
    U* o = array_detail::elems<U>(y);
    std::fill(o, o + y.size(), array_detail::elems<U>(v)[0]);
  });
}

inline void register_tf_make(registry& r) {
  using namespace array_detail;
  r.add({.domain = domain, .op = "Fill", .type_input = 1, .make = [](const kernel_node&) -> fn {
           return [](context& ctx) {
             const auto dims = vector_ints(ctx.input(0), ctx.node(), "dims");
             const gpass::tensor& v = ctx.input(1);
             if (v.rank() != 0 && v.size() != 1) ctx.fail("value must be a scalar, got sizes " + v.shape().to_string());
             for (i64 d : dims)
               if (d < 0) ctx.fail("dims has a negative size " + std::to_string(d));
             fill_with(ctx, v, dims);
           };
         }});
  r.add({.domain = domain, .op = "ZerosLike", .make = [](const kernel_node&) -> fn {
           return [](context& ctx) {
             const gpass::tensor& x = ctx.input(0);
             ctx.allocate_output_zeroed(0, x.element_type(), x.sizes());
           };
         }});
  r.add({.domain = domain, .op = "OnesLike", .make = [](const kernel_node&) -> fn {
           return [](context& ctx) {
             const gpass::tensor& x = ctx.input(0);
             fill_with(ctx, scalar_of(x.element_type(), 1.0, ctx.node()), x.sizes());
           };
         }});
  r.add({.domain = domain, .op = "Range", .make = [](const kernel_node&) -> fn {
           return [](context& ctx) {
             const gpass::tensor &a = ctx.input(0), &l = ctx.input(1), &d = ctx.input(2);
             if (l.element_type() != a.element_type() || d.element_type() != a.element_type())
               ctx.fail("start, limit and delta must have the same element type");
             if (a.size() != 1 || l.size() != 1 || d.size() != 1 || a.rank() > 0 || l.rank() > 0 || d.rank() > 0)
               ctx.fail("start, limit and delta must be scalars");
             using L = type_list<float, double, std::int32_t, std::int64_t>;
             dispatch<L>(a.element_type(), ctx.node(), [&]<class T>() {
               const T start = a.data<T>()[0], limit = l.data<T>()[0], delta = d.data<T>()[0];
               tf_rules::check_range(start, limit, delta, ctx.node());
               i64 count;  // ceil((limit - start) / delta): the checks above make it non-negative
               if constexpr (std::is_integral_v<T>)
                 count = shape_rules::range_count(i64(start), i64(limit), i64(delta), ctx.node());
               else
                 count = shape_rules::range_count(double(start), double(limit), double(delta), ctx.node());
               gpass::tensor& y = ctx.allocate_output(0, a.element_type(), {count});
               T* o = y.data<T>();
               // i * delta (and a partial sum) may pass T's range (int32: start INT32_MIN, delta
               // INT32_MAX); each element lies in [start, limit), so the wrapped result is exact
               for (i64 i = 0; i < count; ++i) o[i] = add_w(start, mul_w(static_cast<T>(i), delta));
             });
           };
         }});
  r.add({.domain = domain, .op = "OneHot", .type_input = 2, .make = [](const kernel_node& n) -> fn {
           const i64 axis_attr = n.attr<i64>("axis", -1);
           return [axis_attr](context& ctx) {
             const gpass::tensor& ind = ctx.input(0);
             const i64 depth = scalar_int(ctx.input(1), ctx.node(), "depth");
             const gpass::tensor &on = ctx.input(2), &off = ctx.input(3);
             if (depth < 0) ctx.fail("depth must be non-negative, got " + std::to_string(depth));
             if (on.size() != 1 || off.size() != 1 || on.element_type() != off.element_type())
               ctx.fail("on_value and off_value must be scalars of one element type");
             const i64 rank = static_cast<i64>(ind.rank());
             const i64 axis = axis_attr == -1 ? rank : tf_axis(axis_attr, rank + 1, ctx.node());
             const auto idx = int_values(ind, ctx.node(), "indices");
             std::vector<i64> out = ind.sizes();
             out.insert(out.begin() + axis, depth);
             const i64 outer = array_detail::prod(ind.sizes(), 0, static_cast<std::size_t>(axis));
             const i64 inner = array_detail::prod(ind.sizes(), static_cast<std::size_t>(axis), ind.rank());
             gpass::tensor& y = ctx.allocate_output(0, off.element_type(), out);
             check_string_copies(ctx, {&off, &on}, y.size(), [&] {  // depth copies per index, one of them `on`
               i64 hits = 0;
               for (const i64 c : idx) hits += c >= 0 && c < depth;
               return static_cast<double>(hits) * static_cast<double>(on.data<std::string>()[0].size()) +
                      static_cast<double>(y.size() - hits) * static_cast<double>(off.data<std::string>()[0].size());
             });
             dispatch_move(on.element_type(), ctx.node(), [&]<class U>() {
               U* o = elems<U>(y);
               std::fill(o, o + y.size(), elems<U>(off)[0]);
               const U v = elems<U>(on)[0];
               for (i64 k = 0; k < outer; ++k)
                 for (i64 j = 0; j < inner; ++j) {
                   const i64 c = idx[static_cast<std::size_t>(k * inner + j)];
                   if (c >= 0 && c < depth) o[(k * depth + c) * inner + j] = v;
                 }
             });
           };
         }});
}

// ---- indexing, selection, padding ------------------------------------------------------------

/// GatherV2: out = params[:batch] + params[batch:axis] + indices[batch:] + params[axis+1:];
/// indices must be in [0, params.shape[axis]).
inline void gather(context& ctx, const gpass::tensor& x, const gpass::tensor& it, i64 axis_in, i64 batch_in) {
  using namespace array_detail;
  const i64 rank = static_cast<i64>(x.rank());
  if (rank == 0) ctx.fail("params must have rank >= 1");
  const i64 axis = tf_axis(axis_in, rank, ctx.node());
  const i64 irank = static_cast<i64>(it.rank());
  const i64 batch = batch_in < 0 ? batch_in + irank : batch_in;
  if (batch < 0 || batch > irank || batch > axis)
    ctx.fail("batch_dims " + std::to_string(batch_in) + " must be in [0, rank(indices)] and <= axis " + std::to_string(axis));
  for (i64 d = 0; d < batch; ++d)
    if (x.sizes()[static_cast<std::size_t>(d)] != it.sizes()[static_cast<std::size_t>(d)])
      ctx.fail("batch dimension " + std::to_string(d) + " of params and indices differ");
  const auto a = static_cast<std::size_t>(axis), b = static_cast<std::size_t>(batch);
  auto idx = int_values(it, ctx.node(), "indices");
  const i64 dim = x.sizes()[a];
  for (std::size_t i = 0; i < idx.size(); ++i)
    if (idx[i] < 0 || idx[i] >= dim)
      ctx.fail("indices[" + std::to_string(i) + "] = " + std::to_string(idx[i]) + " is not in [0, " + std::to_string(dim) + ")");
  std::vector<i64> out(x.sizes().begin(), x.sizes().begin() + static_cast<std::ptrdiff_t>(a));
  out.insert(out.end(), it.sizes().begin() + static_cast<std::ptrdiff_t>(b), it.sizes().end());
  out.insert(out.end(), x.sizes().begin() + static_cast<std::ptrdiff_t>(a) + 1, x.sizes().end());
  gpass::tensor& y = ctx.allocate_output(0, x.element_type(), out);
  if (y.size() == 0) return;
  const i64 nb = prod(x.sizes(), 0, b);                 // batches
  const i64 outer = prod(x.sizes(), b, a);              // per batch, before the axis
  const i64 inner = prod(x.sizes(), a + 1, x.rank());   // after the axis
  const i64 ni = prod(it.sizes(), b, it.rank());        // indices per batch
  check_string_copies(ctx, {&x}, y.size(), [&] {  // indices may repeat
    const std::string* s = x.data<std::string>();
    double n = 0;
    for (i64 w = 0; w < nb * outer * ni; ++w) {
      const i64 j = w % ni, k = (w / ni) % outer, bi = w / (ni * outer);
      const std::string* src = s + ((bi * outer + k) * dim + idx[static_cast<std::size_t>(bi * ni + j)]) * inner;
      for (i64 t = 0; t < inner; ++t) n += static_cast<double>(src[t].size());
    }
    return n;
  });
  dispatch_move(x.element_type(), ctx.node(), [&]<class U>() {
    const U* s = elems<U>(x);
    U* o = elems<U>(y);
    ctx.policy().parallel_for(nb * outer * ni, static_cast<double>(inner) + 2.0, [&](i64 lo, i64 hi) {
      for (i64 w = lo; w < hi; ++w) {
        const i64 j = w % ni, k = (w / ni) % outer, bi = w / (ni * outer);
        const U* src = s + ((bi * outer + k) * dim + idx[static_cast<std::size_t>(bi * ni + j)]) * inner;
        copy_n(src, inner, o + w * inner);
      }
    });
  });
}

inline void register_tf_index(registry& r) {
  using namespace array_detail;
  r.add({.domain = domain, .op = "GatherV2", .make = [](const kernel_node& n) -> fn {
           const i64 batch = n.attr<i64>("batch_dims", 0);
           return [batch](context& ctx) {
             gather(ctx, ctx.input(0), ctx.input(1), scalar_int(ctx.input(2), ctx.node(), "axis"), batch);
           };
         }});
  r.add({.domain = domain, .op = "Gather", .make = [](const kernel_node&) -> fn {
           return [](context& ctx) { gather(ctx, ctx.input(0), ctx.input(1), 0, 0); };
         }});
  auto topk = [](bool v2) {
    return [v2](const kernel_node& n) -> fn {
      const i64 k_attr = v2 ? 0 : n.attr<i64>("k");
      const dtype it = type_attr(n, "index_type", dtype::int32);
      if (it != dtype::int32 && it != dtype::int64) n.fail("index_type must be int32 or int64");
      return [v2, k_attr, it](context& ctx) {
        const gpass::tensor& x = ctx.input(0);
        if (x.rank() < 1) ctx.fail("input must have rank >= 1");
        const i64 k = v2 ? scalar_int(ctx.input(1), ctx.node(), "k") : k_attr;
        if (k < 0) ctx.fail("k must be non-negative, got " + std::to_string(k));
        if (k > x.sizes().back()) ctx.fail("input must have at least k = " + std::to_string(k) + " columns, got " + x.shape().to_string());
        topk_into(ctx, x, static_cast<i64>(x.rank()) - 1, k, true, it);
      };
    };
  };
  // Where (one input): the coordinates [n, rank] (int64, row-major order) of the true / non-zero elements
  r.add({.domain = domain, .op = "Where", .make = [](const kernel_node&) -> fn {
           return [](context& ctx) {
             const gpass::tensor& x = ctx.input(0);
             if (ctx.num_inputs() > 1) ctx.fail("Where with x and y is SelectV2; this Where takes one input");
             nonzero_into(ctx, x, true);
           };
         }});
  r.add({.domain = domain, .op = "InvertPermutation", .make = [](const kernel_node&) -> fn {
           return [](context& ctx) {
             const gpass::tensor& x = ctx.input(0);
             const auto inv = tf_rules::invert_permutation(vector_ints(x, ctx.node(), "x"), ctx.node());
             write_ints(ctx, 0, x.element_type(), inv, {static_cast<i64>(inv.size())});
           };
         }});
  r.add({.domain = domain, .op = "TopKV2", .make = topk(true)});
  r.add({.domain = domain, .op = "TopK", .make = topk(false)});
  auto pad = [](int variant) {  // 0 Pad, 1 PadV2, 2 MirrorPad
    return [variant](const kernel_node& n) -> fn {
      int m = 0;
      if (variant == 2) {
        const std::string mode = n.attr<std::string>("mode");
        if (mode != "REFLECT") n.fail("MirrorPad mode '" + mode + "' is not supported (only REFLECT)");
        m = 1;
      }
      return [variant, m](context& ctx) {
        const gpass::tensor& x = ctx.input(0);
        const gpass::tensor& p = ctx.input(1);
        const auto [begin, end] = tf_rules::paddings(x.sizes(), p.sizes(), int_values(p, ctx.node(), "paddings"), m == 1, ctx.node());
        gpass::tensor c;
        if (variant == 1) {
          c = ctx.input(2);
          if (c.element_type() != x.element_type() || c.size() != 1) ctx.fail("constant_values must be a scalar of the input type");
        } else if (x.element_type() == dtype::complex64 || x.element_type() == dtype::complex128) {
          c = gpass::tensor(x.element_type(), {});  // (zero-filled)
        } else if (x.element_type() != dtype::string) {
          c = scalar_of(x.element_type(), 0.0, ctx.node());
        }
        pad_into(ctx, x, begin, end, m, c);
      };
    };
  };
  // SpaceToBatchND (to_batch) / BatchToSpaceND: blocks of the M spatial dims after the batch
  // move into the batch dim (output batch index = block offset * N + n, block offsets
  // row-major), zero-padded first; the inverse interleaves them back and crops.
  auto space_batch = [](bool to_batch) {
    return [to_batch](const kernel_node&) -> fn {
      return [to_batch](context& ctx) {
        const gpass::tensor& x = ctx.input(0);
        const auto block = vector_ints(ctx.input(1), ctx.node(), "block_shape");
        const gpass::tensor& pc = ctx.input(2);
        const std::size_t m = block.size();
        const auto pv = int_values(pc, ctx.node(), to_batch ? "paddings" : "crops");
        const auto plan = tf_rules::plan_space_batch(x.sizes(), block, pc.sizes(), pv, to_batch, ctx.node());
        if (x.element_type() == dtype::string) ctx.fail("string tensors are not supported");
        const auto& out = plan.out;
        const auto& small = plan.small;
        const i64 blocks = plan.blocks;
        // inner: elements after the spatial dims, copied as one run
        i64 inner = 1;
        for (std::size_t d = m + 1; d < x.rank(); ++d) inner *= x.sizes()[d];
        gpass::tensor& y = ctx.allocate_output_zeroed(0, x.element_type(), out);
        if (y.size() == 0) return;  // (the walk below visits position 0 of every dim)
        const std::size_t run = static_cast<std::size_t>(inner) * size_of(x.element_type());
        const i64 batch = plan.batch;  // N, the batch of the space side
        // strides (in elements) of the space side (x when to_batch, y otherwise) and the batch side
        const gpass::tensor& space = to_batch ? x : y;
        const gpass::tensor& bside = to_batch ? y : x;
        std::vector<i64> ss(m + 1), bs(m + 1);
        ss[m] = bs[m] = inner;
        for (std::size_t i = m; i-- > 0;) {
          ss[i] = ss[i + 1] * space.sizes()[i + 1];
          bs[i] = bs[i + 1] * bside.sizes()[i + 1];
        }
        const std::byte* src = x.raw();
        std::byte* dst = y.raw();
        const std::size_t es = size_of(x.element_type());
        std::vector<i64> idx(m), pos(m);
        for (i64 blk = 0; blk < blocks; ++blk) {
          for (i64 rest = blk, i = static_cast<i64>(m) - 1; i >= 0; --i) {  // row-major block offset
            idx[static_cast<std::size_t>(i)] = rest % block[static_cast<std::size_t>(i)];
            rest /= block[static_cast<std::size_t>(i)];
          }
          for (i64 n = 0; n < batch; ++n) {
            const i64 b = blk * batch + n;  // the batch side's batch index
            std::fill(pos.begin(), pos.end(), 0);
            for (bool more = true; more;) {
              // pos: a position on the batch side; its place on the space side
              i64 soff = n * ss[0], boff = b * bs[0];
              bool inside = true;
              for (std::size_t i = 0; i < m; ++i) {
                const i64 q = pos[i] * block[i] + idx[i] - pv[2 * i];
                if (q < 0 || q >= space.sizes()[i + 1]) inside = false;
                soff += q * ss[i + 1];
                boff += pos[i] * bs[i + 1];
              }
              if (inside) {
                const i64 from = to_batch ? soff : boff, to = to_batch ? boff : soff;
                std::memcpy(dst + static_cast<std::size_t>(to) * es, src + static_cast<std::size_t>(from) * es, run);
              }
              more = false;
              for (std::size_t i = m; i-- > 0;) {
                if (++pos[i] < small[i]) {
                  more = true;
                  break;
                }
                pos[i] = 0;
              }
            }
          }
        }
      };
    };
  };
  r.add({.domain = domain, .op = "SpaceToBatchND", .make = space_batch(true)});
  r.add({.domain = domain, .op = "BatchToSpaceND", .make = space_batch(false)});
  r.add({.domain = domain, .op = "Pad", .make = pad(0)});
  r.add({.domain = domain, .op = "PadV2", .make = pad(1)});
  r.add({.domain = domain, .op = "MirrorPad", .make = pad(2)});
}

/// Registers the TF graph, shape and data-movement kernels (domain "tf").
inline void register_tf_array(registry& r) {
  register_tf_graph(r);
  register_tf_shape(r);
  register_tf_move(r);
  register_tf_slice(r);
  register_tf_make(r);
  register_tf_index(r);
}

}  // namespace gpass::exec::cpu_detail::tf_detail
