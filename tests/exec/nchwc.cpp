// SPDX-License-Identifier: Apache-2.0
// Tests of the channel-blocked (NCHWc) f32 kernels (kernels/nchwc.hpp): every kernel set this
// processor runs (AVX-512, AVX2, portable, both block sizes) against a double-precision NCHW
// reference, on ragged shapes (channels not multiples of the block, planes narrower than a
// register tile, asymmetric pads, strides, dilations, groups) drawn from a fixed seed.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <gpass/exec/eigen_cpu/kernels/nchwc.hpp>

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_exec_nchwc {

namespace {

namespace nc = gpass::exec::cpu_detail::nchwc;
using i64 = std::int64_t;
constexpr float inf = std::numeric_limits<float>::infinity();

std::vector<float> random_values(i64 n, std::mt19937& rng) {
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = d(rng);
  return v;
}

i64 out_size(i64 in, i64 pb, i64 pe, i64 k, i64 d, i64 s) {
  const i64 span = in + pb + pe - (k - 1) * d - 1;
  return span < 0 ? 0 : span / s + 1;
}

std::string describe(const nc::geometry& g) {
  std::ostringstream o;
  o << "N" << g.N << " C" << g.C << " " << g.H << "x" << g.W << " -> M" << g.M << " " << g.OH << "x" << g.OW << " k"
    << g.KH << "x" << g.KW << " s" << g.sh << "," << g.sw << " d" << g.dh << "," << g.dw << " p" << g.pt << "," << g.pl
    << "," << g.pb << "," << g.pr << " G" << g.G;
  return o.str();
}

/// y (NCHW, double) of a convolution, bias added, then + z and clamped.
std::vector<double> reference_conv(const nc::geometry& g, const std::vector<float>& x, const std::vector<float>& w,
                                   const std::vector<float>& bias, const std::vector<float>* z, float lo, float hi,
                                   std::vector<double>* magnitude) {
  const i64 Cg = g.C / g.G, Mg = g.M / g.G;
  std::vector<double> y(static_cast<std::size_t>(g.N * g.M * g.OH * g.OW));
  magnitude->assign(y.size(), 0.0);
  for (i64 n = 0; n < g.N; ++n)
    for (i64 m = 0; m < g.M; ++m)
      for (i64 oh = 0; oh < g.OH; ++oh)
        for (i64 ow = 0; ow < g.OW; ++ow) {
          double s = bias[static_cast<std::size_t>(m)], mag = std::abs(s);
          const i64 grp = m / Mg;
          for (i64 c = 0; c < Cg; ++c)
            for (i64 kh = 0; kh < g.KH; ++kh)
              for (i64 kw = 0; kw < g.KW; ++kw) {
                const i64 ih = oh * g.sh - g.pt + kh * g.dh, iw = ow * g.sw - g.pl + kw * g.dw;
                if (ih < 0 || ih >= g.H || iw < 0 || iw >= g.W) continue;
                const double t = static_cast<double>(x[static_cast<std::size_t>(((n * g.C + grp * Cg + c) * g.H + ih) * g.W + iw)]) *
                                 w[static_cast<std::size_t>(((m * Cg + c) * g.KH + kh) * g.KW + kw)];
                s += t;
                mag += std::abs(t);
              }
          const std::size_t i = static_cast<std::size_t>(((n * g.M + m) * g.OH + oh) * g.OW + ow);
          if (z) s += (*z)[i];
          y[i] = std::clamp(s, static_cast<double>(lo), static_cast<double>(hi));
          (*magnitude)[i] = mag + (z ? std::abs((*z)[i]) : 0.0);
        }
  return y;
}

void compare(const std::vector<float>& got, const std::vector<double>& want, const std::vector<double>& mag,
             const std::string& what) {
  REQUIRE(got.size() == want.size());
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < want.size(); ++i)
    if (!(got[i] == want[i] || std::abs(got[i] - want[i]) <= 1e-5 * (1.0 + mag[i]))) {  // == : a max over no tap, -inf
      if (!bad) first = i;
      ++bad;
    }
  INFO(what << ": " << bad << " wrong values, first at " << first << " (got "
            << (bad ? got[first] : 0.f) << ", want " << (bad ? want[first] : 0.0) << ")");
  CHECK(bad == 0);
}

/// Runs every task of a kernel in two ranges (as two threads would).
template <class Fn, class Args>
void run_tasks(Fn fn, const Args& a, i64 tasks) {
  const i64 half = tasks / 2;
  fn(a, 0, half);
  fn(a, half, tasks);
}

struct conv_case {
  nc::geometry g;
  nc::conv_input in = nc::conv_input::blocked;
  bool depthwise = false;
  bool residual = false;
  float lo = -inf, hi = inf;
  i64 segment = 0;  ///< the tasks' runs of pixels (blocked input); 0: one of check_conv's at random
};

/// A random convolution; `kind` 0: one group, 1: groups of whole blocks, 2: depthwise,
/// 3: NCHW input, 4: pointwise (1x1, stride 1, no pads).
conv_case random_conv(std::mt19937& rng, i64 b, int kind) {
  auto pick = [&](std::initializer_list<i64> v) {
    return *(v.begin() + std::uniform_int_distribution<std::size_t>(0, v.size() - 1)(rng));
  };
  conv_case c;
  nc::geometry& g = c.g;
  for (;;) {
    g.N = pick({1, 1, 2});
    g.H = pick({1, 2, 3, 5, 7, 8, 13, 17});
    g.W = pick({1, 2, 3, 5, 7, 9, 14, 19, 23});
    g.KH = pick({1, 1, 2, 3, 3, 5, 7});
    g.KW = pick({1, 1, 2, 3, 3, 5, 7});
    g.sh = pick({1, 1, 2, 3});
    g.sw = pick({1, 1, 2, 3});
    g.dh = pick({1, 1, 1, 2});
    g.dw = pick({1, 1, 1, 2});
    g.pt = pick({0, 0, 1, 2, 3});
    g.pl = pick({0, 0, 1, 2, 3});
    g.pb = pick({0, 0, 1, 2, 3});
    g.pr = pick({0, 0, 1, 2, 4});
    g.G = 1;
    switch (kind) {
      case 0:
        g.C = pick({1, 3, 5, 8, 16, 17, 24, 33});
        g.M = pick({1, 5, 8, 16, 19, 32, 40, 70});
        break;
      case 1:
        g.G = pick({2, 3});
        g.C = g.G * b * pick({1, 2});
        g.M = g.G * b * pick({1, 2, 3});
        break;
      case 2:
        g.C = g.M = g.G = pick({1, 3, 8, 16, 17, 35});
        c.depthwise = g.G > 1;
        break;
      case 3:
        g.C = pick({1, 2, 3, 4});
        g.M = pick({5, 8, 16, 24, 40});
        c.in = nc::conv_input::nchw;
        break;
      default:
        g.C = pick({1, 3, 16, 17, 40});
        g.M = pick({1, 8, 24, 33, 70});
        g.KH = g.KW = g.sh = g.sw = g.dh = g.dw = 1;
        g.pt = g.pl = g.pb = g.pr = 0;
        break;
    }
    g.OH = out_size(g.H, g.pt, g.pb, g.KH, g.dh, g.sh);
    g.OW = out_size(g.W, g.pl, g.pr, g.KW, g.dw, g.sw);
    if (g.OH > 0 && g.OW > 0) break;
  }
  c.residual = pick({0, 1}) == 1;
  switch (pick({0, 1, 2})) {
    case 1:
      c.lo = 0;
      break;
    case 2:
      c.lo = 0;
      c.hi = 0.5f;
      break;
    default:
      break;
  }
  return c;
}

void check_conv(const nc::kernel_set& k, const conv_case& c, std::mt19937& rng) {
  const nc::geometry& g = c.g;
  const i64 b = k.b;
  INFO(k.name << " b" << b << " " << describe(g) << (c.depthwise ? " depthwise" : "")
              << (c.in == nc::conv_input::nchw ? " nchw input" : "") << (c.residual ? " +z" : "") << " clamp [" << c.lo
              << ", " << c.hi << "]");
  const i64 Cg = g.C / g.G;
  const auto x = random_values(g.N * g.C * g.H * g.W, rng);
  const auto w = random_values(g.M * Cg * g.KH * g.KW, rng);
  const auto bias = random_values(g.M, rng);
  const auto z = random_values(g.N * g.M * g.OH * g.OW, rng);
  std::vector<double> mag;
  const auto want = reference_conv(g, x, w, bias, c.residual ? &z : nullptr, c.lo, c.hi, &mag);

  const i64 Cb = nc::blocks(g.C, b), Mb = nc::blocks(g.M, b);
  std::vector<float> xb(static_cast<std::size_t>(g.N * Cb * g.H * g.W * b));
  if (c.in == nc::conv_input::blocked) nc::to_blocked(x.data(), g.N, g.C, g.H * g.W, b, false, xb.data());
  std::vector<float> zb(static_cast<std::size_t>(g.N * Mb * g.OH * g.OW * b));
  nc::to_blocked(z.data(), g.N, g.M, g.OH * g.OW, b, false, zb.data());
  const auto wp = c.depthwise ? nc::pack_depthwise_filter(w.data(), g, b) : nc::pack_filter(w.data(), g, b, c.in);
  const auto bp = nc::pack_bias(bias.data(), g.M, b);
  // the output starts as NaN: every value the kernel owes must be written
  std::vector<float> yb(static_cast<std::size_t>(g.N * Mb * g.OH * g.OW * b), std::numeric_limits<float>::quiet_NaN());
  nc::conv_args a;
  a.g = g;
  a.in = c.in;
  a.x = c.in == nc::conv_input::blocked ? xb.data() : x.data();
  a.w = wp.data();
  a.bias = bp.data();
  a.y = yb.data();
  a.step = {c.residual ? zb.data() : nullptr, c.lo, c.hi};
  // tasks of any run of pixels (the kernel's own, fewer for threads, odd ones)
  const i64 segments[] = {nc::conv_segment, nc::conv_segment_for(g, k, 4), 12, 5};
  const i64 segment = segments[std::uniform_int_distribution<int>(0, 3)(rng)];
  a.segment = c.segment > 0 ? c.segment : segment;
  if (c.depthwise) {
    REQUIRE(nc::depthwise_supported(g));
    run_tasks(k.conv_depthwise, a, nc::depthwise_tasks(a, k));
  } else if (c.in == nc::conv_input::blocked && std::uniform_int_distribution<int>(0, 2)(rng) == 0) {
    // the sums split by input blocks at a random cut (as nc::input_split runs them): two
    // partial outputs, the second without the bias, added with the residual and the clamp
    REQUIRE(nc::conv_supported(g, b, c.in));
    const i64 nb = nc::blocks(Cg, b), cut = std::uniform_int_distribution<i64>(0, nb)(rng);
    INFO("input blocks split at " << cut << " of " << nb);
    const auto no_bias = nc::pack_bias(nullptr, g.M, b);
    std::vector<float> part(yb.size(), std::numeric_limits<float>::quiet_NaN());
    nc::conv_args a0 = a, a1 = a;
    a0.ib0 = 0;
    a0.ib1 = cut;
    a1.ib0 = cut;
    a1.ib1 = nb;
    a0.step = a1.step = nc::output_step{};
    a1.y = part.data();
    a1.bias = no_bias.data();
    run_tasks(k.conv, a0, nc::conv_tasks(a0, k));
    run_tasks(k.conv, a1, nc::conv_tasks(a1, k));
    for (std::size_t i = 0; i < yb.size(); ++i) {
      const float v = yb[i] + part[i] + (c.residual ? zb[i] : 0.0f);
      yb[i] = std::min(c.hi, std::max(c.lo, v));
    }
  } else {
    REQUIRE(nc::conv_supported(g, b, c.in));
    run_tasks(k.conv, a, nc::conv_tasks(a, k));
  }
  std::vector<float> y(want.size());
  nc::from_blocked(yb.data(), g.N, g.M, g.OH * g.OW, b, false, y.data());
  compare(y, want, mag, "conv");
}

}  // namespace

TEST_CASE("exec.nchwc.reorders_round_trip") {
  std::mt19937 rng(7);
  for (const i64 b : {8, 16})
    for (const i64 C : {1, 7, 8, 9, 16, 33})
      for (const i64 S : {1, 5, 64, 65, 130})
        for (const bool nhwc : {false, true}) {
          INFO("b" << b << " C" << C << " S" << S << (nhwc ? " nhwc" : " nchw"));
          const i64 N = 2, Cb = nc::blocks(C, b);
          const auto x = random_values(N * C * S, rng);
          std::vector<float> yb(static_cast<std::size_t>(N * Cb * S * b), 1.0f), back(x.size());
          nc::to_blocked(x.data(), N, C, S, b, nhwc, yb.data());
          // element (n, c, s) of the blocked tensor
          bool placed = true, zero_past = true;
          for (i64 n = 0; n < N; ++n)
            for (i64 cb = 0; cb < Cb; ++cb)
              for (i64 s = 0; s < S; ++s)
                for (i64 l = 0; l < b; ++l) {
                  const float v = yb[static_cast<std::size_t>(((n * Cb + cb) * S + s) * b + l)];
                  const i64 ch = cb * b + l;
                  if (ch >= C) {
                    zero_past = zero_past && v == 0.0f;
                    continue;
                  }
                  const i64 src = nhwc ? (n * S + s) * C + ch : (n * C + ch) * S + s;
                  placed = placed && v == x[static_cast<std::size_t>(src)];
                }
          CHECK(placed);
          CHECK(zero_past);
          nc::from_blocked(yb.data(), N, C, S, b, nhwc, back.data());
          CHECK(back == x);
        }
}

TEST_CASE("exec.nchwc.conv_segment_for_threads") {
  const nc::kernel_set& k = nc::kernels_for(16);
  nc::geometry g;
  g.N = 1;
  g.C = 960;
  g.M = 160;  // ResNet's / MobileNet's last layers: a 7x7 plane, few output chunks
  g.H = g.W = g.OH = g.OW = 7;
  g.KH = g.KW = g.sh = g.sw = g.dh = g.dw = 1;
  CHECK(nc::conv_segment_for(g, k, 1) == nc::conv_segment);
  for (const int threads : {2, 4, 8}) {
    CAPTURE(threads);
    nc::conv_args a;
    a.g = g;
    a.segment = nc::conv_segment_for(g, k, threads);
    CHECK(a.segment >= 12);
    CHECK(a.segment < nc::conv_segment);
    // as many tasks as wanted, or the plane cut into runs of 12 pixels or more
    const i64 runs = nc::blocks(49, a.segment), last = 49 - (runs - 1) * a.segment;
    CHECK((nc::conv_tasks(a, k) >= 8 * threads || runs == 49 / 12));
    CHECK(last >= a.segment - runs);  // runs of even lengths (no 1-pixel remainder)
  }
  g.H = g.W = g.OH = g.OW = 56;  // a large plane has tasks enough
  CHECK(nc::conv_segment_for(g, k, 2) == nc::conv_segment);
}

TEST_CASE("exec.nchwc.conv_segment_for_prefetched_filters") {
  // ResNet50's last stage at batch 1: 7x7 planes, filters past conv_prefetch_bytes, 8 chunks
  // of output blocks. On 2 threads each chunk takes the whole plane (49 pixels, a run long
  // enough to prefetch the filter's slices), 4 tasks a thread, not 16 runs of 25 and 24.
  const nc::kernel_set& k = nc::kernels_for(16);
  nc::geometry g;
  g.N = 1;
  g.C = g.M = 512;
  g.H = g.W = g.OH = g.OW = 7;
  g.KH = g.KW = 3;
  g.pt = g.pl = g.pb = g.pr = 1;
  g.sh = g.sw = g.dh = g.dw = 1;
  REQUIRE(nc::conv_prefetches_filter(g, k.b, k.conv_f));
  const i64 units = nc::conv_units(g, k);
  for (const int threads : {2, 3, 4, 8}) {
    CAPTURE(threads);
    nc::conv_args a;
    a.g = g;
    a.segment = nc::conv_segment_for(g, k, threads);
    if (units >= 2 * threads) {
      CHECK(a.segment == 49);
      CHECK(nc::conv_tasks(a, k) == units);
    } else {
      CHECK(a.segment < 49);  // too few chunks for the threads: the plane is cut
    }
  }
  // the 1x1 2048 -> 512 (4 MB) too; 960 -> 160 (0.6 MB, from L2) is cut as before: only
  // where its chunks (as many as this ISA's kernels make) are fewer than 8 tasks a thread
  g.C = 2048;
  g.KH = g.KW = 1;
  g.pt = g.pl = g.pb = g.pr = 0;
  CHECK(nc::conv_prefetches_filter(g, k.b, k.conv_f));
  CHECK(nc::conv_segment_for(g, k, 2) == 49);
  g.C = 960;
  g.M = 160;
  CHECK(!nc::conv_prefetches_filter(g, k.b, k.conv_f));
  CHECK((nc::conv_segment_for(g, k, 2) == 49) == (nc::conv_units(g, k) >= 8 * 2));
  // a 3x3 filter under conv_prefetch_bytes (256 channels: 2.4 MB) is cut as before
  g.C = g.M = 256;
  g.KH = g.KW = 3;
  g.pt = g.pl = g.pb = g.pr = 1;
  CHECK(!nc::conv_prefetches_filter(g, k.b, k.conv_f));
  CHECK((nc::conv_segment_for(g, k, 2) == 49) == (nc::conv_units(g, k) >= 8 * 2));
  // the input blocks a task sums decide the passes: a filter in one pass does not prefetch
  g.C = g.M = 512;
  CHECK(nc::conv_prefetches_filter(g, k.b, k.conv_f, -1));
  CHECK(!nc::conv_prefetches_filter(g, k.b, k.conv_f, 1));
}

/// The work of conv task `t` (see nchwc's conv task order), task by task: its output blocks
/// times its pixels.
i64 reference_task_work(const nc::conv_args& a, const nc::kernel_set& k, i64 t) {
  const nc::geometry& g = a.g;
  const i64 rows = nc::conv_rows(g, a.in, a.segment);
  const i64 gb = nc::conv_group_blocks(g, k.b), chunks = std::max<i64>(nc::blocks(gb, k.conv_f), 1);
  const i64 row = t % rows, ch = (t / rows) % chunks;
  const i64 f = (ch + 1) * gb / chunks - ch * gb / chunks;
  const i64 pixels = a.in == nc::conv_input::blocked ? std::min(g.OH * g.OW, (row + 1) * a.segment) - row * a.segment : g.OW;
  return f * pixels;
}

/// nc::conv_balanced_bounds' rule walked task by task: `parts` contiguous ranges of [0, n), a
/// task in the part its work's middle falls in.
template <class Work>
std::vector<i64> reference_bounds(i64 n, i64 parts, Work&& work) {
  std::vector<i64> bounds(static_cast<std::size_t>(parts + 1), n);
  bounds[0] = 0;
  double total = 0;
  for (i64 t = 0; t < n; ++t) total += static_cast<double>(work(t));
  double done = 0;
  i64 t = 0;
  for (i64 p = 1; p < parts; ++p) {
    const double target = total * static_cast<double>(p) / static_cast<double>(parts);
    for (; t < n; ++t) {
      const double w = static_cast<double>(work(t));
      if (done + w / 2 > target) break;
      done += w;
    }
    bounds[static_cast<std::size_t>(p)] = t;
  }
  return bounds;
}

TEST_CASE("exec.nchwc.conv_tasks_shared_by_work") {
  const nc::kernel_set& k = nc::kernels_for(16);
  struct shape {
    i64 C, M, H, KH, N = 1, G = 1;
    nc::conv_input in = nc::conv_input::blocked;
  };
  // MobileNetV2's 14x14 expansion (9 chunks x 3 runs), its 7x7 projection (10 output blocks:
  // chunks 3 + 3 + 4), a 28x28 one, ragged channels, a 3x3 layer; batches, groups of 3 x 5
  // blocks, NCHW input (rows of the output)
  const shape shapes[] = {{96, 576, 14, 1},     {960, 160, 7, 1},     {32, 192, 28, 1},
                          {40, 200, 9, 1},      {64, 96, 13, 3},      {16, 16, 3, 1},
                          {40, 200, 9, 1, 3},   {96, 240, 10, 3, 2, 3}, {3, 40, 11, 3, 2, 1, nc::conv_input::nchw}};
  for (const shape& sh : shapes)
    for (const int threads : {2, 3, 4, 8}) {
      CAPTURE(sh.C);
      CAPTURE(sh.M);
      CAPTURE(sh.H);
      CAPTURE(sh.N);
      CAPTURE(sh.G);
      CAPTURE(threads);
      nc::geometry g;
      g.N = sh.N;
      g.G = sh.G;
      g.C = sh.C;
      g.M = sh.M;
      g.H = g.W = g.OH = g.OW = sh.H;
      g.KH = g.KW = sh.KH;
      g.pt = g.pl = g.pb = g.pr = sh.KH / 2;
      g.sh = g.sw = g.dh = g.dw = 1;
      nc::conv_args a;
      a.g = g;
      a.in = sh.in;
      a.segment = nc::conv_segment_for(g, k, threads);
      const i64 plane = sh.H * sh.H, runs = nc::blocks(plane, a.segment);
      CHECK(a.segment <= nc::conv_segment);
      CHECK(plane - (runs - 1) * a.segment >= a.segment - runs);  // runs of even lengths
      const i64 n = nc::conv_tasks(a, k);
      // the work of the tasks is every output block's every pixel once
      i64 all = 0, largest = 0;
      for (i64 t = 0; t < n; ++t) {
        const i64 w = reference_task_work(a, k, t);
        CHECK(w > 0);
        all += w;
        largest = std::max(largest, w);
      }
      CHECK(all == sh.N * nc::blocks(sh.M, 16) * plane);
      const std::vector<i64> bounds = nc::conv_balanced_bounds(a, k, threads);
      // the same bounds as walking the tasks one by one
      CHECK(bounds == reference_bounds(n, threads, [&](i64 t) { return reference_task_work(a, k, t); }));
      REQUIRE(bounds.size() == static_cast<std::size_t>(threads + 1));
      CHECK(bounds.front() == 0);
      CHECK(bounds.back() == n);
      for (int p = 0; p < threads; ++p) {
        CAPTURE(p);
        REQUIRE(bounds[p] <= bounds[p + 1]);
        i64 part = 0;
        for (i64 t = bounds[p]; t < bounds[p + 1]; ++t) part += reference_task_work(a, k, t);
        // each part within half a task of its share, at both of its ends
        CHECK(std::abs(static_cast<double>(part) - static_cast<double>(all) / threads) <= static_cast<double>(largest) + 1e-9);
      }
    }
  // the reference's rule: no work, one part gets nothing and the bounds still cover the
  // tasks; a task goes where its middle falls
  const std::vector<i64> none = reference_bounds(5, 3, [](i64) { return 0; });
  CHECK(none == std::vector<i64>{0, 5, 5, 5});
  CHECK(reference_bounds(4, 2, [](i64 t) { return t == 0 ? 3 : 1; }) == std::vector<i64>{0, 1, 4});
}

TEST_CASE("exec.nchwc.input_split_where") {
  const nc::kernel_set& k = nc::kernels_for(16);
  nc::conv_args a;
  nc::geometry& g = a.g;
  g.N = 1;
  g.C = 576;
  g.M = 96;  // MobileNetV2's 14x14 projection
  g.H = g.W = g.OH = g.OW = 14;
  g.KH = g.KW = g.sh = g.sw = g.dh = g.dw = 1;
  CHECK(nc::input_split(a, k, 2));
  CHECK(nc::input_split(a, k, 4));
  CHECK_FALSE(nc::input_split(a, k, 1));  // one thread: nothing to split
  g.M = 576;
  g.C = 96;  // an expansion: output blocks are the larger side
  CHECK_FALSE(nc::input_split(a, k, 2));
  g.C = 576;
  g.M = 96;
  g.H = g.W = g.OH = g.OW = 28;  // a large plane: threads have output work enough
  CHECK_FALSE(nc::input_split(a, k, 2));
  g.H = g.W = g.OH = g.OW = 14;
  g.N = 2;  // batches split by images elsewhere
  CHECK_FALSE(nc::input_split(a, k, 2));
  g.N = 1;
  g.KH = g.KW = 3;  // not pointwise
  g.pt = g.pl = g.pb = g.pr = 1;
  CHECK_FALSE(nc::input_split(a, k, 2));
  g.KH = g.KW = 1;
  g.pt = g.pl = g.pb = g.pr = 0;
  a.in = nc::conv_input::nchw;
  CHECK_FALSE(nc::input_split(a, k, 2));
  a.in = nc::conv_input::blocked;
  g.C = 80;
  g.M = 16;  // 5 input blocks: 2 a thread or more on 2 threads, not on 3
  CHECK(nc::input_split(a, k, 2));
  CHECK_FALSE(nc::input_split(a, k, 3));
  g.C = 576;
  g.M = 160;  // 36 input blocks for 10 output blocks: too few
  CHECK_FALSE(nc::input_split(a, k, 2));
}

TEST_CASE("exec.nchwc.subsample_first_where") {
  const nc::kernel_set& k = nc::kernels_for(16);
  nc::geometry g;
  g.C = 256;
  g.M = 512;  // ResNet50's conv3_block1 shortcut, 1x1 / 2 over 56x56
  g.H = g.W = 56;
  g.OH = g.OW = 28;
  g.sh = g.sw = 2;
  CHECK(nc::subsample_first(g, nc::conv_input::blocked, k));
  CHECK_FALSE(nc::subsample_first(g, nc::conv_input::nchw, k));
  g.sw = 1;  // a stride along one axis is enough
  g.OW = 56;
  CHECK(nc::subsample_first(g, nc::conv_input::blocked, k));
  g.sh = 1;  // stride 1: pointwise already
  g.OH = 56;
  CHECK_FALSE(nc::subsample_first(g, nc::conv_input::blocked, k));
  g.sh = g.sw = 2;
  g.OH = g.OW = 28;
  g.M = k.b * k.conv_f;  // one chunk of output blocks: the input read once anyway
  CHECK_FALSE(nc::subsample_first(g, nc::conv_input::blocked, k));
  g.M = 512;
  g.pt = g.pl = g.pb = g.pr = 1;  // pads: pixels reading zeros
  g.OH = g.OW = 29;
  CHECK_FALSE(nc::subsample_first(g, nc::conv_input::blocked, k));
  g.pt = g.pl = g.pb = g.pr = 0;
  g.KH = g.KW = 3;  // not pointwise
  g.OH = g.OW = 27;
  CHECK_FALSE(nc::subsample_first(g, nc::conv_input::blocked, k));
}

TEST_CASE("exec.nchwc.subsample_picks_the_strided_pixels") {
  for (const i64 b : {8, 16}) {
    nc::geometry g;
    g.N = 2;
    g.C = 3 * b;
    g.H = 7;
    g.W = 9;
    g.sh = 2;
    g.sw = 3;
    g.OH = 4;
    g.OW = 3;
    const i64 Cb = 3;
    std::vector<float> x(static_cast<std::size_t>(g.N * Cb * g.H * g.W * b));
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i);
    std::vector<float> y(static_cast<std::size_t>(g.N * Cb * g.OH * g.OW * b), -1.0f);
    const i64 rows = g.N * Cb * g.OH;
    nc::subsample(x.data(), g, b, y.data(), 0, rows / 2);  // in two ranges of tasks
    nc::subsample(x.data(), g, b, y.data(), rows / 2, rows);
    i64 bad = 0;
    for (i64 p = 0; p < g.N * Cb; ++p)
      for (i64 oh = 0; oh < g.OH; ++oh)
        for (i64 ow = 0; ow < g.OW; ++ow)
          for (i64 l = 0; l < b; ++l) {
            const float want = x[static_cast<std::size_t>(((p * g.H + oh * g.sh) * g.W + ow * g.sw) * b + l)];
            if (y[static_cast<std::size_t>(((p * g.OH + oh) * g.OW + ow) * b + l)] != want) ++bad;
          }
    CHECK(bad == 0);
  }
}

TEST_CASE("exec.nchwc.geometry_helpers") {
  // taps k of K = 3, dilation 2 at start -3 inside [0, 4): positions -3, -1, 1 -> only k = 2
  CHECK(nc::taps_inside(-3, 3, 2, 4).lo == 2);
  CHECK(nc::taps_inside(-3, 3, 2, 4).hi == 3);
  // nothing inside: empty range
  const auto none = nc::taps_inside(5, 3, 1, 4);
  CHECK(none.lo == none.hi);
  const auto before = nc::taps_inside(-9, 3, 1, 4);
  CHECK(before.lo == before.hi);
  // interior of 3 taps, pad 1, stride 1, width 5, output 5: outputs 1..3
  CHECK(nc::interior(1, 1, 3, 1, 5, 5).lo == 1);
  CHECK(nc::interior(1, 1, 3, 1, 5, 5).hi == 4);
  // a kernel wider than the input: no interior
  const auto wide = nc::interior(1, 3, 7, 1, 2, 2);
  CHECK(wide.lo == wide.hi);
}

TEST_CASE("exec.nchwc.pixel_walk") {
  // every pixel once, the rectangles in order; the interior's pixels read every tap inside
  std::mt19937 rng(5);
  auto pick = [&](i64 lo, i64 hi) { return std::uniform_int_distribution<i64>(lo, hi)(rng); };
  for (int i = 0; i < 2000; ++i) {
    nc::geometry g{.N = 1, .C = 16, .H = pick(1, 20), .W = pick(1, 20), .M = 16, .KH = pick(1, 7), .KW = pick(1, 7),
                   .sh = pick(1, 3), .sw = pick(1, 3), .dh = pick(1, 2), .dw = pick(1, 2), .pt = pick(0, 3),
                   .pl = pick(0, 3), .pb = pick(0, 3), .pr = pick(0, 3)};
    g.OH = out_size(g.H, g.pt, g.pb, g.KH, g.dh, g.sh);
    g.OW = out_size(g.W, g.pl, g.pr, g.KW, g.dw, g.sw);
    if (g.OH <= 0 || g.OW <= 0) continue;
    INFO(describe(g));
    const nc::pixel_walk walk(g);
    std::vector<int> seen(static_cast<std::size_t>(g.OH * g.OW), 0);
    i64 at = 0;
    for (int r = 0; r < walk.count; ++r) {
      const auto& rc = walk.rects[static_cast<std::size_t>(r)];
      CHECK(rc.begin == at);
      CHECK(rc.end() > rc.begin);
      for (i64 q = rc.begin; q < rc.end(); ++q) ++seen[static_cast<std::size_t>(rc.pixel(q, g.OW))];
      at = rc.end();
    }
    CHECK(at == g.OH * g.OW);
    CHECK(std::count(seen.begin(), seen.end(), 1) == g.OH * g.OW);
    // a rectangle of some columns only (sides apart) has every row tap inside; the one
    // between the sides every tap
    const auto cols_in = nc::interior(g.sw, g.pl, g.KW, g.dw, g.W, g.OW);
    for (int r = 0; r < walk.count; ++r) {
      const auto& rc = walk.rects[static_cast<std::size_t>(r)];
      if (rc.c0 == 0 && rc.c1 == g.OW) continue;
      const bool middle = rc.c0 == cols_in.lo && rc.c1 == cols_in.hi;
      for (i64 oh = rc.r0; oh < rc.r1; ++oh)
        for (i64 ow = rc.c0; ow < rc.c1; ++ow) {
          const auto rows = nc::taps_inside(oh * g.sh - g.pt, g.KH, g.dh, g.H);
          const auto cols = nc::taps_inside(ow * g.sw - g.pl, g.KW, g.dw, g.W);
          CHECK(rows.hi - rows.lo == g.KH);
          if (middle) CHECK(cols.hi - cols.lo == g.KW);
        }
    }
  }
  // ResNet50's 3x3 over 7x7, pad 1: the top row, the left column, the 5x5 interior, the right
  // column, the bottom row
  nc::geometry g{.N = 1, .C = 512, .H = 7, .W = 7, .M = 512, .OH = 7, .OW = 7, .KH = 3, .KW = 3, .pt = 1, .pl = 1,
                 .pb = 1, .pr = 1};
  const nc::pixel_walk walk(g);
  REQUIRE(walk.count == 5);
  CHECK(walk.rects[0].end() == 7);
  CHECK(walk.rects[1].c1 == 1);
  CHECK((walk.rects[2].r0 == 1 && walk.rects[2].r1 == 6 && walk.rects[2].c0 == 1 && walk.rects[2].c1 == 6));
  CHECK(walk.rects[2].pixel(walk.rects[2].begin, 7) == 8);
  CHECK(walk.rects[4].begin == 42);
  // pointwise, no pads: the plane in order
  g.KH = g.KW = 1;
  g.pt = g.pl = g.pb = g.pr = 0;
  const nc::pixel_walk flat(g);
  REQUIRE(flat.count == 1);
  CHECK(flat.rects[0].pixel(20, 7) == 20);
  // 3x3 over 3x3: one pixel each side, too few to walk apart
  g.H = g.W = g.OH = g.OW = 3;
  g.KH = g.KW = 3;
  g.pt = g.pl = g.pb = g.pr = 1;
  CHECK(nc::pixel_walk(g).count == 3);
  // 3x3 / 2 over 14x14 padded at the bottom and right only (SAME_UPPER): no top rows, no left
  // columns; the interior, then the right column, then the bottom row
  g.H = g.W = 14;
  g.OH = g.OW = 7;
  g.sh = g.sw = 2;
  g.pt = g.pl = 0;
  const nc::pixel_walk upper(g);
  REQUIRE(upper.count == 3);
  CHECK((upper.rects[0].c0 == 0 && upper.rects[0].c1 == 6 && upper.rects[0].r1 == 6));
  CHECK((upper.rects[1].c0 == 6 && upper.rects[1].end() == 42));
  CHECK((upper.rects[2].r0 == 6 && upper.rects[2].end() == 49));
}

TEST_CASE("exec.nchwc.kernel_sets") {
  const auto& all = nc::available_kernels();
  REQUIRE(all.size() >= 2);
  bool g8 = false, g16 = false;
  for (const auto& k : all) {
    g8 = g8 || (k.name == "generic" && k.b == 8);
    g16 = g16 || (k.name == "generic" && k.b == 16);
    CHECK(k.conv_f >= 1);
  }
  CHECK(g8);
  CHECK(g16);
  CHECK(nc::kernels_for(8).b == 8);
  CHECK(nc::kernels_for(16).b == 16);
  const i64 pb = nc::preferred_block();
  CHECK((pb == 8 || pb == 16));
}

TEST_CASE("exec.nchwc.conv_matches_the_reference") {
  for (const auto& k : nc::available_kernels()) {
    std::mt19937 rng(1234);
    for (int kind = 0; kind < 5; ++kind)
      for (int i = 0; i < 40; ++i) {
        const conv_case c = random_conv(rng, k.b, kind);
        check_conv(k, c, rng);
      }
  }
}

TEST_CASE("exec.nchwc.conv_shapes_of_real_networks") {
  // stems, 3x3 / 1x1 / strided / dilated layers and depthwise layers as CNNs have them, with
  // planes the register tiles do not divide
  struct shape {
    i64 C, M, H, W, K, s, d, p, G;
    nc::conv_input in;
  };
  const std::vector<shape> shapes = {
      {3, 32, 23, 23, 3, 2, 1, 1, 1, nc::conv_input::nchw},     // MobileNet stem
      {3, 64, 29, 29, 7, 2, 1, 3, 1, nc::conv_input::nchw},     // ResNet stem
      {32, 32, 12, 12, 3, 1, 1, 1, 32, nc::conv_input::blocked},  // depthwise
      {96, 96, 12, 12, 3, 2, 1, 1, 96, nc::conv_input::blocked},  // depthwise, stride 2
      {32, 16, 12, 12, 1, 1, 1, 0, 1, nc::conv_input::blocked},   // project
      {24, 144, 7, 7, 1, 1, 1, 0, 1, nc::conv_input::blocked},    // expand
      {64, 64, 14, 14, 3, 1, 1, 1, 1, nc::conv_input::blocked},   // ResNet 3x3
      {64, 128, 14, 14, 3, 2, 1, 1, 1, nc::conv_input::blocked},  // downsample
      {64, 256, 9, 9, 1, 2, 1, 0, 1, nc::conv_input::blocked},    // projection shortcut
      {64, 64, 9, 9, 3, 1, 2, 2, 1, nc::conv_input::blocked},     // dilated (DeepLab)
      {300, 40, 7, 7, 1, 1, 1, 0, 1, nc::conv_input::blocked},    // 1x1 over many input blocks: passes of them
      {70, 48, 5, 5, 3, 1, 1, 1, 1, nc::conv_input::blocked},     // 3x3, a ragged last input block
      {200, 40, 6, 5, 3, 1, 1, 1, 1, nc::conv_input::blocked},    // 3x3 over 13 blocks of 16: 4 passes
      {520, 24, 5, 6, 1, 1, 1, 0, 1, nc::conv_input::blocked},    // 1x1 over 33 blocks of 16: 5 passes
      {300, 40, 9, 9, 1, 2, 1, 0, 1, nc::conv_input::blocked},    // 1x1 / 2 over many blocks: one pass
      {64, 96, 6, 6, 3, 1, 1, 1, 2, nc::conv_input::blocked},     // two groups of whole blocks, passes in each
      {128, 128, 6, 6, 3, 1, 1, 1, 32, nc::conv_input::blocked},  // ResNeXt groups of 4: not blocked-supported
  };
  for (const auto& k : nc::available_kernels()) {
    std::mt19937 rng(99);
    for (const shape& s : shapes) {
      conv_case c;
      c.g = {.N = 1, .C = s.C, .H = s.H, .W = s.W, .M = s.M, .KH = s.K, .KW = s.K, .sh = s.s, .sw = s.s, .dh = s.d,
             .dw = s.d, .pt = s.p, .pl = s.p, .pb = s.p, .pr = s.p, .G = s.G};
      c.g.OH = out_size(s.H, s.p, s.p, s.K, s.d, s.s);
      c.g.OW = out_size(s.W, s.p, s.p, s.K, s.d, s.s);
      c.in = s.in;
      c.depthwise = nc::depthwise_supported(c.g);
      c.lo = 0;
      c.hi = 6;
      c.residual = s.K == 1;
      if (!c.depthwise && !nc::conv_supported(c.g, k.b, c.in)) {
        CHECK(s.G == 32);  // groups of 4 channels: left to the NCHW kernels
        continue;
      }
      check_conv(k, c, rng);
    }
  }
  // filters past nchwc::conv_prefetch_bytes in tasks of conv_segment pixels over a 7x7 plane
  // (49, at least conv_prefetch_pixels): passes that prefetch the next pass's slice and, the
  // tasks run in two ranges, the next task's first (3.2 and 3.5 MB for blocks of 16)
  for (const auto& k : nc::available_kernels()) {
    std::mt19937 rng(7);
    for (const auto& [C, M, K] : {std::tuple<i64, i64, i64>{2000, 400, 1}, {600, 160, 3}}) {
      conv_case c;
      c.g = {.N = 1, .C = C, .H = 7, .W = 7, .M = M, .OH = 7, .OW = 7, .KH = K, .KW = K, .pt = K / 2, .pl = K / 2,
             .pb = K / 2, .pr = K / 2};
      c.residual = K == 1;
      c.lo = 0;
      c.hi = 6;
      c.segment = nc::conv_segment;
      REQUIRE(7 * 7 >= nc::conv_prefetch_pixels);
      check_conv(k, c, rng);
    }
  }
}

namespace {

/// The Winograd kernel of `k` on geometry g (3x3, stride 1), against the double reference:
/// returns the largest |got - want| / (1 + magnitude) (the direct kernels' bound is 1e-5).
double check_winograd(const nc::kernel_set& k, const nc::geometry& g, bool residual, float lo, float hi, i64 tiles,
                      i64 groups, std::mt19937& rng, i64 tile = 4) {
  const i64 b = k.b;
  INFO(k.name << " b" << b << " winograd F(" << tile << "x" << tile << ", 3x3) " << describe(g) << (residual ? " +z" : "")
              << " clamp [" << lo << ", " << hi << "] tiles/task " << tiles << " groups " << groups);
  REQUIRE(nc::winograd_supported(g, nc::conv_input::blocked));
  const auto x = random_values(g.N * g.C * g.H * g.W, rng);
  const auto w = random_values(g.M * g.C * 9, rng);
  const auto bias = random_values(g.M, rng);
  const auto z = random_values(g.N * g.M * g.OH * g.OW, rng);
  std::vector<double> mag;
  const auto want = reference_conv(g, x, w, bias, residual ? &z : nullptr, lo, hi, &mag);
  const i64 Cb = nc::blocks(g.C, b), Mb = nc::blocks(g.M, b);
  std::vector<float> xb(static_cast<std::size_t>(g.N * Cb * g.H * g.W * b));
  nc::to_blocked(x.data(), g.N, g.C, g.H * g.W, b, false, xb.data());
  std::vector<float> zb(static_cast<std::size_t>(g.N * Mb * g.OH * g.OW * b));
  nc::to_blocked(z.data(), g.N, g.M, g.OH * g.OW, b, false, zb.data());
  const auto wp = nc::pack_winograd_filter(w.data(), g, b, tile);
  const auto bp = nc::pack_bias(bias.data(), g.M, b);
  std::vector<float> yb(static_cast<std::size_t>(g.N * Mb * g.OH * g.OW * b), std::numeric_limits<float>::quiet_NaN());
  nc::conv_args a;
  a.g = g;
  a.x = xb.data();
  a.w = wp.data();
  a.bias = bp.data();
  a.y = yb.data();
  a.step = {residual ? zb.data() : nullptr, lo, hi};
  a.tile = tile;
  a.tiles = tiles;
  a.groups = groups;
  run_tasks(k.winograd, a, nc::winograd_tasks(a));
  std::vector<float> y(want.size());
  nc::from_blocked(yb.data(), g.N, g.M, g.OH * g.OW, b, false, y.data());
  double worst = 0;
  std::size_t bad = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double e = std::abs(y[i] - want[i]) / (1.0 + mag[i]);
    if (!(e <= 1e-5)) ++bad;  // NaN: a value never written
    worst = std::max(worst, e);
  }
  INFO("largest error / (1 + magnitude): " << worst);
  CHECK(bad == 0);
  // the output's channels past M stay as the NaNs they started as? no: the kernel writes
  // every block it owns, zero bias past M (the blocked layout's padding must be finite)
  bool pad_finite = true;
  for (i64 n = 0; n < g.N; ++n)
    for (i64 m = g.M; m < Mb * b; ++m)
      for (i64 p = 0; p < g.OH * g.OW; ++p)
        pad_finite = pad_finite && std::isfinite(yb[static_cast<std::size_t>(((n * Mb + m / b) * g.OH * g.OW + p) * b + m % b)]);
  CHECK(pad_finite);
  return worst;
}

}  // namespace

TEST_CASE("exec.nchwc.winograd_matches_double") {
  // both tile sides (4: F(4x4, 3x3), 2: F(2x2, 3x3)); ragged channels, planes the tiles do not
  // divide (1x1 to 13x11), asymmetric pads (0 to 2 on each side: 'same', 'valid' and wider),
  // tasks of any tile count, both clamps
  for (const i64 tile : {4, 2}) {
    double worst = 0;
    for (const auto& k : nc::available_kernels()) {
      std::mt19937 rng(2468 + static_cast<unsigned>(tile));
      auto pick = [&](std::initializer_list<i64> v) {
        return *(v.begin() + std::uniform_int_distribution<int>(0, static_cast<int>(v.size()) - 1)(rng));
      };
      for (int i = 0; i < 30; ++i) {
        nc::geometry g{.KH = 3, .KW = 3};
        g.N = pick({1, 2});
        g.C = pick({1, 5, 16, 17, 40});
        g.M = pick({1, 8, 20, 33, 70});
        g.H = pick({1, 2, 3, 5, 7, 8, 13});
        g.W = pick({1, 2, 4, 6, 9, 11});
        g.pt = pick({0, 1, 2});
        g.pb = pick({0, 1, 2});
        g.pl = pick({0, 1, 2});
        g.pr = pick({0, 1});
        g.OH = out_size(g.H, g.pt, g.pb, 3, 1, 1);
        g.OW = out_size(g.W, g.pl, g.pr, 3, 1, 1);
        if (g.OH <= 0 || g.OW <= 0) continue;
        // tasks of any tile count and output-block groups (more groups than chunks: empty tasks)
        nc::conv_args split;
        split.g = g;
        split.tile = tile;
        nc::winograd_split(split, k, static_cast<int>(pick({1, 2, 3})));
        i64 tiles = split.tiles, groups = split.groups;
        if (pick({0, 1})) {
          tiles = pick({1, 2, 5, 48, 64});
          groups = pick({1, 2, 3, 7});
        }
        const int clamp = static_cast<int>(pick({0, 1, 2}));
        worst = std::max(worst, check_winograd(k, g, pick({0, 1}) == 1, clamp ? 0.f : -inf, clamp == 2 ? 0.5f : inf,
                                               tiles, groups, rng, tile));
      }
      // a ResNet layer's depth (the products sum 64 to 256 channels), and a 14x14 plane
      for (const i64 C : {64, 256}) {
        const i64 hw = C == 256 ? 14 : 10;
        nc::geometry g{.N = 1, .C = C, .H = hw, .W = hw, .M = 40, .OH = hw, .OW = hw, .KH = 3, .KW = 3, .pt = 1, .pl = 1, .pb = 1, .pr = 1};
        nc::conv_args split;
        split.g = g;
        split.tile = tile;
        nc::winograd_split(split, k, 2);
        worst = std::max(worst, check_winograd(k, g, true, 0.f, inf, split.tiles, split.groups, rng, tile));
      }
      // F(2x2) with a transformed filter past nchwc::conv_prefetch_bytes over 49 tiles (at least
      // conv_prefetch_pixels): the products prefetch the next point's slice, the last point
      // the next chunk's first (240 channels in and out, 3.5 MB; split for 2 threads, in two
      // groups of output blocks)
      if (tile == 2) {
        nc::geometry g{.N = 1, .C = 240, .H = 14, .W = 14, .M = 240, .OH = 14, .OW = 14, .KH = 3, .KW = 3, .pt = 1, .pl = 1, .pb = 1, .pr = 1};
        CHECK(nc::winograd_filter_bytes(g, k.b, tile) >= nc::conv_prefetch_bytes);
        nc::conv_args split;
        split.g = g;
        split.tile = tile;
        nc::winograd_split(split, k, 2);
        worst = std::max(worst, check_winograd(k, g, true, 0.f, inf, split.tiles, split.groups, rng, tile));
      }
    }
    MESSAGE("Winograd F(" << tile << "x" << tile << ", 3x3): largest |error| / (1 + sum |x w|) = " << worst);
  }
  CHECK_THROWS(nc::pack_winograd_filter(nullptr, nc::geometry{}, 16, 3));  // only tiles of 4 and 2
}

TEST_CASE("exec.nchwc.winograd_preferred") {
  nc::geometry g{.N = 1, .C = 64, .H = 56, .W = 56, .M = 64, .OH = 56, .OW = 56, .KH = 3, .KW = 3};
  CHECK(nc::winograd_preferred(g, 16));  // a large plane
  g.C = g.M = 512;
  g.H = g.W = g.OH = g.OW = 7;
  CHECK_FALSE(nc::winograd_preferred(g, 16));  // a small plane, 36 MB of transformed filter
  g.C = g.M = 128;
  CHECK(nc::winograd_preferred(g, 16));  // a small plane, 2.25 MB
  g.C = g.M = 2048;
  g.H = g.W = g.OH = g.OW = 64;
  CHECK_FALSE(nc::winograd_preferred(g, 16));  // 576 MB: never

  // the tile: 2 for few tiles of a filter past L2, else 4
  g = {.N = 1, .C = 256, .H = 14, .W = 14, .M = 256, .OH = 14, .OW = 14, .KH = 3, .KW = 3};
  CHECK(nc::winograd_tile(g, 16) == 2);  // ResNet50's 14x14 layers at batch 1: 16 tiles of 4x4, 9 MB
  g.N = 2;
  CHECK(nc::winograd_tile(g, 16) == 2);  // 32 tiles
  g.N = 8;
  CHECK(nc::winograd_tile(g, 16) == 4);  // 128 tiles: the filter read once for more of them
  g.N = 1;
  g.C = g.M = 64;
  CHECK(nc::winograd_tile(g, 16) == 4);  // 0.56 MB of filter: within L2
  g = {.N = 1, .C = 128, .H = 28, .W = 28, .M = 128, .OH = 28, .OW = 28, .KH = 3, .KW = 3};
  CHECK(nc::winograd_tile(g, 16) == 4);  // 49 tiles
}

TEST_CASE("exec.nchwc.winograd_split_for_threads") {
  const nc::kernel_set& k = nc::kernels_for(16);
  for (const i64 hw : {56, 28, 14, 7})
    for (const i64 n : {1, 8})
      for (const int threads : {1, 2, 3, 8}) {
        nc::conv_args a;
        a.g = {.N = n, .C = 3584 / hw, .H = hw, .W = hw, .M = 3584 / hw, .OH = hw, .OW = hw, .KH = 3, .KW = 3};
        CAPTURE(hw);
        CAPTURE(n);
        CAPTURE(threads);
        nc::winograd_split(a, k, threads);
        const i64 all = n * nc::winograd_tiles(a.g), chunks = nc::blocks(all, a.tiles);
        CHECK(a.tiles >= 1);
        CHECK(a.tiles <= 48);
        CHECK(a.tiles * 36 * a.g.C * 4 <= 1 << 20);   // a task's transformed input within 1 MB
        CHECK(nc::winograd_tasks(a) == chunks * a.groups);
        CHECK(all - (chunks - 1) * a.tiles >= a.tiles - chunks);  // chunks of even sizes
        if (threads == 1) CHECK(a.groups == 1);
        // on threads: the tasks a multiple of the threads, or none more than a thread's share
        if (threads > 1) CHECK((nc::winograd_tasks(a) % threads == 0 || a.tiles <= nc::blocks(all, threads)));
      }
  // ResNet50's 14x14 layer at batch 1 on 2 threads: one chunk of 16 tiles (of 4x4; 49 of 2x2),
  // its 16 output blocks (4 chunks of 4) in 2 groups
  nc::conv_args a;
  a.g = {.N = 1, .C = 256, .H = 14, .W = 14, .M = 256, .OH = 14, .OW = 14, .KH = 3, .KW = 3};
  nc::winograd_split(a, k, 2);
  CHECK(a.tiles == 16);
  nc::conv_args a2 = a;
  a2.tile = 2;
  nc::winograd_split(a2, k, 2);
  CHECK(a2.tiles == 49);
  CHECK(a2.groups == a.groups);
  CHECK(nc::winograd_tasks(a2) == a2.groups);
  nc::conv_args empty;  // no output pixels: one tile a task, no task
  empty.g = {.N = 1, .C = 8, .H = 1, .W = 1, .M = 8, .OH = 0, .OW = 0, .KH = 3, .KW = 3};
  nc::winograd_split(empty, k, 2);
  CHECK(nc::winograd_tasks(empty) == 0);
  CHECK(a.groups == (k.conv_f * 2 <= 16 ? 2 : 1));
}

TEST_CASE("exec.nchwc.conv_passes") {
  nc::geometry g{.N = 1, .C = 256, .H = 56, .W = 56, .M = 64, .OH = 56, .OW = 56};
  CHECK(nc::conv_passes(g, 16, 16, 4) == 2);   // 1x1: 8 blocks of 4 KB a pass (32 KB)
  CHECK(nc::conv_passes(g, 9, 16, 4) == 1);    // 8 + 1: one pass
  CHECK(nc::conv_passes(g, 20, 16, 4) == 3);   // 7 + 7 + 6
  g.sh = g.sw = 2;
  CHECK(nc::conv_passes(g, 32, 16, 4) == 1);   // strided 1x1: one pass
  g.sh = g.sw = 1;
  g.KH = g.KW = 3;
  CHECK(nc::conv_passes(g, 32, 16, 4) == 8);   // 3x3: 4 blocks of 36 KB a pass (144 KB)
  CHECK(nc::conv_passes(g, 5, 16, 4) == 1);
  for (i64 nb = 1; nb < 70; ++nb) {  // never more passes than blocks
    const i64 p = nc::conv_passes(g, nb, 8, 2);
    CHECK(p >= 1);
    CHECK(p <= nb);
  }
  // the two shapes of conv_shapes_of_real_networks whose passes prefetch the next slice: packed
  // filters of at least conv_prefetch_bytes, in passes (for 16- and 8-channel blocks)
  for (const auto& [C, M, K] : {std::tuple<i64, i64, i64>{2000, 400, 1}, {600, 160, 3}})
    for (const i64 b : {16, 8}) {
      nc::geometry s{.N = 1, .C = C, .H = 6, .W = 6, .M = M, .OH = 6, .OW = 6, .KH = K, .KW = K};
      const std::vector<float> w(static_cast<std::size_t>(M * C * K * K), 1.0f);
      CHECK(static_cast<double>(nc::pack_filter(w.data(), s, b, nc::conv_input::blocked).size() * sizeof(float)) >=
            nc::conv_prefetch_bytes);
      CHECK(nc::conv_passes(s, nc::blocks(C, b), b, b == 16 ? 4 : 2) > 1);
    }
}

TEST_CASE("exec.nchwc.supported_forms") {
  nc::geometry g{.N = 1, .C = 32, .H = 4, .W = 4, .M = 64, .OH = 4, .OW = 4, .KH = 3, .KW = 3, .G = 2};
  CHECK(nc::conv_supported(g, 8, nc::conv_input::blocked));
  CHECK(nc::conv_supported(g, 16, nc::conv_input::blocked));
  CHECK_FALSE(nc::conv_supported(g, 8, nc::conv_input::nchw));
  g.G = 4;  // 8 channels per group
  CHECK(nc::conv_supported(g, 8, nc::conv_input::blocked));
  CHECK_FALSE(nc::conv_supported(g, 16, nc::conv_input::blocked));
  g.G = 32;
  g.M = 32;
  CHECK(nc::depthwise_supported(g));
  g.M = 64;  // a depth multiplier of 2: not the depthwise kernel
  CHECK_FALSE(nc::depthwise_supported(g));
  g.G = 1;
  CHECK_FALSE(nc::depthwise_supported(g));
}

namespace {

std::vector<double> reference_pool(const nc::pool_args& a, const std::vector<float>& x, std::vector<double>* mag) {
  const nc::geometry& g = a.g;
  std::vector<double> y(static_cast<std::size_t>(g.N * g.C * g.OH * g.OW));
  mag->assign(y.size(), 0.0);
  for (i64 nc_ = 0; nc_ < g.N * g.C; ++nc_)
    for (i64 oh = 0; oh < g.OH; ++oh)
      for (i64 ow = 0; ow < g.OW; ++ow) {
        double s = a.kind == nc::pool_kind::max ? -std::numeric_limits<double>::infinity() : 0.0, m = 0;
        i64 inside = 0, padded = 0;
        for (i64 kh = 0; kh < g.KH; ++kh)
          for (i64 kw = 0; kw < g.KW; ++kw) {
            const i64 ih = oh * g.sh - g.pt + kh * g.dh, iw = ow * g.sw - g.pl + kw * g.dw;
            if (ih >= -g.pt && ih < g.H + g.pb && iw >= -g.pl && iw < g.W + g.pr) ++padded;
            if (ih < 0 || ih >= g.H || iw < 0 || iw >= g.W) continue;
            const double v = x[static_cast<std::size_t>((nc_ * g.H + ih) * g.W + iw)];
            ++inside;
            m += std::abs(v);
            s = a.kind == nc::pool_kind::max ? std::max(s, v) : s + v;
          }
        if (a.kind == nc::pool_kind::average) {
          const i64 count = a.count_include_pad ? padded : inside;
          s = count ? s / static_cast<double>(count) : 0.0;
        } else if (inside == 0) {
          s = 0.0;  // a window entirely in padding (pads >= the window), as gpass's NCHW MaxPool
        }
        const std::size_t i = static_cast<std::size_t>((nc_ * g.OH + oh) * g.OW + ow);
        y[i] = s;
        (*mag)[i] = m;
      }
  return y;
}

}  // namespace

TEST_CASE("exec.nchwc.pools_match_the_reference") {
  for (const auto& k : nc::available_kernels()) {
    std::mt19937 rng(4321);
    for (int i = 0; i < 60; ++i) {
      auto c = random_conv(rng, k.b, 0);
      nc::pool_args a;
      a.g = c.g;
      a.g.M = a.g.C;
      if (i >= 56) {  // pads past the window: the border windows read nothing but padding
        a.g = nc::geometry{.N = 1, .C = 20, .H = 5, .W = 6, .M = 20, .KH = 3, .KW = 2, .sh = 1, .sw = 2, .pt = 4, .pl = 3, .pb = 3, .pr = 4};
        a.g.OH = out_size(a.g.H, a.g.pt, a.g.pb, a.g.KH, a.g.dh, a.g.sh);
        a.g.OW = out_size(a.g.W, a.g.pl, a.g.pr, a.g.KW, a.g.dw, a.g.sw);
      }
      // ceil mode: one more output where the last window still starts inside the input or
      // the first pads
      const bool ceil_mode = i % 3 == 0;
      if (ceil_mode) {
        const i64 oh = a.g.OH + 1, ow = a.g.OW + 1;
        if ((oh - 1) * a.g.sh < a.g.H + a.g.pt) a.g.OH = oh;
        if ((ow - 1) * a.g.sw < a.g.W + a.g.pl) a.g.OW = ow;
      }
      a.kind = i % 2 ? nc::pool_kind::max : nc::pool_kind::average;
      a.count_include_pad = i % 4 == 0;
      const nc::geometry& g = a.g;
      INFO(k.name << " b" << k.b << " " << describe(g) << (a.kind == nc::pool_kind::max ? " max" : " average")
                  << (a.count_include_pad ? " count_include_pad" : "") << (ceil_mode ? " ceil" : ""));
      const auto x = random_values(g.N * g.C * g.H * g.W, rng);
      std::vector<double> mag;
      const auto want = reference_pool(a, x, &mag);
      const i64 Cb = nc::blocks(g.C, k.b);
      std::vector<float> xb(static_cast<std::size_t>(g.N * Cb * g.H * g.W * k.b));
      nc::to_blocked(x.data(), g.N, g.C, g.H * g.W, k.b, false, xb.data());
      std::vector<float> yb(static_cast<std::size_t>(g.N * Cb * g.OH * g.OW * k.b), std::numeric_limits<float>::quiet_NaN());
      a.x = xb.data();
      a.y = yb.data();
      run_tasks(k.pool, a, nc::pool_tasks(a, k));
      std::vector<float> y(want.size());
      nc::from_blocked(yb.data(), g.N, g.C, g.OH * g.OW, k.b, false, y.data());
      compare(y, want, mag, "pool");
    }
  }
}

TEST_CASE("exec.nchwc.global_pools_match_the_reference") {
  for (const auto& k : nc::available_kernels()) {
    std::mt19937 rng(55);
    for (const i64 C : {1, 8, 13, 40})
      for (const i64 S : {1, 3, 4, 7, 49, 50})
        for (const bool is_max : {false, true})
          for (const bool relu : {false, true}) {
            INFO(k.name << " b" << k.b << " C" << C << " S" << S << (is_max ? " max" : " average") << (relu ? " relu" : ""));
            const i64 N = 2, Cb = nc::blocks(C, k.b);
            const auto x = random_values(N * C * S, rng);
            std::vector<float> xb(static_cast<std::size_t>(N * Cb * S * k.b)), yb(static_cast<std::size_t>(N * Cb * k.b));
            nc::to_blocked(x.data(), N, C, S, k.b, false, xb.data());
            nc::pool_args a;
            a.g = {.N = N, .C = C, .H = S, .W = 1, .M = C, .OH = 1, .OW = 1};
            a.kind = is_max ? nc::pool_kind::max : nc::pool_kind::average;
            a.x = xb.data();
            a.y = yb.data();
            if (relu) a.step.lo = 0;
            run_tasks(k.global_pool, a, nc::global_tasks(a, k));
            std::vector<float> y(static_cast<std::size_t>(N * C));
            nc::from_blocked(yb.data(), N, C, 1, k.b, false, y.data());
            std::vector<double> want(y.size()), mag(y.size());
            for (i64 i = 0; i < N * C; ++i) {
              double s = is_max ? -1e300 : 0.0;
              for (i64 j = 0; j < S; ++j) {
                const double v = x[static_cast<std::size_t>(i * S + j)];
                s = is_max ? std::max(s, v) : s + v;
                mag[static_cast<std::size_t>(i)] += std::abs(v);
              }
              if (!is_max) s /= static_cast<double>(S);
              want[static_cast<std::size_t>(i)] = relu ? std::max(s, 0.0) : s;
            }
            compare(y, want, mag, "global pool");
          }
  }
}

}  // namespace gpass_test_exec_nchwc
