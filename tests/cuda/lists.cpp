// SPDX-License-Identifier: Apache-2.0
// The list ops on the GPU (`register_list_kernels<cuda>`: TensorArrays and TensorLists with
// their elements in device memory): each graph below runs through a `plan<cuda>` and a
// `plan<eigen_cpu>`, and every output (the lists' sizes, stacked and concatenated elements,
// the zeros of unwritten elements, a loop that writes one element per iteration) is equal;
// errors carry the CPU's messages; a session places the list ops of f32 lists on the GPU and
// those of string lists on the CPU. Without a GPU, the graphs still run on the CPU plan
// (with the values they must give) and the registry's answers for strings are checked.

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include <gpass/exec/cuda.hpp>
#include <gpass/exec/eigen_cpu.hpp>
#include <gpass/exec/plan.hpp>
#include <gpass/io/text.hpp>
#include <gpass/session.hpp>
#include <gpass/session/cuda_devices.hpp>

#include "fixture.hpp"

namespace gpass_test_cuda_lists {

namespace {

namespace ex = gpass::exec;
using gpass::tensor;
using i64 = std::int64_t;
using G = gpass::graph<>;

tensor scalar(i64 v) { return tensor::scalar<i64>(v); }
tensor i64s(std::vector<i64> v) { return tensor::from<i64>(v); }

// reserve(n), write x at i (past the end: the list grows), read element j (unwritten: zeros),
// then the size and the stacked list
constexpr const char* write_read = R"(graph {
  %n = arg() {index = 0} -> (i64[])
  %i = arg() {index = 1} -> (i64[])
  %j = arg() {index = 2} -> (i64[])
  %x = arg() {index = 3} -> (f32[2])
  %ta:2 = list_reserve(%n) {dtype = f32, element_shape = shape[2]}
  %w = list_write(%ta:1, %i, %x)
  %y = list_read(%w, %j) {dtype = f32, element_shape = shape[2]}
  %s = list_size(%w)
  %st = list_stack(%w) {dtype = f32, element_shape = shape[2]}
  %r:0 = return(%y, %s, %st)
}
)";

// the rows of v scattered at idx, gathered at g (holes read as zeros), the list concatenated
// with its lengths, and the rows of the concatenation split by lens again
constexpr const char* scatter_gather = R"(graph {
  %n = arg() {index = 0} -> (i64[])
  %idx = arg() {index = 1} -> (i64[?])
  %v = arg() {index = 2} -> (f32[?,3])
  %g = arg() {index = 3} -> (i64[?])
  %ta:2 = list_reserve(%n) {dtype = f32, element_shape = shape[3]}
  %sc = list_scatter(%ta:1, %idx, %v)
  %ga = list_gather(%sc, %g) {dtype = f32, element_shape = shape[3]}
  %st = list_stack(%sc) {dtype = f32, element_shape = shape[3]}
  %r:0 = return(%ga, %st)
}
)";

constexpr const char* split_concat = R"(graph {
  %v = arg() {index = 0} -> (f32[?,2])
  %lens = arg() {index = 1} -> (i64[?])
  %zero = Constant() {value = tensor<i64[]> [0]}
  %e:2 = list_reserve(%zero) {dtype = f32}
  %l = list_split(%e:1, %v, %lens)
  %c:2 = list_concat(%l) {dtype = f32}
  %s = list_size(%l)
  %rows = list_from_tensor(%v)
  %st = list_stack(%rows) {dtype = f32}
  %p:2 = list_pop_back(%rows) {dtype = f32}
  %q = list_push_back(%p:0, %p:1)
  %qs = list_stack(%q) {dtype = f32}
  %r:0 = return(%c:0, %c:1, %s, %st, %p:1, %qs)
}
)";

// a while loop writing x * i at i for i in [0, n), then the stacked list: a TensorArray
// filled by a loop, as TensorFlow's dynamic RNN does
constexpr const char* loop_fill = R"(graph {
  %x = arg() {index = 0} -> (f32[3])
  %n = arg() {index = 1} -> (i64[])
  %i0 = Constant() {value = tensor<i64[]> [0]}
  %ta:2 = list_reserve(%n) {dtype = f32, element_shape = shape[3]}
  %loop:4 = while(%i0, %ta:1, %x, %n) {body = @body, cond = @cond}
  %st = list_stack(%loop:1) {dtype = f32, element_shape = shape[3]}
  %ret:0 = return(%st)
}
func @body {
  %a:4 = function_entry()
  %one = Constant() {value = tensor<i64[]> [1]}
  %f = Cast(%a:0) {to = 1}
  %y = Mul(%a:2, %f)
  %w = list_write(%a:1, %a:0, %y)
  %i = Add(%a:0, %one)
  %ret:0 = return(%i, %w, %a:2, %a:3)
}
func @cond {
  %a:4 = function_entry()
  %c = Less(%a:0, %a:3)
  %ret:0 = return(%c)
})";

struct case_ {
  const char* name;
  const char* graph;
  std::vector<tensor> in;
};

std::vector<case_> cases() {
  const tensor x2 = tensor::from<float>({1.5f, -2.0f});
  const tensor v = tensor::from<float>({1, 2, 3, 4, 5, 6, 7, 8, 9}, {3, 3});
  const tensor r = tensor::from<float>({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, {5, 2});
  return {
      {"write_read written", write_read, {scalar(4), scalar(1), scalar(1), x2}},
      {"write_read unwritten", write_read, {scalar(4), scalar(1), scalar(3), x2}},
      {"write_read grows", write_read, {scalar(2), scalar(5), scalar(4), x2}},
      {"scatter_gather", scatter_gather, {scalar(2), i64s({4, 0, 2}), v, i64s({2, 1, 4, 1, 0})}},
      {"scatter_gather none", scatter_gather, {scalar(3), i64s({}), tensor(gpass::dtype::f32, {0, 3}), i64s({})}},
      {"split_concat", split_concat, {r, i64s({2, 0, 3})}},
      {"split_concat one", split_concat, {r, i64s({5})}},
      {"loop_fill", loop_fill, {tensor::from<float>({0.5f, -1.0f, 2.0f}), scalar(6)}},
      {"loop_fill empty", loop_fill, {tensor::from<float>({0.5f, -1.0f, 2.0f}), scalar(0)}},
  };
}

std::vector<tensor> run_cpu(const char* text, const std::vector<tensor>& in) {
  ex::eigen_cpu cpu;
  ex::plan<ex::eigen_cpu> p(gpass::parse_text(text), cpu);
  std::vector<ex::value> v(in.begin(), in.end());
  std::vector<tensor> r;
  for (auto& o : p.run(std::move(v))) r.push_back(o.tensor());
  return r;
}

std::vector<tensor> run_gpu(const char* text, const std::vector<tensor>& in) {
  auto& g = *gpass_test_cuda::gpu();
  ex::plan<ex::cuda> p(gpass::parse_text(text), g);
  std::vector<ex::basic_value<ex::cuda_tensor>> v;
  for (const auto& t : in) v.emplace_back(g.upload(t, g.default_stream()));
  std::vector<tensor> r;
  for (auto& o : p.run(std::move(v))) r.push_back(g.download(o.tensor(), g.default_stream()));
  return r;
}

std::string error_of(auto&& f) {
  try {
    f();
  } catch (const gpass::error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("cuda: the list graphs give their values on the CPU plan (what the GPU is compared with)") {
  // what the GPU test compares against, checked here where there is no GPU
  const auto all = cases();
  auto floats = [](const tensor& t) {
    auto s = t.values<float>();
    return std::vector<float>(s.begin(), s.end());
  };
  auto w = run_cpu(all[1].graph, all[1].in);  // element 3 unwritten: zeros
  CHECK(floats(w[0]) == std::vector<float>{0, 0});
  CHECK(w[1].values<std::int32_t>()[0] == 4);
  CHECK(floats(w[2]) == std::vector<float>{0, 0, 1.5f, -2, 0, 0, 0, 0});
  auto s = run_cpu(all[3].graph, all[3].in);
  CHECK(floats(s[0]) == std::vector<float>{7, 8, 9, 0, 0, 0, 1, 2, 3, 0, 0, 0, 4, 5, 6});
  auto c = run_cpu(all[5].graph, all[5].in);
  CHECK(floats(c[0]) == floats(all[5].in[0]));
  CHECK(c[1].values<i64>()[2] == 3);
  CHECK(floats(c[4]) == std::vector<float>{9, 10});
  CHECK(floats(c[5]) == floats(all[5].in[0]));
  auto l = run_cpu(all[7].graph, all[7].in);
  REQUIRE(l[0].sizes() == std::vector<i64>{6, 3});
  CHECK(l[0].values<float>()[5 * 3 + 2] == 10.0f);
  CHECK(run_cpu(all[8].graph, all[8].in)[0].sizes() == std::vector<i64>{0, 3});
}

TEST_CASE("cuda: the list kernels are registered for the GPU, for every list but strings") {
  ex::kernel_registry<ex::cuda> r;
  ex::register_cuda_kernels(r);
  gpass::attribute_map f32{{"dtype", gpass::attribute(gpass::dtype::f32)}}, str{{"dtype", gpass::attribute(gpass::dtype::string)}};
  for (const char* op : {"list_reserve", "list_write", "list_read", "list_gather", "list_scatter", "list_size", "list_concat",
                         "list_split", "list_stack", "list_from_tensor", "list_push_back", "list_pop_back"}) {
    CAPTURE(op);
    CHECK(r.has("", op));
    CHECK(r.serves({.op = op, .attrs = &f32}));
    CHECK_FALSE(r.serves({.op = op, .attrs = &str}));
  }
  // a string element written without a declared dtype
  CHECK_FALSE(r.serves({.op = "list_write", .inputs = {gpass::dtype::undefined, gpass::dtype::int64, gpass::dtype::string}}));
  CHECK(r.serves({.op = "list_write", .inputs = {gpass::dtype::undefined, gpass::dtype::int32, gpass::dtype::f16}}));
}

TEST_CASE("cuda: the list ops on the GPU give the CPU's values") {
  GPASS_REQUIRE_GPU();
  for (const auto& c : cases()) {
    CAPTURE(c.name);
    const auto want = run_cpu(c.graph, c.in);
    const auto got = run_gpu(c.graph, c.in);
    REQUIRE(got.size() == want.size());
    for (std::size_t k = 0; k < want.size(); ++k) {
      CAPTURE(k);
      gpass_test_cuda::check_close(got[k], want[k], 0, 0);
    }
  }
}

TEST_CASE("cuda: the list ops on the GPU fail as on the CPU") {
  GPASS_REQUIRE_GPU();
  const tensor x2 = tensor::from<float>({1.5f, -2.0f});
  struct bad {
    const char* graph;
    std::vector<tensor> in;
    const char* at;  // the node and op the error names
    const char* message;
  } cases[] = {
      {write_read, {scalar(4), scalar(1), scalar(7), x2}, "node 'y' (op list_read)", "index 7 out of range for a list of 4 elements"},
      {write_read, {scalar(4), scalar(-1), scalar(0), x2}, "node 'w' (op list_write)", "negative index -1"},
      {write_read, {scalar(i64{1} << 40), scalar(0), scalar(0), x2}, "node 'ta' (op list_reserve)", "a list of 1099511627776 elements needs"},
      {split_concat, {tensor::from<float>({1, 2, 3, 4}, {2, 2}), i64s({1, 2})}, "node 'l' (op list_split)",
       "lengths add up to more than the 2 rows"},
  };
  for (const auto& b : cases) {
    CAPTURE(b.message);
    const std::string cpu = error_of([&] { (void)run_cpu(b.graph, b.in); });
    const std::string gpu = error_of([&] { (void)run_gpu(b.graph, b.in); });
    // the same node, op and message (but for a list's bytes: a device tensor's handle has
    // another size)
    for (const std::string& e : {cpu, gpu}) {
      CHECK(e.find(b.at) != std::string::npos);
      CHECK(e.find(b.message) != std::string::npos);
    }
  }
}

TEST_CASE("cuda: a session keeps an f32 list on the GPU and a string list on the CPU") {
  GPASS_REQUIRE_GPU();
  constexpr const char* model = R"(graph {
  %x = arg() {index = 0} -> (f32[3])
  %n = Constant() {value = tensor<i64[]> [3]}
  %i = Constant() {value = tensor<i64[]> [1]}
  %ta:2 = list_reserve(%n) {dtype = f32, element_shape = shape[3]}
  %t = Tanh(%x)
  %w = list_write(%ta:1, %i, %t)
  %st = list_stack(%w) {dtype = f32, element_shape = shape[3]}
  %s = Constant() {value = tensor<str[]> ["a"]}
  %sa:2 = list_reserve(%n) {dtype = str, element_shape = shape[]}
  %sw = list_write(%sa:1, %i, %s)
  %sr = list_read(%sw, %i) {dtype = str, element_shape = shape[]}
  %ret:0 = return(%st, %sr) {names = ["st", "sr"]}
})";
  const tensor x = tensor::from<float>({0.5f, -1.0f, 2.0f});
  gpass::session<G> cpu(gpass::parse_text(model), {});
  const auto want = cpu.run({{"x", x}}, {"st", "sr"});
  gpass::session<G> gpu(gpass::parse_text(model), {.devices = gpass::cuda_devices<G>()});
  const auto got = gpu.run({{"x", x}}, {"st", "sr"});
  gpass_test_cuda::check_close(got.at(0).tensor(), want.at(0).tensor(), 2e-6, 1e-6);  // (CUDA's tanhf and Eigen's)
  CHECK(got.at(1).tensor().values<std::string>()[0] == "a");
  const auto placed = gpu.last_placement();
  const std::string g0 = "/job:localhost/replica:0/task:0/device:GPU:0", c0 = "/job:localhost/replica:0/task:0/device:CPU:0";
  CHECK(placed.at("ta") == g0);
  CHECK(placed.at("w") == g0);
  CHECK(placed.at("st") == g0);
  CHECK(placed.at("sa") == c0);
  CHECK(placed.at("sw") == c0);
  CHECK(placed.at("sr") == c0);
}

}  // namespace gpass_test_cuda_lists
