// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file globals.hpp
/// `gpass::exec::global_store`: the values of a graph's globals (TensorFlow variables lowered
/// to `get_global` / `set_global`) while plans run, and the graph attributes holding their
/// initial values.

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <gpass/core/attribute.hpp>
#include <gpass/core/tensor.hpp>

namespace gpass::exec {

/// The prefix of the graph attributes that give globals their initial values: attribute
/// `"global:<name>"` (a tensor) of the main graph is the initial value of global `<name>`
/// (written by `gpass::variables_to_globals`). Text IR: `graph {"global:w" = tensor<f32[2]> [1.0, 2.0]}`.
inline constexpr std::string_view global_attr_prefix = "global:";

/// The current values of globals, by name: what `get_global` reads and `set_global` writes.
/// A plan owns one, initialised from the graph's `global:` attributes when it is built, so
/// globals keep their values across runs of the plan, as TensorFlow variables do across runs
/// of a session; plans built with the same store (`plan_options::globals`) share it (one plan
/// for an update target, one for the fetches). Every operation takes a mutex: concurrent runs
/// may read and write; each read sees some complete value. A read-modify-write (a lowered
/// `AssignAdd`) is not atomic across concurrent runs (TensorFlow's `use_locking = false`).
/// Tensors are stored as given and never written in place: a stored tensor must not share
/// memory that is reused (`set_global` stores a copy of arena tensors).
/// \code
///   gpass::exec::global_store s;
///   s.set("w", gpass::tensor::from<float>({1, 2}));
///   s.get("w")->size();        // 2
///   s.get("b").has_value();    // false: never set
/// \endcode
class global_store {
 public:
  global_store() = default;
  global_store(const global_store& o) : values_(o.snapshot()) {}
  global_store& operator=(const global_store& o) {
    if (this != &o) {
      auto v = o.snapshot();
      std::lock_guard lock(mu_);
      values_ = std::move(v);
    }
    return *this;
  }

  /// The value of global `name`, or nullopt when it was never set.
  std::optional<gpass::tensor> get(std::string_view name) const {
    std::lock_guard lock(mu_);
    auto it = values_.find(name);
    if (it == values_.end()) return std::nullopt;
    return it->second;
  }
  /// Sets global `name` to `value`.
  void set(std::string_view name, gpass::tensor value) {
    std::lock_guard lock(mu_);
    auto it = values_.find(name);
    if (it == values_.end()) values_.emplace(std::string(name), std::move(value));
    else it->second = std::move(value);
  }
  /// True when global `name` has a value.
  bool contains(std::string_view name) const {
    std::lock_guard lock(mu_);
    return values_.find(name) != values_.end();
  }
  /// Every global and its value, by name (a copy).
  std::map<std::string, gpass::tensor, std::less<>> snapshot() const {
    std::lock_guard lock(mu_);
    return values_;
  }
  /// Gives every global named by a `global:<name>` tensor attribute of `attrs` (a graph's
  /// attributes) that initial value, unless it already has a value (a store shared by
  /// several plans is initialised once).
  void initialize_from(const attribute_map& attrs) {
    std::lock_guard lock(mu_);
    for (auto it = attrs.lower_bound(global_attr_prefix); it != attrs.end(); ++it) {
      std::string_view k = it->first;
      if (!k.starts_with(global_attr_prefix)) break;
      if (it->second.is<gpass::tensor>()) values_.try_emplace(std::string(k.substr(global_attr_prefix.size())), it->second.as<gpass::tensor>());
    }
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, gpass::tensor, std::less<>> values_;
};

}  // namespace gpass::exec
