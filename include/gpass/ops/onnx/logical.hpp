// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file logical.hpp
/// ONNX casts, comparisons and logical ops: Cast, CastLike, Equal, Greater, Less,
/// GreaterOrEqual, LessOrEqual, And, Or, Xor, Not, IsNaN, IsInf, Where; with value
/// propagation (Cast keeps integer dims; comparisons and Where work on known and symbolic
/// elements: `Equal(n, n)` is true).

#include <cmath>
#include <cstdint>
#include <vector>

#include <gpass/ops/onnx/common.hpp>

namespace gpass {

/// Registers the ONNX cast, comparison and logical ops into `r` (see the file comment).
void register_onnx_logical_ops(op_registry& r);

namespace detail::onnx_ops {

using namespace gpass::onnx_shape;

inline void cast_infer(infer_context& c) {
  dtype to = dtype::undefined;
  if (c.op() == "CastLike") to = c.input_dtype(1);
  else if (auto d = c.attr_dtype("to")) to = *d;
  c.set_tensor(0, to, c.input_shape(0));
}

inline void cast_value(infer_context& c) {
  const type& t = c.output(0).type;
  if (!t.is_tensor()) return;
  dtype to = t.tensor().element, from = c.input_dtype(0);
  if (to == dtype::undefined || from == dtype::undefined) return;
  if ((is_integer(to) || to == dtype::bool_) && (is_integer(from) || from == dtype::bool_)) {
    if (to == dtype::bool_) {
      eval_elementwise(c,
                       [](const std::vector<dim>& a) -> dim {
                         if (a[0].is_known()) return dim(a[0].value() != 0 ? 1 : 0);
                         return dim();
                       },
                       nullptr);
      return;
    }
    if (auto d = c.input_dims(0)) {
      // an integer value stays the same integer (sizes fit in every integer type that holds them)
      if (c.input_value(0).is_known()) {
        eval_elementwise(c, [](const std::vector<dim>& a) { return a[0]; }, nullptr);
      } else {
        c.set_dims_value(0, std::move(*d));
      }
    }
    return;
  }
  if (to == dtype::string || from == dtype::string) return;
  eval_elementwise(c, nullptr, [to](const std::vector<double>& a) {
    if (is_integer(to)) return std::trunc(a[0]);
    return a[0];
  });
}

inline dim bool_dim(bool b) { return dim(b ? 1 : 0); }

inline void compare_value(infer_context& c, char op) {
  eval_elementwise(c,
                   [op](const std::vector<dim>& a) -> dim {
                     if (op == '=' && a[0] == a[1] && !a[0].is_unknown()) return bool_dim(true);
                     if (!a[0].is_known() || !a[1].is_known()) {
                       // n vs n+1: different for sure
                       if (op == '=' && !a[0].is_unknown() && !a[1].is_unknown()) {
                         dim d = sub_dims(a[0], a[1]);
                         if (d.is_known() && d.value() != 0) return bool_dim(false);
                       }
                       return dim();
                     }
                     std::int64_t x = a[0].value(), y = a[1].value();
                     switch (op) {
                       case '=': return bool_dim(x == y);
                       case '>': return bool_dim(x > y);
                       case '<': return bool_dim(x < y);
                       case 'g': return bool_dim(x >= y);
                       case 'l': return bool_dim(x <= y);
                       default: return dim();
                     }
                   },
                   [op](const std::vector<double>& a) -> double {
                     switch (op) {
                       case '=': return a[0] == a[1];
                       case '>': return a[0] > a[1];
                       case '<': return a[0] < a[1];
                       case 'g': return a[0] >= a[1];
                       case 'l': return a[0] <= a[1];
                       default: return 0;
                     }
                   });
}

inline void logic_value(infer_context& c, char op) {
  eval_elementwise(c,
                   [op](const std::vector<dim>& a) -> dim {
                     if (op == '!') return a[0].is_known() ? bool_dim(a[0].value() == 0) : dim();
                     if (!a[0].is_known() || !a[1].is_known()) return dim();
                     bool x = a[0].value() != 0, y = a[1].value() != 0;
                     return bool_dim(op == '&' ? (x && y) : op == '|' ? (x || y) : (x != y));
                   },
                   nullptr);
}

inline void where_value(infer_context& c) {
  eval_elementwise(c,
                   [](const std::vector<dim>& a) -> dim {
                     if (!a[0].is_known()) return a[1] == a[2] ? a[1] : dim();
                     return a[0].value() != 0 ? a[1] : a[2];
                   },
                   [](const std::vector<double>& a) { return a[0] != 0 ? a[1] : a[2]; });
}

}  // namespace detail::onnx_ops
}  // namespace gpass

inline void gpass::register_onnx_logical_ops(op_registry& r) {
  using namespace detail::onnx_ops;
  namespace ot = onnx_types;
  const auto all = ot::all();
  // Cast-19 adds `saturate`, Cast-24 `round_mode`: they apply to the float8 / float8e8m0
  // targets only (gpass/core/low_precision.hpp); the other types cast alike in every version
  onnx_op("Cast", 1).until(18).in("input:T1").out("output:T2").tc("T1", all).tc("T2", all).req("to", "int")
      .infer(cast_infer).propagate(cast_value).add(r);
  onnx_op("Cast", 19).until(23).in("input:T1").out("output:T2").tc("T1", all).tc("T2", all).req("to", "int")
      .attr("saturate", "int", std::int64_t{1}).infer(cast_infer).propagate(cast_value).add(r);
  onnx_op("Cast", 24).in("input:T1").out("output:T2").tc("T1", all).tc("T2", all).req("to", "int")
      .attr("saturate", "int", std::int64_t{1}).attr("round_mode", "string", "up")
      .infer(cast_infer).propagate(cast_value).add(r);
  onnx_op("CastLike", 15).until(18).in("input:T1").in("target_type:T2").out("output:T2").tc("T1", all).tc("T2", all)
      .infer(cast_infer).propagate(cast_value).add(r);
  onnx_op("CastLike", 19).until(23).in("input:T1").in("target_type:T2").out("output:T2").tc("T1", all)
      .tc("T2", all).attr("saturate", "int", std::int64_t{1}).infer(cast_infer).propagate(cast_value).add(r);
  onnx_op("CastLike", 24).in("input:T1").in("target_type:T2").out("output:T2").tc("T1", all).tc("T2", all)
      .attr("saturate", "int", std::int64_t{1}).attr("round_mode", "string", "up")
      .infer(cast_infer).propagate(cast_value).add(r);

  struct cmp {
    const char* name;
    int since;
    char op;
  };
  for (auto x : {cmp{"Equal", 1, '='}, cmp{"Greater", 1, '>'}, cmp{"Less", 1, '<'}, cmp{"GreaterOrEqual", 12, 'g'},
                 cmp{"LessOrEqual", 12, 'l'}}) {
    char op = x.op;
    infer_function prop = [op](infer_context& c) { compare_value(c, op); };
    if (x.since < 7)
      onnx_op(x.name, 1).until(6).in("A:T").in("B:T").out("C:bool").tc("T", all)
          .attr("broadcast", "int", std::int64_t{0}).opt("axis", "int").infer(legacy_binary).propagate(prop).add(r);
    onnx_op(x.name, std::max(x.since, 7)).in("A:T").in("B:T").out("C:bool").tc("T", all).infer(numpy_broadcast)
        .propagate(prop).add(r);
  }
  for (auto x : {cmp{"And", 1, '&'}, cmp{"Or", 1, '|'}, cmp{"Xor", 1, '^'}}) {
    char op = x.op;
    infer_function prop = [op](infer_context& c) { logic_value(c, op); };
    onnx_op(x.name, 1).until(6).in("A:T").in("B:T").out("C:bool").tc("T", ot::boolean())
        .attr("broadcast", "int", std::int64_t{0}).opt("axis", "int").infer(legacy_binary).propagate(prop).add(r);
    onnx_op(x.name, 7).in("A:T").in("B:T").out("C:bool").tc("T", ot::boolean()).infer(numpy_broadcast)
        .propagate(prop).add(r);
  }
  onnx_op("Not", 1).in("X:T").out("Y:T").tc("T", ot::boolean()).infer(same_as_input0)
      .propagate([](infer_context& c) { logic_value(c, '!'); }).add(r);
  onnx_op("IsNaN", 9).in("X:T1").out("Y:bool").tc("T1", ot::floats()).infer(shape_as_input0).add(r);
  onnx_op("IsInf", 10).in("X:T1").out("Y:bool").tc("T1", ot::floats()).attr("detect_negative", "int", std::int64_t{1})
      .attr("detect_positive", "int", std::int64_t{1}).infer(shape_as_input0).add(r);
  onnx_op("Where", 9).in("condition:bool").in("X:T").in("Y:T").out("output:T").tc("T", all).infer(numpy_broadcast)
      .propagate(where_value).add(r);
}
