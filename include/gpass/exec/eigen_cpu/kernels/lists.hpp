// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file lists.hpp
/// Eigen CPU kernels of the gpass list ops (`list_reserve`, `list_write`, `list_read`,
/// `list_gather`, `list_scatter`, `list_size`, `list_concat`, `list_split`, `list_stack`,
/// `list_from_tensor`, `list_push_back`, `list_pop_back`; see
/// `gpass::register_list_ops`): lists are `exec::value` sequences of tensors.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

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

/// Element `i` of `seq` for reading: the tensor, or zeros of `sizes` when unwritten and the
/// sizes are known (TensorFlow), else an error naming the index.
inline gpass::tensor element(const std::vector<gpass::tensor>& seq, std::int64_t i, const kernel_node& n, dtype t,
                             const std::optional<std::vector<std::int64_t>>& sizes) {
  if (i < 0 || i >= static_cast<std::int64_t>(seq.size()))
    n.fail("index " + std::to_string(i) + " out of range for a list of " + std::to_string(seq.size()) + " elements");
  const auto& e = seq[static_cast<std::size_t>(i)];
  if (!e.empty()) return e;
  if (!sizes || t == dtype::undefined)
    n.fail("element " + std::to_string(i) + " was never written and its shape is not known");
  return gpass::tensor(t, *sizes);
}

/// Rows [at, at + count) of `t` on axis 0.
inline gpass::tensor rows(const gpass::tensor& t, std::int64_t at, std::int64_t count) {
  std::vector<std::int64_t> s = t.sizes();
  std::int64_t inner = 1;
  for (std::size_t d = 1; d < s.size(); ++d) inner *= s[d];
  s[0] = count;
  gpass::tensor out(t.element_type(), s);
  control::copy_elements(t, at * inner, out, 0, count * inner);
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
      // output 0, the handle, carries nothing
      ctx.set_output(1, std::vector<gpass::tensor>(static_cast<std::size_t>(n)));
    };
  }});
  r.add({.op = "list_write", .type_input = -1, .make = [](const kernel_node&) -> fn {
    return [](context& ctx) {
      std::vector<gpass::tensor> seq = ctx.input_value(0).sequence();
      const std::int64_t i = control::scalar_int(ctx.input(1), ctx.node(), "the index");
      if (i < 0) ctx.fail("negative index " + std::to_string(i));
      if (i >= static_cast<std::int64_t>(seq.size())) seq.resize(static_cast<std::size_t>(i) + 1);
      seq[static_cast<std::size_t>(i)] = ctx.input(2);
      ctx.set_output(0, std::move(seq));
    };
  }});
  r.add({.op = "list_read", .type_input = -1, .make = [](const kernel_node& n) -> fn {
    const auto sizes = known_element_sizes(n, "element_shape", 0, 0);
    const dtype t = element_dtype(n);
    return [sizes, t](context& ctx) {
      const auto& seq = ctx.input_value(0).sequence();
      ctx.set_output(0, element(seq, control::scalar_int(ctx.input(1), ctx.node(), "the index"), ctx.node(), t, sizes));
    };
  }});
  r.add({.op = "list_gather", .type_input = -1, .make = [](const kernel_node& n) -> fn {
    const auto sizes = known_element_sizes(n, "element_shape", 0, 1);
    const dtype t = element_dtype(n);
    return [sizes, t](context& ctx) {
      const auto& seq = ctx.input_value(0).sequence();
      const auto idx = int_values(ctx.input(1), ctx.node(), "the indices");
      std::vector<gpass::tensor> parts;
      parts.reserve(idx.size());
      for (auto i : idx) parts.push_back(element(seq, i, ctx.node(), t, sizes));
      control::stack_output(ctx, 0, parts, 0, t, sizes ? *sizes : std::vector<std::int64_t>{});
    };
  }});
  r.add({.op = "list_scatter", .type_input = -1, .make = [](const kernel_node&) -> fn {
    return [](context& ctx) {
      std::vector<gpass::tensor> seq = ctx.input_value(0).sequence();
      const auto idx = int_values(ctx.input(1), ctx.node(), "the indices");
      const auto& v = ctx.input(2);
      if (v.rank() == 0 || v.sizes()[0] != static_cast<std::int64_t>(idx.size()))
        ctx.fail("value has sizes " + shape::of(v.sizes()).to_string() + " for " + std::to_string(idx.size()) + " indices");
      for (std::size_t k = 0; k < idx.size(); ++k) {
        const std::int64_t i = idx[k];
        if (i < 0) ctx.fail("negative index " + std::to_string(i));
        if (i >= static_cast<std::int64_t>(seq.size())) seq.resize(static_cast<std::size_t>(i) + 1);
        seq[static_cast<std::size_t>(i)] = control::take(v, 0, static_cast<std::int64_t>(k));
      }
      ctx.set_output(0, std::move(seq));
    };
  }});
  r.add({.op = "list_size", .type_input = -1, .make = [](const kernel_node&) -> fn {
    return [](context& ctx) {
      ctx.set_output(0, gpass::tensor::scalar(static_cast<std::int32_t>(ctx.input_value(0).sequence().size())));
    };
  }});
  r.add({.op = "list_concat", .type_input = -1, .make = [](const kernel_node& n) -> fn {
    const auto rest = known_element_sizes(n, "element_shape_except0", 0, 1);
    const dtype t = element_dtype(n);
    return [rest, t](context& ctx) {
      const auto& seq = ctx.input_value(0).sequence();
      std::vector<gpass::tensor> parts;
      gpass::tensor lengths(dtype::int64, {static_cast<std::int64_t>(seq.size())});
      for (std::size_t i = 0; i < seq.size(); ++i) {
        if (seq[i].empty()) ctx.fail("element " + std::to_string(i) + " was never written");
        if (seq[i].rank() == 0) ctx.fail("element " + std::to_string(i) + " is a scalar: nothing to concatenate on axis 0");
        parts.push_back(seq[i]);
        lengths.data<std::int64_t>()[i] = seq[i].sizes()[0];
      }
      if (parts.empty()) {
        if (!rest || t == dtype::undefined) ctx.fail("empty list whose element shape is not known");
        std::vector<std::int64_t> s{0};
        s.insert(s.end(), rest->begin(), rest->end());
        ctx.set_output(0, gpass::tensor(t, s));
      } else {
        control::concat_output(ctx, 0, parts, 0);
      }
      if (ctx.num_outputs() > 1) ctx.set_output(1, std::move(lengths));
    };
  }});
  r.add({.op = "list_split", .type_input = -1, .make = [](const kernel_node&) -> fn {
    return [](context& ctx) {
      const auto& v = ctx.input(1);
      const auto len = int_values(ctx.input(2), ctx.node(), "the lengths");
      if (v.rank() == 0) ctx.fail("cannot split a scalar");
      std::int64_t total = 0;
      for (auto l : len) {
        if (l < 0) ctx.fail("negative length " + std::to_string(l));
        total += l;
      }
      if (total != v.sizes()[0])
        ctx.fail("lengths add up to " + std::to_string(total) + ", value has " + std::to_string(v.sizes()[0]) + " rows");
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
      std::vector<gpass::tensor> parts;
      parts.reserve(seq.size());
      for (std::size_t i = 0; i < seq.size(); ++i) parts.push_back(element(seq, static_cast<std::int64_t>(i), ctx.node(), t, sizes));
      if (parts.empty() && (!sizes || t == dtype::undefined)) ctx.fail("empty list whose element shape is not known");
      control::stack_output(ctx, 0, parts, 0, t, sizes ? *sizes : std::vector<std::int64_t>{});
    };
  }});
  r.add({.op = "list_from_tensor", .type_input = -1, .make = [](const kernel_node&) -> fn {
    return [](context& ctx) {
      const auto& v = ctx.input(0);
      if (v.rank() == 0) ctx.fail("cannot make a list of the rows of a scalar");
      std::vector<gpass::tensor> seq;
      seq.reserve(static_cast<std::size_t>(v.sizes()[0]));
      for (std::int64_t i = 0; i < v.sizes()[0]; ++i) seq.push_back(control::take(v, 0, i));
      ctx.set_output(0, std::move(seq));
    };
  }});
  r.add({.op = "list_push_back", .type_input = -1, .make = [](const kernel_node&) -> fn {
    return [](context& ctx) {
      std::vector<gpass::tensor> seq = ctx.input_value(0).sequence();
      seq.push_back(ctx.input(1));
      ctx.set_output(0, std::move(seq));
    };
  }});
  r.add({.op = "list_pop_back", .type_input = -1, .make = [](const kernel_node& n) -> fn {
    const auto sizes = known_element_sizes(n, "element_shape", 1, 0);
    const dtype t = element_dtype(n);
    return [sizes, t](context& ctx) {
      std::vector<gpass::tensor> seq = ctx.input_value(0).sequence();
      if (seq.empty()) ctx.fail("cannot pop from an empty list");
      gpass::tensor last = element(seq, static_cast<std::int64_t>(seq.size()) - 1, ctx.node(), t, sizes);
      seq.pop_back();
      ctx.set_output(0, std::move(seq));
      ctx.set_output(1, std::move(last));
    };
  }});
}

}  // namespace gpass::exec::cpu_detail
