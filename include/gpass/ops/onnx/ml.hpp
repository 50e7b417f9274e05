// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file ml.hpp
/// ONNX's other standard domains: the classical machine-learning ops of `ai.onnx.ml`
/// (ArrayFeatureExtractor, Binarizer, LabelEncoder 1, 2 and 4, TreeEnsemble 5; the models and
/// preprocessing scikit-learn's converters write: LinearClassifier, LinearRegressor,
/// SVMClassifier, SVMRegressor, TreeEnsembleClassifier and TreeEnsembleRegressor 1 and 3,
/// Scaler, Normalizer, Imputer, OneHotEncoder, FeatureVectorizer, CategoryMapper; CastMap,
/// DictVectorizer and ZipMap only to refuse them clearly, gpass having no map type) and the
/// optimizer updates of `ai.onnx.preview.training` (Adagrad, Adam, Momentum).

#include <cstddef>
#include <cstdint>
#include <optional>
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

// ---- the classic models (scikit-learn's converters) ----------------------------------------

/// The rows N of a classic model's X: [N, F], or [F] as one row; unknown with X's rank.
inline dim classic_rows(infer_context& c) {
  const shape x = c.input_shape(0);
  if (!x.has_rank()) return dim();
  if (x.rank() != 1 && x.rank() != 2) c.fail("X must be 2-D [N, F] (or 1-D [F]), got " + x.to_string());
  return x.rank() == 1 ? dim(1) : x[0];
}

/// How many values list attribute `n` has (0 when absent).
inline std::size_t list_size(infer_context& c, const char* n) {
  const attribute* a = c.attr(n);
  if (!a) return 0;
  if (a->is<std::vector<std::string>>()) return a->as<std::vector<std::string>>().size();
  if (a->is<std::vector<std::int64_t>>()) return a->as<std::vector<std::int64_t>>().size();
  if (a->is<std::vector<double>>()) return a->as<std::vector<double>>().size();
  if (a->is<tensor>()) return static_cast<std::size_t>(a->as<tensor>().size());
  return 1;
}

/// post_transform must be one of the five transforms.
inline void check_post_transform(infer_context& c) {
  const std::string p = c.attr_string("post_transform", "NONE");
  if (p != "NONE" && p != "SOFTMAX" && p != "LOGISTIC" && p != "SOFTMAX_ZERO" && p != "PROBIT")
    c.fail("post_transform must be NONE, SOFTMAX, LOGISTIC, SOFTMAX_ZERO or PROBIT, got '" + p + "'");
}

/// A classifier's outputs: Y [N] of its labels' type (the ints or the strings attribute set),
/// Z f32 [N, columns]; returns the number of labels.
inline std::size_t classifier_infer(infer_context& c, const char* ints, const char* strings, std::optional<std::int64_t> columns) {
  check_post_transform(c);
  const std::size_t ni = list_size(c, ints), ns = list_size(c, strings);
  if ((ni == 0) == (ns == 0))
    c.fail(std::string("exactly one of '") + ints + "' and '" + strings + "' must be set (and not empty)");
  const dim n = classic_rows(c);
  const std::size_t labels = ni + ns;
  c.set_tensor(0, ns ? dtype::string : dtype::int64, shape{n});
  c.set_tensor(1, dtype::f32, shape{n, columns ? dim(*columns) : dim(static_cast<std::int64_t>(labels))});
  return labels;
}

/// A regressor's output: f32 [N, targets].
inline void regressor_infer(infer_context& c, std::optional<std::int64_t> targets) {
  check_post_transform(c);
  if (targets && *targets <= 0) c.fail("the number of targets must be positive, got " + std::to_string(*targets));
  c.set_tensor(0, dtype::f32, shape{classic_rows(c), targets ? dim(*targets) : dim()});
}

/// SVMClassifier's score columns: one per class, or one per class pair for support vectors
/// without probabilities (two for two classes).
inline void svm_classifier_infer(infer_context& c) {
  std::int64_t vectors = 0;
  if (auto v = c.attr_ints("vectors_per_class"))
    for (auto k : *v) {
      const auto next = checked_add(vectors, k);
      if (!next) c.fail("vectors_per_class sums past int64 (adding " + std::to_string(k) + " to " + std::to_string(vectors) + ")");
      vectors = *next;
    }
  const auto labels = static_cast<std::int64_t>(list_size(c, "classlabels_ints") + list_size(c, "classlabels_strings"));
  std::optional<std::int64_t> columns;
  if (vectors > 0 && list_size(c, "prob_a") == 0) columns = labels == 2 ? 2 : labels * (labels - 1) / 2;
  classifier_infer(c, "classlabels_ints", "classlabels_strings", columns);
}

/// OneHotEncoder: f32, X's shape and the categories.
inline void one_hot_encoder_infer(infer_context& c) {
  const std::size_t ni = list_size(c, "cats_int64s"), ns = list_size(c, "cats_strings");
  if ((ni == 0) == (ns == 0)) c.fail("exactly one of cats_int64s and cats_strings must be set (and not empty)");
  const dtype in = c.input_dtype(0);
  if (in != dtype::undefined && (in == dtype::string) != (ns > 0))
    c.fail(std::string("X of element type ") + std::string(to_string(in)) + " needs " + (ns ? "cats_int64s" : "cats_strings"));
  const shape x = c.input_shape(0);
  if (!x.has_rank()) return c.set_tensor(0, dtype::f32, shape());
  std::vector<dim> out(x.dims().begin(), x.dims().end());
  out.push_back(dim(static_cast<std::int64_t>(ni + ns)));
  c.set_tensor(0, dtype::f32, shape(std::move(out)));
}

/// FeatureVectorizer: f32 [N, sum of inputdimensions], N from the first input.
inline void feature_vectorizer_infer(infer_context& c) {
  const auto dims = c.attr_ints("inputdimensions");
  if (!dims) c.fail("attribute 'inputdimensions' is required");
  if (dims->size() != c.num_inputs())
    c.fail("has " + std::to_string(c.num_inputs()) + " inputs for " + std::to_string(dims->size()) + " inputdimensions");
  std::int64_t total = 0;
  for (auto d : *dims) {
    if (d < 0) c.fail("inputdimensions has a negative entry " + std::to_string(d));
    const auto next = checked_add(total, d);
    if (!next) c.fail("inputdimensions sum past int64 (adding " + std::to_string(d) + " to " + std::to_string(total) + ")");
    total = *next;
  }
  const shape x = c.input_shape(0);
  const dim n = !x.has_rank() ? dim() : x.rank() <= 1 ? dim(1) : x[0];
  c.set_tensor(0, dtype::f32, shape{n, dim(total)});
}

/// CategoryMapper: strings to int64 and back, X's shape.
inline void category_mapper_infer(infer_context& c) {
  if (list_size(c, "cats_int64s") != list_size(c, "cats_strings")) c.fail("cats_int64s and cats_strings differ in length");
  const dtype in = c.input_dtype(0);
  if (in == dtype::undefined) return;
  c.set_tensor(0, in == dtype::string ? dtype::int64 : dtype::string, c.input_shape(0));
}

/// CastMap, DictVectorizer and ZipMap take or make maps, which gpass has no type for: their
/// output stays of unknown type (a graph holding them still imports, verifies, optimizes and
/// exports; running one fails for want of a kernel), with a note that says why.
inline void map_op_infer(infer_context& c) {
  const std::string op(c.op());
  c.note(op + (op == "ZipMap" ? " makes a sequence of maps" : " reads a map") +
         ", and gpass has no map type: its output type is unknown and it has no kernel (unsupported op)" +
         (op == "ZipMap" ? "; export the classifier without it (skl2onnx: options={'zipmap': False}) and read its scores tensor" : ""));
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

  // the classic models and their preprocessing
  add(onnx_op("LinearClassifier", 1).in("X:T1").out("Y:T2").out("Z:f32").tc("T1", numbers).tc("T2", {dtype::string, dtype::int64})
          .opt("classlabels_ints", "ints").opt("classlabels_strings", "strings").req("coefficients", "floats")
          .opt("intercepts", "floats").attr("multi_class", "int", std::int64_t{0}).attr("post_transform", "string", "NONE")
          .infer([](infer_context& c) { classifier_infer(c, "classlabels_ints", "classlabels_strings", std::nullopt); }),
      ml);
  add(onnx_op("LinearRegressor", 1).in("X:T").out("Y:f32").tc("T", numbers).opt("coefficients", "floats")
          .opt("intercepts", "floats").attr("post_transform", "string", "NONE").attr("targets", "int", std::int64_t{1})
          .infer([](infer_context& c) { regressor_infer(c, c.attr_int("targets", 1)); }),
      ml);
  add(onnx_op("SVMClassifier", 1).in("X:T1").out("Y:T2").out("Z:f32").tc("T1", numbers).tc("T2", {dtype::string, dtype::int64})
          .opt("classlabels_ints", "ints").opt("classlabels_strings", "strings").opt("coefficients", "floats")
          .opt("kernel_params", "floats").attr("kernel_type", "string", "LINEAR").attr("post_transform", "string", "NONE")
          .opt("prob_a", "floats").opt("prob_b", "floats").opt("rho", "floats").opt("support_vectors", "floats")
          .opt("vectors_per_class", "ints").infer(svm_classifier_infer),
      ml);
  add(onnx_op("SVMRegressor", 1).in("X:T").out("Y:f32").tc("T", numbers).opt("coefficients", "floats").opt("kernel_params", "floats")
          .attr("kernel_type", "string", "LINEAR").attr("n_supports", "int", std::int64_t{0}).attr("one_class", "int", std::int64_t{0})
          .attr("post_transform", "string", "NONE").opt("rho", "floats").opt("support_vectors", "floats")
          .infer([](infer_context& c) { regressor_infer(c, 1); }),
      ml);
  // TreeEnsembleRegressor and TreeEnsembleClassifier: version 3 adds the *_as_tensor forms
  // (ONNX deprecates both at ai.onnx.ml 5 for TreeEnsemble; version 3's schema still serves
  // such models, as ONNX Runtime does)
  auto tree_nodes = [](onnx_op o, bool v3) {
    o.opt("base_values", "floats").opt("nodes_falsenodeids", "ints").opt("nodes_featureids", "ints").opt("nodes_hitrates", "floats")
        .opt("nodes_missing_value_tracks_true", "ints").opt("nodes_modes", "strings").opt("nodes_nodeids", "ints")
        .opt("nodes_treeids", "ints").opt("nodes_truenodeids", "ints").opt("nodes_values", "floats")
        .attr("post_transform", "string", "NONE");
    if (v3) o.opt("base_values_as_tensor", "tensor").opt("nodes_hitrates_as_tensor", "tensor").opt("nodes_values_as_tensor", "tensor");
    return o;
  };
  for (int v : {1, 3}) {
    onnx_op reg_op = tree_nodes(onnx_op("TreeEnsembleRegressor", v), v == 3);
    if (v == 1) reg_op.until(2);
    reg_op.in("X:T").out("Y:f32").tc("T", numbers).attr("aggregate_function", "string", "SUM").opt("n_targets", "int")
        .opt("target_ids", "ints").opt("target_nodeids", "ints").opt("target_treeids", "ints").opt("target_weights", "floats")
        .infer([](infer_context& c) {
          const std::string a = c.attr_string("aggregate_function", "SUM");
          if (a != "AVERAGE" && a != "SUM" && a != "MIN" && a != "MAX")
            c.fail("aggregate_function must be AVERAGE, SUM, MIN or MAX, got '" + a + "'");
          if (!c.has_attr("n_targets")) c.fail("attribute 'n_targets' is required");
          regressor_infer(c, c.attr_int("n_targets", 1));
        });
    if (v == 3) reg_op.opt("target_weights_as_tensor", "tensor");
    add(reg_op, ml);
    onnx_op cls_op = tree_nodes(onnx_op("TreeEnsembleClassifier", v), v == 3);
    if (v == 1) cls_op.until(2);
    cls_op.in("X:T1").out("Y:T2").out("Z:f32").tc("T1", numbers).tc("T2", {dtype::string, dtype::int64}).opt("class_ids", "ints")
        .opt("class_nodeids", "ints").opt("class_treeids", "ints").opt("class_weights", "floats").opt("classlabels_int64s", "ints")
        .opt("classlabels_strings", "strings")
        .infer([](infer_context& c) { classifier_infer(c, "classlabels_int64s", "classlabels_strings", std::nullopt); });
    if (v == 3) cls_op.opt("class_weights_as_tensor", "tensor");
    add(cls_op, ml);
  }
  auto to_f32 = [](infer_context& c) {
    const shape x = c.input_shape(0);
    if (x.has_rank() && x.rank() != 1 && x.rank() != 2) c.fail("X must be 2-D [N, C] (or 1-D [C]), got " + x.to_string());
    c.set_tensor(0, dtype::f32, x);
  };
  add(onnx_op("Scaler", 1).in("X:T").out("Y:f32").tc("T", numbers).opt("offset", "floats").opt("scale", "floats").infer(to_f32), ml);
  add(onnx_op("Normalizer", 1).in("X:T").out("Y:f32").tc("T", numbers).attr("norm", "string", "MAX").infer([to_f32](infer_context& c) {
        const std::string n = c.attr_string("norm", "MAX");
        if (n != "MAX" && n != "L1" && n != "L2") c.fail("norm must be MAX, L1 or L2, got '" + n + "'");
        to_f32(c);
      }),
      ml);
  add(onnx_op("Imputer", 1).in("X:T").out("Y:T").tc("T", numbers).opt("imputed_value_floats", "floats")
          .opt("imputed_value_int64s", "ints").attr("replaced_value_float", "float", 0.0).attr("replaced_value_int64", "int", std::int64_t{0})
          .infer([](infer_context& c) {
            if ((list_size(c, "imputed_value_floats") == 0) == (list_size(c, "imputed_value_int64s") == 0))
              c.fail("exactly one of imputed_value_floats and imputed_value_int64s must be set (and not empty)");
            same_as_input0(c);
          }),
      ml);
  add(onnx_op("OneHotEncoder", 1).in("X:T").out("Y:f32").tc("T", {dtype::string, dtype::int64, dtype::int32, dtype::f32, dtype::f64})
          .opt("cats_int64s", "ints").opt("cats_strings", "strings").attr("zeros", "int", std::int64_t{1}).infer(one_hot_encoder_infer),
      ml);
  add(onnx_op("FeatureVectorizer", 1).in("X*:T1").out("Y:f32").tc("T1", numbers).opt("inputdimensions", "ints")
          .infer(feature_vectorizer_infer),
      ml);
  add(onnx_op("CategoryMapper", 1).in("X:T1").out("Y:T2").tc("T1", {dtype::string, dtype::int64}).tc("T2", {dtype::string, dtype::int64})
          .opt("cats_int64s", "ints").opt("cats_strings", "strings").attr("default_int64", "int", std::int64_t{-1})
          .attr("default_string", "string", "_Unused").infer(category_mapper_infer),
      ml);
  // maps: described (their attributes) and refused by inference
  add(onnx_op("CastMap", 1).in("X").out("Y").attr("cast_to", "string", "TO_FLOAT").attr("map_form", "string", "DENSE")
          .attr("max_map", "int", std::int64_t{1}).infer(map_op_infer),
      ml);
  add(onnx_op("DictVectorizer", 1).in("X").out("Y").opt("int64_vocabulary", "ints").opt("string_vocabulary", "strings").infer(map_op_infer), ml);
  add(onnx_op("ZipMap", 1).in("X:f32").out("Z").opt("classlabels_int64s", "ints").opt("classlabels_strings", "strings").infer(map_op_infer), ml);

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
