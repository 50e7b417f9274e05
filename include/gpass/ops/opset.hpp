// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file opset.hpp
/// `gpass::graph_opset`: the opset version a graph declares for an op domain.

#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <gpass/core/attribute.hpp>
#include <gpass/ops/registry.hpp>

namespace gpass {

/// Function object: `graph_opset(g, domain)` is the opset version of `domain` that the graph
/// `g` declares, for looking schemas up with `op_registry::find(domain, op, opset)`; 0 when
/// it declares none (then the newest schema applies). Read from the graph attributes, in
/// order: `opset` (int, the default domain) or `opset:<domain>` (int); the ONNX importer's
/// `opset_import` (strings `"domain:version"`, `""`/`"ai.onnx"` being the default domain).
/// Graphs whose attributes are not an `attribute_map` declare none. Functions use the opsets
/// of the top-level graph that owns them.
/// \code
///   auto g = gpass::read_onnx_file("model.onnx");        // opset_import = [":11"]
///   gpass::graph_opset(g, "");                          // 11
///   registry.find("", "Squeeze", gpass::graph_opset(g, ""));
/// \endcode
struct graph_opset_fn {
  template <class G>
  int operator()(const G& g, std::string_view domain) const {
    if constexpr (std::is_same_v<std::remove_cvref_t<decltype(g.attrs())>, attribute_map>) {
      const auto d = op_registry::normalize_domain(domain);
      const attribute_map& a = g.attrs();
      std::string k = d.empty() ? std::string("opset") : "opset:" + std::string(d);
      auto it = a.find(k);
      if (it != a.end() && it->second.template is<std::int64_t>())
        return static_cast<int>(it->second.template as<std::int64_t>());
      it = a.find("opset_import");
      if (it != a.end() && it->second.template is<std::vector<std::string>>())
        for (const auto& e : it->second.template as<std::vector<std::string>>()) {
          auto colon = e.rfind(':');
          if (colon == std::string::npos) continue;
          if (op_registry::normalize_domain(std::string_view(e.data(), colon)) != d) continue;
          int v = 0;
          for (std::size_t i = colon + 1; i < e.size(); ++i) {
            if (e[i] < '0' || e[i] > '9' || v > 100000000) return 0;
            v = v * 10 + (e[i] - '0');
          }
          return v;
        }
    }
    return 0;
  }
};
inline constexpr graph_opset_fn graph_opset{};

}  // namespace gpass
