// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file tf_attr.hpp
/// Private: TensorFlow `AttrValue` -> `gpass::attribute`, and the parsing of NodeDef input
/// strings (`name`, `name:i`, `^name` in graphs; `arg`, `node:out_arg:i` in functions).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gpass/core/attribute.hpp>
#include <gpass/core/error.hpp>
#include <gpass/io/detail/tf_ops.hpp>
#include <gpass/io/detail/tf_schema.hpp>
#include <gpass/io/detail/tf_tensor.hpp>

namespace gpass::detail::tf_io {

/// The element kind of an empty list attribute, which the AttrValue does not say: chosen by
/// the attribute's name for the names TensorFlow uses for lists of types, shapes, strings and
/// functions; ints otherwise.
inline attribute empty_list_for(std::string_view name) {
  static constexpr std::string_view types[] = {"T",          "Tin",           "Tout",         "Targs",
                                               "Targuments", "Tcomponents",   "Toutput_types", "output_types",
                                               "dtypes",     "component_types", "Tcaptured",   "Tresults",
                                               "Tkeys",      "Tvalues",       "Tcond",        "Tbody"};
  static constexpr std::string_view shapes[] = {"_output_shapes", "output_shapes", "shapes", "element_shapes"};
  static constexpr std::string_view strings[] = {"_class", "allowed_devices", "tensor_names", "shape_and_slices",
                                                 "container_names"};
  static constexpr std::string_view funcs[] = {"branches"};
  for (auto n : types)
    if (n == name) return std::vector<dtype>{};
  for (auto n : shapes)
    if (n == name) return std::vector<shape>{};
  for (auto n : strings)
    if (n == name) return std::vector<std::string>{};
  for (auto n : funcs)
    if (n == name) return std::vector<function_ref>{};
  return std::vector<std::int64_t>{};
}

/// A DataType number as a gpass dtype; an error for DT_INVALID and types without one.
inline dtype attr_dtype(std::int64_t code) {
  auto d = dtype_from_tf(code);
  if (!d) throw error(data_type_name(code) + " has no gpass dtype");
  return *d;
}

/// What converting one AttrValue gives besides the value: a placeholder name (function
/// bodies: `$T`) and the attributes of referenced functions (instantiation attributes).
struct attr_extras {
  bool placeholder = false;
  std::vector<std::pair<std::string, attribute>> func_attrs;  // "<attr>.<key>" or "<attr>.<i>.<key>"
};

inline attribute convert_attr_value(const std::string& name, const pb_message& v, std::uint64_t& tensor_budget,
                                    attr_extras& extras, int depth = 0);

/// The attributes of a NameAttrList (function instantiation attributes) as extra attributes
/// named `prefix.key`.
inline void func_attrs_into(const std::string& prefix, const pb_message& f, std::uint64_t& tensor_budget,
                            attr_extras& extras, int depth) {
  f.each(fields::func_attr, [&](const pb_value& e) {
    const std::string key = e.m->str(fields::entry_key);
    const pb_message* val = e.m->msg(fields::entry_value);
    if (!val) throw error("function attribute '" + prefix + "." + key + "' has no value");
    attr_extras inner;
    attribute a = convert_attr_value(prefix + "." + key, *val, tensor_budget, inner, depth + 1);
    extras.func_attrs.emplace_back(prefix + "." + key, std::move(a));
    for (auto& x : inner.func_attrs) extras.func_attrs.push_back(std::move(x));
  });
}

/// Converts AttrValue `v` of attribute `name`: i -> int, f -> float, b -> bool, s -> string,
/// type -> dtype, shape -> shape, tensor -> tensor, func -> function_ref, placeholder ->
/// string (its name; `extras.placeholder` set), list(...) -> the list kind of its elements
/// (an empty list: by name, see `empty_list_for`). Errors name the attribute.
inline attribute convert_attr_value(const std::string& name, const pb_message& v, std::uint64_t& tensor_budget,
                                    attr_extras& extras, int depth) {
  if (depth > 8) throw error("attribute '" + name + "': function attributes nested too deep");
  // AttrValue is a oneof: the last field read wins
  const pb_value* set = nullptr;
  for (const auto& f : v.fields)
    if (f.number >= fields::attr_list && f.number <= fields::attr_func) set = &f;
  if (!set) throw error("attribute '" + name + "' has no value");
  try {
    switch (set->number) {
      case fields::attr_s: return set->s;
      case fields::attr_i: return static_cast<std::int64_t>(set->u);
      case fields::attr_f: return set->d;
      case fields::attr_b: return set->u != 0;
      case fields::attr_type: return attr_dtype(static_cast<std::int64_t>(set->u));
      case fields::attr_shape: return shape_from_tf(set->m.get());
      case fields::attr_tensor: return tensor_from_tf(*set->m, tensor_budget);
      case fields::attr_placeholder: extras.placeholder = true; return set->s;
      case fields::attr_func: {
        func_attrs_into(name, *set->m, tensor_budget, extras, depth);
        return function_ref{set->m->str(fields::func_name)};
      }
      default: break;
    }
    // list
    const pb_message& l = *set->m;
    std::uint32_t kind = 0;
    for (const auto& f : l.fields) {
      if (kind != 0 && f.number != kind) {
        const auto* a = list_value_schema().find(kind);
        const auto* b = list_value_schema().find(f.number);
        throw error("the list mixes " + std::string(a->name) + " and " + std::string(b->name) + " values");
      }
      kind = f.number;
    }
    switch (kind) {
      case 0: return empty_list_for(name);
      case fields::attr_s: {
        std::vector<std::string> r;
        l.each(kind, [&](const pb_value& x) { r.push_back(x.s); });
        return r;
      }
      case fields::attr_i: {
        std::vector<std::int64_t> r;
        l.each(kind, [&](const pb_value& x) { r.push_back(static_cast<std::int64_t>(x.u)); });
        return r;
      }
      case fields::attr_f: {
        std::vector<double> r;
        l.each(kind, [&](const pb_value& x) { r.push_back(x.d); });
        return r;
      }
      case fields::attr_b: {
        std::vector<bool> r;
        l.each(kind, [&](const pb_value& x) { r.push_back(x.u != 0); });
        return r;
      }
      case fields::attr_type: {
        std::vector<dtype> r;
        l.each(kind, [&](const pb_value& x) { r.push_back(attr_dtype(static_cast<std::int64_t>(x.u))); });
        return r;
      }
      case fields::attr_shape: {
        std::vector<shape> r;
        l.each(kind, [&](const pb_value& x) { r.push_back(shape_from_tf(x.m.get())); });
        return r;
      }
      case fields::attr_tensor: {
        std::vector<tensor> r;
        l.each(kind, [&](const pb_value& x) { r.push_back(tensor_from_tf(*x.m, tensor_budget)); });
        return r;
      }
      case fields::list_func: {
        std::vector<function_ref> r;
        l.each(kind, [&](const pb_value& x) {
          func_attrs_into(name + "." + std::to_string(r.size()), *x.m, tensor_budget, extras, depth);
          r.push_back(function_ref{x.m->str(fields::func_name)});
        });
        return r;
      }
      default: break;
    }
  } catch (const error& e) {
    if (e.message().rfind("attribute '", 0) == 0) throw;
    throw error("attribute '" + name + "': " + e.message(), e.context());
  }
  throw error("attribute '" + name + "': unsupported value");
}

// ---- input strings ----------------------------------------------------------------------

/// One parsed NodeDef input.
struct input_ref {
  bool control = false;
  std::string node;      ///< node (or, in functions, argument) name
  std::string arg;       ///< functions: the output argument name ("" when not given)
  std::int64_t index = 0;
  bool has_index = false;  ///< an explicit `:i`
};

/// Parses a non-negative decimal port or index; empty when `s` is not one (or is too large).
inline std::optional<std::int64_t> parse_index(std::string_view s) {
  if (s.empty() || s.size() > 9) return std::nullopt;
  std::int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

/// Parses input `s` of a NodeDef. Graphs: `name`, `name:i`, `^name`. Functions (`in_function`):
/// also `name:out_arg` and `name:out_arg:i`. Bad syntax is an error.
inline input_ref parse_input(std::string_view s, bool in_function) {
  input_ref r;
  auto bad = [&](const std::string& why) -> void { throw error("bad input '" + std::string(s) + "': " + why); };
  if (s.empty()) bad("empty name");
  if (s[0] == '^') {
    r.control = true;
    r.node = std::string(s.substr(1));
    if (r.node.empty()) bad("no node name after '^'");
    if (r.node.find(':') != std::string::npos) bad("a control input names a node, not an output");
    return r;
  }
  std::vector<std::string_view> parts;
  std::size_t b = 0;
  for (;;) {
    std::size_t c = s.find(':', b);
    parts.push_back(s.substr(b, c == std::string_view::npos ? std::string_view::npos : c - b));
    if (c == std::string_view::npos) break;
    b = c + 1;
  }
  if (parts[0].empty()) bad("empty node name");
  r.node = std::string(parts[0]);
  if (parts.size() == 1) return r;
  if (!in_function) {
    if (parts.size() > 2) bad("more than one ':'");
    auto i = parse_index(parts[1]);
    if (!i) bad("the output port '" + std::string(parts[1]) + "' is not a number");
    r.index = *i;
    r.has_index = true;
    return r;
  }
  if (parts.size() > 3) bad("more than two ':'");
  if (parts.size() == 2) {
    if (auto i = parse_index(parts[1])) {
      r.index = *i;
      r.has_index = true;
      return r;
    }
    if (parts[1].empty()) bad("empty output argument name");
    r.arg = std::string(parts[1]);
    return r;
  }
  if (parts[1].empty()) bad("empty output argument name");
  r.arg = std::string(parts[1]);
  auto i = parse_index(parts[2]);
  if (!i) bad("the index '" + std::string(parts[2]) + "' is not a number");
  r.index = *i;
  r.has_index = true;
  return r;
}

}  // namespace gpass::detail::tf_io
