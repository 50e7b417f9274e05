// SPDX-License-Identifier: Apache-2.0
// Tests of the Eigen CPU kernels of TensorFlow ops (domain "tf"), one node at a time through
// exec::run_kernel. Expected values are worked out by hand from TensorFlow's documented
// semantics (tf.math.floormod, tf.strided_slice, tf.gather, tf.math.top_k, ...).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <gpass/exec/eigen_cpu.hpp>

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_exec_tf {

namespace {

using gpass::dtype;
using gpass::tensor;
using gpass::exec::value;
using i64 = std::int64_t;
using i32 = std::int32_t;

struct fixture {
  gpass::exec::eigen_cpu cpu;
  gpass::exec::kernel_registry<gpass::exec::eigen_cpu> reg;
  explicit fixture(int threads = 1) : cpu({.threads = threads}) { gpass::exec::register_eigen_cpu_tf(reg); }

  std::vector<value> run(const std::string& op, std::vector<value> in, gpass::attribute_map attrs = {}, std::size_t outputs = 1) {
    gpass::exec::kernel_node n{.name = "n", .op = op, .domain = "tf", .attrs = std::move(attrs)};
    n.input_types.resize(in.size());
    n.output_types.resize(outputs);
    return gpass::exec::run_kernel(cpu, reg, n, std::move(in));
  }
  tensor run1(const std::string& op, std::vector<value> in, gpass::attribute_map attrs = {}) {
    return run(op, std::move(in), std::move(attrs)).at(0).tensor();
  }
};

tensor f32(std::vector<float> v, std::vector<i64> s) { return tensor::from<float>(std::move(v), std::move(s)); }
tensor f32v(std::vector<float> v) { return tensor::from<float>(std::move(v)); }
tensor i32v(std::vector<i32> v) { return tensor::from<i32>(std::move(v)); }
tensor i32m(std::vector<i32> v, std::vector<i64> s) { return tensor::from<i32>(std::move(v), std::move(s)); }
tensor i64v(std::vector<i64> v) { return tensor::from<i64>(std::move(v)); }
tensor i32s(i32 v) { return tensor::scalar<i32>(v); }
tensor iota_f32(std::vector<i64> s) {
  tensor t(dtype::f32, s);
  for (i64 i = 0; i < t.size(); ++i) t.data<float>()[i] = static_cast<float>(i);
  return t;
}
tensor iota_i32(std::vector<i64> s) {
  tensor t(dtype::int32, s);
  for (i64 i = 0; i < t.size(); ++i) t.data<i32>()[i] = static_cast<i32>(i);
  return t;
}
template <class T>
std::vector<T> vals(const tensor& t) {
  auto s = t.values<T>();
  return {s.begin(), s.end()};
}
using sizes = std::vector<i64>;

}  // namespace

TEST_CASE("exec.tf.binary_broadcast_and_division") {
  fixture f;
  // AddV2 / Sub / Mul broadcast like numpy
  auto a = f32({1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK(vals<float>(f.run1("AddV2", {a, f32v({10, 20, 30})})) == std::vector<float>{11, 22, 33, 14, 25, 36});
  CHECK(vals<float>(f.run1("Add", {a, tensor::scalar<float>(1)})) == std::vector<float>{2, 3, 4, 5, 6, 7});
  CHECK(vals<float>(f.run1("Sub", {f32({1, 2}, {2, 1}), f32v({1, 2, 3})})) == std::vector<float>{0, -1, -2, 1, 0, -1});
  CHECK(vals<i32>(f.run1("Mul", {i32v({2, -3}), i32v({4, 5})})) == std::vector<i32>{8, -15});
  CHECK(vals<float>(f.run1("RealDiv", {f32v({1, -3}), f32v({2, 4})})) == std::vector<float>{0.5f, -0.75f});
  // FloorDiv / FloorMod round toward -inf: 7 // -2 = -4, 7 % -2 = -1, -7 % 2 = 1
  CHECK(vals<i32>(f.run1("FloorDiv", {i32v({7, -7, 7, -7, 6}), i32v({2, 2, -2, -2, 3})})) == std::vector<i32>{3, -4, -4, 3, 2});
  CHECK(vals<i32>(f.run1("FloorMod", {i32v({7, -7, 7, -7, 6}), i32v({2, 2, -2, -2, 3})})) == std::vector<i32>{1, 1, -1, -1, 0});
  CHECK(vals<i64>(f.run1("FloorMod", {i64v({-1}), i64v({5})})) == std::vector<i64>{4});
  CHECK(vals<float>(f.run1("FloorDiv", {f32v({7.5f, -7.5f}), f32v({2, 2})})) == std::vector<float>{3, -4});
  CHECK(vals<float>(f.run1("FloorMod", {f32v({7.5f, -7.5f, 7.5f}), f32v({2, 2, -2})})) == std::vector<float>{1.5f, 0.5f, -0.5f});
  // truncating forms: Div and TruncateDiv / TruncateMod
  CHECK(vals<i32>(f.run1("Div", {i32v({7, -7}), i32v({2, 2})})) == std::vector<i32>{3, -3});
  CHECK(vals<i32>(f.run1("TruncateMod", {i32v({7, -7}), i32v({-2, 2})})) == std::vector<i32>{1, -1});
  CHECK_THROWS_WITH_AS(f.run1("FloorDiv", {i32v({1}), i32v({0})}), doctest::Contains("division by zero"), gpass::error);
  // Maximum / Minimum propagate NaN; SquaredDifference; Pow
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto mx = vals<float>(f.run1("Maximum", {f32v({1, nan, 3}), f32v({2, 0, -1})}));
  CHECK(mx[0] == 2);
  CHECK(std::isnan(mx[1]));
  CHECK(mx[2] == 3);
  CHECK(vals<i32>(f.run1("Minimum", {i32v({1, 5}), i32s(3)})) == std::vector<i32>{1, 3});
  CHECK(vals<float>(f.run1("SquaredDifference", {f32v({1, 5}), f32v({4, 1})})) == std::vector<float>{9, 16});
  CHECK(vals<i32>(f.run1("Pow", {i32v({2, 3}), i32v({10, 2})})) == std::vector<i32>{1024, 9});
  CHECK(vals<float>(f.run1("DivNoNan", {f32v({1, 2}), f32v({0, 4})})) == std::vector<float>{0, 0.5f});
  // incompatible sizes and mixed types are errors
  CHECK_THROWS_WITH_AS(f.run1("AddV2", {a, f32v({1, 2})}), doctest::Contains("broadcast"), gpass::error);
  CHECK_THROWS_AS(f.run1("AddV2", {a, i32v({1, 2, 3})}), gpass::error);
}

TEST_CASE("exec.tf.compare_logical_select") {
  fixture f;
  CHECK(vals<bool>(f.run1("Less", {i32v({1, 2, 3}), i32s(2)})) == std::vector<bool>{true, false, false});
  CHECK(vals<bool>(f.run1("GreaterEqual", {f32v({1, 2, 3}), f32v({2, 2, 2})})) == std::vector<bool>{false, true, true});
  CHECK(vals<bool>(f.run1("NotEqual", {i64v({1, 2}), i64v({1, 3})})) == std::vector<bool>{false, true});
  auto t = tensor::from<bool>({true, false, true, false});
  auto u = tensor::from<bool>({true, true, false, false});
  CHECK(vals<bool>(f.run1("LogicalAnd", {t, u})) == std::vector<bool>{true, false, false, false});
  CHECK(vals<bool>(f.run1("LogicalOr", {t, u})) == std::vector<bool>{true, true, true, false});
  CHECK(vals<bool>(f.run1("LogicalNot", {t})) == std::vector<bool>{false, true, false, true});
  // Select v1: a vector condition picks whole rows
  auto x = f32({1, 2, 3, 4, 5, 6}, {3, 2});
  auto y = f32({-1, -2, -3, -4, -5, -6}, {3, 2});
  auto c = tensor::from<bool>({true, false, true});
  auto s = f.run1("Select", {c, x, y});
  CHECK(s.sizes() == sizes{3, 2});
  CHECK(vals<float>(s) == std::vector<float>{1, 2, -3, -4, 5, 6});
  // same-shape condition: elementwise
  auto c2 = tensor::from<bool>({true, false, false, true, true, false}, {3, 2});
  CHECK(vals<float>(f.run1("Select", {c2, x, y})) == std::vector<float>{1, -2, -3, 4, 5, -6});
  CHECK_THROWS_AS(f.run1("Select", {tensor::from<bool>({true, false}), x, y}), gpass::error);
  // SelectV2 broadcasts all three
  auto cr = tensor::from<bool>({true, false}, {1, 2});
  CHECK(vals<float>(f.run1("SelectV2", {cr, x, tensor::scalar<float>(0)})) == std::vector<float>{1, 0, 3, 0, 5, 0});
}

TEST_CASE("exec.tf.unary_and_activations") {
  fixture f;
  auto x = f32v({-2, -0.5f, 0, 0.5f, 2.5f, 7});
  CHECK(vals<float>(f.run1("Neg", {x})) == std::vector<float>{2, 0.5f, 0, -0.5f, -2.5f, -7});
  CHECK(vals<float>(f.run1("Square", {x})) == std::vector<float>{4, 0.25f, 0, 0.25f, 6.25f, 49});
  CHECK(vals<float>(f.run1("Relu", {x})) == std::vector<float>{0, 0, 0, 0.5f, 2.5f, 7});
  CHECK(vals<float>(f.run1("Relu6", {x})) == std::vector<float>{0, 0, 0, 0.5f, 2.5f, 6});
  CHECK(vals<float>(f.run1("Round", {x})) == std::vector<float>{-2, -0, 0, 0, 2, 7});  // halves to even
  CHECK(vals<float>(f.run1("LeakyRelu", {x})) == std::vector<float>{-0.4f, -0.1f, 0, 0.5f, 2.5f, 7});
  CHECK(vals<float>(f.run1("Rsqrt", {f32v({4, 16})})) == std::vector<float>{0.5f, 0.25f});
  CHECK(vals<float>(f.run1("Sqrt", {f32v({4, 16})})) == std::vector<float>{2, 4});
  CHECK(vals<i32>(f.run1("Abs", {i32v({-3, 4})})) == std::vector<i32>{3, 4});
  auto s = vals<float>(f.run1("Sigmoid", {f32v({0, 2})}));
  CHECK(s[0] == doctest::Approx(0.5));
  CHECK(s[1] == doctest::Approx(1.0 / (1.0 + std::exp(-2.0))));
  auto th = vals<double>(f.run1("Tanh", {tensor::from<double>({0.5})}));
  CHECK(th[0] == doctest::Approx(std::tanh(0.5)));
  CHECK(vals<float>(f.run1("Exp", {f32v({0})})) == std::vector<float>{1});
  CHECK(vals<float>(f.run1("Log", {f32v({1})})) == std::vector<float>{0});
  CHECK(vals<bool>(f.run1("IsFinite", {f32v({1, std::numeric_limits<float>::infinity()})})) == std::vector<bool>{true, false});
  CHECK_THROWS_AS(f.run1("Sqrt", {i32v({4})}), gpass::error);  // TF registers Sqrt for floats only
}

TEST_CASE("exec.tf.addn_biasadd_cast_clip") {
  fixture f;
  CHECK(vals<float>(f.run1("AddN", {f32v({1, 2}), f32v({10, 20}), f32v({100, 200})})) == std::vector<float>{111, 222});
  auto x = iota_f32({2, 2, 3});
  auto b = f32v({10, 20, 30});
  CHECK(vals<float>(f.run1("BiasAdd", {x, b})) == std::vector<float>{10, 21, 32, 13, 24, 35, 16, 27, 38, 19, 30, 41});
  // NCHW: the bias runs along dimension 1
  auto xc = iota_f32({1, 3, 2});
  CHECK(vals<float>(f.run1("BiasAdd", {xc, b}, {{"data_format", std::string("NCHW")}})) ==
        std::vector<float>{10, 11, 22, 23, 34, 35});
  CHECK_THROWS_WITH_AS(f.run1("BiasAdd", {x, f32v({1, 2})}), doctest::Contains("channel"), gpass::error);
  // Cast float -> int truncates toward zero; int -> bool is != 0
  auto c = f.run1("Cast", {f32v({1.7f, -1.7f, 0})}, {{"SrcT", dtype::f32}, {"DstT", dtype::int32}});
  CHECK(c.element_type() == dtype::int32);
  CHECK(vals<i32>(c) == std::vector<i32>{1, -1, 0});
  CHECK(vals<bool>(f.run1("Cast", {i32v({0, 5})}, {{"DstT", dtype::bool_}})) == std::vector<bool>{false, true});
  CHECK_THROWS_AS(f.run1("Cast", {i32v({0})}, {{"SrcT", dtype::f32}, {"DstT", dtype::bool_}}), gpass::error);
  // to bfloat16 (7 fraction bits): 1 + 3 * 2^-9 rounds to the nearer 1 + 2^-7; Truncate gives 1
  const float v = 1.0f + 3.0f / 512.0f;
  auto bn = f.run1("Cast", {f32v({v})}, {{"DstT", dtype::bf16}});
  CHECK(static_cast<float>(bn.data<Eigen::bfloat16>()[0]) == 1.0f + 1.0f / 128.0f);
  auto bt = f.run1("Cast", {f32v({v})}, {{"DstT", dtype::bf16}, {"Truncate", true}});
  CHECK(static_cast<float>(bt.data<Eigen::bfloat16>()[0]) == 1.0f);
  CHECK(vals<float>(f.run1("ClipByValue", {f32v({-5, 0.5f, 5}), tensor::scalar<float>(0), tensor::scalar<float>(1)})) ==
        std::vector<float>{0, 0.5f, 1});
}

TEST_CASE("exec.tf.matmul") {
  fixture f;
  auto a = f32({1, 2, 3, 4, 5, 6}, {2, 3});
  auto b = f32({1, 0, 0, 1, 1, 1}, {3, 2});
  CHECK(vals<float>(f.run1("MatMul", {a, b})) == std::vector<float>{4, 5, 10, 11});
  // transpose_a: a^T (3x2) times [[1,0],[0,1]]
  auto i2 = f32({1, 0, 0, 1}, {2, 2});
  auto at = f.run1("MatMul", {a, i2}, {{"transpose_a", true}});
  CHECK(at.sizes() == sizes{3, 2});
  CHECK(vals<float>(at) == std::vector<float>{1, 4, 2, 5, 3, 6});
  // transpose_b: a * a^T
  CHECK(vals<float>(f.run1("MatMul", {a, a}, {{"transpose_b", true}})) == std::vector<float>{14, 32, 32, 77});
  CHECK(vals<i32>(f.run1("MatMul", {i32m({1, 2, 3, 4}, {2, 2}), i32m({5, 6, 7, 8}, {2, 2})})) == std::vector<i32>{19, 22, 43, 50});
  CHECK_THROWS_WITH_AS(f.run1("MatMul", {a, a}), doctest::Contains("inner dimensions"), gpass::error);
  // b known as a constant (a Const) when the kernel is made: packed once, same products, and
  // another b at run time is not mistaken for it
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      INFO("transpose_a=" << ta << " transpose_b=" << tb);
      std::vector<float> av(5 * 40), bv(40 * 37), ov(40 * 37);
      for (std::size_t i = 0; i < av.size(); ++i) av[i] = static_cast<float>(i % 7) - 3.0f;
      for (std::size_t i = 0; i < bv.size(); ++i) bv[i] = static_cast<float>(i % 5) * 0.5f;
      for (std::size_t i = 0; i < ov.size(); ++i) ov[i] = static_cast<float>(i % 3);
      const tensor x = f32(av, ta ? std::vector<i64>{40, 5} : std::vector<i64>{5, 40});
      const tensor w = f32(bv, tb ? std::vector<i64>{37, 40} : std::vector<i64>{40, 37});
      const tensor other = f32(ov, w.sizes());
      gpass::exec::kernel_node n{.name = "n", .op = "MatMul", .domain = "tf",
                                 .attrs = {{"transpose_a", ta}, {"transpose_b", tb}}};
      n.input_types.resize(2);
      n.output_types.resize(1);
      auto packed = n;
      packed.constant_inputs = {std::nullopt, w};
      for (const tensor& bw : {w, other}) {
        const tensor want = gpass::exec::run_kernel(f.cpu, f.reg, n, {x, bw}).at(0).tensor();
        const tensor got = gpass::exec::run_kernel(f.cpu, f.reg, packed, {x, bw}).at(0).tensor();
        REQUIRE(got.sizes() == sizes{5, 37});
        for (i64 i = 0; i < want.size(); ++i) CHECK(std::abs(got.data<float>()[i] - want.data<float>()[i]) < 1e-3);
      }
    }
  // BatchMatMulV2 broadcasts batches: [2,1,2,2] x [3,2,2] -> [2,3,2,2]
  tensor x(dtype::f32, {2, 1, 2, 2});
  for (int i = 0; i < 8; ++i) x.data<float>()[i] = static_cast<float>(i + 1);
  tensor y(dtype::f32, {3, 2, 2});
  for (int k = 0; k < 3; ++k) {  // y[k] = (k + 1) * identity
    float* p = y.data<float>() + 4 * k;
    p[0] = p[3] = static_cast<float>(k + 1);
    p[1] = p[2] = 0;
  }
  auto z = f.run1("BatchMatMulV2", {x, y});
  CHECK(z.sizes() == sizes{2, 3, 2, 2});
  const float* zp = z.data<float>();
  for (int bi = 0; bi < 2; ++bi)
    for (int k = 0; k < 3; ++k)
      for (int e = 0; e < 4; ++e) CHECK(zp[(bi * 3 + k) * 4 + e] == static_cast<float>((bi * 4 + e + 1) * (k + 1)));
  // adj_x / adj_y: x^T * x^T for x = [[1,2],[3,4]] is [[7,15],[10,22]]
  auto m = f32({1, 2, 3, 4}, {1, 2, 2});
  CHECK(vals<float>(f.run1("BatchMatMulV2", {m, m}, {{"adj_x", true}, {"adj_y", true}})) == std::vector<float>{7, 15, 10, 22});
  CHECK_THROWS_AS(f.run1("BatchMatMul", {x, y}), gpass::error);  // v1 needs equal batch dimensions
}

TEST_CASE("exec.tf.reductions_argmax_softmax") {
  fixture f;
  auto x = iota_f32({2, 3});  // [[0,1,2],[3,4,5]]
  auto s = f.run1("Sum", {x, i32v({1})});
  CHECK(s.sizes() == sizes{2});
  CHECK(vals<float>(s) == std::vector<float>{3, 12});
  auto k = f.run1("Sum", {x, i32v({0})}, {{"keep_dims", true}});
  CHECK(k.sizes() == sizes{1, 3});
  CHECK(vals<float>(k) == std::vector<float>{3, 5, 7});
  CHECK(vals<float>(f.run1("Mean", {x, i64v({-1})})) == std::vector<float>{1, 4});
  CHECK(vals<float>(f.run1("Max", {x, i32v({0, 1})})) == std::vector<float>{5});
  CHECK(vals<float>(f.run1("Min", {x, i32s(1)})) == std::vector<float>{0, 3});
  CHECK(vals<float>(f.run1("Prod", {f32v({2, 3, 4}), i32v({0})})) == std::vector<float>{24});
  CHECK(vals<i32>(f.run1("Mean", {i32v({1, 2}), i32v({0})})) == std::vector<i32>{1});  // integer mean truncates
  // empty reduction_indices: nothing reduced
  CHECK(f.run1("Sum", {x, tensor(dtype::int32, {0})}).sizes() == sizes{2, 3});
  CHECK_THROWS_AS(f.run1("Sum", {x, i32v({2})}), gpass::error);
  auto bm = tensor::from<bool>({true, false, true, true}, {2, 2});
  CHECK(vals<bool>(f.run1("All", {bm, i32v({1})})) == std::vector<bool>{false, true});
  CHECK(vals<bool>(f.run1("Any", {bm, i32v({0})})) == std::vector<bool>{true, true});
  // ArgMax: int64 by default, output_type int32, ties give the first index
  auto am = f.run1("ArgMax", {f32({1, 3, 3, 0, -1, -1}, {2, 3}), i32s(1)});
  CHECK(am.element_type() == dtype::int64);
  CHECK(vals<i64>(am) == std::vector<i64>{1, 0});
  auto am32 = f.run1("ArgMin", {f32({1, 3, 3, 0, -1, -1}, {2, 3}), i32s(0)}, {{"output_type", dtype::int32}});
  CHECK(vals<i32>(am32) == std::vector<i32>{1, 1, 1});
  // Softmax over the last axis
  auto sm = vals<float>(f.run1("Softmax", {f32({0, 0, 0, 0, 0, std::log(3.0f)}, {2, 3})}));
  CHECK(sm[0] == doctest::Approx(1.0 / 3));
  CHECK(sm[3] == doctest::Approx(0.2));
  CHECK(sm[5] == doctest::Approx(0.6));
  auto lsm = vals<float>(f.run1("LogSoftmax", {f32v({0, 0})}));
  CHECK(lsm[0] == doctest::Approx(std::log(0.5)));
  // Cumsum (tf.math.cumsum docs): [a, b, c] -> [a, a+b, a+b+c]; exclusive [0, a, a+b]; reverse [a+b+c, b+c, c]
  auto cs = f32v({1, 2, 4});
  CHECK(vals<float>(f.run1("Cumsum", {cs, i32s(0)})) == std::vector<float>{1, 3, 7});
  CHECK(vals<float>(f.run1("Cumsum", {cs, i32s(0)}, {{"exclusive", true}})) == std::vector<float>{0, 1, 3});
  CHECK(vals<float>(f.run1("Cumsum", {cs, i32s(0)}, {{"reverse", true}})) == std::vector<float>{7, 6, 4});
  // Einsum: a matrix product and a trace-free transpose
  auto ein = f.run1("Einsum", {f32({1, 2, 3, 4}, {2, 2}), f32({5, 6, 7, 8}, {2, 2})}, {{"equation", std::string("ij,jk->ik")}});
  CHECK(vals<float>(ein) == std::vector<float>{19, 22, 43, 50});
}

TEST_CASE("exec.tf.graph_ops") {
  fixture f;
  auto v = f32v({1, 2});
  auto c = f.run1("Const", {}, {{"value", v}, {"dtype", dtype::f32}});
  CHECK(c.buffer() == v.buffer());
  CHECK_THROWS_WITH_AS(f.run1("Placeholder", {}, {{"dtype", dtype::f32}}), doctest::Contains("not fed"), gpass::error);
  CHECK(f.run1("PlaceholderWithDefault", {v}).buffer() == v.buffer());
  CHECK(f.run1("Identity", {v}).buffer() == v.buffer());
  CHECK(f.run1("StopGradient", {v}).buffer() == v.buffer());
  auto idn = f.run("IdentityN", {v, i32v({3})}, {}, 2);
  CHECK(vals<i32>(idn[1].tensor()) == std::vector<i32>{3});
  auto noop = f.run("NoOp", {}, {}, 0);
  CHECK((noop.empty() || noop[0].is_none()));
  CHECK_NOTHROW(f.run("Assert", {tensor::scalar<bool>(true), v}, {}, 0));
  CHECK_THROWS_WITH_AS(f.run("Assert", {tensor::scalar<bool>(false), tensor::from<std::string>({"x is bad"})}, {}, 0),
                       doctest::Contains("x is bad"), gpass::error);
  CHECK_THROWS_AS(f.run1("CheckNumerics", {f32v({1, std::numeric_limits<float>::infinity()})}), gpass::error);
}

TEST_CASE("exec.tf.shape_ops") {
  fixture f;
  auto x = iota_f32({2, 3, 4});
  auto s = f.run1("Shape", {x});
  CHECK(s.element_type() == dtype::int32);
  CHECK(vals<i32>(s) == std::vector<i32>{2, 3, 4});
  CHECK(vals<i64>(f.run1("Shape", {x}, {{"out_type", dtype::int64}})) == std::vector<i64>{2, 3, 4});
  auto sn = f.run("ShapeN", {x, f32v({1})}, {}, 2);
  CHECK(vals<i32>(sn[1].tensor()) == std::vector<i32>{1});
  CHECK(vals<i32>(f.run1("Size", {x})) == std::vector<i32>{24});
  auto r = f.run1("Rank", {x});
  CHECK(r.rank() == 0);
  CHECK(vals<i32>(r) == std::vector<i32>{3});
  CHECK(f.run1("Reshape", {x, i32v({4, -1})}).sizes() == sizes{4, 6});
  CHECK(f.run1("Reshape", {x, i64v({24})}).buffer() == x.buffer());
  CHECK_THROWS_AS(f.run1("Reshape", {x, i32v({5, -1})}), gpass::error);
  CHECK(f.run1("ExpandDims", {x, i32s(-1)}).sizes() == sizes{2, 3, 4, 1});
  CHECK(f.run1("ExpandDims", {x, i32s(0)}).sizes() == sizes{1, 2, 3, 4});
  CHECK_THROWS_AS(f.run1("ExpandDims", {x, i32s(5)}), gpass::error);
  auto y = iota_f32({1, 3, 1});
  CHECK(f.run1("Squeeze", {y}).sizes() == sizes{3});
  CHECK(f.run1("Squeeze", {y}, {{"squeeze_dims", std::vector<i64>{-1}}}).sizes() == sizes{1, 3});
  CHECK_THROWS_WITH_AS(f.run1("Squeeze", {y}, {{"squeeze_dims", std::vector<i64>{1}}}), doctest::Contains("cannot squeeze"),
                       gpass::error);
}

TEST_CASE("exec.tf.transpose_concat_pack_split") {
  fixture f;
  auto x = iota_f32({2, 3});
  auto t = f.run1("Transpose", {x, i32v({1, 0})});
  CHECK(t.sizes() == sizes{3, 2});
  CHECK(vals<float>(t) == std::vector<float>{0, 3, 1, 4, 2, 5});
  CHECK_THROWS_AS(f.run1("Transpose", {x, i32v({0, 0})}), gpass::error);
  // ConcatV2: values..., axis last (negative from the end)
  auto c = f.run1("ConcatV2", {x, f32({9, 9}, {2, 1}), i32s(-1)});
  CHECK(c.sizes() == sizes{2, 4});
  CHECK(vals<float>(c) == std::vector<float>{0, 1, 2, 9, 3, 4, 5, 9});
  CHECK(f.run1("Concat", {i32s(0), x, x}).sizes() == sizes{4, 3});
  // Pack along axis 1 of two [3] vectors: [[1,4],[2,5],[3,6]]; Pack of scalars
  auto p = f.run1("Pack", {f32v({1, 2, 3}), f32v({4, 5, 6})}, {{"axis", i64{1}}});
  CHECK(p.sizes() == sizes{3, 2});
  CHECK(vals<float>(p) == std::vector<float>{1, 4, 2, 5, 3, 6});
  CHECK(vals<i32>(f.run1("Pack", {i32s(7), i32s(8)})) == std::vector<i32>{7, 8});
  // Unpack along axis 1 of [2,3]: three [2] tensors
  auto u = f.run("Unpack", {x}, {{"num", i64{3}}, {"axis", i64{1}}}, 3);
  CHECK(vals<float>(u[2].tensor()) == std::vector<float>{2, 5});
  CHECK(u[0].tensor().sizes() == sizes{2});
  // Split (axis first), SplitV (value, sizes with one -1, axis)
  auto sp = f.run("Split", {i32s(1), iota_f32({2, 4})}, {{"num_split", i64{2}}}, 2);
  CHECK(vals<float>(sp[1].tensor()) == std::vector<float>{2, 3, 6, 7});
  CHECK_THROWS_AS(f.run("Split", {i32s(1), iota_f32({2, 3})}, {{"num_split", i64{2}}}, 2), gpass::error);
  auto sv = f.run("SplitV", {iota_f32({5}), i32v({1, -1, 2}), i32s(0)}, {{"num_split", i64{3}}}, 3);
  CHECK(vals<float>(sv[0].tensor()) == std::vector<float>{0});
  CHECK(vals<float>(sv[1].tensor()) == std::vector<float>{1, 2});
  CHECK(vals<float>(sv[2].tensor()) == std::vector<float>{3, 4});
  CHECK_THROWS_AS(f.run("SplitV", {iota_f32({5}), i32v({1, -1, -1}), i32s(0)}, {}, 3), gpass::error);
}

TEST_CASE("exec.tf.slice_and_strided_slice") {
  fixture f;
  // tf.slice docs: t = [[[1,1,1],[2,2,2]], [[3,3,3],[4,4,4]], [[5,5,5],[6,6,6]]]
  auto t = tensor::from<i32>({1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 5, 5, 5, 6, 6, 6}, {3, 2, 3});
  auto s1 = f.run1("Slice", {t, i32v({1, 0, 0}), i32v({1, 1, 3})});
  CHECK(s1.sizes() == sizes{1, 1, 3});
  CHECK(vals<i32>(s1) == std::vector<i32>{3, 3, 3});
  auto s2 = f.run1("Slice", {t, i32v({1, 0, 0}), i32v({1, 2, 3})});
  CHECK(vals<i32>(s2) == std::vector<i32>{3, 3, 3, 4, 4, 4});
  auto s3 = f.run1("Slice", {t, i32v({1, 0, 0}), i32v({2, 1, -1})});
  CHECK(vals<i32>(s3) == std::vector<i32>{3, 3, 3, 5, 5, 5});
  CHECK_THROWS_AS(f.run1("Slice", {t, i32v({2, 0, 0}), i32v({2, 1, 3})}), gpass::error);

  // tf.strided_slice docs, same t
  auto ss = [&](std::vector<i32> b, std::vector<i32> e, std::vector<i32> s, gpass::attribute_map m = {}) {
    return f.run1("StridedSlice", {t, i32v(std::move(b)), i32v(std::move(e)), i32v(std::move(s))}, std::move(m));
  };
  auto a = ss({1, 0, 0}, {2, 1, 3}, {1, 1, 1});
  CHECK(a.sizes() == sizes{1, 1, 3});
  CHECK(vals<i32>(a) == std::vector<i32>{3, 3, 3});
  auto b = ss({1, 0, 0}, {2, 2, 3}, {1, 1, 1});
  CHECK(b.sizes() == sizes{1, 2, 3});
  CHECK(vals<i32>(b) == std::vector<i32>{3, 3, 3, 4, 4, 4});
  auto c = ss({1, -1, 0}, {2, -3, 3}, {1, -1, 1});  // negative stride: rows 1 then 0
  CHECK(c.sizes() == sizes{1, 2, 3});
  CHECK(vals<i32>(c) == std::vector<i32>{4, 4, 4, 3, 3, 3});
  // shrink_axis_mask: t[1, :, 0] (begin_mask/end_mask bit 1 makes ':')
  auto d = ss({1, 0, 0}, {2, 0, 1}, {1, 1, 1}, {{"shrink_axis_mask", i64{5}}, {"begin_mask", i64{2}}, {"end_mask", i64{2}}});
  CHECK(d.sizes() == sizes{2});
  CHECK(vals<i32>(d) == std::vector<i32>{3, 4});
  // shrink with a negative index: t[-1] is the last block
  auto lastb = ss({-1}, {0}, {1}, {{"shrink_axis_mask", i64{1}}});
  CHECK(lastb.sizes() == sizes{2, 3});
  CHECK(vals<i32>(lastb) == std::vector<i32>{5, 5, 5, 6, 6, 6});
  CHECK_THROWS_WITH_AS(ss({3}, {4}, {1}, {{"shrink_axis_mask", i64{1}}}), doctest::Contains("out of bounds"), gpass::error);
  // ellipsis: t[..., 1] -> [3,2] of the middle column, all 2nd elements
  auto e = ss({0, 1}, {0, 2}, {1, 1}, {{"ellipsis_mask", i64{1}}, {"shrink_axis_mask", i64{2}}});
  CHECK(e.sizes() == sizes{3, 2});
  CHECK(vals<i32>(e) == std::vector<i32>{1, 2, 3, 4, 5, 6});
  // new axis: t[tf.newaxis, 0] -> [1, 2, 3]
  auto na = ss({0, 0}, {0, 1}, {1, 1}, {{"new_axis_mask", i64{1}}, {"shrink_axis_mask", i64{2}}});
  CHECK(na.sizes() == sizes{1, 2, 3});
  CHECK(vals<i32>(na) == std::vector<i32>{1, 1, 1, 2, 2, 2});
  // new axis after an ellipsis: t[..., tf.newaxis] -> [3, 2, 3, 1]
  CHECK(ss({0, 0}, {0, 0}, {1, 1}, {{"ellipsis_mask", i64{1}}, {"new_axis_mask", i64{2}}}).sizes() == sizes{3, 2, 3, 1});
  // mask bits past the spec's entries are ignored (as in TF): t[1:2, 0:1] with a stray
  // ellipsis bit 5 (it counted as an ellipsis: the last dim was sliced to nothing and the
  // output was left unwritten), and INT64_MIN (whose `mask - 1` overflowed)
  for (i64 stray : {i64{1} << 5, std::numeric_limits<i64>::min()}) {
    auto st = ss({1, 0}, {2, 1}, {1, 1}, {{"ellipsis_mask", stray}});
    CHECK(st.sizes() == sizes{1, 1, 3});
    CHECK(vals<i32>(st) == std::vector<i32>{3, 3, 3});
  }
  // clamping and reversal of a vector: v[::-1], v[10:-10:-2], v[-100:100], v[3:1] (empty)
  auto v = iota_i32({5});
  auto vs = [&](i32 b, i32 e, i32 s, i64 bm = 0, i64 em = 0) {
    return vals<i32>(f.run1("StridedSlice", {v, i32v({b}), i32v({e}), i32v({s})}, {{"begin_mask", bm}, {"end_mask", em}}));
  };
  CHECK(vs(0, 0, -1, 1, 1) == std::vector<i32>{4, 3, 2, 1, 0});
  CHECK(vs(10, -10, -2) == std::vector<i32>{4, 2, 0});
  CHECK(vs(-100, 100, 1) == std::vector<i32>{0, 1, 2, 3, 4});
  CHECK(vs(3, 1, 1).empty());
  CHECK(vs(-2, 0, 1, 0, 1) == std::vector<i32>{3, 4});
  CHECK(vs(1, 5, 3) == std::vector<i32>{1, 4});
  CHECK_THROWS_WITH_AS(vs(0, 1, 0), doctest::Contains("non-zero"), gpass::error);
  // StridedSlice of a shape vector (the Shape -> StridedSlice pattern): shape[1:2] shrunk
  auto shp = i32v({8, 16, 32});
  auto dim1 = f.run1("StridedSlice", {shp, i32v({1}), i32v({2}), i32v({1})}, {{"shrink_axis_mask", i64{1}}});
  CHECK(dim1.rank() == 0);
  CHECK(vals<i32>(dim1) == std::vector<i32>{16});
  CHECK_THROWS_AS(f.run1("StridedSlice", {shp, i32v({0, 0}), i32v({1, 1}), i32v({1, 1})}), gpass::error);  // too many indices
}

TEST_CASE("exec.tf.fill_range_tile_pad_broadcast") {
  fixture f;
  auto fl = f.run1("Fill", {i32v({2, 3}), tensor::scalar<float>(9)});
  CHECK(fl.sizes() == sizes{2, 3});
  CHECK(vals<float>(fl) == std::vector<float>(6, 9.0f));
  CHECK(vals<i32>(f.run1("ZerosLike", {i32v({4, 5})})) == std::vector<i32>{0, 0});
  CHECK(vals<float>(f.run1("OnesLike", {f32v({4, 5})})) == std::vector<float>{1, 1});
  // Range: (start, limit, delta), exclusive limit
  CHECK(vals<i32>(f.run1("Range", {i32s(3), i32s(18), i32s(3)})) == std::vector<i32>{3, 6, 9, 12, 15});
  CHECK(vals<i32>(f.run1("Range", {i32s(3), i32s(1), i32s(-1)})) == std::vector<i32>{3, 2});
  CHECK(vals<float>(f.run1("Range", {tensor::scalar<float>(0), tensor::scalar<float>(1), tensor::scalar<float>(0.25f)})) ==
        std::vector<float>{0, 0.25f, 0.5f, 0.75f});
  CHECK_THROWS_AS(f.run1("Range", {i32s(3), i32s(1), i32s(1)}), gpass::error);
  // counts no int64 holds are errors (an infinite or NaN bound, limit - start past int64)
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  CHECK_THROWS_WITH(f.run1("Range", {tensor::scalar<double>(0), tensor::scalar<double>(inf), tensor::scalar<double>(1)}),
                    doctest::Contains("too many elements"));
  CHECK_THROWS_WITH(f.run1("Range", {tensor::scalar<float>(0), tensor::scalar<float>(1e30f), tensor::scalar<float>(1e-3f)}),
                    doctest::Contains("too many elements"));
  CHECK_THROWS_WITH(f.run1("Range", {tensor::scalar<double>(nan), tensor::scalar<double>(1), tensor::scalar<double>(1)}),
                    doctest::Contains("too many elements"));
  const auto i64max = std::numeric_limits<std::int64_t>::max(), i64min = std::numeric_limits<std::int64_t>::min();
  CHECK_THROWS_WITH(f.run1("Range", {tensor::scalar<std::int64_t>(-1), tensor::scalar<std::int64_t>(i64max), tensor::scalar<std::int64_t>(1)}),
                    doctest::Contains("too many elements"));
  CHECK_THROWS_WITH(f.run1("Range", {tensor::scalar<std::int64_t>(i64max), tensor::scalar<std::int64_t>(i64min), tensor::scalar<std::int64_t>(-1)}),
                    doctest::Contains("too many elements"));
  CHECK(vals<std::int64_t>(f.run1("Range", {tensor::scalar<std::int64_t>(i64max - 2), tensor::scalar<std::int64_t>(i64max),
                                            tensor::scalar<std::int64_t>(i64max)})) == std::vector<std::int64_t>{i64max - 2});
  // Tile
  auto t = f.run1("Tile", {f32({1, 2}, {1, 2}), i32v({2, 2})});
  CHECK(t.sizes() == sizes{2, 4});
  CHECK(vals<float>(t) == std::vector<float>{1, 2, 1, 2, 1, 2, 1, 2});
  // Pad / PadV2 / MirrorPad REFLECT
  auto x = f32({1, 2, 3, 4}, {2, 2});
  auto p = f.run1("Pad", {x, i32m({1, 0, 0, 1}, {2, 2})});
  CHECK(p.sizes() == sizes{3, 3});
  CHECK(vals<float>(p) == std::vector<float>{0, 0, 0, 1, 2, 0, 3, 4, 0});
  CHECK(vals<float>(f.run1("PadV2", {f32v({1}), i32m({1, 1}, {1, 2}), tensor::scalar<float>(-1)})) == std::vector<float>{-1, 1, -1});
  CHECK(vals<float>(f.run1("MirrorPad", {f32v({1, 2, 3}), i32m({2, 1}, {1, 2})}, {{"mode", std::string("REFLECT")}})) ==
        std::vector<float>{3, 2, 1, 2, 3, 2});
  CHECK_THROWS_AS(f.run1("Pad", {x, i32v({1, 1})}), gpass::error);
  // BroadcastTo
  auto bt = f.run1("BroadcastTo", {f32v({1, 2, 3}), i32v({2, 3})});
  CHECK(vals<float>(bt) == std::vector<float>{1, 2, 3, 1, 2, 3});
  CHECK_THROWS_AS(f.run1("BroadcastTo", {f32({1, 2}, {2, 1}), i32v({2})}), gpass::error);
  // ReverseV2, OneHot
  CHECK(vals<float>(f.run1("ReverseV2", {x, i32v({-1})})) == std::vector<float>{2, 1, 4, 3});
  auto oh = f.run1("OneHot", {i32v({0, 2, -1}), i32s(3), tensor::scalar<float>(1), tensor::scalar<float>(0)});
  CHECK(oh.sizes() == sizes{3, 3});
  CHECK(vals<float>(oh) == std::vector<float>{1, 0, 0, 0, 0, 1, 0, 0, 0});
}

TEST_CASE("exec.tf.gather_topk") {
  fixture f;
  auto p = iota_f32({3, 2});  // [[0,1],[2,3],[4,5]]
  auto g = f.run1("GatherV2", {p, i32v({2, 0}), i32s(0)});
  CHECK(g.sizes() == sizes{2, 2});
  CHECK(vals<float>(g) == std::vector<float>{4, 5, 0, 1});
  auto g1 = f.run1("GatherV2", {p, i32m({1, 0, 1}, {3, 1}), i32s(1)});
  CHECK(g1.sizes() == sizes{3, 3, 1});
  CHECK(vals<float>(g1) == std::vector<float>{1, 0, 1, 3, 2, 3, 5, 4, 5});
  CHECK_THROWS_WITH_AS(f.run1("GatherV2", {p, i32v({3}), i32s(0)}), doctest::Contains("not in [0, 3)"), gpass::error);
  CHECK_THROWS_AS(f.run1("GatherV2", {p, i32v({-1}), i32s(0)}), gpass::error);
  // batch_dims 1: out[b, j] = params[b, indices[b, j]]
  auto gb = f.run1("GatherV2", {p, i32m({1, 1, 0, 1, 0, 0}, {3, 2}), i32s(1)}, {{"batch_dims", i64{1}}});
  CHECK(gb.sizes() == sizes{3, 2});
  CHECK(vals<float>(gb) == std::vector<float>{1, 1, 2, 3, 4, 4});
  // TopKV2: last axis, int32 indices, ties by lower index
  auto tk = f.run("TopKV2", {f32({1, 3, 3, 2, 5, 0, 5, 4}, {2, 4}), i32s(2)}, {}, 2);
  CHECK(vals<float>(tk[0].tensor()) == std::vector<float>{3, 3, 5, 5});
  CHECK(tk[1].tensor().element_type() == dtype::int32);
  CHECK(vals<i32>(tk[1].tensor()) == std::vector<i32>{1, 2, 0, 2});
  CHECK_THROWS_AS(f.run("TopKV2", {f32v({1, 2}), i32s(3)}, {}, 2), gpass::error);
  // Where (one input): coordinates of the true elements in row-major order
  auto w = f.run1("Where", {tensor::from<bool>({false, true, true, false, false, true}, {2, 3})});
  CHECK(w.element_type() == dtype::int64);
  CHECK(w.sizes() == sizes{3, 2});
  CHECK(vals<i64>(w) == std::vector<i64>{0, 1, 0, 2, 1, 2});
  CHECK(vals<i32>(f.run1("InvertPermutation", {i32v({3, 4, 0, 2, 1})})) == std::vector<i32>{2, 4, 3, 0, 1});
  CHECK_THROWS_AS(f.run1("InvertPermutation", {i32v({0, 0})}), gpass::error);
}

TEST_CASE("exec.tf.gradient_ops") {
  fixture f;
  // ReluGrad passes the gradient where the feature is > 0; TanhGrad dy*(1-y^2); SigmoidGrad dy*y*(1-y)
  CHECK(vals<float>(f.run1("ReluGrad", {f32v({1, 2, 3}), f32v({-1, 0, 5})})) == std::vector<float>{0, 0, 3});
  CHECK(vals<float>(f.run1("TanhGrad", {f32v({0.5f, 0}), f32v({2, 3})})) == std::vector<float>{1.5f, 3});
  CHECK(vals<float>(f.run1("SigmoidGrad", {f32v({0.5f, 1}), f32v({4, 3})})) == std::vector<float>{1, 0});
  CHECK_THROWS_WITH(f.run1("ReluGrad", {f32v({1, 2}), f32v({1, 2, 3})}), doctest::Contains("same shape"));
  // BiasAddGrad sums all but the channel dim
  CHECK(vals<float>(f.run1("BiasAddGrad", {iota_f32({2, 3})})) == std::vector<float>{3, 5, 7});
  CHECK(vals<float>(f.run1("BiasAddGrad", {iota_f32({1, 2, 2})}, {{"data_format", std::string("NCHW")}})) ==
        std::vector<float>{1, 5});
  // the cross-entropies: loss and backprop (softmax - labels)
  auto d = f.run("SoftmaxCrossEntropyWithLogits", {f32({0, 0, 1, 1}, {2, 2}), f32({1, 0, 0, 1}, {2, 2})}, {}, 2);
  CHECK(vals<float>(d[0].tensor()) == std::vector<float>{std::log(2.0f), std::log(2.0f)});
  CHECK(vals<float>(d[1].tensor()) == std::vector<float>{-0.5f, 0.5f, 0.5f, -0.5f});
  auto sp = f.run("SparseSoftmaxCrossEntropyWithLogits", {f32({0, 0, 1, 1}, {2, 2}), i32v({0, 1})}, {}, 2);
  CHECK(vals<float>(sp[0].tensor()) == vals<float>(d[0].tensor()));
  CHECK(vals<float>(sp[1].tensor()) == vals<float>(d[1].tensor()));
  CHECK_THROWS_WITH(f.run("SparseSoftmaxCrossEntropyWithLogits", {f32({0, 0}, {1, 2}), i32v({2})}, {}, 2),
                    doctest::Contains("outside the valid range [0, 2)"));
  // BroadcastGradientArgs, TensorFlow's rule (size-1 axes of both sides reduce on both)
  auto b = f.run("BroadcastGradientArgs", {i32v({4, 1, 3}), i32v({2, 1, 4, 1, 1})}, {}, 2);
  CHECK(vals<i32>(b[0].tensor()) == std::vector<i32>{0, 1, 3});
  CHECK(vals<i32>(b[1].tensor()) == std::vector<i32>{1, 3, 4});
  auto same = f.run("BroadcastGradientArgs", {i32v({1}), i32v({1})}, {}, 2);
  CHECK(same[0].tensor().size() == 0);
  CHECK(same[1].tensor().size() == 0);
  CHECK_THROWS_WITH(f.run("BroadcastGradientArgs", {i32v({2, 3}), i32v({4, 3})}, {}, 2), doctest::Contains("incompatible shapes"));
}

// Integer arithmetic on tensor values wraps (two's complement) instead of overflowing, integer
// means never divide by a narrowed count, and index values that would overflow fail or wrap.
TEST_CASE("exec.tf.index_ops_integer_overflow") {
  fixture f;
  constexpr i32 i32max = std::numeric_limits<i32>::max(), i32min = std::numeric_limits<i32>::min();
  constexpr i64 i64max = std::numeric_limits<i64>::max(), i64min = std::numeric_limits<i64>::min();
  // ScatterNd (duplicates add up), TensorScatterAdd / Sub, UnsortedSegmentSum / Prod wrap
  CHECK(vals<i32>(f.run1("ScatterNd", {i32m({0, 0}, {2, 1}), i32v({i32max, 1}), i32v({1})})) == std::vector<i32>{i32min});
  CHECK(vals<i32>(f.run1("TensorScatterAdd", {i32v({i32max}), i32m({0}, {1, 1}), i32v({1})})) == std::vector<i32>{i32min});
  CHECK(vals<i32>(f.run1("TensorScatterSub", {i32v({i32min}), i32m({0}, {1, 1}), i32v({1})})) == std::vector<i32>{i32max});
  CHECK(vals<i64>(f.run1("UnsortedSegmentSum", {i64v({i64max, 1}), i32v({0, 0}), i32s(1)})) == std::vector<i64>{i64min});
  CHECK(vals<i32>(f.run1("UnsortedSegmentProd", {i32v({65536, 65536, 3}), i32v({0, 0, 1}), i32s(2)})) == std::vector<i32>{0, 3});
  // uint16 * uint16 would promote to int and overflow: 65535^2 mod 2^16 = 1
  CHECK(vals<std::uint16_t>(f.run1("UnsortedSegmentProd", {tensor::from<std::uint16_t>({65535, 65535}), i32v({0, 0}), i32s(1)})) ==
        std::vector<std::uint16_t>{1});
  CHECK(vals<i32>(f.run1("SegmentSum", {i32v({i32max, 2}), i32v({0, 0})})) == std::vector<i32>{i32min + 1});
  CHECK(vals<i32>(f.run1("SegmentProd", {i32v({65536, 65536}), i32v({0, 0})})) == std::vector<i32>{0});
  // SegmentMean of small integers: a count of 256 is 0 as an int8 (and 257 is 1); the mean of
  // the wrapped sum divides by the true count
  for (const i64 rows : {256, 257}) {
    auto m = f.run1("SegmentMean", {tensor::from<std::int8_t>(std::vector<std::int8_t>(static_cast<std::size_t>(rows), 1)),
                                    i32v(std::vector<i32>(static_cast<std::size_t>(rows), 0))});
    CHECK(vals<std::int8_t>(m) == std::vector<std::int8_t>{0});  // (256 -> 0, 257 -> 1; / rows -> 0)
  }
  {
    std::vector<std::uint16_t> x(65537, 0);
    x[0] = 65535;  // sum 65535 / 65537 rows -> 0 (an int16 count 65537 would be 1)
    auto m = f.run1("SegmentMean", {tensor::from<std::uint16_t>(x), i32v(std::vector<i32>(x.size(), 0))});
    CHECK(vals<std::uint16_t>(m) == std::vector<std::uint16_t>{0});
    std::vector<std::int16_t> y(65536, -1);  // sum -65536 wraps to 0
    auto m2 = f.run1("SegmentMean", {tensor::from<std::int16_t>(y), i32v(std::vector<i32>(y.size(), 0))});
    CHECK(vals<std::int16_t>(m2) == std::vector<std::int16_t>{0});
  }
  CHECK(vals<i32>(f.run1("SegmentMean", {i32v({i32max, i32max}), i32v({0, 0})})) == std::vector<i32>{-1});  // (-2 / 2)
  // Bincount / DenseBincount with weights wrap
  CHECK(vals<i32>(f.run1("Bincount", {i32v({0, 0, 1}), i32s(2), i32v({i32max, 1, 5})})) == std::vector<i32>{i32min, 5});
  CHECK(vals<i64>(f.run1("DenseBincount", {i32v({1, 1}), i32s(2), i64v({i64max, i64max})})) == std::vector<i64>{0, -2});
  // Range on int32 past int32's span: i * delta is computed without overflow
  CHECK(vals<i32>(f.run1("Range", {i32s(i32min), i32s(i32max), i32s(i32max)})) == std::vector<i32>{i32min, -1, i32max - 1});
  CHECK(vals<i32>(f.run1("Range", {i32s(i32max), i32s(i32min), i32s(i32min)})) == std::vector<i32>{i32max, -1});
  // resizing an image of no rows or columns fails (it would read row / column -1)
  for (const char* op : {"ResizeBilinear", "ResizeNearestNeighbor", "ResizeBicubic", "ResizeArea"}) {
    CAPTURE(op);
    CHECK_THROWS_WITH_AS(f.run1(op, {f32({}, {1, 0, 2, 1}), i32v({2, 2})}), doctest::Contains("cannot resize an empty image"), gpass::error);
    CHECK_THROWS_WITH_AS(f.run1(op, {f32({}, {1, 2, 0, 1}), i32v({2, 2})}), doctest::Contains("cannot resize an empty image"), gpass::error);
  }
  // SparseSegmentSum: a segment id INT64_MAX (+ 1 segments) fails instead of overflowing
  CHECK_THROWS_WITH_AS(f.run1("SparseSegmentSum", {f32({1, 2}, {1, 2}), i32v({0}), i64v({i64max})}), doctest::Contains("overflows int64"),
                       gpass::error);
  // SparseReshape: entries in an empty shape fail (the output strides would be 0); indices
  // outside the shape are not checked (as in TensorFlow) and wrap
  CHECK_THROWS_WITH_AS(f.run("SparseReshape", {tensor::from<i64>({0, 0}, {1, 2}), i64v({0, 5}), i64v({5, 0})}, {}, 2),
                       doctest::Contains("is empty"), gpass::error);
  auto sr = f.run("SparseReshape", {tensor::from<i64>({i64max, 1}, {1, 2}), i64v({2, 3}), i64v({3, 2})}, {}, 2);
  CHECK(sr[0].tensor().sizes() == sizes{1, 2});
  CHECK(vals<i64>(sr[1].tensor()) == std::vector<i64>{3, 2});
  CHECK(f.run("SparseReshape", {tensor::from<i64>({}, {0, 2}), i64v({0, 5}), i64v({5, 0})}, {}, 2)[0].tensor().sizes() == sizes{0, 2});
  // SparseToDense: an output_shape whose strides overflow int64 fails before any offset
  CHECK_THROWS_WITH_AS(f.run1("SparseToDense", {tensor::from<i64>({0, 0, 0}, {1, 3}), i64v({2, i64{1} << 62, 4}), tensor::scalar<float>(1),
                                                tensor::scalar<float>(0)}),
                       doctest::Contains("too many elements"), gpass::error);
}

}  // namespace gpass_test_exec_tf
