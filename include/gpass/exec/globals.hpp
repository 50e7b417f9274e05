// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file globals.hpp
/// `gpass::exec::global_store`: the values of a graph's globals (TensorFlow variables lowered
/// to `get_global` / `set_global`) while plans run, and the graph attributes holding their
/// initial values.

#include <any>
#include <functional>
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
///
/// A value may live in a device's memory instead (a GPU's `get_global` / `set_global`,
/// TensorFlow's variables on a GPU): `set_on` stores a device tensor, `get_on` gives the
/// device's tensor (uploading the host value once, then keeping both), and the host view
/// (`get`, `snapshot`) copies a device-held value back when it is first asked for. The store
/// knows no device types: a device value is a `std::any` of the device's tensor type, with
/// the device's name and a function that makes its host copy.
/// \code
///   gpass::exec::global_store s;
///   s.set("w", gpass::tensor::from<float>({1, 2}));
///   s.get("w")->size();        // 2
///   s.get("b").has_value();    // false: never set
/// \endcode
class global_store {
 public:
  global_store() = default;
  global_store(const global_store& o) {
    for (auto& [k, v] : o.snapshot()) values_.emplace(k, entry{.host = std::move(v)});
  }
  global_store& operator=(const global_store& o) {
    if (this != &o) {
      auto v = o.snapshot();
      std::lock_guard lock(mu_);
      values_.clear();
      for (auto& [k, t] : v) values_.emplace(k, entry{.host = std::move(t)});
    }
    return *this;
  }

  /// The value of global `name` on the host, or nullopt when it was never set (a value held
  /// by a device is copied back, once, then kept until the next write).
  std::optional<gpass::tensor> get(std::string_view name) const {
    std::lock_guard lock(mu_);
    auto it = values_.find(name);
    if (it == values_.end()) return std::nullopt;
    return host_of(it->second);
  }
  /// Sets global `name` to `value` (a host tensor; a device's copy is dropped).
  void set(std::string_view name, gpass::tensor value) {
    std::lock_guard lock(mu_);
    entry& e = values_[std::string(name)];
    e = entry{.host = std::move(value)};
  }
  /// True when global `name` has a value.
  bool contains(std::string_view name) const {
    std::lock_guard lock(mu_);
    return values_.find(name) != values_.end();
  }
  /// Every global and its host value, by name (a copy; device-held values copied back).
  std::map<std::string, gpass::tensor, std::less<>> snapshot() const {
    std::lock_guard lock(mu_);
    std::map<std::string, gpass::tensor, std::less<>> r;
    for (const auto& [k, e] : values_) r.emplace(k, host_of(e));
    return r;
  }
  /// Gives every global named by a `global:<name>` tensor attribute of `attrs` (a graph's
  /// attributes) that initial value, unless it already has a value (a store shared by
  /// several plans is initialised once).
  void initialize_from(const attribute_map& attrs) {
    std::lock_guard lock(mu_);
    for (auto it = attrs.lower_bound(global_attr_prefix); it != attrs.end(); ++it) {
      std::string_view k = it->first;
      if (!k.starts_with(global_attr_prefix)) break;
      if (it->second.is<gpass::tensor>())
        values_.try_emplace(std::string(k.substr(global_attr_prefix.size())), entry{.host = it->second.as<gpass::tensor>()});
    }
  }

  /// The value of global `name` as device `device`'s tensor `T` (nullopt when never set):
  /// the device's copy when it holds one, else `upload(host value)`, kept for the next read.
  /// `download(const T&)` makes a host copy of such a tensor (complete when it returns; it
  /// must not depend on anything that may die before the store).
  template <class T, class Upload, class Download>
  std::optional<T> get_on(std::string_view name, std::string_view device, Upload&& upload, Download&& download) {
    std::lock_guard lock(mu_);
    auto it = values_.find(name);
    if (it == values_.end()) return std::nullopt;
    entry& e = it->second;
    if (e.device.has_value() && e.device_name == device) return std::any_cast<const T&>(e.device);
    gpass::tensor h = host_of(e);  // (from another device: through the host)
    T d = upload(h);
    e.host = std::move(h);
    keep_on(e, device, d, std::forward<Download>(download));
    return d;
  }
  /// Sets global `name` to `value`, a tensor in device `device`'s memory (the host copy is
  /// dropped; `download` as for `get_on`).
  template <class T, class Download>
  void set_on(std::string_view name, std::string_view device, T value, Download&& download) {
    std::lock_guard lock(mu_);
    entry& e = values_[std::string(name)];
    e.host.reset();
    keep_on(e, device, std::move(value), std::forward<Download>(download));
  }
  /// The device whose memory holds global `name` ("" when only the host holds it or it has
  /// no value).
  std::string device_of(std::string_view name) const {
    std::lock_guard lock(mu_);
    auto it = values_.find(name);
    return it == values_.end() || !it->second.device.has_value() ? std::string() : it->second.device_name;
  }

 private:
  struct entry {
    mutable std::optional<gpass::tensor> host;  ///< absent while a device's copy is the only one
    std::any device;                    ///< the device's tensor, or empty
    std::string device_name;
    std::function<gpass::tensor(const std::any&)> to_host;
  };
  template <class T, class Download>
  static void keep_on(entry& e, std::string_view device, T value, Download&& download) {
    e.device = std::move(value);
    e.device_name = std::string(device);
    e.to_host = [down = std::forward<Download>(download)](const std::any& a) { return down(std::any_cast<const T&>(a)); };
  }
  /// The host value of `e`, copied from the device (and kept) when only the device holds it.
  static gpass::tensor host_of(const entry& e) {
    if (!e.host) e.host = e.to_host(e.device);
    return *e.host;
  }

  mutable std::mutex mu_;
  std::map<std::string, entry, std::less<>> values_;
};

}  // namespace gpass::exec
