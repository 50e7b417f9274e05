// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file batch_split.hpp
/// Batch separability: whether a graph computes each sample of its batch from that sample
/// alone, so that a plan may run a batch as sub-batches (one per thread, or sample by sample)
/// and concatenate the results. `analyze_batch_split` proves it from the op semantics and
/// the inferred symbolic shapes; `plan` uses the proof (see `plan_options::split_batch`).

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <gpass/core/attribute.hpp>
#include <gpass/core/dim.hpp>
#include <gpass/core/tensor.hpp>
#include <gpass/core/type.hpp>
#include <gpass/graph/node_map.hpp>
#include <gpass/exec/value.hpp>
#include <gpass/graph/topological_order.hpp>
#include <gpass/ops/constant_node.hpp>
#include <gpass/ops/onnx/shape_ops.hpp>
#include <gpass/ops/opset.hpp>

namespace gpass::exec {

/// What `analyze_batch_split` found. A graph is separable over the symbol `symbol` when every
/// input either does not involve it or has it at exactly one axis as `coeff * symbol` (its
/// batch axis: sample `s` owns the indices `[s*coeff, (s+1)*coeff)` there), every result
/// has it likewise, and every node computes a sample's part of its outputs from the same
/// sample's part of its inputs (plus values that do not depend on the batch).
struct batch_split_info {
  bool separable = false;
  std::string reason;                 ///< why not (names the node and op), when not separable
  std::string symbol;                 ///< the batch size's symbol (axis 0 of the first input that has one)
  std::vector<int> input_axis;        ///< per graph input (index order): batch axis, -1 when not batched
  std::vector<std::int64_t> input_coeff;
  std::vector<int> output_axis;       ///< per result: batch axis
  std::vector<std::int64_t> output_coeff;
  double sample_bytes = 0;            ///< bytes the nodes' batched outputs take per sample (static dims only)
  double constant_bytes = 0;          ///< bytes of the constants a run reads whole (weights; not tables it only gathers rows of)
  bool recurrent = false;             ///< has an RNN / LSTM / GRU node (a long chain of small steps per node)
};

namespace detail::batch {

// The abstract value of one output port.
enum class kind : std::uint8_t {
  constant,  // does not depend on the batch (its values are the same whatever the batch size)
  sizes,     // depends on the batch size only (computed from Shape / Size of batched values)
  batched,   // per sample along `axis`
};
struct state {
  kind k = kind::constant;
  int axis = -1;
  std::int64_t coeff = 0;
};

// `d` is `c * symbol` (c >= 1); returns c, else 0.
inline std::int64_t batch_coeff(const dim& d, const std::string& sym) {
  if (!d.is_symbolic() || d.constant() != 0 || d.terms().size() != 1) return 0;
  const auto& [s, c] = d.terms()[0];
  return s == sym && c > 0 ? c : 0;
}
// `d` may depend on the symbol (unknown dims may).
inline bool mentions(const dim& d, const std::string& sym) {
  if (d.is_unknown()) return true;
  for (const auto& t : d.terms())
    if (t.first == sym) return true;
  return false;
}
// The batch axis of a tensor type (exactly one dim `c * sym`, no other dim involving it).
inline std::optional<state> batched_type(const type& t, const std::string& sym) {
  if (!t.is_tensor() || !t.tensor().shape.has_rank()) return std::nullopt;
  const auto& dims = t.tensor().shape.dims();
  state s{kind::batched, -1, 0};
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (const std::int64_t c = batch_coeff(dims[i], sym); c > 0) {
      if (s.axis >= 0) return std::nullopt;
      s.axis = static_cast<int>(i);
      s.coeff = c;
    } else if (mentions(dims[i], sym)) {
      return std::nullopt;
    }
  }
  if (s.axis < 0) return std::nullopt;
  return s;
}
// The type is a tensor's that does not involve the symbol at all (other types, whose
// contents the shapes do not show, never are).
inline bool free_of(const type& t, const std::string& sym) {
  if (!t.is_tensor()) return false;
  if (!t.tensor().shape.has_rank()) return false;
  for (const auto& d : t.tensor().shape.dims())
    if (mentions(d, sym)) return false;
  return true;
}
// Bytes per sample of a batched type with otherwise static dims (0 when not static).
inline double sample_bytes(const type& t, const state& s) {
  if (!t.is_tensor() || t.tensor().element == dtype::string) return 0;
  double n = static_cast<double>(size_of(t.tensor().element));
  const auto& dims = t.tensor().shape.dims();
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (static_cast<int>(i) == s.axis) n *= static_cast<double>(s.coeff);
    else if (dims[i].is_known()) n *= static_cast<double>(dims[i].value());
    else return 0;
  }
  return n;
}
// The rank of a tensor type, -1 when unranked.
inline int rank_of(const type& t) {
  return t.is_tensor() && t.tensor().shape.has_rank() ? static_cast<int>(t.tensor().shape.rank()) : -1;
}
// Dims before `axis` all known 1 (a sample's elements are then one contiguous run).
inline bool leading_ones(const type& t, int axis) {
  const auto& dims = t.tensor().shape.dims();
  for (int i = 0; i < axis; ++i)
    if (!dims[static_cast<std::size_t>(i)].is_known() || dims[static_cast<std::size_t>(i)].value() != 1) return false;
  return true;
}

inline bool is_elementwise(std::string_view domain, std::string_view op) {
  if (domain == "gpass") return op == "FusedElementwise" || op == "Gelu";
  if (domain == "com.microsoft") return op == "Gelu" || op == "FastGelu" || op == "BiasGelu" || op == "QuickGelu";
  if (!domain.empty() && domain != "ai.onnx") return false;
  static constexpr std::string_view ops[] = {
      "Add", "Sub", "Mul", "Div", "Pow", "Mod", "Max", "Min", "Sum", "Mean", "Equal", "Less", "Greater", "LessOrEqual",
      "GreaterOrEqual", "And", "Or", "Xor", "Not", "BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot",
      "Where", "PRelu", "Relu", "LeakyRelu", "Elu", "Selu", "Celu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh",
      "Softplus", "Softsign", "Abs", "Neg", "Exp", "Log", "Sqrt", "Reciprocal", "Floor", "Ceil", "Round", "Sign", "Erf",
      "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "IsNaN", "IsInf", "Cast",
      "CastLike", "Identity", "Clip", "Mish", "Gelu", "ThresholdedRelu", "Shrink", "QuantizeLinear", "DequantizeLinear"};
  return std::find(std::begin(ops), std::end(ops), op) != std::end(ops);
}
// Ops whose batch is axis 0 of every batched input and output (the other inputs: weights).
inline bool is_batch_first(std::string_view domain, std::string_view op) {
  if (domain == "gpass")
    return op == "NchwcConv" || op == "NchwcReorderInput" || op == "NchwcReorderOutput" || op == "NchwcMaxPool" ||
           op == "NchwcAveragePool" || op == "NchwcGlobalAveragePool" || op == "NchwcGlobalMaxPool" ||
           op == "FusedConv" || op == "ScaledDotProductAttention";
  if (!domain.empty() && domain != "ai.onnx") return false;
  static constexpr std::string_view ops[] = {"Conv", "ConvTranspose", "ConvInteger", "QLinearConv", "MaxPool",
                                             "AveragePool", "LpPool", "GlobalAveragePool", "GlobalMaxPool",
                                             "GlobalLpPool", "InstanceNormalization", "LRN", "SpaceToDepth",
                                             "DepthToSpace", "BatchNormalization"};
  return std::find(std::begin(ops), std::end(ops), op) != std::end(ops);
}
// Ops that read or change state outside their inputs, or draw random numbers: a graph with
// one is never split (sub-runs would each do it).
inline bool has_effects(std::string_view op) {
  // lower-case words, matched without regard to case: RandomNormal, get_global, _Send, AssignAdd...
  // (not "global" alone: GlobalAveragePool)
  static constexpr std::string_view words[] = {"random", "multinomial", "bernoulli", "_global",  "send",
                                               "recv",   "print",       "assert",    "variable", "assign",
                                               "queue",  "iterator",    "tensorarray", "stateful", "all_reduce",
                                               "allreduce", "all_gather", "allgather", "collective"};
  std::string lower(op);
  for (auto& ch : lower) ch = static_cast<char>(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch);
  for (auto w : words)
    if (lower.find(w) != std::string::npos) return true;
  return false;
}
inline std::int64_t int_attr(const attribute_map& a, std::string_view k, std::int64_t fallback) {
  auto it = a.find(k);
  return it != a.end() && it->second.template is<std::int64_t>() ? it->second.template as<std::int64_t>() : fallback;
}
inline std::optional<std::vector<std::int64_t>> ints_attr(const attribute_map& a, std::string_view k) {
  auto it = a.find(k);
  if (it == a.end()) return std::nullopt;
  if (it->second.template is<std::vector<std::int64_t>>()) return it->second.template as<std::vector<std::int64_t>>();
  if (it->second.template is<std::int64_t>()) return std::vector<std::int64_t>{it->second.template as<std::int64_t>()};
  return std::nullopt;
}
inline std::optional<std::vector<std::int64_t>> int_values(const tensor& t) {
  std::vector<std::int64_t> v;
  if (t.element_type() == dtype::int64) {
    for (auto x : t.values<std::int64_t>()) v.push_back(x);
  } else if (t.element_type() == dtype::int32) {
    for (auto x : t.values<std::int32_t>()) v.push_back(x);
  } else {
    return std::nullopt;
  }
  return v;
}
// Normalizes axes against `rank`; nullopt when one is out of range.
inline std::optional<std::vector<int>> normalized(const std::vector<std::int64_t>& axes, int rank) {
  std::vector<int> r;
  for (auto a : axes) {
    const std::int64_t n = a < 0 ? a + rank : a;
    if (n < 0 || n >= rank) return std::nullopt;
    r.push_back(static_cast<int>(n));
  }
  return r;
}

// The proof (see `analyze_batch_split`).
template <class G>
batch_split_info analyze(const G& g) {
  using node_id = typename G::node_id;
  batch_split_info info;
  auto fail = [&](std::string why) {
    info.separable = false;
    info.reason = std::move(why);
    return info;
  };
  const auto order = topological_order(g);
  std::vector<std::pair<std::int64_t, node_id>> args;
  std::optional<node_id> ret;
  for (auto v : order) {
    const auto& n = g[v];
    if (n.domain.empty() && n.op == "arg") args.emplace_back(int_attr(n.attrs, "index", static_cast<std::int64_t>(args.size())), v);
    if (n.domain.empty() && n.op == "return") ret = v;
    if (n.domain.empty() && n.op == "function_entry") return fail("a function body");
  }
  if (!ret) return fail("no return node");
  std::stable_sort(args.begin(), args.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  // the batch symbol: axis 0 of the first input whose axis 0 is a symbol
  for (auto& [i, v] : args) {
    (void)i;
    const auto& outs = g[v].outputs;
    if (outs.empty() || !outs[0].is_tensor() || !outs[0].tensor().shape.has_rank() || outs[0].tensor().shape.rank() == 0) continue;
    const dim& d0 = outs[0].tensor().shape[0];
    if (d0.is_single_symbol()) {
      info.symbol = d0.terms()[0].first;
      break;
    }
  }
  if (info.symbol.empty()) return fail("no input has a symbolic batch size (axis 0)");
  const std::string& sym = info.symbol;
  const int onnx_opset = graph_opset(g, "");

  node_map<G, std::vector<state>> st(g);
  // how each constant is read: 1 whole (an operand), 2 by rows (Gather's data: embedding tables)
  node_map<G, std::uint8_t> read(g, 0);
  for (auto& [i, v] : args) {
    (void)i;
    const auto& n = g[v];
    const type t = n.outputs.empty() ? type{} : n.outputs[0];
    if (auto s = batched_type(t, sym)) {
      if (!t.is_tensor() || t.tensor().element == dtype::string) return fail("input '" + n.name + "' is not a numeric tensor");
      st[v] = {*s};
      info.input_axis.push_back(s->axis);
      info.input_coeff.push_back(s->coeff);
    } else if (free_of(t, sym)) {
      st[v] = {state{}};
      info.input_axis.push_back(-1);
      info.input_coeff.push_back(0);
    } else {
      return fail("input '" + n.name + "' (" + t.to_string() + ") is neither batched at one axis nor free of the batch size '" +
                  sym + "'");
    }
  }

  for (auto v : order) {
    const auto& n = g[v];
    const std::string_view op = n.op, domain = n.domain;
    if (domain.empty() && (op == "arg" || op == "return")) continue;
    const std::string where = "node '" + n.name + "' (" + std::string(domain.empty() ? "" : std::string(domain) + "::") + n.op + ")";
    if (!g.control_inputs(v).empty()) return fail(where + " has control inputs");
    for (const auto& [k, a] : n.attrs)
      if (a.template is<function_ref>() || a.template is<std::vector<function_ref>>()) return fail(where + " calls a function");
    if (has_effects(op)) return fail(where + " has effects (state or random numbers)");
    // the states of the inputs
    std::vector<state> in;
    static const type none_type;        // an omitted input's
    std::vector<const type*> in_type;  // the inputs' types, not copied
    std::vector<const tensor*> in_value;  // the value of a Constant input
    for (const auto& r : g.inputs(v)) {
      if (r.empty) {
        in.push_back(state{});
        in_type.push_back(&none_type);
        in_value.push_back(nullptr);
        continue;
      }
      const auto& pn = g[r.node];
      in.push_back(st[r.node].at(static_cast<std::size_t>(r.port)));
      in_type.push_back(&pn.outputs.at(static_cast<std::size_t>(r.port)));
      // a value not batched must not vary with the batch size in its shape (an op without a
      // rule, computing from such values only, would be taken for a constant)
      if (in.back().k != kind::batched && !free_of(*in_type.back(), sym))
        return fail(where + ": input " + std::to_string(in.size() - 1) + " (" + in_type.back()->to_string() +
                    ") varies with the batch size but is not batched at one axis");
      const tensor* c = gpass::detail::constant_value_or_null(pn);
      if (c) read[r.node] |= (op == "Gather" || op == "GatherV2") && in_value.empty() ? 2 : 1;
      in_value.push_back(c);
    }
    const std::size_t num_out = n.outputs.size();
    std::vector<state>& out = st[v];
    out.assign(num_out, state{});
    bool any_batched = false, any_sizes = false;
    for (const auto& s : in) {
      any_batched = any_batched || s.k == kind::batched;
      any_sizes = any_sizes || s.k == kind::sizes;
    }
    if (gpass::detail::is_constant_node(n)) continue;
    if (!any_batched && !any_sizes) continue;  // computed from constants only
    // the batch-size-only values: shape arithmetic
    const bool shape_of = (op == "Shape" || op == "Size") && (domain.empty() || domain == "ai.onnx");
    if (shape_of) {
      if (in.empty() || in[0].k == kind::constant) continue;
      out.assign(num_out, state{kind::sizes});
      continue;
    }
    if (!any_batched) {
      // sizes (and constants) in: shape arithmetic stays "sizes"; an op that makes a tensor
      // of those sizes makes a batched value when its type shows where the batch is
      static constexpr std::string_view arith[] = {"Gather", "Slice", "Concat", "Cast", "Squeeze", "Unsqueeze", "Reshape",
                                                   "Identity", "Add", "Sub", "Mul", "Div", "Max", "Min", "Equal",
                                                   "Where", "Abs", "Neg", "Less", "Greater", "Not", "ReduceProd",
                                                   "Flatten", "Mod", "Expand", "ConstantOfShape"};
      if (!domain.empty() || std::find(std::begin(arith), std::end(arith), op) == std::end(arith))
        return fail(where + " computes with the batch size (no rule)");
      if (op == "ConstantOfShape" || op == "Expand") {
        // the values are constants (Expand: input 0 constant; ConstantOfShape: its attribute)
        if (op == "Expand" && in[0].k != kind::constant) return fail(where + ": the batch size as data");
        auto b = batched_type(n.outputs.at(0), sym);
        if (!b) return fail(where + " makes " + n.outputs.at(0).to_string() + ", batch at no single axis");
        out[0] = *b;
        continue;
      }
      out.assign(num_out, state{kind::sizes});
      continue;
    }
    // batched inputs: sizes may only be shape operands, checked per op below
    if (num_out == 0) return fail(where + " has no outputs");
    auto fix_output = [&](std::size_t k, int axis, std::optional<std::int64_t> coeff) -> bool {
      auto b = batched_type(n.outputs.at(k), sym);
      if (!b || b->axis != axis || (coeff && b->coeff != *coeff)) return false;
      out[k] = *b;
      return true;
    };
    auto only_constant = [&](std::size_t from) {
      for (std::size_t i = from; i < in.size(); ++i)
        if (in[i].k != kind::constant) return false;
      return true;
    };
    const auto bad_output = [&](std::size_t k) {
      return fail(where + ": output " + std::to_string(k) + " (" + n.outputs.at(k).to_string() +
                  ") is not batched where the op keeps the batch");
    };
    const bool onnx = domain.empty() || domain == "ai.onnx";

    if (is_elementwise(domain, op)) {
      if (any_sizes) return fail(where + " mixes the batch size into data");
      if (num_out != 1) return fail(where + " has " + std::to_string(num_out) + " outputs");
      const int r = rank_of(n.outputs[0]);
      if (r < 0) return fail(where + ": unranked output");
      int axis = -1;
      std::int64_t coeff = 0;
      for (std::size_t i = 0; i < in.size(); ++i) {
        if (in[i].k != kind::batched) continue;
        const int ri = rank_of(*in_type[i]);
        const int a = in[i].axis + (r - ri);
        if (ri < 0 || a < 0 || (axis >= 0 && (a != axis || coeff != in[i].coeff))) return fail(where + ": inputs batched at different axes");
        axis = a;
        coeff = in[i].coeff;
      }
      if (!fix_output(0, axis, coeff)) return bad_output(0);
      continue;
    }
    if (onnx && (op == "LSTM" || op == "GRU" || op == "RNN")) {
      info.recurrent = true;
      const bool batch_major = int_attr(n.attrs, "layout", 0) != 0;
      // X; W, R, B constant; sequence_lens (4) batched at 0; initial states (5, 6) batched
      if (in[0].k != kind::batched || in[0].axis != (batch_major ? 0 : 1)) return fail(where + ": X not batched at its batch axis");
      for (std::size_t i = 1; i < in.size(); ++i) {
        if (in_type[i]->is_tensor() == false && in[i].k == kind::constant) continue;  // omitted
        const bool is_state = i == 5 || i == 6;
        if (i == 4 || is_state) {
          const int want = i == 4 ? 0 : (batch_major ? 0 : 1);
          if (in[i].k == kind::batched && in[i].axis == want && in[i].coeff == in[0].coeff) continue;
          return fail(where + ": input " + std::to_string(i) + " not batched like X");
        }
        if (in[i].k != kind::constant) return fail(where + ": weights depend on the batch");
      }
      for (std::size_t k = 0; k < num_out; ++k) {
        const int want = batch_major ? 0 : (k == 0 ? 2 : 1);
        if (!fix_output(k, want, in[0].coeff)) return bad_output(k);
      }
      continue;
    }
    if (is_batch_first(domain, op)) {
      if ((op == "MaxPool" || op == "NchwcMaxPool") && num_out > 1)
        return fail(where + ": its indices count across the batch");
      if (op == "BatchNormalization" && (int_attr(n.attrs, "training_mode", 0) != 0 || num_out != 1))
        return fail(where + " in training mode (batch statistics)");
      if (in[0].k != kind::batched || in[0].axis != 0) return fail(where + ": input 0 not batched at axis 0");
      for (std::size_t i = 1; i < in.size(); ++i) {
        if (in[i].k == kind::constant) continue;
        if (in[i].k == kind::batched && in[i].axis == 0 && in[i].coeff == in[0].coeff &&
            rank_of(*in_type[i]) == rank_of(*in_type[0]))
          continue;  // a residual added to the output
        return fail(where + ": input " + std::to_string(i) + " depends on the batch");
      }
      for (std::size_t k = 0; k < num_out; ++k)
        if (!fix_output(k, 0, in[0].coeff)) return bad_output(k);
      continue;
    }
    if (onnx && (op == "Resize" || op == "Upsample")) {
      // per-axis scales: the batch axis must keep its size (checked on the output type), which
      // maps each output index to the same input index in every coordinate mode but
      // tf_crop_and_resize (whose region of interest could cross samples)
      if (in[0].k != kind::batched || !only_constant(1)) return fail(where + ": input 0 not batched, or sizes depend on the batch");
      auto it = n.attrs.find("coordinate_transformation_mode");
      if (it != n.attrs.end() && it->second.template is<std::string>() && it->second.template as<std::string>() == "tf_crop_and_resize")
        return fail(where + " crops with a region of interest");
      if (!fix_output(0, in[0].axis, in[0].coeff)) return bad_output(0);
      continue;
    }
    if ((onnx && (op == "MatMul" || op == "Gemm")) || (domain == "gpass" && op == "FusedGemm") ||
        (domain == "com.microsoft" && op == "FusedMatMul")) {
      if (any_sizes) return fail(where + " mixes the batch size into data");
      const bool gemm = op == "Gemm" || op == "FusedGemm";
      if (domain == "com.microsoft" && (int_attr(n.attrs, "transBatchA", 0) || int_attr(n.attrs, "transBatchB", 0)))
        return fail(where + " transposes batch dims");
      const bool ta = int_attr(n.attrs, "transA", 0) != 0, tb = int_attr(n.attrs, "transB", 0) != 0;
      if (num_out != 1 || in.size() < 2) return fail(where + ": unexpected arity");
      const int ra = rank_of(*in_type[0]), rb = rank_of(*in_type[1]), r = rank_of(n.outputs[0]);
      if (ra < 2 || rb < 2 || r < 2) return fail(where + ": vector operands");
      // A: rows (not the contraction) may be batched, B: columns; batch dims of both
      int axis = -1;
      std::int64_t coeff = 0;
      if (in[0].k == kind::batched) {
        const int a = in[0].axis, row = ta ? ra - 1 : ra - 2;
        if (a != row && a >= ra - 2) return fail(where + ": the batch is A's contracted axis");
        if (gemm && a != row) return fail(where + ": A batched off its rows");
        axis = a == row ? r - 2 : a + (r - ra);
        coeff = in[0].coeff;
      }
      if (in[1].k == kind::batched) {
        if (gemm) return fail(where + ": B batched");
        const int b = in[1].axis, col = tb ? rb - 2 : rb - 1;
        if (b != col && b >= rb - 2) return fail(where + ": the batch is B's contracted axis");
        const int ob = b == col ? r - 1 : b + (r - rb);
        if (axis >= 0 && (ob != axis || coeff != in[1].coeff)) return fail(where + ": A and B batched at different axes");
        if (axis >= 0 && b == col) return fail(where + ": A's rows and B's columns both batched");
        axis = ob;
        coeff = in[1].coeff;
      }
      for (std::size_t i = 2; i < in.size(); ++i) {  // Gemm's C: broadcast over rows and columns
        if (in[i].k == kind::constant) continue;
        const int rc = rank_of(*in_type[i]);
        if (in[i].k == kind::batched && rc >= 0 && in[i].axis + (r - rc) == axis && in[i].coeff == coeff) continue;
        return fail(where + ": input " + std::to_string(i) + " batched unlike the product");
      }
      if (!fix_output(0, axis, coeff)) return bad_output(0);
      continue;
    }
    if ((onnx && (op == "Softmax" || op == "LogSoftmax" || op == "Hardmax" || op == "LayerNormalization")) ||
        (domain == "com.microsoft" && (op == "SkipLayerNormalization" || op == "SkipSimplifiedLayerNormalization"))) {
      if (any_sizes) return fail(where + " mixes the batch size into data");
      const int r = rank_of(*in_type[0]);
      if (in[0].k != kind::batched || r < 0) return fail(where + ": input 0 not batched");
      const int a = in[0].axis;
      const bool layer = op != "Softmax" && op != "LogSoftmax" && op != "Hardmax";
      std::int64_t axis = int_attr(n.attrs, "axis", layer || onnx_opset == 0 || onnx_opset >= 13 ? -1 : 1);
      if (domain == "com.microsoft") axis = -1;
      if (axis < 0) axis += r;
      // opset < 13 softmax and layer norms: axes [axis, r) are normalized together
      const bool from_axis = layer || (onnx_opset > 0 && onnx_opset < 13);
      if (from_axis ? a >= axis : a == axis) return fail(where + " normalizes over the batch axis");
      for (std::size_t i = 1; i < in.size(); ++i) {
        if (in[i].k == kind::constant) continue;
        if (in[i].k == kind::batched && in[i].axis + (r - rank_of(*in_type[i])) == a && in[i].coeff == in[0].coeff) continue;
        return fail(where + ": input " + std::to_string(i) + " batched unlike input 0");
      }
      for (std::size_t k = 0; k < num_out; ++k) {
        const int rk = rank_of(n.outputs[k]);
        if (!fix_output(k, a - (r - rk), in[0].coeff)) return bad_output(k);
      }
      continue;
    }
    if (onnx && op == "Transpose") {
      const int r = rank_of(*in_type[0]);
      std::vector<std::int64_t> perm;
      if (auto p = ints_attr(n.attrs, "perm")) perm = *p;
      else
        for (int i = r - 1; i >= 0; --i) perm.push_back(i);
      int axis = -1;
      for (std::size_t j = 0; j < perm.size(); ++j)
        if (perm[j] == in[0].axis) axis = static_cast<int>(j);
      if (!fix_output(0, axis, in[0].coeff)) return bad_output(0);
      continue;
    }
    if (onnx && (op == "Squeeze" || op == "Unsqueeze")) {
      // axes: the attribute (old opsets) or a constant input 1; Squeeze without axes squeezes
      // whatever is 1 at run time (a batch of one too): not split
      std::optional<std::vector<std::int64_t>> axes = ints_attr(n.attrs, "axes");
      if (!axes && in.size() > 1 && in_value[1]) axes = int_values(*in_value[1]);
      if (!axes || (in.size() > 1 && !in_value[1] && !ints_attr(n.attrs, "axes"))) return fail(where + ": axes not constant");
      const int r = rank_of(*in_type[0]), ro = rank_of(n.outputs[0]);
      auto ax = normalized(*axes, op == "Squeeze" ? r : ro);
      if (!ax || in[0].k != kind::batched) return fail(where + ": bad axes");
      int a = in[0].axis;
      if (op == "Squeeze") {
        if (std::find(ax->begin(), ax->end(), a) != ax->end()) return fail(where + " squeezes the batch axis");
        a -= static_cast<int>(std::count_if(ax->begin(), ax->end(), [&](int x) { return x < in[0].axis; }));
      } else {
        // the input's axes fill the output positions not in `axes`, in order
        int seen = -1;
        for (int j = 0; j < ro; ++j)
          if (std::find(ax->begin(), ax->end(), j) == ax->end() && ++seen == in[0].axis) {
            a = j;
            break;
          }
      }
      if (!fix_output(0, a, in[0].coeff)) return bad_output(0);
      continue;
    }
    if (onnx && (op == "Reshape" || op == "Flatten")) {
      // sample-major contiguous blocks on both sides: the same elements per sample
      if (in[0].k != kind::batched || !leading_ones(*in_type[0], in[0].axis)) return fail(where + ": input 0 not batched at its leading axis");
      auto b = batched_type(n.outputs[0], sym);
      if (!b || !leading_ones(n.outputs[0], b->axis)) return fail(where + " moves the batch off the leading axis");
      if (op == "Reshape" && in.size() > 1 && in[1].k == kind::batched) return fail(where + ": batched shape");
      out[0] = *b;
      continue;
    }
    if (onnx && op == "Expand") {
      if (in[0].k != kind::batched) return fail(where + ": input 0 not batched");
      if (in.size() > 1 && in[1].k == kind::batched) return fail(where + ": batched shape");
      const int r = rank_of(*in_type[0]), ro = rank_of(n.outputs[0]);
      if (!fix_output(0, in[0].axis + (ro - r), in[0].coeff)) return bad_output(0);
      continue;
    }
    if (onnx && (op == "Slice" || op == "Pad" || op == "Split" || op == "Concat" || op == "Gather" ||
                 op == "ReduceMean" || op == "ReduceSum" || op == "ReduceMax" || op == "ReduceMin" ||
                 op == "ReduceProd" || op == "ReduceL1" || op == "ReduceL2" || op == "ReduceSumSquare" ||
                 op == "ReduceLogSum" || op == "ReduceLogSumExp" || op == "ArgMax" || op == "ArgMin" ||
                 op == "CumSum" || op == "TopK")) {
      const int r = rank_of(*in_type[0]);
      if (r < 0) return fail(where + ": unranked input");
      if (op == "Concat") {
        const std::int64_t axis = int_attr(n.attrs, "axis", 0);
        int a = -1;
        for (std::size_t i = 0; i < in.size(); ++i) {
          if (in[i].k != kind::batched || (a >= 0 && (in[i].axis != a || in[i].coeff != in[0].coeff)))
            return fail(where + ": inputs not all batched alike");
          a = in[i].axis;
        }
        if ((axis < 0 ? axis + r : axis) == a) return fail(where + " concatenates along the batch axis");
        if (!fix_output(0, a, in[0].coeff)) return bad_output(0);
        continue;
      }
      if (op == "Gather") {
        if (in.size() != 2) return fail(where + ": " + std::to_string(in.size()) + " inputs");
        const std::int64_t ax0 = int_attr(n.attrs, "axis", 0), axis = ax0 < 0 ? ax0 + r : ax0;
        const int ri = rank_of(*in_type[1]);
        if (ri < 0 || in[1].k == kind::sizes) return fail(where + ": indices from the batch size");
        if (in[0].k == kind::batched && in[1].k == kind::constant) {
          if (in[0].axis == axis) return fail(where + " gathers along the batch axis");
          const int a = in[0].axis < axis ? in[0].axis : in[0].axis + ri - 1;
          if (!fix_output(0, a, in[0].coeff)) return bad_output(0);
        } else if (in[0].k == kind::constant && in[1].k == kind::batched) {
          if (!fix_output(0, static_cast<int>(axis) + in[1].axis, in[1].coeff)) return bad_output(0);
        } else {
          return fail(where + ": data and indices both batched");
        }
        continue;
      }
      if (in[0].k != kind::batched) return fail(where + ": input 0 not batched");
      const int a = in[0].axis;
      // the axes it works on: constant (attribute or input), never the batch axis
      std::optional<std::vector<std::int64_t>> axes;
      bool all_axes = false;
      if (op == "Slice") {
        if (in.size() > 3) {
          if (!in_value[3]) return fail(where + ": axes not constant");
          axes = int_values(*in_value[3]);
        } else if (in.size() >= 3) {
          std::vector<std::int64_t> all;
          if (!in_value[1]) return fail(where + ": starts not constant (no axes)");
          for (std::int64_t i = 0; i < in_value[1]->size(); ++i) all.push_back(i);
          axes = all;
        } else {
          axes = ints_attr(n.attrs, "axes");  // opset 1: attributes
          if (!axes && ints_attr(n.attrs, "starts")) {
            std::vector<std::int64_t> all;
            for (std::size_t i = 0; i < ints_attr(n.attrs, "starts")->size(); ++i) all.push_back(static_cast<std::int64_t>(i));
            axes = all;
          }
        }
        for (std::size_t i = 4; i < in.size(); ++i)
          if (in[i].k != kind::constant) return fail(where + ": steps depend on the batch");
      } else if (op == "Pad") {
        // pads constant with zeros at the batch axis (the output type check below catches the rest)
        if (in.size() > 1 && in[1].k != kind::constant) return fail(where + ": pads depend on the batch");
        if (in.size() > 3 && in[3].k != kind::constant) return fail(where + ": axes depend on the batch");
        if (in.size() > 2 && in[2].k != kind::constant) return fail(where + ": the pad value depends on the batch");
        axes = std::vector<std::int64_t>{};
      } else if (op == "Split" || op == "CumSum" || op == "TopK" || op == "ArgMax" || op == "ArgMin") {
        std::int64_t ax = int_attr(n.attrs, "axis", op == "TopK" ? -1 : 0);
        if (op == "CumSum") {
          if (in.size() < 2 || !in_value[1]) return fail(where + ": axis not constant");
          auto v = int_values(*in_value[1]);
          if (!v || v->size() != 1) return fail(where + ": bad axis");
          ax = (*v)[0];
        }
        axes = std::vector<std::int64_t>{ax};
        if (!only_constant(1)) return fail(where + ": operands depend on the batch");
      } else {  // Reduce*
        axes = ints_attr(n.attrs, "axes");
        if (!axes && in.size() > 1) {
          if (!in_value[1]) return fail(where + ": axes not constant");
          axes = int_values(*in_value[1]);
        }
        if (!axes || axes->empty()) all_axes = int_attr(n.attrs, "noop_with_empty_axes", 0) == 0;
        if (!axes) axes = std::vector<std::int64_t>{};
      }
      if (!axes) return fail(where + ": axes not known");
      auto ax = normalized(*axes, r);
      if (!ax) return fail(where + ": bad axes");
      if (auto j = std::find(ax->begin(), ax->end(), a); !all_axes && j != ax->end() && op == "Slice") {
        // a slice of the whole batch axis (start 0, end "to the end", step 1; exporters write
        // x[:, ...] so) keeps every sample whatever the batch size: not a slice of it
        const auto k = static_cast<std::size_t>(j - ax->begin());
        auto value_at = [&](std::size_t input, std::string_view attr) -> std::optional<std::int64_t> {
          std::optional<std::vector<std::int64_t>> v;
          if (in.size() > input) v = in_value[input] ? int_values(*in_value[input]) : std::nullopt;
          else if (input <= 2) v = ints_attr(n.attrs, attr);
          else return std::int64_t{1};  // steps omitted
          if (!v || v->size() != ax->size()) return std::nullopt;
          return (*v)[k];
        };
        const auto start = value_at(1, "starts"), end = value_at(2, "ends"), step = value_at(4, "steps");
        constexpr std::int64_t unbounded = gpass::detail::onnx_ops::slice_unbounded;
        if (!start || !end || !step || *step != 1 || !(*start == 0 || *start <= -unbounded) || *end < unbounded)
          return fail(where + " slices the batch axis");
        ax->erase(j);
      }
      if (all_axes || std::find(ax->begin(), ax->end(), a) != ax->end()) return fail(where + " works along the batch axis");
      if (op == "Slice")
        for (std::size_t i = 1; i < std::min<std::size_t>(in.size(), 3); ++i)
          if (in[i].k == kind::batched) return fail(where + ": batched bounds");
      int oa = a;
      const bool reduce = op.substr(0, 6) == "Reduce" || op == "ArgMax" || op == "ArgMin";
      if (reduce && int_attr(n.attrs, "keepdims", 1) == 0)
        oa -= static_cast<int>(std::count_if(ax->begin(), ax->end(), [&](int x) { return x < a; }));
      for (std::size_t k = 0; k < num_out; ++k)
        if (!fix_output(k, oa, in[0].coeff)) return bad_output(k);
      continue;
    }
    return fail(where + " has no batch-separability rule");
  }

  // results: batched tensors
  const auto rin = g.inputs(*ret);
  for (std::size_t k = 0; k < rin.size(); ++k) {
    if (rin[k].empty) return fail("result " + std::to_string(k) + " is empty");
    const state s = st[rin[k].node].at(static_cast<std::size_t>(rin[k].port));
    if (s.k != kind::batched) return fail("result " + std::to_string(k) + " ('" + g[rin[k].node].name + "') is not batched");
    const type& t = g[rin[k].node].outputs.at(static_cast<std::size_t>(rin[k].port));
    if (t.tensor().element == dtype::string || t.tensor().element == dtype::undefined)
      return fail("result " + std::to_string(k) + " ('" + g[rin[k].node].name + "') is not a numeric tensor");
    info.output_axis.push_back(s.axis);
    info.output_coeff.push_back(s.coeff);
  }
  if (rin.empty()) return fail("no results");
  if (std::none_of(info.input_axis.begin(), info.input_axis.end(), [](int a) { return a >= 0; })) return fail("no batched input");
  for (auto v : order) {
    const auto& n = g[v];
    if ((read[v] & 1) != 0)
      if (const tensor* c = gpass::detail::constant_value_or_null(n)) info.constant_bytes += static_cast<double>(c->nbytes());
    const auto& outs = n.outputs;
    const auto& s = st[v];
    for (std::size_t k = 0; k < s.size() && k < outs.size(); ++k)
      if (s[k].k == kind::batched && !(g[v].domain.empty() && g[v].op == "arg")) info.sample_bytes += sample_bytes(outs[k], s[k]);
  }
  info.separable = true;
  return info;
}

}  // namespace detail::batch

/// Proves (or refutes) that graph `g`, with the symbolic shapes `infer-shapes` gave it, is
/// separable over its batch (see `batch_split_info`). Conservative: an op it has no rule for,
/// an unknown dim, a dim that involves the batch symbol anywhere but the batch axis, control
/// flow, functions, control edges and ops with effects all make the answer "not separable",
/// with the reason. Never throws for a malformed graph (the answer is then "not separable").
/// One pass over the nodes in topological order: linear in the graph's size.
template <class G>
batch_split_info analyze_batch_split(const G& g) {
  try {
    return detail::batch::analyze(g);
  } catch (const std::exception& e) {
    batch_split_info info;
    info.reason = std::string("not analysed: ") + e.what();
    return info;
  }
}

/// How a run of a separable graph splits its batch of `n` samples on `threads` threads:
/// `parts` sub-batches run side by side (one per thread, each with single-threaded kernels),
/// each as sub-runs of at most `micro` samples.
///
/// Activation-bound graphs (a sample's values outweigh the weights: MobileNetV2's 27.5 MB to
/// 13.9 MB) take one sub-batch per thread, and run sample by sample when a sample's values
/// reach 1 MiB, so that a layer's output is still in cache when the next layer reads it (the
/// weights are read once per sample instead, which costs less). Recurrent graphs (many small
/// sequential steps, where splitting each step over the threads costs more than it gains)
/// take one sub-batch per thread. Other graphs (ResNet50: 43.8 MB a sample, 102 MB of
/// weights) run whole, their kernels split over the threads.
struct batch_split_choice {
  std::int64_t parts = 1;
  std::int64_t micro = 0;
  bool splits(std::int64_t n) const noexcept { return parts > 1 || micro < n; }
};
inline batch_split_choice choose_batch_split(const batch_split_info& info, std::int64_t n, int threads) {
  batch_split_choice c;
  c.micro = n;
  if (!info.separable || n < 2) return c;
  const bool activation_bound = info.sample_bytes > 0 && info.sample_bytes > info.constant_bytes;
  if (threads > 1 && (activation_bound || info.recurrent)) c.parts = std::min<std::int64_t>(threads, n);
  c.micro = activation_bound && info.sample_bytes >= 1024.0 * 1024.0 ? 1 : (n + c.parts - 1) / c.parts;
  return c;
}

namespace detail::batch {

// Samples [s, e) of `t` along `axis` (c elements per sample): a view of t's buffer when they
// are one contiguous 64-byte-aligned run, else a copy.
inline gpass::tensor slice_samples(const gpass::tensor& t, int axis, std::int64_t c, std::int64_t s, std::int64_t e) {
  std::vector<std::int64_t> sizes = t.sizes();
  const auto ax = static_cast<std::size_t>(axis);
  std::int64_t outer = 1, inner = static_cast<std::int64_t>(size_of(t.element_type()));
  for (std::size_t i = 0; i < ax; ++i) outer *= sizes[i];
  for (std::size_t i = ax + 1; i < sizes.size(); ++i) inner *= sizes[i];
  const std::int64_t full = sizes[ax];
  sizes[ax] = (e - s) * c;
  const std::int64_t run = sizes[ax] * inner, offset = s * c * inner;
  if (outer == 1 && offset % 64 == 0) {
    std::shared_ptr<std::byte[]> view(t.buffer(), t.buffer().get() + offset);
    return gpass::tensor::wrap(t.element_type(), std::move(sizes), std::move(view));
  }
  gpass::tensor r = gpass::tensor::uninitialized(t.element_type(), std::move(sizes));
  for (std::int64_t o = 0; o < outer; ++o)
    if (run) std::memcpy(r.raw() + o * run, t.raw() + o * full * inner + offset, static_cast<std::size_t>(run));
  return r;
}

// The pieces (in sample order) joined along `axis`.
inline gpass::tensor join_samples(const std::vector<const gpass::tensor*>& pieces, int axis) {
  const gpass::tensor& first = *pieces.front();
  std::vector<std::int64_t> sizes = first.sizes();
  const auto ax = static_cast<std::size_t>(axis);
  std::int64_t total = 0;
  for (const gpass::tensor* p : pieces) {
    if (p->element_type() != first.element_type() || p->rank() != first.rank())
      throw error("batch split: sub-batch results differ in type");
    for (std::size_t i = 0; i < sizes.size(); ++i)
      if (i != ax && p->sizes()[i] != sizes[i]) throw error("batch split: sub-batch results differ in shape off the batch axis");
    total += p->sizes()[ax];
  }
  std::int64_t outer = 1, inner = static_cast<std::int64_t>(size_of(first.element_type()));
  for (std::size_t i = 0; i < ax; ++i) outer *= sizes[i];
  for (std::size_t i = ax + 1; i < sizes.size(); ++i) inner *= sizes[i];
  sizes[ax] = total;
  gpass::tensor r = gpass::tensor::uninitialized(first.element_type(), std::move(sizes));
  std::int64_t at = 0;
  for (const gpass::tensor* p : pieces) {
    const std::int64_t run = p->sizes()[ax] * inner;
    for (std::int64_t o = 0; o < outer; ++o)
      if (run) std::memcpy(r.raw() + (o * total * inner + at * inner), p->raw() + o * run, static_cast<std::size_t>(run));
    at += p->sizes()[ax];
  }
  return r;
}

}  // namespace detail::batch

/// Runs a separable graph's batch as sub-batches (see `choose_batch_split`) when that pays:
/// `run_sub(inputs)` runs the graph on a sub-batch. Returns nothing (and leaves `inputs` as
/// they are) when the run is better made whole, or when the feeds do not match the declared
/// inputs (the whole run then reports what is wrong). The sub-batches of a part run in order
/// on one of `policy`'s threads, with `P::serial_scope` making its kernels single-threaded.
/// The batch size of `inputs` fed to a separable graph (declared `input_types`): every batched
/// input's extent at its batch axis over its coefficient, the same for all; nothing when the
/// graph is not separable, or the feeds do not match the declared inputs (count, element
/// type, rank, known sizes) or disagree on the batch size.
inline std::optional<std::int64_t> batch_size_of(const batch_split_info& info, const std::vector<type>& input_types,
                                                 const std::vector<value>& inputs) {
  if (!info.separable || inputs.size() != info.input_axis.size() || input_types.size() != inputs.size()) return std::nullopt;
  std::int64_t n = -1;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (info.input_axis[i] < 0) continue;
    if (!inputs[i].is_tensor()) return std::nullopt;
    const gpass::tensor& t = inputs[i].tensor();
    const type& want = input_types[i];
    if (!want.is_tensor() || t.element_type() != want.tensor().element || t.element_type() == dtype::string ||
        !want.tensor().shape.has_rank() || t.rank() != want.tensor().shape.rank())
      return std::nullopt;
    for (std::size_t d = 0; d < t.rank(); ++d) {
      const dim& w = want.tensor().shape[d];
      if (w.is_known() && w.value() != t.sizes()[d]) return std::nullopt;
    }
    const std::int64_t extent = t.sizes()[static_cast<std::size_t>(info.input_axis[i])], c = info.input_coeff[i];
    if (c <= 0 || extent % c != 0 || (n >= 0 && extent / c != n)) return std::nullopt;
    n = extent / c;
  }
  for (const auto& v : inputs)
    if (v.is_none()) return std::nullopt;
  if (n < 0) return std::nullopt;
  return n;
}

template <class P, class RunSub>
std::optional<std::vector<value>> run_batch_split(const P& policy, const batch_split_info& info,
                                                  const std::vector<type>& input_types, const std::vector<value>& inputs,
                                                  RunSub&& run_sub) {
  const std::optional<std::int64_t> batch = batch_size_of(info, input_types, inputs);
  if (!batch) return std::nullopt;
  const std::int64_t n = *batch;
  const batch_split_choice choice = choose_batch_split(info, n, policy.threads());
  if (n < 2 || !choice.splits(n)) return std::nullopt;

  const std::int64_t parts = choice.parts;
  std::vector<std::vector<std::vector<value>>> results(static_cast<std::size_t>(parts));
  auto run_part = [&](std::int64_t p) {
    typename P::serial_scope serial;
    const std::int64_t s0 = p * n / parts, s1 = (p + 1) * n / parts;
    for (std::int64_t s = s0; s < s1; s += choice.micro) {
      const std::int64_t e = std::min(s1, s + choice.micro);
      std::vector<value> sub;
      sub.reserve(inputs.size());
      for (std::size_t i = 0; i < inputs.size(); ++i)
        sub.push_back(info.input_axis[i] < 0 ? inputs[i]
                                             : value(detail::batch::slice_samples(inputs[i].tensor(), info.input_axis[i],
                                                                                  info.input_coeff[i], s, e)));
      results[static_cast<std::size_t>(p)].push_back(run_sub(std::move(sub)));
    }
  };
  if (parts > 1) {
    policy.parallel_for(parts, 1e12, [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t p = b; p < e; ++p) run_part(p);
    });
  } else {
    run_part(0);
  }
  std::vector<value> out;
  const std::size_t num_out = info.output_axis.size();
  for (std::size_t k = 0; k < num_out; ++k) {
    std::vector<const gpass::tensor*> pieces;
    for (const auto& part : results)
      for (const auto& r : part) {
        if (r.size() != num_out || !r[k].is_tensor()) throw error("batch split: a sub-batch gave no tensor for result " + std::to_string(k));
        pieces.push_back(&r[k].tensor());
      }
    out.emplace_back(detail::batch::join_samples(pieces, info.output_axis[k]));
  }
  return out;
}

}  // namespace gpass::exec
