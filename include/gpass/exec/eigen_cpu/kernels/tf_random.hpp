// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file tf_random.hpp
/// Eigen CPU kernels of TensorFlow's random ops (domain "tf"), bit for bit TensorFlow's CPU
/// streams: Philox-4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3"),
/// TensorFlow's seed scrambling, its bits-to-number conversions and its sampling order.
///
/// - Stateless (seed input `[2]`): StatelessRandomUniform, StatelessRandomNormal,
///   StatelessTruncatedNormal, StatelessRandomUniformInt, StatelessRandomUniformFullInt; the
///   V2 forms take (key, counter, alg) from StatelessRandomGetKeyCounter(Alg) (alg 1,
///   Philox; 3, auto-select, is Philox on a CPU); StatelessRandomGetAlg.
/// - Stateful (attributes `seed`, `seed2`): RandomUniform, RandomStandardNormal,
///   TruncatedNormal, RandomUniformInt; each kernel keeps its generator and advances it by
///   256 samples per output element per run, as TensorFlow does, so a graph's second run
///   draws what TensorFlow's second `Session.run` draws. Seeds (0, 0) mean "random":
///   seeded from `std::random_device`.
///
/// Conversions: floats take 23 bits (`1.m - 1`), doubles 52 bits of two words, halves and
/// bfloat16 10 and 7 bits of one word; normals by Box-Muller (f32: one pair per two words;
/// f64: one pair per four); truncated normals by rejection (|x| < 2) from a single-word
/// stream that starts 256 Philox blocks apart per group of outputs; bounded ints by
/// `lo + bits % (hi - lo)`. Private (`gpass::exec::cpu_detail`).

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <random>
#include <tuple>
#include <string>
#include <vector>

#include <gpass/exec/eigen_cpu/kernels/tf_common.hpp>
#include <gpass/exec/tf_random_rules.hpp>

namespace gpass::exec::cpu_detail::tf_detail {

namespace random_detail {

using u32 = std::uint32_t;
using u64 = std::uint64_t;

using tf_random_rules::dist;
using tf_random_rules::philox;

inline float to_float(u32 x) {
  const u32 v = (127u << 23) | (x & 0x7fffffu);
  float f;
  std::memcpy(&f, &v, 4);
  return f - 1.0f;
}
inline double to_double(u32 x0, u32 x1) {
  const u64 v = (u64{1023} << 52) | (static_cast<u64>(x0 & 0xfffffu) << 32) | x1;
  double d;
  std::memcpy(&d, &v, 8);
  return d - 1.0;
}
inline Eigen::half to_half(u32 x) {
  const std::uint16_t v = static_cast<std::uint16_t>((15u << 10) | (x & 0x3ffu));
  return Eigen::numext::bit_cast<Eigen::half>(v) - Eigen::half(1.0f);
}
inline Eigen::bfloat16 to_bfloat16(u32 x) {
  const std::uint16_t v = static_cast<std::uint16_t>((127u << 7) | (x & 0x7fu));
  return Eigen::bfloat16(static_cast<float>(Eigen::numext::bit_cast<Eigen::bfloat16>(v)) - 1.0f);
}
inline void box_muller(u32 x0, u32 x1, float& f0, float& f1) {
  float u1 = to_float(x0);
  if (u1 < 1.0e-7f) u1 = 1.0e-7f;
  const float v1 = static_cast<float>(2.0f * M_PI * to_float(x1));  // (in double, as TensorFlow writes it)
  const float u2 = std::sqrt(-2.0f * std::log(u1));
  f0 = std::sin(v1) * u2;
  f1 = std::cos(v1) * u2;
}
inline void box_muller(u32 x0, u32 x1, u32 x2, u32 x3, double& d0, double& d1) {
  double u1 = to_double(x0, x1);
  if (u1 < 1.0e-7) u1 = 1.0e-7;
  const double v1 = 2 * M_PI * to_double(x2, x3);
  const double u2 = std::sqrt(-2.0 * std::log(u1));
  d0 = std::sin(v1) * u2;
  d1 = std::cos(v1) * u2;
}

/// Fills `out` (its dtype and size) from generator `g` with distribution `d` (`lo`, `hi`:
/// the bounds of uniform_int) in TensorFlow's order.
inline void fill(gpass::tensor& out, philox g, dist d, i64 lo, i64 hi, const kernel_node& n) {
  const i64 count = out.size();
  const dtype t = out.element_type();
  auto blocks = [&](i64 per_block, auto&& emit) {  // emit(words, first index, how many)
    for (i64 i = 0; i < count; i += per_block) emit(g(), i, std::min(per_block, count - i));
  };
  switch (d) {
    case dist::uniform:
      if (t == dtype::f32) blocks(4, [&](auto w, i64 i, i64 k) { for (i64 j = 0; j < k; ++j) out.data<float>()[i + j] = to_float(w[j]); });
      else if (t == dtype::f64) blocks(2, [&](auto w, i64 i, i64 k) { for (i64 j = 0; j < k; ++j) out.data<double>()[i + j] = to_double(w[2 * j], w[2 * j + 1]); });
      else if (t == dtype::f16) blocks(4, [&](auto w, i64 i, i64 k) { for (i64 j = 0; j < k; ++j) out.data<Eigen::half>()[i + j] = to_half(w[j]); });
      else if (t == dtype::bf16) blocks(4, [&](auto w, i64 i, i64 k) { for (i64 j = 0; j < k; ++j) out.data<Eigen::bfloat16>()[i + j] = to_bfloat16(w[j]); });
      else n.fail("dtype " + std::string(to_string(t)) + " is not a float type");
      return;
    case dist::normal:
      if (t == dtype::f64) {
        blocks(2, [&](auto w, i64 i, i64 k) {
          double v[2];
          box_muller(w[0], w[1], w[2], w[3], v[0], v[1]);
          for (i64 j = 0; j < k; ++j) out.data<double>()[i + j] = v[j];
        });
      } else {
        blocks(4, [&](auto w, i64 i, i64 k) {
          float v[4];
          box_muller(w[0], w[1], v[0], v[1]);
          box_muller(w[2], w[3], v[2], v[3]);
          for (i64 j = 0; j < k; ++j) {
            if (t == dtype::f32) out.data<float>()[i + j] = v[j];
            else if (t == dtype::f16) out.data<Eigen::half>()[i + j] = Eigen::half(v[j]);
            else if (t == dtype::bf16) out.data<Eigen::bfloat16>()[i + j] = Eigen::bfloat16(v[j]);
            else n.fail("dtype " + std::string(to_string(t)) + " is not a float type");
          }
        });
      }
      return;
    case dist::truncated: {
      // groups of R outputs; group q draws single words from the stream that starts
      // q * R * 256 / 4 blocks after g (TensorFlow's reserved samples per output)
      const bool dbl = t == dtype::f64;
      const i64 group = dbl ? 2 : 4;
      for (i64 q = 0; q * group < count; ++q) {
        philox s = g;
        s.skip(static_cast<u64>(q) * static_cast<u64>(group) * 256 / 4);
        std::array<u32, 4> words{};
        int used = 4;
        auto word = [&]() {
          if (used == 4) words = s(), used = 0;
          return words[static_cast<std::size_t>(used++)];
        };
        for (i64 got = 0; got < group && q * group + got < count;) {
          if (dbl) {
            const u32 a = word(), b = word(), c = word(), e = word();
            double v[2];
            box_muller(a, b, c, e, v[0], v[1]);
            for (int j = 0; j < 2 && got < group && q * group + got < count; ++j)
              if (std::abs(v[j]) < 2.0) out.data<double>()[q * group + got++] = v[j];
          } else {
            const u32 a = word(), b = word();
            float v[2];
            box_muller(a, b, v[0], v[1]);
            for (int j = 0; j < 2 && got < group && q * group + got < count; ++j)
              if (std::abs(v[j]) < 2.0f) {
                const i64 at = q * group + got++;
                if (t == dtype::f32) out.data<float>()[at] = v[j];
                else if (t == dtype::f16) out.data<Eigen::half>()[at] = Eigen::half(v[j]);
                else if (t == dtype::bf16) out.data<Eigen::bfloat16>()[at] = Eigen::bfloat16(v[j]);
                else n.fail("dtype " + std::string(to_string(t)) + " is not a float type");
              }
          }
        }
      }
      return;
    }
    case dist::uniform_int:
    case dist::full_int: {
      const bool full = d == dist::full_int;
      if (count == 0) return;  // (TensorFlow checks the bounds only for a non-empty output)
      if (!full) tf_random_rules::check_int_bounds(t, lo, hi, n);
      if (t == dtype::int32 || t == dtype::uint32) {
        // hi - lo in [1, 2^32): the bounds fit 32 bits and lo < hi
        const u32 range = static_cast<u32>(static_cast<u64>(hi) - static_cast<u64>(lo));
        blocks(4, [&](auto w, i64 i, i64 k) {
          for (i64 j = 0; j < k; ++j) {
            const u32 v = full ? w[j] : static_cast<u32>(static_cast<u32>(lo) + w[j] % range);
            if (t == dtype::int32) out.data<std::int32_t>()[i + j] = static_cast<std::int32_t>(v);
            else out.data<u32>()[i + j] = v;
          }
        });
      } else if (t == dtype::int64 || t == dtype::uint64) {
        const u64 range = static_cast<u64>(hi) - static_cast<u64>(lo);
        blocks(2, [&](auto w, i64 i, i64 k) {
          for (i64 j = 0; j < k; ++j) {
            const u64 bits = w[2 * j] | (static_cast<u64>(w[2 * j + 1]) << 32);
            const u64 v = full ? bits : static_cast<u64>(lo) + bits % range;
            if (t == dtype::int64) out.data<std::int64_t>()[i + j] = static_cast<std::int64_t>(v);
            else out.data<u64>()[i + j] = v;
          }
        });
      } else {
        n.fail("dtype " + std::string(to_string(t)) + " is not int32, int64, uint32 or uint64");
      }
      return;
    }
  }
}

/// The two seeds of a `[2]` int32/int64 seed input.
inline std::pair<u64, u64> seed_pair(const gpass::tensor& s, const kernel_node& n) {
  tf_random_rules::check_seed(s.sizes(), n);
  const auto v = int_values(s, n, "seed");
  return {static_cast<u64>(v[0]), static_cast<u64>(v[1])};
}

/// The output sizes of a random op from its shape input.
inline std::vector<i64> output_sizes(const gpass::tensor& shape_in, const kernel_node& n) {
  return tf_random_rules::output_sizes(vector_ints(shape_in, n, "shape"), n);
}

/// The generator of a V2 op's (key, counter, alg) inputs at `at`.
inline philox key_counter_inputs(context& ctx, std::size_t at) {
  const gpass::tensor& key = ctx.input(at);
  const gpass::tensor& counter = ctx.input(at + 1);
  const i64 alg = scalar_int(ctx.input(at + 2), ctx.node(), "alg");
  tf_random_rules::check_key_counter(alg, key.element_type(), key.size(), counter.element_type(), counter.size(), ctx.node());
  return philox::from_key_counter(key.data<u64>()[0], counter.data<u64>()[0], counter.data<u64>()[1]);
}

/// The bounds of a uniform int op: inputs `at` and `at + 1` (scalars).
inline std::pair<i64, i64> bounds(context& ctx, std::size_t at) {
  return {scalar_int(ctx.input(at), ctx.node(), "minval"), scalar_int(ctx.input(at + 1), ctx.node(), "maxval")};
}

}  // namespace random_detail

inline void register_tf_random(registry& r) {
  using namespace random_detail;
  for (const auto& op : tf_random_rules::stateless_ops)
    r.add({.domain = domain, .op = op.name, .type_input = -1, .make = [op](const kernel_node& n) -> fn {
             const dtype t = type_attr(n, "dtype", tf_random_rules::default_type(op.d));
             return [op, t](context& ctx) {
               const auto sizes = output_sizes(ctx.input(0), ctx.node());
               philox g;
               if (op.v2) {
                 g = key_counter_inputs(ctx, 1);
               } else {
                 const auto [s0, s1] = seed_pair(ctx.input(1), ctx.node());
                 g = philox::from_stateless_seed(s0, s1);
               }
               i64 lo = 0, hi = 0;
               if (op.d == dist::uniform_int) std::tie(lo, hi) = bounds(ctx, op.v2 ? 4 : 2);
               gpass::tensor& out = ctx.allocate_output(0, t, sizes);
               fill(out, g, op.d, lo, hi, ctx.node());
             };
           }});
  auto key_counter = [](bool with_alg) {
    return [with_alg](const kernel_node&) -> fn {
      return [with_alg](context& ctx) {
        const auto [s0, s1] = seed_pair(ctx.input(0), ctx.node());
        const philox g = philox::from_stateless_seed(s0, s1);
        gpass::tensor& key = ctx.allocate_output(0, dtype::uint64, {1});
        key.data<u64>()[0] = g.key_word();
        gpass::tensor& counter = ctx.allocate_output(1, dtype::uint64, {2});
        const auto words = g.counter_words();
        counter.data<u64>()[0] = words[0];
        counter.data<u64>()[1] = words[1];
        if (with_alg) ctx.set_output(2, gpass::tensor::scalar<std::int32_t>(1));
      };
    };
  };
  r.add({.domain = domain, .op = "StatelessRandomGetKeyCounter", .type_input = -1, .make = key_counter(false)});
  r.add({.domain = domain, .op = "StatelessRandomGetKeyCounterAlg", .type_input = -1, .make = key_counter(true)});
  r.add({.domain = domain, .op = "StatelessRandomGetAlg", .type_input = -1, .make = [](const kernel_node&) -> fn {
           return [](context& ctx) { ctx.set_output(0, gpass::tensor::scalar<std::int32_t>(1)); };
         }});

  // stateful: the generator lives in the kernel (`stateful_generator`)
  for (const auto& op : tf_random_rules::stateful_ops)
    r.add({.domain = domain, .op = op.name, .type_input = -1, .make = [op](const kernel_node& n) -> fn {
             const dtype t = type_attr(n, op.type, tf_random_rules::default_type(op.d));
             auto st = std::make_shared<tf_random_rules::stateful_generator>(n);
             return [op, t, st](context& ctx) {
               const auto sizes = output_sizes(ctx.input(0), ctx.node());
               gpass::tensor& out = ctx.allocate_output(0, t, sizes);
               const philox g = st->take(static_cast<u64>(out.size()));
               i64 lo = 0, hi = 0;
               if (op.d == dist::uniform_int) std::tie(lo, hi) = bounds(ctx, 1);
               fill(out, g, op.d, lo, hi, ctx.node());
             };
           }});
}

}  // namespace gpass::exec::cpu_detail::tf_detail
