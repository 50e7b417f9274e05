// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <gpass/core/tensor.hpp>

#include <complex>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_core_tensor {

using gpass::dtype;
using gpass::tensor;

TEST_CASE("core.tensor.from_and_views") {
  auto t = tensor::from<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK(t.element_type() == dtype::f32);
  CHECK(t.sizes() == std::vector<std::int64_t>{2, 3});
  CHECK(t.rank() == 2);
  CHECK(t.size() == 6);
  CHECK(t.nbytes() == 24);
  CHECK(t.shape().to_string() == "[2,3]");
  CHECK(!t.empty());
  auto m = t.matrix<float>();
  CHECK(m.rows() == 2);
  CHECK(m.cols() == 3);
  CHECK(m(1, 0) == 4.0f);  // row-major
  CHECK(m(0, 2) == 3.0f);
  m(1, 2) = 60.0f;
  CHECK(t.values<float>()[5] == 60.0f);  // the view shares storage
  auto v = t.vec<float>();
  CHECK(v.size() == 6);
  CHECK(v(3) == 4.0f);
  CHECK(reinterpret_cast<std::uintptr_t>(t.raw()) % 64 == 0);

  auto vec = tensor::from<std::int64_t>({7, 8, 9});
  CHECK(vec.sizes() == std::vector<std::int64_t>{3});
  auto s = tensor::scalar<double>(2.5);
  CHECK(s.rank() == 0);
  CHECK(s.size() == 1);
  CHECK(s.values<double>()[0] == 2.5);
  CHECK_THROWS_WITH_AS(vec.matrix<std::int64_t>(), doctest::Contains("rank 1 is not 2"), gpass::error);
}

TEST_CASE("core.tensor.zero_filled_and_empty") {
  tensor z(dtype::int32, {2, 2});
  for (auto x : z.values<std::int32_t>()) CHECK(x == 0);
  tensor e(dtype::f32, {0, 3});
  CHECK(e.size() == 0);
  CHECK(e.nbytes() == 0);
  CHECK(e == tensor(dtype::f32, {0, 3}));
  CHECK(e != tensor(dtype::f32, {3, 0}));
  tensor d;
  CHECK(d.empty());
  CHECK(d.element_type() == dtype::undefined);
  CHECK_THROWS_AS(tensor(dtype::f32, {-1}), gpass::error);
  CHECK_THROWS_AS(tensor(dtype::resource, {1}), gpass::error);
}

TEST_CASE("core.tensor.type_errors") {
  auto t = tensor::from<float>({1, 2});
  CHECK_THROWS_WITH_AS(t.data<std::int32_t>(), "gpass: tensor of dtype f32 accessed as i32", gpass::error);
  CHECK_THROWS_AS(t.values<double>(), gpass::error);
  CHECK_THROWS_WITH_AS(tensor::from<float>({1, 2, 3}, {2, 2}), "gpass: tensor: 3 values for 4 elements", gpass::error);
  const tensor& ct = t;
  CHECK_THROWS_AS(ct.data<std::string>(), gpass::error);
}

TEST_CASE("core.tensor.copies_share_clone_is_deep") {
  auto a = tensor::from<std::int32_t>({1, 2, 3});
  tensor shared = a;
  shared.data<std::int32_t>()[0] = 10;
  CHECK(a.values<std::int32_t>()[0] == 10);
  tensor deep = a.clone();
  CHECK(deep == a);
  deep.data<std::int32_t>()[1] = 20;
  CHECK(a.values<std::int32_t>()[1] == 2);
  CHECK(deep != a);

  auto s = tensor::from<std::string>({"a", "bc"});
  tensor sc = s.clone();
  CHECK(sc == s);
  sc.data<std::string>()[0] = "z";
  CHECK(s.values<std::string>()[0] == "a");
  CHECK(sc != s);
}

TEST_CASE("core.tensor.equality_is_bitwise") {
  CHECK(tensor::from<float>({0.0f}) != tensor::from<float>({-0.0f}));
  float nan = std::numeric_limits<float>::quiet_NaN();
  CHECK(tensor::from<float>({nan}) == tensor::from<float>({nan}));
  CHECK(tensor::from<float>({1}) != tensor::from<double>({1}));
  CHECK(tensor::from<float>({1, 2}, {2}) != tensor::from<float>({1, 2}, {1, 2}));
  CHECK(tensor::from<bool>({true, false}) == tensor::from<bool>({true, false}));
  CHECK(tensor::from<std::complex<float>>({{1, 2}}) == tensor::from<std::complex<float>>({{1, 2}}));
  CHECK(tensor::from<Eigen::half>({Eigen::half(1.5f)}).element_type() == dtype::f16);
  CHECK(tensor() == tensor());
}

TEST_CASE("core.tensor.visit_dtype") {
  CHECK(gpass::visit_dtype(dtype::f64, []<class T>() { return sizeof(T); }) == 8);
  CHECK(gpass::visit_dtype(dtype::string, []<class T>() { return std::is_same_v<T, std::string>; }));
  CHECK(gpass::visit_dtype(dtype::bf16, []<class T>() { return gpass::dtype_of_v<T>; }) == dtype::bf16);
  CHECK_THROWS_WITH_AS(gpass::visit_dtype(dtype::resource, []<class T>() { return 0; }),
                       doctest::Contains("no element type for dtype 'resource'"), gpass::error);
  CHECK_THROWS_AS(gpass::visit_dtype(dtype::undefined, []<class T>() { return 0; }), gpass::error);
  static_assert(gpass::dtype_of_v<std::uint16_t> == dtype::uint16);
  static_assert(gpass::dtype_of_v<std::complex<double>> == dtype::complex128);
}

}  // namespace gpass_test_core_tensor
