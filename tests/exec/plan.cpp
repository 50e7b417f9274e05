// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <gpass/exec/eigen_cpu.hpp>
#include <gpass/exec/eigen_cpu/kernels/control.hpp>  // register_control on a test policy
#include <gpass/exec/memory_plan.hpp>
#include <gpass/exec/plan.hpp>
#include <gpass/io/text.hpp>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_exec_plan {

namespace {

namespace ex = gpass::exec;

// A policy of its own (the CPU's memory and threads, a registry with a few test kernels and
// the control family): the plan works with any executor_policy.
struct test_cpu : ex::eigen_cpu {
  using ex::eigen_cpu::eigen_cpu;
  static inline std::atomic<int> add_calls{0};
  const ex::kernel_registry<test_cpu>& kernels() const {
    static const auto reg = [] {
      ex::kernel_registry<test_cpu> r;
      // AddF: f32 + f32 of equal sizes, into the planned buffer
      r.add({.op = "AddF", .dtypes = {gpass::dtype::f32}, .make = [](const ex::kernel_node&) -> ex::kernel_fn<test_cpu> {
        return [](ex::kernel_context<test_cpu>& ctx) {
          ++add_calls;
          const auto& a = ctx.input(0);
          const auto& b = ctx.input(1);
          if (a.sizes() != b.sizes()) ctx.fail("sizes differ");
          auto& y = ctx.allocate_output(0, gpass::dtype::f32, a.sizes());
          for (std::int64_t i = 0; i < a.size(); ++i) y.data<float>()[i] = a.data<float>()[i] + b.data<float>()[i];
        };
      }});
      // View: output 0 is input 0 with other sizes (declared alias)
      r.add({.op = "View", .alias_input = 0, .make = [](const ex::kernel_node&) -> ex::kernel_fn<test_cpu> {
        return [](ex::kernel_context<test_cpu>& ctx) { ctx.set_output(0, ctx.input(0).reshaped({ctx.input(0).size()})); };
      }});
      // Sneak: returns its input without declaring the alias (the plan must copy it)
      r.add({.op = "Sneak", .make = [](const ex::kernel_node&) -> ex::kernel_fn<test_cpu> {
        return [](ex::kernel_context<test_cpu>& ctx) { ctx.set_output(0, ctx.input_value(0)); };
      }});
      // Less: a < b for f32/i64 scalars -> bool
      r.add({.op = "LessS", .make = [](const ex::kernel_node&) -> ex::kernel_fn<test_cpu> {
        return [](ex::kernel_context<test_cpu>& ctx) {
          const auto& a = ctx.input(0);
          const auto& b = ctx.input(1);
          ctx.set_output(0, gpass::tensor::scalar<bool>(a.data<std::int64_t>()[0] < b.data<std::int64_t>()[0]));
        };
      }});
      ex::cpu_detail::register_control(r);
      return r;
    }();
    return reg;
  }
};
static_assert(ex::executor_policy<test_cpu>);
static_assert(ex::executor_policy<ex::eigen_cpu>);

gpass::graph<> parse(const std::string& s) { return gpass::parse_text(s); }

std::vector<float> floats(const ex::value& v) {
  auto s = v.tensor().values<float>();
  return {s.begin(), s.end()};
}

}  // namespace

TEST_CASE("exec.memory_plan.reuses_disjoint_lifetimes") {
  // a chain a -> b -> c -> d of 1 KiB buffers: two buffers at any time
  auto l = ex::plan_memory({{1024, 0, 1}, {1024, 1, 2}, {1024, 2, 3}, {1024, 3, 4}});
  CHECK(l.naive_bytes == 4096);
  CHECK(l.arena_bytes == 2048);
  CHECK(l.offsets[0] != l.offsets[1]);
  CHECK(l.offsets[0] == l.offsets[2]);
  // overlapping lifetimes never share memory
  std::vector<ex::buffer_request> req;
  for (int i = 0; i < 50; ++i) req.push_back({static_cast<std::size_t>(64 * (1 + (i * 7) % 5)), i % 10, i % 10 + (i % 3)});
  auto m = ex::plan_memory(req);
  for (std::size_t i = 0; i < req.size(); ++i)
    for (std::size_t j = i + 1; j < req.size(); ++j) {
      const bool time = req[i].first <= req[j].last && req[j].first <= req[i].last;
      const bool space = m.offsets[i] < m.offsets[j] + req[j].size && m.offsets[j] < m.offsets[i] + req[i].size;
      CHECK_FALSE((time && space));
    }
  CHECK(m.arena_bytes <= m.naive_bytes);
}

TEST_CASE("exec.plan.runs_and_plans_memory") {
  auto g = parse(R"(graph {
  %x = arg() {index = 0} -> (f32[4])
  %y = arg() {index = 1} -> (f32[4])
  %a = AddF(%x, %y) -> (f32[4])
  %b = AddF(%a, %a) -> (f32[4])
  %c = AddF(%b, %b) -> (f32[4])
  %d = AddF(%c, %c) -> (f32[4])
  %unused = AddF(%x, %x) -> (f32[4])
  %r:0 = return(%d) {names = ["out"]}
})");
  test_cpu cpu;
  ex::plan<test_cpu> p(g, cpu);
  CHECK(p.stats().steps == 4);
  CHECK(p.stats().pruned == 1);
  CHECK(p.stats().planned_buffers == 3);  // a, b, c; d is a result
  CHECK(p.stats().naive_bytes == 3 * 64);
  CHECK(p.stats().planned_peak_bytes == 2 * 64);
  CHECK(p.output_names() == std::vector<std::string>{"out"});
  auto x = gpass::tensor::from<float>({1, 2, 3, 4});
  auto y = gpass::tensor::from<float>({1, 1, 1, 1});
  auto out = p.run({x, y});
  CHECK(floats(out[0]) == std::vector<float>{16, 24, 32, 40});
  // results do not share the arena with the next run
  auto out2 = p.run({y, y});
  CHECK(floats(out[0]) == std::vector<float>{16, 24, 32, 40});
  CHECK(floats(out2[0]) == std::vector<float>{16, 16, 16, 16});
  auto by_name = p.run_named(std::map<std::string, ex::value, std::less<>>{{"x", x}, {"y", y}});
  CHECK(floats(by_name[0]) == floats(out[0]));
}

TEST_CASE("exec.plan.aliases_keep_buffers_alive") {
  // v views a (declared alias), s sneaks b (undeclared): both must survive later reuse
  auto g = parse(R"(graph {
  %x = arg() {index = 0} -> (f32[2,2])
  %a = AddF(%x, %x) -> (f32[2,2])
  %v = View(%a) -> (f32[4])
  %b = AddF(%a, %a) -> (f32[2,2])
  %s = Sneak(%b) -> (f32[2,2])
  %c = AddF(%x, %x) -> (f32[2,2])
  %d = AddF(%c, %c) -> (f32[2,2])
  %e = AddF(%d, %d) -> (f32[2,2])
  %r:0 = return(%v, %s, %e)
})");
  test_cpu cpu;
  ex::plan<test_cpu> p(g, cpu);
  auto x = gpass::tensor::from<float>({1, 2, 3, 4}, {2, 2});
  for (int i = 0; i < 3; ++i) {
    auto out = p.run({x});
    CHECK(floats(out[0]) == std::vector<float>{2, 4, 6, 8});
    CHECK(floats(out[1]) == std::vector<float>{4, 8, 12, 16});
    CHECK(floats(out[2]) == std::vector<float>{8, 16, 24, 32});
  }
}

TEST_CASE("exec.plan.errors_name_node_and_input") {
  test_cpu cpu;
  auto g = parse(R"(graph {
  %x = arg() {index = 0} -> (f32[4])
  %a = AddF(%x, %x) -> (f32[4])
  %m = Mystery(%a)
  %r:0 = return(%m)
})");
  try {
    ex::plan<test_cpu> p(g, cpu);
    FAIL("no error");
  } catch (const gpass::error& e) {
    CHECK(e.context().node == "m");
    CHECK(std::string(e.what()).find("unsupported op") != std::string::npos);
  }
  auto ok = parse(R"(graph {
  %x = arg() {index = 0} -> (f32[4])
  %y = arg() {index = 1} -> (f32[?])
  %a = AddF(%x, %y) -> (f32[4])
  %r:0 = return(%a)
})");
  ex::plan<test_cpu> p(ok, cpu);
  auto four = gpass::tensor::from<float>({1, 2, 3, 4});
  CHECK_THROWS_WITH_AS(p.run({four}), doctest::Contains("expected 2 inputs"), gpass::error);
  CHECK_THROWS_WITH_AS(p.run({ex::value{}, four}), doctest::Contains("no value fed for input 'x'"), gpass::error);
  CHECK_THROWS_WITH_AS(p.run({gpass::tensor::from<float>({1, 2}), four}), doctest::Contains("expected f32[4]"), gpass::error);
  CHECK_THROWS_WITH_AS(p.run({gpass::tensor::from<std::int64_t>({1, 2, 3, 4}), four}), doctest::Contains("element type"),
                       gpass::error);
  try {
    p.run({four, gpass::tensor::from<float>({1, 2})});
    FAIL("no error");
  } catch (const gpass::error& e) {
    CHECK(e.context().node == "a");
    CHECK(e.message() == "sizes differ");
  }
}

TEST_CASE("exec.plan.loop_and_if_run_nested_plans") {
  // sum = 0; for i < n while sum < limit: sum += x  (x captured); then If(sum < 100) -> sum+sum else sum
  auto g = parse(R"(graph {
  %n = arg() {index = 0} -> (i64[])
  %x = arg() {index = 1} -> (f32[2])
  %zero = Constant() {value = tensor<f32[2]>[0.0, 0.0]} -> (f32[2])
  %loop = Loop(%n, _, %zero, %x) {body = @body, _captures = 1} -> (f32[2])
  %k = Constant() {value = tensor<i64[]>[3]} -> (i64[])
  %flag = LessS(%n, %k) -> (bool[])
  %pick = If(%flag, %loop) {then_branch = @twice, else_branch = @same, _captures = 1} -> (f32[2])
  %r:0 = return(%loop, %pick)
}
func @body {
  %e:4 = function_entry() -> (i64[], bool[], f32[2], f32[2])
  %s = AddF(%e:2, %e:3) -> (f32[2])
  %r:0 = return(%e:1, %s)
}
func @twice {
  %e = function_entry() -> (f32[2])
  %s = AddF(%e, %e) -> (f32[2])
  %r:0 = return(%s)
}
func @same {
  %e = function_entry() -> (f32[2])
  %r:0 = return(%e)
})");
  test_cpu cpu;
  ex::plan<test_cpu> p(g, cpu);
  CHECK(p.stats().functions == 3);
  auto x = gpass::tensor::from<float>({1, 2});
  auto two = p.run({gpass::tensor::scalar<std::int64_t>(2), x});
  CHECK(floats(two[0]) == std::vector<float>{2, 4});
  CHECK(floats(two[1]) == std::vector<float>{4, 8});
  auto five = p.run({gpass::tensor::scalar<std::int64_t>(5), x});
  CHECK(floats(five[0]) == std::vector<float>{5, 10});
  CHECK(floats(five[1]) == std::vector<float>{5, 10});
}

TEST_CASE("exec.plan.concurrent_runs_agree") {
  auto g = parse(R"(graph {
  %x = arg() {index = 0} -> (f32[256])
  %a = AddF(%x, %x) -> (f32[256])
  %b = AddF(%a, %x) -> (f32[256])
  %c = AddF(%b, %a) -> (f32[256])
  %d = AddF(%c, %b) -> (f32[256])
  %r:0 = return(%d)
})");
  test_cpu cpu({.threads = 2});
  ex::plan<test_cpu> p(g, cpu);
  std::vector<std::vector<float>> results(8);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      std::vector<float> xs(256);
      for (int i = 0; i < 256; ++i) xs[i] = static_cast<float>(i + t);
      for (int rep = 0; rep < 200; ++rep) {
        auto out = p.run({gpass::tensor::from<float>(xs)});
        auto v = floats(out[0]);
        if (rep == 0) results[t] = v;
        else if (v != results[t]) results[t].clear();  // a difference between runs
      }
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 8; ++t) {
    REQUIRE(results[t].size() == 256);
    for (int i = 0; i < 256; ++i) CHECK(results[t][i] == doctest::Approx(8.0 * (i + t)));
  }
}

}  // namespace gpass_test_exec_plan
