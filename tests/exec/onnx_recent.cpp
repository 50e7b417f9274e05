// SPDX-License-Identifier: Apache-2.0
// Kernels of the ONNX ops and versions after opset 17: blocked QuantizeLinear /
// DequantizeLinear, CumProd, Bitwise*, signed BitShift, Mish, Swish, LpNormalization,
// AffineGrid, CenterCropPad, Col2Im, TensorScatter, BitCast, ReduceMax of bool, f16 Range,
// SpaceToDepth CRD, Split num_outputs.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <Eigen/Core>

#include <gpass/exec/eigen_cpu.hpp>

#include "kernel_fixture.hpp"

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_exec_onnx_recent {

namespace {

using gpass::tensor;
using gpass::exec::value;
using i64 = std::int64_t;

using fixture = gpass_test_exec::kernel_fixture<gpass::exec::register_eigen_cpu_kernels, 28>;
using gpass_test_exec::vals;

tensor f32(std::vector<float> v, std::vector<i64> s) { return tensor::from<float>(std::move(v), std::move(s)); }
tensor i64s(std::vector<i64> v) { return tensor::from<i64>(std::move(v)); }
}  // namespace

TEST_CASE("exec.onnx_recent.blocked_quantization") {
  fixture f;
  // x [2, 4], blocks of 2 along axis 1: scales [2, 2]
  auto x = f32({1, 2, 30, 40, -1, -2, -30, -40}, {2, 4});
  auto s = f32({1, 10, 1, 10}, {2, 2});
  auto y = f.run1("QuantizeLinear", {x, s, tensor::from<std::int8_t>({0, 0, 0, 0}, {2, 2})}, {{"axis", i64{1}}, {"block_size", i64{2}}});
  CHECK(vals<std::int8_t>(y) == std::vector<std::int8_t>{1, 2, 3, 4, -1, -2, -3, -4});
  auto back = f.run1("DequantizeLinear", {y, s}, {{"axis", i64{1}}, {"block_size", i64{2}}, {"output_dtype", i64{10}}});
  CHECK(back.element_type() == gpass::dtype::f16);
  CHECK(static_cast<float>(back.values<Eigen::half>()[3]) == 40.0f);
  // output_dtype without a zero point; int16
  auto q16 = f.run1("QuantizeLinear", {f32({70000, -3.5f}, {2}), f32({1}, {})}, {{"output_dtype", i64{5}}});
  CHECK(vals<std::int16_t>(q16) == std::vector<std::int16_t>{32767, -4});
  CHECK_THROWS_WITH_AS(f.run1("QuantizeLinear", {x, f32({1, 1, 1}, {3, 1})}, {{"axis", i64{1}}, {"block_size", i64{2}}}),
                       doctest::Contains("blocked quantization"), gpass::error);
}

TEST_CASE("exec.onnx_recent.elementwise") {
  fixture f;
  auto a = tensor::from<std::int8_t>({-8, 5, 127}, {3});
  auto b = tensor::from<std::int8_t>({1, 9, -1}, {3});
  CHECK(vals<std::int8_t>(f.run1("BitwiseAnd", {a, b})) == std::vector<std::int8_t>{0, 1, 127});
  CHECK(vals<std::int8_t>(f.run1("BitwiseXor", {a, b})) == std::vector<std::int8_t>{-7, 12, -128});
  CHECK(vals<std::int8_t>(f.run1("BitwiseNot", {a})) == std::vector<std::int8_t>{7, -6, -128});
  // signed shifts: arithmetic right; shifting by the width or more saturates to 0 / -1
  auto sh = tensor::from<std::int8_t>({1, 8, 2}, {3});
  CHECK(vals<std::int8_t>(f.run1("BitShift", {a, sh}, {{"direction", std::string("RIGHT")}})) == std::vector<std::int8_t>{-4, 0, 31});
  CHECK(vals<std::int8_t>(f.run1("BitShift", {a, sh}, {{"direction", std::string("LEFT")}})) == std::vector<std::int8_t>{-16, 0, -4});
  auto x = f32({-2, 0, 1.5f}, {3});
  auto mish = vals<float>(f.run1("Mish", {x}));
  for (std::size_t i = 0; i < 3; ++i) {
    const double v = std::vector<double>{-2, 0, 1.5}[i];
    CHECK(mish[i] == doctest::Approx(v * std::tanh(std::log1p(std::exp(v)))).epsilon(1e-6));
  }
  auto sw = vals<float>(f.run1("Swish", {x}, {{"alpha", 2.0}}));
  CHECK(sw[2] == doctest::Approx(1.5 / (1 + std::exp(-3.0))).epsilon(1e-6));
}

TEST_CASE("exec.onnx_recent.reduce_scan") {
  fixture f;
  auto x = f32({1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK(vals<float>(f.run1("CumProd", {x, i64s({1})})) == std::vector<float>{1, 2, 6, 4, 20, 120});
  CHECK(vals<float>(f.run1("CumProd", {x, i64s({1})}, {{"exclusive", i64{1}}, {"reverse", i64{1}}})) ==
        std::vector<float>{6, 3, 1, 30, 6, 1});
  auto bx = tensor::from<bool>({true, false, true, true}, {2, 2});
  CHECK(vals<bool>(f.run1("ReduceMax", {bx, i64s({1})}, {{"keepdims", i64{0}}})) == std::vector<bool>{true, true});
  CHECK(vals<bool>(f.run1("ReduceMin", {bx, i64s({1})}, {{"keepdims", i64{0}}})) == std::vector<bool>{false, true});
  auto r = f.run1("Range", {tensor::scalar<Eigen::half>(Eigen::half(0.0f)), tensor::scalar<Eigen::half>(Eigen::half(2.0f)),
                            tensor::scalar<Eigen::half>(Eigen::half(0.5f))});
  CHECK(r.size() == 4);
  CHECK(static_cast<float>(r.values<Eigen::half>()[3]) == 1.5f);
}

TEST_CASE("exec.onnx_recent.normalization_grid") {
  fixture f;
  auto y = vals<float>(f.run1("LpNormalization", {f32({3, 4, 0, 0}, {2, 2})}, {{"axis", i64{1}}, {"p", i64{2}}}));
  CHECK(y == std::vector<float>{0.6f, 0.8f, 0, 0});  // a zero norm gives 0
  auto l1 = vals<float>(f.run1("LpNormalization", {f32({-1, 3}, {1, 2})}, {{"p", i64{1}}}));
  CHECK(l1 == std::vector<float>{-0.25f, 0.75f});
  // identity theta: the normalized pixel centers
  auto g = f.run1("AffineGrid", {f32({1, 0, 0, 0, 1, 0}, {1, 2, 3}), i64s({1, 1, 2, 2})});
  CHECK(g.sizes() == std::vector<i64>{1, 2, 2, 2});
  CHECK(vals<float>(g) == std::vector<float>{-0.5f, -0.5f, 0.5f, -0.5f, -0.5f, 0.5f, 0.5f, 0.5f});
  auto ga = f.run1("AffineGrid", {f32({2, 0, 1, 0, 1, 0}, {1, 2, 3}), i64s({1, 1, 1, 3})}, {{"align_corners", i64{1}}});
  CHECK(vals<float>(ga) == std::vector<float>{-1, -1, 1, -1, 3, -1});
}

TEST_CASE("exec.onnx_recent.array") {
  fixture f;
  // crop 5 -> 3 (centered), pad 2 -> 4 (one zero before, one after)
  auto x = f32({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, {2, 5});
  auto c = f.run1("CenterCropPad", {x, i64s({4, 3})});
  CHECK(c.sizes() == std::vector<i64>{4, 3});
  CHECK(vals<float>(c) == std::vector<float>{0, 0, 0, 2, 3, 4, 7, 8, 9, 0, 0, 0});
  // Col2Im: 2x2 blocks of a 3x3 image, stride 1: the center is covered four times
  auto cols = f32(std::vector<float>(16, 1.0f), {1, 4, 4});
  auto im = f.run1("Col2Im", {cols, i64s({3, 3}), i64s({2, 2})});
  CHECK(im.sizes() == std::vector<i64>{1, 1, 3, 3});
  CHECK(vals<float>(im) == std::vector<float>{1, 2, 1, 2, 4, 2, 1, 2, 1});
  // TensorScatter: batch 0 writes at 1, batch 1 wraps around (circular)
  auto cache = f32(std::vector<float>(6, 0.0f), {2, 3, 1});
  auto upd = f32({7, 8, 9, 10}, {2, 2, 1});
  auto ts = f.run1("TensorScatter", {cache, upd, i64s({1, 2})}, {{"mode", std::string("circular")}, {"axis", i64{1}}});
  CHECK(vals<float>(ts) == std::vector<float>{0, 7, 8, 10, 0, 9});
  CHECK_THROWS_WITH_AS(f.run1("TensorScatter", {cache, upd, i64s({1, 2})}, {{"axis", i64{1}}}), doctest::Contains("does not fit"),
                       gpass::error);
  auto bc = f.run1("BitCast", {f32({1.0f}, {1})}, {{"to", i64{6}}});
  CHECK(vals<std::int32_t>(bc) == std::vector<std::int32_t>{0x3f800000});
  CHECK_THROWS_WITH_AS(f.run1("BitCast", {f32({1.0f}, {1})}, {{"to", i64{7}}}), doctest::Contains("widths differ"), gpass::error);
  // SpaceToDepth CRD: channel c * 4 + by * 2 + bx
  auto s2d = f.run1("SpaceToDepth", {f32({1, 2, 3, 4}, {1, 1, 2, 2})}, {{"blocksize", i64{2}}, {"mode", std::string("CRD")}});
  CHECK(vals<float>(s2d) == std::vector<float>{1, 2, 3, 4});
  auto parts = f.run("Split", {f32({1, 2, 3, 4, 5, 6, 7}, {7})}, {{"num_outputs", i64{3}}}, 18, 3);
  CHECK(parts.at(2).tensor().sizes() == std::vector<i64>{1});
}

TEST_CASE("exec.onnx_recent.low_precision") {
  fixture f;
  auto codes = [](const tensor& t) {
    std::vector<int> r;
    for (i64 i = 0; i < t.size(); ++i) r.push_back(reinterpret_cast<const std::uint8_t*>(t.raw())[i]);
    return r;
  };
  auto x = f32({3.14159f, 1000.0f, -0.0f}, {3});
  // Cast-19 saturates by default; saturate = 0 makes the overflow NaN (e4m3fn has no inf)
  auto y = f.run1("Cast", {x}, {{"to", i64{17}}});
  CHECK(y.element_type() == gpass::dtype::f8e4m3fn);
  CHECK(codes(y) == std::vector<int>{69, 0x7E, 0x80});
  CHECK(codes(f.run1("Cast", {x}, {{"to", i64{17}}, {"saturate", i64{0}}})) == std::vector<int>{69, 0x7F, 0x80});
  CHECK(vals<float>(f.run1("Cast", {y}, {{"to", i64{1}}}))[1] == 448.0f);
  // int4: truncated and wrapped; back to int8
  auto q = f.run1("Cast", {f32({-1.7f, 8.5f, 7.0f}, {3})}, {{"to", i64{22}}});
  CHECK(vals<std::int8_t>(f.run1("Cast", {q}, {{"to", i64{3}}})) == std::vector<std::int8_t>{-1, -8, 7});
  // f8e8m0 rounding modes (Cast-24)
  CHECK(codes(f.run1("Cast", {f32({1.5f}, {1})}, {{"to", i64{24}}})) == std::vector<int>{128});
  CHECK(codes(f.run1("Cast", {f32({1.5f}, {1})}, {{"to", i64{24}}, {"round_mode", std::string("down")}})) == std::vector<int>{127});
  CHECK_THROWS_WITH_AS(f.run1("Cast", {x}, {{"to", i64{24}}, {"round_mode", std::string("sideways")}}),
                       doctest::Contains("round_mode"), gpass::error);
  // QuantizeLinear to int4 rounds half to even and clamps; DequantizeLinear decodes
  auto zp = f.run1("Cast", {f32({1.0f}, {1})}, {{"to", i64{22}}});
  auto q4 = f.run1("QuantizeLinear", {f32({2.5f, 100.0f, -100.0f}, {3}), f32({1.0f}, {1}), zp}, {{"axis", i64{0}}});
  CHECK(q4.element_type() == gpass::dtype::i4);
  CHECK(vals<float>(f.run1("DequantizeLinear", {q4, f32({1.0f}, {1}), zp}, {{"axis", i64{0}}})) == std::vector<float>{2, 6, -9});
}

TEST_CASE("exec.onnx_recent.deform_conv") {
  fixture f;
  // 1x1x3x3 image, 2x2 kernel of ones: zero offsets give the plain convolution
  auto x = f32({1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 1, 3, 3});
  auto w = f32({1, 1, 1, 1}, {1, 1, 2, 2});
  auto zero = f32(std::vector<float>(8 * 4, 0.0f), {1, 8, 2, 2});
  CHECK(vals<float>(f.run1("DeformConv", {x, w, zero}, {}, 22)) == std::vector<float>{12, 16, 24, 28});
  // every tap moved half a pixel right: bilinear between columns (zero past the edge)
  std::vector<float> o(8 * 4, 0.0f);
  for (int t = 0; t < 4; ++t)
    for (int p = 0; p < 4; ++p) o[static_cast<std::size_t>((2 * t + 1) * 4 + p)] = 0.5f;
  auto y = vals<float>(f.run1("DeformConv", {x, w, f32(o, {1, 8, 2, 2})}, {}, 22));
  CHECK(y[0] == doctest::Approx(14.0));  // (1.5 + 2.5 + 4.5 + 5.5)
  CHECK(y[1] == doctest::Approx(12.5));  // 2.5 + 1.5 + 5.5 + 3: column 3 is outside
  // a mask scales each tap; bias adds
  auto mask = f32(std::vector<float>(16, 0.5f), {1, 4, 2, 2});
  auto ym = vals<float>(f.run1("DeformConv", {x, w, zero, f32({1}, {1}), mask}, {}, 22));
  CHECK(ym[0] == doctest::Approx(7.0));
  CHECK_THROWS_WITH_AS(f.run1("DeformConv", {x, w, f32({0}, {1, 1, 1, 1})}, {}, 22), doctest::Contains("offset is"), gpass::error);
}

TEST_CASE("exec.onnx_recent.review_regressions") {
  fixture f;
  // Col2Im sizes whose product overflows: an error, not a division by zero
  CHECK_THROWS_WITH_AS(f.run1("Col2Im", {f32({}, {1, 1, 0}), i64s({1, 1}), i64s({i64{1} << 32, i64{1} << 32})}),
                       doctest::Contains("overflow"), gpass::error);
  // an empty Col2Im whose other sizes are huge (2^40 image planes of no pixels): no work
  auto none = f.run1("Col2Im", {f32({}, {i64{1} << 20, i64{1} << 20, 0}), i64s({0, 5}), i64s({1, 1})});
  CHECK(none.sizes() == std::vector<i64>{i64{1} << 20, i64{1} << 20, 0, 5});
  // a byte does not bit-cast to a 4-bit integer
  CHECK_THROWS_WITH_AS(f.run1("BitCast", {tensor::from<std::uint8_t>({255}, {1})}, {{"to", i64{22}}}),
                       doctest::Contains("widths differ"), gpass::error);
  // QuantizeLinear to int4 divides in float: 1.4f / 0.4f is 3.5 exactly, rounded to even 4
  auto q = f.run1("QuantizeLinear", {f32({1.4f}, {1}), f32({0.4f}, {}), f.run1("Cast", {f32({0}, {1})}, {{"to", i64{22}}})},
                  {{"axis", i64{0}}});
  CHECK(vals<float>(f.run1("Cast", {q}, {{"to", i64{1}}})) == std::vector<float>{4});
  // int64 to int4 wraps exactly (2^53 + 1 -> 1)
  auto w = f.run1("Cast", {tensor::from<i64>({(i64{1} << 53) + 1}, {1})}, {{"to", i64{22}}});
  CHECK(vals<std::int8_t>(f.run1("Cast", {w}, {{"to", i64{3}}})) == std::vector<std::int8_t>{1});
}

TEST_CASE("exec.onnx_recent.ort_fused_ops") {
  // ONNX Runtime's com.microsoft ops (what its extended optimizer saves)
  fixture f;
  auto run_ms = [&](const std::string& op, std::vector<value> in, gpass::attribute_map attrs) {
    gpass::exec::kernel_node n{.name = "n", .op = op, .domain = "com.microsoft", .attrs = std::move(attrs), .opset = 1};
    n.input_types.resize(in.size());
    n.output_types.resize(1);
    return gpass::exec::run_kernel(f.cpu, f.reg, n, std::move(in)).at(0).tensor();
  };
  // alpha * A^T x B: A [3, 2] -> [2, 3]
  auto a = f32({1, 2, 3, 4, 5, 6}, {3, 2});
  auto b = f32({1, 0, 0, 1, 1, 1}, {3, 2});
  auto y = run_ms("FusedMatMul", {a, b}, {{"transA", i64{1}}, {"alpha", 0.5}});
  CHECK(y.sizes() == std::vector<i64>{2, 2});
  CHECK(vals<float>(y) == std::vector<float>{3, 4, 4, 5});  // 0.5 * [[6, 8], [8, 10]]
  // transBatchA: A's first dimension behind its batch ones (ONNX Runtime: one rank >= 3 for both)
  CHECK_THROWS_WITH_AS(run_ms("FusedMatMul", {a, b}, {{"transBatchA", i64{1}}}), doctest::Contains("rank >= 3"), gpass::error);
  auto a3 = f32({1, 2, 3, 4, 5, 6, 7, 8}, {2, 2, 2});  // read as [2, 2, 2] with perm [1, 0, 2]
  auto id = f32({1, 0, 0, 1, 1, 0, 0, 1}, {2, 2, 2});
  CHECK(vals<float>(run_ms("FusedMatMul", {a3, id}, {{"transBatchA", i64{1}}})) == std::vector<float>{1, 2, 5, 6, 3, 4, 7, 8});
  // FusedGemm with LeakyRelu through activation_alpha
  auto g = run_ms("FusedGemm", {f32({1, -1}, {1, 2}), f32({1, 0, 0, 1}, {2, 2})},
                  {{"activation", std::string("LeakyRelu")}, {"activation_alpha", 0.25}});
  CHECK(vals<float>(g) == std::vector<float>{1, -0.25f});
}

TEST_CASE("exec.onnx_recent.strings") {
  fixture f;
  auto str = [](std::vector<std::string> v, std::vector<i64> s) { return tensor::from<std::string>(std::move(v), std::move(s)); };
  CHECK(vals<std::string>(f.run1("StringConcat", {str({"a", "b"}, {2}), str({"!"}, {1})})) == std::vector<std::string>{"a!", "b!"});
  auto parts = f.run("StringSplit", {str({"a,,b", "c"}, {2})}, {{"delimiter", std::string(",")}}, 20, 2);
  CHECK(parts.at(0).tensor().sizes() == std::vector<i64>{2, 3});
  CHECK(vals<std::string>(parts.at(0).tensor()) == std::vector<std::string>{"a", "", "b", "c", "", ""});
  CHECK(vals<i64>(parts.at(1).tensor()) == std::vector<i64>{3, 1});
  auto ws = f.run("StringSplit", {str({"  x  y z ", ""}, {2})}, {{"maxsplit", i64{1}}}, 20, 2);
  CHECK(vals<std::string>(ws.at(0).tensor()) == std::vector<std::string>{"x", "y z ", "", ""});
  CHECK(vals<i64>(ws.at(1).tensor()) == std::vector<i64>{2, 0});
  CHECK(vals<bool>(f.run1("RegexFullMatch", {str({"ab12", "ab12x"}, {2})}, {{"pattern", std::string("[a-z]+\\d+")}})) ==
        std::vector<bool>{true, false});
  CHECK_THROWS_WITH_AS(f.run1("RegexFullMatch", {str({"a"}, {1})}, {{"pattern", std::string("(")}}),
                       doctest::Contains("not a regular expression"), gpass::error);
}

}  // namespace gpass_test_exec_onnx_recent
