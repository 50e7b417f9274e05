// SPDX-License-Identifier: Apache-2.0
// Globals (TensorFlow's variables after `variables-to-globals`) in device memory: the GPU's
// get_global / set_global keep a global's value in the plan's store as a device tensor, so a
// variable read and assigned on the GPU is not copied to the host between runs; the host
// view (`globals().get`) is the device's value copied back; the runs give the CPU plan's
// values; every optimizer rule of `update_globals` gives the CPU kernel's variables. A session
// puts a variable's reads, writes and optimizer steps on the GPU.

#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include <gpass/exec/cuda.hpp>
#include <gpass/exec/eigen_cpu.hpp>
#include <gpass/exec/plan.hpp>
#include <gpass/io/text.hpp>
#include <gpass/session.hpp>
#include <gpass/session/cuda_devices.hpp>

#include "fixture.hpp"

namespace gpass_test_cuda_globals {

namespace {

namespace ex = gpass::exec;
using gpass::tensor;
using G = gpass::graph<>;

// y = w * x, then w += x: a variable read and assigned every run
constexpr const char* accumulate = R"(graph {"global:w" = tensor<f32[3]> [1.0, 2.0, 3.0]} {
  %x = arg() {index = 0} -> (f32[3])
  %w = get_global() {variable = "w"} -> (f32[3])
  %y = Mul(%w, %x)
  %n = Add(%w, %x)
  %s = set_global(%n) {variable = "w"} -> (f32[3])
  %r:0 = return(%y, ^%s) {names = ["y"]}
})";

// a gradient-descent step on w and a read of w
constexpr const char* train = R"(graph {"global:w" = tensor<f32[2]> [1.0, 2.0]} {
  %g = arg() {index = 0} -> (f32[2])
  %lr = Constant() {value = tensor<f32[]> [0.5]}
  %w = get_global() {variable = "w"} -> (f32[2])
  %t = Tanh(%g)
  %y = Mul(%w, %t)
  %u = update_globals(%lr, %g, ^%y) {rule = "gradient_descent", variables = ["w"]} -> (f32[2])
  %r:0 = return(%y, ^%u) {names = ["y"]}
})";

}  // namespace

TEST_CASE("cuda: get_global, set_global and update_globals have GPU kernels, for every type but strings") {
  ex::kernel_registry<ex::cuda> r;
  ex::register_cuda_kernels(r);
  for (const char* op : {"get_global", "set_global", "update_globals"}) {
    CAPTURE(op);
    CHECK(r.serves({.op = op, .inputs = {}, .outputs = {gpass::dtype::f32}}));
    CHECK_FALSE(r.serves({.op = op, .inputs = {}, .outputs = {gpass::dtype::string}}));
  }
  CHECK_FALSE(r.serves({.op = "set_global", .inputs = {gpass::dtype::string}}));
  CHECK_FALSE(r.serves({.op = "update_globals", .inputs = {}, .outputs = {gpass::dtype::f16}}));  // (f32 and f64, as the CPU)
}

namespace {

/// A graph of one `update_globals` step of `rule` on f32 (or f64) variables of 5 elements:
/// the gradient is argument 0, the hyper-parameters constants (`hp`: their text values,
/// with types), `flags` more attributes.
std::string update_graph(const std::string& rule, const std::vector<std::string>& hp, const char* t, const std::string& flags) {
  const auto* u = gpass::detail::find_update_rule(rule);
  REQUIRE(u != nullptr);
  // (slot 2 >= slot 1 squared: centered RMSProp takes sqrt(ms - mg^2 + eps))
  const std::vector<std::string> init = {"[0.5, -1.0, 2.0, 0.25, -0.75]", "[0.1, 0.2, 0.3, 0.4, 0.5]", "[0.3, 0.1, 0.2, 0.6, 0.5]",
                                         "[0.2, 0.4, 0.1, 0.3, 0.7]"};
  std::string attrs, vars, text, ins;
  for (std::size_t v = 0; v < u->variables; ++v) {
    attrs += std::string(v ? ", " : "") + "\"global:v" + std::to_string(v) + "\" = tensor<" + t + "[5]> " + init[v];
    vars += std::string(v ? ", " : "") + "\"v" + std::to_string(v) + "\"";
  }
  std::size_t next_hp = 0;
  for (std::size_t k = 0; k < u->inputs; ++k) {
    if (k == u->gradient) {
      text += "  %i" + std::to_string(k) + " = arg() {index = 0} -> (" + t + "[5])\n";
    } else {
      text += "  %i" + std::to_string(k) + " = Constant() {value = " + hp.at(next_hp++) + "}\n";
    }
    ins += std::string(k ? ", " : "") + "%i" + std::to_string(k);
  }
  return "graph {" + attrs + "} {\n" + text + "  %u = update_globals(" + ins + ") {rule = \"" + rule + "\", variables = [" + vars + "]" +
         flags + "} -> (" + t + "[5])\n  %r:0 = return(%u)\n}\n";
}

struct rule_case {
  const char* rule;
  std::vector<std::string> hp;  // the non-gradient inputs in order
  std::string flags;
};

/// Every rule, some twice (its flags, other hyper-parameter types).
std::vector<rule_case> rule_cases() {
  auto f = [](double v) { return "tensor<f32[]> [" + std::to_string(v) + "]"; };
  auto d = [](double v) { return "tensor<f64[]> [" + std::to_string(v) + "]"; };
  return {
    {"gradient_descent", {d(0.1)}, ""},
    {"gradient_descent", {"tensor<i32[]> [1]"}, ""},
    {"momentum", {f(0.1), f(0.9)}, ""},
    {"momentum", {d(0.1), f(0.9)}, ", use_nesterov = true"},
    {"adam", {f(0.9), f(0.99), f(0.01), f(0.9), f(0.999), f(1e-3)}, ""},
    {"adam", {f(0.81), d(0.98), f(0.01), f(0.9), f(0.999), f(1e-3)}, ", use_nesterov = true"},
    {"adagrad", {f(0.1)}, ""},
    {"adagrad", {f(0.1)}, ", update_slots = false"},
    {"adagrad_v2", {f(0.1), f(1e-3)}, ""},
    {"rmsprop", {f(0.01), f(0.9), f(0.5), f(1e-3)}, ""},
    {"centered_rmsprop", {f(0.01), f(0.9), f(0.5), f(1e-3)}, ""},
    {"adadelta", {f(1.0), f(0.95), f(1e-3)}, ""},
    {"ftrl", {f(0.1), f(0.01), f(0.02), f(-0.5)}, ""},
    {"ftrl", {f(0.1), f(0.01), f(0.02), f(-0.3)}, ", multiply_linear_by_lr = true"},
    {"ftrl_v2", {f(0.1), f(0.01), f(0.02), f(0.1), f(-0.5)}, ""},
    {"proximal_gradient_descent", {f(0.1), f(0.05), f(0.02)}, ""},
    {"proximal_gradient_descent", {f(0.1), f(0.0), f(0.02)}, ""},
    {"proximal_adagrad", {f(0.1), f(0.05), f(0.02)}, ""},
  };
}

}  // namespace

TEST_CASE("cuda: the optimizer-step graphs run on the CPU plan (what the GPU is compared with)") {
  ex::eigen_cpu cpu;
  for (const auto& rc : rule_cases()) {
    const std::string text = update_graph(rc.rule, rc.hp, "f32", rc.flags);
    CAPTURE(text);
    ex::plan<ex::eigen_cpu> p(gpass::parse_text(text), cpu);
    const auto before = p.globals().snapshot();
    const auto out = p.run({tensor::from<float>({0.5f, -0.25f, 1.0f, -1.0f, 0.125f})});
    const auto v0 = out.at(0).tensor().values<float>();
    for (float v : v0) CHECK(std::isfinite(v));
    CHECK(out.at(0).tensor().values<float>()[0] != before.at("v0").values<float>()[0]);  // the step moved the variable
  }
}

TEST_CASE("cuda: update_globals on the GPU gives the CPU kernel's variables, for every rule") {
  GPASS_REQUIRE_GPU();
  auto& gpu = *gpass_test_cuda::gpu();
  ex::eigen_cpu cpu;
  for (const char* t : {"f32", "f64"})
    for (const auto& rc : rule_cases()) {
      const std::string text = update_graph(rc.rule, rc.hp, t, rc.flags);
      CAPTURE(text);
      const auto g = gpass::parse_text(text);
      auto cs = std::make_shared<ex::global_store>(), gs = std::make_shared<ex::global_store>();
      ex::plan<ex::eigen_cpu> pc(g, cpu, {.globals = cs});
      ex::plan<ex::cuda> pg(g, gpu, {.globals = gs});
      const gpass::dtype dt = std::string(t) == "f32" ? gpass::dtype::f32 : gpass::dtype::f64;
      for (unsigned step = 0; step < 3; ++step) {
        const tensor grad = gpass_test_cuda::random_tensor(dt, {5}, -1, 1, 70 + step);
        const auto want = pc.run({grad});
        const auto got = pg.run({gpu.upload(grad, gpu.default_stream())});
        gpass_test_cuda::check_close(gpu.download(got.at(0).tensor(), gpu.default_stream()), want.at(0).tensor(), 1e-5, 1e-6);
      }
      for (const auto& [name, value] : cs->snapshot()) {
        CAPTURE(name);
        CHECK(gs->device_of(name).starts_with("cuda:0/"));
        gpass_test_cuda::check_close(*gs->get(name), value, 1e-5, 1e-6);
      }
    }
}

TEST_CASE("cuda: a global read and assigned on the GPU stays in device memory across runs") {
  GPASS_REQUIRE_GPU();
  auto& gpu = *gpass_test_cuda::gpu();
  ex::eigen_cpu cpu;
  auto cpu_store = std::make_shared<ex::global_store>();
  auto gpu_store = std::make_shared<ex::global_store>();
  ex::plan<ex::eigen_cpu> pc(gpass::parse_text(accumulate), cpu, {.globals = cpu_store});
  ex::plan<ex::cuda> pg(gpass::parse_text(accumulate), gpu, {.globals = gpu_store});
  for (int run = 0; run < 4; ++run) {
    CAPTURE(run);
    const tensor x = gpass_test_cuda::random_tensor(gpass::dtype::f32, {3}, -2, 2, 10 + static_cast<unsigned>(run));
    const auto want = pc.run({x});
    const auto got = pg.run({gpu.upload(x, gpu.default_stream())});
    gpass_test_cuda::check_close(gpu.download(got.at(0).tensor(), gpu.default_stream()), want.at(0).tensor(), 0, 0);
    CHECK(gpu_store->device_of("w").starts_with("cuda:0/"));  // the device's copy is the value
  }
  // the host view: the device's value copied back, equal to the CPU plan's
  gpass_test_cuda::check_close(*gpu_store->get("w"), *cpu_store->get("w"), 0, 0);
  // a host write (a checkpoint restored, say) is what the next GPU run reads
  gpu_store->set("w", tensor::from<float>({0, 0, 0}));
  cpu_store->set("w", tensor::from<float>({0, 0, 0}));
  const tensor x = tensor::from<float>({1, 2, 3});
  gpass_test_cuda::check_close(gpu.download(pg.run({gpu.upload(x, gpu.default_stream())}).at(0).tensor(), gpu.default_stream()),
                               pc.run({x}).at(0).tensor(), 0, 0);
  gpass_test_cuda::check_close(*gpu_store->get("w"), tensor::from<float>({1, 2, 3}), 0, 0);
  // another policy (its own stream) on the same device sharing the store: it reads the value
  // the first one wrote through the host copy, never the first one's buffer unsynchronized
  ex::cuda other;
  ex::plan<ex::cuda> po(gpass::parse_text(accumulate), other, {.globals = gpu_store});
  (void)pg.run({gpu.upload(x, gpu.default_stream())});  // w = [2, 4, 6]
  const std::string first = gpu_store->device_of("w");
  const auto y = po.run({other.upload(x, other.default_stream())});
  gpass_test_cuda::check_close(other.download(y.at(0).tensor(), other.default_stream()), tensor::from<float>({2, 8, 18}), 0, 0);
  CHECK(gpu_store->device_of("w").starts_with("cuda:0/"));
  CHECK(gpu_store->device_of("w") != first);  // (the other stream's copy now)
  gpass_test_cuda::check_close(*gpu_store->get("w"), tensor::from<float>({3, 6, 9}), 0, 0);
}

TEST_CASE("cuda: a plan that reads or writes a global runs as a plain plan, not a CUDA graph") {
  GPASS_REQUIRE_GPU();
  auto& gpu = *gpass_test_cuda::gpu();
  ex::plan<ex::cuda> p(gpass::parse_text(accumulate), gpu);
  ex::cuda_graph_plan<> gp(p, gpu);
  const tensor x = tensor::from<float>({1, 1, 1});
  for (int run = 0; run < 3; ++run) (void)gp.run({gpu.upload(x, gpu.default_stream())});
  // 1 + 3 increments of 1: every run assigned w (no replay of a captured, stale assignment)
  gpass_test_cuda::check_close(*p.globals().get("w"), tensor::from<float>({4, 5, 6}), 0, 0);
  CHECK(gp.stats().replays == 0);
}

TEST_CASE("cuda: a session keeps a variable on the GPU, read, assigned and updated by an optimizer step") {
  GPASS_REQUIRE_GPU();
  const std::string g0 = "/job:localhost/replica:0/task:0/device:GPU:0";
  {
    gpass::session<G> cpu(gpass::parse_text(accumulate), {});
    gpass::session<G> gpu(gpass::parse_text(accumulate), {.devices = gpass::cuda_devices<G>()});
    for (int run = 0; run < 3; ++run) {
      const tensor x = gpass_test_cuda::random_tensor(gpass::dtype::f32, {3}, -2, 2, 30 + static_cast<unsigned>(run));
      gpass_test_cuda::check_close(gpu.run({{"x", x}}, {"y"}).at(0).tensor(), cpu.run({{"x", x}}, {"y"}).at(0).tensor(), 0, 0);
    }
    const auto placed = gpu.last_placement();
    CHECK(placed.at("w") == g0);
    CHECK(placed.at("s") == g0);
    CHECK(gpu.globals().device_of("w").starts_with("cuda:0/"));
    gpass_test_cuda::check_close(*gpu.globals().get("w"), *cpu.globals().get("w"), 0, 0);
  }
  {
    gpass::session<G> cpu(gpass::parse_text(train), {});
    gpass::session<G> gpu(gpass::parse_text(train), {.devices = gpass::cuda_devices<G>()});
    for (int run = 0; run < 3; ++run) {
      const tensor gr = gpass_test_cuda::random_tensor(gpass::dtype::f32, {2}, -1, 1, 50 + static_cast<unsigned>(run));
      gpass_test_cuda::check_close(gpu.run({{"g", gr}}, {"y"}).at(0).tensor(), cpu.run({{"g", gr}}, {"y"}).at(0).tensor(), 1e-6, 1e-6);
    }
    const auto placed = gpu.last_placement();
    CHECK(placed.at("u") == g0);
    CHECK(placed.at("w") == g0);
    CHECK(placed.at("t") == g0);
    CHECK(gpu.globals().device_of("w").starts_with("cuda:0/"));
    gpass_test_cuda::check_close(*gpu.globals().get("w"), *cpu.globals().get("w"), 1e-6, 1e-6);
  }
}

}  // namespace gpass_test_cuda_globals
