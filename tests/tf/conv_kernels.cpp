// SPDX-License-Identifier: Apache-2.0
// The NHWC / NDHWC convolution and pooling kernels (tf_conv.hpp) beyond what the
// cnn_training and conv3d fixtures cover: Conv2DBackpropInput / Conv2DBackpropFilter and
// Conv3DBackpropInputV2 / Conv3DBackpropFilterV2 against finite differences of Conv2D /
// Conv3D for strides, dilations and SAME / VALID / EXPLICIT padding; AvgPoolGrad,
// MaxPoolGrad and their 3-D forms against the pools' finite differences; dilated Conv3D
// against the dilated filter written out; MaxPool3DGrad's ties; errors naming the node; the
// convolutions' im2col made in blocks (under small max_tensor_bytes limits too) against a
// direct convolution; empty filters with huge windows and empty images with huge
// positions; overflowing sizes and attributes.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <gpass/exec/eigen_cpu.hpp>
#include <gpass/exec/plan.hpp>
#include <gpass/io/text.hpp>

namespace gpass_test_tf_conv_kernels {

namespace {

using G = gpass::graph<>;
namespace ex = gpass::exec;

std::vector<double> run1(const std::string& text, std::vector<ex::value> in) {
  G g = gpass::parse_text(text);
  ex::eigen_cpu cpu;
  ex::plan<ex::eigen_cpu> p(g, cpu);
  auto out = p.run(std::move(in));
  const auto& t = out.at(0).tensor();
  return std::vector<double>(t.data<double>(), t.data<double>() + t.size());
}

gpass::tensor random(std::vector<std::int64_t> sizes, std::mt19937& rng) {
  gpass::tensor t(gpass::dtype::f64, sizes);
  std::uniform_real_distribution<double> u(-1, 1);
  for (double& v : t.values<double>()) v = u(rng);
  return t;
}

std::string dims(const std::vector<std::int64_t>& v) {
  std::string s;
  for (auto d : v) s += (s.empty() ? "" : ",") + std::to_string(d);
  return s;
}

struct conv_case {
  std::vector<std::int64_t> x, f;
  std::string attrs;  // strides, dilations, padding
  bool volumetric = false;  // Conv3D and its V2 gradients
};

gpass::tensor int_sizes(const std::vector<std::int64_t>& v) {
  std::vector<std::int32_t> s(v.begin(), v.end());
  gpass::tensor t(gpass::dtype::int32, {static_cast<std::int64_t>(s.size())});
  std::copy(s.begin(), s.end(), t.data<std::int32_t>());
  return t;
}

}  // namespace

TEST_CASE("tf.conv_kernels.backprops_match_finite_differences") {
  std::mt19937 rng(7);
  const std::vector<conv_case> cases = {
      {{1, 5, 5, 2}, {3, 3, 2, 3}, R"(padding = "SAME", strides = [1, 1, 1, 1])"},
      {{2, 6, 5, 2}, {3, 2, 2, 2}, R"(padding = "SAME", strides = [1, 2, 2, 1])"},
      {{1, 7, 6, 1}, {2, 3, 1, 2}, R"(padding = "VALID", strides = [1, 2, 1, 1], dilations = [1, 2, 1, 1])"},
      {{1, 4, 4, 2}, {3, 3, 2, 2},
       R"(padding = "EXPLICIT", explicit_paddings = [0, 0, 2, 1, 0, 1, 0, 0], strides = [1, 1, 2, 1])"},
      {{1, 4, 5, 3, 2}, {2, 3, 2, 2, 3}, R"(padding = "SAME", strides = [1, 1, 1, 1, 1])", true},
      {{2, 5, 4, 4, 1}, {3, 2, 2, 1, 2}, R"(padding = "SAME", strides = [1, 2, 1, 2, 1])", true},
      {{1, 6, 5, 4, 2}, {2, 2, 1, 2, 2}, R"(padding = "VALID", strides = [1, 1, 2, 1, 1], dilations = [1, 2, 1, 2, 1])", true},
  };
  for (const auto& c : cases) {
    CAPTURE(c.attrs);
    const std::string op = c.volumetric ? "Conv3D" : "Conv2D", v2 = c.volumetric ? "V2" : "";
    const std::string rank = std::to_string(c.x.size());
    const std::string conv = "graph {\n  %x = arg() {index = 0} -> (f64[" + dims(c.x) + "])\n  %f = arg() {index = 1} -> (f64[" +
                             dims(c.f) + "])\n  %y = tf::" + op + "(%x, %f) {T = f64, " + c.attrs +
                             "}\n  %r:0 = return(%y)\n}\n";
    gpass::tensor x = random(c.x, rng), f = random(c.f, rng);
    G probe = gpass::parse_text(conv);
    ex::eigen_cpu cpu;
    const auto y0 = ex::plan<ex::eigen_cpu>(probe, cpu).run({x, f}).at(0).tensor();
    gpass::tensor gy = random(y0.sizes(), rng);
    auto loss = [&](const gpass::tensor& xx, const gpass::tensor& ff) {
      auto y = run1(conv, {xx, ff});
      double s = 0;
      for (std::size_t i = 0; i < y.size(); ++i) s += y[i] * gy.data<double>()[i];
      return s;
    };
    const std::string back = "graph {\n  %s = arg() {index = 0} -> (i32[" + rank + "])\n  %f = arg() {index = 1} -> (f64[" +
                             dims(c.f) + "])\n  %g = arg() {index = 2} -> (f64[" + dims(y0.sizes()) + "])\n  %dx = tf::" + op +
                             "BackpropInput" + v2 + "(%s, %f, %g) {T = f64, " + c.attrs + "}\n  %r:0 = return(%dx)\n}\n";
    const std::string backf = "graph {\n  %x = arg() {index = 0} -> (f64[" + dims(c.x) + "])\n  %s = arg() {index = 1} -> (i32[" +
                              rank + "])\n  %g = arg() {index = 2} -> (f64[" + dims(y0.sizes()) + "])\n  %df = tf::" + op +
                              "BackpropFilter" + v2 + "(%x, %s, %g) {T = f64, " + c.attrs + "}\n  %r:0 = return(%df)\n}\n";
    const auto dx = run1(back, {int_sizes(c.x), f, gy});
    const auto df = run1(backf, {x, int_sizes(c.f), gy});
    const double h = 1e-6;
    double worst = 0;
    for (std::int64_t i = 0; i < x.size(); ++i) {
      gpass::tensor xp = x.clone(), xm = x.clone();
      xp.data<double>()[i] += h;
      xm.data<double>()[i] -= h;
      worst = std::max(worst, std::abs((loss(xp, f) - loss(xm, f)) / (2 * h) - dx[static_cast<std::size_t>(i)]));
    }
    for (std::int64_t i = 0; i < f.size(); ++i) {
      gpass::tensor fp = f.clone(), fm = f.clone();
      fp.data<double>()[i] += h;
      fm.data<double>()[i] -= h;
      worst = std::max(worst, std::abs((loss(x, fp) - loss(x, fm)) / (2 * h) - df[static_cast<std::size_t>(i)]));
    }
    CHECK(worst < 1e-6);
  }
}

TEST_CASE("tf.conv_kernels.pool_gradients") {
  std::mt19937 rng(11);
  struct pool_case {
    std::vector<std::int64_t> xs;
    const char* attrs;
    bool volumetric;
  };
  for (const pool_case& c : {pool_case{{2, 5, 5, 3}, R"(ksize = [1, 2, 2, 1], padding = "SAME", strides = [1, 2, 2, 1])", false},
                             pool_case{{2, 5, 5, 3}, R"(ksize = [1, 3, 2, 1], padding = "VALID", strides = [1, 1, 2, 1])", false},
                             pool_case{{1, 5, 4, 3, 2}, R"(ksize = [1, 2, 2, 2, 1], padding = "SAME", strides = [1, 2, 1, 2, 1])", true},
                             pool_case{{2, 4, 5, 3, 1}, R"(ksize = [1, 3, 2, 1, 1], padding = "VALID", strides = [1, 1, 2, 1, 1])", true}}) {
    const std::string attrs = c.attrs, d3 = c.volumetric ? "3D" : "";
    const std::vector<std::int64_t>& xs = c.xs;
    CAPTURE(attrs);
    const std::string avg = "graph {\n  %x = arg() {index = 0} -> (f64[" + dims(xs) + "])\n  %y = tf::AvgPool" + d3 +
                            "(%x) {T = f64, " + attrs + "}\n  %r:0 = return(%y)\n}\n";
    const std::string mx = "graph {\n  %x = arg() {index = 0} -> (f64[" + dims(xs) + "])\n  %y = tf::MaxPool" + d3 +
                           "(%x) {T = f64, " + attrs + "}\n  %r:0 = return(%y)\n}\n";
    gpass::tensor x = random(xs, rng);
    G probe = gpass::parse_text(avg);
    ex::eigen_cpu cpu;
    const auto y0 = ex::plan<ex::eigen_cpu>(probe, cpu).run({x}).at(0).tensor();
    gpass::tensor gy = random(y0.sizes(), rng);
    const std::string avg_grad = "graph {\n  %s = arg() {index = 0} -> (i32[" + std::to_string(xs.size()) +
                                 "])\n  %g = arg() {index = 1} -> (f64[" + dims(y0.sizes()) + "])\n  %dx = tf::AvgPool" + d3 +
                                 "Grad(%s, %g) {T = f64, " + attrs + "}\n  %r:0 = return(%dx)\n}\n";
    const std::string max_grad = "graph {\n  %x = arg() {index = 0} -> (f64[" + dims(xs) + "])\n  %y = arg() {index = 1} -> (f64[" +
                                 dims(y0.sizes()) + "])\n  %g = arg() {index = 2} -> (f64[" + dims(y0.sizes()) +
                                 "])\n  %dx = tf::MaxPool" + d3 + "Grad(%x, %y, %g) {T = f64, " +
                                 (c.volumetric ? "TInput = f64, " : "") + attrs + "}\n  %r:0 = return(%dx)\n}\n";
    const auto da = run1(avg_grad, {int_sizes(xs), gy});
    const auto ymax = ex::plan<ex::eigen_cpu>(gpass::parse_text(mx), cpu).run({x}).at(0).tensor();
    const auto dm = run1(max_grad, {x, ymax, gy});
    const double h = 1e-6;
    double worst_avg = 0, worst_max = 0;
    for (std::int64_t i = 0; i < x.size(); ++i) {
      gpass::tensor xp = x.clone(), xm = x.clone();
      xp.data<double>()[i] += h;
      xm.data<double>()[i] -= h;
      for (auto [text, grad, worst] : {std::tuple{&avg, &da, &worst_avg}, std::tuple{&mx, &dm, &worst_max}}) {
        auto yp = run1(*text, {xp}), ym = run1(*text, {xm});
        double s = 0;
        for (std::size_t k = 0; k < yp.size(); ++k) s += (yp[k] - ym[k]) * gy.data<double>()[k];
        *worst = std::max(*worst, std::abs(s / (2 * h) - (*grad)[static_cast<std::size_t>(i)]));
      }
    }
    CHECK(worst_avg < 1e-6);
    CHECK(worst_max < 1e-6);
  }
}

TEST_CASE("tf.conv_kernels.max_pool_gradient_ties") {
  // one window of four equal maxima: MaxPoolGrad gives the gradient to the first (row-major),
  // MaxPool3DGrad to each of them (TensorFlow's 3-D CPU kernel: |x - y| < 1e-5)
  const std::string g2 = "graph {\n  %x = arg() {index = 0} -> (f64[1,2,2,1])\n  %y = arg() {index = 1} -> (f64[1,1,1,1])\n"
                         "  %g = arg() {index = 2} -> (f64[1,1,1,1])\n  %dx = tf::MaxPoolGrad(%x, %y, %g) {T = f64, "
                         "ksize = [1, 2, 2, 1], padding = \"VALID\", strides = [1, 2, 2, 1]}\n  %r:0 = return(%dx)\n}\n";
  const std::string g3 = "graph {\n  %x = arg() {index = 0} -> (f64[1,1,2,2,1])\n  %y = arg() {index = 1} -> (f64[1,1,1,1,1])\n"
                         "  %g = arg() {index = 2} -> (f64[1,1,1,1,1])\n  %dx = tf::MaxPool3DGrad(%x, %y, %g) {T = f64, "
                         "TInput = f64, ksize = [1, 1, 2, 2, 1], padding = \"VALID\", strides = [1, 1, 2, 2, 1]}\n"
                         "  %r:0 = return(%dx)\n}\n";
  auto t = [](std::vector<std::int64_t> sizes, std::vector<double> v) {
    gpass::tensor r(gpass::dtype::f64, sizes);
    std::copy(v.begin(), v.end(), r.data<double>());
    return r;
  };
  CHECK(run1(g2, {t({1, 2, 2, 1}, {3, 3, 3, 3}), t({1, 1, 1, 1}, {3}), t({1, 1, 1, 1}, {2})}) == std::vector<double>{2, 0, 0, 0});
  CHECK(run1(g3, {t({1, 1, 2, 2, 1}, {3, 1, 3 + 1e-6, 3}), t({1, 1, 1, 1, 1}, {3}), t({1, 1, 1, 1, 1}, {2})}) ==
        std::vector<double>{2, 0, 2, 2});
}

TEST_CASE("tf.conv_kernels.dilated_conv3d_is_a_conv_with_the_dilated_filter") {
  // dilations (2, 1, 3) read the taps of a filter with zeros between them: the same output
  std::mt19937 rng(5);
  gpass::tensor x = random({1, 7, 4, 8, 2}, rng), f = random({2, 2, 2, 2, 3}, rng);
  gpass::tensor wide(gpass::dtype::f64, {3, 2, 4, 2, 3});
  std::fill(wide.data<double>(), wide.data<double>() + wide.size(), 0.0);
  for (std::int64_t kd = 0; kd < 2; ++kd)
    for (std::int64_t kh = 0; kh < 2; ++kh)
      for (std::int64_t kw = 0; kw < 2; ++kw)
        for (std::int64_t i = 0; i < 6; ++i)
          wide.data<double>()[(((kd * 2) * 2 + kh) * 4 + kw * 3) * 6 + i] = f.data<double>()[((kd * 2 + kh) * 2 + kw) * 6 + i];
  auto conv = [](const std::string& fs, const std::string& more) {
    return "graph {\n  %x = arg() {index = 0} -> (f64[1,7,4,8,2])\n  %f = arg() {index = 1} -> (f64[" + fs +
           "])\n  %y = tf::Conv3D(%x, %f) {T = f64, padding = \"SAME\", strides = [1, 2, 1, 1, 1]" + more +
           "}\n  %r:0 = return(%y)\n}\n";
  };
  const auto a = run1(conv("2,2,2,2,3", ", dilations = [1, 2, 1, 3, 1]"), {x, f});
  const auto b = run1(conv("3,2,4,2,3", ""), {x, wide});
  REQUIRE(a.size() == b.size());
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
  CHECK(worst < 1e-12);
}

TEST_CASE("tf.conv_kernels.depthwise_is_a_conv_per_channel") {
  // channel c of the input convolved with filter (., ., c, m) by Conv2D gives output channel
  // c * M + m of DepthwiseConv2dNative
  std::mt19937 rng(3);
  const std::string attrs = R"(padding = "SAME", strides = [1, 2, 1, 1], dilations = [1, 1, 2, 1])";
  const std::int64_t C = 3, M = 2;
  gpass::tensor x = random({2, 5, 6, C}, rng), f = random({3, 2, C, M}, rng);
  const auto y = run1("graph {\n  %x = arg() {index = 0} -> (f64[2,5,6,3])\n  %f = arg() {index = 1} -> (f64[3,2,3,2])\n"
                      "  %y = tf::DepthwiseConv2dNative(%x, %f) {T = f64, " + attrs + "}\n  %r:0 = return(%y)\n}\n",
                      {x, f});
  const std::string conv = "graph {\n  %x = arg() {index = 0} -> (f64[2,5,6,1])\n  %f = arg() {index = 1} -> (f64[3,2,1,1])\n"
                           "  %y = tf::Conv2D(%x, %f) {T = f64, " + attrs + "}\n  %r:0 = return(%y)\n}\n";
  double worst = 0;
  for (std::int64_t c = 0; c < C; ++c)
    for (std::int64_t m = 0; m < M; ++m) {
      gpass::tensor xc(gpass::dtype::f64, {2, 5, 6, 1}), fc(gpass::dtype::f64, {3, 2, 1, 1});
      for (std::int64_t i = 0; i < xc.size(); ++i) xc.data<double>()[i] = x.data<double>()[i * C + c];
      for (std::int64_t i = 0; i < fc.size(); ++i) fc.data<double>()[i] = f.data<double>()[i * C * M + c * M + m];
      const auto yc = run1(conv, {xc, fc});
      REQUIRE(yc.size() * static_cast<std::size_t>(C * M) == y.size());
      for (std::size_t i = 0; i < yc.size(); ++i)
        worst = std::max(worst, std::abs(yc[i] - y[i * static_cast<std::size_t>(C * M) + static_cast<std::size_t>(c * M + m)]));
    }
  CHECK(worst < 1e-12);
}

TEST_CASE("tf.conv_kernels.errors_name_the_node") {
  auto fails = [](const std::string& body, std::vector<ex::value> in, const std::string& what) {
    G g = gpass::parse_text("graph {\n" + body + "}\n");
    ex::eigen_cpu cpu;
    CAPTURE(what);
    try {
      ex::plan<ex::eigen_cpu> p(g, cpu);
      (void)p.run(std::move(in));
      FAIL("no error");
    } catch (const gpass::error& e) {
      const std::string m = e.what();
      CHECK(m.find(what) != std::string::npos);
      CHECK(m.find("'c'") != std::string::npos);
    }
  };
  gpass::tensor x(gpass::dtype::f32, {1, 4, 4, 2}), f(gpass::dtype::f32, {3, 3, 2, 2}), f3(gpass::dtype::f32, {3, 3, 3, 2});
  fails("  %x = arg() {index = 0} -> (f32[1,4,4,2])\n  %f = arg() {index = 1} -> (f32[3,3,2,2])\n"
        "  %c = tf::Conv2D(%x, %f) {T = f32, data_format = \"NCHW\", padding = \"SAME\"} -> (f32[?,?,?,?])\n  %r:0 = return(%c)\n",
        {x, f}, "NHWC only");
  fails("  %x = arg() {index = 0} -> (f32[1,4,4,2])\n  %f = arg() {index = 1} -> (f32[3,3,3,2])\n"
        "  %c = tf::Conv2D(%x, %f) {T = f32, padding = \"SAME\"} -> (f32[?,?,?,?])\n  %r:0 = return(%c)\n",
        {x, f3}, "input depth 3");
  fails("  %s = arg() {index = 0} -> (i32[4])\n  %f = arg() {index = 1} -> (f32[3,3,2,2])\n"
        "  %g = arg() {index = 2} -> (f32[1,3,3,2])\n"
        "  %c = tf::Conv2DBackpropInput(%s, %f, %g) {T = f32, padding = \"SAME\"} -> (f32[?,?,?,?])\n  %r:0 = return(%c)\n",
        {gpass::tensor::from<std::int32_t>({1, 4, 4, 2}), f, gpass::tensor(gpass::dtype::f32, {1, 3, 3, 2})}, "out_backprop has sizes");
  fails("  %x = arg() {index = 0} -> (f32[1,4,4,2])\n"
        "  %c = tf::MaxPool(%x) {T = f32, ksize = [1, 5, 5, 1], padding = \"VALID\"} -> (f32[?,?,?,?])\n  %r:0 = return(%c)\n",
        {x}, "larger than the padded input");
  gpass::tensor x5(gpass::dtype::f32, {1, 3, 4, 4, 2}), f5(gpass::dtype::f32, {2, 2, 2, 2, 3});
  fails("  %x = arg() {index = 0} -> (f32[1,3,4,4,2])\n  %f = arg() {index = 1} -> (f32[2,2,2,2,3])\n"
        "  %c = tf::Conv3D(%x, %f) {T = f32, data_format = \"NCDHW\", padding = \"SAME\"} -> (f32[?,?,?,?,?])\n  %r:0 = return(%c)\n",
        {x5, f5}, "NDHWC only");
  fails("  %x = arg() {index = 0} -> (f32[1,3,4,4,2])\n  %f = arg() {index = 1} -> (f32[2,2,2,2,3])\n"
        "  %c = tf::Conv3D(%x, %f) {T = f32, padding = \"SAME\", strides = [1, 1, 1, 1]} -> (f32[?,?,?,?,?])\n  %r:0 = return(%c)\n",
        {x5, f5}, "strides must have 5 values");
  fails("  %x = arg() {index = 0} -> (f32[1,3,4,4,2])\n"
        "  %c = tf::MaxPool3D(%x) {T = f32, ksize = [1, 4, 1, 1, 1], padding = \"VALID\"} -> (f32[?,?,?,?,?])\n  %r:0 = return(%c)\n",
        {x5}, "larger than the padded input");
  // windows near 2^63: the padded extent overflows int64 (an error, not a wrapped window)
  fails("  %x = arg() {index = 0} -> (f32[1,4,4,2])\n"
        "  %c = tf::MaxPool(%x) {T = f32, ksize = [1, 9223372036854775807, 1, 1], padding = \"SAME\"} -> (f32[?,?,?,?])\n"
        "  %r:0 = return(%c)\n",
        {x}, "the padded extent overflows int64");
  fails("  %x = arg() {index = 0} -> (f32[1,4,4,2])\n  %f = arg() {index = 1} -> (f32[3,3,2,2])\n"
        "  %c = tf::Conv2D(%x, %f) {T = f32, padding = \"VALID\", dilations = [1, 4611686018427387904, 1, 1]} -> (f32[?,?,?,?])\n"
        "  %r:0 = return(%c)\n",
        {x, f}, "the window's extent overflows int64");
  fails("  %s = arg() {index = 0} -> (i32[5])\n  %g = arg() {index = 1} -> (f32[1,2,2,1,2])\n"
        "  %c = tf::AvgPool3DGrad(%s, %g) {T = f32, ksize = [1, 2, 2, 2, 1], strides = [1, 2, 2, 2, 1], padding = \"SAME\"}"
        " -> (f32[?,?,?,?,?])\n  %r:0 = return(%c)\n",
        {int_sizes({1, 3, 4, 4, 2}), gpass::tensor(gpass::dtype::f32, {1, 2, 2, 1, 2})}, "grad has sizes");
}

// A pooling window of 2^62 x 2^62 over a 3x5 image (SAME padding): every output takes the
// whole image, in time proportional to the image, not the window.
TEST_CASE("tf.conv_kernels.pool_windows_far_larger_than_the_input") {
  std::mt19937 rng(7);
  const gpass::tensor x = random({1, 3, 5, 2}, rng);
  for (const char* op : {"MaxPool", "AvgPool"}) {
    CAPTURE(op);
    const auto y = run1(std::string("graph {\n  %x = arg() {index = 0} -> (f64[1,3,5,2])\n  %y = tf::") + op +
                            "(%x) {T = f64, ksize = [1, 4611686018427387904, 4611686018427387904, 1], padding = \"SAME\"}"
                            " -> (f64[?,?,?,?])\n  %r:0 = return(%y)\n}\n",
                        {x});
    REQUIRE(y.size() == 30);
    const double* v = x.data<double>();
    for (int c = 0; c < 2; ++c) {
      double want = std::string(op) == "MaxPool" ? -1e300 : 0.0;
      for (int p = 0; p < 15; ++p) want = std::string(op) == "MaxPool" ? std::max(want, v[p * 2 + c]) : want + v[p * 2 + c] / 15;
      for (int p = 0; p < 15; ++p) CHECK(y[static_cast<std::size_t>(p * 2 + c)] == doctest::Approx(want).epsilon(1e-12));
    }
  }
}

namespace {

// A convolution's geometry by TensorFlow's rules (1 to 3 spatial dims, padded to 3 with
// size 1) and its direct loops: x [N, spatial..., C], filter [k..., C, OC].
struct direct_conv {
  std::vector<std::int64_t> x, f, strides, dilations;  // strides, dilations: per spatial dim
  std::string padding;                                 // SAME, VALID or EXPLICIT
  std::vector<std::int64_t> pads;                      // EXPLICIT: before, after per spatial dim
  std::array<std::int64_t, 3> in{1, 1, 1}, k{1, 1, 1}, s{1, 1, 1}, d{1, 1, 1}, before{0, 0, 0}, out{1, 1, 1};
  std::int64_t N = 0, C = 0, OC = 0;

  std::size_t rank() const { return x.size() - 2; }
  std::string attrs() const {
    auto list = [&](const std::vector<std::int64_t>& v) { return "[1, " + dims(v) + ", 1]"; };
    std::string a = "padding = \"" + padding + "\", strides = " + list(strides) + ", dilations = " + list(dilations);
    if (padding == "EXPLICIT") a += ", explicit_paddings = [0, 0, " + dims(pads) + ", 0, 0]";
    return a;
  }
  void resolve() {
    const std::size_t r = rank(), o = 3 - r;
    N = x[0], C = x.back(), OC = f.back();
    for (std::size_t i = 0; i < r; ++i) {
      const std::size_t j = o + i;
      in[j] = x[1 + i], k[j] = f[i], s[j] = strides[i], d[j] = dilations[i];
      const std::int64_t eff = (k[j] - 1) * d[j] + 1;
      if (padding == "SAME") {
        out[j] = (in[j] + s[j] - 1) / s[j];
        before[j] = std::max<std::int64_t>(0, (out[j] - 1) * s[j] + eff - in[j]) / 2;
      } else {
        const std::int64_t lo = padding == "EXPLICIT" ? pads[2 * i] : 0, hi = padding == "EXPLICIT" ? pads[2 * i + 1] : 0;
        out[j] = (in[j] + lo + hi - eff) / s[j] + 1;
        before[j] = lo;
      }
    }
  }
  std::int64_t positions() const { return out[0] * out[1] * out[2]; }
  std::int64_t taps() const { return k[0] * k[1] * k[2]; }
  std::vector<std::int64_t> y_sizes() const {
    std::vector<std::int64_t> v{N};
    for (std::size_t i = 3 - rank(); i < 3; ++i) v.push_back(out[i]);
    v.push_back(OC);
    return v;
  }
  // f(b, o, i, t): output position o of image b reads input position i at filter tap t
  template <class F>
  void each(F f) const {
    for (std::int64_t b = 0; b < N; ++b)
      for (std::int64_t o0 = 0; o0 < out[0]; ++o0)
        for (std::int64_t o1 = 0; o1 < out[1]; ++o1)
          for (std::int64_t o2 = 0; o2 < out[2]; ++o2)
            for (std::int64_t k0 = 0; k0 < k[0]; ++k0)
              for (std::int64_t k1 = 0; k1 < k[1]; ++k1)
                for (std::int64_t k2 = 0; k2 < k[2]; ++k2) {
                  const std::int64_t i0 = o0 * s[0] + k0 * d[0] - before[0], i1 = o1 * s[1] + k1 * d[1] - before[1],
                                     i2 = o2 * s[2] + k2 * d[2] - before[2];
                  if (i0 < 0 || i0 >= in[0] || i1 < 0 || i1 >= in[1] || i2 < 0 || i2 >= in[2]) continue;
                  f(b, (o0 * out[1] + o1) * out[2] + o2, (i0 * in[1] + i1) * in[2] + i2, (k0 * k[1] + k1) * k[2] + k2);
                }
  }
  // y = conv(x, w); dx and dw, the gradients for the cotangent dy
  std::vector<double> forward(const double* xv, const double* w) const {
    const std::int64_t S = in[0] * in[1] * in[2], P = positions();
    std::vector<double> y(static_cast<std::size_t>(N * P * OC), 0.0);
    each([&](std::int64_t b, std::int64_t o, std::int64_t i, std::int64_t t) {
      for (std::int64_t c = 0; c < C; ++c)
        for (std::int64_t m = 0; m < OC; ++m)
          y[static_cast<std::size_t>((b * P + o) * OC + m)] += xv[(b * S + i) * C + c] * w[(t * C + c) * OC + m];
    });
    return y;
  }
  std::vector<double> input_grad(const double* w, const double* dy) const {
    const std::int64_t S = in[0] * in[1] * in[2], P = positions();
    std::vector<double> dx(static_cast<std::size_t>(N * S * C), 0.0);
    each([&](std::int64_t b, std::int64_t o, std::int64_t i, std::int64_t t) {
      for (std::int64_t c = 0; c < C; ++c)
        for (std::int64_t m = 0; m < OC; ++m)
          dx[static_cast<std::size_t>((b * S + i) * C + c)] += dy[(b * P + o) * OC + m] * w[(t * C + c) * OC + m];
    });
    return dx;
  }
  std::vector<double> filter_grad(const double* xv, const double* dy) const {
    const std::int64_t S = in[0] * in[1] * in[2], P = positions();
    std::vector<double> dw(static_cast<std::size_t>(taps() * C * OC), 0.0);
    each([&](std::int64_t b, std::int64_t o, std::int64_t i, std::int64_t t) {
      for (std::int64_t c = 0; c < C; ++c)
        for (std::int64_t m = 0; m < OC; ++m)
          dw[static_cast<std::size_t>((t * C + c) * OC + m)] += xv[(b * S + i) * C + c] * dy[(b * P + o) * OC + m];
    });
    return dw;
  }
};

std::vector<double> run_limited(const std::string& text, std::vector<ex::value> in, std::uint64_t max_tensor_bytes) {
  G g = gpass::parse_text(text);
  ex::eigen_cpu cpu;
  ex::plan<ex::eigen_cpu> p(g, cpu, {.limits = {.max_tensor_bytes = max_tensor_bytes}});
  const auto out = p.run(std::move(in));
  const auto& t = out.at(0).tensor();
  return std::vector<double>(t.data<double>(), t.data<double>() + t.size());
}

// The error of a run under `limits` ("" when it succeeds).
std::string run_error(const std::string& text, std::vector<ex::value> in, ex::run_limits limits = {}) {
  G g = gpass::parse_text(text);
  ex::eigen_cpu cpu;
  try {
    ex::plan<ex::eigen_cpu> p(g, cpu, {.limits = limits});
    (void)p.run(std::move(in));
  } catch (const gpass::error& e) {
    return e.what();
  }
  return "";
}

double worst_error(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return 1e300;
  double w = 0;
  for (std::size_t i = 0; i < a.size(); ++i) w = std::max(w, std::abs(a[i] - b[i]) / (1 + std::abs(b[i])));
  return w;
}

}  // namespace

// The convolutions make im2col in blocks of output positions: whole images while an image's
// column matrix is small, blocks of 64-row multiples past 8 MiB (the last case: 4095
// positions of 400 values), and blocks down to one row where max_tensor_bytes leaves no
// more (the limit set at most just above the largest output, a fraction of the matrix).
// Every result matches a direct convolution, for strides, dilations, SAME / VALID / EXPLICIT
// padding, batches, 1x1 windows and 3-D ones; the forward and input-gradient values do not
// depend on the 64-row blocks.
TEST_CASE("tf.conv_kernels.blocked_im2col_matches_a_direct_convolution") {
  std::mt19937 rng(17);
  std::vector<direct_conv> cases = {
      {{2, 9, 11, 3}, {4, 5, 3, 2}, {2, 1}, {1, 1}, "SAME", {}},
      {{1, 10, 8, 2}, {3, 3, 2, 1}, {1, 1}, {2, 3}, "VALID", {}},
      {{3, 7, 7, 2}, {5, 5, 2, 2}, {1, 2}, {1, 1}, "EXPLICIT", {2, 1, 0, 3}},
      {{2, 5, 6, 4}, {1, 1, 4, 3}, {1, 1}, {1, 1}, "VALID", {}},  // pointwise: no im2col
      {{1, 7, 7, 5}, {1, 1, 5, 2}, {2, 2}, {1, 1}, "SAME", {}},   // 1x1, strided
      {{2, 4, 5, 6, 2}, {2, 3, 3, 2, 1}, {1, 2, 1}, {2, 1, 1}, "SAME", {}},
      {{1, 63, 65, 16}, {5, 5, 16, 4}, {1, 1}, {1, 1}, "SAME", {}},
  };
  int blocked = 0;
  for (direct_conv& c : cases) {
    c.resolve();
    CAPTURE(c.attrs());
    const bool v3 = c.rank() == 3;
    const std::string op = v3 ? "Conv3D" : "Conv2D", v2 = v3 ? "V2" : "", rank = std::to_string(c.x.size());
    const std::vector<std::int64_t> ys = c.y_sizes();
    gpass::tensor x = random(c.x, rng), f = random(c.f, rng), dy = random(ys, rng);
    const std::string attrs = "{T = f64, " + c.attrs() + "}";
    const std::string conv = "graph {\n  %x = arg() {index = 0} -> (f64[" + dims(c.x) + "])\n  %f = arg() {index = 1} -> (f64[" +
                             dims(c.f) + "])\n  %y = tf::" + op + "(%x, %f) " + attrs + "\n  %r:0 = return(%y)\n}\n";
    const std::string back = "graph {\n  %s = arg() {index = 0} -> (i32[" + rank + "])\n  %f = arg() {index = 1} -> (f64[" +
                             dims(c.f) + "])\n  %g = arg() {index = 2} -> (f64[" + dims(ys) + "])\n  %dx = tf::" + op +
                             "BackpropInput" + v2 + "(%s, %f, %g) " + attrs + "\n  %r:0 = return(%dx)\n}\n";
    const std::string backf = "graph {\n  %x = arg() {index = 0} -> (f64[" + dims(c.x) + "])\n  %s = arg() {index = 1} -> (i32[" +
                              rank + "])\n  %g = arg() {index = 2} -> (f64[" + dims(ys) + "])\n  %df = tf::" + op +
                              "BackpropFilter" + v2 + "(%x, %s, %g) " + attrs + "\n  %r:0 = return(%df)\n}\n";
    const double row = static_cast<double>(c.taps() * c.C * 8), matrix = row * static_cast<double>(c.positions());
    struct run_case {
      const std::string* text;
      std::vector<ex::value> in;
      std::vector<double> want;
      double out_bytes;  // the kernel's output
    };
    const std::vector<run_case> runs = {
        {&conv, {x, f}, c.forward(x.data<double>(), f.data<double>()), static_cast<double>(dy.size() * 8)},
        {&back, {int_sizes(c.x), f, dy}, c.input_grad(f.data<double>(), dy.data<double>()), static_cast<double>(x.size() * 8)},
        {&backf, {x, int_sizes(c.f), dy}, c.filter_grad(x.data<double>(), dy.data<double>()), static_cast<double>(f.size() * 8)},
    };
    for (std::size_t r = 0; r < runs.size(); ++r) {
      CAPTURE(r);
      std::vector<double> whole;
      // the default limit, then room for 127 rows (64-row blocks and a tail), 7.5 rows, 1 row
      for (double rows : {0.0, 127.0, 7.5, 1.0}) {
        const std::uint64_t limit =
            rows == 0 ? std::uint64_t{16} << 30 : static_cast<std::uint64_t>(std::max(rows * row, runs[r].out_bytes));
        CAPTURE(limit);
        const auto got = run_limited(*runs[r].text, runs[r].in, limit);
        CHECK(worst_error(got, runs[r].want) < 1e-12);
        if (static_cast<double>(limit) < matrix || matrix > 8 << 20) ++blocked;
        if (rows == 0) whole = got;
        // 64-row blocks (the last case's own 2496 + 1599 rows, then 63 x 64 + 63): the values
        // of one GEMM per image, but for the filter gradient's sums over positions
        if (rows == 127 && c.positions() > 127 && r < 2) CHECK(got == whole);
      }
    }
  }
  CHECK(blocked >= 40);
}

// One row of the im2col matrix (an 8x8x4 window: 256 f64 values, 2048 bytes) over the run's
// max_tensor_bytes: an error naming the node and the limit (the output is 512 bytes).
TEST_CASE("tf.conv_kernels.im2col_scratch_is_checked_against_max_tensor_bytes") {
  std::mt19937 rng(19);
  const std::string text = "graph {\n  %x = arg() {index = 0} -> (f64[1,8,8,4])\n  %f = arg() {index = 1} -> (f64[8,8,4,1])\n"
                           "  %c = tf::Conv2D(%x, %f) {T = f64, padding = \"SAME\"}\n  %r:0 = return(%c)\n}\n";
  const gpass::tensor x = random({1, 8, 8, 4}, rng), f = random({8, 8, 4, 1}, rng);
  const std::string e = run_error(text, {x, f}, {.max_tensor_bytes = 1024});
  CHECK(e.find("'c'") != std::string::npos);
  CHECK(e.find("im2col") != std::string::npos);
  CHECK(e.find("needs 2048 bytes of scratch, over the limit of 1024 bytes per tensor (max_tensor_bytes)") != std::string::npos);
  // room for one row: blocks of one output position, the values of a direct convolution
  direct_conv c{{1, 8, 8, 4}, {8, 8, 4, 1}, {1, 1}, {1, 1}, "SAME", {}};
  c.resolve();
  CHECK(worst_error(run_limited(text, {x, f}, 2048), c.forward(x.data<double>(), f.data<double>())) < 1e-12);
}

// An empty filter (no input channels, no output channels, or a window of size 0) whose
// other window sizes are 2e9: zeros at once, not a walk over 4e18 taps per position.
TEST_CASE("tf.conv_kernels.empty_filters_with_huge_windows") {
  auto zeros = [](const std::string& body, std::vector<ex::value> in, std::size_t count) {
    CAPTURE(body);
    CHECK(run1("graph {\n" + body + "  %r:0 = return(%c)\n}\n", std::move(in)) == std::vector<double>(count, 0.0));
  };
  const std::int64_t huge = 2000000000;
  const std::string h = std::to_string(huge);
  gpass::tensor x(gpass::dtype::f64, {1, 4, 4, 2});
  std::fill(x.data<double>(), x.data<double>() + x.size(), 1.0);
  zeros("  %x = arg() {index = 0} -> (f64[1,4,4,0])\n  %f = arg() {index = 1} -> (f64[" + h + "," + h + ",0,3])\n"
        "  %c = tf::Conv2D(%x, %f) {T = f64, padding = \"SAME\"}\n",
        {gpass::tensor(gpass::dtype::f64, {1, 4, 4, 0}), gpass::tensor(gpass::dtype::f64, {huge, huge, 0, 3})}, 48);
  zeros("  %x = arg() {index = 0} -> (f64[1,4,4,2])\n  %f = arg() {index = 1} -> (f64[" + h + ",0,2,3])\n"
        "  %c = tf::Conv2D(%x, %f) {T = f64, padding = \"SAME\"}\n",
        {x, gpass::tensor(gpass::dtype::f64, {huge, 0, 2, 3})}, 48);
  zeros("  %x = arg() {index = 0} -> (f64[1,4,4,2])\n  %f = arg() {index = 1} -> (f64[" + h + ",0,2,1])\n"
        "  %c = tf::DepthwiseConv2dNative(%x, %f) {T = f64, padding = \"SAME\"}\n",
        {x, gpass::tensor(gpass::dtype::f64, {huge, 0, 2, 1})}, 32);
  for (const std::string op : {"Conv2DBackpropInput", "DepthwiseConv2dNativeBackpropInput"})
    zeros("  %s = arg() {index = 0} -> (i32[4])\n  %f = arg() {index = 1} -> (f64[" + h + "," + h + ",2,0])\n"
          "  %g = arg() {index = 2} -> (f64[1,4,4,0])\n  %c = tf::" + op + "(%s, %f, %g) {T = f64, padding = \"SAME\"}\n",
          {int_sizes({1, 4, 4, 2}), gpass::tensor(gpass::dtype::f64, {huge, huge, 2, 0}), gpass::tensor(gpass::dtype::f64, {1, 4, 4, 0})},
          32);
}

// Images without channels of 2^31 x 2^31 positions: the pools and their gradients return
// their empty outputs at once, not after a walk over 2^62 positions.
TEST_CASE("tf.conv_kernels.empty_images_with_huge_positions") {
  const std::int64_t huge = std::int64_t{1} << 31;
  const std::string t = "f64[1," + std::to_string(huge) + "," + std::to_string(huge) + ",0]";
  const gpass::tensor x(gpass::dtype::f64, {1, huge, huge, 0});
  const std::string window = "ksize = [1, 1, 1, 1], padding = \"VALID\", strides = [1, 1, 1, 1]";
  for (const std::string op : {"MaxPool", "AvgPool"}) {
    CAPTURE(op);
    CHECK(run1("graph {\n  %x = arg() {index = 0} -> (" + t + ")\n  %y = tf::" + op + "(%x) {T = f64, " + window +
                   "}\n  %r:0 = return(%y)\n}\n",
               {x})
              .empty());
  }
  CHECK(run1("graph {\n  %x = arg() {index = 0} -> (" + t + ")\n  %y = arg() {index = 1} -> (" + t +
                 ")\n  %g = arg() {index = 2} -> (" + t + ")\n  %dx = tf::MaxPoolGrad(%x, %y, %g) {T = f64, " + window +
                 "}\n  %r:0 = return(%dx)\n}\n",
             {x, x, x})
            .empty());
  CHECK(run1("graph {\n  %s = arg() {index = 0} -> (i64[4])\n  %g = arg() {index = 1} -> (" + t +
                 ")\n  %dx = tf::AvgPoolGrad(%s, %g) {T = f64, " + window + "}\n  %r:0 = return(%dx)\n}\n",
             {gpass::tensor::from<std::int64_t>({1, huge, huge, 0}), x})
            .empty());
}

// Sizes and attributes whose arithmetic would overflow int64: an error naming the node
// (a depthwise filter's channels from filter_sizes), or bounded (LRN's depth_radius near
// 2^63 sums the whole depth).
TEST_CASE("tf.conv_kernels.overflowing_sizes_and_attributes") {
  gpass::tensor x(gpass::dtype::f64, {1, 2, 2, 4});
  std::fill(x.data<double>(), x.data<double>() + x.size(), 1.0);
  const std::string e = run_error(
      "graph {\n  %x = arg() {index = 0} -> (f64[1,2,2,4])\n  %s = arg() {index = 1} -> (i64[4])\n"
      "  %g = arg() {index = 2} -> (f64[1,2,2,0])\n"
      "  %c = tf::DepthwiseConv2dNativeBackpropFilter(%x, %s, %g) {T = f64, padding = \"SAME\"} -> (f64[?,?,?,?])\n"
      "  %r:0 = return(%c)\n}\n",
      {x, gpass::tensor::from<std::int64_t>({1, 1, 4, std::int64_t{1} << 62}), gpass::tensor(gpass::dtype::f64, {1, 2, 2, 0})});
  CHECK(e.find("'c'") != std::string::npos);
  CHECK(e.find("the output channels (4 x channel multiplier 4611686018427387904) overflow int64") != std::string::npos);

  std::mt19937 rng(23);
  const gpass::tensor v = random({1, 1, 2, 3}, rng);
  const auto y = run1("graph {\n  %x = arg() {index = 0} -> (f64[1,1,2,3])\n"
                      "  %y = tf::LRN(%x) {T = f64, depth_radius = 9223372036854775807, bias = 1.0, alpha = 0.5, beta = 0.75}\n"
                      "  %r:0 = return(%y)\n}\n",
                      {v});
  REQUIRE(y.size() == 6);
  const double* pv = v.data<double>();
  for (int p = 0; p < 2; ++p) {
    const double sq = pv[p * 3] * pv[p * 3] + pv[p * 3 + 1] * pv[p * 3 + 1] + pv[p * 3 + 2] * pv[p * 3 + 2];
    for (int d = 0; d < 3; ++d)
      CHECK(y[static_cast<std::size_t>(p * 3 + d)] == doctest::Approx(pv[p * 3 + d] * std::pow(1 + 0.5 * sq, -0.75)).epsilon(1e-12));
  }
}

}  // namespace gpass_test_tf_conv_kernels
