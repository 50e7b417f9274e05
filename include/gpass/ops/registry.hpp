// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file registry.hpp
/// `gpass::op_registry`: op schemas keyed by (domain, name, opset range).

#include <deque>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <gpass/config.hpp>
#include <gpass/core/error.hpp>
#include <gpass/ops/schema.hpp>

namespace gpass {

/// A registry of op schemas. `op_registry::global()` is the process-wide one, created on
/// first use with the core gpass ops already registered (no static-initialisation order
/// traps); users add their own ops with `add`. Lookups and additions are thread-safe.
/// \code
///   gpass::op_registry::global().add({.name = "MyRelu", .min_inputs = 1, .max_inputs = 1});
///   const gpass::op_schema* s = gpass::op_registry::global().find("", "MyRelu");
/// \endcode
class op_registry {
 public:
  /// Adds a schema. A schema for the same (domain, name) with an overlapping opset range throws.
  void add(op_schema s) {
    std::unique_lock lock(mu_);
    std::string k = key(s.domain, s.name);
    auto& v = by_name_[k];
    index_.try_emplace(std::move(k), &v);
    for (const auto& o : v)
      if (o.since_version <= s.until_version && s.since_version <= o.until_version)
        throw error("op schema " + qualified(s.domain, s.name) + " registered twice for overlapping opsets");
    v.push_back(std::move(s));
  }

  /// The schema of (domain, name) that applies at `opset` (the newest one when opset is 0), or nullptr.
  const op_schema* find(std::string_view domain, std::string_view name, int opset = 0) const {
    std::shared_lock lock(mu_);
    auto it = index_.find(key_view{normalize_domain(domain), name});
    if (it == index_.end()) return nullptr;
    const op_schema* best = nullptr;
    for (const auto& s : *it->second) {
      if (opset == 0) {
        if (!best || s.since_version > best->since_version) best = &s;
      } else if (s.since_version <= opset && opset <= s.until_version) {
        best = &s;
      }
    }
    return best;
  }

  /// Every registered schema, ordered by (domain, name, since_version).
  std::vector<const op_schema*> all() const {
    std::shared_lock lock(mu_);
    std::vector<const op_schema*> r;
    for (const auto& [k, v] : by_name_)
      for (const auto& s : v) r.push_back(&s);
    return r;
  }

  /// The registry's spelling of a domain: `ai.onnx` is the default domain (empty).
  static std::string_view normalize_domain(std::string_view domain) noexcept {
    return domain == "ai.onnx" ? std::string_view() : domain;
  }

  /// `domain::name`, or `name` for the default domain.
  static std::string qualified(std::string_view domain, std::string_view name) {
    return domain.empty() ? std::string(name) : std::string(domain) + "::" + std::string(name);
  }

  /// The process-wide registry, with the core gpass ops and list ops (`register_list_ops`), the ONNX default-domain ops
  /// (`register_onnx_ops`) and the TensorFlow ops (domain `tf`, `register_tf_ops`) registered
  /// on first use. Defined by the unit `gpass/ops/src/registry.cpp`.
  static GPASS_DECL op_registry& global();

 private:
  static std::string key(std::string_view domain, std::string_view name) {
    return std::string(normalize_domain(domain)) + '\0' + std::string(name);
  }
  // A key `domain '\0' name` looked up without building it (find runs once per node visit
  // of many passes): compares as the concatenated string would.
  struct key_view {
    std::string_view domain, name;
  };
  struct key_less {
    using is_transparent = void;
    // <0, 0, >0 as `a` compares with `k.domain + '\0' + k.name`
    static int compare(std::string_view a, const key_view& k) noexcept {
      const std::string_view parts[3] = {k.domain, std::string_view("\0", 1), k.name};
      for (std::string_view part : parts) {
        const std::string_view head = a.substr(0, part.size());
        if (int c = head.compare(part.substr(0, head.size())); c != 0) return c;
        if (head.size() < part.size()) return -1;  // `a` ends inside this part
        a.remove_prefix(part.size());
      }
      return a.empty() ? 0 : 1;
    }
    bool operator()(const std::string& a, const std::string& b) const noexcept { return a < b; }
    bool operator()(const std::string& a, const key_view& b) const noexcept { return compare(a, b) < 0; }
    bool operator()(const key_view& a, const std::string& b) const noexcept { return compare(b, a) > 0; }
  };
  // hashes `domain '\0' name` (FNV-1a) as the concatenated string would hash
  struct key_hash {
    using is_transparent = void;
    static void mix(std::size_t& h, std::string_view s) noexcept {
      for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
    }
    std::size_t operator()(std::string_view k) const noexcept {
      std::size_t h = 1469598103934665603ull;
      mix(h, k);
      return h;
    }
    std::size_t operator()(const std::string& k) const noexcept { return (*this)(std::string_view(k)); }
    std::size_t operator()(const key_view& k) const noexcept {
      std::size_t h = 1469598103934665603ull;
      mix(h, k.domain);
      mix(h, std::string_view("\0", 1));
      mix(h, k.name);
      return h;
    }
  };
  struct key_equal {
    using is_transparent = void;
    bool operator()(const std::string& a, const std::string& b) const noexcept { return a == b; }
    bool operator()(const std::string& a, const key_view& b) const noexcept { return key_less::compare(a, b) == 0; }
    bool operator()(const key_view& a, const std::string& b) const noexcept { return key_less::compare(b, a) == 0; }
  };
  mutable std::shared_mutex mu_;
  // map nodes and deque elements are stable: pointers from find() stay valid as schemas are added.
  std::map<std::string, std::deque<op_schema>, key_less> by_name_;
  // the same entries by hash: find() runs once per node visit of many passes
  std::unordered_map<std::string, std::deque<op_schema>*, key_hash, key_equal> index_;
};

}  // namespace gpass

namespace gpass {

/// Registers the ONNX default-domain (`""`, also spelled `ai.onnx`) op schemas into `r`, one
/// family per header of `gpass/ops/onnx/`: element-wise math, casts/comparisons/logic,
/// reductions, neural-network ops, shape ops, matrix products, control flow, sequences and
/// optionals, and the rest. Where an op's semantics changed between opsets (attributes
/// becoming inputs, broadcasting rules) there is one schema per range. Defined by the unit
/// `gpass/ops/src/onnx_schemas.cpp`; `op_registry::global()` calls it on first use.
/// \code
///   gpass::op_registry r;
///   gpass::register_onnx_ops(r);
///   r.find("", "Squeeze", 13)->inputs.size();  // 2: data, axes
/// \endcode
GPASS_DECL void register_onnx_ops(op_registry& r);

/// Registers the TensorFlow op schemas (domain `tf`, TensorFlow's names, attributes and shape
/// functions) into `r`, one family per header of `gpass/ops/tf/`. Defined by the unit
/// `gpass/ops/src/tf_schemas.cpp`; `op_registry::global()` calls it on first use. The v1
/// control-flow ops (Enter, Merge, ...) are gpass core ops (domain `""`), not registered here.
GPASS_DECL void register_tf_ops(op_registry& r);

}  // namespace gpass

#if GPASS_HEADER_ONLY
#include <gpass/ops/src/registry.cpp>
#include <gpass/ops/src/onnx_schemas.cpp>
#include <gpass/ops/src/tf_schemas.cpp>
#endif
