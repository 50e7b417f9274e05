// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file tf_random_rules.hpp
/// What the kernels of TensorFlow's random ops share across policies: the Philox-4x32-10
/// generator on the host (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3") with
/// TensorFlow's seedings — stateful (`seed`, `seed2`), stateless (a `[2]` seed scrambled by one
/// Philox block), the V2 ops' (key, counter) — and the ops' checks of their shape, seed, key,
/// counter, algorithm and integer bounds, with TensorFlow's messages. The device kernels run
/// the same block function (`philox_device_source`).

#include <array>
#include <cstdint>
#include <limits>
#include <mutex>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <gpass/core/dtype.hpp>
#include <gpass/core/shape.hpp>
#include <gpass/exec/kernel.hpp>

namespace gpass::exec::tf_random_rules {

using i64 = std::int64_t;
using u32 = std::uint32_t;
using u64 = std::uint64_t;

/// Philox-4x32-10: a 128-bit counter and a 64-bit key; each call gives four words and
/// increments the counter.
struct philox {
  std::array<u32, 4> ctr{};
  std::array<u32, 2> key{};

  static std::array<u32, 4> block(std::array<u32, 4> c, std::array<u32, 2> k) {
    constexpr u32 m0 = 0xD2511F53u, m1 = 0xCD9E8D57u, w0 = 0x9E3779B9u, w1 = 0xBB67AE85u;
    for (int round = 0; round < 10; ++round) {
      const u64 p0 = static_cast<u64>(m0) * c[0], p1 = static_cast<u64>(m1) * c[2];
      c = {static_cast<u32>(p1 >> 32) ^ c[1] ^ k[0], static_cast<u32>(p1), static_cast<u32>(p0 >> 32) ^ c[3] ^ k[1],
           static_cast<u32>(p0)};
      k[0] += w0;
      k[1] += w1;
    }
    return c;
  }
  std::array<u32, 4> operator()() {
    auto r = block(ctr, key);
    skip(1);
    return r;
  }
  /// Advances the counter by `n` blocks (a 128-bit addition).
  void skip(u64 n) {
    u64 lo = (static_cast<u64>(ctr[1]) << 32) | ctr[0];
    const u64 before = lo;
    lo += n;
    ctr[0] = static_cast<u32>(lo);
    ctr[1] = static_cast<u32>(lo >> 32);
    if (lo < before && ++ctr[2] == 0) ++ctr[3];
  }
  /// TensorFlow's PhiloxRandom(seed_lo, seed_hi): the key from the first, the counter's high
  /// half from the second.
  static philox seeded(u64 seed_lo, u64 seed_hi) {
    philox p;
    p.key = {static_cast<u32>(seed_lo), static_cast<u32>(seed_lo >> 32)};
    p.ctr = {0, 0, static_cast<u32>(seed_hi), static_cast<u32>(seed_hi >> 32)};
    return p;
  }
  /// TensorFlow's stateless seed scrambling (the key and counter of a `[2]` seed).
  static philox from_stateless_seed(u64 s0, u64 s1) {
    philox p;
    p.key = {0x3ec8f720u, 0x02461e29u};
    p.ctr = {static_cast<u32>(s0), static_cast<u32>(s0 >> 32), static_cast<u32>(s1), static_cast<u32>(s1 >> 32)};
    const auto mix = block(p.ctr, p.key);
    p.key = {mix[0], mix[1]};
    p.ctr = {0, 0, mix[2], mix[3]};
    return p;
  }
  /// The key and counter as TensorFlow's V2 ops carry them (uint64 [1] and [2]).
  static philox from_key_counter(u64 key, u64 c0, u64 c1) {
    philox p;
    p.key = {static_cast<u32>(key), static_cast<u32>(key >> 32)};
    p.ctr = {static_cast<u32>(c0), static_cast<u32>(c0 >> 32), static_cast<u32>(c1), static_cast<u32>(c1 >> 32)};
    return p;
  }
  /// The key and counter as StatelessRandomGetKeyCounter writes them.
  u64 key_word() const { return key[0] | (static_cast<u64>(key[1]) << 32); }
  std::array<u64, 2> counter_words() const {
    return {ctr[0] | (static_cast<u64>(ctr[1]) << 32), ctr[2] | (static_cast<u64>(ctr[3]) << 32)};
  }
};

/// The distributions of the random ops.
enum class dist { uniform, normal, truncated, uniform_int, full_int };

/// The stateless random ops: name, distribution, and whether they take (key, counter, alg)
/// (V2) rather than a `[2]` seed.
struct stateless_op {
  const char* name;
  dist d;
  bool v2;
};
inline constexpr stateless_op stateless_ops[] = {
    {"StatelessRandomUniform", dist::uniform, false},        {"StatelessRandomNormal", dist::normal, false},
    {"StatelessTruncatedNormal", dist::truncated, false},    {"StatelessRandomUniformInt", dist::uniform_int, false},
    {"StatelessRandomUniformFullInt", dist::full_int, false}, {"StatelessRandomUniformV2", dist::uniform, true},
    {"StatelessRandomNormalV2", dist::normal, true},          {"StatelessTruncatedNormalV2", dist::truncated, true},
    {"StatelessRandomUniformIntV2", dist::uniform_int, true}, {"StatelessRandomUniformFullIntV2", dist::full_int, true}};

/// The stateful random ops: name, distribution, the attribute that names the output type.
struct stateful_op {
  const char* name;
  dist d;
  const char* type;
};
inline constexpr stateful_op stateful_ops[] = {{"RandomUniform", dist::uniform, "dtype"},
                                               {"RandomStandardNormal", dist::normal, "dtype"},
                                               {"TruncatedNormal", dist::truncated, "dtype"},
                                               {"RandomUniformInt", dist::uniform_int, "Tout"}};

/// A random op's output type when its type attribute is absent: TensorFlow's op defaults
/// (uint64 for the full-range ints; f32 for the floats; the bounded ints have no default,
/// their bounds' type: int32 assumed).
inline dtype default_type(dist d) {
  return d == dist::full_int ? dtype::uint64 : d == dist::uniform_int ? dtype::int32 : dtype::f32;
}

/// A stateful op's generator: each run takes the stream at the generator's counter and
/// advances it 256 blocks per output element, as TensorFlow does, so that a graph's second run
/// draws what TensorFlow's second `Session.run` draws. Seeded from the node's `seed` /
/// `seed2`, or, both 0 (TensorFlow's "no seed"), from `std::random_device`.
class stateful_generator {
 public:
  explicit stateful_generator(const kernel_node& n) {
    u64 seed = static_cast<u64>(n.attr<i64>("seed", 0)), seed2 = static_cast<u64>(n.attr<i64>("seed2", 0));
    if (seed == 0 && seed2 == 0) {
      std::random_device rd;
      seed = (static_cast<u64>(rd()) << 32) | rd();
      seed2 = (static_cast<u64>(rd()) << 32) | rd();
    }
    g_ = philox::seeded(seed, seed2);
  }
  /// The stream of a run with `count` outputs.
  philox take(u64 count) {
    std::lock_guard lock(mu_);
    const philox r = g_;
    g_.skip(count * 256);
    return r;
  }

 private:
  std::mutex mu_;
  philox g_;
};

/// A random op's output sizes (its `shape` input's values): no negative dim.
inline std::vector<i64> output_sizes(std::vector<i64> s, const kernel_node& n) {
  for (i64 d : s)
    if (d < 0) n.fail("shape has a negative dim " + std::to_string(d));
  return s;
}

/// A stateless seed must have shape [2].
inline void check_seed(const std::vector<i64>& sizes, const kernel_node& n) {
  if (sizes.size() != 1 || sizes[0] != 2) n.fail("seed must have shape [2], got " + shape::of(sizes).to_string());
}

/// A V2 op's algorithm, key and counter (the key one uint64, the counter two for Philox).
inline void check_key_counter(i64 alg, dtype key_t, i64 key_size, dtype counter_t, i64 counter_size, const kernel_node& n) {
  if (alg != 1 && alg != 3) n.fail("RNG algorithm " + std::to_string(alg) + " is not Philox (1) or auto-select (3)");
  if (key_size != 1 || key_t != dtype::uint64) n.fail("key must be one uint64");
  if (counter_size < 2 || counter_t != dtype::uint64) n.fail("counter must be two uint64 (Philox)");
}

/// A uniform int op's bounds for a non-empty output of `t`: minval < maxval, both of the
/// output type (wider ones, int64 bounds of an int32 output, would make the range wrap).
inline void check_int_bounds(dtype t, i64 lo, i64 hi, const kernel_node& n) {
  if (lo >= hi) n.fail("need minval < maxval, got " + std::to_string(lo) + " >= " + std::to_string(hi));
  using i32_limits = std::numeric_limits<std::int32_t>;
  const bool fits = t == dtype::int32    ? lo >= i32_limits::min() && hi <= i32_limits::max()
                    : t == dtype::uint32 ? lo >= 0 && hi <= i64{std::numeric_limits<u32>::max()}
                    : t == dtype::uint64 ? lo >= 0
                                         : true;
  if (!fits)
    n.fail("minval " + std::to_string(lo) + " and maxval " + std::to_string(hi) + " do not fit the output type " + std::string(to_string(t)));
}

/// Fails unless `t` is an output type of distribution `d` (floats; int32, int64, uint32, uint64).
inline void check_output_type(dist d, dtype t, const kernel_node& n) {
  if (d == dist::uniform_int || d == dist::full_int) {
    if (t != dtype::int32 && t != dtype::int64 && t != dtype::uint32 && t != dtype::uint64)
      n.fail("dtype " + std::string(to_string(t)) + " is not int32, int64, uint32 or uint64");
  } else if (t != dtype::f32 && t != dtype::f64 && t != dtype::f16 && t != dtype::bf16) {
    n.fail("dtype " + std::string(to_string(t)) + " is not a float type");
  }
}

}  // namespace gpass::exec::tf_random_rules
