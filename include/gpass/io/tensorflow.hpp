// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file tensorflow.hpp
/// `gpass::read_tf_graph_file`, `gpass::parse_tf_graph_def`, `gpass::parse_tf_graph_def_text`:
/// TensorFlow GraphDefs (`.pb` binary, `.pbtxt` text) to gpass graphs, and
/// `gpass::read_tf_tensor_file` / `gpass::parse_tf_tensor`: serialized `TensorProto`s to tensors.
///
/// Header-only with no dependency beyond `gpass::gpass`: the protobuf wire and text formats
/// are read directly (io/detail/tf_*.hpp), libprotobuf is not needed. Link the CMake target
/// `gpass::tensorflow` (the component that says "the TensorFlow importer is wanted"). Not
/// included by `gpass/all.hpp`.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <gpass/core/attribute.hpp>
#include <gpass/core/error.hpp>
#include <gpass/core/tensor.hpp>
#include <gpass/core/type.hpp>
#include <gpass/graph/graph.hpp>
#include <gpass/io/detail/file.hpp>
#include <gpass/io/detail/tf_attr.hpp>
#include <gpass/io/detail/tf_binary.hpp>
#include <gpass/io/detail/tf_ops.hpp>
#include <gpass/io/detail/tf_schema.hpp>
#include <gpass/io/detail/tf_tensor.hpp>
#include <gpass/io/detail/tf_text.hpp>

namespace gpass {

/// Options of the TensorFlow importer.
/// \code
///   gpass::tf_import_options o;
///   o.max_tensor_bytes = 64 << 20;   // at most 64 MiB of constants made of repeated values
///   auto g = gpass::read_tf_graph_file("model.pb", o);
/// \endcode
struct tf_import_options {
  /// Most bytes of tensor data (32 per string element) one import may make from repeated
  /// values: a `TensorProto` may repeat one `*_val` value (or zeros) over any shape, so such
  /// tensors are not bounded by the size of the file; together they may take this much, and
  /// more is an error. Tensors from `tensor_content` are bounded by the file and not counted.
  std::uint64_t max_tensor_bytes = std::uint64_t{1} << 32;
  /// A `Const` made of one repeated value (or zeros) whose data would take more bytes than
  /// this is imported as `Fill(dims, value)` of two small constants, not materialized (it
  /// costs nothing of `max_tensor_bytes`; a run or a folding that needs it makes it under its
  /// own limits). 0: every constant is materialized.
  std::uint64_t splat_fill_bytes = std::uint64_t{1} << 20;
};

namespace detail::tf_io {

/// The gpass op of a TensorFlow op: the Ref* variants of v1 control flow are their plain ops.
inline std::string_view gpass_op_name(std::string_view op) noexcept {
  if (op == "RefEnter") return "Enter";
  if (op == "RefExit") return "Exit";
  if (op == "RefMerge") return "Merge";
  if (op == "RefSwitch") return "Switch";
  if (op == "RefNextIteration") return "NextIteration";
  return op;
}

/// The domain of a (mapped) TensorFlow op: "" for v1 control flow (gpass core ops), "tf" otherwise.
inline std::string_view domain_of(std::string_view gpass_op) noexcept {
  if (gpass_op == "Enter" || gpass_op == "Exit" || gpass_op == "Merge" || gpass_op == "Switch" ||
      gpass_op == "NextIteration" || gpass_op == "LoopCond")
    return "";
  return "tf";
}

/// The node attribute listing the attributes whose value is a function-attribute placeholder.
inline constexpr std::string_view attr_placeholders = "_tf_placeholders";

/// The importer: one per import.
template <class G>
class importer {
 public:
  using node_id = typename G::node_id;
  using node_type = typename G::node_type;

  importer(G& top, const tf_import_options& o) : top_(top), opt_(o), budget_(o.max_tensor_bytes) {}

  void import_graph_def(const pb_message& gd) {
    auto& a = top_.attrs();
    a["frontend"] = std::string("tf");
    if (const pb_message* v = gd.msg(fields::graph_versions)) {
      a["producer"] = static_cast<std::int64_t>(v->i32(fields::versions_producer));
      a["min_consumer"] = static_cast<std::int64_t>(v->i32(fields::versions_min_consumer));
      std::vector<std::int64_t> bad;
      v->each(fields::versions_bad_consumers, [&](const pb_value& x) { bad.push_back(static_cast<std::int32_t>(x.u)); });
      if (!bad.empty()) a["bad_consumers"] = std::move(bad);
    }
    if (gd.has(fields::graph_version)) a["graph_def_version"] = static_cast<std::int64_t>(gd.i32(fields::graph_version));

    std::vector<const pb_message*> functions;
    if (const pb_message* lib = gd.msg(fields::graph_library)) {
      lib->each(fields::library_function, [&](const pb_value& f) { functions.push_back(f.m.get()); });
      std::vector<std::string> grads;
      lib->each(fields::library_gradient, [&](const pb_value& g) {
        grads.push_back(g.m->str(fields::gradient_function_name) + ":" + g.m->str(fields::gradient_func));
      });
      if (!grads.empty()) a["tf_gradients"] = std::move(grads);
    }
    // signatures first: calls of library functions (in the graph or in other functions) take
    // their outputs from them
    for (const pb_message* f : functions) add_signature(*f);
    std::vector<const pb_message*> nodes;
    gd.each(fields::graph_node, [&](const pb_value& n) { nodes.push_back(n.m.get()); });
    import_body(top_, nodes, nullptr);
    for (const pb_message* f : functions) import_function(*f);
  }

 private:
  /// An output argument of a library function (one port each: list arguments are refused).
  struct signature {
    std::vector<std::string> inputs, outputs;
    std::vector<dtype> input_types, output_types;
    op_outputs outs;  // as out_args, one port each
  };

  /// One NodeDef of the body being imported.
  struct node_rec {
    const pb_message* m = nullptr;
    std::string name, op, device;
    attribute_map attrs;
    std::optional<std::vector<shape>> output_shapes;
    std::vector<input_ref> inputs;
    std::vector<std::string> input_texts;
    const op_outputs* outs = nullptr;           // known output arguments, or nullptr
    std::vector<std::int64_t> arg_offsets;      // first port of each output argument
    std::vector<std::int64_t> arg_sizes;        // ports of each output argument
    std::int64_t known_count = -1;              // -1: unknown op
    std::int64_t max_port = -1;                 // largest port referenced (unknown ops)
    node_id id{};
    std::optional<detail::tf_io::tf_splat> splat;  // a large repeated-value Const, made a Fill
  };

  /// Where a function-body input comes from: a node's ports or the function_entry's.
  struct source {
    std::size_t node = npos;  // index into recs; npos: function argument
    std::int64_t first = 0, count = 1;
  };
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);

  [[noreturn]] static void node_error(const std::string& msg, const std::string& node, const std::string& op) {
    throw_node_error(msg, node, op);
  }

  // ---- library signatures ------------------------------------------------------------------

  static dtype arg_dtype(const pb_message& arg) {
    if (arg.has(fields::arg_type)) {
      auto d = dtype_from_tf(arg.i64(fields::arg_type));
      return d ? *d : dtype::undefined;
    }
    return dtype::undefined;
  }

  void add_signature(const pb_message& f) {
    const pb_message* sig = f.msg(fields::function_signature);
    const std::string name = sig ? sig->str(fields::opdef_name) : std::string();
    if (name.empty()) throw error("a function of the library has no name (no signature.name)");
    if (sigs_.contains(name)) throw error("function '" + name + "' is defined twice in the library");
    signature s;
    auto args = [&](std::uint32_t field, std::vector<std::string>& names, std::vector<dtype>& types, const char* what) {
      sig->each(field, [&](const pb_value& v) {
        const pb_message& a = *v.m;
        const std::string an = a.str(fields::arg_name);
        if (an.empty()) throw error("function '" + name + "': an " + what + " argument has no name");
        if (!a.str(fields::arg_number_attr).empty() || !a.str(fields::arg_type_list_attr).empty())
          throw error("function '" + name + "': " + what + " argument '" + an + "' is a list (" +
                      (a.str(fields::arg_number_attr).empty() ? "type_list_attr " + a.str(fields::arg_type_list_attr)
                                                               : "number_attr " + a.str(fields::arg_number_attr)) +
                      "); functions with list arguments are not supported");
        for (const auto& n : names)
          if (n == an) throw error("function '" + name + "': " + what + " argument '" + an + "' is declared twice");
        names.push_back(an);
        types.push_back(arg_dtype(a));
      });
    };
    args(fields::opdef_input_arg, s.inputs, s.input_types, "input");
    args(fields::opdef_output_arg, s.outputs, s.output_types, "output");
    for (std::size_t k = 0; k < s.outputs.size(); ++k) {
      out_arg oa;
      oa.name = s.outputs[k];
      oa.type = out_arg::type_kind::fixed;
      oa.fixed = s.output_types[k];
      s.outs.args.push_back(std::move(oa));
    }
    sigs_.emplace(name, std::move(s));
  }

  // ---- nodes ---------------------------------------------------------------------------------

  /// Reads NodeDef `m`: name, op, attributes, `_output_shapes`, inputs.
  node_rec read_node(const pb_message& m, bool in_function, std::size_t index) {
    node_rec r;
    r.m = &m;
    r.name = m.str(fields::node_name);
    r.op = m.str(fields::node_op);
    if (r.name.empty()) node_error("NodeDef " + std::to_string(index) + " has no name", "#" + std::to_string(index), r.op);
    if (r.op.empty()) node_error("node has no op", r.name, "");
    try {
      std::vector<std::string> placeholders;
      std::vector<std::pair<std::string, const pb_message*>> entries;
      m.each(fields::node_attr, [&](const pb_value& e) {
        std::string key = e.m->str(fields::entry_key);
        if (key.empty()) throw error("an attribute has an empty name");
        const pb_message* val = e.m->msg(fields::entry_value);
        if (!val) throw error("attribute '" + key + "' has no value");
        entries.emplace_back(std::move(key), val);
      });
      // map semantics: the last entry of a key wins (a stable sort keeps the entries of one
      // key in file order)
      std::stable_sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      std::size_t kept = 0;
      for (std::size_t k = 0; k < entries.size(); ++k)
        if (k + 1 == entries.size() || entries[k].first != entries[k + 1].first) {
          if (kept != k) entries[kept] = std::move(entries[k]);
          ++kept;
        }
      entries.resize(kept);
      auto is_key = [&](const std::string& k) {
        return std::binary_search(entries.begin(), entries.end(), std::pair<std::string, const pb_message*>(k, nullptr),
                                  [](const auto& a, const auto& b) { return a.first < b.first; });
      };
      for (auto& [key, val] : entries) {
        if (key == attr_placeholders) throw error("attribute name '" + key + "' is reserved by the gpass TensorFlow importer");
        if (r.op == "Const" && key == "value" && opt_.splat_fill_bytes != 0 && val->has(fields::attr_tensor))
          if (const pb_value* tv = val->last(fields::attr_tensor); tv && tv->m)
            if ((r.splat = detail::tf_io::splat_from_tf(*tv->m, opt_.splat_fill_bytes))) continue;
        attr_extras extras;
        attribute a = convert_attr_value(key, *val, budget_, extras);
        if (key == "_output_shapes") {
          if (a.is<std::vector<shape>>()) r.output_shapes = a.as<std::vector<shape>>();
          else if (a.is<std::vector<std::int64_t>>() && a.as<std::vector<std::int64_t>>().empty()) r.output_shapes.emplace();
          else throw error("attribute '_output_shapes' is a " + std::string(a.kind_name()) + ", not a list of shapes");
          continue;
        }
        if (extras.placeholder) placeholders.push_back(key);
        for (auto& [k, v] : extras.func_attrs) {
          if (r.attrs.contains(k) || is_key(k))
            throw error("function attribute '" + k + "' clashes with an attribute of the same name");
          r.attrs.emplace(std::move(k), std::move(v));
        }
        r.attrs.emplace(key, std::move(a));
      }
      if (!placeholders.empty()) r.attrs.emplace(std::string(attr_placeholders), std::move(placeholders));
      if (r.splat) {  // Fill(dims, value): the inputs are made by import_body
        auto dt = r.attrs.find("dtype");
        if (dt == r.attrs.end() || !dt->second.template is<dtype>() || dt->second.template as<dtype>() != r.splat->value.element_type())
          throw error("attribute 'dtype' does not match the dtype of attribute 'value'");
        r.op = "Fill";
        r.attrs.erase(dt);
        r.attrs["T"] = r.splat->value.element_type();
        r.attrs["index_type"] = dtype::int64;
      }
      m.each(fields::node_input, [&](const pb_value& v) {
        r.input_texts.push_back(v.s);
        try {
          r.inputs.push_back(parse_input(v.s, in_function));
        } catch (const error& e) {
          throw error("input " + std::to_string(r.input_texts.size() - 1) + ": " + e.message());
        }
      });
      // known outputs: the op table or a library function
      if (auto it = sigs_.find(r.op); it != sigs_.end()) r.outs = &it->second.outs;
      else r.outs = find_known_op(r.op);
      if (r.outs) {
        std::int64_t n = 0;
        for (const auto& a : r.outs->args) {
          r.arg_offsets.push_back(n);
          r.arg_sizes.push_back(arg_port_count(a, r.attrs));
          n += r.arg_sizes.back();
        }
        if (n > max_output_ports) throw error("too many outputs (" + std::to_string(n) + ")");
        r.known_count = n;
        if (r.output_shapes && static_cast<std::int64_t>(r.output_shapes->size()) != n)
          throw error("_output_shapes has " + std::to_string(r.output_shapes->size()) + " entries, but op " + r.op +
                      " has " + std::to_string(n) + " outputs here");
      }
    } catch (const error& e) {
      throw e.with_node(r.name, r.op);
    }
    r.device = m.str(fields::node_device);
    return r;
  }

  /// The port range of output argument `arg` (index `index`, or all of it) of node `p`.
  source resolve_arg(const node_rec& p, const input_ref& in, const std::string& text) {
    if (!p.outs)
      throw error("input '" + text + "' names output argument '" + in.arg + "' of node '" + p.name + "', but the outputs of op " +
                  p.op + " are not known to the importer (use a known op, or a function of the library)");
    std::size_t which = npos;
    if (p.outs->args.size() == 1) which = 0;  // the only output argument: any name
    else
      for (std::size_t k = 0; k < p.outs->args.size(); ++k)
        if (p.outs->args[k].name == in.arg) which = k;
    if (which == npos) {
      std::string names;
      for (const auto& a : p.outs->args) names += (names.empty() ? "" : ", ") + a.name;
      throw error("input '" + text + "': op " + p.op + " has no output argument '" + in.arg + "' (it has " +
                  (names.empty() ? std::string("none") : names) + ")");
    }
    const std::int64_t first = p.arg_offsets[which];
    const std::int64_t size = p.arg_sizes[which];
    if (!in.has_index) return {0, first, size};
    if (in.index >= size)
      throw error("input '" + text + "': index " + std::to_string(in.index) + " out of range (output argument '" + in.arg +
                  "' of op " + p.op + " has " + std::to_string(size) + ")");
    return {0, first + in.index, 1};
  }

  /// Imports nodes into `g` (the main graph, or a function body when `fn` is set).
  void import_body(G& g, const std::vector<const pb_message*>& defs, const pb_message* fn) {
    const bool in_function = fn != nullptr;
    std::vector<node_rec> recs;
    recs.reserve(defs.size());
    std::unordered_map<std::string, std::size_t> index;
    index.reserve(defs.size());
    for (std::size_t i = 0; i < defs.size(); ++i) {
      recs.push_back(read_node(*defs[i], in_function, i));
      node_rec& r = recs.back();
      if (auto [it, fresh] = index.emplace(r.name, i); !fresh)
        node_error("duplicate node name (NodeDefs " + std::to_string(it->second) + " and " + std::to_string(i) + ")", r.name,
                   r.op);
    }
    add_splat_inputs(recs, index);

    // function arguments
    const signature* sig = nullptr;
    std::unordered_map<std::string, std::size_t> arg_index;
    if (in_function) {
      sig = &sigs_.at(fn->msg(fields::function_signature)->str(fields::opdef_name));
      for (std::size_t k = 0; k < sig->inputs.size(); ++k) {
        arg_index.emplace(sig->inputs[k], k);
        if (index.contains(sig->inputs[k]))
          node_error("node name is also the name of an input argument of the function", sig->inputs[k],
                     recs[index.at(sig->inputs[k])].op);
      }
    }

    // resolve every input to a producer and port range
    std::vector<std::vector<source>> sources(recs.size());
    for (std::size_t i = 0; i < recs.size(); ++i) {
      node_rec& r = recs[i];
      try {
        for (std::size_t k = 0; k < r.inputs.size(); ++k) {
          const input_ref& in = r.inputs[k];
          const std::string& text = r.input_texts[k];
          if (in.control) {
            auto it = index.find(in.node);
            if (it == index.end())
              throw error("input " + std::to_string(k) + " ('" + text + "') names no node" +
                          (arg_index.contains(in.node) ? " (a control input cannot name a function argument)" : ""));
            sources[i].push_back({it->second, -1, 0});
            continue;
          }
          if (in_function && in.arg.empty() && arg_index.contains(in.node)) {
            if (in.has_index && in.index != 0)
              throw error("input " + std::to_string(k) + " ('" + text + "'): index " + std::to_string(in.index) +
                          " out of range (function argument '" + in.node + "' is one tensor)");
            sources[i].push_back({npos, static_cast<std::int64_t>(arg_index.at(in.node)), 1});
            continue;
          }
          auto it = index.find(in.node);
          if (it == index.end()) throw error("input " + std::to_string(k) + " ('" + text + "') names no node");
          node_rec& p = recs[it->second];
          if (!in.arg.empty()) {
            source s;
            try {
              s = resolve_arg(p, in, text);
            } catch (const error& e) {
              throw error("input " + std::to_string(k) + ": " + e.message());
            }
            s.node = it->second;
            sources[i].push_back(s);
            continue;
          }
          if (p.known_count >= 0 && in.index >= p.known_count)
            throw error("input " + std::to_string(k) + " ('" + text + "'): output index " + std::to_string(in.index) +
                        " out of range (op " + p.op + " has " + std::to_string(p.known_count) + " output" +
                        (p.known_count == 1 ? "" : "s") + " here)");
          if (p.known_count < 0 && p.output_shapes && in.index >= static_cast<std::int64_t>(p.output_shapes->size()))
            throw error("input " + std::to_string(k) + " ('" + text + "'): output index " + std::to_string(in.index) +
                        " out of range (node '" + p.name + "' has " + std::to_string(p.output_shapes->size()) +
                        " outputs in _output_shapes)");
          if (in.index >= max_output_ports)
            throw error("input " + std::to_string(k) + " ('" + text + "'): output index " + std::to_string(in.index) +
                        " is too large");
          p.max_port = std::max(p.max_port, in.index);
          sources[i].push_back({it->second, in.index, 1});
        }
      } catch (const error& e) {
        throw e.with_node(r.name, r.op);
      }
    }

    // function_entry
    std::optional<node_id> entry;
    if (in_function) {
      node_type e;
      e.name = fresh_name(index, "function_entry");
      e.op = "function_entry";
      e.outputs.clear();
      std::vector<std::optional<std::vector<shape>>> arg_shapes(sig->inputs.size());
      fn->each(fields::function_arg_attr, [&](const pb_value& v) {
        const std::uint64_t k = v.m->last(fields::entry_key) ? v.m->last(fields::entry_key)->u : 0;
        const pb_message* attrs = v.m->msg(fields::entry_value);
        if (!attrs || k >= sig->inputs.size()) return;
        attrs->each(fields::arg_attrs_attr, [&](const pb_value& a) {
          if (a.m->str(fields::entry_key) != "_output_shapes" || !a.m->msg(fields::entry_value)) return;
          attr_extras x;
          attribute s = convert_attr_value("_output_shapes", *a.m->msg(fields::entry_value), budget_, x);
          if (s.is<std::vector<shape>>() && s.as<std::vector<shape>>().size() == 1) arg_shapes[k] = s.as<std::vector<shape>>();
        });
      });
      for (std::size_t k = 0; k < sig->inputs.size(); ++k) {
        if (sig->input_types[k] == dtype::undefined && !arg_shapes[k]) e.outputs.emplace_back();
        else e.outputs.push_back(tensor_type{sig->input_types[k], arg_shapes[k] ? (*arg_shapes[k])[0] : shape::unknown_rank()});
      }
      e.attrs["names"] = sig->inputs;
      entry = g.add_node(std::move(e));
    }

    // output counts, within a budget: ports are not bounded by the size of the input (a
    // reference `a:900000` or `num_split` of a million cost a few bytes), so a graph gets at
    // most 64 ports per NodeDef on average (real graphs have about one) plus 2^16
    std::vector<std::int64_t> counts(recs.size());
    std::int64_t total = 0;
    const std::int64_t budget = 64 * static_cast<std::int64_t>(recs.size()) + (1 << 16);
    for (std::size_t i = 0; i < recs.size(); ++i) {
      const node_rec& r = recs[i];
      std::int64_t count = r.known_count;
      if (count < 0)
        count = r.output_shapes ? static_cast<std::int64_t>(r.output_shapes->size()) : std::max<std::int64_t>(1, r.max_port + 1);
      counts[i] = count;
      total += count;
      if (total > budget)
        node_error("the graph has more than " + std::to_string(budget) + " output ports for " + std::to_string(recs.size()) +
                       " nodes (this node has " + std::to_string(count) + "): refused as corrupted or hostile input",
                   r.name, r.op);
    }

    // create the nodes
    for (std::size_t i = 0; i < recs.size(); ++i) {
      node_rec& r = recs[i];
      const std::int64_t count = counts[i];
      node_type n;
      n.name = r.name;
      n.op = std::string(gpass_op_name(r.op));
      n.domain = std::string(domain_of(n.op));
      n.device = r.device;
      n.attrs = std::move(r.attrs);
      n.outputs.assign(static_cast<std::size_t>(count), type{});
      if (r.output_shapes) {
        std::vector<dtype> types(static_cast<std::size_t>(count), dtype::undefined);
        if (r.outs)
          for (std::size_t a = 0; a < r.outs->args.size(); ++a) {
            for (std::int64_t k = 0; k < r.arg_sizes[a]; ++k)
              types[static_cast<std::size_t>(r.arg_offsets[a] + k)] = arg_port_dtype(r.outs->args[a], n.attrs, k);
          }
        for (std::size_t k = 0; k < n.outputs.size(); ++k) n.outputs[k] = tensor_type{types[k], (*r.output_shapes)[k]};
      }
      r.attrs = {};
      r.id = g.add_node(std::move(n));
    }

    // edges
    for (std::size_t i = 0; i < recs.size(); ++i) {
      const node_rec& r = recs[i];
      for (const source& s : sources[i]) {
        if (s.first < 0) {
          g.add_control(recs[s.node].id, r.id);
          continue;
        }
        const node_id from = s.node == npos ? *entry : recs[s.node].id;
        for (std::int64_t k = 0; k < s.count; ++k) g.add_input(r.id, from, static_cast<int>(s.first + k));
      }
    }

    // function results
    if (in_function) {
      node_type rn;
      rn.name = fresh_name(index, "return", "function_entry");
      rn.op = "return";
      rn.outputs.clear();
      rn.attrs["names"] = sig->outputs;
      const node_id ret = g.add_node(std::move(rn));
      std::unordered_map<std::string, std::string> rets;
      fn->each(fields::function_ret, [&](const pb_value& v) { rets[v.m->str(fields::entry_key)] = v.m->str(fields::entry_value); });
      for (const auto& out : sig->outputs) {
        auto it = rets.find(out);
        if (it == rets.end()) throw error("output argument '" + out + "' has no entry in ret");
        const std::string& text = it->second;
        input_ref in;
        try {
          in = parse_input(text, true);
          if (in.control) throw error("bad input '" + text + "': a result cannot be a control input");
        } catch (const error& e) {
          throw error("ret '" + out + "': " + e.message());
        }
        if (in.arg.empty() && arg_index.contains(in.node)) {
          g.add_input(ret, *entry, static_cast<int>(arg_index.at(in.node)));
          continue;
        }
        auto nit = index.find(in.node);
        if (nit == index.end()) throw error("ret '" + out + "' ('" + text + "') names no node");
        const node_rec& p = recs[nit->second];
        source s{nit->second, in.index, 1};
        if (!in.arg.empty()) {
          try {
            s = resolve_arg(p, in, text);
          } catch (const error& e) {
            throw error("ret '" + out + "': " + e.message());
          }
        }
        if (s.count != 1)
          throw error("ret '" + out + "' ('" + text + "') is a list of " + std::to_string(s.count) + " tensors, not one");
        if (s.first >= static_cast<std::int64_t>(g.num_outputs(p.id)))
          throw error("ret '" + out + "' ('" + text + "'): output index " + std::to_string(s.first) + " out of range");
        g.add_input(ret, p.id, static_cast<int>(s.first));
      }
      fn->each(fields::function_control_ret, [&](const pb_value& v) {
        const std::string target = v.m->str(fields::entry_value);
        auto nit = index.find(target);
        if (nit == index.end())
          throw error("control_ret '" + v.m->str(fields::entry_key) + "' names no node ('" + target + "')");
        g.add_control(recs[nit->second].id, ret);
      });
    }
  }

  /// `base`, or `base_k` for the smallest k such that no NodeDef (and not `taken`) has that name.
  /// The two constants of each splat `Fill` (`node_rec::splat`): its dims (int64) and its
  /// value, named after it, with its control inputs (they stay in its frame) and device.
  void add_splat_inputs(std::vector<node_rec>& recs, std::unordered_map<std::string, std::size_t>& index) {
    const std::size_t n = recs.size();
    for (std::size_t i = 0; i < n; ++i) {
      if (!recs[i].splat) continue;
      std::vector<input_ref> inputs;
      std::vector<std::string> texts;
      for (const char* part : {"dims", "value"}) {
        node_rec c;
        c.m = recs[i].m;
        c.name = fresh_name(index, recs[i].name + "/splat_" + part);
        c.op = "Const";
        c.device = recs[i].device;
        tensor value = std::string_view(part) == "dims" ? tensor::from(recs[i].splat->sizes) : recs[i].splat->value;
        c.attrs["dtype"] = value.element_type();
        c.attrs["value"] = std::move(value);
        c.inputs = recs[i].inputs;  // control inputs only: a Const has no data input
        c.input_texts = recs[i].input_texts;
        c.outs = find_known_op("Const");
        c.arg_offsets = {0};
        c.arg_sizes = {1};
        c.known_count = 1;
        inputs.push_back(input_ref{false, c.name, "", 0, false});
        texts.push_back(c.name);
        index.emplace(c.name, recs.size());
        recs.push_back(std::move(c));
      }
      node_rec& r = recs[i];
      r.inputs.insert(r.inputs.begin(), inputs.begin(), inputs.end());
      r.input_texts.insert(r.input_texts.begin(), texts.begin(), texts.end());
      r.splat.reset();
    }
  }

  static std::string fresh_name(const std::unordered_map<std::string, std::size_t>& index, const std::string& base,
                                std::string_view taken = {}) {
    auto free = [&](const std::string& s) { return !index.contains(s) && s != taken; };
    if (free(base)) return base;
    for (std::uint64_t k = 1;; ++k) {
      std::string s = base + "_" + std::to_string(k);
      if (free(s)) return s;
    }
  }

  void import_function(const pb_message& f) {
    const std::string name = f.msg(fields::function_signature)->str(fields::opdef_name);
    G& fg = top_.add_function(name, G{});
    try {
      std::vector<const pb_message*> nodes;
      f.each(fields::function_node_def, [&](const pb_value& n) { nodes.push_back(n.m.get()); });
      f.each(fields::function_attr, [&](const pb_value& e) {
        const std::string key = e.m->str(fields::entry_key);
        const pb_message* val = e.m->msg(fields::entry_value);
        if (!val) throw error("function attribute '" + key + "' has no value");
        attr_extras x;
        if constexpr (std::is_same_v<typename G::attrs_type, attribute_map>)
          fg.attrs()[key] = convert_attr_value(key, *val, budget_, x);
      });
      import_body(fg, nodes, &f);
    } catch (const error& e) {
      throw error("in function '" + name + "': " + e.message(), e.context());
    }
  }

  G& top_;
  const tf_import_options& opt_;
  std::uint64_t budget_;  // bytes of repeated-value tensors still allowed
  std::unordered_map<std::string, signature> sigs_;
};

/// Throws `e` with `file` set (when not already).
[[noreturn]] inline void rethrow_in_file(const error& e, const std::string& file) {
  error_context c = e.context();
  if (c.file.empty()) c.file = file;
  throw error(e.message(), c);
}

template <class G>
G import_graph_def(const pb_message& gd, const tf_import_options& o, const std::string& source) {
  static_assert(std::is_same_v<typename G::attrs_type, attribute_map>,
                "the gpass TensorFlow importer needs a graph whose graph attributes are a gpass::attribute_map");
  G g;
  try {
    importer<G>(g, o).import_graph_def(gd);
  } catch (const error& e) {
    if (!source.empty()) rethrow_in_file(e, source);
    throw;
  }
  return g;
}

/// True when `bytes` look like a binary GraphDef: the first byte is the tag of one of its
/// length-delimited or varint fields (node 0x0a, library 0x12, version 0x18, versions 0x22,
/// debug_info 0x2a), none of which is a character that starts a text-format file.
inline bool looks_binary_graph_def(std::string_view bytes) noexcept {
  if (bytes.empty()) return true;  // an empty GraphDef
  const auto b = static_cast<unsigned char>(bytes[0]);
  return b == 0x0a || b == 0x12 || b == 0x18 || b == 0x22 || b == 0x2a;
}

}  // namespace detail::tf_io

/// Imports a binary GraphDef (the bytes of a `.pb` file).
///
/// **Requirements.** `G` is a `gpass::graph` whose graph attributes are a
/// `gpass::attribute_map` (the default). Malformed data (truncated, wrong wire types, nesting
/// deeper than 100 levels) and graphs the importer cannot represent are `gpass::error`s
/// naming `source_name` and the byte offset, or the node and op; nothing crashes, hangs or
/// allocates more than the data and `options.max_tensor_bytes` allow.
///
/// **Mapping** (the conventions every TensorFlow pass of gpass relies on):
/// - *Graph*: graph attributes `frontend` = `"tf"`, `producer` and `min_consumer` (ints, from
///   `versions`), `bad_consumers` (ints, when any), `graph_def_version` (the deprecated
///   `version` field, when set), `tf_gradients` (strings `"function:gradient"`, from the
///   library's GradientDefs, when any). No `return` node: fetches are chosen by tensor name.
/// - *Nodes*: one node per NodeDef, named as it; op = the NodeDef op, domain `"tf"`, except the
///   v1 control-flow primitives Enter, Exit, Merge, Switch, NextIteration, LoopCond, which are
///   gpass core ops (domain `""`); RefEnter, RefExit, RefMerge, RefSwitch and RefNextIteration
///   become the plain ops. `device` -> `node.device`. Node names are unique (a duplicate is an
///   error).
/// - *Inputs*: `name` / `name:i` -> a data edge from output port i of `name` to the node's next
///   input port (in NodeDef order); `^name` -> a control edge. Inputs may name nodes defined
///   later, and cycles (v1 loops) are kept. A name that is no node, a bad port syntax
///   (`a:x`, `a:1:2`, `^a:0`, ``) and a port beyond a known op's outputs are errors naming the
///   node, op and input.
/// - *Output ports*: known ops (io/detail/tf_ops.hpp) get their output count (`Split`/`SplitV`
///   `num_split`, `Unpack` `num`, `ShapeN` `N`, `IdentityN` `len(T)`, `TopKV2`/`Unique`/`Switch`
///   /`Merge`/`TensorArrayV3` 2, `FusedBatchNormV3` 6, `NoOp` 0, ...); calls of library
///   functions the number of results; other ops the length of `_output_shapes` when given,
///   else the largest referenced port + 1 (at least 1). `_output_shapes` with another length
///   than a known op's outputs is an error. A graph (or function) gets at most 64 output ports
///   per node on average plus 65536 (ports cost a few bytes of input each: more is refused as
///   corrupted or hostile input).
/// - *Attributes* keep their TensorFlow names: i -> int, f -> float, b -> bool, s -> string
///   (bytes), type -> dtype (`*_REF` types as their base type; DT_INVALID and quantized types
///   are errors), shape -> shape (unknown_rank -> rank unknown, -1 -> unknown dim), tensor ->
///   tensor, func -> function_ref (its instantiation attributes, if any, become attributes
///   named `attr.key`), list(...) -> the list kind (an empty list is a list of types, shapes,
///   strings or functions for TensorFlow's usual names of those, `T`, `Tout`, `dtypes`,
///   `_output_shapes`, `_class`..., else of ints), placeholder (function bodies) -> string with
///   the placeholder's name, listed in the strings attribute `_tf_placeholders`.
///   `_output_shapes` is not kept as an attribute: it sets the output types (`dtype[shape]`,
///   the dtype from the op's type attribute when the importer knows which one, `?` otherwise);
///   without it output types are unknown.
/// - *Tensors*: DT_FLOAT f32, DT_DOUBLE f64, DT_HALF f16, DT_BFLOAT16 bf16, DT_INT8..64,
///   DT_UINT8..64, DT_BOOL bool, DT_STRING str, DT_COMPLEX64/128 c64/c128; values from
///   `tensor_content` (raw little-endian, exactly the element bytes) or from the dtype's typed
///   field (`float_val`, `int_val`, `half_val`...), fewer values than elements repeating the
///   last one (none: zeros); values in another type's field, too many values, unknown dims,
///   resource/variant values are errors.
/// - *FunctionDefLibrary*: each FunctionDef becomes a function of the graph's library named
///   as its signature: a `function_entry` node (outputs = the input arguments in order, with
///   `names` and their declared dtype; shape from the argument's `_output_shapes`), the
///   NodeDefs as above, and a `return` node (inputs = the results in output-argument order,
///   `names`; `control_ret` nodes are control inputs of it). Inside functions, inputs are
///   `arg`, `arg:0`, `node:out_arg:i` and `node:out_arg` (the whole argument: one input port
///   per element); the output argument names of known ops and library functions map them to
///   ports, and a reference into an op whose output arguments are not known is an error.
///   Function attributes become the function graph's attributes. List arguments
///   (`number_attr`, `type_list_attr`) are refused.
/// \code
///   std::string bytes = ...;  // a frozen GraphDef
///   auto g = gpass::parse_tf_graph_def(bytes, "model.pb");
///   std::cout << gpass::print_text(g);  // %x = tf::Placeholder() {dtype = f32, shape = ...}
/// \endcode
template <class G = graph<>>
G parse_tf_graph_def(std::string_view bytes, std::string_view source_name = {}, const tf_import_options& options = {}) {
  detail::tf_io::pb_message gd;
  const std::string source = source_name.empty() ? std::string("<GraphDef>") : std::string(source_name);
  detail::tf_io::decode_binary(bytes, 0, detail::tf_io::graph_def_schema(), gd, source);
  return detail::tf_io::import_graph_def<G>(gd, options, std::string(source_name));
}

/// Imports a GraphDef in protobuf text format (the contents of a `.pbtxt` file); the mapping
/// is that of `parse_tf_graph_def`. Syntax errors name `source_name`, the line and the column.
/// \code
///   auto g = gpass::parse_tf_graph_def_text(R"(node { name: "x" op: "Placeholder"
///                                               attr { key: "dtype" value { type: DT_FLOAT } } })",
///                                           "inline.pbtxt");
/// \endcode
template <class G = graph<>>
G parse_tf_graph_def_text(std::string_view text, std::string_view source_name = {},
                          const tf_import_options& options = {}) {
  detail::tf_io::pb_message gd;
  detail::tf_io::decode_text(text, source_name, detail::tf_io::graph_def_schema(), gd);
  return detail::tf_io::import_graph_def<G>(gd, options, std::string(source_name));
}

/// Reads a GraphDef file and imports it (see `parse_tf_graph_def`). The format is chosen by
/// extension: `.pbtxt`, `.pbtx`, `.prototxt`, `.txt` are text; `.pb`, `.graphdef` binary;
/// otherwise by content: binary when the first byte is the tag of a GraphDef field
/// (0x0a node, 0x12 library, 0x18 version, 0x22 versions, 0x2a debug_info), text otherwise.
/// Errors name the file.
/// \code
///   auto g = gpass::read_tf_graph_file("tests/data/tf/cond/graph.pb");
/// \endcode
template <class G = graph<>>
G read_tf_graph_file(const std::filesystem::path& path, const tf_import_options& options = {}) {
  const std::string bytes = gpass::detail::read_model_file(path, "TensorFlow GraphDef");
  const std::string ext = path.extension().string();
  bool text = false;
  if (ext == ".pbtxt" || ext == ".pbtx" || ext == ".prototxt" || ext == ".txt") text = true;
  else if (ext == ".pb" || ext == ".graphdef") text = false;
  else text = !detail::tf_io::looks_binary_graph_def(bytes);
  return text ? parse_tf_graph_def_text<G>(bytes, path.string(), options) : parse_tf_graph_def<G>(bytes, path.string(), options);
}

/// Decodes a binary `TensorProto` (see `parse_tf_graph_def` for the mapping of tensors).
/// \code
///   gpass::tensor t = gpass::parse_tf_tensor(bytes);
/// \endcode
inline tensor parse_tf_tensor(std::string_view bytes, std::string_view source_name = {},
                              const tf_import_options& options = {}) {
  detail::tf_io::pb_message m;
  const std::string source = source_name.empty() ? std::string("<TensorProto>") : std::string(source_name);
  detail::tf_io::decode_binary(bytes, 0, detail::tf_io::tensor_schema(), m, source);
  try {
    std::uint64_t budget = options.max_tensor_bytes;
    return detail::tf_io::tensor_from_tf(m, budget);
  } catch (const error& e) {
    detail::tf_io::rethrow_in_file(e, source);
  }
}

/// Reads a file holding one binary `TensorProto` (TensorFlow's `tensor.SerializeToString()`,
/// the feeds and reference outputs of the fixtures). Errors name the file.
/// \code
///   gpass::tensor x = gpass::read_tf_tensor_file("tests/data/tf/cond/feed_0.pb");
/// \endcode
inline tensor read_tf_tensor_file(const std::filesystem::path& path, const tf_import_options& options = {}) {
  return parse_tf_tensor(gpass::detail::read_model_file(path, "TensorProto"), path.string(), options);
}

}  // namespace gpass
