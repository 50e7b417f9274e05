// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file codegen.hpp
/// CUDA C++ generation for the CUDA policy's NVRTC kernels: element types and the prelude
/// every generated library starts with (`cuda_prelude`), and the element-wise generator
/// (`elementwise_source`): one kernel body over any number of inputs of their own types,
/// with a contiguous entry (`ew_flat`) and a strided, broadcasting one (`ew_strided`), used
/// for single ops and for fused element-wise groups alike.
///
/// Everything here is plain string work and runs without a GPU; `nvrtc_compile` turns the
/// result into PTX or CUBIN.

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include <gpass/core/dtype.hpp>
#include <gpass/core/error.hpp>

namespace gpass::exec::cuda_codegen {

/// Most dimensions a strided generated kernel handles (after merging dimensions).
inline constexpr int max_rank = 8;

/// Whether generated kernels handle element type `t`.
constexpr bool supported(dtype t) noexcept {
  switch (t) {
    case dtype::bool_: case dtype::int8: case dtype::int16: case dtype::int32: case dtype::int64:
    case dtype::uint8: case dtype::uint16: case dtype::uint32: case dtype::uint64:
    case dtype::f16: case dtype::bf16: case dtype::f32: case dtype::f64:
      return true;
    default:
      return false;
  }
}
constexpr bool is_float(dtype t) noexcept { return t == dtype::f16 || t == dtype::bf16 || t == dtype::f32 || t == dtype::f64; }
constexpr bool is_signed_int(dtype t) noexcept {
  return t == dtype::int8 || t == dtype::int16 || t == dtype::int32 || t == dtype::int64;
}
constexpr bool is_unsigned_int(dtype t) noexcept {
  return t == dtype::uint8 || t == dtype::uint16 || t == dtype::uint32 || t == dtype::uint64;
}
constexpr bool is_int(dtype t) noexcept { return is_signed_int(t) || is_unsigned_int(t); }

/// The storage type of `t` in generated code (`g_half` / `g_bf16` wrap the 16 bits).
inline std::string_view storage_type(dtype t) {
  switch (t) {
    case dtype::bool_: return "bool";
    case dtype::int8: return "signed char";
    case dtype::int16: return "short";
    case dtype::int32: return "int";
    case dtype::int64: return "long long";
    case dtype::uint8: return "unsigned char";
    case dtype::uint16: return "unsigned short";
    case dtype::uint32: return "unsigned int";
    case dtype::uint64: return "unsigned long long";
    case dtype::f16: return "g_half";
    case dtype::bf16: return "g_bf16";
    case dtype::f32: return "float";
    case dtype::f64: return "double";
    case dtype::complex64: return "g_c64";
    case dtype::complex128: return "g_c128";
    default: break;
  }
  throw error("cuda codegen: no device type for element type " + std::string(to_string(t)));
}
/// The type arithmetic on `t` is done in: `float` for the 16-bit floats, the storage type
/// otherwise.
inline std::string_view compute_type(dtype t) {
  if (t == dtype::f16 || t == dtype::bf16) return "float";
  return storage_type(t);
}

/// The definitions every generated library starts with: the 16-bit float wrappers and their
/// conversions (through PTX `cvt`, so no CUDA header is needed), `g_load` / `g_store`
/// (storage to compute type and back), and math overloads for float and double (`g_exp`,
/// `g_erf`, ...) so that one expression serves both.
inline const std::string& cuda_prelude() {
  static const std::string s = R"(// gpass generated
struct g_half { unsigned short bits; };
struct g_bf16 { unsigned short bits; };
struct g_c64 { float x, y; };
struct g_c128 { double x, y; };
__device__ __forceinline__ float g_to_float(g_half h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h.bits)); return f; }
__device__ __forceinline__ float g_to_float(g_bf16 h) { return __uint_as_float(((unsigned int)h.bits) << 16); }
__device__ __forceinline__ g_half g_to_half(float f) { g_half h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h.bits) : "f"(f)); return h; }
__device__ __forceinline__ g_bf16 g_to_bf16(float f) {
  g_bf16 h; unsigned int u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) h.bits = (unsigned short)((u >> 16) | 0x40u);
  else h.bits = (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  return h;
}
template <class T> __device__ __forceinline__ T g_load(const T* p, long long i) { return p[i]; }
__device__ __forceinline__ float g_load(const g_half* p, long long i) { return g_to_float(p[i]); }
__device__ __forceinline__ float g_load(const g_bf16* p, long long i) { return g_to_float(p[i]); }
template <class T, class V> __device__ __forceinline__ void g_store(T* p, long long i, V v) { p[i] = (T)v; }
template <class V> __device__ __forceinline__ void g_store(g_half* p, long long i, V v) { p[i] = g_to_half((float)v); }
template <class V> __device__ __forceinline__ void g_store(g_bf16* p, long long i, V v) { p[i] = g_to_bf16((float)v); }
#define G_MATH1(name, f32, f64) \
  __device__ __forceinline__ float name(float x) { return f32(x); } \
  __device__ __forceinline__ double name(double x) { return f64(x); }
G_MATH1(g_exp, expf, exp) G_MATH1(g_log, logf, log) G_MATH1(g_sqrt, sqrtf, sqrt) G_MATH1(g_erf, erff, erf)
G_MATH1(g_sin, sinf, sin) G_MATH1(g_cos, cosf, cos) G_MATH1(g_tan, tanf, tan) G_MATH1(g_asin, asinf, asin)
G_MATH1(g_acos, acosf, acos) G_MATH1(g_atan, atanf, atan) G_MATH1(g_sinh, sinhf, sinh) G_MATH1(g_cosh, coshf, cosh)
G_MATH1(g_tanh, tanhf, tanh) G_MATH1(g_asinh, asinhf, asinh) G_MATH1(g_acosh, acoshf, acosh) G_MATH1(g_atanh, atanhf, atanh)
G_MATH1(g_floor, floorf, floor) G_MATH1(g_ceil, ceilf, ceil) G_MATH1(g_rint, rintf, rint) G_MATH1(g_fabs, fabsf, fabs)
G_MATH1(g_log1p, log1pf, log1p) G_MATH1(g_expm1, expm1f, expm1) G_MATH1(g_trunc, truncf, trunc)
#define G_MATH2(name, f32, f64) \
  __device__ __forceinline__ float name(float x, float y) { return f32(x, y); } \
  __device__ __forceinline__ double name(double x, double y) { return f64(x, y); }
G_MATH2(g_pow, powf, pow) G_MATH2(g_fmod, fmodf, fmod) G_MATH2(g_atan2, atan2f, atan2)
template <class T> __device__ __forceinline__ bool g_isnan(T x) { return x != x; }
template <class T> __device__ __forceinline__ T g_max(T a, T b) { return g_isnan(a) || a > b ? a : b; }
template <class T> __device__ __forceinline__ T g_min(T a, T b) { return g_isnan(a) || a < b ? a : b; }
)";
  return s;
}

/// One element-wise kernel: inputs of their own element types, one output, and the body that
/// computes it. In `body`, input `k` is `x<k>` (in its compute type: `float` for f16/bf16),
/// the result is assigned to `r` (of the output's compute type `R`), and `C<k>` names the
/// compute type of input `k`.
struct elementwise_spec {
  std::vector<dtype> inputs;
  dtype output = dtype::undefined;
  std::string body;  ///< e.g. "r = x0 + x1;"
};

/// CUDA C++ for `spec`: two entry points,
/// - `ew_flat(R* y, const T0* x0, ..., long long n, unsigned long long scalar_mask)`: every
///   input has the output's n elements, or one (bit k of `scalar_mask` set);
/// - `ew_strided(R* y, const T0* x0, ..., g_strided a)`: broadcasting by strides, where
///   `g_strided` is `long long` words: n, rank, sizes[max_rank], then max_rank strides per
///   input (in elements; 0 for a broadcast dimension).
inline std::string elementwise_source(const elementwise_spec& spec) {
  const std::size_t k = spec.inputs.size();
  if (k > 16) throw error("cuda codegen: an element-wise kernel of more than 16 inputs");
  std::string s = cuda_prelude();
  std::string params = std::string(storage_type(spec.output)) + "* __restrict__ y";
  for (std::size_t i = 0; i < k; ++i)
    params += ", const " + std::string(storage_type(spec.inputs[i])) + "* __restrict__ p" + std::to_string(i);
  std::string types = "typedef " + std::string(compute_type(spec.output)) + " R;\n";
  for (std::size_t i = 0; i < k; ++i)
    types += "typedef " + std::string(compute_type(spec.inputs[i])) + " C" + std::to_string(i) + ";\n";
  s += types;
  s += "__device__ __forceinline__ R g_body(";
  for (std::size_t i = 0; i < k; ++i) s += (i ? ", C" : "C") + std::to_string(i) + " x" + std::to_string(i);
  s += ") {\n  R r;\n  " + spec.body + "\n  return r;\n}\n";
  auto call = [&](auto index_of) {
    std::string c = "g_body(";
    for (std::size_t i = 0; i < k; ++i) c += (i ? ", " : "") + std::string("g_load(p") + std::to_string(i) + ", " + index_of(i) + ")";
    return c + ")";
  };
  s += "extern \"C\" __global__ void ew_flat(" + params + ", long long n, unsigned long long scalar_mask) {\n";
  s += "  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)\n";
  s += "    g_store(y, i, " + call([](std::size_t i) { return "((scalar_mask >> " + std::to_string(i) + ") & 1ull ? 0ll : i)"; }) + ");\n}\n";
  const std::string nin = std::to_string(k > 0 ? k : 1);
  s += "struct g_strided { long long n; long long rank; long long sizes[" + std::to_string(max_rank) + "]; long long strides[" + nin +
       "][" + std::to_string(max_rank) + "]; };\n";
  s += "extern \"C\" __global__ void ew_strided(" + params + ", g_strided a) {\n";
  s += "  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < a.n; i += (long long)gridDim.x * blockDim.x) {\n";
  s += "    long long rest = i;\n";
  for (std::size_t i = 0; i < k; ++i) s += "    long long o" + std::to_string(i) + " = 0;\n";
  s += "    for (int d = a.rank - 1; d >= 0; --d) {\n      const long long c = rest % a.sizes[d]; rest /= a.sizes[d];\n";
  for (std::size_t i = 0; i < k; ++i) s += "      o" + std::to_string(i) + " += c * a.strides[" + std::to_string(i) + "][d];\n";
  s += "    }\n    g_store(y, i, " + call([](std::size_t i) { return "o" + std::to_string(i); }) + ");\n  }\n}\n";
  return s;
}

/// A float or integer constant as a literal of compute type `type` ("float", "double", ...).
inline std::string literal(double v, std::string_view type) {
  if (v != v) return "(" + std::string(type) + ")(0.0/0.0)";
  if (v == 1.0 / 0.0) return "(" + std::string(type) + ")(1.0/0.0)";
  if (v == -1.0 / 0.0) return "(" + std::string(type) + ")(-1.0/0.0)";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return "((" + std::string(type) + ")" + buf + ")";
}

}  // namespace gpass::exec::cuda_codegen
