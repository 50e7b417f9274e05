// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <gpass/core/host_memory.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_core_host_memory {

using gpass::detail::allocate_host;
using gpass::detail::free_host;
using gpass::detail::huge_buffer_bytes;

std::uintptr_t address(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

// Fills every byte of [p, p + n) with a pattern of its index and checks it back: the whole
// buffer is mapped and writable, and no two live buffers overlap.
void fill(void* p, std::size_t n, unsigned salt) {
  auto* b = static_cast<unsigned char*>(p);
  for (std::size_t i = 0; i < n; i += 61) b[i] = static_cast<unsigned char>(i * 7 + salt);
  b[n - 1] = static_cast<unsigned char>(salt ^ 0x5a);
}
bool filled(const void* p, std::size_t n, unsigned salt) {
  const auto* b = static_cast<const unsigned char*>(p);
  for (std::size_t i = 0; i < n; i += 61)
    if (i != n - 1 && b[i] != static_cast<unsigned char>(i * 7 + salt)) return false;
  return b[n - 1] == static_cast<unsigned char>(salt ^ 0x5a);
}

TEST_CASE("core.host_memory.sizes_alignment_and_contents") {
  const std::vector<std::size_t> sizes = {0,
                                          1,
                                          63,
                                          4096,
                                          (std::size_t{1} << 20) + 3,
                                          huge_buffer_bytes - 1,
                                          huge_buffer_bytes,
                                          huge_buffer_bytes + 1,
                                          3 * huge_buffer_bytes + 4095,
                                          5 * huge_buffer_bytes + 12345};
  std::vector<void*> live;
  for (std::size_t k = 0; k < sizes.size(); ++k) {
    CAPTURE(sizes[k]);
    void* p = allocate_host(sizes[k]);
    REQUIRE(p != nullptr);
    CHECK(address(p) % 64 == 0);
#if defined(__linux__)
    if (sizes[k] >= huge_buffer_bytes) CHECK(address(p) % huge_buffer_bytes == 0);
#endif
    if (sizes[k]) fill(p, sizes[k], static_cast<unsigned>(k));
    live.push_back(p);
  }
  for (std::size_t k = 0; k < sizes.size(); ++k) {
    CAPTURE(sizes[k]);
    if (sizes[k]) CHECK(filled(live[k], sizes[k], static_cast<unsigned>(k)));
    free_host(live[k], sizes[k]);
  }
  free_host(nullptr, huge_buffer_bytes);  // a no-op, as for delete
}

TEST_CASE("core.host_memory.reuse_after_free") {
  // many large buffers allocated and freed in turn: each free returns its mapping (else
  // this would hold 64 x 6 MiB)
  for (int i = 0; i < 64; ++i) {
    const std::size_t n = 3 * huge_buffer_bytes - 4096 * static_cast<std::size_t>(i % 5);
    void* p = allocate_host(n);
    fill(p, n, static_cast<unsigned>(i));
    CHECK(filled(p, n, static_cast<unsigned>(i)));
    free_host(p, n);
  }
}

TEST_CASE("core.host_memory.pool_packs_buffers_and_unmaps_free_chunks") {
  using gpass::detail::huge_pool;
  huge_pool pool;
  CHECK(pool.chunks() == 0);
  // small buffers side by side in one chunk, each 64-byte aligned, not overlapping
  std::vector<std::pair<void*, std::size_t>> first;
  for (std::size_t n : {std::size_t{1}, std::size_t{100}, std::size_t{64}, std::size_t{4097}, std::size_t{300000}}) {
    void* p = pool.allocate(n);
    CHECK(address(p) % 64 == 0);
    fill(p, n, static_cast<unsigned>(n));
    first.emplace_back(p, n);
  }
  CHECK(pool.chunks() == 1);
  for (std::size_t k = 1; k < first.size(); ++k)
    CHECK(address(first[k].first) >= address(first[k - 1].first) + first[k - 1].second);
  // a buffer that does not fit what is left opens a second chunk
  const std::size_t big = huge_buffer_bytes - 64;
  void* a = pool.allocate(big);
  void* b = pool.allocate(big);
  fill(a, big, 1);
  fill(b, big, 2);
  CHECK(pool.chunks() == 2);
  CHECK(filled(a, big, 1));
  // buffers of a huge page or more have mappings of their own, not counted as chunks
  void* own = pool.allocate(3 * huge_buffer_bytes);
  fill(own, 3 * huge_buffer_bytes, 3);
  CHECK(pool.chunks() == 2);
  for (auto& [p, n] : first) {
    CHECK(filled(p, n, static_cast<unsigned>(n)));
    pool.deallocate(p, n);
  }
  CHECK(pool.chunks() == 2);  // `a` still lives in the first chunk
  pool.deallocate(a, big);
  CHECK(pool.chunks() == 1);  // the first chunk, empty and not the newest, is unmapped
  CHECK(filled(b, big, 2));
  CHECK(filled(own, 3 * huge_buffer_bytes, 3));
  pool.deallocate(own, 3 * huge_buffer_bytes);
  pool.deallocate(b, big);
  CHECK(pool.chunks() == 1);  // the newest is kept, empty, and reused from its start
  void* c = pool.allocate(1000);
  CHECK(address(c) == address(b));  // b was the second chunk's first buffer
  pool.deallocate(c, 1000);
  pool.deallocate(nullptr, 10);
  // many buffers freed in turn while the newest chunk holds a live one: the chunks they
  // filled are unmapped as they empty, so the pool stays small
  void* keep = pool.allocate(10);
  for (int i = 0; i < 200; ++i) {
    void* p = pool.allocate(700000);
    fill(p, 700000, static_cast<unsigned>(i));
    CHECK(filled(p, 700000, static_cast<unsigned>(i)));
    pool.deallocate(p, 700000);
  }
  CHECK(pool.chunks() <= 2);
  pool.deallocate(keep, 10);
}

#if defined(__linux__)
// The kernel's view of the mapping holding `p`: the block of /proc/self/smaps whose range
// contains it ("" when not found).
std::string smaps_block(const void* p) {
  std::ifstream in("/proc/self/smaps");
  std::string line, block;
  bool inside = false;
  while (std::getline(in, line)) {
    const auto dash = line.find('-');
    const auto space = line.find(' ');
    const bool header = dash != std::string::npos && space != std::string::npos && dash < space &&
                        line.find_first_not_of("0123456789abcdef") == dash;
    if (header) {
      if (inside) return block;
      const std::uintptr_t lo = std::stoull(line.substr(0, dash), nullptr, 16);
      const std::uintptr_t hi = std::stoull(line.substr(dash + 1, space - dash - 1), nullptr, 16);
      inside = address(p) >= lo && address(p) < hi;
      block.clear();
    }
    if (inside) block += line + "\n";
  }
  return inside ? block : "";
}

TEST_CASE("core.host_memory.large_buffers_are_marked_for_huge_pages") {
  std::ifstream mode("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string setting;
  std::getline(mode, setting);
  if (setting.empty() || setting.find("[never]") != std::string::npos) {
    MESSAGE("skipped: transparent huge pages are off on this system ('" << setting << "')");
    return;
  }
  const std::size_t n = 4 * huge_buffer_bytes;
  void* p = allocate_host(n);
  std::memset(p, 1, n);
  const std::string block = smaps_block(p);
  INFO(block);
  REQUIRE(!block.empty());
  // the mapping was advised (VmFlags "hg"), so the kernel may back it with huge pages
  const auto flags = block.find("VmFlags:");
  REQUIRE(flags != std::string::npos);
  CHECK(block.find(" hg", flags) != std::string::npos);
  if (const auto e = block.find("THPeligible:"); e != std::string::npos)
    CHECK(std::stoi(block.substr(e + 12)) == 1);
  free_host(p, n);
  // a small buffer comes from the allocator, not from a mapping of its own
  void* q = allocate_host(1000);
  CHECK(address(q) % 64 == 0);
  free_host(q, 1000);
}
#endif

}  // namespace gpass_test_core_host_memory
