// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <gpass/analysis/verify.hpp>
#include <gpass/exec/eigen_cpu.hpp>
#include <gpass/exec/plan.hpp>
#include <gpass/exec/shape_rules.hpp>
#include <gpass/io/text.hpp>

#include <algorithm>
#include <atomic>
#include <memory>
#include <chrono>
#include <cstdint>
#include <limits>
#include <string>
#include <thread>
#include <vector>

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_exec_limits {

namespace {

namespace ex = gpass::exec;

// while(true) { x = x }: runs until a limit or a cancellation stops it
constexpr const char* endless = R"(
graph {
  %x = arg() {index = 0} -> (f32[2])
  %w = while(%x) {body = @body, cond = @cond} -> (f32[2])
  %r:0 = return(%w)
}
func @cond {
  %e = function_entry() -> (f32[2])
  %t = Constant() {value = tensor<bool[]> [true]} -> (bool[])
  %r:0 = return(%t)
}
func @body {
  %e = function_entry() -> (f32[2])
  %r:0 = return(%e)
}
)";

// two 4000-byte tensors alive at once, then their sum
constexpr const char* two_big = R"(
graph {
  %s = Constant() {value = tensor<i64[1]> [1000]} -> (i64[1])
  %a = ConstantOfShape(%s) -> (f32[?])
  %b = ConstantOfShape(%s) -> (f32[?])
  %y = Add(%a, %b) -> (f32[?])
  %r:0 = return(%y)
}
)";

// f calls itself through an If
gpass::graph<> recursive() { return gpass::read_text_file(std::string(GPASS_TEST_DATA_DIR) + "/hostile/recursive_function.gir"); }

std::string run_error(const gpass::graph<>& g, ex::run_limits limits, std::vector<ex::value> in = {}) {
  ex::eigen_cpu cpu;
  ex::plan<ex::eigen_cpu> p(g, cpu, {.limits = limits});
  try {
    (void)p.run(std::move(in));
  } catch (const gpass::error& e) {
    return e.what();
  }
  return "";
}
std::string run_error(const char* text, ex::run_limits limits, std::vector<ex::value> in = {}) {
  return run_error(gpass::parse_text(text), limits, std::move(in));
}

std::vector<ex::value> x2() { return {gpass::tensor::from<float>({1, 2})}; }

}  // namespace

TEST_CASE("exec.limits.loop_iterations") {
  const std::string e = run_error(endless, {.max_loop_iterations = 100}, x2());
  CHECK(e.find("node 'w' (op while)") != std::string::npos);
  CHECK(e.find("more than 100 iterations (max_loop_iterations)") != std::string::npos);
}

TEST_CASE("exec.limits.cancellation_from_another_thread") {
  std::atomic<bool> stop{false};
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    stop = true;
  });
  const std::string e = run_error(endless, {.max_loop_iterations = 0, .cancel = &stop}, x2());
  canceller.join();
  CHECK(e.find("run cancelled") != std::string::npos);
  // a flag set before the run stops it at its first kernel
  CHECK(run_error(two_big, {.cancel = &stop}).find("run cancelled") != std::string::npos);
}

TEST_CASE("exec.limits.call_depth_and_the_verifier_on_recursion") {
  const std::string e = run_error(recursive(), {.max_call_depth = 8}, x2());
  CHECK(e.find("nests calls deeper than 8 levels (max_call_depth") != std::string::npos);
  CHECK(e.find("node 'y' (op If)") != std::string::npos);
  const auto bad = gpass::verify_report(recursive());
  bool found = false;
  for (const auto& v : bad)
    if (v.rule == "recursive-function") {
      found = true;
      CHECK(v.message.find("calls itself (f -> f)") != std::string::npos);
    }
  CHECK(found);
}

TEST_CASE("exec.limits.tensor_and_run_bytes") {
  CHECK(run_error(two_big, {}) == "");
  const std::string t = run_error(two_big, {.max_tensor_bytes = 3999});
  CHECK(t.find("(op ConstantOfShape): a tensor of 4000 bytes is over the limit of 3999 bytes per tensor (max_tensor_bytes)") !=
        std::string::npos);
  // a and b alive together: 8000 bytes, then y (4000 more) while both are alive
  CHECK(run_error(two_big, {.max_run_bytes = 12000}) == "");
  const std::string r = run_error(two_big, {.max_run_bytes = 11999});
  CHECK(r.find("node 'y' (op Add)") != std::string::npos);
  CHECK(r.find("max_run_bytes)") != std::string::npos);
  // the count goes back down as tensors die: the same plan runs again and again
  auto g = gpass::parse_text(two_big);
  ex::eigen_cpu cpu;
  ex::plan<ex::eigen_cpu> p(g, cpu, {.limits = {.max_run_bytes = 12000}});
  for (int i = 0; i < 3; ++i) CHECK(p.run({})[0].tensor().size() == 1000);
}

// Scan's steps, an RNN's time steps and the parts of SplitToSequence count like a loop's
// iterations (an empty input may have any length along the other axes: [2^40, 0] scanned
// was 2^40 calls of the body)
TEST_CASE("exec.limits.scan_and_rnn_steps_are_iterations") {
  constexpr const char* scan = R"(
graph {
  %x = arg() {index = 0} -> (f32[?,?])
  %s = Constant() {value = tensor<f32[]> [0]} -> (f32[])
  %y:2 = Scan(%s, %x) {body = @body, num_scan_inputs = 1} -> (f32[], f32[?,?])
  %r:0 = return(%y:0)
}
func @body {
  %e:2 = function_entry() -> (f32[], f32[?])
  %r:0 = return(%e:0, %e:1)
}
)";
  const std::vector<ex::value> long_empty{gpass::tensor(gpass::dtype::f32, {std::int64_t{1} << 40, 0})};
  const std::string e = run_error(scan, {.max_loop_iterations = 1000}, long_empty);
  CHECK(e.find("more than 1000 iterations (max_loop_iterations)") != std::string::npos);
  CHECK(run_error(scan, {.max_loop_iterations = 1000}, {gpass::tensor(gpass::dtype::f32, {1000, 0})}) == "");
  constexpr const char* rnn = R"(
graph {
  %x = arg() {index = 0} -> (f32[?,?,?])
  %w = Constant() {value = tensor<f32[1,1,1]> [0.5]} -> (f32[1,1,1])
  %y:2 = RNN(%x, %w, %w) {hidden_size = 1} -> (f32[?,?,?,?], f32[?,?,?])
  %r:0 = return(%y:1)
}
)";
  const std::string er = run_error(rnn, {.max_loop_iterations = 10}, {gpass::tensor(gpass::dtype::f32, {11, 1, 1})});
  CHECK(er.find("more than 10 iterations (max_loop_iterations)") != std::string::npos);
  CHECK(run_error(rnn, {.max_loop_iterations = 10}, {gpass::tensor(gpass::dtype::f32, {10, 1, 1})}) == "");
  // SplitToSequence: one part per index of an empty [0, 2^40] is 2^40 tensors (checked as
  // scratch); a scalar has no axis (its sizes()[0] was read from an empty vector: fuzzing)
  ex::eigen_cpu cpu;
  ex::kernel_node n{.name = "s", .op = "SplitToSequence", .attrs = {{"axis", std::int64_t{1}}}, .opset = 11};
  CHECK_THROWS_WITH_AS(ex::run_kernel(cpu, cpu.kernels(), n, {gpass::tensor(gpass::dtype::f32, {0, std::int64_t{1} << 40})}, {.max_tensor_bytes = 1 << 20}),
                       doctest::Contains("a sequence of 1099511627776 parts"), gpass::error);
  n.attrs.clear();
  CHECK_THROWS_WITH_AS(ex::run_kernel(cpu, cpu.kernels(), n, {gpass::tensor::scalar<float>(1.0f)}), doctest::Contains("rank >= 1"), gpass::error);
}

// Scan checks at run time what the types may not have said (fuzzing: Scan-8 with a scalar
// state read the batch size from an empty sizes vector)
TEST_CASE("exec.limits.scan_inputs_checked_at_run_time") {
  constexpr const char* scalar_state8 = R"(
graph {opset_import = [":8"]} {
  %x = arg() {index = 0} -> (f32[1,?,2])
  %s = Constant() {value = tensor<f32[]> [0]} -> (f32[])
  %y:2 = Scan(_, %s, %x) {body = @body, num_scan_inputs = 1} -> (f32[*], f32[*])
  %r:0 = return(%y:0, %y:1)
}
func @body {
  %e:2 = function_entry() -> (f32[*], f32[2])
  %r:0 = return(%e:0, %e:1)
}
)";
  const std::vector<ex::value> x{gpass::tensor(gpass::dtype::f32, {1, 3, 2})};
  const std::string e = run_error(scalar_state8, {}, x);
  CHECK(e.find("(op Scan)") != std::string::npos);
  CHECK(e.find("state 0 has rank 0; Scan-8 needs a batch axis") != std::string::npos);
  // the batch sizes of the states and scan inputs must agree (both unknown to inference)
  constexpr const char* batch8 = R"(
graph {opset_import = [":8"]} {
  %s = arg() {index = 0} -> (f32[?,2])
  %x = arg() {index = 1} -> (f32[?,?,2])
  %y:2 = Scan(_, %s, %x) {body = @body, num_scan_inputs = 1} -> (f32[*], f32[*])
  %r:0 = return(%y:0, %y:1)
}
func @body {
  %e:2 = function_entry() -> (f32[2], f32[2])
  %a = Add(%e:0, %e:1) -> (f32[2])
  %r:0 = return(%a, %a)
}
)";
  auto feeds = [](std::int64_t state_batch) {
    return std::vector<ex::value>{gpass::tensor(gpass::dtype::f32, {state_batch, 2}), gpass::tensor(gpass::dtype::f32, {3, 4, 2})};
  };
  CHECK(run_error(batch8, {}, feeds(3)) == "");
  CHECK(run_error(batch8, {}, feeds(2)).find("scan input 0 has batch size 3, an earlier input 2") != std::string::npos);
  // Scan-9: a scalar has no scan axis
  constexpr const char* scalar_scan9 = R"(
graph {opset_import = [":11"]} {
  %x = arg() {index = 0} -> (f32[*])
  %s = Constant() {value = tensor<f32[]> [0]} -> (f32[])
  %y:2 = Scan(%s, %x) {body = @body, num_scan_inputs = 1} -> (f32[], f32[*])
  %r:0 = return(%y:0, %y:1)
}
func @body {
  %e:2 = function_entry() -> (f32[], f32[*])
  %r:0 = return(%e:0, %e:1)
}
)";
  const std::string e9 = run_error(scalar_scan9, {}, {gpass::tensor::scalar<float>(1.0f)});
  CHECK(e9.find("axis 0 is out of range for rank 0") != std::string::npos);
  // ConcatFromSequence of scalars: no axis 0 without new_axis (the output's sizes were written
  // past the end); with new_axis they stack
  ex::eigen_cpu cpu;
  const ex::value scalars = std::vector<gpass::tensor>{gpass::tensor::scalar<float>(1.0f), gpass::tensor::scalar<float>(2.0f)};
  ex::kernel_node c{.name = "c", .op = "ConcatFromSequence", .attrs = {{"axis", std::int64_t{0}}}, .opset = 11};
  CHECK_THROWS_WITH_AS(ex::run_kernel(cpu, cpu.kernels(), c, {scalars}), doctest::Contains("axis 0 is out of range for rank 0"), gpass::error);
  c.attrs["new_axis"] = std::int64_t{1};
  CHECK(ex::run_kernel(cpu, cpu.kernels(), c, {scalars})[0].tensor().sizes() == std::vector<std::int64_t>{2});
}

// the int32 accumulators of the integer products and convolutions are scratch the size of
// the output, checked before they are allocated (fuzzing: ConvInteger with large pads took
// 1.6 GB of a 3x52 image; MatMulInteger with K = 0 makes any M x N from empty inputs)
TEST_CASE("exec.limits.integer_accumulators_are_scratch") {
  ex::eigen_cpu cpu;
  const ex::run_limits small{.max_tensor_bytes = 1 << 20};
  ex::kernel_node mm{.name = "mm", .op = "MatMulInteger", .opset = 10};
  const std::vector<ex::value> empty_k{gpass::tensor(gpass::dtype::uint8, {2000, 0}), gpass::tensor(gpass::dtype::uint8, {0, 2000})};
  CHECK_THROWS_WITH_AS(ex::run_kernel(cpu, cpu.kernels(), mm, empty_k, small),
                       doctest::Contains("the int32 accumulators of the product needs 16000000 bytes of scratch"), gpass::error);
  const std::vector<ex::value> small_k{gpass::tensor(gpass::dtype::uint8, {200, 0}), gpass::tensor(gpass::dtype::uint8, {0, 200})};
  const gpass::tensor y = ex::run_kernel(cpu, cpu.kernels(), mm, small_k, small)[0].tensor();
  CHECK(y.sizes() == std::vector<std::int64_t>{200, 200});
  CHECK(y.data<std::int32_t>()[39999] == 0);
  ex::kernel_node conv{.name = "c", .op = "ConvInteger", .attrs = {{"pads", std::vector<std::int64_t>{0, 0, 600, 600}}}, .opset = 10};
  const std::vector<ex::value> image{gpass::tensor(gpass::dtype::uint8, {1, 1, 3, 52}), gpass::tensor(gpass::dtype::uint8, {1, 1, 2, 2})};
  CHECK_THROWS_WITH_AS(ex::run_kernel(cpu, cpu.kernels(), conv, image, small),
                       doctest::Contains("the int32 accumulators of the convolution needs"), gpass::error);
}

// a collective's replica indexes the exchanged tensors: out of range it wrote past them
TEST_CASE("exec.limits.collective_replica_in_range") {
  ex::eigen_cpu cpu;
  const gpass::tensor x = gpass::tensor::from<float>({1, 2});
  for (const auto& [replica, replicas] : {std::pair<std::int64_t, std::int64_t>{2, 2}, {-1, 2}, {0, 0}, {0, -5}}) {
    ex::kernel_node n{.name = "ar", .op = "all_reduce",
                      .attrs = {{"group", std::string("g")}, {"replica", replica}, {"replicas", replicas}}, .opset = 1};
    CHECK_THROWS_WITH_AS(ex::run_kernel(cpu, cpu.kernels(), n, {x}), doctest::Contains("needs 0 <= replica < replicas"), gpass::error);
  }
  ex::kernel_node one{.name = "ar", .op = "all_reduce", .attrs = {{"group", std::string("g")}, {"replica", std::int64_t{0}}, {"replicas", std::int64_t{1}}}, .opset = 1};
  CHECK(ex::run_kernel(cpu, cpu.kernels(), one, {x})[0].tensor() == x);
}

TEST_CASE("exec.limits.loop_scan_outputs_are_counted") {
  // ten iterations of a 4000-byte scan output: the parts (40000 bytes) are alive when they
  // are stacked into the Loop's output, which is counted too (80000 at the peak)
  constexpr const char* scan = R"(
graph {
  %n = Constant() {value = tensor<i64[]> [10]} -> (i64[])
  %s = Constant() {value = tensor<i64[1]> [1000]} -> (i64[1])
  %loop = Loop(%n, _, %s) {body = @body, _captures = 1} -> (f32[10,1000])
  %r:0 = return(%loop)
}
func @body {
  %e:3 = function_entry() -> (i64[], bool[], i64[1])
  %v = ConstantOfShape(%e:2) {value = tensor<f32[1]> [2]} -> (f32[?])
  %r:0 = return(%e:1, %v)
}
)";
  CHECK(run_error(scan, {.max_run_bytes = 100000}) == "");
  const std::string e = run_error(scan, {.max_run_bytes = 60000});
  CHECK(e.find("node 'loop' (op Loop)") != std::string::npos);
  CHECK(e.find("max_run_bytes)") != std::string::npos);
  auto g = gpass::parse_text(scan);
  ex::eigen_cpu cpu;
  ex::plan<ex::eigen_cpu> p(g, cpu, {.limits = {.max_run_bytes = 100000}});
  const gpass::tensor y = p.run({})[0].tensor();
  CHECK(y.sizes() == std::vector<std::int64_t>{10, 1000});
  CHECK(y.data<float>()[9999] == 2.0f);
}

TEST_CASE("exec.limits.large_unplanned_buffers_are_reused") {
  // the cache itself: size classes of 64 KiB, reuse, the cap
  using cache_t = ex::detail::buffer_cache;
  auto cache = std::make_shared<cache_t>(std::size_t{8} << 20);
  const cache_t::block p = cache->take(3'000'000);
  CHECK(p.bytes == cache_t::size_class(3'000'000));
  cache->give(p);
  CHECK(cache->kept() == cache_t::size_class(3'000'000));
  CHECK(cache->take(3'000'001).data == p.data);  // the same class
  CHECK(cache->kept() == 0);
  const cache_t::block q = cache->take(6'000'000);
  cache->give(q);
  cache->give(p);  // over the 8 MiB cap: freed, not kept
  CHECK(cache->kept() == cache_t::size_class(6'000'000));
  // a smaller request takes the kept 6 MB buffer (up to twice its class), a smaller one
  // still gets a buffer of its own
  const cache_t::block r = cache->take(3'500'000);
  CHECK(r.data == q.data);
  CHECK(r.bytes == q.bytes);
  CHECK(cache->kept() == 0);
  cache->give(r);
  const cache_t::block small = cache->take(2'000'000);
  CHECK(small.data != q.data);
  CHECK(small.bytes == cache_t::size_class(2'000'000));
  CHECK(cache->kept() == cache_t::size_class(6'000'000));
  cache->give(small);
  // through a plan: three 4 MB tensors whose sizes the plan does not know; runs after the
  // first reuse their buffers (whatever they hold), and the live-bytes count still holds
  constexpr const char* big = R"(
graph {
  %s = Constant() {value = tensor<i64[1]> [1000000]} -> (i64[1])
  %a = ConstantOfShape(%s) {value = tensor<f32[1]> [1.5]} -> (f32[?])
  %b = ConstantOfShape(%s) {value = tensor<f32[1]> [2]} -> (f32[?])
  %y = Add(%a, %b) -> (f32[?])
  %r:0 = return(%y)
}
)";
  auto g = gpass::parse_text(big);
  ex::eigen_cpu cpu;
  ex::plan<ex::eigen_cpu> plan(g, cpu, {.limits = {.max_run_bytes = 12'000'000}});
  std::vector<const std::byte*> seen;
  for (int i = 0; i < 4; ++i) {
    const gpass::tensor y = plan.run({})[0].tensor();
    REQUIRE(y.size() == 1'000'000);
    CHECK(y.data<float>()[0] == 3.5f);
    CHECK(y.data<float>()[999'999] == 3.5f);
    if (i > 0) CHECK(std::find(seen.begin(), seen.end(), y.raw()) != seen.end());  // a buffer of an earlier run
    seen.push_back(y.raw());
  }
  CHECK(run_error(big, {.max_run_bytes = 11'999'999}).find("max_run_bytes)") != std::string::npos);
  // outputs from min_bytes (64 KiB) up come from the run's cache, smaller ones from malloc
  // (why 64 KiB and not 1 MiB: buffer_cache's comment)
  static_assert(cache_t::min_bytes == std::size_t{1} << 16);
  struct cached_services final : ex::detail::run_services<ex::eigen_cpu> {
    std::shared_ptr<cache_t> c = std::make_shared<cache_t>();
    std::vector<ex::value> call(std::string_view, std::vector<ex::value>) const override { return {}; }
    cache_t* buffers() const override { return c.get(); }
  } services;
  ex::kernel_node n{.name = "n", .op = "Identity"};
  n.output_types.resize(1);
  auto stream = cpu.make_stream();
  std::vector<char> wanted(1, 1);
  auto allocate_and_drop = [&](std::int64_t elements) {
    std::vector<ex::value> out(1);
    ex::kernel_context<ex::eigen_cpu> ctx(n, cpu, stream, {}, out, {}, nullptr, wanted, &services);
    ctx.allocate_output(0, gpass::dtype::f32, {elements});
  };
  allocate_and_drop(25'000);  // 100 KB: kept when dropped
  CHECK(services.c->kept() == cache_t::size_class(100'000));
  allocate_and_drop(8'000);  // 32 KB: freed
  CHECK(services.c->kept() == cache_t::size_class(100'000));
}

TEST_CASE("exec.limits.slice_steps_at_int64_extremes") {
  // the element count of a slice: e - s + step - 1 overflowed for steps near INT64_MAX, and
  // -step for INT64_MIN (both executors share slice_axis)
  using gpass::exec::shape_rules::slice_axis;
  constexpr std::int64_t max = std::numeric_limits<std::int64_t>::max(), min = std::numeric_limits<std::int64_t>::min();
  CHECK(slice_axis(0, 10, max, 10).count == 1);
  CHECK(slice_axis(0, 10, max - 1, 10).count == 1);
  CHECK(slice_axis(9, -20, min, 10).count == 1);
  CHECK(slice_axis(9, -20, min, 10).start == 9);
  CHECK(slice_axis(0, 10, 3, 10).count == 4);
  CHECK(slice_axis(9, -20, -3, 10).count == 4);
  CHECK(slice_axis(min, max, 1, 10).count == 10);
}

TEST_CASE("exec.limits.overflowing_sizes_are_errors") {
  // a kernel asked for sizes whose element count wraps around int64
  constexpr const char* expand = R"(
graph {
  %x = arg() {index = 0} -> (f32[2])
  %s = Constant() {value = tensor<i64[3]> [4294967296, 4294967296, 2]} -> (i64[3])
  %y = Expand(%x, %s) -> (f32[?,?,?])
  %r:0 = return(%y)
}
)";
  const std::string e = run_error(expand, {}, x2());
  CHECK(e.find("node 'y' (op Expand)") != std::string::npos);
  CHECK(e.find("overflows int64") != std::string::npos);
}

}  // namespace gpass_test_exec_limits
