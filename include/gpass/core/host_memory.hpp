// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file host_memory.hpp
/// Host buffers in transparent huge pages, for what a plan keeps for its life (packed weights).
///
/// `allocate_host` maps a buffer of `huge_buffer_bytes` or more on its own, its start 2 MiB
/// aligned, marked `MADV_HUGEPAGE` (Linux), so it lies in 2 MiB pages where the kernel has
/// them: with the common THP setting "madvise", malloc'ed memory gets 4 KiB pages only, and a
/// buffer streamed from memory on every run then costs a page walk every 4 KiB and stops the
/// hardware prefetchers at every page's end. `huge_pool` packs smaller long-lived buffers side
/// by side in such memory. Only whole 2 MiB pages inside a buffer become huge pages: a
/// buffer is not rounded up past its last 4 KiB page, so it costs no more memory than with
/// malloc.
///
/// Not for activations: a run's arena in huge pages made MobileNetV2's kernels slower, not
/// faster (their minima summed 5.45 -> 5.72 ms at batch 1 on one thread); the likely cause:
/// in one physically contiguous region, buffers whose offsets differ by a multiple of the
/// L2's way size (activations often have such sizes) share cache sets in every run, where
/// 4 KiB pages scatter them.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <new>

#include <gpass/config.hpp>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace gpass::detail {

/// Buffers at least this big are mapped in huge pages (where the system has them).
inline constexpr std::size_t huge_buffer_bytes = std::size_t{2} << 20;

/// `n` bytes (at least one), 64-byte aligned; free with `free_host(p, n)` and the same `n`.
/// Throws `std::bad_alloc` when there is no memory.
inline void* allocate_host(std::size_t n) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (n >= huge_buffer_bytes) {
    constexpr std::size_t page = 4096, huge = huge_buffer_bytes;
    const std::size_t len = (n + page - 1) / page * page;
    if (len < n || len > static_cast<std::size_t>(-1) - huge) throw std::bad_alloc();
    // map a huge page more than asked, then give back what lies before the first 2 MiB
    // boundary and after the buffer's end
    void* m = ::mmap(nullptr, len + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) throw std::bad_alloc();
    auto* base = static_cast<std::byte*>(m);
    const auto addr = reinterpret_cast<std::uintptr_t>(base);
    const std::size_t head = (huge - addr % huge) % huge;
    if (head) ::munmap(base, head);
    const std::size_t tail = huge - head;
    if (tail) ::munmap(base + head + len, tail);
    void* p = base + head;
    ::madvise(p, len, MADV_HUGEPAGE);  // advice: without THP the buffer keeps 4 KiB pages
    return p;
  }
#endif
  return ::operator new[](n ? n : 1, std::align_val_t{64});
}

/// Frees a buffer of `allocate_host(n)`.
inline void free_host(void* p, std::size_t n) noexcept {
  if (!p) return;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (n >= huge_buffer_bytes) {
    ::munmap(p, (n + 4095) / 4096 * 4096);
    return;
  }
#endif
  ::operator delete[](p, std::align_val_t{64});
}

/// Long-lived buffers below `huge_buffer_bytes` (a plan's packed filters: most are tens or
/// hundreds of KiB) side by side in 4 MiB chunks of `allocate_host` memory, so they too lie in
/// huge pages; buffers of `huge_buffer_bytes` or more get a mapping of their own. Allocation
/// takes the next 64-byte aligned bytes of the newest chunk (a new chunk when they do not
/// fit); a chunk is unmapped when its last buffer is freed (the newest one is kept, emptied,
/// for the next buffers). For buffers that live about as long as each other: a freed buffer's
/// bytes are reused only once its whole chunk is free. Thread-safe.
class huge_pool {
 public:
  static constexpr std::size_t chunk_bytes = 2 * huge_buffer_bytes;
  /// The process's pool (never destroyed: buffers may be freed during static destruction).
  static huge_pool& global() {
    static huge_pool* pool = new huge_pool;
    return *pool;
  }
  huge_pool() = default;
  huge_pool(const huge_pool&) = delete;
  huge_pool& operator=(const huge_pool&) = delete;
  /// Unmaps every chunk: no buffer of the pool may be used after.
  ~huge_pool() {
    for (auto& [base, c] : chunks_) free_host(reinterpret_cast<void*>(base), chunk_bytes);
  }

  /// `n` bytes (at least one), 64-byte aligned; free with `deallocate(p, n)`.
  void* allocate(std::size_t n) {
    if (n >= huge_buffer_bytes) return allocate_host(n);
    const std::size_t need = (std::max<std::size_t>(n, 1) + 63) / 64 * 64;
    std::lock_guard<std::mutex> lock(m_);
    if (newest_ == chunks_.end() || chunk_bytes - newest_->second.used < need) {
      auto* base = static_cast<std::byte*>(allocate_host(chunk_bytes));
      const auto former = newest_;
      try {
        newest_ = chunks_.emplace(reinterpret_cast<std::uintptr_t>(base), chunk{}).first;
      } catch (...) {
        free_host(base, chunk_bytes);
        throw;
      }
      // the former newest chunk, if empty, is no use any more (any other empty chunk was
      // unmapped when its last buffer was freed)
      if (former != chunks_.end() && former->second.live == 0) {
        free_host(reinterpret_cast<void*>(former->first), chunk_bytes);
        chunks_.erase(former);
      }
    }
    chunk& c = newest_->second;
    void* p = reinterpret_cast<std::byte*>(newest_->first) + c.used;
    c.used += need;
    ++c.live;
    return p;
  }
  /// Frees a buffer of `allocate(n)`.
  void deallocate(void* p, std::size_t n) noexcept {
    if (!p) return;
    if (n >= huge_buffer_bytes) {
      free_host(p, n);
      return;
    }
    std::lock_guard<std::mutex> lock(m_);
    auto it = chunks_.upper_bound(reinterpret_cast<std::uintptr_t>(p));
    GPASS_ASSERT(it != chunks_.begin());
    --it;
    GPASS_ASSERT(it->second.live > 0);
    if (--it->second.live != 0) return;
    if (it == newest_) {
      it->second.used = 0;  // kept for the next buffers
    } else {
      free_host(reinterpret_cast<void*>(it->first), chunk_bytes);
      chunks_.erase(it);
    }
  }
  /// Chunks mapped now (the newest included).
  std::size_t chunks() const {
    std::lock_guard<std::mutex> lock(m_);
    return chunks_.size();
  }

 private:
  struct chunk {
    std::size_t used = 0;  ///< bytes handed out from the chunk's start
    std::size_t live = 0;  ///< buffers not freed yet
  };
  mutable std::mutex m_;
  std::map<std::uintptr_t, chunk> chunks_;  ///< by base address
  std::map<std::uintptr_t, chunk>::iterator newest_ = chunks_.end();
};

}  // namespace gpass::detail
