// SPDX-License-Identifier: Apache-2.0
// Tests of the Eigen CPU array family (shape and data-movement kernels).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <gpass/exec/eigen_cpu.hpp>

#include "kernel_fixture.hpp"

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_exec_array {

namespace {

using gpass::tensor;
using gpass::exec::value;
using i64 = std::int64_t;

using fixture = gpass_test_exec::kernel_fixture<gpass::exec::register_eigen_cpu_array, 18>;
using gpass_test_exec::vals;

tensor f32(std::vector<float> v, std::vector<i64> s) { return tensor::from<float>(std::move(v), std::move(s)); }
tensor i64s(std::vector<i64> v) { return tensor::from<i64>(std::move(v)); }
tensor iota_f32(std::vector<i64> s) {
  tensor t(gpass::dtype::f32, s);
  for (i64 i = 0; i < t.size(); ++i) t.data<float>()[i] = static_cast<float>(i);
  return t;
}
}  // namespace

TEST_CASE("exec.array.reshape") {
  fixture f;
  auto x = iota_f32({2, 3, 4});
  auto y = f.run1("Reshape", {x, i64s({0, -1})});
  CHECK(y.sizes() == std::vector<i64>{2, 12});
  CHECK(y.buffer() == x.buffer());  // a view
  CHECK(f.run1("Reshape", {x, i64s({4, -1, 2})}).sizes() == std::vector<i64>{4, 3, 2});
  CHECK_THROWS_WITH_AS(f.run1("Reshape", {x, i64s({5, -1})}), doctest::Contains("cannot reshape"), gpass::error);
  CHECK_THROWS_AS(f.run1("Reshape", {x, i64s({-1, -1})}), gpass::error);
  // allowzero: 0 is a real zero size
  auto e = tensor(gpass::dtype::f32, {0, 3});
  CHECK(f.run1("Reshape", {e, i64s({3, 0})}, {{"allowzero", i64{1}}}).sizes() == std::vector<i64>{3, 0});
  // strings
  auto s = tensor::from<std::string>({"a", "b", "c", "d"}, {4});
  CHECK(vals<std::string>(f.run1("Reshape", {s, i64s({2, 2})})) == std::vector<std::string>{"a", "b", "c", "d"});
}

TEST_CASE("exec.array.shape_size_flatten") {
  fixture f;
  auto x = iota_f32({2, 3, 4, 5});
  CHECK(vals<i64>(f.run1("Shape", {x})) == std::vector<i64>{2, 3, 4, 5});
  CHECK(vals<i64>(f.run1("Shape", {x}, {{"start", i64{1}}, {"end", i64{-1}}})) == std::vector<i64>{3, 4});
  CHECK(vals<i64>(f.run1("Shape", {x}, {{"start", i64{-10}}, {"end", i64{10}}})) == std::vector<i64>{2, 3, 4, 5});
  CHECK(f.run1("Shape", {x}, {{"start", i64{3}}, {"end", i64{1}}}).size() == 0);
  CHECK(vals<i64>(f.run1("Size", {x})) == std::vector<i64>{120});
  CHECK(f.run1("Flatten", {x}).sizes() == std::vector<i64>{2, 60});
  CHECK(f.run1("Flatten", {x}, {{"axis", i64{0}}}).sizes() == std::vector<i64>{1, 120});
  CHECK(f.run1("Flatten", {x}, {{"axis", i64{-1}}}).sizes() == std::vector<i64>{24, 5});
  CHECK(f.run1("Flatten", {x}, {{"axis", i64{4}}}).sizes() == std::vector<i64>{120, 1});
  CHECK_THROWS_AS(f.run1("Flatten", {x}, {{"axis", i64{5}}}), gpass::error);
}

TEST_CASE("exec.array.squeeze_unsqueeze") {
  fixture f;
  auto x = iota_f32({1, 3, 1, 2});
  CHECK(f.run1("Squeeze", {x}).sizes() == std::vector<i64>{3, 2});
  CHECK(f.run1("Squeeze", {x, i64s({-2})}).sizes() == std::vector<i64>{1, 3, 2});
  CHECK(f.run1("Squeeze", {x}, {{"axes", std::vector<i64>{0}}}, 11).sizes() == std::vector<i64>{3, 1, 2});
  CHECK_THROWS_WITH_AS(f.run1("Squeeze", {x, i64s({1})}), doctest::Contains("cannot squeeze"), gpass::error);
  auto y = iota_f32({3, 4});
  CHECK(f.run1("Unsqueeze", {y, i64s({0, 3})}).sizes() == std::vector<i64>{1, 3, 4, 1});
  CHECK(f.run1("Unsqueeze", {y, i64s({-1, 1})}).sizes() == std::vector<i64>{3, 1, 4, 1});
  CHECK(f.run1("Unsqueeze", {y}, {{"axes", std::vector<i64>{1}}}, 11).sizes() == std::vector<i64>{3, 1, 4});
  CHECK_THROWS_AS(f.run1("Unsqueeze", {y, i64s({1, 1})}), gpass::error);
  CHECK_THROWS_AS(f.run1("Unsqueeze", {y, i64s({4})}), gpass::error);
}

TEST_CASE("exec.array.transpose") {
  fixture f;
  auto x = iota_f32({2, 3});
  auto y = f.run1("Transpose", {x});
  CHECK(y.sizes() == std::vector<i64>{3, 2});
  CHECK(vals<float>(y) == std::vector<float>{0, 3, 1, 4, 2, 5});
  auto z = iota_f32({2, 3, 4});
  auto t = f.run1("Transpose", {z}, {{"perm", std::vector<i64>{1, 2, 0}}});
  CHECK(t.sizes() == std::vector<i64>{3, 4, 2});
  // t[i,j,k] = z[k,i,j]
  for (i64 i = 0; i < 3; ++i)
    for (i64 j = 0; j < 4; ++j)
      for (i64 k = 0; k < 2; ++k) CHECK(t.data<float>()[(i * 4 + j) * 2 + k] == static_cast<float>(k * 12 + i * 4 + j));
  // big tiled path, two threads, against a plain loop
  fixture f2(2);
  auto big = iota_f32({3, 70, 130});
  auto bt = f2.run1("Transpose", {big}, {{"perm", std::vector<i64>{0, 2, 1}}});
  bool ok = true;
  for (i64 b = 0; b < 3; ++b)
    for (i64 i = 0; i < 130; ++i)
      for (i64 j = 0; j < 70; ++j) ok = ok && bt.data<float>()[(b * 130 + i) * 70 + j] == static_cast<float>((b * 70 + j) * 130 + i);
  CHECK(ok);
  // NHWC images to NCHW (2-5 channels: a few rows, their columns shared out in runs; 2 runs
  // of columns for 50 x 50; 2-4 channels de-interleaved), two threads
  for (const i64 ch : {2, 3, 4, 5})
    for (const i64 side : {9, 50}) {
      CAPTURE(ch);
      CAPTURE(side);
      auto img = iota_f32({2, side, side, ch});
      auto nchw = f2.run1("Transpose", {img}, {{"perm", std::vector<i64>{0, 3, 1, 2}}});
      REQUIRE(nchw.sizes() == std::vector<i64>{2, ch, side, side});
      bool same = true;
      for (i64 n = 0; n < 2; ++n)
        for (i64 c = 0; c < ch; ++c)
          for (i64 p = 0; p < side * side; ++p)
            same = same && nchw.data<float>()[(n * ch + c) * side * side + p] == static_cast<float>((n * side * side + p) * ch + c);
      CHECK(same);
    }
  // strings and bool
  auto s = tensor::from<std::string>({"a", "b", "c", "d", "e", "f"}, {2, 3});
  CHECK(vals<std::string>(f.run1("Transpose", {s})) == std::vector<std::string>{"a", "d", "b", "e", "c", "f"});
  auto b = tensor::from<bool>({true, false, false, true, true, false}, {3, 2});
  CHECK(vals<bool>(f.run1("Transpose", {b})) == std::vector<bool>{true, false, true, false, true, false});
  CHECK_THROWS_AS(f.run1("Transpose", {x}, {{"perm", std::vector<i64>{0, 0}}}), gpass::error);
}

TEST_CASE("exec.array.concat_split") {
  fixture f;
  auto a = iota_f32({2, 2}), b = f32({9, 8}, {2, 1});
  auto c = f.run1("Concat", {a, b}, {{"axis", i64{-1}}}, 13);
  CHECK(c.sizes() == std::vector<i64>{2, 3});
  CHECK(vals<float>(c) == std::vector<float>{0, 1, 9, 2, 3, 8});
  CHECK_THROWS_AS(f.run1("Concat", {a, iota_f32({3, 1})}, {{"axis", i64{1}}}, 13), gpass::error);
  CHECK(f.run1("Concat", {a, tensor(gpass::dtype::f32, {0, 2})}, {{"axis", i64{0}}}, 13).sizes() == std::vector<i64>{2, 2});
  auto x = iota_f32({2, 6});
  auto parts = f.run("Split", {x, i64s({2, 4})}, {{"axis", i64{1}}}, 13, 2);
  CHECK(vals<float>(parts[0].tensor()) == std::vector<float>{0, 1, 6, 7});
  CHECK(parts[1].tensor().sizes() == std::vector<i64>{2, 4});
  auto eq = f.run("Split", {x}, {{"axis", i64{1}}}, 13, 3);
  CHECK(vals<float>(eq[2].tensor()) == std::vector<float>{4, 5, 10, 11});
  auto old = f.run("Split", {x}, {{"axis", i64{1}}, {"split", std::vector<i64>{1, 5}}}, 11, 2);
  CHECK(old[0].tensor().sizes() == std::vector<i64>{2, 1});
  auto n18 = f.run("Split", {iota_f32({7})}, {{"num_outputs", i64{3}}}, 18, 3);
  CHECK(vals<float>(n18[2].tensor()) == std::vector<float>{6});
  CHECK_THROWS_AS(f.run("Split", {x, i64s({2, 3})}, {{"axis", i64{1}}}, 13, 2), gpass::error);
  CHECK_THROWS_AS(f.run("Split", {iota_f32({7})}, {}, 13, 3), gpass::error);
}

TEST_CASE("exec.array.slice") {
  fixture f;
  auto x = iota_f32({3, 4});
  auto y = f.run1("Slice", {x, i64s({1, 0}), i64s({3, 10}), i64s({0, 1}), i64s({1, 2})}, {}, 13);
  CHECK(y.sizes() == std::vector<i64>{2, 2});
  CHECK(vals<float>(y) == std::vector<float>{4, 6, 8, 10});
  auto r = f.run1("Slice", {x, i64s({-1}), i64s({-1000}), i64s({1}), i64s({-1})}, {}, 13);
  CHECK(vals<float>(r) == std::vector<float>{3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8});
  auto e = f.run1("Slice", {x, i64s({5}), i64s({10}), i64s({0})}, {}, 13);
  CHECK(e.sizes() == std::vector<i64>{0, 4});
  // a negative step over an empty axis takes nothing (no clamp to an empty range)
  auto ne = f.run1("Slice", {iota_f32({0, 3}), i64s({-1}), i64s({-1000}), i64s({0}), i64s({-1})}, {}, 13);
  CHECK(ne.sizes() == std::vector<i64>{0, 3});
  auto old = f.run1("Slice", {x}, {{"starts", std::vector<i64>{1}}, {"ends", std::vector<i64>{2}}}, 1);
  CHECK(vals<float>(old) == std::vector<float>{4, 5, 6, 7});
  CHECK_THROWS_AS(f.run1("Slice", {x, i64s({0}), i64s({1}), i64s({0}), i64s({0})}, {}, 13), gpass::error);
}

TEST_CASE("exec.array.expand_tile") {
  fixture f;
  auto x = f32({1, 2, 3}, {3, 1});
  auto y = f.run1("Expand", {x, i64s({2, 1, 2})});
  CHECK(y.sizes() == std::vector<i64>{2, 3, 2});
  CHECK(vals<float>(y) == std::vector<float>{1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3});
  CHECK_THROWS_AS(f.run1("Expand", {x, i64s({2, 2})}), gpass::error);
  auto t = f.run1("Tile", {f32({1, 2, 3, 4}, {2, 2}), i64s({1, 2})});
  CHECK(vals<float>(t) == std::vector<float>{1, 2, 1, 2, 3, 4, 3, 4});
  CHECK_THROWS_AS(f.run1("Tile", {x, i64s({2})}), gpass::error);
}

TEST_CASE("exec.array.depth_space") {
  fixture f;
  auto x = iota_f32({1, 8, 1, 1});
  auto dcr = f.run1("DepthToSpace", {x}, {{"blocksize", i64{2}}});
  CHECK(dcr.sizes() == std::vector<i64>{1, 2, 2, 2});
  CHECK(vals<float>(dcr) == std::vector<float>{0, 2, 4, 6, 1, 3, 5, 7});
  auto crd = f.run1("DepthToSpace", {x}, {{"blocksize", i64{2}}, {"mode", std::string("CRD")}});
  CHECK(vals<float>(crd) == std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7});
  // SpaceToDepth inverts DepthToSpace (DCR)
  auto z = iota_f32({2, 3, 4, 6});
  auto s = f.run1("SpaceToDepth", {z}, {{"blocksize", i64{2}}});
  CHECK(s.sizes() == std::vector<i64>{2, 12, 2, 3});
  CHECK(f.run1("DepthToSpace", {s}, {{"blocksize", i64{2}}}) == z);
  // a blocksize whose square overflows int64 (2^32: b * b wrapped to 0, then C % 0 was SIGFPE)
  CHECK_THROWS_WITH_AS(f.run1("DepthToSpace", {x}, {{"blocksize", i64{1} << 32}}), doctest::Contains("overflows int64"), gpass::error);
  CHECK_THROWS_WITH_AS(f.run1("SpaceToDepth", {tensor(gpass::dtype::f32, {1, 1, 0, 0})}, {{"blocksize", i64{1} << 32}}),
                       doctest::Contains("overflows int64"), gpass::error);
}

TEST_CASE("exec.array.gather") {
  fixture f;
  auto x = iota_f32({3, 2});
  auto y = f.run1("Gather", {x, i64s({2, -3, 1})});
  CHECK(y.sizes() == std::vector<i64>{3, 2});
  CHECK(vals<float>(y) == std::vector<float>{4, 5, 0, 1, 2, 3});
  auto c = f.run1("Gather", {x, tensor::from<std::int32_t>({1, 1}, {1, 2})}, {{"axis", i64{1}}});
  CHECK(c.sizes() == std::vector<i64>{3, 1, 2});
  CHECK(vals<float>(c) == std::vector<float>{1, 1, 3, 3, 5, 5});
  CHECK(f.run1("Gather", {x, tensor::scalar<i64>(1)}).sizes() == std::vector<i64>{2});
  CHECK_THROWS_WITH_AS(f.run1("Gather", {x, i64s({3})}), doctest::Contains("out of range"), gpass::error);
  CHECK_THROWS_WITH_AS(f.run1("Gather", {x, i64s({-4})}), doctest::Contains("'n'"), gpass::error);
  // GatherElements
  auto ge = f.run1("GatherElements", {f32({1, 2, 3, 4}, {2, 2}), tensor::from<i64>({0, 0, 1, 0}, {2, 2})}, {{"axis", i64{1}}});
  CHECK(vals<float>(ge) == std::vector<float>{1, 1, 4, 3});
  auto ge0 = f.run1("GatherElements", {iota_f32({3, 3}), tensor::from<i64>({1, 2, 0, 2, -1, 0}, {2, 3})});
  CHECK(vals<float>(ge0) == std::vector<float>{3, 7, 2, 6, 7, 2});
  CHECK_THROWS_AS(f.run1("GatherElements", {iota_f32({3, 3}), tensor::from<i64>({3}, {1, 1})}), gpass::error);
  // GatherND
  auto nd = f.run1("GatherND", {tensor::from<std::int32_t>({0, 1, 2, 3}, {2, 2}), tensor::from<i64>({0, 0, 1, 1}, {2, 2})});
  CHECK(vals<std::int32_t>(nd) == std::vector<std::int32_t>{0, 3});
  auto nd2 = f.run1("GatherND", {tensor::from<std::int32_t>({0, 1, 2, 3}, {2, 2}), tensor::from<i64>({1, 0}, {2, 1})});
  CHECK(vals<std::int32_t>(nd2) == std::vector<std::int32_t>{2, 3, 0, 1});
  auto x3 = tensor::from<std::int32_t>({0, 1, 2, 3, 4, 5, 6, 7}, {2, 2, 2});
  auto nb = f.run1("GatherND", {x3, tensor::from<i64>({1, 0}, {2, 1})}, {{"batch_dims", i64{1}}});
  CHECK(vals<std::int32_t>(nb) == std::vector<std::int32_t>{2, 3, 4, 5});
  CHECK_THROWS_AS(f.run1("GatherND", {x3, tensor::from<i64>({2}, {1, 1})}), gpass::error);
}

TEST_CASE("exec.array.scatter") {
  fixture f;
  auto data = tensor(gpass::dtype::f32, {3, 3});
  auto idx = tensor::from<i64>({1, 0, 2, 0, 2, 1}, {2, 3});
  auto up = f32({1, 1.1f, 1.2f, 2, 2.1f, 2.2f}, {2, 3});
  auto y = f.run1("ScatterElements", {data, idx, up});
  CHECK(vals<float>(y) == std::vector<float>{2, 1.1f, 0, 1, 0, 2.2f, 0, 2.1f, 1.2f});
  CHECK(vals<float>(data) == std::vector<float>(9, 0.0f));  // input untouched
  auto d1 = f32({1, 2, 3, 4, 5}, {1, 5});
  auto add = f.run1("ScatterElements", {d1, tensor::from<i64>({1, 1}, {1, 2}), f32({1.1f, 2.1f}, {1, 2})},
                    {{"axis", i64{1}}, {"reduction", std::string("add")}});
  CHECK(vals<float>(add)[1] == doctest::Approx(5.2));
  auto mx = f.run1("ScatterElements", {d1, tensor::from<i64>({-1, 0}, {1, 2}), f32({9, 0}, {1, 2})},
                   {{"axis", i64{1}}, {"reduction", std::string("max")}});
  CHECK(vals<float>(mx) == std::vector<float>{1, 2, 3, 4, 9});
  CHECK(vals<float>(f.run1("Scatter", {d1, tensor::from<i64>({3}, {1, 1}), f32({7}, {1, 1})}, {{"axis", i64{1}}}, 10)) ==
        std::vector<float>{1, 2, 3, 7, 5});
  CHECK_THROWS_WITH_AS(f.run1("ScatterElements", {d1, tensor::from<i64>({5}, {1, 1}), f32({7}, {1, 1})}, {{"axis", i64{1}}}),
                       doctest::Contains("out of range"), gpass::error);
  // ScatterND
  auto v = f32({1, 2, 3, 4, 5, 6, 7, 8}, {8});
  auto snd = f.run1("ScatterND", {v, tensor::from<i64>({4, 3, 1, 7}, {4, 1}), f32({9, 10, 11, 12}, {4})});
  CHECK(vals<float>(snd) == std::vector<float>{1, 11, 3, 10, 9, 6, 7, 12});
  auto mul = f.run1("ScatterND", {v, tensor::from<i64>({0, 0}, {2, 1}), f32({2, 3}, {2})}, {{"reduction", std::string("mul")}});
  CHECK(vals<float>(mul)[0] == 6.0f);
  auto m2 = iota_f32({2, 2});
  CHECK(vals<float>(f.run1("ScatterND", {m2, tensor::from<i64>({1}, {1, 1}), f32({8, 9}, {1, 2})})) == std::vector<float>{0, 1, 8, 9});
  CHECK_THROWS_AS(f.run1("ScatterND", {m2, tensor::from<i64>({1}, {1, 1}), f32({8}, {1, 1})}), gpass::error);
  // strings move too
  auto s = tensor::from<std::string>({"a", "b", "c"}, {3});
  CHECK(vals<std::string>(f.run1("ScatterElements", {s, tensor::from<i64>({2}, {1}), tensor::from<std::string>({"z"}, {1})})) ==
        std::vector<std::string>{"a", "b", "z"});
}

TEST_CASE("exec.array.pad") {
  fixture f;
  auto x = f32({1, 2, 3, 4}, {2, 2});
  auto c = f.run1("Pad", {x, i64s({0, 1, 1, 0}), tensor::scalar<float>(9)});
  CHECK(c.sizes() == std::vector<i64>{3, 3});
  CHECK(vals<float>(c) == std::vector<float>{9, 1, 2, 9, 3, 4, 9, 9, 9});
  auto x3 = f32({1, 2, 3}, {1, 3});
  CHECK(vals<float>(f.run1("Pad", {x3, i64s({0, 2, 0, 2})}, {{"mode", std::string("reflect")}})) ==
        std::vector<float>{3, 2, 1, 2, 3, 2, 1});
  CHECK(vals<float>(f.run1("Pad", {x3, i64s({0, 2, 0, 1})}, {{"mode", std::string("edge")}})) ==
        std::vector<float>{1, 1, 1, 2, 3, 3});
  CHECK(vals<float>(f.run1("Pad", {x3, i64s({0, 2, 0, 1})}, {{"mode", std::string("wrap")}})) ==
        std::vector<float>{2, 3, 1, 2, 3, 1});
  // negative pads crop; axes input (18)
  CHECK(vals<float>(f.run1("Pad", {x3, i64s({-1, 0}), value{}, i64s({1})})) == std::vector<float>{2, 3});
  // opset 2 attributes
  CHECK(vals<float>(f.run1("Pad", {x3}, {{"pads", std::vector<i64>{0, 1, 0, 0}}, {"value", 5.0}}, 2)) ==
        std::vector<float>{5, 1, 2, 3});
  CHECK_THROWS_AS(f.run1("Pad", {x3, i64s({0, 1})}), gpass::error);
  CHECK_THROWS_AS(f.run1("Pad", {x3, i64s({0, -4, 0, 0})}), gpass::error);
  auto s = tensor::from<std::string>({"a"}, {1});
  CHECK(vals<std::string>(f.run1("Pad", {s, i64s({1, 0})})) == std::vector<std::string>{"", "a"});
}

TEST_CASE("exec.array.constant_range_onehot") {
  fixture f;
  auto z = f.run1("ConstantOfShape", {i64s({2, 3})});
  CHECK(z.element_type() == gpass::dtype::f32);
  CHECK(vals<float>(z) == std::vector<float>(6, 0.0f));
  auto o = f.run1("ConstantOfShape", {i64s({2})}, {{"value", tensor::from<std::int32_t>({7}, {1})}});
  CHECK(vals<std::int32_t>(o) == std::vector<std::int32_t>{7, 7});
  CHECK(f.run1("ConstantOfShape", {i64s({0})}).size() == 0);
  CHECK(vals<float>(f.run1("Range", {tensor::scalar<float>(1), tensor::scalar<float>(2), tensor::scalar<float>(0.3f)})).size() == 4);
  CHECK(vals<std::int32_t>(f.run1("Range", {tensor::scalar<std::int32_t>(10), tensor::scalar<std::int32_t>(4),
                                            tensor::scalar<std::int32_t>(-3)})) == std::vector<std::int32_t>{10, 7});
  CHECK(f.run1("Range", {tensor::scalar<i64>(5), tensor::scalar<i64>(1), tensor::scalar<i64>(1)}).size() == 0);
  CHECK_THROWS_AS(f.run1("Range", {tensor::scalar<i64>(0), tensor::scalar<i64>(1), tensor::scalar<i64>(0)}), gpass::error);
  // counts no int64 holds are errors, not undefined conversions or overflows (found by the run fuzz target)
  const float inf = std::numeric_limits<float>::infinity();
  CHECK_THROWS_WITH(f.run1("Range", {tensor::scalar<float>(0), tensor::scalar<float>(6e23f), tensor::scalar<float>(1e-3f)}),
                    doctest::Contains("too many elements"));
  CHECK_THROWS_WITH(f.run1("Range", {tensor::scalar<double>(0), tensor::scalar<double>(inf), tensor::scalar<double>(1)}),
                    doctest::Contains("too many elements"));
  CHECK_THROWS_WITH(f.run1("Range", {tensor::scalar<i64>(-2), tensor::scalar<i64>(std::numeric_limits<i64>::max()), tensor::scalar<i64>(1)}),
                    doctest::Contains("too many elements"));
  auto oh = f.run1("OneHot", {i64s({1, -1, 5}), tensor::scalar<float>(3), f32({0, 1}, {2})});
  CHECK(oh.sizes() == std::vector<i64>{3, 3});
  CHECK(vals<float>(oh) == std::vector<float>{0, 1, 0, 0, 0, 1, 0, 0, 0});
  auto oh0 = f.run1("OneHot", {i64s({0, 2}), tensor::scalar<i64>(3), tensor::from<std::int32_t>({5, 6}, {2})}, {{"axis", i64{0}}});
  CHECK(oh0.sizes() == std::vector<i64>{3, 2});
  CHECK(vals<std::int32_t>(oh0) == std::vector<std::int32_t>{6, 5, 5, 5, 5, 6});
}

TEST_CASE("exec.array.trilu_eyelike") {
  fixture f;
  auto x = tensor::from<i64>({1, 2, 3, 4, 5, 6, 7, 8, 9}, {3, 3});
  CHECK(vals<i64>(f.run1("Trilu", {x})) == std::vector<i64>{1, 2, 3, 0, 5, 6, 0, 0, 9});
  CHECK(vals<i64>(f.run1("Trilu", {x, tensor::scalar<i64>(1)})) == std::vector<i64>{0, 2, 3, 0, 0, 6, 0, 0, 0});
  CHECK(vals<i64>(f.run1("Trilu", {x}, {{"upper", i64{0}}})) == std::vector<i64>{1, 0, 0, 4, 5, 0, 7, 8, 9});
  CHECK(vals<i64>(f.run1("Trilu", {x, tensor::scalar<i64>(-1)}, {{"upper", i64{0}}})) == std::vector<i64>{0, 0, 0, 4, 0, 0, 7, 8, 0});
  CHECK(vals<i64>(f.run1("Trilu", {x, tensor::scalar<i64>(-5)}, {{"upper", i64{0}}})) == std::vector<i64>(9, 0));
  // diagonals far outside (INT64_MIN / MAX: i + k overflowed) and an empty x with huge R x C
  const i64 huge = std::numeric_limits<i64>::max();
  CHECK(vals<i64>(f.run1("Trilu", {x, tensor::scalar<i64>(huge)})) == std::vector<i64>(9, 0));
  CHECK(vals<i64>(f.run1("Trilu", {x, tensor::scalar<i64>(-huge - 1)}, {{"upper", i64{0}}})) == std::vector<i64>(9, 0));
  CHECK(vals<i64>(f.run1("Trilu", {x, tensor::scalar<i64>(-huge - 1)})) == vals<i64>(x));
  CHECK(f.run1("Trilu", {tensor(gpass::dtype::int64, {0, i64{1} << 40, i64{1} << 40})}).size() == 0);
  // OneHot with a depth of NaN or 1e30 (casts that were undefined): errors
  CHECK_THROWS_AS(f.run1("OneHot", {i64s({0}), tensor::scalar<float>(std::nanf("")), f32({0, 1}, {2})}), gpass::error);
  CHECK_THROWS_WITH_AS(f.run1("OneHot", {i64s({0}), tensor::scalar<float>(1e30f), f32({0, 1}, {2})}), doctest::Contains("do not fit in memory"),
                       gpass::error);
  auto e = f.run1("EyeLike", {tensor(gpass::dtype::int32, {2, 3})}, {{"k", i64{1}}});
  CHECK(vals<std::int32_t>(e) == std::vector<std::int32_t>{0, 1, 0, 0, 0, 1});
  auto ed = f.run1("EyeLike", {tensor(gpass::dtype::int32, {2, 2})}, {{"dtype", i64{11}}});
  CHECK(ed.element_type() == gpass::dtype::f64);
  CHECK(vals<double>(ed) == std::vector<double>{1, 0, 0, 1});
  CHECK(vals<bool>(f.run1("EyeLike", {tensor(gpass::dtype::bool_, {2, 2})}, {{"k", i64{-1}}})) == std::vector<bool>{false, false, true, false});
}

TEST_CASE("exec.array.compress_nonzero") {
  fixture f;
  auto x = iota_f32({3, 2});
  auto c = f.run1("Compress", {x, tensor::from<bool>({false, true, true})}, {{"axis", i64{0}}});
  CHECK(vals<float>(c) == std::vector<float>{2, 3, 4, 5});
  auto flat = f.run1("Compress", {x, tensor::from<bool>({false, true, false, false, true})});
  CHECK(vals<float>(flat) == std::vector<float>{1, 4});
  CHECK_THROWS_AS(f.run1("Compress", {x, tensor::from<bool>({false, false, false, true})}, {{"axis", i64{0}}}), gpass::error);
  auto nz = f.run1("NonZero", {tensor::from<bool>({true, false, true, true}, {2, 2})});
  CHECK(nz.sizes() == std::vector<i64>{2, 3});
  CHECK(vals<i64>(nz) == std::vector<i64>{0, 1, 1, 0, 0, 1});
  CHECK(f.run1("NonZero", {f32({0, -0.0f}, {2})}).sizes() == std::vector<i64>{1, 0});
}

TEST_CASE("exec.array.unique") {
  fixture f;
  auto x = f32({2, 1, 1, 3, 4, 3}, {6});
  auto out = f.run("Unique", {x}, {{"sorted", i64{0}}}, 11, 4);
  CHECK(vals<float>(out[0].tensor()) == std::vector<float>{2, 1, 3, 4});
  CHECK(vals<i64>(out[1].tensor()) == std::vector<i64>{0, 1, 3, 4});
  CHECK(vals<i64>(out[2].tensor()) == std::vector<i64>{0, 1, 1, 2, 3, 2});
  CHECK(vals<i64>(out[3].tensor()) == std::vector<i64>{1, 2, 2, 1});
  auto s = f.run("Unique", {x}, {}, 11, 4);
  CHECK(vals<float>(s[0].tensor()) == std::vector<float>{1, 2, 3, 4});
  CHECK(vals<i64>(s[1].tensor()) == std::vector<i64>{1, 0, 3, 4});
  CHECK(vals<i64>(s[2].tensor()) == std::vector<i64>{1, 0, 0, 2, 3, 2});
  auto m = f32({1, 0, 0, 1, 0, 0, 2, 3, 3}, {3, 3});
  auto a = f.run("Unique", {m}, {{"axis", i64{1}}}, 11, 4);
  // columns: (1,1,2), (0,0,3), (0,0,3) -> sorted unique (0,0,3), (1,1,2)
  CHECK(a[0].tensor().sizes() == std::vector<i64>{3, 2});
  CHECK(vals<float>(a[0].tensor()) == std::vector<float>{0, 1, 0, 1, 3, 2});
  CHECK(vals<i64>(a[2].tensor()) == std::vector<i64>{1, 0, 0});
  CHECK(vals<i64>(a[3].tensor()) == std::vector<i64>{2, 1});
  auto str = f.run("Unique", {tensor::from<std::string>({"b", "a", "b"}, {3})}, {}, 11, 1);
  CHECK(vals<std::string>(str[0].tensor()) == std::vector<std::string>{"a", "b"});
}

TEST_CASE("exec.array.topk") {
  fixture f;
  auto x = f32({1, 3, 3, 2, 5, 5, 0, 4}, {2, 4});
  auto out = f.run("TopK", {x, i64s({2})}, {}, 11, 2);
  CHECK(vals<float>(out[0].tensor()) == std::vector<float>{3, 3, 5, 5});
  CHECK(vals<i64>(out[1].tensor()) == std::vector<i64>{1, 2, 0, 1});  // ties: lower index first
  auto sm = f.run("TopK", {x, i64s({1})}, {{"largest", i64{0}}, {"axis", i64{0}}}, 11, 2);
  CHECK(vals<float>(sm[0].tensor()) == std::vector<float>{1, 3, 0, 2});
  CHECK(vals<i64>(sm[1].tensor()) == std::vector<i64>{0, 0, 1, 0});
  auto old = f.run("TopK", {x}, {{"k", i64{1}}}, 1, 2);
  CHECK(vals<float>(old[0].tensor()) == std::vector<float>{3, 5});
  CHECK_THROWS_AS(f.run("TopK", {x, i64s({5})}, {}, 11, 2), gpass::error);
}

TEST_CASE("exec.array.reverse_sequence") {
  fixture f;
  auto x = iota_f32({4, 2});  // time x batch
  auto y = f.run1("ReverseSequence", {x, i64s({3, 1})});
  CHECK(vals<float>(y) == std::vector<float>{4, 1, 2, 3, 0, 5, 6, 7});
  auto z = f.run1("ReverseSequence", {iota_f32({2, 3}), i64s({2, 3})}, {{"batch_axis", i64{0}}, {"time_axis", i64{1}}});
  CHECK(vals<float>(z) == std::vector<float>{1, 0, 2, 5, 4, 3});
  CHECK_THROWS_AS(f.run1("ReverseSequence", {x, i64s({5, 1})}), gpass::error);
}

TEST_CASE("exec.array.resize") {
  fixture f;
  auto x = f32({1, 2, 3, 4}, {1, 1, 2, 2});
  // nearest upsample x2 (asymmetric, floor) == repeat
  auto up = f.run1("Upsample", {x, f32({1, 1, 2, 2}, {4})}, {{"mode", std::string("nearest")}}, 9);
  CHECK(up.sizes() == std::vector<i64>{1, 1, 4, 4});
  CHECK(vals<float>(up) == std::vector<float>{1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4});
  // linear, align_corners to 3x3: corners kept, centre is the mean
  auto lin = f.run1("Resize", {x, value{}, value{}, i64s({1, 1, 3, 3})},
                    {{"mode", std::string("linear")}, {"coordinate_transformation_mode", std::string("align_corners")}}, 13);
  CHECK(vals<float>(lin) == std::vector<float>{1, 1.5f, 2, 2, 2.5f, 3, 3, 3.5f, 4});
  // half_pixel linear upsample x2 on a row: [1, 1.25, 1.75, 2]
  auto row = f.run1("Resize", {f32({1, 2}, {1, 2}), value{}, f32({1, 2}, {2})}, {{"mode", std::string("linear")}}, 13);
  CHECK(vals<float>(row) == std::vector<float>{1, 1.25f, 1.75f, 2});
  // cubic on a constant stays constant
  auto cst = f.run1("Resize", {f32({5, 5, 5, 5}, {2, 2}), value{}, f32({2, 2}, {2})}, {{"mode", std::string("cubic")}}, 13);
  for (float v : vals<float>(cst)) CHECK(v == doctest::Approx(5));
  // axes (18) and nearest on ints
  auto ax = f.run1("Resize", {tensor::from<i64>({1, 2}, {1, 2}), value{}, value{}, i64s({4})}, {{"axes", std::vector<i64>{1}}}, 18);
  CHECK(vals<i64>(ax) == std::vector<i64>{1, 1, 2, 2});
  CHECK_THROWS_AS(f.run1("Resize", {x, value{}, f32({1, 2}, {2})}, {}, 13), gpass::error);
  CHECK_THROWS_AS(f.run1("Resize", {x}, {}, 13), gpass::error);
  // linear passes run from the last axis: [65536, 1] -> [1, 65536] passes through
  // [65536, 65536] doubles (32 GiB), checked as scratch before it is made
  CHECK_THROWS_WITH_AS(f.run1("Resize", {tensor(gpass::dtype::f32, {65536, 1}), value{}, f32({1.f / 65536, 65536}, {2})},
                              {{"mode", std::string("linear")}}, 13),
                       doctest::Contains("the resize pass over axis 1"), gpass::error);
  // tf_crop_and_resize with a roi of NaN or 1e300: every coordinate is outside, each output
  // the extrapolation value (casting the coordinate to an index was undefined)
  for (const char* mode : {"nearest", "linear", "cubic"})
    for (float bad : {std::nanf(""), 1e30f, -1e30f}) {
      CAPTURE(mode);
      CAPTURE(bad);
      auto c = f.run1("Resize", {f32({1, 2}, {1, 2}), f32({0, bad, 1, bad}, {4}), value{}, i64s({1, 3})},
                      {{"mode", std::string(mode)}, {"coordinate_transformation_mode", std::string("tf_crop_and_resize")},
                       {"extrapolation_value", 7.0f}},
                      13);
      CHECK(vals<float>(c) == std::vector<float>{7, 7, 7});
    }
}

TEST_CASE("exec.array.parallel_big") {
  fixture f(2);
  fixture g(1);
  auto x = iota_f32({64, 50, 40});
  auto idx = tensor::from<i64>({3, 1, 0, 49}, {4});
  CHECK(f.run1("Gather", {x, idx}, {{"axis", i64{1}}}) == g.run1("Gather", {x, idx}, {{"axis", i64{1}}}));
  CHECK(f.run1("Concat", {x, x}, {{"axis", i64{2}}}, 13) == g.run1("Concat", {x, x}, {{"axis", i64{2}}}, 13));
  CHECK(f.run1("Pad", {x, i64s({1, 2, 3, 1, 2, 3})}, {{"mode", std::string("reflect")}}) ==
        g.run1("Pad", {x, i64s({1, 2, 3, 1, 2, 3})}, {{"mode", std::string("reflect")}}));
  CHECK(f.run1("Slice", {x, i64s({-1, 1}), i64s({-100, 40}), i64s({0, 2}), i64s({-2, 3})}, {}, 13) ==
        g.run1("Slice", {x, i64s({-1, 1}), i64s({-100, 40}), i64s({0, 2}), i64s({-2, 3})}, {}, 13));
  auto ts = f.run("TopK", {x, i64s({5})}, {}, 11, 2);
  auto tg = g.run("TopK", {x, i64s({5})}, {}, 11, 2);
  CHECK(ts[1].tensor() == tg[1].tensor());
  auto rs = f.run1("Resize", {x, value{}, f32({1, 2, 2}, {3})}, {{"mode", std::string("linear")}}, 13);
  CHECK(rs == g.run1("Resize", {x, value{}, f32({1, 2, 2}, {3})}, {{"mode", std::string("linear")}}, 13));
  CHECK_THROWS_AS(f.run1("Gather", {x, tensor::from<i64>({0, 50}, {2})}, {{"axis", i64{1}}}), gpass::error);
}

TEST_CASE("exec.array.scalar_has_no_axis") {
  // an axis indexes a dimension: a scalar has none (normalize_axis lets it have axis 0, as the
  // ops that treat a scalar as [1] do; these ops indexed their empty size vectors with it)
  fixture f;
  const tensor x = tensor::scalar(1.0f);
  auto no_axis = doctest::Contains("axis 0 is out of range for rank 0");
  CHECK_THROWS_WITH_AS(f.run1("Pad", {x, i64s({1, 1}), value{}, i64s({0})}), no_axis, gpass::error);
  CHECK_THROWS_WITH_AS(f.run1("Compress", {x, tensor::from<bool>({true})}, {{"axis", i64{0}}}), no_axis, gpass::error);
  CHECK_THROWS_WITH_AS(f.run1("Unique", {x}, {{"axis", i64{0}}}), no_axis, gpass::error);
  CHECK_THROWS_WITH_AS(f.run1("CenterCropPad", {x, i64s({1})}, {{"axes", std::vector<i64>{0}}}), no_axis, gpass::error);
  // the shared shape rules of both executors: Slice's and Squeeze's axes, Resize's axes
  CHECK_THROWS_WITH_AS(f.run1("Slice", {x, i64s({0}), i64s({1}), i64s({0})}, {}, 13), no_axis, gpass::error);
  CHECK_THROWS_WITH_AS(f.run1("Slice", {x, i64s({0}), i64s({1}), i64s({-1})}, {}, 13), doctest::Contains("axis -1 is out of range"),
                       gpass::error);
  CHECK_THROWS_WITH_AS(f.run1("Squeeze", {x, i64s({0})}, {}, 13), no_axis, gpass::error);
  CHECK_THROWS_WITH_AS(f.run1("Resize", {x, value{}, tensor::from<float>({2.0f}, {1})}, {{"axes", std::vector<i64>{0}}}, 18), no_axis,
                       gpass::error);
  // the same ops on a vector still take axis 0 and -1
  const tensor v = tensor::from<float>({1, 2, 3}, {3});
  CHECK(vals<float>(f.run1("Slice", {v, i64s({1}), i64s({3}), i64s({-1})}, {}, 13)) == std::vector<float>{2, 3});
  CHECK(f.run1("Squeeze", {tensor::from<float>({4}, {1}), i64s({0})}, {}, 13).rank() == 0);
}

TEST_CASE("exec.array.integer_values_defined") {
  // integer arithmetic on tensor values wraps (two's complement) and float -> int conversions
  // are defined: each of these was undefined behaviour (a signed overflow or an out-of-range
  // float cast) before
  fixture f;
  using i32 = std::int32_t;
  constexpr i32 i32max = std::numeric_limits<i32>::max(), i32min = std::numeric_limits<i32>::min();
  constexpr i64 i64max = std::numeric_limits<i64>::max(), i64min = std::numeric_limits<i64>::min();
  // Scatter* reductions add / mul
  CHECK(vals<i32>(f.run1("ScatterElements", {tensor::from<i32>({i32max, 5}, {2}), i64s({0}), tensor::from<i32>({1}, {1})},
                         {{"reduction", std::string("add")}})) == std::vector<i32>{i32min, 5});
  CHECK(vals<i64>(f.run1("ScatterElements", {tensor::from<i64>({i64max}, {1}), i64s({0}), tensor::from<i64>({2}, {1})},
                         {{"reduction", std::string("mul")}})) == std::vector<i64>{-2});
  CHECK(vals<std::uint16_t>(f.run1("ScatterElements", {tensor::from<std::uint16_t>({65535}, {1}), i64s({0}),
                                                       tensor::from<std::uint16_t>({65535}, {1})},
                                   {{"reduction", std::string("mul")}})) == std::vector<std::uint16_t>{1});
  CHECK(vals<i64>(f.run1("ScatterND", {tensor::from<i64>({i64min, 3}, {2}), tensor::from<i64>({0, 0}, {2, 1}), tensor::from<i64>({-1, -1}, {2})},
                         {{"reduction", std::string("add")}})) == std::vector<i64>{i64max - 1, 3});
  // Col2Im: overlapping int32 patches sum with wrapping (center covered 4 times)
  auto im = f.run1("Col2Im", {tensor::from<i32>(std::vector<i32>(16, i32max), {1, 4, 4}), i64s({3, 3}), i64s({2, 2})});
  CHECK(vals<i32>(im) == std::vector<i32>{i32max, -2, i32max, -2, -4, -2, i32max, -2, i32max});
  // Range on int32: start + i * delta passes int32 midway (count 3, i = 2)
  CHECK(vals<i32>(f.run1("Range", {tensor::scalar<i32>(i32min), tensor::scalar<i32>(i32max), tensor::scalar<i32>(i32max)})) ==
        std::vector<i32>{i32min, -1, i32max - 1});
  // (int64: i * delta stays within limit - start, which range_count checks fits int64)
  CHECK(vals<i64>(f.run1("Range", {tensor::scalar<i64>(i64min), tensor::scalar<i64>(-1), tensor::scalar<i64>(i64{1} << 62)})) ==
        std::vector<i64>{i64min, -(i64{1} << 62)});
  // EyeLike with k far outside the matrix: all zeros (negating INT64_MIN was undefined)
  for (i64 k : {i64min, i64max, i64{-2}, i64{3}}) {
    CAPTURE(k);
    CHECK(vals<i32>(f.run1("EyeLike", {tensor(gpass::dtype::int32, {2, 3})}, {{"k", k}})) == std::vector<i32>(6, 0));
  }
  CHECK(vals<i32>(f.run1("EyeLike", {tensor(gpass::dtype::int32, {2, 3})}, {{"k", i64{2}}})) == std::vector<i32>{0, 0, 1, 0, 0, 0});
  // Resize linear / cubic on int64 near INT64_MAX: the clamp's bound double(INT64_MAX) is 2^63,
  // which saturates; a NaN extrapolation_value gives 0
  for (const char* mode : {"linear", "cubic"}) {
    CAPTURE(mode);
    auto r = f.run1("Resize", {tensor::from<i64>({i64max, i64max}, {1, 2}), value{}, f32({1, 2}, {2})}, {{"mode", std::string(mode)}}, 13);
    CHECK(vals<i64>(r) == std::vector<i64>(4, i64max));
    auto c = f.run1("Resize", {tensor::from<i32>({1, 2}, {1, 2}), f32({0, 2, 1, 2}, {4}), value{}, i64s({1, 3})},
                    {{"mode", std::string(mode)}, {"coordinate_transformation_mode", std::string("tf_crop_and_resize")},
                     {"extrapolation_value", std::nanf("")}},
                    13);
    CHECK(vals<i32>(c) == std::vector<i32>{0, 0, 0});
  }
}

TEST_CASE("exec.array.label_encoder_integer_keys") {
  // keys_tensor of int64 read as integers: through a double INT64_MAX became 2^63 (converting
  // that back was undefined) and keys past 2^53 collapsed onto their neighbours
  gpass_test_exec::kernel_fixture<gpass::exec::register_eigen_cpu_ml, 4> f;
  constexpr i64 big = (i64{1} << 53) + 1;
  gpass::exec::kernel_node n{.name = "n",
                             .op = "LabelEncoder",
                             .domain = "ai.onnx.ml",
                             .attrs = {{"keys_tensor", tensor::from<i64>({std::numeric_limits<i64>::max(), big}, {2})},
                                       {"values_int64s", std::vector<i64>{1, 2}}},
                             .opset = 4};
  n.input_types.resize(1);
  n.output_types.resize(1);
  auto y = f.run(n, {i64s({std::numeric_limits<i64>::max(), big, big - 1, 7})}).at(0).tensor();
  CHECK(vals<i64>(y) == std::vector<i64>{1, 2, -1, -1});
}

}  // namespace gpass_test_exec_array
