// SPDX-License-Identifier: Apache-2.0
// The NHWC / NDHWC convolution and pooling kernels (tf_conv.hpp) beyond what the
// cnn_training and conv3d fixtures cover: Conv2DBackpropInput / Conv2DBackpropFilter and
// Conv3DBackpropInputV2 / Conv3DBackpropFilterV2 against finite differences of Conv2D /
// Conv3D for strides, dilations and SAME / VALID / EXPLICIT padding; AvgPoolGrad,
// MaxPoolGrad and their 3-D forms against the pools' finite differences; dilated Conv3D
// against the dilated filter written out; MaxPool3DGrad's ties; errors naming the node.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
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

}  // namespace gpass_test_tf_conv_kernels
