// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file list_kernels.hpp
/// The kernels of the gpass list ops (`list_reserve`, `list_write`, `list_read`, `list_gather`,
/// `list_scatter`, `list_size`, `list_concat`, `list_split`, `list_stack`, `list_from_tensor`,
/// `list_push_back`, `list_pop_back`; see `gpass::register_list_ops`) for any executor policy
/// (`register_list_kernels<P>`): the Eigen CPU policy and the CUDA one register the same
/// kernels. A list is a `basic_value` sequence of the policy's tensors, the sequence itself
/// kept on the host: on a GPU its elements are device tensors (TensorFlow's TensorArray and
/// TensorList in device memory), and the indices, sizes and lengths an op takes as tensors
/// are read on the host (a constant the plan bound, else a copy from the device: one
/// synchronization per op that reads one, as TensorFlow keeps them in host memory). Element
/// data moves with the policy's `copy_on_device`; the sequence is never written in place (a
/// kernel that changes a list copies the sequence, sharing the tensors: O(length) per write),
/// and neither is a tensor: lists are values shared read-only between steps and runs.
///
/// Sizes, indices and row counts come from tensor values, so a hostile model picks them: a
/// list's handles are checked as scratch against max_tensor_bytes before they are made
/// (`check_length`), and every tensor a reader makes, zeros of unwritten elements included,
/// is an output made by allocate_output.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <gpass/core/checked.hpp>
#include <gpass/core/shape.hpp>
#include <gpass/core/tensor.hpp>
#include <gpass/core/type.hpp>
#include <gpass/exec/kernel.hpp>
#include <gpass/exec/scratch.hpp>

namespace gpass::exec {

namespace list_detail {

using i64 = std::int64_t;

/// True for policies whose tensors are host tensors (their data may be read in place).
template <class P>
inline constexpr bool on_host = std::is_same_v<typename P::tensor_type, gpass::tensor>;

/// The sizes of an element whose shape is fully known: attribute `attr` when fully known,
/// else the node's output type `out` (minus its first `drop` dims) when fully known.
inline std::optional<std::vector<i64>> known_element_sizes(const kernel_node& n, const char* attr, std::size_t out, std::size_t drop) {
  if (auto it = n.attrs.find(attr); it != n.attrs.end() && it->second.is<shape>() && it->second.as<shape>().is_fully_known())
    return it->second.as<shape>().sizes();
  if (out < n.output_types.size() && n.output_types[out].is_tensor()) {
    const auto& s = n.output_types[out].tensor().shape;
    if (s.is_fully_known() && s.rank() >= drop) {
      auto v = s.sizes();
      v.erase(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(drop));
      return v;
    }
  }
  return std::nullopt;
}

/// The element type of the list's elements from attribute `dtype` (undefined when absent).
inline dtype element_dtype(const attribute_map& attrs) {
  if (auto it = attrs.find("dtype"); it != attrs.end() && it->second.is<dtype>()) return it->second.as<dtype>();
  return dtype::undefined;
}

/// The int64 values of integer input `i` (int32 or int64; 0-D or 1-D), on the host: the
/// tensor itself on a host policy; on a device, the constant the plan bound, else a copy
/// from the device.
template <class P>
std::vector<i64> ints(kernel_context<P>& ctx, std::size_t i, const char* what) {
  gpass::tensor h;
  if constexpr (on_host<P>) {
    h = ctx.input(i);
  } else {
    if (const gpass::tensor* c = ctx.node().constant_input(i)) h = *c;
    else h = ctx.policy().download(ctx.input(i), ctx.stream());
  }
  std::vector<i64> r;
  if (h.element_type() == dtype::int64) {
    auto v = h.values<std::int64_t>();
    r.assign(v.begin(), v.end());
  } else if (h.element_type() == dtype::int32) {
    auto v = h.values<std::int32_t>();
    r.assign(v.begin(), v.end());
  } else {
    ctx.fail(std::string(what) + " must be int32 or int64, got " + std::string(to_string(h.element_type())));
  }
  return r;
}

/// The one value of integer input `i`.
template <class P>
i64 scalar(kernel_context<P>& ctx, std::size_t i, const char* what) {
  const auto v = ints(ctx, i, what);
  if (v.size() != 1) ctx.fail(std::string(what) + " must have one element");
  return v[0];
}

/// The writable address of `t`'s element 0 (host memory, or device memory on a GPU).
template <class T>
void* address(T& t) {
  if constexpr (std::is_same_v<T, gpass::tensor>) return t.raw();
  else return t.data();
}

/// Copies `count` elements of `src`'s element type from `src[so...]` to `dst[d0...]`.
template <class P>
void copy_elements(kernel_context<P>& ctx, const typename P::tensor_type& src, i64 so, typename P::tensor_type& dst, i64 d0,
                   i64 count) {
  if (count <= 0) return;
  if constexpr (on_host<P>) {
    if (src.element_type() == dtype::string) {
      const auto* s = src.template data<std::string>();
      std::copy(s + so, s + so + count, dst.template data<std::string>() + d0);
      return;
    }
  }
  const auto es = static_cast<i64>(size_of(src.element_type()));
  ctx.policy().copy_on_device(static_cast<std::byte*>(address(dst)) + d0 * es, src.raw() + so * es,
                              static_cast<std::size_t>(count * es), ctx.stream());
}

/// Output `i` of `t` and `sizes` holding `values` (made on the host, copied to a device).
template <class P, class V>
void host_output(kernel_context<P>& ctx, std::size_t i, dtype t, std::vector<i64> sizes, const std::vector<V>& values) {
  auto& out = ctx.allocate_output(i, t, std::move(sizes));
  ctx.policy().copy_to_device(address(out), values.data(), values.size() * sizeof(V), ctx.stream());
}

/// Checks the storage of a list of `n` elements against max_tensor_bytes, as a kernel's
/// scratch: the sequence holds one tensor handle per element, written or not, so a hostile
/// size, index or row count fails here rather than as a std::vector of 10^12 handles.
template <class P>
void check_length(const kernel_context<P>& ctx, std::uint64_t n) {
  check_scratch(ctx, static_cast<double>(n) * static_cast<double>(sizeof(typename P::tensor_type)),
                "a list of " + std::to_string(n) + " elements");
}

/// A copy of list `in` (its tensors shared) of `len` >= its length elements, those past its
/// end unwritten (the caller checked `len` with `check_length`).
template <class T>
std::vector<T> grown(const std::vector<T>& in, std::uint64_t len) {
  std::vector<T> seq;
  seq.reserve(static_cast<std::size_t>(len));
  seq.assign(in.begin(), in.end());
  seq.resize(static_cast<std::size_t>(len));
  return seq;
}

/// `i` as an index into a list of `size` elements; out of range is an error naming it.
inline std::size_t index_in(const kernel_node& n, i64 i, std::size_t size) {
  if (i < 0 || static_cast<std::uint64_t>(i) >= size)
    n.fail("index " + std::to_string(i) + " out of range for a list of " + std::to_string(size) + " elements");
  return static_cast<std::size_t>(i);
}

/// The first written element of `seq`, or null.
template <class T>
const T* first_written(const std::vector<T>& seq) {
  for (const auto& e : seq)
    if (!e.empty()) return &e;
  return nullptr;
}

/// The element type and sizes of the zeros that stand for unwritten element `i` (TensorFlow):
/// the declared `t` and `sizes`, else those of `like` (a written element, or null); sizes
/// known from neither is an error naming the index. Callers make the zeros through
/// allocate_output, so that the run's limits apply to them (a declared shape of 2^40
/// elements fails there, not in the allocator).
template <class T>
std::pair<dtype, std::vector<i64>> zeros_of(const kernel_node& n, i64 i, dtype t, const std::optional<std::vector<i64>>& sizes,
                                            const T* like) {
  const dtype zt = t != dtype::undefined ? t : like ? like->element_type() : dtype::undefined;
  if (zt == dtype::undefined || (!sizes && !like)) n.fail("element " + std::to_string(i) + " was never written and its shape is not known");
  return {zt, sizes ? *sizes : like->sizes()};
}

inline std::string describe(dtype t, const std::vector<i64>& sizes) { return std::string(to_string(t)) + shape::of(sizes).to_string(); }

/// Elements `at` of `seq` stacked on a new axis 0 as output 0 of `ctx`. The output is
/// allocated before anything is copied (the run's limits apply first) and an unwritten
/// element is zero rows in it, not a zeros tensor made on the side: of the declared `t` and
/// `sizes`, else of the first written element selected (TensorFlow's TensorListStack and
/// TensorListGather). An empty selection is `[0] + sizes` (f32 and `[0]` where unknown).
template <class P>
void stack_elements(kernel_context<P>& ctx, const std::vector<typename P::tensor_type>& seq, const std::vector<i64>& at, dtype t,
                    const std::optional<std::vector<i64>>& sizes) {
  using T = typename P::tensor_type;
  const kernel_node& n = ctx.node();
  const T* first = nullptr;
  std::optional<i64> hole;  // the first unwritten element selected
  for (auto i : at) {
    const auto& e = seq[index_in(n, i, seq.size())];
    if (!e.empty() && !first) first = &e;
    if (e.empty() && !hole) hole = i;
  }
  dtype et = first ? first->element_type() : t != dtype::undefined ? t : dtype::f32;
  std::vector<i64> es = first ? first->sizes() : sizes ? *sizes : std::vector<i64>{};
  if (hole) {
    auto [zt, zs] = zeros_of(n, *hole, t, sizes, first);
    if (first && (zt != et || zs != es))
      n.fail("cannot stack " + describe(et, es) + " with the zeros " + describe(zt, zs) + " of unwritten element " + std::to_string(*hole));
    et = zt;
    es = std::move(zs);
  }
  for (auto i : at) {
    const auto& e = seq[static_cast<std::size_t>(i)];
    if (!e.empty() && (e.element_type() != et || e.sizes() != es))
      n.fail("cannot stack " + describe(e.element_type(), e.sizes()) + " with " + describe(et, es));
  }
  std::vector<i64> out_sizes{static_cast<i64>(at.size())};
  out_sizes.insert(out_sizes.end(), es.begin(), es.end());
  T& out = hole ? ctx.allocate_output_zeroed(0, et, std::move(out_sizes)) : ctx.allocate_output(0, et, std::move(out_sizes));
  if (out.size() == 0) return;  // (no rows, or empty rows whose other sizes may be anything)
  const i64 inner = out.size() / static_cast<i64>(at.size());
  for (std::size_t k = 0; k < at.size(); ++k)
    if (const auto& e = seq[static_cast<std::size_t>(at[k])]; !e.empty()) copy_elements(ctx, e, 0, out, static_cast<i64>(k) * inner, inner);
}

/// Rows [at, at + count) of `t` on axis 0 (`drop`: the single row `at` without that axis), as
/// a new tensor: `t` may live in the run's arena. Together the rows of a list are the size
/// of `t`, which the limits saw when it was made.
template <class P>
typename P::tensor_type rows(kernel_context<P>& ctx, const typename P::tensor_type& t, i64 at, i64 count, bool drop = false) {
  std::vector<i64> s = t.sizes();
  if (drop) s.erase(s.begin());
  else s[0] = count;
  auto out = ctx.policy().allocate_tensor(t.element_type(), std::move(s), ctx.stream());
  // inner from element counts: a product of an empty t's sizes may overflow
  if (out.size() > 0) {
    const i64 inner = t.size() / t.sizes()[0];
    copy_elements(ctx, t, at * inner, out, 0, out.size());
  }
  return out;
}

/// The elements of `seq` (each of rank >= 1, written) concatenated on axis 0 as output 0.
template <class P>
void concat_rows(kernel_context<P>& ctx, const std::vector<typename P::tensor_type>& seq) {
  const auto& first = seq.front();
  const std::size_t rank = first.rank();
  std::vector<i64> out_sizes = first.sizes();
  out_sizes[0] = 0;
  for (const auto& p : seq) {
    if (p.rank() != rank || p.element_type() != first.element_type())
      ctx.fail("cannot concatenate " + describe(p.element_type(), p.sizes()) + " with " + describe(first.element_type(), first.sizes()));
    for (std::size_t d = 1; d < rank; ++d)
      if (p.sizes()[d] != first.sizes()[d])
        ctx.fail("cannot concatenate sizes " + shape::of(p.sizes()).to_string() + " and " + shape::of(first.sizes()).to_string() +
                 " along axis 0");
    out_sizes[0] += p.sizes()[0];  // (the caller checked that the lengths add up)
  }
  auto& out = ctx.allocate_output(0, first.element_type(), std::move(out_sizes));
  i64 at = 0;
  for (const auto& p : seq) {
    copy_elements(ctx, p, 0, out, at, p.size());
    at += p.size();
  }
}

}  // namespace list_detail

/// Registers the list kernels in `r` (domain ""), for any policy. On a policy whose tensors
/// are not host tensors (a GPU), the kernels decline lists of strings (`applies`), which
/// stay where strings live.
template <class P>
void register_list_kernels(kernel_registry<P>& r) {
  using namespace list_detail;
  using context = kernel_context<P>;
  using fn = kernel_fn<P>;
  using T = typename P::tensor_type;
  using sequence = std::vector<T>;
  std::function<bool(const kernel_query&)> applies = nullptr;
  if constexpr (!on_host<P>)
    applies = [](const kernel_query& q) {
      if (q.attrs && element_dtype(*q.attrs) == dtype::string) return false;
      for (dtype t : q.inputs)
        if (t == dtype::string) return false;
      for (dtype t : q.outputs)
        if (t == dtype::string) return false;
      return true;
    };
  auto add = [&](const char* op, std::function<fn(const kernel_node&)> make) {
    r.add({.op = op, .type_input = -1, .make = std::move(make), .applies = applies});
  };

  add("list_reserve", [](const kernel_node&) -> fn {
    return [](context& ctx) {
      const i64 n = scalar(ctx, 0, "the list size");
      if (n < 0) ctx.fail("negative list size " + std::to_string(n));
      check_length(ctx, static_cast<std::uint64_t>(n));
      // output 0, the handle, carries nothing
      ctx.set_output(1, sequence(static_cast<std::size_t>(n)));
    };
  });
  add("list_write", [](const kernel_node&) -> fn {
    return [](context& ctx) {
      const auto& in = ctx.input_value(0).sequence();
      const i64 i = scalar(ctx, 1, "the index");
      if (i < 0) ctx.fail("negative index " + std::to_string(i));
      // a write past the end grows the list: checked before the handles are made
      const std::uint64_t len = std::max<std::uint64_t>(in.size(), static_cast<std::uint64_t>(i) + 1);
      check_length(ctx, len);
      sequence seq = grown(in, len);
      seq[static_cast<std::size_t>(i)] = ctx.input(2);
      ctx.set_output(0, std::move(seq));
    };
  });
  add("list_read", [](const kernel_node& n) -> fn {
    const auto sizes = known_element_sizes(n, "element_shape", 0, 0);
    const dtype t = element_dtype(n.attrs);
    return [sizes, t](context& ctx) {
      const auto& seq = ctx.input_value(0).sequence();
      const i64 i = scalar(ctx, 1, "the index");
      const auto& e = seq[index_in(ctx.node(), i, seq.size())];
      if (!e.empty()) {
        ctx.set_output(0, e);
      } else {  // zeros, shaped like another element when none is declared (TensorListGetItem)
        auto [zt, zs] = zeros_of(ctx.node(), i, t, sizes, sizes ? nullptr : first_written(seq));
        ctx.allocate_output_zeroed(0, zt, std::move(zs));
      }
    };
  });
  add("list_gather", [](const kernel_node& n) -> fn {
    const auto sizes = known_element_sizes(n, "element_shape", 0, 1);
    const dtype t = element_dtype(n.attrs);
    return [sizes, t](context& ctx) { stack_elements(ctx, ctx.input_value(0).sequence(), ints(ctx, 1, "the indices"), t, sizes); };
  });
  add("list_scatter", [](const kernel_node&) -> fn {
    return [](context& ctx) {
      const auto& in = ctx.input_value(0).sequence();
      const auto idx = ints(ctx, 1, "the indices");
      const auto& v = ctx.input(2);
      if (v.rank() == 0 || v.sizes()[0] != static_cast<i64>(idx.size()))
        ctx.fail("value has sizes " + shape::of(v.sizes()).to_string() + " for " + std::to_string(idx.size()) + " indices");
      // indices past the end grow the list (TensorFlow's scatter): checked once, up front
      std::uint64_t len = in.size();
      for (auto i : idx) {
        if (i < 0) ctx.fail("negative index " + std::to_string(i));
        len = std::max<std::uint64_t>(len, static_cast<std::uint64_t>(i) + 1);
      }
      check_length(ctx, len);
      sequence seq = grown(in, len);
      for (std::size_t k = 0; k < idx.size(); ++k) seq[static_cast<std::size_t>(idx[k])] = rows(ctx, v, static_cast<i64>(k), 1, true);
      ctx.set_output(0, std::move(seq));
    };
  });
  add("list_size", [](const kernel_node&) -> fn {
    return [](context& ctx) {
      const std::size_t len = ctx.input_value(0).sequence().size();
      if (len > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
        ctx.fail("the list has " + std::to_string(len) + " elements, more than its i32 size holds");
      host_output(ctx, 0, dtype::int32, {}, std::vector<std::int32_t>{static_cast<std::int32_t>(len)});
    };
  });
  add("list_concat", [](const kernel_node& n) -> fn {
    const auto rest = known_element_sizes(n, "element_shape_except0", 0, 1);
    const dtype t = element_dtype(n.attrs);
    return [rest, t](context& ctx) {
      const auto& seq = ctx.input_value(0).sequence();
      std::vector<i64> lengths(seq.size());
      i64 total = 0;
      for (std::size_t i = 0; i < seq.size(); ++i) {
        if (seq[i].empty()) ctx.fail("element " + std::to_string(i) + " was never written");
        if (seq[i].rank() == 0) ctx.fail("element " + std::to_string(i) + " is a scalar: nothing to concatenate on axis 0");
        lengths[i] = seq[i].sizes()[0];
        // empty elements may have any number of rows: their sum may overflow
        const auto sum = checked_add(total, lengths[i]);
        if (!sum) ctx.fail("the elements' lengths add up to more than an i64 holds");
        total = *sum;
      }
      if (seq.empty()) {
        if (!rest || t == dtype::undefined) ctx.fail("empty list whose element shape is not known");
        std::vector<i64> s{0};
        s.insert(s.end(), rest->begin(), rest->end());
        ctx.allocate_output(0, t, std::move(s));
      } else {
        concat_rows(ctx, seq);
      }
      if (ctx.num_outputs() > 1) host_output(ctx, 1, dtype::int64, {static_cast<i64>(lengths.size())}, lengths);
    };
  });
  add("list_split", [](const kernel_node&) -> fn {
    return [](context& ctx) {
      const auto& v = ctx.input(1);
      const auto len = ints(ctx, 2, "the lengths");
      if (v.rank() == 0) ctx.fail("cannot split a scalar");
      const i64 total_rows = v.sizes()[0];
      i64 total = 0;
      for (auto l : len) {
        if (l < 0) ctx.fail("negative length " + std::to_string(l));
        if (l > total_rows - total)  // (no overflow: total <= total_rows)
          ctx.fail("lengths add up to more than the " + std::to_string(total_rows) + " rows of the value");
        total += l;
      }
      if (total != total_rows)
        ctx.fail("lengths add up to " + std::to_string(total) + ", value has " + std::to_string(total_rows) + " rows");
      check_length(ctx, len.size());
      sequence seq;
      seq.reserve(len.size());
      i64 at = 0;
      for (auto l : len) {
        seq.push_back(rows(ctx, v, at, l));
        at += l;
      }
      ctx.set_output(0, std::move(seq));
    };
  });
  add("list_stack", [](const kernel_node& n) -> fn {
    const auto sizes = known_element_sizes(n, "element_shape", 0, 1);
    const dtype t = element_dtype(n.attrs);
    return [sizes, t](context& ctx) {
      const auto& seq = ctx.input_value(0).sequence();
      if (seq.empty() && (!sizes || t == dtype::undefined)) ctx.fail("empty list whose element shape is not known");
      std::vector<i64> all(seq.size());
      for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<i64>(i);
      stack_elements(ctx, seq, all, t, sizes);
    };
  });
  add("list_from_tensor", [](const kernel_node&) -> fn {
    return [](context& ctx) {
      const auto& v = ctx.input(0);
      if (v.rank() == 0) ctx.fail("cannot make a list of the rows of a scalar");
      // an empty value may have any number of rows: one handle each
      check_length(ctx, static_cast<std::uint64_t>(v.sizes()[0]));
      sequence seq;
      seq.reserve(static_cast<std::size_t>(v.sizes()[0]));
      for (i64 i = 0; i < v.sizes()[0]; ++i) seq.push_back(rows(ctx, v, i, 1, true));
      ctx.set_output(0, std::move(seq));
    };
  });
  add("list_push_back", [](const kernel_node&) -> fn {
    return [](context& ctx) {
      const auto& in = ctx.input_value(0).sequence();
      check_length(ctx, static_cast<std::uint64_t>(in.size()) + 1);
      sequence seq = grown(in, static_cast<std::uint64_t>(in.size()) + 1);
      seq.back() = ctx.input(1);
      ctx.set_output(0, std::move(seq));
    };
  });
  add("list_pop_back", [](const kernel_node& n) -> fn {
    const auto sizes = known_element_sizes(n, "element_shape", 1, 0);
    const dtype t = element_dtype(n.attrs);
    return [sizes, t](context& ctx) {
      const auto& in = ctx.input_value(0).sequence();
      if (in.empty()) ctx.fail("cannot pop from an empty list");
      const i64 last = static_cast<i64>(in.size()) - 1;
      if (!in.back().empty()) {
        ctx.set_output(1, in.back());
      } else {  // zeros of the declared shape only (TensorListPopBack)
        auto [zt, zs] = zeros_of(ctx.node(), last, t, sizes, static_cast<const T*>(nullptr));
        ctx.allocate_output_zeroed(1, zt, std::move(zs));
      }
      ctx.set_output(0, sequence(in.begin(), in.end() - 1));
    };
  });
}

}  // namespace gpass::exec
