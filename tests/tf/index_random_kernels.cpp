// SPDX-License-Identifier: Apache-2.0
// The TensorFlow index/segment/resize and random kernels (exec/eigen_cpu/kernels/tf_index.hpp,
// tf_random.hpp) on hand-written graphs: the errors TensorFlow's CPU kernels raise, and the
// state of the stateful random ops across runs. Their values against TensorFlow are checked
// by the fixtures tests/data/tf2/index_ops and random_ops (tests/tf/frontend_fixtures.cpp).

#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <gpass/exec/eigen_cpu.hpp>
#include <gpass/exec/plan.hpp>
#include <gpass/io/text.hpp>

namespace gpass_test_tf_index_random_kernels {

namespace {

using G = gpass::graph<>;
namespace ex = gpass::exec;

std::vector<ex::value> run(const std::string& body, std::vector<ex::value> in = {}, ex::run_limits limits = {}) {
  G g = gpass::parse_text("graph {\n" + body + "}\n");
  ex::eigen_cpu cpu({.threads = 1});
  ex::plan<ex::eigen_cpu> p(g, cpu, {.limits = limits});
  return p.run(std::move(in));
}

using i64 = std::int64_t;

gpass::tensor i64s(std::vector<i64> v, std::vector<i64> sizes) { return gpass::tensor::from<i64>(std::move(v), std::move(sizes)); }

template <class T>
std::vector<T> values_of(const ex::value& v) {
  const auto s = v.tensor().values<T>();
  return std::vector<T>(s.begin(), s.end());
}

}  // namespace

TEST_CASE("tf.kernels.index_errors_name_the_bad_index") {
  const auto x = gpass::tensor::from<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK_THROWS_WITH_AS(run(R"(  %x = arg() {index = 0} -> (f32[2,3])
  %i = tf::Const() {dtype = i32, value = tensor<i32[2,2]> [0, 1, 2, 0]}
  %y = tf::GatherNd(%x, %i) {Tparams = f32, Tindices = i32}
  %r:0 = return(%y)
)",
                           {x}),
                       doctest::Contains("indices[2, 0] does not index into [2,3]"), gpass::error);
  CHECK_THROWS_WITH_AS(run(R"(  %x = arg() {index = 0} -> (f32[2,3])
  %i = tf::Const() {dtype = i32, value = tensor<i32[2]> [0, 5]}
  %n = tf::Const() {dtype = i32, value = tensor<i32[]> [3]}
  %y = tf::UnsortedSegmentSum(%x, %i, %n) {T = f32, Tindices = i32}
  %r:0 = return(%y)
)",
                           {x}),
                       doctest::Contains("segment id 5 is out of range [0, 3)"), gpass::error);
  CHECK_THROWS_WITH_AS(run(R"(  %x = arg() {index = 0} -> (f32[2,3])
  %i = tf::Const() {dtype = i32, value = tensor<i32[2]> [1, 0]}
  %y = tf::SegmentSum(%x, %i) {T = f32, Tindices = i32}
  %r:0 = return(%y)
)",
                           {x}),
                       doctest::Contains("segment ids are not increasing"), gpass::error);
  // ScatterNd adds duplicates up; the update shape is checked
  auto out = run(R"(  %i = tf::Const() {dtype = i32, value = tensor<i32[3,1]> [1, 3, 1]}
  %u = tf::Const() {dtype = f32, value = tensor<f32[3]> [1.0, 2.0, 4.0]}
  %s = tf::Const() {dtype = i32, value = tensor<i32[1]> [5]}
  %y = tf::ScatterNd(%i, %u, %s) {T = f32, Tindices = i32}
  %r:0 = return(%y)
)");
  const auto v = out.at(0).tensor().values<float>();
  CHECK(std::vector<float>(v.begin(), v.end()) == std::vector<float>{0, 5, 0, 2, 0});
}

TEST_CASE("tf.kernels.resize_and_random_attribute_errors") {
  const auto img = gpass::tensor(gpass::dtype::f32, {1, 2, 2, 1});
  CHECK_THROWS_WITH_AS(run(R"(  %x = arg() {index = 0} -> (f32[1,2,2,1])
  %s = tf::Const() {dtype = i32, value = tensor<i32[2]> [3, 3]}
  %y = tf::ResizeBilinear(%x, %s) {T = f32, align_corners = true, half_pixel_centers = true}
  %r:0 = return(%y)
)",
                           {img}),
                       doctest::Contains("cannot both be true"), gpass::error);
  CHECK_THROWS_WITH_AS(run(R"(  %s = tf::Const() {dtype = i32, value = tensor<i32[1]> [4]}
  %k = tf::Const() {dtype = u64, value = tensor<u64[1]> [1]}
  %c = tf::Const() {dtype = u64, value = tensor<u64[2]> [0, 0]}
  %a = tf::Const() {dtype = i32, value = tensor<i32[]> [2]}
  %y = tf::StatelessRandomUniformV2(%s, %k, %c, %a) {dtype = f32, Tshape = i32}
  %r:0 = return(%y)
)"),
                       doctest::Contains("RNG algorithm 2 is not Philox"), gpass::error);
}

TEST_CASE("tf.kernels.stateful_random_advances_per_run") {
  // a seeded RandomUniform draws new numbers on each run of one plan (TensorFlow reserves
  // 256 samples per output element per run); a new plan starts over
  G g = gpass::parse_text(R"(graph {
  %s = tf::Const() {dtype = i32, value = tensor<i32[1]> [3]}
  %y = tf::RandomUniform(%s) {dtype = f32, T = i32, seed = 87654321, seed2 = 7}
  %r:0 = return(%y)
}
)");
  ex::eigen_cpu cpu({.threads = 1});
  ex::plan<ex::eigen_cpu> p(g, cpu);
  const auto a = p.run({}).at(0).tensor(), b = p.run({}).at(0).tensor();
  CHECK_FALSE(a == b);
  ex::plan<ex::eigen_cpu> q(g, cpu);
  CHECK(q.run({}).at(0).tensor() == a);
  for (float v : a.values<float>()) {
    CHECK(v >= 0.0f);
    CHECK(v < 1.0f);
  }
}

TEST_CASE("tf.kernels.uniform_int_bounds_fit_the_output_type") {
  // int64 bounds [0, 2^32) of an int32 output: the 32-bit range wrapped to 0 and `bits % 0`
  // raised SIGFPE; TensorFlow's bounds are of the output type
  const auto lo = gpass::tensor::scalar<i64>(0), hi = gpass::tensor::scalar<i64>(i64{1} << 32);
  const std::string bounds = "  %lo = arg() {index = 0} -> (i64[])\n  %hi = arg() {index = 1} -> (i64[])\n"
                             "  %s = tf::Const() {dtype = i32, value = tensor<i32[1]> [4]}\n";
  const std::string ops[] = {
      "  %y = tf::RandomUniformInt(%s, %lo, %hi) {Tout = i32, T = i32, seed = 1, seed2 = 2}\n",
      "  %k = tf::Const() {dtype = i64, value = tensor<i64[2]> [1, 2]}\n"
      "  %y = tf::StatelessRandomUniformInt(%s, %k, %lo, %hi) {dtype = i32, T = i32, Tseed = i64}\n",
      "  %k = tf::Const() {dtype = u64, value = tensor<u64[1]> [1]}\n"
      "  %c = tf::Const() {dtype = u64, value = tensor<u64[2]> [0, 0]}\n"
      "  %a = tf::Const() {dtype = i32, value = tensor<i32[]> [1]}\n"
      "  %y = tf::StatelessRandomUniformIntV2(%s, %k, %c, %a, %lo, %hi) {dtype = i32, Tshape = i32}\n"};
  for (const auto& op : ops) {
    CAPTURE(op);
    CHECK_THROWS_WITH_AS(run(bounds + op + "  %r:0 = return(%y)\n", {lo, hi}), doctest::Contains("do not fit the output type i32"),
                         gpass::error);
    CHECK_THROWS_WITH_AS(run(bounds + op + "  %r:0 = return(%y)\n", {hi, lo}), doctest::Contains("need minval < maxval"), gpass::error);
    // bounds that fit: values in [lo, hi), the widest int32 range included
    for (const auto& [a, b] : {std::pair<i64, i64>{-3, 5}, {INT32_MIN, INT32_MAX}}) {
      const auto out = run(bounds + op + "  %r:0 = return(%y)\n", {gpass::tensor::scalar<i64>(a), gpass::tensor::scalar<i64>(b)});
      for (std::int32_t v : values_of<std::int32_t>(out.at(0))) {
        CHECK(v >= a);
        CHECK(v < b);
      }
    }
  }
  // int64 output: the full int64 range is a range of 2^64 - 1
  const auto out = run(bounds + "  %y = tf::RandomUniformInt(%s, %lo, %hi) {Tout = i64, T = i32, seed = 1, seed2 = 2}\n  %r:0 = return(%y)\n",
                       {gpass::tensor::scalar<i64>(INT64_MIN), gpass::tensor::scalar<i64>(INT64_MAX)});
  CHECK(out.at(0).tensor().size() == 4);
  // an empty output needs no valid bounds (TensorFlow returns before checking them)
  CHECK(run("  %lo = arg() {index = 0} -> (i32[])\n  %hi = arg() {index = 1} -> (i32[])\n"
            "  %s = tf::Const() {dtype = i32, value = tensor<i32[1]> [0]}\n"
            "  %y = tf::RandomUniformInt(%s, %lo, %hi) {Tout = i32, T = i32, seed = 1, seed2 = 2}\n  %r:0 = return(%y)\n",
            {gpass::tensor::scalar<std::int32_t>(3), gpass::tensor::scalar<std::int32_t>(3)})
            .at(0)
            .tensor()
            .size() == 0);
}

TEST_CASE("tf.kernels.sparse_fill_empty_rows_rows_are_limited") {
  const std::string fill =
      "  %i = arg() {index = 0} -> (i64[*])\n  %v = arg() {index = 1} -> (f32[*])\n  %s = arg() {index = 2} -> (i64[*])\n"
      "  %d = tf::Const() {dtype = f32, value = tensor<f32[]> [-1.0]}\n"
      "  %y:4 = tf::SparseFillEmptyRows(%i, %v, %s, %d) {T = f32}\n  %r:0 = return(%y:0, %y:1, %y:2, %y:3)\n";
  const auto one = gpass::tensor::from<float>({5}, {1});
  // dense_shape[0] = 2^40 rows: 16 TB of per-row tables were built before any output
  CHECK_THROWS_WITH_AS(run(fill, {i64s({0, 1}, {1, 2}), one, i64s({i64{1} << 40, 2}, {2})}), doctest::Contains("max_tensor_bytes"),
                       gpass::error);
  // the per-row table (16 bytes a row) is under the limit too, not only the bool output
  CHECK_THROWS_WITH_AS(run(fill, {i64s({0, 1}, {1, 2}), one, i64s({i64{1} << 19, 2}, {2})}, {.max_tensor_bytes = 1 << 20}),
                       doctest::Contains("the row table"), gpass::error);
  // unchanged: rows 1 and 3 get the default, entries keep their order within a row
  const auto out = run(fill, {i64s({2, 0, 0, 1, 2, 1}, {3, 2}), gpass::tensor::from<float>({7, 5, 8}, {3}), i64s({4, 2}, {2})});
  CHECK(values_of<i64>(out.at(0)) == std::vector<i64>{0, 1, 1, 0, 2, 0, 2, 1, 3, 0});
  CHECK(values_of<float>(out.at(1)) == std::vector<float>{5, -1, 7, 8, -1});
  CHECK(values_of<bool>(out.at(2)) == std::vector<bool>{false, true, false, true});
  CHECK(values_of<i64>(out.at(3)) == std::vector<i64>{2, 0, 3});
}

TEST_CASE("tf.kernels.segments_of_empty_data") {
  // data [1, 0]: the output [num_segments, 0] is empty, but per-segment work scaled with
  // num_segments (an 8 TB count vector for 2^40)
  const auto empty = gpass::tensor(gpass::dtype::f32, {1, 0});
  const std::string unsorted = "  %x = arg() {index = 0} -> (f32[*])\n  %i = arg() {index = 1} -> (i64[*])\n"
                               "  %n = arg() {index = 2} -> (i64[])\n";
  for (const char* op : {"UnsortedSegmentSum", "UnsortedSegmentMax", "UnsortedSegmentMin", "UnsortedSegmentProd"}) {
    CAPTURE(op);
    const std::string g = unsorted + "  %y = tf::" + op + "(%x, %i, %n) {T = f32, Tindices = i64}\n  %r:0 = return(%y)\n";
    auto out = run(g, {empty, i64s({0}, {1}), gpass::tensor::scalar<i64>(i64{1} << 40)});
    CHECK(out.at(0).tensor().sizes() == std::vector<i64>{i64{1} << 40, 0});
    // no data: TensorFlow does not look at the ids
    CHECK(run(g, {empty, i64s({5}, {1}), gpass::tensor::scalar<i64>(2)}).at(0).tensor().sizes() == std::vector<i64>{2, 0});
    // no ids: every segment is the identity
    out = run(g, {gpass::tensor(gpass::dtype::f32, {0, 2}), i64s({}, {0}), gpass::tensor::scalar<i64>(2)});
    CHECK(out.at(0).tensor().sizes() == std::vector<i64>{2, 2});
  }
  const std::string sorted = "  %x = arg() {index = 0} -> (f32[*])\n  %i = arg() {index = 1} -> (i64[*])\n";
  for (const char* op : {"SegmentSum", "SegmentMean", "SegmentMax", "SegmentMin", "SegmentProd"}) {
    CAPTURE(op);
    const std::string g = sorted + "  %y = tf::" + op + "(%x, %i) {T = f32, Tindices = i64}\n  %r:0 = return(%y)\n";
    CHECK(run(g, {empty, i64s({i64{1} << 40}, {1})}).at(0).tensor().sizes() == std::vector<i64>{(i64{1} << 40) + 1, 0});
    // the last id + 1 is the segment count: INT64_MAX + 1 overflowed
    CHECK_THROWS_WITH_AS(run(g, {empty, i64s({INT64_MAX}, {1})}), doctest::Contains("overflows int64"), gpass::error);
  }
  // the per-segment counts of Segment* are under the limit too
  CHECK_THROWS_WITH_AS(run("  %x = arg() {index = 0} -> (i8[*])\n  %i = arg() {index = 1} -> (i64[*])\n"
                           "  %y = tf::SegmentMean(%x, %i) {T = i8, Tindices = i64}\n  %r:0 = return(%y)\n",
                           {gpass::tensor::from<std::int8_t>({1}, {1, 1}), i64s({i64{1} << 19}, {1})}, {.max_tensor_bytes = 1 << 20}),
                       doctest::Contains("the segment counts"), gpass::error);
  // unchanged: means of runs, empty segments 0; unsorted max with a dropped negative id
  const auto x = gpass::tensor::from<float>({1, 2, 3, 4, 5, 6}, {3, 2});
  CHECK(values_of<float>(run(sorted + "  %y = tf::SegmentMean(%x, %i) {T = f32, Tindices = i64}\n  %r:0 = return(%y)\n",
                             {x, i64s({0, 0, 2}, {3})})
                             .at(0)) == std::vector<float>{2, 3, 0, 0, 5, 6});
  // an empty segment is 0 for SegmentMax / Min, 1 (the identity) for SegmentProd, as in
  // TensorFlow's kernels (segment_reduction_ops_impl: default_value 1 for SegmentProd)
  const std::pair<const char*, std::vector<float>> empties[] = {{"SegmentProd", {3, 8, 1, 1, 5, 6}}, {"SegmentMax", {3, 4, 0, 0, 5, 6}},
                                                                {"SegmentMin", {1, 2, 0, 0, 5, 6}}, {"SegmentSum", {4, 6, 0, 0, 5, 6}}};
  for (const auto& [op, want] : empties) {
    CAPTURE(op);
    CHECK(values_of<float>(run(sorted + "  %y = tf::" + op + "(%x, %i) {T = f32, Tindices = i64}\n  %r:0 = return(%y)\n",
                               {x, i64s({0, 0, 2}, {3})})
                               .at(0)) == want);
  }
  const auto m = values_of<float>(
      run(unsorted + "  %y = tf::UnsortedSegmentMax(%x, %i, %n) {T = f32, Tindices = i64}\n  %r:0 = return(%y)\n",
          {x, i64s({1, -1, 1}, {3}), gpass::tensor::scalar<i64>(3)})
          .at(0));
  CHECK(m == std::vector<float>{std::numeric_limits<float>::lowest(), std::numeric_limits<float>::lowest(), 5, 6,
                                std::numeric_limits<float>::lowest(), std::numeric_limits<float>::lowest()});
}

}  // namespace gpass_test_tf_index_random_kernels
