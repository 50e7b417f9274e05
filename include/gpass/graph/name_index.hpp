// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file name_index.hpp
/// `gpass::detail::name_index<Id>`: the name -> node index of `gpass::graph`.
///
/// An open-addressing hash table (linear probing, at most half full, backward-shift deletion,
/// so no tombstones) of `(hash, id)` slots, 16 bytes each. It does not store the names: the
/// graph's nodes hold them, and every operation takes a `name_of(id)` callable to compare
/// against. Compared with `std::unordered_map<std::string, id>`, an erase touches one slot
/// run of a contiguous array instead of walking a bucket's linked list through memory, a
/// lookup is one probe in the common case, and nothing is allocated per name. This matters
/// on graphs of 10^6 nodes, where every pointer chased is a cache miss.

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace gpass::detail {

template <class Id>
class name_index {
  struct slot {
    std::uint64_t hash = 0;  // 0: empty
    Id id{};
  };

 public:
  std::size_t size() const noexcept { return size_; }
  void clear() noexcept {
    slots_.clear();
    size_ = 0;
  }
  /// Makes room for `n` names without rehashing.
  void reserve(std::size_t n) {
    if (2 * n > slots_.size()) rehash(std::bit_ceil(std::max<std::size_t>(16, 2 * n)));
  }

  /// The id whose name is `name`, if any.
  template <class NameOf>
  std::optional<Id> find(std::string_view name, NameOf&& name_of) const {
    if (size_ == 0) return std::nullopt;
    const std::uint64_t h = hash(name);
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t i = h & mask;; i = (i + 1) & mask) {
      const slot& s = slots_[i];
      if (s.hash == 0) return std::nullopt;
      if (s.hash == h && name_of(s.id) == name) return s.id;
    }
  }
  template <class NameOf>
  bool contains(std::string_view name, NameOf&& name_of) const {
    return find(name, name_of).has_value();
  }

  /// Adds `id` under `name`; the name must not be present (the graph checks first).
  void insert(std::string_view name, Id id) {
    reserve(size_ + 1);
    place(hash(name), id);
    ++size_;
  }

  /// Removes the entry of `name` (whose id is `id`); no effect when it is absent.
  void erase(std::string_view name, Id id) {
    if (size_ == 0) return;
    const std::uint64_t h = hash(name);
    const std::size_t mask = slots_.size() - 1;
    std::size_t i = h & mask;
    for (;; i = (i + 1) & mask) {
      if (slots_[i].hash == 0) return;
      if (slots_[i].hash == h && slots_[i].id == id) break;
    }
    // Backward shift: pull later members of the probe run into the hole when their home
    // slot does not lie cyclically in (hole, j].
    for (std::size_t j = (i + 1) & mask;; j = (j + 1) & mask) {
      if (slots_[j].hash == 0) break;
      const std::size_t home = slots_[j].hash & mask;
      const bool stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
      if (stays) continue;
      slots_[i] = slots_[j];
      i = j;
    }
    slots_[i] = slot{};
    --size_;
  }

 private:
  static std::uint64_t hash(std::string_view name) noexcept {
    std::uint64_t h = std::hash<std::string_view>{}(name);
    // Spread the bits (the low bits pick the slot) and keep 0 free for "empty".
    h ^= h >> 31;
    h *= 0x9e3779b97f4a7c15ULL;
    h ^= h >> 29;
    return h == 0 ? 1 : h;
  }
  void place(std::uint64_t h, Id id) {
    const std::size_t mask = slots_.size() - 1;
    std::size_t i = h & mask;
    while (slots_[i].hash != 0) i = (i + 1) & mask;
    slots_[i] = slot{h, id};
  }
  void rehash(std::size_t capacity) {
    std::vector<slot> old = std::exchange(slots_, std::vector<slot>(capacity));
    for (const slot& s : old)
      if (s.hash != 0) place(s.hash, s.id);
  }

  std::vector<slot> slots_;
  std::size_t size_ = 0;
};

}  // namespace gpass::detail
