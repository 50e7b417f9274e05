// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file nchwc_layout.hpp
/// `gpass::nchwc_layout`: the "nchwc-layout" pass: a CPU network's f32 convolutions, pools and
/// the element-wise ops between them computed in the channel-blocked layout of
/// `exec/eigen_cpu/kernels/nchwc.hpp` (gpass's `Nchwc*` ops, ops/onnx/nchwc.hpp), with a
/// reorder where a value enters the blocked part of the graph and one where it leaves it.
///
/// Registered by `register_optimizer_passes` (passes/optimize.hpp; it needs the CPU kernels'
/// choice of block) and part of `O3`.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gpass/core/attribute.hpp>
#include <gpass/core/type.hpp>
#include <gpass/exec/eigen_cpu/kernels/nchwc.hpp>
#include <gpass/graph/graph.hpp>
#include <gpass/graph/library.hpp>
#include <gpass/graph/node_map.hpp>
#include <gpass/graph/topological_order.hpp>
#include <gpass/pass/context.hpp>
#include <gpass/pass/pass_base.hpp>
#include <gpass/pass/rewrite.hpp>

namespace gpass {

namespace detail {

/// One graph's rewrite into the blocked layout (see `nchwc_layout_fn`).
template <class G>
class nchwc_rewrite {
 public:
  using node_id = typename G::node_id;

  nchwc_rewrite(G& g, std::int64_t block) : g_(g), rw_(g), b_(block) {}

  struct counts {
    std::int64_t convs = 0, pools = 0, elementwise = 0, reorders_in = 0, reorders_out = 0;
  };

  counts run() {
    // data-edge order, taken before any edit (nodes on data cycles are never reached)
    node_map<G, std::size_t> pending(g_, 0);
    std::vector<node_id> order = data_sources(g_, pending);
    for (std::size_t head = 0; head < order.size(); ++head)
      for (const auto& u : g_.uses(order[head]))
        if (--pending[u.node] == 0) order.push_back(u.node);
    for (node_id v : order) {
      const auto& n = g_[v];
      if (is_gpu(n.device) || !g_.control_inputs(v).empty() || !g_.control_outputs(v).empty()) continue;
      if ((n.domain.empty() && n.op == "Conv") || (n.domain == "gpass" && n.op == "FusedConv")) convert_conv(v);
      else if (n.domain.empty() && (n.op == "MaxPool" || n.op == "AveragePool" || n.op == "GlobalAveragePool" ||
                                    n.op == "GlobalMaxPool"))
        convert_pool(v);
      else if (n.domain.empty()) convert_elementwise(v);
    }
    // the converted nodes, consumers first: gone when every reader was converted, else a
    // reorder of their blocked value back to NCHW under their name
    for (auto it = converted_.rbegin(); it != converted_.rend(); ++it) {
      const node_id v = *it;
      const node_id bv = blocked_.at(key(v, 0));
      if (g_.uses(v).empty()) {
        rw_.erase(v);
        continue;
      }
      typename G::node_type r;
      r.op = "NchwcReorderOutput";
      r.domain = "gpass";
      r.device = g_[v].device;
      r.attrs["channels"] = g_[v].outputs[0].tensor().shape.dims()[1].value();
      r.outputs.assign(1, g_[v].outputs[0]);
      rw_.replace_with(v, std::move(r), {{bv, 0}});
      ++n_.reorders_out;
    }
    rw_.finish();
    return n_;
  }

 private:
  static bool is_gpu(std::string_view device) {
    return device.find("GPU") != std::string_view::npos || device.find("gpu") != std::string_view::npos ||
           device.find("cuda") != std::string_view::npos;
  }
  std::pair<std::size_t, int> key(node_id v, int port) const { return {g_.serial(v), port}; }

  /// The type of input `i` of `v` when it is an f32 [N, C, H, W] with C known.
  const tensor_type* nchw_input(node_id v, int i) const {
    if (g_.num_inputs(v) <= static_cast<std::size_t>(i)) return nullptr;
    const auto in = g_.input(v, i);
    if (in.empty) return nullptr;
    return nchw(g_[in.node].outputs[static_cast<std::size_t>(in.port)]);
  }
  static const tensor_type* nchw(const type& t) {
    if (!t.is_tensor()) return nullptr;
    const tensor_type& tt = t.tensor();
    if (tt.element != dtype::f32 || !tt.shape.has_rank() || tt.shape.rank() != 4 || !tt.shape.dims()[1].is_known() ||
        tt.shape.dims()[1].value() <= 0)
      return nullptr;
    return &tt;
  }
  /// [N, ceil(C / b), H, W, b] of an NCHW type.
  type blocked_type(const tensor_type& t) const {
    const auto& d = t.shape.dims();
    return tensor_type{dtype::f32, shape{d[0], dim(exec::cpu_detail::nchwc::blocks(d[1].value(), b_)), d[2], d[3], dim(b_)}};
  }

  std::optional<node_id> blocked_of(node_id v, int port) const {
    auto it = blocked_.find(key(v, port));
    return it == blocked_.end() ? std::nullopt : std::optional<node_id>(it->second);
  }
  /// The blocked version of input `i` of `v` (an NCHW f32 value): the one made already, or a
  /// new `NchwcReorderInput` of it.
  node_id blocked_input(node_id v, int i) {
    const auto in = g_.input(v, i);
    if (auto b = blocked_of(in.node, in.port)) return *b;
    typename G::node_type r;
    r.op = "NchwcReorderInput";
    r.domain = "gpass";
    r.device = g_[v].device;
    r.name = g_.unique_name(g_[in.node].name + "/nchwc_in");
    r.attrs["block"] = b_;
    r.outputs.assign(1, blocked_type(*nchw(g_[in.node].outputs[static_cast<std::size_t>(in.port)])));
    const node_id nv = rw_.add_node(std::move(r));
    g_.add_input(nv, in.node, in.port);
    blocked_.emplace(key(in.node, in.port), nv);
    ++n_.reorders_in;
    return nv;
  }

  /// A blocked copy of `v` (op `op`, attributes `attrs`) reading `inputs` (a port of -1: an
  /// empty input); `v`'s blocked version from now on.
  void add_blocked(node_id v, std::string op, attribute_map attrs, const std::vector<std::pair<node_id, int>>& inputs) {
    typename G::node_type n;
    n.op = std::move(op);
    n.domain = op_domain_;
    n.device = g_[v].device;
    n.name = g_.unique_name(g_[v].name + "/nchwc");
    n.attrs = std::move(attrs);
    n.outputs.assign(1, blocked_type(*nchw(g_[v].outputs[0])));
    const node_id nv = rw_.add_node(std::move(n));
    for (const auto& [src, port] : inputs) {
      if (port < 0) g_.add_empty_input(nv);
      else g_.add_input(nv, src, port);
    }
    blocked_.emplace(key(v, 0), nv);
    converted_.push_back(v);
  }

  /// Conv / gpass::FusedConv (activation none, Relu or Clip; 2-D; W's shape known) whose
  /// grouping the blocked kernels have: NchwcConv on the blocked input (a network's first
  /// layers, up to 4 channels and not blocked yet, on the NCHW input itself).
  void convert_conv(node_id v) {
    const auto& n = g_[v];
    const tensor_type* xt = nchw_input(v, 0);
    if (!xt || g_.num_outputs(v) != 1 || !nchw(n.outputs[0]) || g_.num_inputs(v) < 2) return;
    const auto win = g_.input(v, 1);
    if (win.empty) return;
    const type& wty = g_[win.node].outputs[static_cast<std::size_t>(win.port)];
    if (!wty.is_tensor() || wty.tensor().element != dtype::f32 || !wty.tensor().shape.has_rank() ||
        wty.tensor().shape.rank() != 4)
      return;
    for (const auto& d : wty.tensor().shape.dims())
      if (!d.is_known()) return;
    const std::string act = get_or(n.attrs, "activation", std::string());
    if (!act.empty() && act != "Relu" && act != "Clip") return;
    if (auto ks = n.attrs.find("kernel_shape"); ks != n.attrs.end() && !ks->second.template is<std::vector<std::int64_t>>())
      return;
    exec::cpu_detail::nchwc::geometry geo;
    geo.G = get_or(n.attrs, "group", std::int64_t{1});
    geo.M = wty.tensor().shape.dims()[0].value();
    geo.C = wty.tensor().shape.dims()[1].value() * geo.G;
    if (geo.G <= 0 || geo.C != xt->shape.dims()[1].value() || geo.M % geo.G) return;
    const auto x = g_.input(v, 0);
    namespace nc = exec::cpu_detail::nchwc;
    const bool have_blocked = blocked_of(x.node, x.port).has_value();
    const bool nchw_in = !have_blocked && geo.C <= 4 && geo.G == 1;
    const bool depthwise = !nchw_in && nc::depthwise_supported(geo);
    if (!depthwise && !nc::conv_supported(geo, b_, nchw_in ? nc::conv_input::nchw : nc::conv_input::blocked)) return;
    // the residual (FusedConv's Z) must be an NCHW f32 value of the output's type
    const bool has_z = g_.num_inputs(v) >= 4 && !g_.input(v, 3).empty;
    if (has_z && (!nchw_input(v, 3) || !(g_[g_.input(v, 3).node].outputs[static_cast<std::size_t>(g_.input(v, 3).port)] == n.outputs[0])))
      return;
    attribute_map attrs;
    for (const char* k : {"auto_pad", "kernel_shape", "pads", "strides", "dilations", "group", "activation", "activation_params"})
      if (auto it = n.attrs.find(k); it != n.attrs.end()) attrs[k] = it->second;
    attrs["block"] = b_;
    std::vector<std::pair<node_id, int>> inputs;
    inputs.emplace_back(nchw_in ? x.node : blocked_input(v, 0), nchw_in ? x.port : 0);
    inputs.emplace_back(win.node, win.port);
    const bool has_b = g_.num_inputs(v) >= 3 && !g_.input(v, 2).empty;
    if (has_b || has_z) inputs.emplace_back(has_b ? g_.input(v, 2).node : win.node, has_b ? g_.input(v, 2).port : -1);
    if (has_z) inputs.emplace_back(blocked_input(v, 3), 0);
    add_blocked(v, "NchwcConv", std::move(attrs), inputs);
    ++n_.convs;
  }

  /// MaxPool (without Indices), AveragePool (2-D), GlobalAveragePool, GlobalMaxPool of a value
  /// that is blocked already (a pool alone is not worth two reorders).
  void convert_pool(node_id v) {
    const auto& n = g_[v];
    const tensor_type* xt = nchw_input(v, 0);
    if (!xt || !nchw(n.outputs[0])) return;
    for (std::size_t p = 1; p < g_.num_outputs(v); ++p)
      if (!g_.uses(v, static_cast<int>(p)).empty()) return;  // MaxPool's Indices read
    const auto x = g_.input(v, 0);
    if (!blocked_of(x.node, x.port)) return;
    attribute_map attrs;
    if (n.op == "MaxPool" || n.op == "AveragePool") {
      const auto ks = n.attrs.find("kernel_shape");
      if (ks == n.attrs.end() || !ks->second.template is<std::vector<std::int64_t>>() ||
          ks->second.template as<std::vector<std::int64_t>>().size() != 2)
        return;
      if (n.op == "MaxPool" && get_or(n.attrs, "storage_order", std::int64_t{0}) != 0) return;
      for (const char* k : {"auto_pad", "kernel_shape", "pads", "strides", "dilations", "ceil_mode", "count_include_pad"})
        if (auto it = n.attrs.find(k); it != n.attrs.end() && (n.op == "AveragePool" || std::string_view(k) != "count_include_pad"))
          attrs[k] = it->second;
    }
    attrs["block"] = b_;
    std::string op = "Nchwc" + n.op;
    const node_id xb = blocked_input(v, 0);  // (the one made already: see `blocked_of` above)
    add_blocked(v, std::move(op), std::move(attrs), {{xb, 0}});
    ++n_.pools;
  }

  /// An element-wise op of blocked values: unary ops whose value at 0 is finite (the blocks'
  /// padding channels stay finite, so the filters' zeros keep them out of every sum), and
  /// Add / Sub / Mul / Max / Min of two blocked values of one type (no broadcasting).
  void convert_elementwise(node_id v) {
    static constexpr std::array<std::string_view, 9> unary{"Relu", "Sigmoid", "Tanh", "LeakyRelu", "HardSigmoid",
                                                           "HardSwish", "Elu", "Selu", "Clip"};
    static constexpr std::array<std::string_view, 5> binary{"Add", "Sub", "Mul", "Max", "Min"};
    const auto& n = g_[v];
    const bool is_unary = std::find(unary.begin(), unary.end(), n.op) != unary.end();
    const bool is_binary = std::find(binary.begin(), binary.end(), n.op) != binary.end();
    if ((!is_unary && !is_binary) || g_.num_outputs(v) != 1 || !nchw(n.outputs[0])) return;
    const std::size_t tensors = is_binary ? 2 : 1;
    if (g_.num_inputs(v) < tensors || (is_binary && g_.num_inputs(v) != 2)) return;
    std::vector<std::pair<node_id, int>> inputs;
    for (std::size_t i = 0; i < tensors; ++i) {
      const auto in = g_.input(v, static_cast<int>(i));
      if (in.empty || !(g_[in.node].outputs[static_cast<std::size_t>(in.port)] == n.outputs[0])) return;
      auto b = blocked_of(in.node, in.port);
      if (!b) return;
      inputs.emplace_back(*b, 0);
    }
    // Clip's bounds: scalars, read as they are
    for (std::size_t i = tensors; i < g_.num_inputs(v); ++i) {
      const auto in = g_.input(v, static_cast<int>(i));
      if (in.empty) {
        inputs.emplace_back(v, -1);
        continue;
      }
      const type& t = g_[in.node].outputs[static_cast<std::size_t>(in.port)];
      if (!t.is_tensor() || !t.tensor().shape.has_rank() || t.tensor().shape.rank() != 0) return;
      inputs.emplace_back(in.node, in.port);
    }
    attribute_map attrs;
    for (const auto& [k, a] : n.attrs)
      if (!k.starts_with("_")) attrs[k] = a;  // not what inference recorded of the NCHW value
    op_domain_ = n.domain;
    std::string op = n.op;
    add_blocked(v, std::move(op), std::move(attrs), inputs);
    op_domain_ = "gpass";
    ++n_.elementwise;
  }

  G& g_;
  rewriter<G> rw_;
  std::int64_t b_;
  std::string op_domain_ = "gpass";  // the domain of the node add_blocked makes
  std::map<std::pair<std::size_t, int>, node_id> blocked_;  // NCHW value -> its blocked version
  std::vector<node_id> converted_;
  counts n_;
};

}  // namespace detail

/// Pass "nchwc-layout": what of a CPU network runs faster in the channel-blocked layout goes
/// there (kernels/nchwc.hpp: a tensor [N, C, H, W] held as [N, ceil(C / b), H, W, b]):
///
/// | node | becomes |
/// |------|---------|
/// | f32 2-D `Conv`, `gpass::FusedConv` (activation none, Relu, Clip), one group, or groups of whole blocks, or depthwise | `gpass::NchwcConv` on the blocked input (a network's first layer, up to 4 channels, on its NCHW input) |
/// | `MaxPool` (no Indices), `AveragePool`, `GlobalAveragePool`, `GlobalMaxPool` of a blocked value | `gpass::Nchwc<op>` |
/// | Relu, Sigmoid, Tanh, LeakyRelu, HardSigmoid, HardSwish, Elu, Selu, Clip of a blocked value; Add, Sub, Mul, Max, Min of two of one type | the same op on the blocked values |
///
/// A value enters the blocked part through `gpass::NchwcReorderInput` (once, whatever reads
/// it), and a converted node whose result something else reads becomes
/// `gpass::NchwcReorderOutput` of its blocked version, under its name (so graph outputs keep
/// theirs). Nodes on a device naming a GPU, and nodes with control edges, stay as they are.
/// Options: `block` (8 or 16; 0, the default: 16 where the processor has AVX-512, else 8,
/// as the CPU kernels choose), `enable` (false: nothing done). Statistics: `convs`, `pools`,
/// `elementwise`, `reorders-in`, `reorders-out`. O(V + E log V).
struct nchwc_layout_fn : pass_base<nchwc_layout_fn> {
  static constexpr std::string_view name = "nchwc-layout";
  static constexpr std::string_view description =
      "CPU convolutions and pools in the channel-blocked layout (gpass::NchwcConv, ...), reordered once in and out";
  static constexpr std::array options{
      option_spec{"block", option_type::integer, "0", "channels per block: 8, 16, or 0 for this processor's"},
      option_spec{"enable", option_type::boolean, "true", "false leaves the graph as it is (a GPU target)"}};

  template <class G>
  void run(G& g, pass_context& ctx) const {
    if (!this->option_bool(ctx, "enable")) return;
    std::int64_t b = this->option_int(ctx, "block");
    if (b == 0) b = exec::cpu_detail::nchwc::preferred_block();
    if (b != 8 && b != 16) this->fail("option 'block' must be 0, 8 or 16, got " + std::to_string(b));
    typename detail::nchwc_rewrite<G>::counts total;
    for (G* h : all_graphs(g)) {
      const auto c = detail::nchwc_rewrite<G>(*h, b).run();
      total.convs += c.convs;
      total.pools += c.pools;
      total.elementwise += c.elementwise;
      total.reorders_in += c.reorders_in;
      total.reorders_out += c.reorders_out;
    }
    report_edits(ctx, {{"convs", total.convs},
                       {"pools", total.pools},
                       {"elementwise", total.elementwise},
                       {"reorders-in", total.reorders_in},
                       {"reorders-out", total.reorders_out}});
  }
};

/// The `nchwc-layout` pass object (see `nchwc_layout_fn`).
inline constexpr nchwc_layout_fn nchwc_layout{};
#if !GPASS_HEADER_ONLY
// Instantiated once for the default graph type, by the unit passes/src/passes.cpp.
extern template void nchwc_layout_fn::run<graph<>>(graph<>& g, pass_context& ctx) const;
#endif

}  // namespace gpass
