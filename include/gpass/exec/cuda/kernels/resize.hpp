// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file resize.hpp
/// The CUDA Resize (opsets 10 to 19) and Upsample: the geometry and the per-axis source
/// indices and weights come from `resize_rules` on the host (the Eigen CPU kernel uses the
/// same), uploaded once per shape; nearest is one gather by per-axis index maps (any movable
/// element type, exact), linear and cubic are separable passes in double, the last axis first,
/// as the CPU does (f32, f64, f16, bf16, int8, uint8, int32, int64; integers rounded to
/// nearest and clamped).

#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <gpass/core/error.hpp>
#include <gpass/exec/cuda/codegen.hpp>
#include <gpass/exec/cuda/kernels/array.hpp>
#include <gpass/exec/cuda/kernels/common.hpp>
#include <gpass/exec/cuda/policy.hpp>
#include <gpass/exec/kernel.hpp>
#include <gpass/exec/resize_rules.hpp>

namespace gpass::exec {

namespace cuda_resize {

using i64 = std::int64_t;
using cuda_detail::context;
using cuda_detail::fn;
using cuda_detail::lazy_library;
using cuda_detail::upload_vector;
namespace rr = resize_rules;

inline constexpr int max_rank = cuda_array_detail::view_rank;

/// Nearest's description (host mirror of the device `g_rsn`): output sizes, the input's
/// strides, and where each axis's index map starts in the maps array.
struct g_rsn {
  long long n = 0, rank = 0;
  long long out[max_rank] = {}, in_st[max_rank] = {}, map_at[max_rank] = {};
};

/// `rs_nearest_<size>(y, x, maps, d, extrapolation)`: y = x at the mapped source (map -1:
/// the extrapolation value), for elements of 1, 2, 4 and 8 bytes.
inline const std::string& nearest_source() {
  static const std::string s = [] {
    std::string r = cuda_codegen::cuda_prelude();
    r += "#define G_R " + std::to_string(max_rank) + "\n";
    r += R"(struct g_rsn { long long n, rank; long long out[G_R], in_st[G_R], map_at[G_R]; };
template <class U> __device__ __forceinline__ void t_nearest(U* __restrict__ y, const U* __restrict__ x, const long long* __restrict__ maps,
                                                             const g_rsn& d, U ev) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < d.n; i += (long long)gridDim.x * blockDim.x) {
    long long rest = i, off = 0;
    bool ext = false;
    for (int a = (int)d.rank - 1; a >= 0; --a) {
      const long long c = rest % d.out[a];
      rest /= d.out[a];
      const long long k = maps[d.map_at[a] + c];
      if (k < 0) ext = true;
      off += k * d.in_st[a];
    }
    y[i] = ext ? ev : x[off];
  }
}
)";
    const char* types[] = {"unsigned char", "unsigned short", "unsigned int", "unsigned long long"};
    const int sizes[] = {1, 2, 4, 8};
    for (int q = 0; q < 4; ++q) {
      const std::string U = types[q], S = std::to_string(sizes[q]);
      r += "extern \"C\" __global__ void rs_nearest_" + S + "(" + U + "* y, const " + U + "* x, const long long* maps, g_rsn d, " + U +
           " ev) { t_nearest(y, x, maps, d, ev); }\n";
    }
    return r;
  }();
  return s;
}

/// The element types linear and cubic take (those of the CPU kernel).
inline std::vector<dtype> interpolated_types() {
  return {dtype::f32, dtype::f64, dtype::f16, dtype::bf16, dtype::int8, dtype::uint8, dtype::int32, dtype::int64};
}

/// `rs_in(x, b, n)` (to double), `rs_pass(dst, src, idx, w, ext, outer, out, in, inner, taps,
/// extrapolation)` (one axis: each output position the weighted sum of its taps), `rs_out(b,
/// y, n)` (from double: floats through their compute type, integers rounded and clamped).
inline std::string interpolate_source(dtype t) {
  std::string r = cuda_codegen::cuda_prelude();
  r += "typedef " + std::string(cuda_codegen::storage_type(t)) + " T;\n";
  r += "#define G_LOOP(count) for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < (count); i += (long long)gridDim.x * blockDim.x)\n";
  r += "extern \"C\" __global__ void rs_in(const T* __restrict__ x, double* __restrict__ b, long long n) { G_LOOP(n) b[i] = (double)g_load(x, i); }\n";
  r += R"(extern "C" __global__ void rs_pass(double* __restrict__ dst, const double* __restrict__ src, const long long* __restrict__ idx,
    const double* __restrict__ w, const unsigned char* __restrict__ ext, long long outer, long long out, long long in, long long inner,
    int taps, double ev) {
  G_LOOP(outer * out * inner) {
    const long long j = i % inner, t = i / inner, yy = t % out, o = t / out;
    if (ext[yy]) { dst[i] = ev; continue; }
    double s = 0;
    for (int k = 0; k < taps; ++k) {
      const double wt = w[yy * taps + k];
      if (wt != 0) s += wt * src[(o * in + idx[yy * taps + k]) * inner + j];
    }
    dst[i] = s;
  }
}
)";
  if (cuda_codegen::is_float(t)) {
    r += "extern \"C\" __global__ void rs_out(const double* __restrict__ b, T* __restrict__ y, long long n) { G_LOOP(n) g_store(y, i, (" +
         std::string(cuda_codegen::compute_type(t)) + ")b[i]); }\n";
  } else {
    auto lit = [](double v) {
      std::ostringstream o;
      o.precision(17);
      o << v;
      return o.str();
    };
    double lo = 0, hi = 0;
    visit_dtype(t, [&]<class U>() {
      if constexpr (std::is_integral_v<U>) {
        lo = static_cast<double>(std::numeric_limits<U>::lowest());
        hi = static_cast<double>(std::numeric_limits<U>::max());
      }
    });
    r += "extern \"C\" __global__ void rs_out(const double* __restrict__ b, T* __restrict__ y, long long n) {\n  G_LOOP(n) {\n"
         "    double v = rint(b[i]);\n    v = v < " + lit(lo) + " ? " + lit(lo) + " : v > " + lit(hi) + " ? " + lit(hi) + " : v;\n"
         "    y[i] = (T)v;\n  }\n}\n";
  }
  return r;
}

/// The device copies of one shape's plans (per-axis maps, or indices, weights and
/// extrapolation flags), kept by the node for the next run of the same shape.
struct device_plans {
  cuda_tensor maps;                        ///< nearest: every axis's map, concatenated
  std::vector<cuda_tensor> idx, w, ext;    ///< linear / cubic: per axis (empty where inactive)
};

struct resize_state {
  rr::resize_options opt;
  lazy_library lib;
  std::mutex mu;
  std::map<std::string, std::shared_ptr<const device_plans>> plans;  ///< by input sizes and output sizes
};

inline fn make_resize(const kernel_node& n, bool upsample) {
  auto st = std::make_shared<resize_state>();
  st->opt = rr::read_resize_options(n, upsample);
  return [st](context& ctx) {
    const rr::resize_options& opt = st->opt;
    const kernel_node& nd = ctx.node();
    const cuda_tensor& x = ctx.input(0);
    const std::size_t rank = x.rank();
    const dtype t = x.element_type();
    const rr::resize_inputs ri = rr::read_resize_inputs(opt, nd, [&](std::size_t i) { return ctx.has_input(i); },
                                                        [&](std::size_t i) { return cuda_detail::host_value(ctx, i); });
    if (rank > static_cast<std::size_t>(max_rank)) ctx.fail("rank " + std::to_string(rank) + " is over the CUDA kernels' " + std::to_string(max_rank));
    cuda_tensor* out_tensor = nullptr;
    const rr::resize_plan rp = rr::plan_resize(opt, x.sizes(), ri.scales, ri.sizes, ri.roi, nd,
                                               [&](const std::vector<i64>& out) { out_tensor = &ctx.allocate_output(0, t, out); });
    cuda_tensor& y = *out_tensor;
    if (y.size() == 0) return;
    auto& pol = ctx.policy();
    // the plans of this geometry on the device (made once per input sizes, scales, sizes and roi)
    std::string key;
    for (i64 v : x.sizes()) key += std::to_string(v) + ",";
    key += "|";
    for (i64 v : rp.out) key += std::to_string(v) + ",";
    for (double v : ri.scales) key += "s" + std::to_string(v);
    for (double v : ri.roi) key += "r" + std::to_string(v);
    std::shared_ptr<const device_plans> dp;
    {
      std::lock_guard lock(st->mu);
      auto it = st->plans.find(key);
      if (it != st->plans.end()) dp = it->second;
    }
    if (!dp) {
      auto made = std::make_shared<device_plans>();
      if (opt.mode == 0) {
        std::vector<long long> maps;
        for (std::size_t d = 0; d < rank; ++d)
          for (i64 o = 0; o < rp.out[d]; ++o)
            maps.push_back(!rp.active[d] ? o : rp.plans[d].extrap[static_cast<std::size_t>(o)] ? -1 : rp.plans[d].idx[static_cast<std::size_t>(o)]);
        made->maps = upload_vector(ctx, dtype::int64, maps);
      } else {
        made->idx.resize(rank);
        made->w.resize(rank);
        made->ext.resize(rank);
        for (std::size_t d = 0; d < rank; ++d) {
          if (!rp.active[d]) continue;
          const rr::resize_axis& p = rp.plans[d];
          made->idx[d] = upload_vector(ctx, dtype::int64, p.idx);
          made->w[d] = upload_vector(ctx, dtype::f64, p.w);
          std::vector<std::uint8_t> e(p.extrap.begin(), p.extrap.end());
          made->ext[d] = upload_vector(ctx, dtype::uint8, e);
        }
      }
      std::lock_guard lock(st->mu);
      dp = st->plans.emplace(key, std::move(made)).first->second;
    }
    if (opt.mode == 0) {
      cuda_array_detail::require_movable(ctx, t);
      g_rsn d;
      d.n = y.size();
      d.rank = static_cast<long long>(rank);
      const auto in_st = shape_rules::strides_of(x.sizes());
      long long at = 0;
      for (std::size_t a = 0; a < rank; ++a) {
        d.out[a] = rp.out[a];
        d.in_st[a] = in_st[a];
        d.map_at[a] = at;
        at += rp.out[a];
      }
      std::uint64_t ev = cuda_array_detail::scalar_bits(t, opt.extrapolation, nd);
      const std::size_t es = size_of(t);
      const auto& k = st->lib.get(pol, "nearest", {"rs_nearest_1", "rs_nearest_2", "rs_nearest_4", "rs_nearest_8"},
                                  [] { return nearest_source(); });
      void *yp = y.data(), *xp = x.data(), *mp = dp->maps.data();
      std::uint8_t e1 = static_cast<std::uint8_t>(ev);
      std::uint16_t e2 = static_cast<std::uint16_t>(ev);
      std::uint32_t e4 = static_cast<std::uint32_t>(ev);
      void* evp = es == 1 ? static_cast<void*>(&e1) : es == 2 ? static_cast<void*>(&e2) : es == 4 ? static_cast<void*>(&e4) : static_cast<void*>(&ev);
      void* args[] = {&yp, &xp, &mp, &d, evp};
      const std::size_t which = es == 1 ? 0 : es == 2 ? 1 : es == 4 ? 2 : 3;
      pol.launch(k.kernels[which], pol.blocks_for(d.n), 256, args, ctx.stream());
      return;
    }
    bool served = false;
    for (dtype u : interpolated_types()) served = served || u == t;
    if (!served) ctx.fail("linear and cubic resize take float and int8/uint8/int32/int64 tensors, not " + std::string(to_string(t)));
    const auto& k = st->lib.get(pol, std::string(to_string(t)), {"rs_in", "rs_pass", "rs_out"}, [&] { return interpolate_source(t); });
    std::vector<i64> cur = x.sizes();
    cuda_tensor buf = pol.allocate_tensor(dtype::f64, cur, ctx.stream());
    {
      const void* xp = x.data();
      void* bp = buf.data();
      long long nn = x.size();
      void* args[] = {&xp, &bp, &nn};
      if (nn > 0) pol.launch(k.kernels[0], pol.blocks_for(nn), 256, args, ctx.stream());
    }
    for (std::size_t d = rank; d-- > 0;) {
      if (!rp.active[d]) continue;
      const rr::resize_axis& p = rp.plans[d];
      std::vector<i64> next_sizes = cur;
      next_sizes[d] = p.out;
      cuda_tensor next = pol.allocate_tensor(dtype::f64, next_sizes, ctx.stream());
      long long outer = shape_rules::prod(cur, 0, d), out = p.out, in = p.in, inner = shape_rules::prod(cur, d + 1, rank);
      int taps = p.n;
      double evd = opt.extrapolation;
      void* dst = next.data();
      const void* src = buf.data();
      const void *ip = dp->idx[d].data(), *wp = dp->w[d].data(), *ep = dp->ext[d].data();
      void* args[] = {&dst, &src, &ip, &wp, &ep, &outer, &out, &in, &inner, &taps, &evd};
      const long long total = outer * out * inner;
      if (total > 0) pol.launch(k.kernels[1], pol.blocks_for(total), 256, args, ctx.stream());
      cur = std::move(next_sizes);
      buf = std::move(next);
    }
    const void* bp = buf.data();
    void* yp = y.data();
    long long nn = y.size();
    void* args[] = {&bp, &yp, &nn};
    pol.launch(k.kernels[2], pol.blocks_for(nn), 256, args, ctx.stream());
  };
}

/// Every generated source of Resize: (name, source).
inline std::vector<std::pair<std::string, std::string>> resize_generated_sources() {
  std::vector<std::pair<std::string, std::string>> r;
  r.emplace_back("resize_nearest", nearest_source());
  for (dtype t : interpolated_types()) r.emplace_back("resize_interpolate_" + std::string(to_string(t)), interpolate_source(t));
  return r;
}

}  // namespace cuda_resize

/// Registers Resize and Upsample.
inline void register_cuda_resize(kernel_registry<cuda>& r) {
  using namespace cuda_resize;
  const auto types = cuda_array_detail::movable_types();
  // linear and cubic take fewer types than nearest: the placer asks
  auto served = [](const kernel_query& q) {
    const std::string mode = q.attrs ? get_or(*q.attrs, "mode", std::string("nearest")) : std::string("nearest");
    if (mode == "nearest" || q.inputs.empty() || q.inputs[0] == dtype::undefined) return true;
    for (dtype u : interpolated_types())
      if (u == q.inputs[0]) return true;
    return false;
  };
  r.add({.op = "Resize", .dtypes = types, .make = [](const kernel_node& n) { return make_resize(n, false); }, .applies = served});
  r.add({.op = "Upsample", .dtypes = types, .make = [](const kernel_node& n) { return make_resize(n, true); }, .applies = served});
}

}  // namespace gpass::exec
