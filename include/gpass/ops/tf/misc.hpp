// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file misc.hpp
/// TensorFlow sources, identities and assertions: Const, Placeholder, PlaceholderWithDefault,
/// Identity, IdentityN, StopGradient, PreventGradient, Snapshot, CheckNumerics, EnsureShape,
/// NoOp, Assert, PartitionedCall, StatefulPartitionedCall (inferred through the called
/// function); the random ops (stateless: StatelessRandomUniform/Normal/UniformInt/
/// UniformFullInt, StatelessTruncatedNormal and their V2 forms, StatelessRandomGetKeyCounter,
/// StatelessRandomGetKeyCounterAlg, StatelessRandomGetAlg; stateful, so never folded:
/// RandomUniform, RandomStandardNormal, TruncatedNormal, RandomUniformInt); the element-wise
/// string ops AsString, StringToNumber, StringLower, StringUpper, StringStrip, StringLength. Const has its value; identities pass their input's value on; placeholders
/// name their unknown dims with fresh symbols (`x_d0`), so fed values have symbolic shapes.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <gpass/ops/tf/common.hpp>

namespace gpass {

/// Registers the TensorFlow sources, identities and assertions into `r` (see the file comment).
void register_tf_misc_ops(op_registry& r);

namespace detail::tf_ops {

// A random op: the shape is input 0's value (a vector of its length when not known).
inline void random_infer(infer_context& c) { set_shape_from_input(c, 0, 0); }

// Placeholder: the `shape` attribute (unknown rank when absent), unknown dims named.
inline void placeholder_infer(infer_context& c) {
  shape s;
  if (const attribute* a = c.attr("shape"); a && a->is<shape>()) s = a->as<shape>();
  c.set_shape(0, with_fresh_symbols(c, s));
}

// PlaceholderWithDefault: the `shape` attribute; the default must fit it.
inline void placeholder_with_default_infer(infer_context& c) {
  shape s;
  if (const attribute* a = c.attr("shape"); a && a->is<shape>()) s = a->as<shape>();
  shape in = c.input_shape(0);
  if (s.has_rank() && in.has_rank()) {
    if (s.rank() != in.rank())
      c.fail("default value of shape " + in.to_string() + " does not have the rank of shape " + s.to_string());
    for (std::size_t i = 0; i < s.rank(); ++i)
      if (s[i].is_known()) c.unify(s[i], in[i], "(default value, dim " + std::to_string(i) + ")");
  }
  c.set_shape(0, with_fresh_symbols(c, s));
}

inline void ensure_shape_infer(infer_context& c) {
  c.set_output(0, c.input_type(0));
  const attribute* a = c.attr("shape");
  if (!a || !a->is<shape>() || !a->as<shape>().has_rank()) return;
  shape want = a->as<shape>();
  shape in = c.input_shape(0);
  if (!in.has_rank()) {
    c.set_shape(0, want);
    return;
  }
  if (in.rank() != want.rank()) c.fail("input shape " + in.to_string() + " is not " + want.to_string());
  for (std::size_t i = 0; i < in.rank(); ++i) in[i] = c.unify(in[i], want[i], "(dim " + std::to_string(i) + ")");
  c.set_shape(0, in);
}

inline void identity_n_infer(infer_context& c) {
  for (std::size_t k = 0; k < c.num_outputs() && k < c.num_inputs(); ++k) c.set_output(k, c.input_type(k));
}
inline void identity_n_value(infer_context& c) {
  for (std::size_t k = 0; k < c.num_outputs() && k < c.num_inputs(); ++k) c.set_value(k, c.input_value(k));
}

// PartitionedCall / StatefulPartitionedCall: the results of inferring function `f` on the
// arguments; the dtypes of `Tout` when the function cannot be inferred.
inline void call_infer(infer_context& c) {
  auto f = c.attr_function("f");
  std::vector<port_info> args;
  for (std::size_t i = 0; i < c.num_inputs(); ++i) args.push_back(c.input(i));
  std::vector<port_info> r = f ? c.call(*f, std::move(args)) : std::vector<port_info>{};
  if (!r.empty() && r.size() != c.num_outputs())
    c.fail("function '" + *f + "' has " + std::to_string(r.size()) + " results, the node " +
           std::to_string(c.num_outputs()) + " outputs");
  for (std::size_t k = 0; k < r.size(); ++k) c.output(k) = r[k];
  if (const attribute* a = c.attr("Tout"); a && a->is<std::vector<dtype>>()) {
    const auto& ts = a->as<std::vector<dtype>>();
    for (std::size_t k = 0; k < ts.size() && k < c.num_outputs(); ++k) {
      const type& t = c.output(k).type;
      if (t.is_unknown() || (t.is_tensor() && t.tensor().element == dtype::undefined)) c.set_dtype(k, ts[k]);
      else if (t.is_tensor() && t.tensor().element != ts[k])
        c.fail("result " + std::to_string(k) + " of '" + f.value_or("?") + "' is " + std::string(to_string(t.tensor().element)) +
               ", Tout says " + std::string(to_string(ts[k])));
    }
  }
}

}  // namespace detail::tf_ops
}  // namespace gpass

inline void gpass::register_tf_misc_ops(op_registry& r) {
  using namespace detail::tf_ops;
  using detail::onnx_ops::constant_infer;

  tf_op("Const").out("output:dtype").type_attr("dtype").req("value", "tensor").infer(constant_infer)
      .doc("A constant tensor (attribute `value`).").add(r);
  tf_op("Placeholder").out("output:dtype").type_attr("dtype").opt("shape", "shape").infer(placeholder_infer)
      .traits(op_traits{.interface = true}).doc("A graph input fed at run time.").add(r);
  tf_op("PlaceholderWithDefault").in("input:dtype").out("output:dtype").type_attr("dtype").opt("shape", "shape")
      .infer(placeholder_with_default_infer).traits(op_traits{.interface = true})
      .doc("A graph input that is its input unless fed.").add(r);

  for (const char* n : {"Identity", "StopGradient", "PreventGradient", "Snapshot"})
    tf_op(n).in("input:T").out("output:T").type_attr("T").infer(same_as_input0).propagate(detail::onnx_ops::identity_value)
        .backward(same_as_output0_backward).doc("Its input (gradients aside).").add(r);
  tf_op("CheckNumerics").in("tensor:T").out("output:T").type_attr("T").opt("message", "string").infer(same_as_input0)
      .propagate(detail::onnx_ops::identity_value).backward(same_as_output0_backward)
      .traits(op_traits{.side_effects = true}).doc("Its input; fails at run time on NaN or Inf.").add(r);
  tf_op("EnsureShape").in("input:T").out("output:T").type_attr("T").opt("shape", "shape").infer(ensure_shape_infer)
      .propagate(detail::onnx_ops::identity_value).doc("Its input, whose shape must be `shape`.").add(r);
  tf_op("IdentityN").in("input~:T").out("output~:T").opt("T", "dtypes").infer(identity_n_infer)
      .propagate(identity_n_value).doc("Its inputs, one output each.").add(r);
  for (const char* n : {"PartitionedCall", "StatefulPartitionedCall"}) {
    const bool stateful = std::string_view(n) == "StatefulPartitionedCall";
    tf_op(n).in("args~0:Tin").out("output~0:Tout").req("f", "func").opt("Tin", "dtypes").opt("Tout", "dtypes")
        .attr("config", "string", std::string()).attr("config_proto", "string", std::string())
        .attr("executor_type", "string", std::string()).infer(call_infer)
        .traits(op_traits{.side_effects = stateful, .stateful = stateful})
        .doc("A call of the library function `f` on the arguments; its results are the outputs.").add(r);
  }
  // random ops (kernels: exec/eigen_cpu/kernels/tf_random.hpp)
  const auto f32 = dtype::f32, i32 = dtype::int32, i64 = dtype::int64;
  for (const char* n : {"StatelessRandomUniform", "StatelessRandomNormal", "StatelessTruncatedNormal"})
    tf_op(n).in("shape:T").in("seed:Tseed").out("output:dtype").type_attr("dtype", f32).type_attr("T", i32)
        .type_attr("Tseed", i64).infer(random_infer).add(r);
  tf_op("StatelessRandomUniformInt").in("shape:T").in("seed:Tseed").in("minval:dtype").in("maxval:dtype")
      .out("output:dtype").type_attr("dtype").type_attr("T", i32).type_attr("Tseed", i64).infer(random_infer).add(r);
  tf_op("StatelessRandomUniformFullInt").in("shape:T").in("seed:Tseed").out("output:dtype").type_attr("dtype", dtype::uint64)
      .type_attr("T", i32).type_attr("Tseed", i64).infer(random_infer).add(r);
  for (const char* n : {"StatelessRandomUniformV2", "StatelessRandomNormalV2", "StatelessTruncatedNormalV2"})
    tf_op(n).in("shape:Tshape").in("key:u64").in("counter:u64").in("alg:i32").out("output:dtype").type_attr("dtype", f32)
        .type_attr("Tshape", i32).infer(random_infer).add(r);
  tf_op("StatelessRandomUniformIntV2").in("shape:Tshape").in("key:u64").in("counter:u64").in("alg:i32").in("minval:dtype")
      .in("maxval:dtype").out("output:dtype").type_attr("dtype").type_attr("Tshape", i32).infer(random_infer).add(r);
  tf_op("StatelessRandomUniformFullIntV2").in("shape:Tshape").in("key:u64").in("counter:u64").in("alg:i32")
      .out("output:dtype").type_attr("dtype", dtype::uint64).type_attr("Tshape", i32).infer(random_infer).add(r);
  tf_op("StatelessRandomGetKeyCounter").in("seed:Tseed").out("key:u64").out("counter:u64").type_attr("Tseed", i64)
      .infer([](infer_context& c) {
        c.set_shape(0, shape{dim(1)});
        c.set_shape(1, shape{dim(2)});
      }).add(r);
  tf_op("StatelessRandomGetKeyCounterAlg").in("seed:Tseed").out("key:u64").out("counter:u64").out("alg:i32")
      .type_attr("Tseed", i64).infer([](infer_context& c) {
        c.set_shape(0, shape{dim(1)});
        c.set_shape(1, shape{dim(2)});
        c.set_shape(2, shape::scalar());
      }).add(r);
  tf_op("StatelessRandomGetAlg").out("alg:i32").infer([](infer_context& c) { c.set_shape(0, shape::scalar()); }).add(r);
  const op_traits stateful_random{.stateful = true};
  for (const char* n : {"RandomUniform", "RandomStandardNormal", "TruncatedNormal"})
    tf_op(n).in("shape:T").out("output:dtype").type_attr("dtype", f32).type_attr("T", i32)
        .attr("seed", "int", std::int64_t{0}).attr("seed2", "int", std::int64_t{0}).infer(random_infer)
        .traits(stateful_random).add(r);
  tf_op("RandomUniformInt").in("shape:T").in("minval:Tout").in("maxval:Tout").out("output:Tout").type_attr("Tout")
      .type_attr("T", i32).attr("seed", "int", std::int64_t{0}).attr("seed2", "int", std::int64_t{0}).infer(random_infer)
      .traits(stateful_random).add(r);

  // element-wise string ops: AsString (numbers, bools and strings printed), StringToNumber,
  // StringLower / StringUpper, StringStrip, StringLength
  tf_op("AsString").in("input:T").out("output:str").type_attr("T").attr("precision", "int", std::int64_t{-1})
      .attr("scientific", "bool", false).attr("shortest", "bool", false).attr("width", "int", std::int64_t{-1})
      .attr("fill", "string", std::string()).infer(shape_as_input0).add(r);
  tf_op("StringToNumber").in("string_tensor:str").out("output:out_type").type_attr("out_type", f32)
      .infer(shape_as_input0).add(r);
  for (const char* n : {"StringLower", "StringUpper"})
    tf_op(n).in("input:str").out("output:str").attr("encoding", "string", std::string()).infer(shape_as_input0).add(r);
  tf_op("StringStrip").in("input:str").out("output:str").infer(shape_as_input0).add(r);
  tf_op("StringLength").in("input:str").out("output:i32").attr("unit", "string", "BYTE").infer(shape_as_input0).add(r);

  tf_op("NoOp").num_inputs(0, 0).num_outputs(0, 0).doc("Nothing (a target for control edges).").add(r);
  tf_op("Assert").in("condition:bool").in("data~0:T").num_outputs(0, 0).opt("T", "dtypes").attr("summarize", "int", std::int64_t{3})
      .traits(op_traits{.side_effects = true}).doc("Fails at run time when `condition` is false.").add(r);
}

// the definitions of the ONNX functions used above (see tf/detail/onnx_functions.hpp)
#include <gpass/ops/onnx/shape_ops.hpp>
#include <gpass/ops/onnx/elementwise.hpp>
