// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file signal.hpp
/// CUDA kernels of ONNX's window functions (opset 17: HannWindow, HammingWindow and
/// BlackmanWindow), MelWeightMatrix, DFT (17, 20) and STFT (17). A window's size is read on the host and checked as on
/// the CPU; a generated kernel writes each element from the CPU's formula in double (0.5 - 0.5
/// cos(2 pi i / N), ...), converted to the output_datatype through its compute type as the
/// CPU converts it. The device's double cos is not glibc's: elements agree to an ulp of
/// double, which the conversion to the output type nearly always hides. MelWeightMatrix's
/// filter edges are computed on the host by the CPU's rule (`signal_rules::mel_edges`), then a
/// thread per weight: the CPU's values, bit for bit.
///
/// DFT and STFT run the CPU's FFT plan (`gpass::exec::fft`) on the device, in double: each line
/// (a DFT's line along its axis, an STFT's windowed frame) is loaded into a working row of the
/// plan's length, then transformed by radix-2 stages (a kernel per stage over every line: a
/// thread per butterfly, the host's twiddles), with Bluestein's chirp, kernel and second
/// transform for a length that is not a power of two, and stored as the CPU stores it. The
/// plan's tables are made on the host once per length and direction and kept by the node.
/// Shapes and messages are the CPU's (`signal_rules::dft_shape`, `stft_shape`).

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gpass/exec/cuda/codegen.hpp>
#include <gpass/exec/cuda/kernels/common.hpp>
#include <gpass/exec/cuda/kernels/nn.hpp>
#include <gpass/exec/cuda/policy.hpp>
#include <gpass/exec/fft.hpp>
#include <gpass/exec/kernel.hpp>
#include <gpass/exec/scratch.hpp>
#include <gpass/exec/shape_rules.hpp>
#include <gpass/exec/signal_rules.hpp>

namespace gpass::exec {

namespace cuda_signal {

using cuda_detail::context;
using cuda_detail::fn;
using i64 = std::int64_t;

/// The window kinds.
enum class window_kind { hann, hamming, blackman };

/// `window(y, size, N)`: y[i] = the window of kind `k` at i over a period of N (1 when N <= 0),
/// stored as `t`.
inline std::string window_source(dtype t, window_kind k) {
  const char* value = k == window_kind::hann      ? "0.5 - 0.5 * cos(a)"
                      : k == window_kind::hamming ? "25.0 / 46.0 - (21.0 / 46.0) * cos(a)"
                                                  : "0.42 - 0.5 * cos(a) + 0.08 * cos(2.0 * a)";
  return cuda_nn::head(t) + R"(extern "C" __global__ void window(T* __restrict__ y, long long size, double N) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < size; i += (long long)gridDim.x * blockDim.x) {
    double v = 1.0;
    if (N > 0) {
      const double a = 2.0 * 3.141592653589793 * (double)i / N;
      v = )" + value + R"(;
    }
    g_store(y, i, (W)v);
  }
}
)";
}

/// `mel`: y [nbins, mels] of MelWeightMatrix from the filter edges `e` (see
/// `signal_rules::mel_edges`): filter i rises over bins [e[i], e[i + 1]] and falls over
/// [e[i + 1], e[i + 2]), the falling side written last as on the CPU; 0 elsewhere.
inline std::string mel_source(dtype t) {
  return cuda_nn::head(t) + R"(extern "C" __global__ void mel(T* __restrict__ y, const long long* __restrict__ e, long long mels, long long nbins) {
  for (long long k = blockIdx.x * (long long)blockDim.x + threadIdx.x; k < mels * nbins; k += (long long)gridDim.x * blockDim.x) {
    const long long j = k / mels, i = k - j * mels, l = e[i], c = e[i + 1], h = e[i + 2];
    double v = 0;
    if (h > c && j >= c && j < h) v = (double)(h - j) / (double)(h - c);
    else if (j >= l && j <= c) v = c == l ? 1.0 : (double)(j - l) / (double)(c - l);
    g_store(y, k, (W)v);
  }
}
)";
}

/// The single value of a scalar (or one-element) numeric input, as a double, read on the host.
inline double scalar_value(context& ctx, std::size_t i, const char* what) {
  if (ctx.input(i).size() != 1) ctx.fail(std::string(what) + " must hold one value, got " + std::to_string(ctx.input(i).size()));
  return cuda_detail::host_values_as<double>(ctx, i, 0.0)[0];
}

/// The single integer of a scalar (or one-element) int32 / int64 input, read on the host.
inline i64 scalar_int(context& ctx, std::size_t i, const char* what) {
  const std::vector<i64> v = cuda_detail::host_ints(ctx, i);
  if (v.size() != 1) ctx.fail(std::string(what) + " must hold one value, got " + std::to_string(v.size()));
  return v[0];
}

/// MelWeightMatrix(num_mel_bins, dft_length, sample_rate, lower_edge_hertz,
/// upper_edge_hertz): output_datatype (default f32); the checks and edges the CPU's.
inline fn make_mel(const kernel_node& n) {
  const dtype out = shape_rules::onnx_dtype_attr(n, "output_datatype", dtype::f32);
  auto lib = std::make_shared<cuda_detail::lazy_library>();
  return [out, lib](context& ctx) {
    const i64 mels = scalar_int(ctx, 0, "num_mel_bins"), dft = scalar_int(ctx, 1, "dft_length"), rate = scalar_int(ctx, 2, "sample_rate");
    const double lo = scalar_value(ctx, 3, "lower_edge_hertz"), hi = scalar_value(ctx, 4, "upper_edge_hertz");
    signal_rules::check_mel_args(mels, dft, rate, lo, hi, ctx.node());
    const i64 nbins = dft / 2 + 1;
    cuda_tensor& y = ctx.allocate_output(0, out, {nbins, mels});
    const std::vector<i64> e = signal_rules::mel_edges(mels, dft, rate, lo, hi, ctx.node());
    auto& pol = ctx.policy();
    const cuda_tensor de = cuda_detail::upload_vector(ctx, dtype::int64, e);
    const auto& k = lib->get(pol, std::string(to_string(out)), {"mel"}, [&] { return mel_source(out); });
    void* yp = y.data();
    const void* ep = de.data();
    long long m = mels, b = nbins;
    void* args[] = {&yp, &ep, &m, &b};
    pol.launch(k.kernels[0], pol.blocks_for(y.size()), 256, args, ctx.stream());
  };
}

/// The output types a window may have (every number type, as the CPU).
inline std::vector<dtype> window_output_types() {
  return {dtype::f16,   dtype::bf16,  dtype::f32,    dtype::f64,    dtype::int8,   dtype::int16,
          dtype::int32, dtype::int64, dtype::uint8, dtype::uint16, dtype::uint32, dtype::uint64};
}

/// HannWindow / HammingWindow / BlackmanWindow(size): output_datatype (default f32), periodic.
inline fn make_window(const kernel_node& n, window_kind k) {
  const dtype out = shape_rules::onnx_dtype_attr(n, "output_datatype", dtype::f32);
  const bool periodic = n.attr<i64>("periodic", 1) != 0;
  bool numeric = false;
  for (dtype t : window_output_types()) numeric = numeric || t == out;
  if (!numeric) n.fail("output_datatype must be numeric");
  auto lib = std::make_shared<cuda_detail::lazy_library>();
  return [=](context& ctx) {
    const i64 size = scalar_int(ctx, 0, "size");
    if (size < 0) ctx.fail("window size must be non-negative, got " + std::to_string(size));
    cuda_tensor& y = ctx.allocate_output(0, out, {size});
    if (size == 0) return;
    auto& pol = ctx.policy();
    const auto& kn = lib->get(pol, std::string(to_string(out)), {"window"}, [&] { return window_source(out, k); });
    void* yp = y.data();
    long long count = size;
    double N = static_cast<double>(periodic ? size : size - 1);
    void* args[] = {&yp, &count, &N};
    pol.launch(kn.kernels[0], pol.blocks_for(size), 256, args, ctx.stream());
  };
}

// ---- DFT, STFT -------------------------------------------------------------------------------

/// The FFT library for element type `t` (complex values as `g_c`, two doubles):
/// - `dft_load(x, w, chirp, lines, inner, L, C, len, M, c2r)`: w [lines, M] from the DFT's
///   lines of x ([outer, L, inner, C]), zero past L and len, the Hermitian extension when c2r
///   (2: with the imaginary parts of the DC and Nyquist bins zeroed, as TensorFlow's IRFFT),
///   times chirp[k] (may be null) below len;
/// - `stft_load(x, win, w, chirp, lines, frames, S, C, step, fl, M)`: w [lines, M] from each
///   frame of x ([B, S, C]) times the window (may be null: ones), zero past fl, times chirp;
/// - `fft_bitrev(w, lines, M, bits)`, `fft_stage(w, tw, lines, M, half)`: radix 2 in place;
/// - `fft_mul(w, kern, lines, M)`: each line times kern pointwise;
/// - `dft_store(w, y, chirp, lines, inner, Lout, Cout, M, inv_m, scale, divide)`: y ([outer,
///   Lout, inner, Cout]) from w's first Lout points (times chirp and inv_m when given), times
///   scale (divided by it when `divide`).
inline std::string fft_source(dtype t) {
  return cuda_codegen::cuda_prelude() + "typedef " + std::string(cuda_codegen::storage_type(t)) + R"( T;
struct g_c { double x, y; };
__device__ __forceinline__ g_c g_cmul(g_c a, g_c b) { g_c r; r.x = a.x * b.x - a.y * b.y; r.y = a.x * b.y + a.y * b.x; return r; }
#define G_LOOP(count) for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < (count); i += (long long)gridDim.x * blockDim.x)
extern "C" __global__ void dft_load(const T* __restrict__ x, g_c* __restrict__ w, const g_c* __restrict__ chirp, long long lines,
    long long inner, long long L, long long C, long long len, long long M, int c2r) {
  G_LOOP(lines * M) {
    const long long k = i % M, line = i / M, o = line / inner, in = line % inner;
    g_c v; v.x = 0; v.y = 0;
    if (k < len) {
      long long src = k;
      bool conj = false;
      if (c2r && k >= len / 2 + 1) { src = len - k; conj = true; }
      if (src < L) {
        const T* p = x + ((o * L + src) * inner + in) * C;
        v.x = (double)g_load(p, 0);
        if (C == 2) v.y = (double)g_load(p, 1);
      }
      if (conj) v.y = -v.y;
      if (c2r == 2 && (k == 0 || 2 * k == len)) v.y = 0;  // (TensorFlow's: the DC and Nyquist bins are real)
      if (chirp) v = g_cmul(v, chirp[k]);
    }
    w[i] = v;
  }
}
extern "C" __global__ void stft_load(const T* __restrict__ x, const T* __restrict__ win, g_c* __restrict__ w, const g_c* __restrict__ chirp,
    long long lines, long long frames, long long S, long long C, long long step, long long fl, long long M) {
  G_LOOP(lines * M) {
    const long long k = i % M, line = i / M, b = line / frames, f = line % frames;
    g_c v; v.x = 0; v.y = 0;
    if (k < fl) {
      const T* p = x + (b * S + f * step) * C;
      const double wk = win ? (double)g_load(win, k) : 1.0;
      v.x = (double)g_load(p, k * C) * wk;
      v.y = C == 2 ? (double)g_load(p, k * C + 1) * wk : 0.0;
      if (chirp) v = g_cmul(v, chirp[k]);
    }
    w[i] = v;
  }
}
extern "C" __global__ void fft_bitrev(g_c* __restrict__ w, long long lines, long long M, int bits) {
  G_LOOP(lines * M) {
    const long long k = i % M, r = (long long)(__brevll((unsigned long long)k) >> (64 - bits));
    if (k < r) {
      const long long a = i - k;
      const g_c t = w[a + k];
      w[a + k] = w[a + r];
      w[a + r] = t;
    }
  }
}
extern "C" __global__ void fft_stage(g_c* __restrict__ w, const g_c* __restrict__ tw, long long lines, long long M, long long half) {
  const long long per = M / 2;
  G_LOOP(lines * per) {
    const long long line = i / per, b = i % per, j = b % half;
    const long long a = line * M + (b / half) * 2 * half + j;
    const g_c u = w[a], v = g_cmul(w[a + half], tw[half - 1 + j]);
    g_c s, d;
    s.x = u.x + v.x; s.y = u.y + v.y;
    d.x = u.x - v.x; d.y = u.y - v.y;
    w[a] = s;
    w[a + half] = d;
  }
}
extern "C" __global__ void fft_mul(g_c* __restrict__ w, const g_c* __restrict__ kern, long long lines, long long M) {
  G_LOOP(lines * M) w[i] = g_cmul(w[i], kern[i % M]);
}
extern "C" __global__ void dft_store(const g_c* __restrict__ w, T* __restrict__ y, const g_c* __restrict__ chirp, long long lines,
    long long inner, long long Lout, long long Cout, long long M, double inv_m, double scale, int divide) {
  G_LOOP(lines * Lout) {
    const long long k = i % Lout, line = i / Lout, o = line / inner, in = line % inner;
    g_c v = w[line * M + k];
    if (chirp) {
      v = g_cmul(v, chirp[k]);
      v.x *= inv_m;
      v.y *= inv_m;
    }
    T* q = y + ((o * Lout + k) * inner + in) * Cout;
    g_store(q, 0, divide ? v.x / scale : v.x * scale);
    if (Cout == 2) g_store(q, 1, divide ? v.y / scale : v.y * scale);
  }
}
)";
}

/// One FFT plan's tables on the device: the working length M (n, or Bluestein's padded
/// length), its log2, Bluestein's chirp (n points) and kernel (M), the stage twiddles of
/// the plan's direction (radix 2) or of both (Bluestein: forward, then inverse).
struct fft_tables {
  i64 n = 0, M = 0;
  int bits = 0;
  bool bluestein = false;
  cuda_tensor chirp, kernel, tw_first, tw_second;
};

/// A node's state: the FFT library per element type and the tables per (length, direction).
struct fft_state {
  cuda_detail::lazy_library lib;
  std::mutex mu;
  std::map<std::pair<i64, int>, std::shared_ptr<const fft_tables>> tables;
};

/// The complex values `v` as a new device tensor of doubles (re, im pairs).
inline cuda_tensor upload_complex(context& ctx, const std::vector<fft::cplx>& v) {
  std::vector<double> d;
  d.reserve(2 * v.size());
  for (const fft::cplx& c : v) {
    d.push_back(c.real());
    d.push_back(c.imag());
  }
  return cuda_detail::upload_vector(ctx, dtype::f64, d);
}

/// The tables of an FFT of `n` points in direction `sign`, made on the host (the CPU's plan)
/// the first time (outside a capture), checked against each run's limits as the CPU checks its
/// plan.
inline std::shared_ptr<const fft_tables> tables_for(context& ctx, fft_state& st, i64 n, int sign, const std::string& what) {
  check_scratch(ctx, fft::fft_plan::bytes_needed(static_cast<std::size_t>(n)), "the plan of " + what);
  std::lock_guard lock(st.mu);
  auto it = st.tables.find({n, sign});
  if (it != st.tables.end()) return it->second;
  const fft::fft_plan plan(static_cast<std::size_t>(n), sign);
  auto t = std::make_shared<fft_tables>();
  t->n = n;
  t->bluestein = plan.padded() != 0;
  t->M = t->bluestein ? static_cast<i64>(plan.padded()) : n;
  while ((i64{1} << t->bits) < t->M) ++t->bits;
  if (t->bluestein) {
    t->chirp = upload_complex(ctx, plan.chirp());
    t->kernel = upload_complex(ctx, plan.kernel());
    t->tw_first = upload_complex(ctx, fft::twiddles(static_cast<std::size_t>(t->M), -1));
    t->tw_second = upload_complex(ctx, fft::twiddles(static_cast<std::size_t>(t->M), +1));
  } else if (t->M > 1) {
    t->tw_first = upload_complex(ctx, fft::twiddles(static_cast<std::size_t>(t->M), sign));
  }
  // (kept only when made outside a CUDA graph's capture: a captured upload fills its buffer
  // when the graph replays)
  if (!ctx.policy().capturing()) st.tables.emplace(std::make_pair(n, sign), t);
  return t;
}

/// Transforms the `lines` rows of `w` ([lines, M] complex) in place by the plan of `t`.
inline void run_fft(context& ctx, const cuda_detail::lazy_library::entry& k, const fft_tables& t, cuda_tensor& w, i64 lines) {
  auto& pol = ctx.policy();
  void* wp = w.data();
  long long ll = lines, M = t.M;
  auto pow2 = [&](const cuda_tensor& tw) {
    if (t.bits == 0) return;
    int bits = t.bits;
    void* a1[] = {&wp, &ll, &M, &bits};
    pol.launch(k.kernels[2], pol.blocks_for(lines * t.M), 256, a1, ctx.stream());
    const void* tp = tw.data();
    for (long long half = 1; half < t.M; half <<= 1) {
      long long h = half;
      void* a2[] = {&wp, &tp, &ll, &M, &h};
      pol.launch(k.kernels[3], pol.blocks_for(lines * t.M / 2), 256, a2, ctx.stream());
    }
  };
  pow2(t.tw_first);
  if (!t.bluestein) return;
  const void* kp = t.kernel.data();
  void* a3[] = {&wp, &kp, &ll, &M};
  pol.launch(k.kernels[4], pol.blocks_for(lines * t.M), 256, a3, ctx.stream());
  pow2(t.tw_second);
}

/// The kernels of the FFT library for `t` (load_dft, load_stft, bitrev, stage, mul, store).
inline const cuda_detail::lazy_library::entry& fft_library(context& ctx, fft_state& st, dtype t) {
  return st.lib.get(ctx.policy(), std::string(to_string(t)), {"dft_load", "stft_load", "fft_bitrev", "fft_stage", "fft_mul", "dft_store"},
                    [&] { return fft_source(t); });
}

/// Stores the first `Lout` points of each line of `w` into y ([outer, Lout, inner, Cout]), times
/// `scale` (divided by it when `divide`).
inline void store_lines(context& ctx, const cuda_detail::lazy_library::entry& k, const fft_tables& t, const cuda_tensor& w, void* y,
                        i64 lines, i64 inner, i64 Lout, i64 Cout, double scale, bool divide = false) {
  const void* wp = w.data();
  void* yp = y;
  const void* cp = t.bluestein ? t.chirp.data() : nullptr;
  long long ll = lines, in = inner, lo = Lout, co = Cout, M = t.M;
  double inv = 1.0 / static_cast<double>(t.M), sc = scale;
  int dv = divide ? 1 : 0;
  void* args[] = {&wp, &yp, &cp, &ll, &in, &lo, &co, &M, &inv, &sc, &dv};
  ctx.policy().launch(k.kernels[5], ctx.policy().blocks_for(lines * Lout), 256, args, ctx.stream());
}

inline fn make_dft(const kernel_node& n) {
  const bool inverse = n.attr<i64>("inverse", 0) != 0;
  const bool onesided = n.attr<i64>("onesided", 0) != 0;
  const i64 axis_attr = n.attr<i64>("axis", n.opset >= 20 ? -2 : 1);
  auto st = std::make_shared<fft_state>();
  return [=](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    const i64 axis = ctx.has_input(2) ? scalar_int(ctx, 2, "axis") : axis_attr;
    std::optional<i64> dft_length;
    if (ctx.has_input(1)) dft_length = scalar_int(ctx, 1, "dft_length");
    const signal_rules::dft_geometry g = signal_rules::dft_shape(x.sizes(), axis, dft_length, inverse, onesided, ctx.node());
    cuda_tensor& y = ctx.allocate_output(0, x.element_type(), g.out_sizes);
    if (y.size() == 0) return;
    const auto [outer, inner] = signal_rules::dft_lines(x.sizes(), g);
    const i64 lines = outer * inner;
    const std::string what = "a DFT of " + std::to_string(g.len) + " points";
    const auto t = tables_for(ctx, *st, g.len, inverse ? +1 : -1, what);
    check_scratch(ctx, static_cast<double>(lines) * static_cast<double>(t->M) * 16.0, "the working lines of " + what);
    auto& pol = ctx.policy();
    const auto& k = fft_library(ctx, *st, x.element_type());
    cuda_tensor w = pol.allocate_tensor(dtype::f64, {lines, t->M, 2}, ctx.stream());
    {
      const void* xp = x.data();
      void* wp = w.data();
      const void* cp = t->bluestein ? t->chirp.data() : nullptr;
      long long ll = lines, in = inner, L = g.L, C = g.C, len = g.len, M = t->M;
      int c2r = g.c2r ? 1 : 0;
      void* args[] = {&xp, &wp, &cp, &ll, &in, &L, &C, &len, &M, &c2r};
      pol.launch(k.kernels[0], pol.blocks_for(lines * t->M), 256, args, ctx.stream());
    }
    run_fft(ctx, k, *t, w, lines);
    store_lines(ctx, k, *t, w, y.data(), lines, inner, g.Lout, g.Cout, inverse ? 1.0 / static_cast<double>(g.len) : 1.0);
  };
}

inline fn make_stft(const kernel_node& n) {
  const bool onesided = n.attr<i64>("onesided", 1) != 0;
  auto st = std::make_shared<fft_state>();
  return [=](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    const i64 step = scalar_int(ctx, 1, "frame_step");
    const cuda_tensor* win = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    std::optional<i64> frame_length;
    if (ctx.has_input(3)) frame_length = scalar_int(ctx, 3, "frame_length");
    const signal_rules::stft_geometry g = signal_rules::stft_shape(x.sizes(), step, win ? &win->sizes() : nullptr, frame_length, onesided, ctx.node());
    if (win && win->element_type() != x.element_type())
      ctx.fail("the window must have the signal's element type " + std::string(to_string(x.element_type())));
    cuda_tensor& y = ctx.allocate_output(0, x.element_type(), {g.B, g.frames, g.bins, 2});
    if (y.size() == 0) return;
    const i64 lines = g.B * g.frames;
    const std::string what = "a DFT of " + std::to_string(g.fl) + " points";
    const auto t = tables_for(ctx, *st, g.fl, -1, what);
    check_scratch(ctx, static_cast<double>(lines) * static_cast<double>(t->M) * 16.0, "the working lines of " + what);
    auto& pol = ctx.policy();
    const auto& k = fft_library(ctx, *st, x.element_type());
    cuda_tensor w = pol.allocate_tensor(dtype::f64, {lines, t->M, 2}, ctx.stream());
    {
      const void* xp = x.data();
      const void* wn = win ? win->data() : nullptr;
      void* wp = w.data();
      const void* cp = t->bluestein ? t->chirp.data() : nullptr;
      long long ll = lines, fr = g.frames, S = g.S, C = g.C, sp = g.step, fl = g.fl, M = t->M;
      void* args[] = {&xp, &wn, &wp, &cp, &ll, &fr, &S, &C, &sp, &fl, &M};
      pol.launch(k.kernels[1], pol.blocks_for(lines * t->M), 256, args, ctx.stream());
    }
    run_fft(ctx, k, *t, w, lines);
    store_lines(ctx, k, *t, w, y.data(), lines, 1, g.bins, 2, 1.0);
  };
}

}  // namespace cuda_signal

/// Every source signal.hpp generates (name, CUDA C++), for compile checks.
inline std::vector<std::pair<std::string, std::string>> signal_generated_sources() {
  using cuda_signal::window_kind;
  std::vector<std::pair<std::string, std::string>> r;
  for (dtype t : {dtype::f32, dtype::f64, dtype::f16, dtype::int32})
    for (window_kind k : {window_kind::hann, window_kind::hamming, window_kind::blackman})
      r.emplace_back("window_" + std::string(to_string(t)) + "_" + std::to_string(static_cast<int>(k)), cuda_signal::window_source(t, k));
  for (dtype t : {dtype::f32, dtype::f64, dtype::f16, dtype::int32}) r.emplace_back("mel_" + std::string(to_string(t)), cuda_signal::mel_source(t));
  for (dtype t : {dtype::f32, dtype::f64, dtype::f16, dtype::bf16}) r.emplace_back("fft_" + std::string(to_string(t)), cuda_signal::fft_source(t));
  return r;
}

/// Registers signal.hpp's kernels.
inline void register_cuda_signal(kernel_registry<cuda>& r) {
  using cuda_signal::window_kind;
  const std::pair<const char*, window_kind> windows[] = {
      {"HannWindow", window_kind::hann}, {"HammingWindow", window_kind::hamming}, {"BlackmanWindow", window_kind::blackman}};
  for (const auto& [op, k] : windows)
    r.add({.op = op, .since_version = 17, .dtypes = {dtype::int32, dtype::int64},
           .make = [k](const kernel_node& n) { return cuda_signal::make_window(n, k); }});
  r.add({.op = "MelWeightMatrix", .since_version = 17, .dtypes = {dtype::int32, dtype::int64}, .make = cuda_signal::make_mel});
  const std::vector<dtype> ft{dtype::f32, dtype::f64, dtype::f16, dtype::bf16};
  r.add({.op = "DFT", .since_version = 17, .dtypes = ft, .make = cuda_signal::make_dft});
  // STFT: a window of the signal's type (another runs where the CPU kernel does)
  r.add({.op = "STFT", .since_version = 17, .dtypes = ft, .make = cuda_signal::make_stft, .applies = [](const kernel_query& q) {
           return q.inputs.size() < 3 || q.inputs[2] == dtype::undefined || q.inputs[2] == q.inputs[0];
         }});
}

}  // namespace gpass::exec
