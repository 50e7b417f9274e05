// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file ml.hpp
/// Eigen CPU kernels of ONNX's other standard domains: `ai.onnx.ml` (ArrayFeatureExtractor,
/// Binarizer, LabelEncoder 1, 2 and 4, TreeEnsemble 5 with its aggregations and post
/// transforms) and `ai.onnx.preview.training` (Adagrad, Adam, Momentum with the standard and
/// Nesterov rules, any number of tensors per node). The optimizers compute in double and
/// round once to the tensors' type. Private (`gpass::exec::cpu_detail`); `register_ml` adds
/// them to a registry.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
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
      const auto v = as_doubles(t, n);
      for (std::size_t i = 0; i < v.size(); ++i) m.keys.integers.insert_or_assign(static_cast<i64>(v[i]), i);
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
inline void apply_label_map(const label_map& m, const gpass::tensor& x, gpass::tensor& y, const kernel_node& n) {
  dispatch<type_list<std::string, float, double, std::int64_t, std::int32_t, std::int16_t>>(y.element_type(), n, [&]<class T>() {
    const T* vals = m.values.data<T>();
    const T def = m.fallback.data<T>()[0];
    T* py = y.data<T>();
    for (i64 i = 0; i < x.size(); ++i) {
      const std::size_t k = m.keys.find(x, i);
      py[i] = k == std::numeric_limits<std::size_t>::max() ? def : vals[k];
    }
  });
}

inline void register_label_encoder(registry& r) {
  const std::vector<dtype> types{dtype::string, dtype::int64, dtype::f32, dtype::int32, dtype::int16, dtype::f64};
  // version 1: strings -> their index in classes_strings, int64 -> the class name
  r.add({.domain = "ai.onnx.ml", .op = "LabelEncoder", .since_version = 1, .dtypes = {dtype::string, dtype::int64},
         .make = [](const kernel_node& n) -> fn {
           std::vector<std::string> classes = n.attr<std::vector<std::string>>("classes_strings", {});
           std::unordered_map<std::string, i64> index;
           for (std::size_t i = 0; i < classes.size(); ++i) index.insert_or_assign(classes[i], static_cast<i64>(i));
           const i64 def_int = n.attr<i64>("default_int64", -1);
           const std::string def_string = n.attr<std::string>("default_string", "_Unused");
           return [classes, index, def_int, def_string](context& ctx) {
             const gpass::tensor& x = ctx.input(0);
             if (x.element_type() == dtype::string) {
               gpass::tensor& y = ctx.allocate_output(0, dtype::int64, x.sizes());
               for (i64 i = 0; i < x.size(); ++i) {
                 auto it = index.find(x.data<std::string>()[i]);
                 y.data<i64>()[i] = it == index.end() ? def_int : it->second;
               }
             } else {
               gpass::tensor& y = ctx.allocate_output(0, dtype::string, x.sizes());
               for (i64 i = 0; i < x.size(); ++i) {
                 const i64 v = x.data<i64>()[i];
                 y.data<std::string>()[i] = v >= 0 && v < static_cast<i64>(classes.size()) ? classes[static_cast<std::size_t>(v)] : def_string;
               }
             }
           };
         }});
  r.add({.domain = "ai.onnx.ml", .op = "LabelEncoder", .since_version = 2, .dtypes = types, .make = [](const kernel_node& n) -> fn {
           auto m = std::make_shared<const label_map>(read_label_map(n));
           return [m](context& ctx) {
             const gpass::tensor& x = ctx.input(0);
             if (!m->keys.accepts(x.element_type()))
               ctx.fail("X of element type " + std::string(to_string(x.element_type())) + " does not match the keys' type");
             gpass::tensor& y = ctx.allocate_output(0, m->values.element_type(), x.sizes());
             apply_label_map(*m, x, y, ctx.node());
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
  ml_impl::register_training(r);
}

}  // namespace gpass::exec::cpu_detail
