// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file quant.hpp
/// The CUDA kernels of ONNX QuantizeLinear, DequantizeLinear (per tensor, per axis and
/// blocked: a thread per element finding its scale and zero point as the CPU kernel's
/// `quant_layout` does) and DynamicQuantizeLinear (one block reducing the range, then a
/// thread per element), generated per element type and compiled by NVRTC on first use.
///
/// Semantics follow the Eigen CPU kernels (`eigen_cpu/kernels/elementwise.hpp`): scales are
/// read as float (an f64 scale rounded to float), x converted to float, QuantizeLinear divides
/// in float (IEEE division: the library is compiled without fast math), rounds half to even
/// (`rintf`), adds the zero point, maps NaN to 0 and clamps to the integer range;
/// DequantizeLinear computes `(float(x) - float(zp)) * scale` in float and converts to the
/// output type.
///
/// What stays on the CPU (`applies` declines it, so the placer keeps the node there): 4- and
/// 2-bit integer and float8 / float4 quantized types, f8e8m0 scales.
///
/// Differences from the CPU kernels, by design of the CUDA policy (no synchronization to read
/// device values): QuantizeLinear checks that y_scale is finite and non-zero only when the
/// scale is a constant of the plan; a run-time zero scale divides by zero (saturating, or 0
/// for NaN). DynamicQuantizeLinear cannot fail on a NaN input as the CPU kernel does: the
/// range ignores NaN and a NaN element quantizes to 0.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <gpass/core/dtype.hpp>
#include <gpass/core/error.hpp>
#include <gpass/core/shape.hpp>
#include <gpass/exec/cuda/codegen.hpp>
#include <gpass/exec/cuda/kernels/common.hpp>
#include <gpass/exec/cuda/kernels/nn.hpp>
#include <gpass/exec/cuda/policy.hpp>
#include <gpass/exec/kernel.hpp>

namespace gpass::exec {

namespace cuda_quant {

using i64 = std::int64_t;
using cuda_detail::context;
using cuda_detail::fn;
using cuda_detail::lazy_library;

/// The integer types the kernels quantize to (QuantizeLinear's y, DynamicQuantizeLinear's uint8).
inline std::vector<dtype> quant_types() { return {dtype::uint8, dtype::int8, dtype::uint16, dtype::int16}; }
/// The integer types DequantizeLinear reads (int32 too, as the CPU kernel).
inline std::vector<dtype> dequant_types() { return {dtype::uint8, dtype::int8, dtype::uint16, dtype::int16, dtype::int32}; }
/// The scale types the kernels read.
inline std::vector<dtype> scale_types() { return {dtype::f32, dtype::f16, dtype::bf16, dtype::f64}; }
/// QuantizeLinear's x types (the CPU kernel's).
inline std::vector<dtype> quant_input_types() { return {dtype::f32, dtype::f16, dtype::bf16, dtype::f64, dtype::int32}; }

inline bool in(const std::vector<dtype>& v, dtype t) { return std::find(v.begin(), v.end(), t) != v.end(); }

/// Host mirror of the device `g_ql`: where element i's parameter is (the CPU's quant_layout).
struct g_ql {
  long long axis_on = 0;  ///< 0: one parameter for the tensor
  long long mid = 1, inner = 1, block = 0, pmid = 1;
};

inline const char* layout_source() {
  return R"(struct g_ql { long long axis_on, mid, inner, block, pmid; };
__device__ __forceinline__ long long g_pidx(const g_ql& q, long long i) {
  if (!q.axis_on) return 0;
  const long long m = (i / q.inner) % q.mid;
  if (q.block == 0) return m;
  return ((i / q.inner / q.mid) * q.pmid + m / q.block) * q.inner + i % q.inner;
}
)";
}

/// The layout of a parameter of sizes `ps` against x's `xs`, failing as the CPU kernel does.
inline g_ql layout_of(const context& ctx, const std::vector<i64>& xs, const std::vector<i64>& ps, i64 axis, i64 block,
                      const char* what) {
  g_ql q;
  if (block < 0) ctx.fail("block_size must not be negative, got " + std::to_string(block));
  i64 pn = 1;
  for (i64 v : ps) pn *= v;
  if (block == 0 && pn == 1 && ps.size() <= 1) return q;
  const i64 rank = static_cast<i64>(xs.size());
  if (axis < -rank || axis >= rank)
    ctx.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  const i64 a = axis < 0 ? axis + rank : axis;
  const std::size_t ua = static_cast<std::size_t>(a);
  q.axis_on = 1;
  q.block = block;
  for (std::size_t d = 0; d < xs.size(); ++d) {
    if (d == ua) q.mid = xs[d];
    else if (d > ua) q.inner *= xs[d];
  }
  if (block == 0) {
    if (ps.size() != 1) ctx.fail(std::string(what) + " must be a scalar or a 1-D tensor, got " + shape::of(ps).to_string());
    if (ps[0] != xs[ua])
      ctx.fail(std::string(what) + " has " + std::to_string(ps[0]) + " elements, axis " + std::to_string(a) + " of " +
               shape::of(xs).to_string() + " has " + std::to_string(xs[ua]));
    q.pmid = q.mid;
    return q;
  }
  const i64 nb = xs[ua] / block + (xs[ua] % block != 0);
  bool ok = ps.size() == xs.size();
  for (std::size_t d = 0; ok && d < xs.size(); ++d) ok = d == ua ? ps[d] == nb : ps[d] == xs[d];
  if (!ok)
    ctx.fail(std::string(what) + " has sizes " + shape::of(ps).to_string() + ", blocked quantization of " + shape::of(xs).to_string() +
             " along axis " + std::to_string(a) + " with block_size " + std::to_string(block) + " needs " + std::to_string(nb) +
             " on that axis and x's sizes elsewhere");
  q.pmid = ps[ua];
  return q;
}

inline std::string typedefs(dtype x, dtype s, dtype q, dtype o) {
  auto st = [](dtype t) { return std::string(cuda_codegen::storage_type(t)); };
  return cuda_codegen::cuda_prelude() + "typedef " + st(x) + " TX;\ntypedef " + st(s) + " TS;\ntypedef " + st(q) + " TQ;\ntypedef " +
         st(o) + " TO;\n" + layout_source();
}

/// The float bounds of integer type `q` as source literals.
inline std::pair<std::string, std::string> bounds(dtype q) {
  switch (q) {
    case dtype::uint8: return {"0.0f", "255.0f"};
    case dtype::int8: return {"-128.0f", "127.0f"};
    case dtype::uint16: return {"0.0f", "65535.0f"};
    case dtype::int16: return {"-32768.0f", "32767.0f"};
    default: break;
  }
  throw error("cuda quant: no quantized type " + std::string(to_string(q)));
}

/// The device function `g_sat(v, zp)`: the CPU's saturate_round to TQ.
inline std::string saturate_source(dtype q) {
  const auto [lo, hi] = bounds(q);
  return "__device__ __forceinline__ TQ g_sat(float v, float zp) {\n  float r = rintf(v) + zp;\n  if (r != r) return (TQ)0;\n"
         "  r = fminf(fmaxf(r, " + lo + "), " + hi + ");\n  return (TQ)r;\n}\n";
}

// ---- QuantizeLinear -------------------------------------------------------------------------

/// `quantize(x, scale, zp, y, n, layout)`: zp null when there is none.
inline std::string quantize_source(dtype x, dtype s, dtype q) {
  return typedefs(x, s, q, q) + saturate_source(q) +
         R"(extern "C" __global__ void quantize(const TX* __restrict__ x, const TS* __restrict__ sc, const TQ* __restrict__ zp,
    TQ* __restrict__ y, long long n, g_ql l) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    const long long c = g_pidx(l, i);
    const float s = (float)g_load(sc, c);
    const float z = zp ? (float)zp[c] : 0.0f;
    y[i] = g_sat((float)g_load(x, i) / s, z);
  }
}
)";
}

/// The quantized type a QuantizeLinear node of these attributes and types writes; undefined
/// when the kernel does not serve it.
inline dtype quantize_output(i64 out_code, dtype zp_type) {
  if (zp_type != dtype::undefined) {
    if (!in(quant_types(), zp_type)) return dtype::undefined;
    return zp_type;
  }
  if (out_code == 0) return dtype::uint8;
  const auto d = dtype_from_onnx_code(out_code);
  return d && in(quant_types(), *d) ? *d : dtype::undefined;
}

inline fn make_quantize(const kernel_node& n) {
  const i64 axis = n.attr<i64>("axis", 1);
  const i64 block = n.attr<i64>("block_size", 0);
  const i64 out_code = n.attr<i64>("output_dtype", 0);
  dtype out_type = dtype::uint8;
  if (out_code != 0) {
    const auto d = dtype_from_onnx_code(out_code);
    if (!d || !in(quant_types(), *d))
      n.fail("output_dtype " + std::to_string(out_code) + " is not a quantized type the CUDA kernel writes (uint8, int8, uint16, int16)");
    out_type = *d;
  }
  auto lib = std::make_shared<lazy_library>();
  return [=](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    const cuda_tensor& sc = ctx.input(1);
    const bool has_zp = ctx.has_input(2);
    const dtype qt = has_zp ? ctx.input(2).element_type() : out_type;
    if (has_zp && out_code != 0 && qt != out_type)
      ctx.fail("y_zero_point has element type " + std::string(to_string(qt)) + ", output_dtype says " + std::string(to_string(out_type)));
    if (!in(quant_input_types(), x.element_type())) ctx.fail("x has element type " + std::string(to_string(x.element_type())));
    if (!in(scale_types(), sc.element_type()))
      ctx.fail("y_scale has element type " + std::string(to_string(sc.element_type())) + " (the CUDA kernel reads f32, f16, bf16, f64)");
    if (!in(quant_types(), qt)) ctx.fail("y_zero_point has element type " + std::string(to_string(qt)) + " (the CUDA kernel writes uint8, int8, uint16, int16)");
    const g_ql lay = layout_of(ctx, x.sizes(), sc.sizes(), axis, block, "y_scale");
    if (has_zp && ctx.input(2).sizes() != sc.sizes() && !(ctx.input(2).size() == 1 && sc.size() == 1))
      ctx.fail("y_zero_point has sizes " + ctx.input(2).shape().to_string() + ", y_scale has " + sc.shape().to_string());
    if (const gpass::tensor* c = ctx.node().constant_input(1)) {  // checked on the host only when known there
      bool ok = true;
      visit_dtype(c->element_type(), [&]<class T>() {
        if constexpr (std::is_arithmetic_v<T> || std::is_constructible_v<float, T>) {
          const T* p = c->data<T>();
          for (i64 i = 0; ok && i < c->size(); ++i) {
            const float s = static_cast<float>(p[i]);
            ok = s != 0 && std::isfinite(s);
          }
        }
      });
      if (!ok) ctx.fail("y_scale must be finite and non-zero");
    }
    auto& y = ctx.allocate_output(0, qt, x.sizes());
    if (y.size() == 0) return;
    auto& pol = ctx.policy();
    const dtype xt = x.element_type(), st = sc.element_type();
    const auto& k = lib->get(pol, std::string(to_string(xt)) + "," + std::string(to_string(st)) + "," + std::string(to_string(qt)),
                             {"quantize"}, [&] { return quantize_source(xt, st, qt); });
    const void* xp = x.data();
    const void* sp = sc.data();
    const void* zp = has_zp ? ctx.input(2).data() : nullptr;
    void* yp = y.data();
    long long nn = y.size();
    g_ql l = lay;
    void* args[] = {&xp, &sp, &zp, &yp, &nn, &l};
    pol.launch(k.kernels[0], pol.blocks_for(nn), 256, args, ctx.stream());
  };
}

// ---- DequantizeLinear -----------------------------------------------------------------------

/// `dequantize(x, scale, zp, y, n, layout)`: zp null when there is none.
inline std::string dequantize_source(dtype q, dtype s, dtype o) {
  return typedefs(q, s, q, o) + R"(extern "C" __global__ void dequantize(const TQ* __restrict__ x, const TS* __restrict__ sc,
    const TQ* __restrict__ zp, TO* __restrict__ y, long long n, g_ql l) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    const long long c = g_pidx(l, i);
    const float z = zp ? (float)zp[c] : 0.0f;
    const float v = ((float)x[i] - z) * (float)g_load(sc, c);
    g_store(y, i, v);
  }
}
)";
}

inline fn make_dequantize(const kernel_node& n) {
  const i64 axis = n.attr<i64>("axis", 1);
  const i64 block = n.attr<i64>("block_size", 0);
  const i64 out_code = n.attr<i64>("output_dtype", 0);
  dtype out_type = dtype::undefined;  // the scale's type
  if (out_code != 0) {
    const auto d = dtype_from_onnx_code(out_code);
    if (!d || (*d != dtype::f32 && *d != dtype::f16 && *d != dtype::bf16))
      n.fail("output_dtype " + std::to_string(out_code) + " must be float, float16 or bfloat16");
    out_type = *d;
  }
  auto lib = std::make_shared<lazy_library>();
  return [=](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    const cuda_tensor& sc = ctx.input(1);
    const bool has_zp = ctx.has_input(2);
    const dtype qt = x.element_type(), st = sc.element_type();
    if (!in(dequant_types(), qt)) ctx.fail("x has element type " + std::string(to_string(qt)) + " (the CUDA kernel reads 8-, 16- and 32-bit integers)");
    const g_ql lay = layout_of(ctx, x.sizes(), sc.sizes(), axis, block, "x_scale");
    if (has_zp && ctx.input(2).element_type() != qt)
      ctx.fail("x_zero_point has element type " + std::string(to_string(ctx.input(2).element_type())) + ", x has " +
               std::string(to_string(qt)));
    if (has_zp && ctx.input(2).size() != sc.size())
      ctx.fail("x_zero_point has sizes " + ctx.input(2).shape().to_string() + ", x_scale has " + sc.shape().to_string());
    if (!in(scale_types(), st))
      ctx.fail("x_scale has element type " + std::string(to_string(st)) + " (the CUDA kernel reads f32, f16, bf16, f64)");
    const dtype ot = out_type != dtype::undefined ? out_type : st;
    auto& y = ctx.allocate_output(0, ot, x.sizes());
    if (y.size() == 0) return;
    auto& pol = ctx.policy();
    const auto& k = lib->get(pol, std::string(to_string(qt)) + "," + std::string(to_string(st)) + "," + std::string(to_string(ot)),
                             {"dequantize"}, [&] { return dequantize_source(qt, st, ot); });
    const void* xp = x.data();
    const void* sp = sc.data();
    const void* zp = has_zp ? ctx.input(2).data() : nullptr;
    void* yp = y.data();
    long long nn = y.size();
    g_ql l = lay;
    void* args[] = {&xp, &sp, &zp, &yp, &nn, &l};
    pol.launch(k.kernels[0], pol.blocks_for(nn), 256, args, ctx.stream());
  };
}

// ---- DynamicQuantizeLinear ------------------------------------------------------------------

/// `dq_range(x, n, params)`: one block; params[0] = the scale, params[1] = the zero point (as a
/// float), computed as the CPU kernel does from the range of x widened to include 0.
/// `dq_apply(x, params, y, n, ys, yzp)`: y quantized; ys / yzp (when not null) the scale and
/// the uint8 zero point.
inline std::string dynamic_quantize_source() {
  return typedefs(dtype::f32, dtype::f32, dtype::uint8, dtype::uint8) + cuda_nn::block_reduce_source() + saturate_source(dtype::uint8) +
         R"(extern "C" __global__ void dq_range(const float* __restrict__ x, long long n, float* __restrict__ params) {
  __shared__ float sh[33];
  float hi = 0.0f, nlo = 0.0f;  // max(x, 0) and -min(x, 0)
  for (long long i = threadIdx.x; i < n; i += blockDim.x) {
    const float v = x[i];
    hi = fmaxf(hi, v);
    nlo = fmaxf(nlo, -v);
  }
  hi = g_block_reduce<1>(hi, sh);
  nlo = g_block_reduce<1>(nlo, sh);
  if (threadIdx.x == 0) {
    const float lo = -nlo;
    const float s = (hi - lo) / 255.0f;
    float z = 0.0f;
    if (s != 0.0f) z = fminf(255.0f, fmaxf(0.0f, rintf(0.0f - lo / s)));
    params[0] = s;
    params[1] = z;
  }
}
extern "C" __global__ void dq_apply(const float* __restrict__ x, const float* __restrict__ params, unsigned char* __restrict__ y,
    long long n, float* __restrict__ ys, unsigned char* __restrict__ yzp) {
  const float s = params[0], z = params[1];
  const long long i0 = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i0 == 0) {
    if (ys) *ys = s;
    if (yzp) *yzp = (unsigned char)z;
  }
  for (long long i = i0; i < n; i += (long long)gridDim.x * blockDim.x) y[i] = s == 0.0f ? (unsigned char)z : g_sat(x[i] / s, z);
}
)";
}

inline fn make_dynamic_quantize(const kernel_node&) {
  auto lib = std::make_shared<lazy_library>();
  return [lib](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    if (x.element_type() != dtype::f32) ctx.fail("input must be f32, got " + std::string(to_string(x.element_type())));
    auto& pol = ctx.policy();
    const auto& k = lib->get(pol, "f32", {"dq_range", "dq_apply"}, [] { return dynamic_quantize_source(); });
    auto& y = ctx.allocate_output(0, dtype::uint8, x.sizes());
    void* ys = ctx.num_outputs() > 1 ? ctx.allocate_output(1, dtype::f32, {}).data() : nullptr;
    void* yz = ctx.num_outputs() > 2 ? ctx.allocate_output(2, dtype::uint8, {}).data() : nullptr;
    const auto ws = pol.workspace(2 * sizeof(float));
    void* params = ws.get();
    const void* xp = x.data();
    long long nn = x.size();
    void* a0[] = {&xp, &nn, &params};
    pol.launch(k.kernels[0], 1, 1024, a0, ctx.stream());
    void* yp = y.data();
    void* a1[] = {&xp, &params, &yp, &nn, &ys, &yz};
    pol.launch(k.kernels[1], pol.blocks_for(std::max<long long>(nn, 1)), 256, a1, ctx.stream());
  };
}

/// Every generated source of this family for representative types: (name, source).
inline std::vector<std::pair<std::string, std::string>> quant_generated_sources() {
  std::vector<std::pair<std::string, std::string>> r;
  for (dtype q : quant_types()) {
    const std::string qs(to_string(q));
    r.emplace_back("quantize_f32_" + qs, quantize_source(dtype::f32, dtype::f32, q));
    r.emplace_back("dequantize_" + qs + "_f32", dequantize_source(q, dtype::f32, dtype::f32));
  }
  r.emplace_back("quantize_f16_f16_uint8", quantize_source(dtype::f16, dtype::f16, dtype::uint8));
  r.emplace_back("quantize_bf16_f64_int8", quantize_source(dtype::bf16, dtype::f64, dtype::int8));
  r.emplace_back("quantize_int32_bf16_int16", quantize_source(dtype::int32, dtype::bf16, dtype::int16));
  r.emplace_back("quantize_f64_f32_uint16", quantize_source(dtype::f64, dtype::f32, dtype::uint16));
  r.emplace_back("dequantize_int32_f32_f32", dequantize_source(dtype::int32, dtype::f32, dtype::f32));
  r.emplace_back("dequantize_int8_f16_f16", dequantize_source(dtype::int8, dtype::f16, dtype::f16));
  r.emplace_back("dequantize_uint8_bf16_bf16", dequantize_source(dtype::uint8, dtype::bf16, dtype::bf16));
  r.emplace_back("dequantize_int16_f64_f64", dequantize_source(dtype::int16, dtype::f64, dtype::f64));
  r.emplace_back("dequantize_uint8_f32_bf16", dequantize_source(dtype::uint8, dtype::f32, dtype::bf16));
  r.emplace_back("dynamic_quantize_f32", dynamic_quantize_source());
  return r;
}

}  // namespace cuda_quant

/// Registers QuantizeLinear and DequantizeLinear (to / from 8- and 16-bit integers, int32
/// too for DequantizeLinear; f32, f16, bf16 and f64 scales) and DynamicQuantizeLinear; other
/// quantized and scale types are declined (`applies`) and stay on the CPU.
inline void register_cuda_quant(kernel_registry<cuda>& r) {
  using namespace cuda_quant;
  auto scale_ok = [](const kernel_query& q) { return q.inputs.size() < 2 || q.inputs[1] == dtype::undefined || in(scale_types(), q.inputs[1]); };
  r.add({.domain = "", .op = "QuantizeLinear", .dtypes = quant_input_types(), .make = make_quantize, .applies = [scale_ok](const kernel_query& q) {
           if (!scale_ok(q)) return false;
           const i64 code = q.attrs ? get_or(*q.attrs, "output_dtype", i64{0}) : i64{0};
           const dtype zt = q.inputs.size() > 2 ? q.inputs[2] : dtype::undefined;
           return quantize_output(code, zt) != dtype::undefined;
         }});
  r.add({.domain = "", .op = "DequantizeLinear", .dtypes = dequant_types(), .make = make_dequantize, .applies = scale_ok});
  r.add({.domain = "", .op = "DynamicQuantizeLinear", .dtypes = {dtype::f32}, .make = make_dynamic_quantize});
}

}  // namespace gpass::exec
