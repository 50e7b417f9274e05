#pragma once
/// \file registry.hpp
/// `gpass::op_registry`: op schemas keyed by (domain, name, opset range).

#include <deque>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

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
    auto& v = by_name_[key(s.domain, s.name)];
    for (const auto& o : v)
      if (o.since_version <= s.until_version && s.since_version <= o.until_version)
        throw error("op schema " + qualified(s.domain, s.name) + " registered twice for overlapping opsets");
    v.push_back(std::move(s));
  }

  /// The schema of (domain, name) that applies at `opset` (the newest one when opset is 0), or nullptr.
  const op_schema* find(std::string_view domain, std::string_view name, int opset = 0) const {
    std::shared_lock lock(mu_);
    auto it = by_name_.find(key(domain, name));
    if (it == by_name_.end()) return nullptr;
    const op_schema* best = nullptr;
    for (const auto& s : it->second) {
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
  /// on first use.
  static op_registry& global();

 private:
  static std::string key(std::string_view domain, std::string_view name) {
    return std::string(normalize_domain(domain)) + '\0' + std::string(name);
  }
  mutable std::shared_mutex mu_;
  // map nodes and deque elements are stable: pointers from find() stay valid as schemas are added.
  std::map<std::string, std::deque<op_schema>> by_name_;
};

}  // namespace gpass

#include <gpass/ops/core_ops.hpp>
#include <gpass/ops/list_ops.hpp>
#include <gpass/ops/onnx/register.hpp>
#include <gpass/ops/tf/register.hpp>

namespace gpass {
void register_onnx_ops(op_registry& r);  // onnx/register.hpp (declared again for include cycles)
void register_tf_ops(op_registry& r);    // tf/register.hpp (likewise)
}  // namespace gpass

inline gpass::op_registry& gpass::op_registry::global() {
  // Never destroyed: schemas stay valid during static destruction of user objects.
  static op_registry* r = [] {
    auto* reg = new op_registry;
    register_core_ops(*reg);
    register_list_ops(*reg);
    register_onnx_ops(*reg);
    register_tf_ops(*reg);
    return reg;
  }();
  return *r;
}
