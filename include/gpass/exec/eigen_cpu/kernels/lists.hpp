// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file lists.hpp
/// Eigen CPU kernels of the gpass list ops (`list_reserve`, `list_write`, `list_read`,
/// `list_gather`, `list_scatter`, `list_size`, `list_concat`, `list_split`, `list_stack`,
/// `list_from_tensor`, `list_push_back`, `list_pop_back`; see
/// `gpass::register_list_ops`): lists are `exec::value` sequences of tensors.
///
/// Sizes, indices and row counts come from tensor values, so a hostile model picks them: a
/// list's handles are checked as scratch against max_tensor_bytes before they are made
/// (`check_length`), and every tensor a reader makes, zeros of unwritten elements included,
/// is an output made by allocate_output.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gpass/core/checked.hpp>
#include <gpass/core/shape.hpp>
#include <gpass/core/type.hpp>
#include <gpass/exec/eigen_cpu/kernels/common.hpp>
#include <gpass/exec/eigen_cpu/kernels/control.hpp>

namespace gpass::exec::cpu_detail {

namespace lists {

/// The sizes of an element whose shape is fully known: attribute `attr` when fully known,
/// else the node's output type `out` (minus its first `drop` dims) when fully known.
inline std::optional<std::vector<std::int64_t>> known_element_sizes(const kernel_node& n, const char* attr, std::size_t out,
                                                                    std::size_t drop) {
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
inline dtype element_dtype(const kernel_node& n) {
  if (auto it = n.attrs.find("dtype"); it != n.attrs.end() && it->second.is<dtype>()) return it->second.as<dtype>();
  return dtype::undefined;
}

/// Checks the storage of a list of `n` elements against max_tensor_bytes, as a kernel's
/// scratch: the sequence holds one tensor handle per element, written or not, so a hostile
/// size, index or row count fails here rather than as a std::vector of 10^12 handles.
inline void check_length(const context& ctx, std::uint64_t n) {
  check_scratch(ctx, static_cast<double>(n) * static_cast<double>(sizeof(gpass::tensor)),
                "a list of " + std::to_string(n) + " elements");
}

/// `i` as an index into a list of `size` elements; out of range is an error naming it.
inline std::size_t index_in(const kernel_node& n, std::int64_t i, std::size_t size) {
  if (i < 0 || static_cast<std::uint64_t>(i) >= size)
    n.fail("index " + std::to_string(i) + " out of range for a list of " + std::to_string(size) + " elements");
  return static_cast<std::size_t>(i);
}

/// The first written element of `seq`, or null.
inline const gpass::tensor* first_written(const std::vector<gpass::tensor>& seq) {
  for (const auto& e : seq)
    if (!e.empty()) return &e;
  return nullptr;
}

/// The element type and sizes of the zeros that stand for unwritten element `i` (TensorFlow):
/// the declared `t` and `sizes`, else those of `like` (a written element, or null); sizes
/// known from neither is an error naming the index. Callers make the zeros through
/// allocate_output, so that the run's limits apply to them (a declared shape of 2^40
/// elements fails there, not in the allocator).
inline std::pair<dtype, std::vector<std::int64_t>> zeros_of(const kernel_node& n, std::int64_t i, dtype t,
                                                           const std::optional<std::vector<std::int64_t>>& sizes,
                                                           const gpass::tensor* like) {
  const dtype zt = t != dtype::undefined ? t : like ? like->element_type() : dtype::undefined;
  if (zt == dtype::undefined || (!sizes && !like))
    n.fail("element " + std::to_string(i) + " was never written and its shape is not known");
  return {zt, sizes ? *sizes : like->sizes()};
}

inline std::string describe(dtype t, const std::vector<std::int64_t>& sizes) {
  return std::string(to_string(t)) + shape::of(sizes).to_string();
}

/// Elements `at` of `seq` stacked on a new axis 0 as output 0 of `ctx`. The output is
/// allocated before anything is copied (the run's limits apply first) and an unwritten
/// element is zero rows in it, not a zeros tensor made on the side: of the declared `t` and
/// `sizes`, else of the first written element selected (TensorFlow's TensorListStack and
/// TensorListGather). An empty selection is `[0] + sizes` (f32 and `[0]` where unknown).
inline void stack_elements(context& ctx, const std::vector<gpass::tensor>& seq, const std::vector<std::int64_t>& at,
                           dtype t, const std::optional<std::vector<std::int64_t>>& sizes) {
  const kernel_node& n = ctx.node();
  const gpass::tensor* first = nullptr;
  std::optional<std::int64_t> hole;  // the first unwritten element selected
  for (auto i : at) {
    const auto& e = seq[index_in(n, i, seq.size())];
    if (!e.empty() && !first) first = &e;
    if (e.empty() && !hole) hole = i;
  }
  dtype et = first ? first->element_type() : t != dtype::undefined ? t : dtype::f32;
  std::vector<std::int64_t> es = first ? first->sizes() : sizes ? *sizes : std::vector<std::int64_t>{};
  if (hole) {
    auto [zt, zs] = zeros_of(n, *hole, t, sizes, first);
    if (first && (zt != et || zs != es))
      n.fail("cannot stack " + describe(et, es) + " with the zeros " + describe(zt, zs) + " of unwritten element " +
             std::to_string(*hole));
    et = zt;
    es = std::move(zs);
  }
  for (auto i : at) {
    const auto& e = seq[static_cast<std::size_t>(i)];
    if (!e.empty() && (e.element_type() != et || e.sizes() != es))
      n.fail("cannot stack " + describe(e.element_type(), e.sizes()) + " with " + describe(et, es));
  }
  std::vector<std::int64_t> out_sizes{static_cast<std::int64_t>(at.size())};
  out_sizes.insert(out_sizes.end(), es.begin(), es.end());
  gpass::tensor& out =
      hole ? ctx.allocate_output_zeroed(0, et, std::move(out_sizes)) : ctx.allocate_output(0, et, std::move(out_sizes));
  if (out.size() == 0) return;  // (no rows, or empty rows whose other sizes may be anything)
  const std::int64_t inner = out.size() / static_cast<std::int64_t>(at.size());
  for (std::size_t k = 0; k < at.size(); ++k)
    if (const auto& e = seq[static_cast<std::size_t>(at[k])]; !e.empty())
      control::copy_elements(e, 0, out, static_cast<std::int64_t>(k) * inner, inner);
}

/// Rows [at, at + count) of `t` on axis 0 (`drop`: the single row `at` without that axis).
/// Copies: `t` may live in the run's arena. Together the rows of a list are the size of
/// `t`, which the limits saw when it was made.
inline gpass::tensor rows(const gpass::tensor& t, std::int64_t at, std::int64_t count, bool drop = false) {
  std::vector<std::int64_t> s = t.sizes();
  if (drop) s.erase(s.begin());
  else s[0] = count;
  gpass::tensor out(t.element_type(), std::move(s));
  // inner from element counts: a product of an empty t's sizes may overflow
  if (out.size() > 0) {
    const std::int64_t inner = t.size() / t.sizes()[0];
    control::copy_elements(t, at * inner, out, 0, out.size());
  }
  return out;
}

}  // namespace lists

/// Registers the list kernels in `r` (domain ""). Lists are values shared read-only between
/// steps and runs: a kernel that changes a list copies the sequence (sharing the tensors:
/// O(length) per write) and never writes a tensor in place.
inline void register_lists(registry& r) {
  using namespace lists;

  r.add({.op = "list_reserve", .type_input = -1, .make = [](const kernel_node&) -> fn {
    return [](context& ctx) {
      const std::int64_t n = control::scalar_int(ctx.input(0), ctx.node(), "the list size");
      if (n < 0) ctx.fail("negative list size " + std::to_string(n));
      check_length(ctx, static_cast<std::uint64_t>(n));
      // output 0, the handle, carries nothing
      ctx.set_output(1, std::vector<gpass::tensor>(static_cast<std::size_t>(n)));
    };
  }});
  r.add({.op = "list_write", .type_input = -1, .make = [](const kernel_node&) -> fn {
    return [](context& ctx) {
      const auto& in = ctx.input_value(0).sequence();
      const std::int64_t i = control::scalar_int(ctx.input(1), ctx.node(), "the index");
      if (i < 0) ctx.fail("negative index " + std::to_string(i));
      // a write past the end grows the list: checked before the handles are made
      const std::uint64_t len = std::max<std::uint64_t>(in.size(), static_cast<std::uint64_t>(i) + 1);
      check_length(ctx, len);
      std::vector<gpass::tensor> seq;
      seq.reserve(static_cast<std::size_t>(len));
      seq.assign(in.begin(), in.end());
      seq.resize(static_cast<std::size_t>(len));
      seq[static_cast<std::size_t>(i)] = ctx.input(2);
      ctx.set_output(0, std::move(seq));
    };
  }});
  r.add({.op = "list_read", .type_input = -1, .make = [](const kernel_node& n) -> fn {
    const auto sizes = known_element_sizes(n, "element_shape", 0, 0);
    const dtype t = element_dtype(n);
    return [sizes, t](context& ctx) {
      const auto& seq = ctx.input_value(0).sequence();
      const std::int64_t i = control::scalar_int(ctx.input(1), ctx.node(), "the index");
      const auto& e = seq[index_in(ctx.node(), i, seq.size())];
      if (!e.empty()) {
        ctx.set_output(0, e);
      } else {  // zeros, shaped like another element when none is declared (TensorListGetItem)
        auto [zt, zs] = zeros_of(ctx.node(), i, t, sizes, sizes ? nullptr : first_written(seq));
        ctx.allocate_output_zeroed(0, zt, std::move(zs));
      }
    };
  }});
  r.add({.op = "list_gather", .type_input = -1, .make = [](const kernel_node& n) -> fn {
    const auto sizes = known_element_sizes(n, "element_shape", 0, 1);
    const dtype t = element_dtype(n);
    return [sizes, t](context& ctx) {
      const auto& seq = ctx.input_value(0).sequence();
      stack_elements(ctx, seq, int_values(ctx.input(1), ctx.node(), "the indices"), t, sizes);
    };
  }});
  r.add({.op = "list_scatter", .type_input = -1, .make = [](const kernel_node&) -> fn {
    return [](context& ctx) {
      const auto& in = ctx.input_value(0).sequence();
      const auto idx = int_values(ctx.input(1), ctx.node(), "the indices");
      const auto& v = ctx.input(2);
      if (v.rank() == 0 || v.sizes()[0] != static_cast<std::int64_t>(idx.size()))
        ctx.fail("value has sizes " + shape::of(v.sizes()).to_string() + " for " + std::to_string(idx.size()) + " indices");
      // indices past the end grow the list (TensorFlow's scatter): checked once, up front
      std::uint64_t len = in.size();
      for (auto i : idx) {
        if (i < 0) ctx.fail("negative index " + std::to_string(i));
        len = std::max<std::uint64_t>(len, static_cast<std::uint64_t>(i) + 1);
      }
      check_length(ctx, len);
      std::vector<gpass::tensor> seq;
      seq.reserve(static_cast<std::size_t>(len));
      seq.assign(in.begin(), in.end());
      seq.resize(static_cast<std::size_t>(len));
      for (std::size_t k = 0; k < idx.size(); ++k)
        seq[static_cast<std::size_t>(idx[k])] = rows(v, static_cast<std::int64_t>(k), 1, true);
      ctx.set_output(0, std::move(seq));
    };
  }});
  r.add({.op = "list_size", .type_input = -1, .make = [](const kernel_node&) -> fn {
    return [](context& ctx) {
      const std::size_t len = ctx.input_value(0).sequence().size();
      if (len > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
        ctx.fail("the list has " + std::to_string(len) + " elements, more than its i32 size holds");
      ctx.allocate_output(0, dtype::int32, {}).data<std::int32_t>()[0] = static_cast<std::int32_t>(len);
    };
  }});
  r.add({.op = "list_concat", .type_input = -1, .make = [](const kernel_node& n) -> fn {
    const auto rest = known_element_sizes(n, "element_shape_except0", 0, 1);
    const dtype t = element_dtype(n);
    return [rest, t](context& ctx) {
      const auto& seq = ctx.input_value(0).sequence();
      std::vector<std::int64_t> lengths(seq.size());
      std::int64_t total = 0;
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
        std::vector<std::int64_t> s{0};
        s.insert(s.end(), rest->begin(), rest->end());
        ctx.allocate_output(0, t, std::move(s));
      } else {
        control::concat_output(ctx, 0, seq, 0);
      }
      if (ctx.num_outputs() > 1) {
        auto& l = ctx.allocate_output(1, dtype::int64, {static_cast<std::int64_t>(seq.size())});
        std::copy(lengths.begin(), lengths.end(), l.data<std::int64_t>());
      }
    };
  }});
  r.add({.op = "list_split", .type_input = -1, .make = [](const kernel_node&) -> fn {
    return [](context& ctx) {
      const auto& v = ctx.input(1);
      const auto len = int_values(ctx.input(2), ctx.node(), "the lengths");
      if (v.rank() == 0) ctx.fail("cannot split a scalar");
      const std::int64_t total_rows = v.sizes()[0];
      std::int64_t total = 0;
      for (auto l : len) {
        if (l < 0) ctx.fail("negative length " + std::to_string(l));
        if (l > total_rows - total)  // (no overflow: total <= total_rows)
          ctx.fail("lengths add up to more than the " + std::to_string(total_rows) + " rows of the value");
        total += l;
      }
      if (total != total_rows)
        ctx.fail("lengths add up to " + std::to_string(total) + ", value has " + std::to_string(total_rows) + " rows");
      check_length(ctx, len.size());
      std::vector<gpass::tensor> seq;
      seq.reserve(len.size());
      std::int64_t at = 0;
      for (auto l : len) {
        seq.push_back(rows(v, at, l));
        at += l;
      }
      ctx.set_output(0, std::move(seq));
    };
  }});
  r.add({.op = "list_stack", .type_input = -1, .make = [](const kernel_node& n) -> fn {
    const auto sizes = known_element_sizes(n, "element_shape", 0, 1);
    const dtype t = element_dtype(n);
    return [sizes, t](context& ctx) {
      const auto& seq = ctx.input_value(0).sequence();
      if (seq.empty() && (!sizes || t == dtype::undefined)) ctx.fail("empty list whose element shape is not known");
      std::vector<std::int64_t> all(seq.size());
      for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<std::int64_t>(i);
      stack_elements(ctx, seq, all, t, sizes);
    };
  }});
  r.add({.op = "list_from_tensor", .type_input = -1, .make = [](const kernel_node&) -> fn {
    return [](context& ctx) {
      const auto& v = ctx.input(0);
      if (v.rank() == 0) ctx.fail("cannot make a list of the rows of a scalar");
      // an empty value may have any number of rows: one handle each
      check_length(ctx, static_cast<std::uint64_t>(v.sizes()[0]));
      std::vector<gpass::tensor> seq;
      seq.reserve(static_cast<std::size_t>(v.sizes()[0]));
      for (std::int64_t i = 0; i < v.sizes()[0]; ++i) seq.push_back(rows(v, i, 1, true));
      ctx.set_output(0, std::move(seq));
    };
  }});
  r.add({.op = "list_push_back", .type_input = -1, .make = [](const kernel_node&) -> fn {
    return [](context& ctx) {
      const auto& in = ctx.input_value(0).sequence();
      check_length(ctx, static_cast<std::uint64_t>(in.size()) + 1);
      std::vector<gpass::tensor> seq;
      seq.reserve(in.size() + 1);
      seq.assign(in.begin(), in.end());
      seq.push_back(ctx.input(1));
      ctx.set_output(0, std::move(seq));
    };
  }});
  r.add({.op = "list_pop_back", .type_input = -1, .make = [](const kernel_node& n) -> fn {
    const auto sizes = known_element_sizes(n, "element_shape", 1, 0);
    const dtype t = element_dtype(n);
    return [sizes, t](context& ctx) {
      const auto& in = ctx.input_value(0).sequence();
      if (in.empty()) ctx.fail("cannot pop from an empty list");
      const std::int64_t last = static_cast<std::int64_t>(in.size()) - 1;
      if (!in.back().empty()) {
        ctx.set_output(1, in.back());
      } else {  // zeros of the declared shape only (TensorListPopBack)
        auto [zt, zs] = zeros_of(ctx.node(), last, t, sizes, nullptr);
        ctx.allocate_output_zeroed(1, zt, std::move(zs));
      }
      ctx.set_output(0, std::vector<gpass::tensor>(in.begin(), in.end() - 1));
    };
  }});
}

}  // namespace gpass::exec::cpu_detail
