// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file device_name.hpp
/// `gpass::device_name`: TensorFlow device names, full (`/job:localhost/replica:0/task:0/device:CPU:0`)
/// or partial (`/device:CPU:0`, `/cpu:1`, `cpu:1`, `/device:GPU:*`, `/job:localhost`), parsed,
/// matched and merged the way TensorFlow's placer does.

#include <cctype>
#include <optional>
#include <string>
#include <string_view>

#include <gpass/core/error.hpp>

namespace gpass {

/// A device name; every field may be absent (a partial specification). `type` is kept in
/// upper case (`CPU`, `GPU`); `id` absent means any (`*`).
struct device_name {
  std::optional<std::string> job;
  std::optional<int> replica;
  std::optional<int> task;
  std::optional<std::string> type;
  std::optional<int> id;

  friend bool operator==(const device_name&, const device_name&) = default;

  /// True when no field is set (an empty request: any device).
  bool empty() const noexcept { return !job && !replica && !task && !type && !id; }
  /// True when every field is set (the name of a real device).
  bool full() const noexcept { return job && replica && task && type && id; }

  /// The canonical text: the fields set, in order, as `/job:J/replica:R/task:T/device:TYPE:ID`
  /// (`*` for a type without id); "" when empty.
  std::string to_string() const {
    std::string s;
    if (job) s += "/job:" + *job;
    if (replica) s += "/replica:" + std::to_string(*replica);
    if (task) s += "/task:" + std::to_string(*task);
    if (type || id) s += "/device:" + (type ? *type : std::string("*")) + ":" + (id ? std::to_string(*id) : std::string("*"));
    return s;
  }
  /// The short form `TYPE:ID` (lower case type), as `--devices` takes it: `cpu:1`.
  std::string short_name() const {
    std::string t = type ? *type : std::string("*");
    for (auto& c : t) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return t + ":" + (id ? std::to_string(*id) : std::string("*"));
  }
};

namespace detail {

inline std::optional<int> parse_device_number(std::string_view s) {
  if (s == "*") return std::nullopt;
  if (s.empty() || s.size() > 9) throw error("");
  int v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') throw error("");
    v = v * 10 + (c - '0');
  }
  return v;
}

inline std::string upper(std::string_view s) {
  std::string r(s);
  for (auto& c : r) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return r;
}

inline bool valid_device_word(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.')) return false;
  return true;
}

}  // namespace detail

/// Parses a device name or specification. Accepted components, separated by `/` (a leading
/// `/` is optional): `job:NAME`, `replica:N`, `task:N`, `device:TYPE:N`, `device:TYPE:*`,
/// `device:TYPE`, and the legacy `TYPE:N` / `TYPE` (`cpu:0`, `gpu`). Types are case-insensitive.
/// "" parses to the empty specification. A malformed name is a `gpass::error` quoting it.
/// \code
///   auto d = gpass::parse_device_name("/cpu:1");                 // type CPU, id 1
///   gpass::parse_device_name("/job:localhost/device:GPU:*");     // job, type GPU, any id
/// \endcode
inline device_name parse_device_name(std::string_view text) {
  device_name d;
  auto bad = [&](std::string_view why) -> device_name {
    throw error("device name '" + std::string(text) + "' is not valid: " + std::string(why));
  };
  std::string_view s = text;
  while (!s.empty() && (s.front() == ' ')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ')) s.remove_suffix(1);
  if (!s.empty() && s.front() == '/') s.remove_prefix(1);
  if (s.empty()) return d;
  auto set_type_id = [&](std::string_view type, std::string_view id, bool has_id) {
    if (d.type || d.id) bad("two device components");
    if (type != "*") {
      if (!detail::valid_device_word(type)) bad("bad device type '" + std::string(type) + "'");
      d.type = detail::upper(type);
    }
    if (has_id) {
      try {
        d.id = detail::parse_device_number(id);
      } catch (const error&) {
        bad("bad device index '" + std::string(id) + "'");
      }
    }
  };
  while (!s.empty()) {
    const auto slash = s.find('/');
    std::string_view part = s.substr(0, slash);
    s = slash == std::string_view::npos ? std::string_view{} : s.substr(slash + 1);
    if (part.empty()) bad("empty component");
    const auto c1 = part.find(':');
    const std::string_view head = part.substr(0, c1);
    const std::string_view rest = c1 == std::string_view::npos ? std::string_view{} : part.substr(c1 + 1);
    const bool has_rest = c1 != std::string_view::npos;
    auto number = [&](std::string_view what) -> std::optional<int> {
      try {
        return detail::parse_device_number(rest);
      } catch (const error&) {
        bad("bad " + std::string(what) + " '" + std::string(rest) + "'");
      }
      return std::nullopt;
    };
    if (head == "job") {
      if (!has_rest || !detail::valid_device_word(rest)) bad("bad job name");
      if (d.job) bad("two job components");
      d.job = std::string(rest);
    } else if (head == "replica") {
      if (d.replica) bad("two replica components");
      d.replica = number("replica");
    } else if (head == "task") {
      if (d.task) bad("two task components");
      d.task = number("task");
    } else if (head == "device") {
      if (!has_rest) bad("'device' needs a type");
      const auto c2 = rest.find(':');
      set_type_id(rest.substr(0, c2), c2 == std::string_view::npos ? std::string_view{} : rest.substr(c2 + 1),
                  c2 != std::string_view::npos);
    } else {
      set_type_id(head, rest, has_rest);  // legacy `cpu:0`, `gpu`
    }
  }
  return d;
}

/// True when `name` satisfies `spec`: every field `spec` sets has the same value in `name`.
inline bool device_matches(const device_name& spec, const device_name& name) {
  return (!spec.job || spec.job == name.job) && (!spec.replica || spec.replica == name.replica) &&
         (!spec.task || spec.task == name.task) && (!spec.type || spec.type == name.type) && (!spec.id || spec.id == name.id);
}

/// True when no field is set differently in `a` and `b` (both can hold at once).
inline bool devices_compatible(const device_name& a, const device_name& b) {
  auto ok = [](const auto& x, const auto& y) { return !x || !y || *x == *y; };
  return ok(a.job, b.job) && ok(a.replica, b.replica) && ok(a.task, b.task) && ok(a.type, b.type) && ok(a.id, b.id);
}

/// The specification asking for both `a` and `b` (the union of their fields); call only
/// when `devices_compatible(a, b)`.
inline device_name merge_devices(device_name a, const device_name& b) {
  if (!a.job) a.job = b.job;
  if (!a.replica) a.replica = b.replica;
  if (!a.task) a.task = b.task;
  if (!a.type) a.type = b.type;
  if (!a.id) a.id = b.id;
  return a;
}

}  // namespace gpass
