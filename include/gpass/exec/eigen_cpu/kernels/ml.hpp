// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file ml.hpp
/// Eigen CPU kernels of ONNX's other standard domains: `ai.onnx.ml` (ArrayFeatureExtractor,
/// Binarizer, LabelEncoder 1, 2 and 4, TreeEnsemble 5 with its aggregations and post
/// transforms; the classic models scikit-learn's converters write, LinearClassifier,
/// LinearRegressor, SVMClassifier, SVMRegressor, TreeEnsembleClassifier and
/// TreeEnsembleRegressor 1 and 3, and Scaler, Normalizer, Imputer, OneHotEncoder,
/// FeatureVectorizer, CategoryMapper) and `ai.onnx.preview.training` (Adagrad, Adam, Momentum with the standard and
/// Nesterov rules, any number of tensors per node). The optimizers compute in double and
/// round once to the tensors' type. Private (`gpass::exec::cpu_detail`); `register_ml` adds
/// them to a registry.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include <gpass/exec/eigen_cpu/kernels/common.hpp>

namespace gpass::exec::cpu_detail {

namespace ml_impl {

using i64 = std::int64_t;

/// The element types the ai.onnx.ml ops read and write as numbers.
using ml_number_types = type_list<float, double, std::int64_t, std::int32_t, std::int16_t, Eigen::half>;

/// The int attribute list `a`, or a failure naming it when absent and `required`.
inline std::vector<i64> ints_attr(const kernel_node& n, const char* a, bool required) {
  if (!n.has_attr(a)) {
    if (required) n.fail(std::string("attribute '") + a + "' is required");
    return {};
  }
  return n.attr<std::vector<i64>>(a);
}

// ---------------------------------------------------------------------------------------
// ArrayFeatureExtractor

inline void register_array_feature_extractor(registry& r) {
  r.add({.domain = "ai.onnx.ml", .op = "ArrayFeatureExtractor",
         .dtypes = {dtype::f32, dtype::f64, dtype::int64, dtype::int32, dtype::string},
         .make = [](const kernel_node&) -> fn {
           return [](context& ctx) {
             const gpass::tensor& x = ctx.input(0);
             const gpass::tensor& y = ctx.input(1);
             if (y.element_type() != dtype::int64) ctx.fail("Y must be int64, got " + std::string(to_string(y.element_type())));
             if (x.rank() == 0) ctx.fail("X must have rank >= 1");
             const auto& s = x.sizes();
             const i64 stride = s.back(), rows = stride == 0 ? 0 : x.size() / stride;
             const i64 count = y.size();
             const i64* idx = y.data<i64>();
             for (i64 k = 0; k < count; ++k)
               if (idx[k] < 0 || idx[k] >= stride)
                 ctx.fail("index " + std::to_string(idx[k]) + " (Y element " + std::to_string(k) + ") is out of range for the last axis of size " +
                          std::to_string(stride));
             std::vector<i64> out;
             if (s.size() == 1) out = {1, count};
             else {
               out.assign(s.begin(), s.end() - 1);
               out.push_back(count);
             }
             gpass::tensor& z = ctx.allocate_output(0, x.element_type(), out);
             dispatch<type_list<float, double, std::int64_t, std::int32_t, std::string>>(x.element_type(), ctx.node(), [&]<class T>() {
               const T* px = x.data<T>();
               T* pz = z.data<T>();
               for (i64 row = 0; row < rows; ++row)
                 for (i64 k = 0; k < count; ++k) pz[row * count + k] = px[row * stride + idx[k]];
             });
           };
         }});
}

// ---------------------------------------------------------------------------------------
// Binarizer

inline void register_binarizer(registry& r) {
  r.add({.domain = "ai.onnx.ml", .op = "Binarizer", .dtypes = {dtype::f32, dtype::f64, dtype::int64, dtype::int32},
         .make = [](const kernel_node& n) -> fn {
           const double threshold = n.attr<double>("threshold", 0.0);
           return [threshold](context& ctx) {
             const gpass::tensor& x = ctx.input(0);
             gpass::tensor& y = ctx.allocate_output(0, x.element_type(), x.sizes());
             dispatch<type_list<float, double, std::int64_t, std::int32_t>>(x.element_type(), ctx.node(), [&]<class T>() {
               const T* px = x.data<T>();
               T* py = y.data<T>();
               for (i64 i = 0; i < x.size(); ++i) py[i] = static_cast<double>(px[i]) > threshold ? T(1) : T(0);
             });
           };
         }});
}

// ---------------------------------------------------------------------------------------
// LabelEncoder

/// The keys of a LabelEncoder, by the kind of its input: strings, integers or floats (a NaN
/// key matches every NaN). A repeated key maps to its last value.
struct label_keys {
  enum class kind { strings, integers, floats } k = kind::strings;
  std::unordered_map<std::string, std::size_t> strings;
  std::unordered_map<i64, std::size_t> integers;
  std::unordered_map<double, std::size_t> floats;
  std::size_t nan = std::numeric_limits<std::size_t>::max();  ///< the value of a NaN key
  std::size_t size = 0;

  void add_float(double v, std::size_t i) {
    if (std::isnan(v)) nan = i;
    else floats.insert_or_assign(v == 0 ? 0.0 : v, i);  // -0 and +0 are one key
  }
  /// Whether an input of element type `d` can hold these keys.
  bool accepts(dtype d) const {
    switch (k) {
      case kind::strings: return d == dtype::string;
      case kind::integers: return d == dtype::int64 || d == dtype::int32 || d == dtype::int16;
      case kind::floats: return d == dtype::f32 || d == dtype::f64;
    }
    return false;
  }
  /// The value index of element `i` of `x`, or npos.
  std::size_t find(const gpass::tensor& x, i64 i) const {
    constexpr std::size_t npos = std::numeric_limits<std::size_t>::max();
    switch (k) {
      case kind::strings: {
        auto it = strings.find(x.data<std::string>()[i]);
        return it == strings.end() ? npos : it->second;
      }
      case kind::integers: {
        i64 v = 0;
        switch (x.element_type()) {
          case dtype::int64: v = x.data<i64>()[i]; break;
          case dtype::int32: v = x.data<std::int32_t>()[i]; break;
          case dtype::int16: v = x.data<std::int16_t>()[i]; break;
          default: return npos;
        }
        auto it = integers.find(v);
        return it == integers.end() ? npos : it->second;
      }
      case kind::floats: {
        double v = 0;
        switch (x.element_type()) {
          case dtype::f32: v = x.data<float>()[i]; break;
          case dtype::f64: v = x.data<double>()[i]; break;
          default: return npos;
        }
        if (std::isnan(v)) return nan;
        auto it = floats.find(v == 0 ? 0.0 : v);
        return it == floats.end() ? npos : it->second;
      }
    }
    return npos;
  }
};

/// The mapping of one LabelEncoder node (versions 2 to 4): keys, the values as a 1-D tensor of
/// the output type and the default as a one-element tensor of it.
struct label_map {
  label_keys keys;
  gpass::tensor values, fallback;
};

inline label_map read_label_map(const kernel_node& n) {
  label_map m;
  int key_attrs = 0, value_attrs = 0;
  if (n.has_attr("keys_strings")) {
    ++key_attrs;
    m.keys.k = label_keys::kind::strings;
    const auto ks = n.attr<std::vector<std::string>>("keys_strings");
    for (std::size_t i = 0; i < ks.size(); ++i) m.keys.strings.insert_or_assign(ks[i], i);
    m.keys.size = ks.size();
  }
  if (n.has_attr("keys_int64s")) {
    ++key_attrs;
    m.keys.k = label_keys::kind::integers;
    const auto ks = n.attr<std::vector<i64>>("keys_int64s");
    for (std::size_t i = 0; i < ks.size(); ++i) m.keys.integers.insert_or_assign(ks[i], i);
    m.keys.size = ks.size();
  }
  if (n.has_attr("keys_floats")) {
    ++key_attrs;
    m.keys.k = label_keys::kind::floats;
    const auto ks = n.attr<std::vector<double>>("keys_floats");
    for (std::size_t i = 0; i < ks.size(); ++i) m.keys.add_float(static_cast<double>(static_cast<float>(ks[i])), i);
    m.keys.size = ks.size();
  }
  if (n.has_attr("keys_tensor")) {
    ++key_attrs;
    const auto t = n.attr<gpass::tensor>("keys_tensor");
    m.keys.size = static_cast<std::size_t>(t.size());
    if (t.element_type() == dtype::string) {
      m.keys.k = label_keys::kind::strings;
      for (std::size_t i = 0; i < m.keys.size; ++i) m.keys.strings.insert_or_assign(t.data<std::string>()[i], i);
    } else if (t.element_type() == dtype::f32 || t.element_type() == dtype::f64) {
      m.keys.k = label_keys::kind::floats;
      const auto v = as_doubles(t, n);
      for (std::size_t i = 0; i < v.size(); ++i) m.keys.add_float(v[i], i);
    } else if (t.element_type() == dtype::int64 || t.element_type() == dtype::int32 || t.element_type() == dtype::int16) {
      m.keys.k = label_keys::kind::integers;
      // read as integers: through a double, int64 keys past 2^53 lose their value (and
      // INT64_MAX becomes 2^63, whose conversion back is undefined)
      dispatch<type_list<std::int64_t, std::int32_t, std::int16_t>>(t.element_type(), n, [&]<class T>() {
        const T* p = t.data<T>();
        for (std::size_t i = 0; i < m.keys.size; ++i) m.keys.integers.insert_or_assign(static_cast<i64>(p[i]), i);
      });
    } else {
      n.fail("keys_tensor of element type " + std::string(to_string(t.element_type())) + " is not supported");
    }
  }
  if (key_attrs != 1) n.fail("exactly one of the keys_* attributes must be set, " + std::to_string(key_attrs) + " are");
  if (n.has_attr("values_strings")) {
    ++value_attrs;
    const auto vs = n.attr<std::vector<std::string>>("values_strings");
    m.values = gpass::tensor(dtype::string, {static_cast<i64>(vs.size())});
    std::copy(vs.begin(), vs.end(), m.values.data<std::string>());
    m.fallback = gpass::tensor(dtype::string, {1});
    m.fallback.data<std::string>()[0] = n.attr<std::string>("default_string", "_Unused");
  }
  if (n.has_attr("values_int64s")) {
    ++value_attrs;
    m.values = gpass::tensor::from<i64>(n.attr<std::vector<i64>>("values_int64s"));
    m.fallback = gpass::tensor::from<i64>({n.attr<i64>("default_int64", -1)});
  }
  if (n.has_attr("values_floats")) {
    ++value_attrs;
    m.values = gpass::tensor::from<float>(n.attr<std::vector<float>>("values_floats"));
    m.fallback = gpass::tensor::from<float>({n.attr<float>("default_float", -0.0f)});
  }
  if (n.has_attr("values_tensor")) {
    ++value_attrs;
    m.values = n.attr<gpass::tensor>("values_tensor");
    const dtype d = m.values.element_type();
    if (n.has_attr("default_tensor")) {
      m.fallback = n.attr<gpass::tensor>("default_tensor");
      if (m.fallback.element_type() != d || m.fallback.size() != 1)
        n.fail("default_tensor must hold one element of values_tensor's type " + std::string(to_string(d)));
    } else {
      // the spec's defaults: "_Unused", -1 for integers, -0.0 for floats
      m.fallback = gpass::tensor(d, {1});
      if (d == dtype::string) m.fallback.data<std::string>()[0] = "_Unused";
      else
        dispatch<ml_number_types>(d, n, [&]<class T>() {
          m.fallback.data<T>()[0] = std::is_integral_v<T> ? T(-1) : T(static_cast<compute_t<T>>(-0.0));
        });
    }
    m.values = m.values.clone();
    m.values = m.values.reshaped({m.values.size()});
  }
  if (value_attrs != 1) n.fail("exactly one of the values_* attributes must be set, " + std::to_string(value_attrs) + " are");
  if (static_cast<std::size_t>(m.values.size()) != m.keys.size)
    n.fail("the keys (" + std::to_string(m.keys.size) + ") and values (" + std::to_string(m.values.size()) + ") differ in length");
  return m;
}

/// Writes, for each element of `x`, the value its key maps to (or the default) into `y`.
inline void apply_label_map(const label_map& m, const gpass::tensor& x, gpass::tensor& y, const context& ctx) {
  dispatch<type_list<std::string, float, double, std::int64_t, std::int32_t, std::int16_t>>(y.element_type(), ctx.node(), [&]<class T>() {
    const T* vals = m.values.data<T>();
    const T def = m.fallback.data<T>()[0];
    T* py = y.data<T>();
    if constexpr (std::is_same_v<T, std::string>) {  // each element a copy of a value: a long one repeats
      check_string_copies(ctx, {&m.values, &m.fallback}, x.size(), [&] {
        double chars = 0;
        for (i64 i = 0; i < x.size(); ++i) {
          const std::size_t k = m.keys.find(x, i);
          chars += static_cast<double>((k == std::numeric_limits<std::size_t>::max() ? def : vals[k]).size());
        }
        return chars;
      });
    }
    for (i64 i = 0; i < x.size(); ++i) {
      const std::size_t k = m.keys.find(x, i);
      py[i] = k == std::numeric_limits<std::size_t>::max() ? def : vals[k];
    }
  });
}

/// A strings <-> int64 mapping with defaults (LabelEncoder 1, CategoryMapper): a string
/// input maps through `to_int` (else `def_int`), an int64 input through `to_string` (else
/// `def_string`).
struct string_int_map {
  std::unordered_map<std::string, i64> to_int;
  std::unordered_map<i64, std::string> to_string;
  i64 def_int = -1;
  std::string def_string;
  void run(context& ctx) const {
    const gpass::tensor& x = ctx.input(0);
    if (x.element_type() == dtype::string) {
      gpass::tensor& y = ctx.allocate_output(0, dtype::int64, x.sizes());
      for (i64 i = 0; i < x.size(); ++i) {
        auto it = to_int.find(x.data<std::string>()[i]);
        y.data<i64>()[i] = it == to_int.end() ? def_int : it->second;
      }
    } else {
      gpass::tensor& y = ctx.allocate_output(0, dtype::string, x.sizes());
      auto label = [&](i64 i) -> const std::string& {
        auto it = to_string.find(x.data<i64>()[i]);
        return it == to_string.end() ? def_string : it->second;
      };
      double chars = 0;  // (each element a copy of a label: a long one repeats)
      for (i64 i = 0; i < x.size(); ++i) chars += static_cast<double>(label(i).size());
      check_string_output(ctx, x.size(), chars);
      for (i64 i = 0; i < x.size(); ++i) {
        auto it = to_string.find(x.data<i64>()[i]);
        y.data<std::string>()[i] = it == to_string.end() ? def_string : it->second;
      }
    }
  }
};

/// The defaults of a `string_int_map` from the node's `default_int64` / `default_string`.
inline string_int_map string_int_defaults(const kernel_node& n) {
  string_int_map m;
  m.def_int = n.attr<i64>("default_int64", -1);
  m.def_string = n.attr<std::string>("default_string", "_Unused");
  return m;
}

inline void register_label_encoder(registry& r) {
  const std::vector<dtype> types{dtype::string, dtype::int64, dtype::f32, dtype::int32, dtype::int16, dtype::f64};
  // version 1: strings -> their index in classes_strings, int64 -> the class name
  r.add({.domain = "ai.onnx.ml", .op = "LabelEncoder", .since_version = 1, .dtypes = {dtype::string, dtype::int64},
         .make = [](const kernel_node& n) -> fn {
           const std::vector<std::string> classes = n.attr<std::vector<std::string>>("classes_strings", {});
           auto m = std::make_shared<string_int_map>(string_int_defaults(n));
           for (std::size_t i = 0; i < classes.size(); ++i) {
             m->to_int.insert_or_assign(classes[i], static_cast<i64>(i));  // a repeated class: its last index
             m->to_string.emplace(static_cast<i64>(i), classes[i]);
           }
           return [m = std::shared_ptr<const string_int_map>(std::move(m))](context& ctx) { m->run(ctx); };
         }});
  r.add({.domain = "ai.onnx.ml", .op = "LabelEncoder", .since_version = 2, .dtypes = types, .make = [](const kernel_node& n) -> fn {
           auto m = std::make_shared<const label_map>(read_label_map(n));
           return [m](context& ctx) {
             const gpass::tensor& x = ctx.input(0);
             if (!m->keys.accepts(x.element_type()))
               ctx.fail("X of element type " + std::string(to_string(x.element_type())) + " does not match the keys' type");
             gpass::tensor& y = ctx.allocate_output(0, m->values.element_type(), x.sizes());
             apply_label_map(*m, x, y, ctx);
           };
         }});
}

// ---------------------------------------------------------------------------------------
// TreeEnsemble

/// One TreeEnsemble node's trees, checked once: every index in range, every tree walk bounded.
struct tree_ensemble {
  enum mode : std::uint8_t { leq = 0, lt = 1, gte = 2, gt = 3, eq = 4, neq = 5, member = 6 };
  std::vector<i64> feature, true_id, false_id;
  std::vector<std::uint8_t> modes, true_leaf, false_leaf, missing_true;
  std::vector<double> split;
  std::vector<std::vector<double>> members;  ///< per node (BRANCH_MEMBER nodes only)
  std::vector<i64> leaf_target;
  std::vector<double> leaf_weight;
  std::vector<i64> roots;
  i64 targets = 1, aggregate = 1, post = 0;
  /// A NaN feature takes the branch nodes_missing_value_tracks_true names whatever the mode
  /// (the classic TreeEnsembleRegressor / Classifier's spec); false: a comparison that holds
  /// for NaN (BRANCH_NEQ) goes to the true branch, the others follow the flag.
  bool nan_by_flag = false;
};

inline tree_ensemble read_tree_ensemble(const kernel_node& n) {
  tree_ensemble t;
  t.feature = ints_attr(n, "nodes_featureids", true);
  t.true_id = ints_attr(n, "nodes_truenodeids", true);
  t.false_id = ints_attr(n, "nodes_falsenodeids", true);
  const auto tl = ints_attr(n, "nodes_trueleafs", true), fl = ints_attr(n, "nodes_falseleafs", true);
  const auto mt = ints_attr(n, "nodes_missing_value_tracks_true", false);
  t.roots = ints_attr(n, "tree_roots", true);
  t.leaf_target = ints_attr(n, "leaf_targetids", true);
  if (!n.has_attr("nodes_modes") || !n.has_attr("nodes_splits") || !n.has_attr("leaf_weights"))
    n.fail("attributes 'nodes_modes', 'nodes_splits' and 'leaf_weights' are required");
  const auto modes = as_doubles(n.attr<gpass::tensor>("nodes_modes"), n);
  t.split = as_doubles(n.attr<gpass::tensor>("nodes_splits"), n);
  t.leaf_weight = as_doubles(n.attr<gpass::tensor>("leaf_weights"), n);
  t.targets = n.attr<i64>("n_targets", 1);
  t.aggregate = n.attr<i64>("aggregate_function", 1);
  t.post = n.attr<i64>("post_transform", 0);
  const std::size_t nodes = t.feature.size();
  for (std::size_t len : {t.true_id.size(), t.false_id.size(), tl.size(), fl.size(), modes.size(), t.split.size()})
    if (len != nodes) n.fail("the nodes_* attributes must have the same length (" + std::to_string(nodes) + ")");
  if (!mt.empty() && mt.size() != nodes) n.fail("nodes_missing_value_tracks_true must have one entry per node");
  if (t.leaf_target.size() != t.leaf_weight.size()) n.fail("leaf_targetids and leaf_weights must have the same length");
  if (t.targets <= 0) n.fail("n_targets must be positive");
  if (t.aggregate < 0 || t.aggregate > 3) n.fail("aggregate_function must be 0 (AVERAGE), 1 (SUM), 2 (MIN) or 3 (MAX)");
  if (t.post < 0 || t.post > 4) n.fail("post_transform must be 0 (NONE) to 4 (PROBIT)");
  for (i64 tg : t.leaf_target)
    if (tg < 0 || tg >= t.targets) n.fail("leaf target id " + std::to_string(tg) + " is outside [0, n_targets)");
  t.modes.resize(nodes);
  t.true_leaf.resize(nodes);
  t.false_leaf.resize(nodes);
  t.missing_true.assign(nodes, 0);
  t.members.resize(nodes);
  std::vector<double> member_values;
  if (n.has_attr("membership_values")) member_values = as_doubles(n.attr<gpass::tensor>("membership_values"), n);
  std::size_t next_member = 0;
  const std::size_t leaves = t.leaf_weight.size();
  for (std::size_t i = 0; i < nodes; ++i) {
    if (modes[i] < 0 || modes[i] > 6) n.fail("node " + std::to_string(i) + " has an unknown mode " + std::to_string(modes[i]));
    t.modes[i] = static_cast<std::uint8_t>(modes[i]);
    t.true_leaf[i] = tl[i] != 0;
    t.false_leaf[i] = fl[i] != 0;
    if (!mt.empty()) t.missing_true[i] = mt[i] != 0;
    if (t.feature[i] < 0) n.fail("node " + std::to_string(i) + " has a negative feature id");
    for (auto [id, leaf] : {std::pair{t.true_id[i], t.true_leaf[i]}, std::pair{t.false_id[i], t.false_leaf[i]}})
      if (id < 0 || static_cast<std::size_t>(id) >= (leaf ? leaves : nodes))
        n.fail("node " + std::to_string(i) + " branches to " + (leaf ? "leaf " : "node ") + std::to_string(id) + ", out of range");
    if (t.modes[i] == tree_ensemble::member) {
      // the next NaN-delimited run of membership_values
      if (next_member >= member_values.size()) n.fail("membership_values has no set for BRANCH_MEMBER node " + std::to_string(i));
      while (next_member < member_values.size() && !std::isnan(member_values[next_member]))
        t.members[i].push_back(member_values[next_member++]);
      ++next_member;  // the NaN
    }
  }
  for (i64 root : t.roots)
    if (root < 0 || static_cast<std::size_t>(root) >= nodes) n.fail("tree root " + std::to_string(root) + " is out of range");
  return t;
}

/// The leaf row `x` reaches in the tree rooted at `root`; the walk is bounded by the node
/// count (a cycle in the tree attributes is an error, not a hang).
inline std::size_t tree_leaf(const tree_ensemble& t, i64 root, const double* x, i64 features, const kernel_node& n) {
  std::size_t v = static_cast<std::size_t>(root);
  // a tree that is one leaf: both branches the same leaf
  if (t.true_leaf[v] && t.false_leaf[v] && t.true_id[v] == t.false_id[v]) return static_cast<std::size_t>(t.true_id[v]);
  for (std::size_t steps = 0; steps <= t.feature.size(); ++steps) {
    if (t.feature[v] >= features)
      n.fail("node " + std::to_string(v) + " reads feature " + std::to_string(t.feature[v]) + " of " + std::to_string(features));
    const double f = x[t.feature[v]], s = t.split[v];
    bool go = false;
    if (t.nan_by_flag && std::isnan(f)) {
      go = t.missing_true[v] != 0;
    } else {
      switch (t.modes[v]) {
        case tree_ensemble::leq: go = f <= s; break;
        case tree_ensemble::lt: go = f < s; break;
        case tree_ensemble::gte: go = f >= s; break;
        case tree_ensemble::gt: go = f > s; break;
        case tree_ensemble::eq: go = f == s; break;
        case tree_ensemble::neq: go = f != s; break;
        default: go = std::find(t.members[v].begin(), t.members[v].end(), f) != t.members[v].end(); break;
      }
      if (!go && t.missing_true[v] && std::isnan(f)) go = true;
    }
    const bool leaf = go ? t.true_leaf[v] : t.false_leaf[v];
    const i64 next = go ? t.true_id[v] : t.false_id[v];
    if (leaf) return static_cast<std::size_t>(next);
    v = static_cast<std::size_t>(next);
  }
  n.fail("the tree rooted at node " + std::to_string(root) + " has a cycle");
}

/// The inverse of the standard normal CDF at `p` in (0, 1) (PROBIT): Newton steps on erf from
/// a rational first guess.
inline double probit(double p) {
  if (!(p > 0)) return p == 0 ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  if (!(p < 1)) return p == 1 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  // Acklam-style starting point from the logistic approximation, refined by Newton on Phi(x) - p
  double x = std::log(p / (1 - p)) / 1.702;
  for (int it = 0; it < 60; ++it) {
    const double cdf = 0.5 * std::erfc(-x / std::sqrt(2.0));
    const double pdf = std::exp(-0.5 * x * x) / std::sqrt(2.0 * 3.14159265358979323846);
    if (pdf == 0) break;
    const double step = (cdf - p) / pdf;
    x -= step;
    if (std::abs(step) <= 1e-15 * std::max(1.0, std::abs(x))) break;
  }
  return x;
}

/// Applies `post` (NONE, SOFTMAX, LOGISTIC, SOFTMAX_ZERO, PROBIT) to one row of scores.
inline void post_transform(double* y, i64 n, i64 post) {
  switch (post) {
    case 1:
    case 3: {  // softmax; SOFTMAX_ZERO leaves zeros at zero
      double m = -std::numeric_limits<double>::infinity();
      for (i64 j = 0; j < n; ++j)
        if (post == 1 || y[j] != 0) m = std::max(m, y[j]);
      double s = 0;
      for (i64 j = 0; j < n; ++j) {
        if (post == 3 && y[j] == 0) continue;
        y[j] = std::exp(y[j] - m);
        s += y[j];
      }
      for (i64 j = 0; j < n; ++j)
        if (post == 1 || y[j] != 0) y[j] /= s;
      break;
    }
    case 2:
      for (i64 j = 0; j < n; ++j) y[j] = 1.0 / (1.0 + std::exp(-y[j]));
      break;
    case 4:
      for (i64 j = 0; j < n; ++j) y[j] = probit(y[j]);
      break;
    default: break;
  }
}

inline void register_tree_ensemble(registry& r) {
  r.add({.domain = "ai.onnx.ml", .op = "TreeEnsemble", .since_version = 5, .dtypes = {dtype::f32, dtype::f64, dtype::f16},
         .make = [](const kernel_node& n) -> fn {
           auto t = std::make_shared<const tree_ensemble>(read_tree_ensemble(n));
           return [t](context& ctx) {
             const gpass::tensor& x = ctx.input(0);
             if (x.rank() != 2) ctx.fail("X must be 2-D [N, F], got " + x.shape().to_string());
             const i64 rows = x.sizes()[0], features = x.sizes()[1], targets = t->targets;
             // the output first: its size is checked (overflow, the run's limits) before the scores'
             gpass::tensor& yo = ctx.allocate_output(0, x.element_type(), {rows, targets});
             const std::vector<double> xv = as_doubles(x, ctx.node());
             std::vector<double> out(static_cast<std::size_t>(yo.size()));
             const double init = t->aggregate == 2   ? std::numeric_limits<double>::max()
                                 : t->aggregate == 3 ? std::numeric_limits<double>::lowest()
                                                     : 0.0;
             const double trees = static_cast<double>(t->roots.size());
             ctx.policy().parallel_for(rows, static_cast<double>(t->roots.size()) * 16.0, [&](i64 lo, i64 hi) {
               for (i64 row = lo; row < hi; ++row) {
                 double* y = out.data() + row * targets;
                 std::fill_n(y, targets, init);
                 for (i64 root : t->roots) {
                   const std::size_t leaf = tree_leaf(*t, root, xv.data() + row * features, features, ctx.node());
                   const double w = t->leaf_weight[leaf];
                   double& a = y[t->leaf_target[leaf]];
                   switch (t->aggregate) {
                     case 0: a += w / trees; break;
                     case 2: a = std::min(a, w); break;
                     case 3: a = std::max(a, w); break;
                     default: a += w; break;
                   }
                 }
                 post_transform(y, targets, t->post);
               }
             });
             dispatch<type_list<float, double, Eigen::half>>(x.element_type(), ctx.node(), [&]<class T>() {
               T* py = yo.data<T>();
               for (std::size_t i = 0; i < out.size(); ++i) py[i] = static_cast<T>(static_cast<compute_t<T>>(out[i]));
             });
           };
         }});
}

// ---------------------------------------------------------------------------------------
// The classic ai.onnx.ml models that scikit-learn's converters write: linear models, SVMs,
// tree ensembles (versions 1 and 3), and the preprocessing ops around them. Where the spec
// leaves a case open (the binary classifiers' second score column, the labels of a binary
// linear SVM), the kernels do what ONNX Runtime does; where ONNX Runtime departs from the
// spec, a comment says so and the kernel follows the spec.

/// Attribute `a` as doubles (ONNX's floats), empty when absent.
inline std::vector<double> floats_attr(const kernel_node& n, std::string_view a) {
  auto it = n.attrs.find(a);
  if (it == n.attrs.end()) return {};
  if (it->second.is<double>()) return {it->second.as<double>()};
  return n.attr<std::vector<double>>(a);
}

/// Attribute `a` as strings, empty when absent.
inline std::vector<std::string> strings_attr(const kernel_node& n, std::string_view a) {
  auto it = n.attrs.find(a);
  if (it == n.attrs.end()) return {};
  if (it->second.is<std::string>()) return {it->second.as<std::string>()};
  return n.attr<std::vector<std::string>>(a);
}

/// The floats `a`, or the tensor `a`_as_tensor (version 3's double-precision form); both set
/// is an error.
inline std::vector<double> floats_or_tensor(const kernel_node& n, const std::string& a) {
  const std::string t = a + "_as_tensor";
  if (n.has_attr(a) && n.has_attr(t)) n.fail("only one of '" + a + "' and '" + t + "' may be set");
  if (n.has_attr(t)) return as_doubles(n.attr<gpass::tensor>(t), n);
  return floats_attr(n, a);
}

/// post_transform as TreeEnsemble 5 numbers it: NONE 0, SOFTMAX 1, LOGISTIC 2, SOFTMAX_ZERO 3,
/// PROBIT 4 (`post_transform` above applies it). PROBIT is the exact standard normal quantile;
/// ONNX Runtime uses an approximation of erfinv good to about 1e-5 relative.
inline i64 read_post_transform(const kernel_node& n) {
  const std::string p = n.attr<std::string>("post_transform", "NONE");
  if (p == "NONE") return 0;
  if (p == "SOFTMAX") return 1;
  if (p == "LOGISTIC") return 2;
  if (p == "SOFTMAX_ZERO") return 3;
  if (p == "PROBIT") return 4;
  n.fail("post_transform must be NONE, SOFTMAX, LOGISTIC, SOFTMAX_ZERO or PROBIT, got '" + p + "'");
}

/// The two score columns of a binary classifier that computes one score `s`: `pair` is the
/// scores without a transform ((1 - s, s) or (-s, s), by op and case, as ONNX Runtime writes
/// them); LOGISTIC gives (logistic(-s), logistic(s)) and the other transforms apply to the pair.
/// (ONNX Runtime applies no SOFTMAX, SOFTMAX_ZERO or PROBIT here, and a binary SVM takes no
/// LOGISTIC either; the spec says the transform applies to the scores.)
inline void binary_scores(double s, bool one_minus, i64 post, double* z) {
  if (post == 2) {
    z[0] = 1.0 / (1.0 + std::exp(s));
    z[1] = 1.0 / (1.0 + std::exp(-s));
    return;
  }
  z[0] = one_minus ? 1.0 - s : -s;
  z[1] = s;
  post_transform(z, 2, post);
}

/// The class labels of a classifier: one of an ints and a strings attribute.
struct class_labels {
  std::vector<i64> ints;
  std::vector<std::string> strings;
  bool use_strings = false;
  std::size_t size() const { return use_strings ? strings.size() : ints.size(); }
  dtype type() const { return use_strings ? dtype::string : dtype::int64; }
};

inline class_labels read_class_labels(const kernel_node& n, const char* ints_name, const char* strings_name) {
  class_labels l;
  l.ints = ints_attr(n, ints_name, false);
  l.strings = strings_attr(n, strings_name);
  if (l.ints.empty() == l.strings.empty())
    n.fail(std::string("exactly one of '") + ints_name + "' and '" + strings_name + "' must be set (and not empty)");
  l.use_strings = !l.strings.empty();
  return l;
}

/// Allocates a classifier's outputs before any scratch space, so that their sizes are checked
/// (overflow, the run's limits) first: Y [rows] of the labels' type, Z f32 [rows, cols].
inline void allocate_classifier_outputs(context& ctx, const class_labels& l, i64 rows, i64 cols) {
  ctx.allocate_output(0, l.type(), {rows});
  if (ctx.num_outputs() > 1) ctx.allocate_output(1, dtype::f32, {rows, cols});
}

/// Fills output 0 (allocated) with the labels `pick` indexes.
inline void write_labels(context& ctx, const class_labels& l, const std::vector<std::size_t>& pick) {
  gpass::tensor& y = ctx.output(0);
  if (l.use_strings) {  // (each a copy of a label attribute: a long one repeats)
    double chars = 0;
    for (const std::size_t k : pick) chars += static_cast<double>(l.strings[k].size());
    check_string_output(ctx, static_cast<i64>(pick.size()), chars);
  }
  for (std::size_t r = 0; r < pick.size(); ++r) {
    if (l.use_strings) y.data<std::string>()[r] = l.strings[pick[r]];
    else y.data<i64>()[r] = l.ints[pick[r]];
  }
}

/// Fills f32 output `port` (allocated; nothing when the node lacks it) from doubles.
inline void write_scores(context& ctx, std::size_t port, const std::vector<double>& v) {
  if (port >= ctx.num_outputs()) return;
  float* p = ctx.output(port).data<float>();
  for (std::size_t i = 0; i < v.size(); ++i) p[i] = static_cast<float>(v[i]);
}

/// X of a classic model as rows of features, in double: [N, F], or [F] as one row.
struct feature_rows {
  i64 rows = 0, features = 0;
  std::vector<double> v;
  const double* row(i64 r) const { return v.data() + r * features; }
};

inline feature_rows read_rows(context& ctx, std::size_t port = 0) {
  const gpass::tensor& x = ctx.input(port);
  if (x.rank() != 1 && x.rank() != 2) ctx.fail("X must be 2-D [N, F] (or 1-D [F]), got " + x.shape().to_string());
  feature_rows f;
  f.rows = x.rank() == 1 ? 1 : x.sizes()[0];
  f.features = x.sizes().back();
  f.v = as_doubles(x, ctx.node());
  return f;
}

// ---- linear models -------------------------------------------------------------------

/// `coefficients` as `rows` rows of the input's F features, checked against X at run time.
inline void check_coefficients(context& ctx, std::size_t count, i64 rows, i64 features) {
  if (static_cast<i64>(count) != rows * features)
    ctx.fail("coefficients has " + std::to_string(count) + " values, " + std::to_string(rows) + " rows of X's " +
             std::to_string(features) + " features need " + std::to_string(rows * features));
}

inline void register_linear(registry& r) {
  const std::vector<dtype> inputs{dtype::f32, dtype::f64, dtype::int64, dtype::int32};
  r.add({.domain = "ai.onnx.ml", .op = "LinearClassifier", .dtypes = inputs, .make = [](const kernel_node& n) -> fn {
           if (!n.has_attr("coefficients")) n.fail("attribute 'coefficients' is required");
           const std::vector<double> coef = floats_attr(n, "coefficients"), icpt = floats_attr(n, "intercepts");
           const class_labels labels = read_class_labels(n, "classlabels_ints", "classlabels_strings");
           const i64 post = read_post_transform(n);
           const i64 classes = static_cast<i64>(labels.size());
           if (coef.empty()) n.fail("coefficients is empty");
           // one row of coefficients per class, or one row for two classes (the binary case):
           // as many as intercepts, else as X's features make of the coefficients
           auto check_rows = [classes](i64 rows, auto& where) {
             if (rows != classes && !(rows == 1 && classes == 2))
               where.fail("the coefficients make " + std::to_string(rows) + " rows for " + std::to_string(classes) +
                          " class labels (one per class, or one for two classes)");
           };
           const i64 fixed_rows = static_cast<i64>(icpt.size());
           if (fixed_rows > 0) check_rows(fixed_rows, n);
           return [=](context& ctx) {
             const feature_rows x = read_rows(ctx);
             const i64 rows = fixed_rows > 0 ? fixed_rows : x.features > 0 ? static_cast<i64>(coef.size()) / x.features : classes;
             check_coefficients(ctx, coef.size(), rows, x.features);
             check_rows(rows, ctx);
             allocate_classifier_outputs(ctx, labels, x.rows, classes);
             std::vector<double> z(static_cast<std::size_t>(x.rows * classes));
             std::vector<std::size_t> pick(static_cast<std::size_t>(x.rows));
             std::vector<double> s(static_cast<std::size_t>(rows));
             for (i64 r = 0; r < x.rows; ++r) {
               const double* xr = x.row(r);
               for (i64 k = 0; k < rows; ++k) {
                 double a = icpt.empty() ? 0.0 : icpt[k];
                 for (i64 f = 0; f < x.features; ++f) a += coef[k * x.features + f] * xr[f];
                 s[k] = a;
               }
               double* zr = z.data() + r * classes;
               if (rows == 1) {  // binary: label by the sign of the one score, scores (1 - s, s)
                 pick[r] = s[0] > 0 ? 1 : 0;
                 binary_scores(s[0], true, post, zr);
               } else {  // the label of the highest score before the transform, as ONNX Runtime
                 pick[r] = static_cast<std::size_t>(std::max_element(s.begin(), s.end()) - s.begin());
                 std::copy(s.begin(), s.end(), zr);
                 post_transform(zr, classes, post);
               }
             }
             write_labels(ctx, labels, pick);
             write_scores(ctx, 1, z);
           };
         }});
  r.add({.domain = "ai.onnx.ml", .op = "LinearRegressor", .dtypes = inputs, .make = [](const kernel_node& n) -> fn {
           const std::vector<double> coef = floats_attr(n, "coefficients"), icpt = floats_attr(n, "intercepts");
           const i64 targets = n.attr<i64>("targets", 1);
           const i64 post = read_post_transform(n);
           if (targets <= 0) n.fail("targets must be positive, got " + std::to_string(targets));
           if (!icpt.empty() && static_cast<i64>(icpt.size()) != targets)
             n.fail("intercepts has " + std::to_string(icpt.size()) + " values for " + std::to_string(targets) + " targets");
           return [=](context& ctx) {
             const feature_rows x = read_rows(ctx);
             check_coefficients(ctx, coef.size(), targets, x.features);
             ctx.allocate_output(0, dtype::f32, {x.rows, targets});
             std::vector<double> y(static_cast<std::size_t>(x.rows * targets));
             for (i64 r = 0; r < x.rows; ++r) {
               double* yr = y.data() + r * targets;
               for (i64 k = 0; k < targets; ++k) {
                 double a = icpt.empty() ? 0.0 : icpt[k];
                 for (i64 f = 0; f < x.features; ++f) a += coef[k * x.features + f] * x.row(r)[f];
                 yr[k] = a;
               }
               post_transform(yr, targets, post);
             }
             write_scores(ctx, 0, y);
           };
         }});
}

// ---- SVMs ----------------------------------------------------------------------------

/// An SVM's kernel: LINEAR, POLY (gamma <x, v> + coef0)^degree, RBF exp(-gamma |x - v|^2),
/// SIGMOID tanh(gamma <x, v> + coef0), with kernel_params [gamma, coef0, degree].
struct svm_kernel {
  enum kind { linear, poly, rbf, sigmoid } k = linear;
  double gamma = 0, coef0 = 0, degree = 0;
  double operator()(const double* x, const double* v, i64 features) const {
    if (k == rbf) {
      double s = 0;
      for (i64 f = 0; f < features; ++f) s += (x[f] - v[f]) * (x[f] - v[f]);
      return std::exp(-gamma * s);
    }
    double d = 0;
    for (i64 f = 0; f < features; ++f) d += x[f] * v[f];
    switch (k) {
      case poly: return std::pow(gamma * d + coef0, degree);
      case sigmoid: return std::tanh(gamma * d + coef0);
      default: return d;
    }
  }
};

inline svm_kernel read_svm_kernel(const kernel_node& n) {
  svm_kernel k;
  const std::string t = n.attr<std::string>("kernel_type", "LINEAR");
  if (t == "LINEAR") k.k = svm_kernel::linear;
  else if (t == "POLY") k.k = svm_kernel::poly;
  else if (t == "RBF") k.k = svm_kernel::rbf;
  else if (t == "SIGMOID") k.k = svm_kernel::sigmoid;
  else n.fail("kernel_type must be LINEAR, POLY, RBF or SIGMOID, got '" + t + "'");
  const std::vector<double> p = floats_attr(n, "kernel_params");
  if (!p.empty() && p.size() != 3)
    n.fail("kernel_params must be [gamma, coef0, degree], got " + std::to_string(p.size()) + " values");
  if (p.size() == 3) k.gamma = p[0], k.coef0 = p[1], k.degree = p[2];
  return k;
}

/// Pairwise-coupled class probabilities from the pairwise ones r[i * k + j] (libsvm's method
/// 2 of Wu, Lin and Weng, with its stopping rule: at most 100 sweeps, until the largest
/// residual is under 0.005 / k).
inline void couple_probabilities(i64 k, const std::vector<double>& r, double* p) {
  const auto K = static_cast<std::size_t>(k);
  std::vector<double> q(K * K, 0.0), qp(K, 0.0);
  for (std::size_t i = 0; i < K; ++i) {
    p[i] = 1.0 / static_cast<double>(k);
    for (std::size_t j = 0; j < i; ++j) {
      q[i * K + i] += r[j * K + i] * r[j * K + i];
      q[i * K + j] = q[j * K + i];
    }
    for (std::size_t j = i + 1; j < K; ++j) {
      q[i * K + i] += r[j * K + i] * r[j * K + i];
      q[i * K + j] = -r[j * K + i] * r[i * K + j];
    }
  }
  const double eps = 0.005 / static_cast<double>(k);
  for (int sweep = 0; sweep < 100; ++sweep) {
    double pqp = 0;
    for (std::size_t i = 0; i < K; ++i) {
      qp[i] = 0;
      for (std::size_t j = 0; j < K; ++j) qp[i] += q[i * K + j] * p[j];
      pqp += p[i] * qp[i];
    }
    double worst = 0;
    for (std::size_t i = 0; i < K; ++i) worst = std::max(worst, std::abs(qp[i] - pqp));
    if (worst < eps) break;
    for (std::size_t i = 0; i < K; ++i) {
      const double diff = (pqp - qp[i]) / q[i * K + i];
      p[i] += diff;
      pqp = (pqp + diff * (diff * q[i * K + i] + 2 * qp[i])) / (1 + diff) / (1 + diff);
      for (std::size_t j = 0; j < K; ++j) {
        qp[j] = (qp[j] + diff * q[i * K + j]) / (1 + diff);
        p[j] /= 1 + diff;
      }
    }
  }
}

/// One SVMClassifier node: SVC mode (support vectors, one-vs-one votes) or linear mode (one
/// row of coefficients per class).
struct svm_classifier {
  class_labels labels;
  svm_kernel kernel;
  i64 post = 0, classes = 0, vectors = 0, features = -1;  ///< features: -1 in linear mode (X's)
  std::vector<i64> per_class, first;                    ///< support vectors per class and the first of each
  std::vector<double> coef, rho, prob_a, prob_b, support;
  bool all_positive = true;
  i64 score_columns() const {
    if (vectors == 0 || !prob_a.empty()) return classes;
    return classes == 2 ? 2 : classes * (classes - 1) / 2;
  }
};

inline svm_classifier read_svm_classifier(const kernel_node& n) {
  svm_classifier m;
  m.labels = read_class_labels(n, "classlabels_ints", "classlabels_strings");
  m.kernel = read_svm_kernel(n);
  m.post = read_post_transform(n);
  m.classes = static_cast<i64>(m.labels.size());
  m.coef = floats_attr(n, "coefficients");
  m.rho = floats_attr(n, "rho");
  m.prob_a = floats_attr(n, "prob_a");
  m.prob_b = floats_attr(n, "prob_b");
  m.support = floats_attr(n, "support_vectors");
  m.per_class = ints_attr(n, "vectors_per_class", false);
  if (m.coef.empty()) n.fail("coefficients is empty");
  if (m.prob_a.size() != m.prob_b.size()) n.fail("prob_a and prob_b must have the same length");
  for (i64 c : m.per_class) {
    if (c < 0) n.fail("vectors_per_class has a negative count");
    m.first.push_back(m.vectors);
    m.vectors += c;
  }
  for (double c : m.coef) m.all_positive = m.all_positive && c >= 0;
  if (m.vectors > 0) {
    const i64 pairs = m.classes * (m.classes - 1) / 2;
    if (m.classes < 2) n.fail("an SVM with support vectors needs at least two classes");
    if (static_cast<i64>(m.per_class.size()) != m.classes)
      n.fail("vectors_per_class has " + std::to_string(m.per_class.size()) + " entries for " + std::to_string(m.classes) +
             " classes");
    if (m.support.size() % static_cast<std::size_t>(m.vectors) != 0 || m.support.empty())
      n.fail("support_vectors has " + std::to_string(m.support.size()) + " values, not a multiple of the " +
             std::to_string(m.vectors) + " support vectors");
    m.features = static_cast<i64>(m.support.size()) / m.vectors;
    if (static_cast<i64>(m.coef.size()) != (m.classes - 1) * m.vectors)
      n.fail("coefficients has " + std::to_string(m.coef.size()) + " values, " + std::to_string(m.classes - 1) + " rows of " +
             std::to_string(m.vectors) + " support vectors need " + std::to_string((m.classes - 1) * m.vectors));
    if (static_cast<i64>(m.rho.size()) != pairs)
      n.fail("rho has " + std::to_string(m.rho.size()) + " values for " + std::to_string(pairs) + " class pairs");
    if (!m.prob_a.empty() && static_cast<i64>(m.prob_a.size()) != pairs)
      n.fail("prob_a has " + std::to_string(m.prob_a.size()) + " values for " + std::to_string(pairs) + " class pairs");
  } else {
    if (!m.support.empty()) n.fail("support_vectors is set but vectors_per_class counts none");
    if (m.rho.empty()) n.fail("rho must have a value");
    m.kernel.k = svm_kernel::linear;  // linear mode: coefficients are the classes' weights
  }
  return m;
}

/// The label and scores of one row (`z`: score_columns() values).
inline std::size_t svm_classify(const svm_classifier& m, const double* x, i64 features, std::vector<double>& kern,
                                std::vector<double>& pair, std::vector<i64>& votes, double* z) {
  const auto C = static_cast<std::size_t>(m.classes);
  if (m.vectors == 0) {  // linear mode: one score per class, rho[0] added to each
    for (std::size_t c = 0; c < C; ++c) {
      double s = m.rho[0];
      for (i64 f = 0; f < features; ++f) s += m.coef[c * static_cast<std::size_t>(features) + static_cast<std::size_t>(f)] * x[f];
      z[c] = s;
    }
    const std::size_t best = static_cast<std::size_t>(std::max_element(z, z + C) - z);
    const double top = z[best];
    post_transform(z, m.classes, m.post);
    // two classes without probabilities: ONNX Runtime's rule (the spec has none)
    if (C == 2 && m.prob_a.empty() && ((m.all_positive && top >= 0.5) || (!m.all_positive && top > 0))) return 1;
    return best;
  }
  for (i64 v = 0; v < m.vectors; ++v) kern[static_cast<std::size_t>(v)] = m.kernel(x, m.support.data() + v * features, features);
  std::fill(votes.begin(), votes.end(), 0);
  std::size_t idx = 0;
  for (std::size_t i = 0; i + 1 < C; ++i)
    for (std::size_t j = i + 1; j < C; ++j, ++idx) {
      // class i's vectors with row j - 1 of the coefficients, class j's with row i
      double s = m.rho[idx];
      for (i64 v = m.first[i]; v < m.first[i] + m.per_class[i]; ++v)
        s += m.coef[(j - 1) * static_cast<std::size_t>(m.vectors) + static_cast<std::size_t>(v)] * kern[static_cast<std::size_t>(v)];
      for (i64 v = m.first[j]; v < m.first[j] + m.per_class[j]; ++v)
        s += m.coef[i * static_cast<std::size_t>(m.vectors) + static_cast<std::size_t>(v)] * kern[static_cast<std::size_t>(v)];
      pair[idx] = s;
      ++votes[s > 0 ? i : j];
    }
  const std::size_t winner = static_cast<std::size_t>(std::max_element(votes.begin(), votes.end()) - votes.begin());
  if (!m.prob_a.empty()) {
    // pairwise probabilities (libsvm's sigmoid, clipped), coupled into one per class
    std::vector<double> r(C * C, 0.0);
    idx = 0;
    for (std::size_t i = 0; i + 1 < C; ++i)
      for (std::size_t j = i + 1; j < C; ++j, ++idx) {
        const double t = pair[idx] * m.prob_a[idx] + m.prob_b[idx];
        const double p = std::clamp(1.0 / (1.0 + std::exp(t)), 1e-7, 1 - 1e-7);
        r[i * C + j] = p;
        r[j * C + i] = 1 - p;
      }
    couple_probabilities(m.classes, r, z);
    post_transform(z, m.classes, m.post);
  } else if (C == 2) {
    binary_scores(pair[0], false, m.post, z);
  } else {
    std::copy(pair.begin(), pair.end(), z);
    post_transform(z, static_cast<i64>(pair.size()), m.post);
  }
  return winner;
}

inline void register_svm(registry& r) {
  const std::vector<dtype> inputs{dtype::f32, dtype::f64, dtype::int64, dtype::int32};
  r.add({.domain = "ai.onnx.ml", .op = "SVMClassifier", .dtypes = inputs, .make = [](const kernel_node& n) -> fn {
           auto m = std::make_shared<const svm_classifier>(read_svm_classifier(n));
           return [m](context& ctx) {
             const feature_rows x = read_rows(ctx);
             if (m->vectors > 0 && x.features != m->features)
               ctx.fail("X has " + std::to_string(x.features) + " features, the support vectors " + std::to_string(m->features));
             if (m->vectors == 0) check_coefficients(ctx, m->coef.size(), m->classes, x.features);
             const i64 cols = m->score_columns();
             allocate_classifier_outputs(ctx, m->labels, x.rows, cols);
             std::vector<double> z(static_cast<std::size_t>(x.rows * cols));
             std::vector<std::size_t> pick(static_cast<std::size_t>(x.rows));
             std::vector<double> kern(static_cast<std::size_t>(m->vectors)), pair(static_cast<std::size_t>(m->classes * (m->classes - 1) / 2));
             std::vector<i64> votes(static_cast<std::size_t>(m->classes));
             for (i64 r = 0; r < x.rows; ++r)
               pick[static_cast<std::size_t>(r)] = svm_classify(*m, x.row(r), x.features, kern, pair, votes, z.data() + r * cols);
             write_labels(ctx, m->labels, pick);
             write_scores(ctx, 1, z);
           };
         }});
  r.add({.domain = "ai.onnx.ml", .op = "SVMRegressor", .dtypes = inputs, .make = [](const kernel_node& n) -> fn {
           svm_kernel kernel = read_svm_kernel(n);
           const std::vector<double> coef = floats_attr(n, "coefficients"), rho = floats_attr(n, "rho"),
                                     support = floats_attr(n, "support_vectors");
           const i64 vectors = n.attr<i64>("n_supports", 0);
           const bool one_class = n.attr<i64>("one_class", 0) != 0;
           const i64 post = read_post_transform(n);
           if (vectors < 0) n.fail("n_supports must not be negative");
           if (coef.empty()) n.fail("coefficients is empty");
           if (rho.empty()) n.fail("rho must have a value");
           i64 features = -1;
           if (vectors > 0) {
             if (support.empty() || support.size() % static_cast<std::size_t>(vectors) != 0)
               n.fail("support_vectors has " + std::to_string(support.size()) + " values, not a multiple of n_supports " +
                      std::to_string(vectors));
             if (static_cast<i64>(coef.size()) != vectors)
               n.fail("coefficients has " + std::to_string(coef.size()) + " values for " + std::to_string(vectors) + " support vectors");
             features = static_cast<i64>(support.size()) / vectors;
           } else {
             kernel.k = svm_kernel::linear;  // linear mode: the coefficients are the weights
           }
           return [=](context& ctx) {
             const feature_rows x = read_rows(ctx);
             if (vectors > 0 && x.features != features)
               ctx.fail("X has " + std::to_string(x.features) + " features, the support vectors " + std::to_string(features));
             if (vectors == 0) check_coefficients(ctx, coef.size(), 1, x.features);
             ctx.allocate_output(0, dtype::f32, {x.rows, 1});
             std::vector<double> y(static_cast<std::size_t>(x.rows));
             for (i64 r = 0; r < x.rows; ++r) {
               double s = rho[0];
               if (vectors > 0)
                 for (i64 v = 0; v < vectors; ++v) s += coef[v] * kernel(x.row(r), support.data() + v * features, features);
               else
                 s += kernel(x.row(r), coef.data(), x.features);
               if (one_class) s = s > 0 ? 1.0 : -1.0;
               // the spec's transform of the one score (ONNX Runtime ignores post_transform here)
               post_transform(&s, 1, post);
               y[r] = s;
             }
             write_scores(ctx, 0, y);
           };
         }});
}

// ---- TreeEnsembleRegressor and TreeEnsembleClassifier (versions 1 and 3) --------------

/// The trees of a classic tree ensemble: its nodes_* attributes become the walk of
/// TreeEnsemble 5 (branch nodes as nodes, LEAF nodes as leaves), its target_* / class_*
/// attributes the weights of each leaf. A tree's root is its first node.
struct classic_forest {
  tree_ensemble walk;
  std::vector<i64> root_node;                ///< per tree: the walk's node, or -1 (the root is a leaf)
  std::vector<std::size_t> root_leaf;        ///< per tree: the leaf when the root is one
  std::vector<std::size_t> weight_begin;     ///< per leaf, then the end: the range of its weights
  std::vector<i64> weight_id;                ///< target or class of each weight, grouped by leaf
  std::vector<double> weight;
  bool all_positive = true;                  ///< no negative weight
  i64 only_id = -1;                          ///< the one output every weight goes to; -1: none, -2: several

  /// The leaf row `x` reaches in tree `t`.
  std::size_t leaf(std::size_t t, const double* x, i64 features, const kernel_node& n) const {
    return root_node[t] < 0 ? root_leaf[t] : tree_leaf(walk, root_node[t], x, features, n);
  }
};

inline classic_forest read_classic_forest(const kernel_node& n, const std::string& w, i64 outputs) {
  classic_forest c;
  c.walk.nan_by_flag = true;
  const auto tree = ints_attr(n, "nodes_treeids", true), id = ints_attr(n, "nodes_nodeids", true);
  const auto feature = ints_attr(n, "nodes_featureids", true), yes = ints_attr(n, "nodes_truenodeids", true),
             no = ints_attr(n, "nodes_falsenodeids", true), missing = ints_attr(n, "nodes_missing_value_tracks_true", false);
  const auto modes = strings_attr(n, "nodes_modes");
  const auto values = floats_or_tensor(n, "nodes_values");
  (void)floats_or_tensor(n, "nodes_hitrates");  // (not used; both forms set is still an error)
  const std::size_t count = tree.size();
  if (count == 0) n.fail("the ensemble has no nodes");
  for (std::size_t len : {id.size(), feature.size(), yes.size(), no.size(), modes.size(), values.size()})
    if (len != count) n.fail("the nodes_* attributes must have the same length (" + std::to_string(count) + " nodes)");
  if (!missing.empty() && missing.size() != count) n.fail("nodes_missing_value_tracks_true must have one entry per node");
  std::map<std::pair<i64, i64>, std::size_t> index;  // (tree, node) -> position
  std::vector<std::size_t> trees;                    // position of each tree's root
  std::map<i64, std::size_t> tree_order;
  for (std::size_t i = 0; i < count; ++i) {
    if (!index.emplace(std::pair{tree[i], id[i]}, i).second)
      n.fail("node " + std::to_string(id[i]) + " of tree " + std::to_string(tree[i]) + " is defined twice");
    if (tree_order.emplace(tree[i], trees.size()).second) trees.push_back(i);
  }
  // positions -> walk nodes (branches) or leaves
  std::vector<i64> as_node(count, -1), as_leaf(count, -1);
  i64 nodes = 0, leaves = 0;
  std::vector<std::uint8_t> mode(count);
  for (std::size_t i = 0; i < count; ++i) {
    const std::string& s = modes[i];
    if (s == "LEAF") {
      as_leaf[i] = leaves++;
      continue;
    }
    if (s == "BRANCH_LEQ") mode[i] = tree_ensemble::leq;
    else if (s == "BRANCH_LT") mode[i] = tree_ensemble::lt;
    else if (s == "BRANCH_GTE") mode[i] = tree_ensemble::gte;
    else if (s == "BRANCH_GT") mode[i] = tree_ensemble::gt;
    else if (s == "BRANCH_EQ") mode[i] = tree_ensemble::eq;
    else if (s == "BRANCH_NEQ") mode[i] = tree_ensemble::neq;
    else n.fail("node " + std::to_string(id[i]) + " of tree " + std::to_string(tree[i]) + " has an unknown mode '" + s + "'");
    as_node[i] = nodes++;
  }
  tree_ensemble& t = c.walk;
  for (std::size_t i = 0; i < count; ++i) {
    if (as_node[i] < 0) continue;
    if (feature[i] < 0) n.fail("node " + std::to_string(id[i]) + " of tree " + std::to_string(tree[i]) + " has a negative feature id");
    t.feature.push_back(feature[i]);
    t.split.push_back(values[i]);
    t.modes.push_back(mode[i]);
    t.missing_true.push_back(!missing.empty() && missing[i] != 0);
    t.members.emplace_back();
    auto branch = [&](i64 child, std::vector<i64>& ids, std::vector<std::uint8_t>& leaf) {
      auto it = index.find({tree[i], child});
      if (it == index.end())
        n.fail("node " + std::to_string(id[i]) + " of tree " + std::to_string(tree[i]) + " branches to node " + std::to_string(child) +
               ", which the tree does not have");
      const bool is_leaf = as_leaf[it->second] >= 0;
      ids.push_back(is_leaf ? as_leaf[it->second] : as_node[it->second]);
      leaf.push_back(is_leaf ? 1 : 0);
    };
    branch(yes[i], t.true_id, t.true_leaf);
    branch(no[i], t.false_id, t.false_leaf);
  }
  for (std::size_t root : trees) {
    c.root_node.push_back(as_node[root]);
    c.root_leaf.push_back(as_leaf[root] >= 0 ? static_cast<std::size_t>(as_leaf[root]) : 0);
  }
  // the weights, grouped by leaf
  const auto wt = ints_attr(n, (w + "_treeids").c_str(), true), wn = ints_attr(n, (w + "_nodeids").c_str(), true),
             wi = ints_attr(n, (w + "_ids").c_str(), true);
  const auto wv = floats_or_tensor(n, w + "_weights");
  if (wn.size() != wt.size() || wi.size() != wt.size() || wv.size() != wt.size())
    n.fail("the " + w + "_* attributes must have the same length (" + std::to_string(wt.size()) + " weights)");
  std::vector<i64> leaf_of(wt.size());
  c.weight_begin.assign(static_cast<std::size_t>(leaves) + 1, 0);
  for (std::size_t k = 0; k < wt.size(); ++k) {
    auto it = index.find({wt[k], wn[k]});
    if (it == index.end() || as_leaf[it->second] < 0)
      n.fail(w + " weight " + std::to_string(k) + " is for node " + std::to_string(wn[k]) + " of tree " + std::to_string(wt[k]) +
             (it == index.end() ? ", which does not exist" : ", which is not a LEAF"));
    if (wi[k] < 0 || wi[k] >= outputs)
      n.fail(w + " id " + std::to_string(wi[k]) + " (weight " + std::to_string(k) + ") is outside [0, " + std::to_string(outputs) + ")");
    leaf_of[k] = as_leaf[it->second];
    ++c.weight_begin[static_cast<std::size_t>(leaf_of[k]) + 1];
    c.all_positive = c.all_positive && !(wv[k] < 0);
    c.only_id = c.only_id == -1 || c.only_id == wi[k] ? wi[k] : -2;  // (no table sized by n_targets, an attribute)
  }
  for (std::size_t l = 1; l < c.weight_begin.size(); ++l) c.weight_begin[l] += c.weight_begin[l - 1];
  std::vector<std::size_t> next(c.weight_begin.begin(), c.weight_begin.end() - 1);
  c.weight_id.resize(wt.size());
  c.weight.resize(wt.size());
  for (std::size_t k = 0; k < wt.size(); ++k) {
    const std::size_t at = next[static_cast<std::size_t>(leaf_of[k])]++;
    c.weight_id[at] = wi[k];
    c.weight[at] = wv[k];
  }
  return c;
}

inline i64 read_aggregate(const kernel_node& n) {
  const std::string a = n.attr<std::string>("aggregate_function", "SUM");
  if (a == "AVERAGE") return 0;
  if (a == "SUM") return 1;
  if (a == "MIN") return 2;
  if (a == "MAX") return 3;
  n.fail("aggregate_function must be AVERAGE, SUM, MIN or MAX, got '" + a + "'");
}

/// Per output of one row: the aggregate of the weights of the leaves reached (`hit`: some
/// weight went to it; MIN and MAX of an output no weight reaches are 0, as ONNX Runtime has it).
inline void forest_scores(const classic_forest& c, const double* x, i64 features, i64 aggregate, double* y, char* hit,
                          i64 outputs, const kernel_node& n) {
  std::fill_n(y, outputs, 0.0);
  std::fill_n(hit, outputs, 0);
  for (std::size_t t = 0; t < c.root_node.size(); ++t) {
    const std::size_t leaf = c.leaf(t, x, features, n);
    for (std::size_t k = c.weight_begin[leaf]; k < c.weight_begin[leaf + 1]; ++k) {
      const auto o = static_cast<std::size_t>(c.weight_id[k]);
      const double w = c.weight[k];
      if (!hit[o] || aggregate <= 1) y[o] = hit[o] ? y[o] + w : w;
      else y[o] = aggregate == 2 ? std::min(y[o], w) : std::max(y[o], w);
      hit[o] = 1;
    }
  }
  if (aggregate == 0)
    for (i64 o = 0; o < outputs; ++o) y[o] /= static_cast<double>(c.root_node.size());
}

inline void register_classic_trees(registry& r) {
  const std::vector<dtype> inputs{dtype::f32, dtype::f64, dtype::int64, dtype::int32};
  r.add({.domain = "ai.onnx.ml", .op = "TreeEnsembleRegressor", .dtypes = inputs, .make = [](const kernel_node& n) -> fn {
           if (!n.has_attr("n_targets")) n.fail("attribute 'n_targets' is required");
           const i64 targets = n.attr<i64>("n_targets");
           if (targets <= 0) n.fail("n_targets must be positive, got " + std::to_string(targets));
           auto c = std::make_shared<const classic_forest>(read_classic_forest(n, "target", targets));
           const i64 aggregate = read_aggregate(n), post = read_post_transform(n);
           const std::vector<double> base = floats_or_tensor(n, "base_values");
           if (!base.empty() && static_cast<i64>(base.size()) != targets)
             n.fail("base_values has " + std::to_string(base.size()) + " values for " + std::to_string(targets) + " targets");
           return [=](context& ctx) {
             const feature_rows x = read_rows(ctx);
             gpass::tensor& yo = ctx.allocate_output(0, dtype::f32, {x.rows, targets});
             std::vector<double> y(static_cast<std::size_t>(x.rows * targets));
             ctx.policy().parallel_for(x.rows, static_cast<double>(c->root_node.size()) * 16.0, [&](i64 lo, i64 hi) {
               std::vector<char> hit(static_cast<std::size_t>(targets));
               for (i64 row = lo; row < hi; ++row) {
                 double* yr = y.data() + row * targets;
                 forest_scores(*c, x.row(row), x.features, aggregate, yr, hit.data(), targets, ctx.node());
                 // base_values go to every target (ONNX Runtime adds none to a target no leaf weighs)
                 if (!base.empty())
                   for (i64 k = 0; k < targets; ++k) yr[k] += base[k];
                 // the transform also applies to one target (ONNX Runtime only applies PROBIT there)
                 post_transform(yr, targets, post);
               }
             });
             float* py = yo.data<float>();
             for (std::size_t i = 0; i < y.size(); ++i) py[i] = static_cast<float>(y[i]);
           };
         }});
  r.add({.domain = "ai.onnx.ml", .op = "TreeEnsembleClassifier", .dtypes = inputs, .make = [](const kernel_node& n) -> fn {
           const class_labels labels = read_class_labels(n, "classlabels_int64s", "classlabels_strings");
           const i64 classes = static_cast<i64>(labels.size());
           if (classes < 2) n.fail("needs at least two class labels, has " + std::to_string(classes));
           auto c = std::make_shared<const classic_forest>(read_classic_forest(n, "class", classes));
           const i64 post = read_post_transform(n);
           const std::vector<double> base = floats_or_tensor(n, "base_values");
           // the binary case: two classes, all weights in one column (the positive class's score)
           const i64 column = c->only_id;
           const bool binary = classes == 2 && column >= 0;
           if (!base.empty() && static_cast<i64>(base.size()) != classes && !(binary && base.size() == 1))
             n.fail("base_values has " + std::to_string(base.size()) + " values for " + std::to_string(classes) + " classes");
           return [=](context& ctx) {
             const feature_rows x = read_rows(ctx);
             allocate_classifier_outputs(ctx, labels, x.rows, classes);
             std::vector<double> z(static_cast<std::size_t>(x.rows * classes));
             std::vector<std::size_t> pick(static_cast<std::size_t>(x.rows));
             ctx.policy().parallel_for(x.rows, static_cast<double>(c->root_node.size()) * 16.0, [&](i64 lo, i64 hi) {
               std::vector<double> s(static_cast<std::size_t>(classes));
               std::vector<char> hit(static_cast<std::size_t>(classes));
               for (i64 row = lo; row < hi; ++row) {
                 forest_scores(*c, x.row(row), x.features, 1, s.data(), hit.data(), classes, ctx.node());
                 double* zr = z.data() + row * classes;
                 if (binary) {
                   // ONNX Runtime's binary case: the column is the positive class's score; with
                   // no negative weight it is a probability (label above 0.5, scores 1 - s, s),
                   // else a margin (label above 0, scores -s, s). One base value is added to it;
                   // of two, the column's (ONNX Runtime then writes a second column of 0)
                   double v = s[static_cast<std::size_t>(column)];
                   if (base.size() == 1) v += base[0];
                   else if (base.size() == 2) v += base[static_cast<std::size_t>(column)];
                   pick[static_cast<std::size_t>(row)] = (c->all_positive ? v > 0.5 : v > 0) ? 1 : 0;
                   binary_scores(v, c->all_positive, post, zr);
                   continue;
                 }
                 for (i64 k = 0; k < classes; ++k) {
                   zr[k] = s[k] + (base.empty() ? 0.0 : base[k]);
                   hit[k] = hit[k] || !base.empty();
                 }
                 // the label: the highest score before the transform among the classes that
                 // have one (as ONNX Runtime; for two classes weighed both, ONNX Runtime writes
                 // label index 1 whenever class 1's score is positive, the spec's argmax is kept)
                 std::size_t best = 0;
                 bool any = false;
                 for (std::size_t k = 0; k < static_cast<std::size_t>(classes); ++k)
                   if (hit[k] && (!any || zr[k] > zr[best])) best = k, any = true;
                 pick[static_cast<std::size_t>(row)] = best;
                 post_transform(zr, classes, post);
               }
             });
             write_labels(ctx, labels, pick);
             write_scores(ctx, 1, z);
           };
         }});
}

// ---- preprocessing: Scaler, Normalizer, Imputer, OneHotEncoder, FeatureVectorizer,
//      CategoryMapper

/// The size of the feature axis of a [N, C] or [C] input.
inline i64 feature_axis(context& ctx, const gpass::tensor& x) {
  if (x.rank() != 1 && x.rank() != 2) ctx.fail("X must be 2-D [N, C] (or 1-D [C]), got " + x.shape().to_string());
  return x.sizes().back();
}

/// A per-feature attribute list: of size 1 (every feature) or C.
inline void check_per_feature(context& ctx, const char* what, std::size_t size, i64 c) {
  if (size != 1 && static_cast<i64>(size) != c)
    ctx.fail(std::string(what) + " has " + std::to_string(size) + " values for " + std::to_string(c) + " features (1 or " +
             std::to_string(c) + ")");
}

inline void register_preprocessing(registry& r) {
  const std::vector<dtype> numbers{dtype::f32, dtype::f64, dtype::int64, dtype::int32};
  r.add({.domain = "ai.onnx.ml", .op = "Scaler", .dtypes = numbers, .make = [](const kernel_node& n) -> fn {
           // an absent offset is 0, an absent scale 1
           const std::vector<double> offset = floats_attr(n, "offset"), scale = floats_attr(n, "scale");
           return [=](context& ctx) {
             const gpass::tensor& x = ctx.input(0);
             const i64 c = feature_axis(ctx, x);
             if (!offset.empty()) check_per_feature(ctx, "offset", offset.size(), c);
             if (!scale.empty()) check_per_feature(ctx, "scale", scale.size(), c);
             gpass::tensor& y = ctx.allocate_output(0, dtype::f32, x.sizes());
             const std::vector<double> v = as_doubles(x, ctx.node());
             float* py = y.data<float>();
             for (std::size_t i = 0; i < v.size(); ++i) {
               const std::size_t f = c == 0 ? 0 : i % static_cast<std::size_t>(c);
               const double o = offset.empty() ? 0.0 : offset[offset.size() == 1 ? 0 : f];
               const double s = scale.empty() ? 1.0 : scale[scale.size() == 1 ? 0 : f];
               py[i] = static_cast<float>((v[i] - o) * s);
             }
           };
         }});
  r.add({.domain = "ai.onnx.ml", .op = "Normalizer", .dtypes = numbers, .make = [](const kernel_node& n) -> fn {
           const std::string norm = n.attr<std::string>("norm", "MAX");
           if (norm != "MAX" && norm != "L1" && norm != "L2") n.fail("norm must be MAX, L1 or L2, got '" + norm + "'");
           return [=](context& ctx) {
             const gpass::tensor& x = ctx.input(0);
             const i64 c = feature_axis(ctx, x), rows = x.rank() == 1 ? 1 : x.sizes()[0];
             gpass::tensor& y = ctx.allocate_output(0, dtype::f32, x.sizes());
             const std::vector<double> v = as_doubles(x, ctx.node());
             float* py = y.data<float>();
             for (i64 r = 0; r < rows; ++r) {
               const double* xr = v.data() + r * c;
               // MAX divides by the largest element (the spec's max(x_i), as ONNX Runtime; onnx's
               // reference takes the largest magnitude); a row whose norm is 0 is copied
               double d = norm == "MAX" ? -std::numeric_limits<double>::infinity() : 0.0;
               for (i64 f = 0; f < c; ++f) {
                 if (norm == "MAX") d = std::max(d, xr[f]);
                 else d += norm == "L1" ? std::abs(xr[f]) : xr[f] * xr[f];
               }
               if (norm == "L2") d = std::sqrt(d);
               for (i64 f = 0; f < c; ++f) py[r * c + f] = static_cast<float>(d != 0 ? xr[f] / d : xr[f]);
             }
           };
         }});
  r.add({.domain = "ai.onnx.ml", .op = "Imputer", .dtypes = numbers, .make = [](const kernel_node& n) -> fn {
           const std::vector<double> fv = floats_attr(n, "imputed_value_floats");
           const std::vector<i64> iv = ints_attr(n, "imputed_value_int64s", false);
           if (fv.empty() == iv.empty()) n.fail("exactly one of imputed_value_floats and imputed_value_int64s must be set (and not empty)");
           const double fr = static_cast<double>(n.attr<float>("replaced_value_float", 0.0f));
           const i64 ir = n.attr<i64>("replaced_value_int64", 0);
           return [=](context& ctx) {
             const gpass::tensor& x = ctx.input(0);
             const bool floats = is_floating(x.element_type());
             if (floats ? fv.empty() : iv.empty())
               ctx.fail(std::string("X of element type ") + std::string(to_string(x.element_type())) + " needs " +
                        (floats ? "imputed_value_floats" : "imputed_value_int64s"));
             const i64 c = feature_axis(ctx, x);
             check_per_feature(ctx, floats ? "imputed_value_floats" : "imputed_value_int64s", floats ? fv.size() : iv.size(), c);
             gpass::tensor& y = ctx.allocate_output(0, x.element_type(), x.sizes());
             dispatch<type_list<float, double, std::int64_t, std::int32_t>>(x.element_type(), ctx.node(), [&]<class T>() {
               const T* px = x.data<T>();
               T* py = y.data<T>();
               for (i64 i = 0; i < x.size(); ++i) {
                 const std::size_t f = static_cast<std::size_t>(c == 0 ? 0 : i % c);
                 bool replace = false;
                 if constexpr (std::is_floating_point_v<T>)
                   replace = std::isnan(fr) ? std::isnan(px[i]) : static_cast<double>(px[i]) == fr;
                 else
                   replace = static_cast<i64>(px[i]) == ir;
                 if (!replace) py[i] = px[i];
                 else if constexpr (std::is_floating_point_v<T>) py[i] = static_cast<T>(fv[fv.size() == 1 ? 0 : f]);
                 else py[i] = static_cast<T>(iv[iv.size() == 1 ? 0 : f]);
               }
             });
           };
         }});
  r.add({.domain = "ai.onnx.ml", .op = "OneHotEncoder", .dtypes = {dtype::string, dtype::int64, dtype::int32, dtype::f32, dtype::f64},
         .make = [](const kernel_node& n) -> fn {
           const std::vector<i64> ci = ints_attr(n, "cats_int64s", false);
           const std::vector<std::string> cs = strings_attr(n, "cats_strings");
           if (ci.empty() == cs.empty()) n.fail("exactly one of cats_int64s and cats_strings must be set (and not empty)");
           const bool zeros = n.attr<i64>("zeros", 1) != 0;
           std::unordered_map<i64, i64> ints;
           std::unordered_map<std::string, i64> strings;
           for (std::size_t k = 0; k < ci.size(); ++k) ints.insert_or_assign(ci[k], static_cast<i64>(k));
           for (std::size_t k = 0; k < cs.size(); ++k) strings.insert_or_assign(cs[k], static_cast<i64>(k));
           const i64 cats = static_cast<i64>(ci.empty() ? cs.size() : ci.size());
           return [=](context& ctx) {
             const gpass::tensor& x = ctx.input(0);
             const bool text = x.element_type() == dtype::string;
             if (text != !cs.empty())
               ctx.fail(std::string("X of element type ") + std::string(to_string(x.element_type())) + " needs " +
                        (text ? "cats_strings" : "cats_int64s"));
             std::vector<i64> sizes = x.sizes();
             sizes.push_back(cats);
             gpass::tensor& y = ctx.allocate_output(0, dtype::f32, sizes);
             float* py = y.data<float>();
             std::fill_n(py, y.size(), 0.0f);
             const std::vector<double> v = text ? std::vector<double>{} : as_doubles(x, ctx.node());
             for (i64 i = 0; i < x.size(); ++i) {
               i64 k = -1;
               if (text) {
                 auto it = strings.find(x.data<std::string>()[i]);
                 if (it != strings.end()) k = it->second;
               } else if (std::isfinite(v[i]) && std::abs(v[i]) < 9.2e18) {  // numbers are cast to int64
                 auto it = ints.find(static_cast<i64>(v[i]));
                 if (it != ints.end()) k = it->second;
               }
               if (k >= 0) py[i * cats + k] = 1.0f;
               else if (!zeros)
                 ctx.fail("element " + std::to_string(i) + " (" + (text ? "'" + x.data<std::string>()[i] + "'" : std::to_string(v[i])) +
                          ") is not a category and zeros is 0");
             }
           };
         }});
  r.add({.domain = "ai.onnx.ml", .op = "FeatureVectorizer", .dtypes = numbers, .make = [](const kernel_node& n) -> fn {
           const std::vector<i64> dims = ints_attr(n, "inputdimensions", true);
           i64 total = 0;
           for (i64 d : dims) {
             if (d < 0) n.fail("inputdimensions has a negative entry " + std::to_string(d));
             const auto sum = checked_add(total, d);
             if (!sum) n.fail("inputdimensions sum past int64");
             total = *sum;
           }
           return [=](context& ctx) {
             if (ctx.num_inputs() != dims.size())
               ctx.fail("has " + std::to_string(ctx.num_inputs()) + " inputs for " + std::to_string(dims.size()) + " inputdimensions");
             const gpass::tensor& x0 = ctx.input(0);
             const i64 rows = x0.rank() <= 1 ? 1 : x0.sizes()[0];
             gpass::tensor& y = ctx.allocate_output(0, dtype::f32, {rows, total});
             float* py = y.data<float>();
             std::fill_n(py, y.size(), 0.0f);
             i64 at = 0;
             for (std::size_t k = 0; k < dims.size(); ++k) {
               const gpass::tensor& x = ctx.input(k);
               const i64 xr = x.rank() <= 1 ? 1 : x.sizes()[0];
               if (xr != rows) ctx.fail("input " + std::to_string(k) + " has " + std::to_string(xr) + " rows, input 0 " + std::to_string(rows));
               const i64 width = rows == 0 ? 0 : x.size() / rows;  // each row's values, beyond the first axis
               const std::vector<double> v = as_doubles(x, ctx.node());
               // a row longer than its inputdimensions entry is cut, a shorter one padded with 0
               for (i64 r = 0; r < rows; ++r)
                 for (i64 f = 0; f < std::min(width, dims[k]); ++f) py[r * total + at + f] = static_cast<float>(v[r * width + f]);
               at += dims[k];
             }
           };
         }});
  r.add({.domain = "ai.onnx.ml", .op = "CategoryMapper", .dtypes = {dtype::string, dtype::int64}, .make = [](const kernel_node& n) -> fn {
           const std::vector<i64> ci = ints_attr(n, "cats_int64s", false);
           const std::vector<std::string> cs = strings_attr(n, "cats_strings");
           if (ci.size() != cs.size())
             n.fail("cats_int64s (" + std::to_string(ci.size()) + ") and cats_strings (" + std::to_string(cs.size()) + ") differ in length");
           auto m = std::make_shared<string_int_map>(string_int_defaults(n));
           for (std::size_t k = 0; k < ci.size(); ++k) {  // a repeated category: its first pair
             m->to_int.emplace(cs[k], ci[k]);
             m->to_string.emplace(ci[k], cs[k]);
           }
           return [m = std::shared_ptr<const string_int_map>(std::move(m))](context& ctx) { m->run(ctx); };
         }});
}

// ---------------------------------------------------------------------------------------
// ai.onnx.preview.training: Adagrad, Adam, Momentum

/// The scalars R (learning rate) and T (update count) of an optimizer node.
inline std::pair<double, i64> rate_and_count(context& ctx) {
  const gpass::tensor &r = ctx.input(0), &t = ctx.input(1);
  if (r.size() != 1 || t.size() != 1) ctx.fail("R and T must be scalars (one element each)");
  if (t.element_type() != dtype::int64) ctx.fail("T must be int64");
  return {as_doubles(r, ctx.node())[0], t.data<i64>()[0]};
}

/// Runs an optimizer whose inputs are R, T and `groups` groups of n tensors (X, G, state...)
/// and whose outputs are the groups but the gradients. `step(x, g, state, n_state, out...)`
/// updates one element: `in[k]` is the element of group k, `out[k]` the new value of output
/// group k.
template <std::size_t Groups, class Step>
void run_optimizer(context& ctx, Step step) {
  const std::size_t n_in = ctx.num_inputs();
  if (n_in < 2 + Groups || (n_in - 2) % Groups != 0)
    ctx.fail("expects R, T and " + std::to_string(Groups) + " groups of equally many tensors, has " + std::to_string(n_in) + " inputs");
  const std::size_t n = (n_in - 2) / Groups;
  const auto [rate, count] = rate_and_count(ctx);
  for (std::size_t i = 0; i < n; ++i) {
    const gpass::tensor& x = ctx.input(2 + i);
    std::array<std::vector<double>, Groups> in;
    for (std::size_t k = 0; k < Groups; ++k) {
      const gpass::tensor& t = ctx.input(2 + k * n + i);
      if (t.sizes() != x.sizes() || t.element_type() != x.element_type())
        ctx.fail("input " + std::to_string(2 + k * n + i) + " " + std::string(to_string(t.element_type())) + t.shape().to_string() +
                 " does not match X " + std::string(to_string(x.element_type())) + x.shape().to_string());
      in[k] = as_doubles(t, ctx.node());
    }
    std::array<std::vector<double>, Groups - 1> out;
    for (auto& o : out) o.resize(static_cast<std::size_t>(x.size()));
    for (std::size_t e = 0; e < static_cast<std::size_t>(x.size()); ++e) {
      std::array<double, Groups> a;
      std::array<double, Groups - 1> b;
      for (std::size_t k = 0; k < Groups; ++k) a[k] = in[k][e];
      step(rate, count, a, b);
      for (std::size_t k = 0; k + 1 < Groups; ++k) out[k][e] = b[k];
    }
    for (std::size_t k = 0; k + 1 < Groups; ++k) {
      const std::size_t port = k * n + i;
      if (port >= ctx.num_outputs() || !ctx.output_wanted(port)) continue;
      gpass::tensor& o = ctx.allocate_output(port, x.element_type(), x.sizes());
      dispatch<type_list<float, double>>(x.element_type(), ctx.node(), [&]<class T>() {
        T* p = o.data<T>();
        for (std::size_t e = 0; e < out[k].size(); ++e) p[e] = static_cast<T>(out[k][e]);
      });
    }
  }
}

inline void register_training(registry& r) {
  const char* domain = "ai.onnx.preview.training";
  r.add({.domain = domain, .op = "Adagrad", .dtypes = {dtype::f32, dtype::f64}, .make = [](const kernel_node& n) -> fn {
           const double decay = n.attr<double>("decay_factor", 0.0), eps = n.attr<double>("epsilon", 1e-6),
                        norm = n.attr<double>("norm_coefficient", 0.0);
           return [=](context& ctx) {
             run_optimizer<3>(ctx, [&](double rate, i64 t, const std::array<double, 3>& a, std::array<double, 2>& b) {
               const double x = a[0], g = norm * x + a[1], h = a[2] + g * g;
               const double r_t = rate / (1.0 + static_cast<double>(t) * decay);
               b[0] = x - r_t * g / (std::sqrt(h) + eps);
               b[1] = h;
             });
           };
         }});
  r.add({.domain = domain, .op = "Adam", .dtypes = {dtype::f32, dtype::f64}, .make = [](const kernel_node& n) -> fn {
           const double alpha = n.attr<double>("alpha", 0.9), beta = n.attr<double>("beta", 0.999), eps = n.attr<double>("epsilon", 1e-6),
                        norm = n.attr<double>("norm_coefficient", 0.0), post = n.attr<double>("norm_coefficient_post", 0.0);
           return [=](context& ctx) {
             run_optimizer<4>(ctx, [&](double rate, i64 t, const std::array<double, 4>& a, std::array<double, 3>& b) {
               const double x = a[0], g = norm * x + a[1];
               const double v = alpha * a[2] + (1 - alpha) * g, h = beta * a[3] + (1 - beta) * g * g;
               const double td = static_cast<double>(t);
               // bias correction of the moments after the first update
               const double r_t = t > 0 ? rate * std::sqrt(1 - std::pow(beta, td)) / (1 - std::pow(alpha, td)) : rate;
               b[0] = (1 - post) * (x - r_t * (v / (std::sqrt(h) + eps)));
               b[1] = v;
               b[2] = h;
             });
           };
         }});
  r.add({.domain = domain, .op = "Momentum", .dtypes = {dtype::f32, dtype::f64}, .make = [](const kernel_node& n) -> fn {
           for (const char* a : {"alpha", "beta", "mode", "norm_coefficient"})
             if (!n.has_attr(a)) n.fail(std::string("attribute '") + a + "' is required");
           const double alpha = n.attr<double>("alpha"), beta = n.attr<double>("beta"), norm = n.attr<double>("norm_coefficient");
           const std::string mode = n.attr<std::string>("mode");
           if (mode != "standard" && mode != "nesterov") n.fail("mode must be 'standard' or 'nesterov', got '" + mode + "'");
           const bool nesterov = mode == "nesterov";
           return [=](context& ctx) {
             run_optimizer<3>(ctx, [&](double rate, i64 t, const std::array<double, 3>& a, std::array<double, 2>& b) {
               const double x = a[0], g = norm * x + a[1];
               const double v = alpha * a[2] + (t > 0 ? beta : 1.0) * g;  // the gradient's weight is 1 at the first update
               b[0] = nesterov ? x - rate * (g + alpha * v) : x - rate * v;
               b[1] = v;
             });
           };
         }});
}

}  // namespace ml_impl

/// Registers the ai.onnx.ml and ai.onnx.preview.training kernels in `r`.
inline void register_ml(registry& r) {
  ml_impl::register_array_feature_extractor(r);
  ml_impl::register_binarizer(r);
  ml_impl::register_label_encoder(r);
  ml_impl::register_tree_ensemble(r);
  ml_impl::register_linear(r);
  ml_impl::register_svm(r);
  ml_impl::register_classic_trees(r);
  ml_impl::register_preprocessing(r);
  ml_impl::register_training(r);
}

}  // namespace gpass::exec::cpu_detail
