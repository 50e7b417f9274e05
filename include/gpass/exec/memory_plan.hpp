// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file memory_plan.hpp
/// `gpass::exec::plan_memory`: offsets in one arena for buffers with known sizes and
/// lifetimes, so that buffers whose lifetimes do not overlap share memory.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <string_view>
#include <vector>

#include <gpass/core/type.hpp>

namespace gpass::exec {

/// A buffer to place: `size` bytes, written at step `first` and last read at step `last`
/// (`first <= last`; a buffer read and written by the same step must not share memory with
/// another one live at that step, which the steps make sure of).
struct buffer_request {
  std::size_t size = 0;
  std::int64_t first = 0;
  std::int64_t last = 0;
};

/// Where the buffers went: `offsets[i]` for request `i`, and the arena size (the peak).
struct buffer_layout {
  std::vector<std::size_t> offsets;
  std::size_t arena_bytes = 0;  ///< planned peak
  std::size_t naive_bytes = 0;  ///< the sum of all sizes (no reuse)
};

/// Places the buffers: a sweep over the steps that frees the buffers whose last use has
/// passed, then places the new ones best-fit in the free blocks (coalesced), growing the
/// arena only when nothing fits. Sizes are rounded up to `alignment`. O(n log n).
/// \code
///   auto layout = gpass::exec::plan_memory({{1024, 0, 1}, {1024, 2, 3}});
///   layout.arena_bytes == 1024;   // the second buffer reuses the first one's memory
/// \endcode
inline buffer_layout plan_memory(const std::vector<buffer_request>& requests, std::size_t alignment = 64) {
  buffer_layout out;
  out.offsets.assign(requests.size(), 0);
  const std::size_t n = requests.size();
  std::vector<std::size_t> by_first(n), by_last(n);
  for (std::size_t i = 0; i < n; ++i) by_first[i] = by_last[i] = i;
  auto sorter = [&](auto key) {
    return [&, key](std::size_t a, std::size_t b) {
      const auto ka = key(requests[a]), kb = key(requests[b]);
      return ka != kb ? ka < kb : a < b;
    };
  };
  std::sort(by_first.begin(), by_first.end(), sorter([](const buffer_request& r) { return r.first; }));
  std::sort(by_last.begin(), by_last.end(), sorter([](const buffer_request& r) { return r.last; }));
  auto rounded = [&](std::size_t s) { return (s + alignment - 1) / alignment * alignment; };

  std::size_t top = 0;  // end of the used part of the arena (free blocks lie below it)
  std::map<std::size_t, std::size_t> free_by_offset;          // offset -> size
  std::multimap<std::size_t, std::size_t> free_by_size;       // size -> offset
  auto erase_free = [&](std::map<std::size_t, std::size_t>::iterator it) {
    auto range = free_by_size.equal_range(it->second);
    for (auto s = range.first; s != range.second; ++s)
      if (s->second == it->first) {
        free_by_size.erase(s);
        break;
      }
    return free_by_offset.erase(it);
  };
  auto add_free = [&](std::size_t off, std::size_t size) {
    // coalesce with the neighbours
    auto next = free_by_offset.lower_bound(off);
    if (next != free_by_offset.end() && off + size == next->first) {
      size += next->second;
      next = erase_free(next);
    }
    if (next != free_by_offset.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second == off) {
        off = prev->first;
        size += prev->second;
        erase_free(prev);
      }
    }
    if (off + size == top) {  // the top of the used part: lower it instead
      top = off;
      return;
    }
    free_by_offset.emplace(off, size);
    free_by_size.emplace(size, off);
  };
  std::size_t peak = 0;
  std::size_t li = 0;
  for (std::size_t fi = 0; fi < n;) {
    const std::int64_t step = requests[by_first[fi]].first;
    // free what was last used before this step
    for (; li < n && requests[by_last[li]].last < step; ++li) {
      const auto& r = requests[by_last[li]];
      if (r.size == 0) continue;
      add_free(out.offsets[by_last[li]], rounded(r.size));
    }
    for (; fi < n && requests[by_first[fi]].first == step; ++fi) {
      const std::size_t i = by_first[fi];
      const std::size_t size = rounded(requests[i].size);
      out.naive_bytes += size;
      if (size == 0) continue;
      auto best = free_by_size.lower_bound(size);
      if (best != free_by_size.end()) {
        const std::size_t off = best->second, block = best->first;
        free_by_size.erase(best);
        free_by_offset.erase(off);
        out.offsets[i] = off;
        if (block > size) {
          free_by_offset.emplace(off + size, block - size);
          free_by_size.emplace(block - size, off + size);
        }
      } else {
        // nothing fits: grow (a free block ending at `top` was already merged into it)
        out.offsets[i] = top;
        top += size;
      }
      peak = std::max(peak, top);
    }
  }
  out.arena_bytes = peak;
  return out;
}

/// The bytes of a value of type `t` when they are known before running (a tensor of a
/// fixed-size element type and fully known shape), else 0: what a buffer plan can place.
inline std::size_t static_bytes(const type& t) {
  if (!t.is_tensor()) return 0;
  const auto& tt = t.tensor();
  if (!is_trivial(tt.element) || !tt.shape.is_fully_known()) return 0;
  const auto n = checked_num_elements(tt.shape.sizes());
  if (!n) return 0;  // no machine holds it: left to the kernel, which fails clearly
  return checked_bytes(*n, size_of(tt.element)).value_or(0);
}

/// True for the ops whose CPU kernels may write their output over an input of the same size
/// and type (element i read before element i written, nothing else read): the element-wise
/// ONNX ops `plan-memory` lets run in place at level 2.
inline bool can_write_in_place(std::string_view domain, std::string_view op) {
  if (!domain.empty() && domain != "ai.onnx") return false;
  static constexpr std::string_view ops[] = {"Abs", "Add",  "Div",        "Erf",  "Exp",     "Mul", "Neg",
                                             "Relu", "Reciprocal", "Sigmoid", "Sqrt", "Sub", "Tanh"};
  for (std::string_view o : ops)
    if (o == op) return true;
  return false;
}

/// A placed buffer to check: bytes [offset, offset + size) live from step `first` to step
/// `last` (both included).
struct placed_buffer {
  std::size_t offset = 0, size = 0;
  std::int64_t first = 0, last = 0;
};

/// True when no two buffers that are live at the same step overlap in memory: what a layout
/// recorded on a graph (`plan-memory`) must satisfy for the executor to use it. A sweep over
/// the steps with the live buffers ordered by offset; O(n log n).
inline bool layout_is_valid(std::vector<placed_buffer> b) {
  std::erase_if(b, [](const placed_buffer& x) { return x.size == 0; });
  std::vector<std::size_t> by_first(b.size()), by_last(b.size());
  for (std::size_t i = 0; i < b.size(); ++i) by_first[i] = by_last[i] = i;
  std::sort(by_first.begin(), by_first.end(), [&](std::size_t x, std::size_t y) { return b[x].first < b[y].first; });
  std::sort(by_last.begin(), by_last.end(), [&](std::size_t x, std::size_t y) { return b[x].last < b[y].last; });
  std::multimap<std::size_t, std::size_t> live;  // offset -> buffer
  std::size_t li = 0;
  for (std::size_t fi = 0; fi < b.size(); ++fi) {
    const placed_buffer& x = b[by_first[fi]];
    if (x.last < x.first) return false;
    for (; li < b.size() && b[by_last[li]].last < x.first; ++li) {
      auto range = live.equal_range(b[by_last[li]].offset);
      for (auto it = range.first; it != range.second; ++it)
        if (it->second == by_last[li]) {
          live.erase(it);
          break;
        }
    }
    auto next = live.lower_bound(x.offset);
    if (next != live.end() && next->first < x.offset + x.size) return false;
    if (next != live.begin()) {
      const placed_buffer& p = b[std::prev(next)->second];
      if (p.offset + p.size > x.offset) return false;
    }
    live.emplace(x.offset, by_first[fi]);
  }
  return true;
}

}  // namespace gpass::exec
