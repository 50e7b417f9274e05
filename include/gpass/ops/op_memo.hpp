// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file op_memo.hpp
/// `gpass::op_memo<T>`: a per-pass memo of something computed from a node's (domain, op),
/// such as a registry lookup, for passes that ask it of every node.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace gpass {

namespace detail {
/// FNV-1a of a short name (an op, a domain): cheaper than std::hash's Murmur for the few
/// bytes of an op name, for tables keyed by op that are probed once per node.
inline std::size_t hash_name(std::string_view s) noexcept {
  std::uint64_t h = 1469598103934665603ull;
  for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return static_cast<std::size_t>(h);
}
}  // namespace detail

/// Memoizes `compute(domain, op)` by (domain, op). A graph has few distinct ops, so the first
/// 16 sit in a short table searched linearly (the last hit first, sizes compared before
/// bytes), which costs less than hashing the op name of every node; more go to a hash map.
/// The names are copied: nodes may go while the memo lives.
/// \code
///   gpass::op_memo<bool> pure;
///   for (auto v : g.nodes()) if (pure(g[v].domain, g[v].op, is_pure)) ...;
/// \endcode
template <class T>
class op_memo {
 public:
  template <class F>
  const T& operator()(std::string_view domain, std::string_view op, F&& compute) {
    if (last_ < table_.size() && table_[last_].matches(domain, op)) return table_[last_].value;
    for (std::size_t i = 0; i < table_.size(); ++i)
      if (table_[i].matches(domain, op)) {
        last_ = i;
        return table_[i].value;
      }
    if (table_.size() < table_size) {
      last_ = table_.size();
      table_.push_back({std::string(domain), std::string(op), compute(domain, op)});
      return table_.back().value;
    }
    key_.assign(domain).append(1, '\0').append(op);
    auto it = more_.find(key_);
    if (it == more_.end()) it = more_.emplace(key_, compute(domain, op)).first;
    return it->second;
  }

 private:
  static constexpr std::size_t table_size = 16;
  struct entry {
    std::string domain, op;
    T value;
    bool matches(std::string_view d, std::string_view o) const {
      return std::string_view(op) == o && std::string_view(domain) == d;
    }
  };
  std::vector<entry> table_;
  std::size_t last_ = 0;
  std::string key_;
  std::unordered_map<std::string, T> more_;
};

}  // namespace gpass
