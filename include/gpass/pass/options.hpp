// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file options.hpp
/// Typed pass options: what a pass declares (`gpass::option_spec`), how a value's text is
/// checked and read, and how an option is described (`--list-passes`, error messages).

#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

namespace gpass {

/// The type of a pass option's value.
enum class option_type {
  boolean,  ///< `true`/`false` (also `1`/`0`, `on`/`off`, `yes`/`no`); `{flag}` alone means true
  integer,  ///< a signed 64-bit decimal integer
  number,   ///< a finite floating-point number (`0.5`, `1e6`)
  string,   ///< any text (quote it in a pipeline when it holds `,`, `{` or `}`)
};

/// The name of an option type as it is written in listings: "bool", "int", "number", "string".
constexpr std::string_view option_type_name(option_type t) noexcept {
  switch (t) {
    case option_type::boolean: return "bool";
    case option_type::integer: return "int";
    case option_type::number: return "number";
    case option_type::string: return "string";
  }
  return "?";
}

/// One option a pass declares: its name (without the pass prefix: `max-sweeps`, set in a
/// context as `infer-shapes.max-sweeps` and in a pipeline as `infer-shapes{max-sweeps=8}`),
/// its type, its default in text form (empty: unset unless given; the pass documents what
/// that means) and a one-line description.
/// \code
///   struct my_fn : gpass::pass_base<my_fn> {
///     static constexpr std::string_view name = "my-pass";
///     static constexpr std::string_view description = "...";
///     static constexpr std::array options{
///         gpass::option_spec{"level", gpass::option_type::integer, "1", "how hard to try (0-3)"}};
///     template <class G> void run(G& g, gpass::pass_context& ctx) const {
///       auto level = option_int(ctx, "level");   // 1 unless my-pass.level is set
///     }
///   };
/// \endcode
struct option_spec {
  std::string_view name;
  option_type type = option_type::string;
  std::string_view default_value;
  std::string_view doc;
};

namespace detail {
inline constexpr std::array<option_spec, 0> no_options{};

template <class P>
constexpr std::span<const option_spec> options_of() {
  if constexpr (requires { std::span<const option_spec>(P::options); })
    return std::span<const option_spec>(P::options);
  else
    return std::span<const option_spec>(no_options);
}
}  // namespace detail

/// The options pass `P` declares: `P::options` (a `std::array<gpass::option_spec, N>`), or
/// none. A pass that declares none takes none: a pipeline that gives it one is an error.
template <class P>
inline constexpr std::span<const option_spec> pass_options_v = detail::options_of<std::remove_cvref_t<P>>();

/// The option called `name` among `specs`, or nullptr.
inline const option_spec* find_option(std::span<const option_spec> specs, std::string_view name) noexcept {
  for (const option_spec& s : specs)
    if (s.name == name) return &s;
  return nullptr;
}

/// The boolean a text means, if it is one of `true false 1 0 on off yes no`.
inline std::optional<bool> parse_option_bool(std::string_view s) noexcept {
  if (s == "true" || s == "1" || s == "on" || s == "yes") return true;
  if (s == "false" || s == "0" || s == "off" || s == "no") return false;
  return std::nullopt;
}
/// The integer a text is, if it is all of one (decimal, optional sign, in range).
inline std::optional<std::int64_t> parse_option_int(std::string_view s) noexcept {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}
/// The finite number a text is, if it is all of one.
inline std::optional<double> parse_option_number(std::string_view s) {
  if (s.empty() || s.front() == ' ') return std::nullopt;
  std::string t(s);
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(t.c_str(), &end);
  if (end != t.c_str() + t.size() || errno == ERANGE || !std::isfinite(v)) return std::nullopt;
  return v;
}

/// Empty when `value` is a valid text for `spec`'s type, else why not ("expects an int").
inline std::string option_value_problem(const option_spec& spec, std::string_view value) {
  bool ok = true;
  switch (spec.type) {
    case option_type::boolean: ok = parse_option_bool(value).has_value(); break;
    case option_type::integer: ok = parse_option_int(value).has_value(); break;
    case option_type::number: ok = parse_option_number(value).has_value(); break;
    case option_type::string: break;
  }
  if (ok) return {};
  return "expects " + std::string(spec.type == option_type::integer ? "an " : "a ") +
         std::string(option_type_name(spec.type)) + ", got '" + std::string(value) + "'";
}

/// `max-sweeps: int = 64 - sweeps before inference gives up` (the default part only when
/// there is one).
inline std::string describe_option(const option_spec& spec) {
  std::string r(spec.name);
  r += ": ";
  r += option_type_name(spec.type);
  if (!spec.default_value.empty()) {
    r += " = ";
    r += spec.default_value;
  }
  if (!spec.doc.empty()) {
    r += " - ";
    r += spec.doc;
  }
  return r;
}

}  // namespace gpass
