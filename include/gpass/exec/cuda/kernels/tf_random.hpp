// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file tf_random.hpp
/// CUDA kernels of TensorFlow's random ops (domain "tf"), TensorFlow's Philox streams as the
/// CPU kernels draw them (tf_random_rules.hpp seeds the generator on the host; a generated
/// kernel runs Philox-4x32-10 on the device, a thread per block of four words):
///
/// - stateless: StatelessRandomUniform, StatelessRandomNormal, StatelessTruncatedNormal,
///   StatelessRandomUniformInt, StatelessRandomUniformFullInt and their V2 forms (key,
///   counter, alg), StatelessRandomGetKeyCounter, StatelessRandomGetKeyCounterAlg,
///   StatelessRandomGetAlg (computed on the host, written to the device);
/// - stateful: RandomUniform, RandomStandardNormal, TruncatedNormal, RandomUniformInt (the
///   generator lives in the kernel and advances 256 blocks per output element per run).
///
/// Uniform floats and integers are the CPU's bits (integer arithmetic and exact float
/// subtractions); normals use the device's logf / sinf / cosf (within a few ulp of the host's
/// libm, as TensorFlow's GPU kernels differ from its CPU ones), and a truncated normal's
/// rejection at |x| = 2 follows them.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <gpass/exec/cuda/codegen.hpp>
#include <gpass/exec/cuda/kernels/common.hpp>
#include <gpass/exec/cuda/kernels/tf.hpp>
#include <gpass/exec/kernel.hpp>
#include <gpass/exec/tf_random_rules.hpp>
#include <gpass/exec/tf_rules.hpp>

namespace gpass::exec {

namespace cuda_tf {

using tf_random_rules::dist;
using tf_random_rules::philox;

/// The generator a random kernel starts from (host mirror of the device `g_rng`).
struct g_rng {
  unsigned k0 = 0, k1 = 0, c0 = 0, c1 = 0, c2 = 0, c3 = 0;
};

inline g_rng device_rng(const philox& g) { return {g.key[0], g.key[1], g.ctr[0], g.ctr[1], g.ctr[2], g.ctr[3]}; }

/// `tf_random(y, n, g, d, lo, range)` for outputs of `t`: `d` the distribution (dist's order),
/// `lo` / `range` a uniform int's bounds. A thread per unit: a Philox block's outputs (4, or 2
/// of 64-bit types), or a truncated normal's group (4, f64 2), whose stream starts 64 blocks
/// per output after the generator's.
inline std::string random_source(dtype t) {
  const bool wide = t == dtype::f64 || t == dtype::int64 || t == dtype::uint64;
  std::string r = cuda_codegen::cuda_prelude();
  r += "typedef " + std::string(cuda_codegen::storage_type(t)) + " O;\n";
  r += "#define G_WIDE " + std::string(wide ? "1" : "0") + "\n";
  r += "#define G_F64 " + std::string(t == dtype::f64 ? "1" : "0") + "\n";
  r += "#define G_HALF " + std::string(t == dtype::f16 ? "1" : t == dtype::bf16 ? "2" : "0") + "\n";
  r += "#define G_INT " + std::string(cuda_codegen::is_float(t) ? "0" : "1") + "\n";
  r += R"(struct g_rng { unsigned k0, k1, c0, c1, c2, c3; };
// Philox-4x32-10 of counter c under key (k0, k1), in place
__device__ __forceinline__ void g_philox(unsigned (&c)[4], unsigned k0, unsigned k1) {
  for (int round = 0; round < 10; ++round) {
    const unsigned long long p0 = 0xD2511F53ull * c[0], p1 = 0xCD9E8D57ull * c[2];
    const unsigned n0 = (unsigned)(p1 >> 32) ^ c[1] ^ k0, n1 = (unsigned)p1, n2 = (unsigned)(p0 >> 32) ^ c[3] ^ k1, n3 = (unsigned)p0;
    c[0] = n0; c[1] = n1; c[2] = n2; c[3] = n3;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
}
// the four words of block b after the generator's counter (a 128-bit addition)
__device__ __forceinline__ void g_block(const g_rng& g, unsigned long long b, unsigned (&w)[4]) {
  const unsigned long long lo0 = ((unsigned long long)g.c1 << 32) | g.c0, lo = lo0 + b;
  unsigned c2 = g.c2, c3 = g.c3;
  if (lo < lo0 && ++c2 == 0) ++c3;
  w[0] = (unsigned)lo; w[1] = (unsigned)(lo >> 32); w[2] = c2; w[3] = c3;
  g_philox(w, g.k0, g.k1);
}
// [0, 1) from the low mantissa bits of one word (float: 23, half: 10, bfloat16: 7), or two (double: 52)
__device__ __forceinline__ float g_unit(unsigned x, int bits) {
  const unsigned m = bits == 23 ? (x & 0x7fffffu) : bits == 10 ? (x & 0x3ffu) << 13 : (x & 0x7fu) << 16;
  return __int_as_float((int)((127u << 23) | m)) - 1.0f;
}
__device__ __forceinline__ double g_unit2(unsigned x0, unsigned x1) {
  return __longlong_as_double((long long)((1023ull << 52) | ((unsigned long long)(x0 & 0xfffffu) << 32) | x1)) - 1.0;
}
// Box-Muller, as TensorFlow: f32 from two words, f64 from four
__device__ __forceinline__ void g_bm(unsigned x0, unsigned x1, float& f0, float& f1) {
  float u1 = g_unit(x0, 23);
  if (u1 < 1.0e-7f) u1 = 1.0e-7f;
  const float v1 = (float)(2.0 * 3.14159265358979323846 * (double)g_unit(x1, 23));
  const float u2 = sqrtf(-2.0f * logf(u1));
  f0 = sinf(v1) * u2;
  f1 = cosf(v1) * u2;
}
__device__ __forceinline__ void g_bm2(unsigned x0, unsigned x1, unsigned x2, unsigned x3, double& d0, double& d1) {
  double u1 = g_unit2(x0, x1);
  if (u1 < 1.0e-7) u1 = 1.0e-7;
  const double v1 = 2 * 3.14159265358979323846 * g_unit2(x2, x3);
  const double u2 = sqrt(-2.0 * log(u1));
  d0 = sin(v1) * u2;
  d1 = cos(v1) * u2;
}
extern "C" __global__ void tf_random(O* __restrict__ y, long long n, g_rng g, int d, long long lo, unsigned long long range) {
  const int per = G_WIDE ? 2 : 4;
  const long long units = (n + per - 1) / per;
  for (long long u = blockIdx.x * (long long)blockDim.x + threadIdx.x; u < units; u += (long long)gridDim.x * blockDim.x) {
    const long long first = u * per;
    const int k = n - first < per ? (int)(n - first) : per;
    if (d == 2) {  // truncated normal: single words from blocks u * per * 64, ...; |x| < 2 accepted in order
      unsigned long long b = (unsigned long long)u * per * 64;
      unsigned w[4];
      int used = 4, got = 0;
      while (got < k) {
        unsigned x[4];
        for (int j = 0; j < (G_F64 ? 4 : 2); ++j) {
          if (used == 4) { g_block(g, b++, w); used = 0; }
          x[j] = w[used++];
        }
#if G_F64
        double v[2];
        g_bm2(x[0], x[1], x[2], x[3], v[0], v[1]);
#else
        float v[2];
        g_bm(x[0], x[1], v[0], v[1]);
#endif
        for (int j = 0; j < 2 && got < k; ++j)
          if (fabs(v[j]) < 2.0) g_store(y, first + got++, v[j]);
      }
      continue;
    }
    unsigned w[4];
    g_block(g, (unsigned long long)u, w);
#if G_INT
    for (int j = 0; j < k; ++j) {
#if G_WIDE
      const unsigned long long bits = w[2 * j] | ((unsigned long long)w[2 * j + 1] << 32);
      y[first + j] = (O)(d == 4 ? bits : (unsigned long long)lo + bits % range);
#else
      y[first + j] = (O)(d == 4 ? w[j] : (unsigned)((unsigned)lo + w[j] % (unsigned)range));
#endif
    }
#elif G_F64
    if (d == 0) {
      for (int j = 0; j < k; ++j) y[first + j] = g_unit2(w[2 * j], w[2 * j + 1]);
    } else {
      double v[2];
      g_bm2(w[0], w[1], w[2], w[3], v[0], v[1]);
      for (int j = 0; j < k; ++j) y[first + j] = v[j];
    }
#else
    if (d == 0) {
      for (int j = 0; j < k; ++j) g_store(y, first + j, g_unit(w[j], G_HALF == 1 ? 10 : G_HALF == 2 ? 7 : 23));
    } else {
      float v[4];
      g_bm(w[0], w[1], v[0], v[1]);
      g_bm(w[2], w[3], v[2], v[3]);
      for (int j = 0; j < k; ++j) g_store(y, first + j, v[j]);
    }
#endif
  }
}
)";
  return r;
}

/// `y` drawn from `g` with distribution `d` (`lo`, `hi`: a uniform int's bounds, checked for a
/// non-empty output as the CPU does).
inline void random_into(context& ctx, cuda_detail::lazy_library& lib, cuda_tensor& y, const philox& g, dist d, i64 lo, i64 hi) {
  if (y.size() == 0) return;
  const dtype t = y.element_type();
  if (d == dist::uniform_int) tf_random_rules::check_int_bounds(t, lo, hi, ctx.node());
  auto& pol = ctx.policy();
  const auto& k = lib.get(pol, std::string(to_string(t)), {"tf_random"}, [&] { return random_source(t); });
  const i64 per = t == dtype::f64 || t == dtype::int64 || t == dtype::uint64 ? 2 : 4;
  void* yp = y.data();
  long long n = y.size(), lo_arg = lo;
  g_rng gr = device_rng(g);
  int di = static_cast<int>(d);
  unsigned long long range = static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo);
  void* args[] = {&yp, &n, &gr, &di, &lo_arg, &range};
  pol.launch(k.kernels[0], pol.blocks_for((n + per - 1) / per), 256, args, ctx.stream());
}

/// The output types a random op of distribution `d` serves on the GPU (the CPU's).
inline std::vector<dtype> random_types(dist d) {
  if (d == dist::uniform_int || d == dist::full_int) return {dtype::int32, dtype::int64, dtype::uint32, dtype::uint64};
  return {dtype::f32, dtype::f64, dtype::f16, dtype::bf16};
}

/// Whether a node's type attribute `attr` (default `fallback`) is one of `random_types(d)`.
inline bool random_type_attr_ok(const kernel_query& q, const char* attr, dtype fallback, dist d) {
  dtype t = fallback;
  if (q.attrs) {
    auto it = q.attrs->find(attr);
    if (it != q.attrs->end()) {
      if (!it->second.is<dtype>()) return false;
      t = it->second.as<dtype>();
    }
  }
  const auto ok = random_types(d);
  return std::find(ok.begin(), ok.end(), t) != ok.end();
}

/// The output sizes from a random op's `shape` input.
inline std::vector<i64> random_sizes(context& ctx) { return tf_random_rules::output_sizes(vector_input(ctx, 0, "shape"), ctx.node()); }

/// The generator of a stateless op: its `[2]` seed (input `at`), or (V2) key, counter, alg.
inline philox stateless_generator(context& ctx, std::size_t at, bool v2) {
  if (!v2) {
    tf_random_rules::check_seed(ctx.input(at).sizes(), ctx.node());
    const auto s = cuda_detail::host_ints(ctx, at);
    return philox::from_stateless_seed(static_cast<std::uint64_t>(s[0]), static_cast<std::uint64_t>(s[1]));
  }
  const gpass::tensor key = cuda_detail::host_value(ctx, at);
  const gpass::tensor counter = cuda_detail::host_value(ctx, at + 1);
  const i64 alg = scalar_input(ctx, at + 2, "alg");
  tf_random_rules::check_key_counter(alg, key.element_type(), key.size(), counter.element_type(), counter.size(), ctx.node());
  return philox::from_key_counter(key.data<std::uint64_t>()[0], counter.data<std::uint64_t>()[0], counter.data<std::uint64_t>()[1]);
}

}  // namespace cuda_tf

/// Every source tf_random.hpp generates (name, CUDA C++), for compile checks.
inline std::vector<std::pair<std::string, std::string>> tf_random_generated_sources() {
  std::vector<std::pair<std::string, std::string>> r;
  for (dtype t : {dtype::f32, dtype::f64, dtype::f16, dtype::bf16, dtype::int32, dtype::int64, dtype::uint32, dtype::uint64})
    r.emplace_back("tf::random_" + std::string(to_string(t)), cuda_tf::random_source(t));
  return r;
}

/// Registers tf_random.hpp's kernels.
inline void register_cuda_tf_random(kernel_registry<cuda>& r) {
  using namespace cuda_tf;
  for (const auto& op : tf_random_rules::stateless_ops) {
    const dtype fallback = tf_random_rules::default_type(op.d);
    r.add({.domain = "tf", .op = op.name, .dtypes = random_types(op.d), .type_input = -1,
           .make = [op, fallback](const kernel_node& n) -> fn {
             const dtype t = type_attr(n, "dtype", fallback);
             auto lib = std::make_shared<cuda_detail::lazy_library>();
             return [op, t, lib](context& ctx) {
               const auto sizes = random_sizes(ctx);
               const philox g = stateless_generator(ctx, 1, op.v2);
               i64 lo = 0, hi = 0;
               if (op.d == dist::uniform_int) {
                 const std::size_t at = op.v2 ? 4 : 2;
                 lo = scalar_input(ctx, at, "minval");
                 hi = scalar_input(ctx, at + 1, "maxval");
               }
               random_into(ctx, *lib, ctx.allocate_output(0, t, sizes), g, op.d, lo, hi);
             };
           },
           .applies = [op, fallback](const kernel_query& q) { return random_type_attr_ok(q, "dtype", fallback, op.d); }});
  }
  auto key_counter = [](bool with_alg) {
    return [with_alg](const kernel_node&) -> fn {
      return [with_alg](context& ctx) {
        tf_random_rules::check_seed(ctx.input(0).sizes(), ctx.node());
        const auto s = cuda_detail::host_ints(ctx, 0);
        const philox g = philox::from_stateless_seed(static_cast<std::uint64_t>(s[0]), static_cast<std::uint64_t>(s[1]));
        auto& pol = ctx.policy();
        const std::uint64_t key = g.key_word();
        const auto counter = g.counter_words();
        pol.copy_to_device(ctx.allocate_output(0, dtype::uint64, {1}).data(), &key, sizeof key, ctx.stream());
        pol.copy_to_device(ctx.allocate_output(1, dtype::uint64, {2}).data(), counter.data(), sizeof counter, ctx.stream());
        if (with_alg) {
          const std::int32_t alg = 1;
          pol.copy_to_device(ctx.allocate_output(2, dtype::int32, {}).data(), &alg, sizeof alg, ctx.stream());
        }
      };
    };
  };
  r.add({.domain = "tf", .op = "StatelessRandomGetKeyCounter", .type_input = -1, .make = key_counter(false)});
  r.add({.domain = "tf", .op = "StatelessRandomGetKeyCounterAlg", .type_input = -1, .make = key_counter(true)});
  r.add({.domain = "tf", .op = "StatelessRandomGetAlg", .type_input = -1, .make = [](const kernel_node&) -> fn {
           return [](context& ctx) {
             const std::int32_t alg = 1;
             ctx.policy().copy_to_device(ctx.allocate_output(0, dtype::int32, {}).data(), &alg, sizeof alg, ctx.stream());
           };
         }});

  // stateful: the generator lives in the kernel (`stateful_generator`)
  for (const auto& op : tf_random_rules::stateful_ops) {
    const dtype fallback = tf_random_rules::default_type(op.d);
    r.add({.domain = "tf", .op = op.name, .dtypes = random_types(op.d), .type_input = -1,
           .make = [op, fallback](const kernel_node& n) -> fn {
             const dtype t = type_attr(n, op.type, fallback);
             auto st = std::make_shared<tf_random_rules::stateful_generator>(n);
             auto lib = std::make_shared<cuda_detail::lazy_library>();
             return [op, t, st, lib](context& ctx) {
               cuda_tensor& y = ctx.allocate_output(0, t, random_sizes(ctx));
               const philox g = st->take(static_cast<std::uint64_t>(y.size()));
               i64 lo = 0, hi = 0;
               if (op.d == dist::uniform_int) {
                 lo = scalar_input(ctx, 1, "minval");
                 hi = scalar_input(ctx, 2, "maxval");
               }
               random_into(ctx, *lib, y, g, op.d, lo, hi);
             };
           },
           .applies = [op, fallback](const kernel_query& q) { return random_type_attr_ok(q, op.type, fallback, op.d); }});
  }
}

}  // namespace gpass::exec
