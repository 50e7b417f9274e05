// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file ml.hpp
/// ONNX's other standard domains: the classical machine-learning ops of `ai.onnx.ml`
/// (ArrayFeatureExtractor, Binarizer, LabelEncoder 1, 2 and 4, TreeEnsemble 5) and the
/// optimizer updates of `ai.onnx.preview.training` (Adagrad, Adam, Momentum).

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <gpass/ops/onnx/common.hpp>

namespace gpass {

/// Registers the `ai.onnx.ml` and `ai.onnx.preview.training` ops into `r` (see the file comment).
void register_onnx_ml_ops(op_registry& r);

namespace detail::onnx_ops {

using namespace gpass::onnx_shape;

/// ArrayFeatureExtractor: the elements of X's last axis picked by the indices Y (all of Y's
/// elements, in order): X's leading dims then the number of indices; a 1-D X gives one row
/// (as ONNX Runtime and the reference do).
inline void array_feature_extractor_infer(infer_context& c) {
  const shape x = c.input_shape(0), y = c.input_shape(1);
  dim count;
  if (y.has_rank()) {
    count = dim(1);
    for (const auto& d : y.dims()) count = mul_dims(count, d);
  }
  if (!x.has_rank()) return;
  if (x.rank() == 0) c.fail("X must have rank >= 1");
  std::vector<dim> out;
  if (x.rank() == 1) out.push_back(dim(1));
  else out.assign(x.dims().begin(), x.dims().end() - 1);
  out.push_back(count);
  c.set_shape(0, shape(std::move(out)));
}

/// LabelEncoder (2 and 4): output of X's shape; its element type is the one of the values
/// attribute that is set (values_tensor's own type in 4).
inline void label_encoder_infer(infer_context& c) {
  dtype out = dtype::undefined;
  int set = 0;
  if (c.has_attr("values_strings")) out = dtype::string, ++set;
  if (c.has_attr("values_int64s")) out = dtype::int64, ++set;
  if (c.has_attr("values_floats")) out = dtype::f32, ++set;
  if (const attribute* a = c.attr("values_tensor")) {
    if (!a->is<tensor>()) c.fail("attribute 'values_tensor' must be a tensor");
    out = a->as<tensor>().element_type();
    ++set;
  }
  if (set != 1) c.fail("exactly one of the values_* attributes must be set, " + std::to_string(set) + " are");
  int keys = 0;
  for (const char* k : {"keys_strings", "keys_int64s", "keys_floats", "keys_tensor"}) keys += c.has_attr(k) ? 1 : 0;
  if (keys != 1) c.fail("exactly one of the keys_* attributes must be set, " + std::to_string(keys) + " are");
  c.set_tensor(0, out, c.input_shape(0));
}

/// LabelEncoder 1: strings to their index in classes_strings, or int64 indices to strings.
inline void label_encoder_1_infer(infer_context& c) {
  const dtype in = c.input_dtype(0);
  if (in == dtype::undefined) return;
  if (in != dtype::string && in != dtype::int64) c.fail("X must be string or int64");
  c.set_tensor(0, in == dtype::string ? dtype::int64 : dtype::string, c.input_shape(0));
}

/// TreeEnsemble: [N, n_targets] of X's type; X is [N, F].
inline void tree_ensemble_infer(infer_context& c) {
  const shape x = c.input_shape(0);
  if (x.has_rank() && x.rank() != 2) c.fail("X must be 2-D [N, F], got " + x.to_string());
  const std::int64_t targets = c.attr_int("n_targets", 1);
  if (targets <= 0) c.fail("n_targets must be positive, got " + std::to_string(targets));
  c.set_shape(0, shape{x.has_rank() ? x[0] : dim(), dim(targets)});
}

/// The preview training optimizers: inputs R, T, then `groups` groups of n tensors each
/// (X, G, state...); outputs the groups other than the gradients (X_new, state_new...), each
/// output of the type of its input.
inline void optimizer_infer(infer_context& c, std::size_t groups) {
  const std::size_t n_in = c.num_inputs();
  if (n_in < 2 + groups || (n_in - 2) % groups != 0)
    c.fail("expects R, T and " + std::to_string(groups) + " groups of equally many tensors, has " + std::to_string(n_in) +
           " inputs");
  const std::size_t n = (n_in - 2) / groups;
  if (c.num_outputs() != n * (groups - 1))
    c.fail("expects " + std::to_string(n * (groups - 1)) + " outputs for " + std::to_string(n) + " tensors, has " +
           std::to_string(c.num_outputs()));
  for (std::size_t b = 0; b + 1 < groups; ++b) {
    const std::size_t group = b == 0 ? 0 : b + 1;  // skip the gradients
    for (std::size_t i = 0; i < n; ++i) c.set_output(b * n + i, c.input_type(2 + group * n + i));
  }
}

}  // namespace detail::onnx_ops

}  // namespace gpass

inline void gpass::register_onnx_ml_ops(op_registry& r) {
  using namespace detail::onnx_ops;
  auto add = [&](const onnx_op& o, const char* domain) {
    op_schema s = o.build();
    s.domain = domain;
    r.add(std::move(s));
  };
  const char* ml = "ai.onnx.ml";
  const std::vector<dtype> numbers{dtype::f32, dtype::f64, dtype::int64, dtype::int32};
  std::vector<dtype> afe = numbers;
  afe.push_back(dtype::string);
  add(onnx_op("ArrayFeatureExtractor", 1).in("X:T").in("Y:i64").out("Z:T").tc("T", afe).infer(array_feature_extractor_infer), ml);
  add(onnx_op("Binarizer", 1).in("X:T").out("Y:T").tc("T", numbers).attr("threshold", "float", 0.0).infer(same_as_input0), ml);
  add(onnx_op("LabelEncoder", 1).until(1).in("X:T1").out("Y:T2").tc("T1", {dtype::string, dtype::int64})
          .tc("T2", {dtype::string, dtype::int64}).opt("classes_strings", "strings").attr("default_int64", "int", std::int64_t{-1})
          .attr("default_string", "string", "_Unused").infer(label_encoder_1_infer),
      ml);
  const std::vector<dtype> le2{dtype::string, dtype::int64, dtype::f32};
  add(onnx_op("LabelEncoder", 2).until(3).in("X:T1").out("Y:T2").tc("T1", le2).tc("T2", le2)
          .attr("default_float", "float", -0.0).attr("default_int64", "int", std::int64_t{-1})
          .attr("default_string", "string", "_Unused").opt("keys_floats", "floats").opt("keys_int64s", "ints")
          .opt("keys_strings", "strings").opt("values_floats", "floats").opt("values_int64s", "ints")
          .opt("values_strings", "strings").infer(label_encoder_infer),
      ml);
  const std::vector<dtype> le4{dtype::string, dtype::int64, dtype::f32, dtype::int32, dtype::int16, dtype::f64};
  add(onnx_op("LabelEncoder", 4).in("X:T1").out("Y:T2").tc("T1", le4).tc("T2", le4)
          .attr("default_float", "float", -0.0).attr("default_int64", "int", std::int64_t{-1})
          .attr("default_string", "string", "_Unused").opt("default_tensor", "tensor").opt("keys_floats", "floats")
          .opt("keys_int64s", "ints").opt("keys_strings", "strings").opt("keys_tensor", "tensor")
          .opt("values_floats", "floats").opt("values_int64s", "ints").opt("values_strings", "strings")
          .opt("values_tensor", "tensor").infer(label_encoder_infer),
      ml);
  add(onnx_op("TreeEnsemble", 5).in("X:T").out("Y:T").tc("T", {dtype::f32, dtype::f64, dtype::f16})
          .attr("aggregate_function", "int", std::int64_t{1}).opt("leaf_targetids", "ints").opt("leaf_weights", "tensor")
          .opt("membership_values", "tensor").attr("n_targets", "int", std::int64_t{1}).opt("nodes_falseleafs", "ints")
          .opt("nodes_falsenodeids", "ints").opt("nodes_featureids", "ints").opt("nodes_hitrates", "tensor")
          .opt("nodes_missing_value_tracks_true", "ints").opt("nodes_modes", "tensor").opt("nodes_splits", "tensor")
          .opt("nodes_trueleafs", "ints").opt("nodes_truenodeids", "ints").attr("post_transform", "int", std::int64_t{0})
          .opt("tree_roots", "ints").infer(tree_ensemble_infer),
      ml);

  const char* training = "ai.onnx.preview.training";
  const std::vector<dtype> fl{dtype::f32, dtype::f64};
  auto optimizer = [&](const char* name, std::size_t groups) {
    return onnx_op(name, 1).in("R:T1").in("T:T2").in("inputs~:T3").out("outputs~:T3").tc("T1", fl).tc("T2", {dtype::int64})
        .tc("T3", fl).infer([groups](infer_context& c) { optimizer_infer(c, groups); });
  };
  add(optimizer("Adagrad", 3).attr("decay_factor", "float", 0.0).attr("epsilon", "float", 1e-6)
          .attr("norm_coefficient", "float", 0.0),
      training);
  add(optimizer("Adam", 4).attr("alpha", "float", 0.9).attr("beta", "float", 0.999).attr("epsilon", "float", 1e-6)
          .attr("norm_coefficient", "float", 0.0).attr("norm_coefficient_post", "float", 0.0),
      training);
  add(optimizer("Momentum", 3).req("alpha", "float").req("beta", "float").req("mode", "string").req("norm_coefficient", "float"),
      training);
}
