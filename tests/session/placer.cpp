// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <gpass/io/text.hpp>
#include <gpass/passes/common/infer_shapes.hpp>
#include <gpass/session/partition.hpp>
#include <gpass/session/placer.hpp>

#include <algorithm>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace gpass_test_session_placer {

namespace {

using G = gpass::graph<>;

const std::string cpu0 = "/job:localhost/replica:0/task:0/device:CPU:0";
const std::string cpu1 = "/job:localhost/replica:0/task:0/device:CPU:1";

// Two CPUs; CPU:1 has no kernel for ops named "OnlyOn0"; no device runs "Nowhere".
std::vector<gpass::placement_device> devices() {
  auto any = [](std::string_view, std::string_view op) { return op != "Nowhere"; };
  auto not0 = [](std::string_view, std::string_view op) { return op != "Nowhere" && op != "OnlyOn0"; };
  return {{gpass::parse_device_name(cpu0), any}, {gpass::parse_device_name(cpu1), not0}};
}

std::string dev(const G& g, const char* n) { return g[g.at(n)].device; }

}  // namespace

TEST_CASE("session.placer.requests_colocation_and_heuristics") {
  G g = gpass::parse_text(R"(graph {
  %x = arg() {index = 0} -> (f32[4])
  %a = Relu(%x) on "/cpu:1"
  %b = Neg(%a) {_class = ["loc:@a"]}
  %c = Exp(%b)
  %s = Shape(%c)
  %k = Constant() {value = tensor<f32[]> [1.0]}
  %d = Add(%c, %k) on "/device:CPU:0"
  %v = get_global() {variable = "w"} on "/cpu:1" -> (f32[4])
  %u = Add(%d, %v)
  %w = set_global(%u) {variable = "w"}
  %r:0 = return(%d, %s, ^%w)
})");
  std::ostringstream log;
  auto res = gpass::place(g, devices(), {.log_device_placement = true, .log = &log});
  CHECK(dev(g, "a") == cpu1);
  CHECK(dev(g, "b") == cpu1);   // colocated with a
  CHECK(dev(g, "x") == cpu1);   // a generator goes with its one consumer
  CHECK(dev(g, "d") == cpu0);
  CHECK(dev(g, "k") == cpu0);   // with its consumer d
  CHECK(dev(g, "s") == dev(g, "c"));  // a metadata op with its input's producer
  CHECK(dev(g, "w") == cpu1);   // set_global with the get_global of the same variable
  CHECK(dev(g, "v") == cpu1);
  CHECK(res.stateful.count("v"));
  CHECK(res.stateful.count("w"));
  CHECK(log.str().find("a: (Relu): " + cpu1 + "\n") != std::string::npos);
  CHECK(res.nodes_per_device.at(cpu0) + res.nodes_per_device.at(cpu1) == g.num_nodes());
}

TEST_CASE("session.placer.functions_go_with_their_callers") {
  G g = gpass::parse_text(R"(graph {
  %x = arg() {index = 0} -> (f32[3])
  %loop = while(%x) {body = @body, cond = @cond} on "/cpu:1"
  %r:0 = return(%loop)
}
func @body {
  %a = function_entry() -> (f32[3])
  %n = Neg(%a) on "/cpu:0"
  %ret:0 = return(%n)
}
func @cond {
  %a = function_entry() -> (f32[3])
  %t = Constant() {value = tensor<bool[]> [false]}
  %ret:0 = return(%t)
})");
  gpass::place(g, devices());
  const G& body = *g.find_function("body");
  CHECK(body[body.at("a")].device == cpu1);
  CHECK(body[body.at("ret")].device == cpu1);
  CHECK(body[body.at("n")].device == cpu0);
  // split: the body's home is CPU:1 (the while), its Neg runs on CPU:0 as a remote part
  auto prog = gpass::partition(g, {cpu0, cpu1});
  REQUIRE(prog.functions.count("body"));
  CHECK(prog.functions.at("body").home == 1);
  CHECK(prog.functions.at("body").remote == std::vector<std::size_t>{0});
  CHECK(prog.functions.at("cond").remote.empty());
  CHECK(prog.sends == 2);  // a -> n and n -> ret, inside the body
  const G& remote = *prog.parts[0].find_function("body");
  std::set<std::string> ops;
  for (auto v : remote.nodes()) ops.insert(remote[v].op);
  CHECK(ops == std::set<std::string>{"recv", "Neg", "send", "return"});
}

TEST_CASE("session.placer.round_robin_spreads_unconstrained_groups") {
  G g = gpass::parse_text(R"(graph {
  %x = arg() {index = 0} -> (f32[4])
  %a = Relu(%x)
  %b = Neg(%a)
  %c = Exp(%b)
  %d = Abs(%c)
  %r:0 = return(%d)
})");
  gpass::place(g, devices(), {.spread = gpass::placement_options::spread_kind::round_robin});
  std::set<std::string> used;
  for (auto v : g.nodes()) used.insert(g[v].device);
  CHECK(used.size() == 2);
  auto prog = gpass::partition(g, {cpu0, cpu1});
  CHECK(prog.sends >= 3);
  // each part orders its nodes by a chain of control edges
  for (const auto& part : prog.parts)
    for (auto v : part.nodes())
      if (part[v].op != "return" && part[v].op != "arg") CHECK(part.control_outputs(v).size() == 1);
}

TEST_CASE("session.placer.control_edges_between_devices") {
  G g = gpass::parse_text(R"(graph {
  %x = arg() {index = 0} -> (f32[4])
  %a = Relu(%x) on "/cpu:0"
  %b = Neg(%x, ^%a) on "/cpu:1"
  %r:0 = return(%b)
})");
  gpass::place(g, devices());
  auto prog = gpass::partition(g, {cpu0, cpu1});
  CHECK(prog.control_transfers == 1);
  const G& p1 = prog.parts[1];
  bool recv_controls_b = false;
  for (auto c : p1.control_inputs(p1.at("b"))) recv_controls_b = recv_controls_b || p1[c].op == "recv";
  CHECK(recv_controls_b);
}

TEST_CASE("session.placer.globals_stay_where_an_earlier_placement_put_them") {
  // no request: the first device would do, but an earlier signature put global w on CPU:1
  G g = gpass::parse_text(R"(graph {
  %x = arg() {index = 0} -> (f32[4])
  %v = get_global() {variable = "w"} -> (f32[4])
  %s = Add(%v, %x)
  %u = set_global(%s) {variable = "w"}
  %k = get_global() {variable = "other"} -> (f32[4])
  %r:0 = return(%k, ^%u)
})");
  std::map<std::string, std::string, std::less<>> earlier{{"global:w", cpu1}};
  auto res = gpass::place(g, devices(), {.pinned = &earlier});
  CHECK(dev(g, "v") == cpu1);
  CHECK(dev(g, "u") == cpu1);
  CHECK(dev(g, "k") == cpu0);
  CHECK(res.stateful.at("global:w") == cpu1);
  CHECK(res.stateful.at("global:other") == cpu0);
}

TEST_CASE("session.placer.errors_name_the_nodes") {
  G conflict = gpass::parse_text(R"(graph {
  %x = arg() {index = 0} -> (f32[4])
  %a = Relu(%x) on "/cpu:0"
  %b = Neg(%a) {_class = ["loc:@a"]} on "/cpu:1"
  %r:0 = return(%b)
})");
  CHECK_THROWS_WITH(gpass::place(conflict, devices()), doctest::Contains("colocation conflict"));
  G missing = gpass::parse_text(R"(graph {
  %x = arg() {index = 0} -> (f32[4])
  %a = Relu(%x) on "/gpu:0"
  %r:0 = return(%a)
})");
  CHECK_THROWS_WITH(gpass::place(missing, devices()), doctest::Contains("requests device '/device:GPU:0'"));
  G soft = gpass::parse_text(R"(graph {
  %x = arg() {index = 0} -> (f32[4])
  %a = Relu(%x) on "/gpu:0"
  %r:0 = return(%a)
})");
  gpass::place(soft, devices(), {.allow_soft_placement = true});
  CHECK(soft[soft.at("a")].device == cpu0);
  G nokernel = gpass::parse_text(R"(graph {
  %x = arg() {index = 0} -> (f32[4])
  %a = OnlyOn0(%x) on "/cpu:1"
  %r:0 = return(%a)
})");
  CHECK_THROWS_WITH(gpass::place(nokernel, devices()), doctest::Contains("no kernel for op 'OnlyOn0'"));
  G nokernel_soft = gpass::parse_text(R"(graph {
  %x = arg() {index = 0} -> (f32[4])
  %a = OnlyOn0(%x) on "/cpu:1"
  %r:0 = return(%a)
})");
  gpass::place(nokernel_soft, devices(), {.allow_soft_placement = true});
  CHECK(nokernel_soft[nokernel_soft.at("a")].device == cpu0);
  G nowhere = gpass::parse_text(R"(graph {
  %x = arg() {index = 0} -> (f32[4])
  %a = Nowhere(%x)
  %r:0 = return(%a)
})");
  CHECK_THROWS_WITH(gpass::place(nowhere, devices()), doctest::Contains("has a kernel for op 'Nowhere'"));
  G bad = gpass::parse_text(R"(graph {
  %x = arg() {index = 0} -> (f32[4])
  %a = Relu(%x) on "/device:CPU:zero"
  %r:0 = return(%a)
})");
  CHECK_THROWS_WITH(gpass::place(bad, devices()), doctest::Contains("bad device index"));
  // a stateful node placed earlier stays there; asking for another device is an error
  G pinned = gpass::parse_text(R"(graph {
  %v = get_global() {variable = "w"} on "/cpu:1" -> (f32[4])
  %r:0 = return(%v)
})");
  std::map<std::string, std::string, std::less<>> earlier{{"v", cpu0}};
  CHECK_THROWS_WITH(gpass::place(pinned, devices(), {.pinned = &earlier}), doctest::Contains("placed in an earlier run"));
}

}  // namespace gpass_test_session_placer

namespace gpass_test_session_placer {

TEST_CASE("session.placer.devices_that_hold_the_types_and_serve_the_attributes") {
  G g = gpass::parse_text(R"(graph {
  %x = arg() {index = 0} -> (f32[4])
  %s = Constant() {value = tensor<str[2]> ["a", "b"]} -> (str[2])
  %e = Equal(%s, %s) -> (bool[2])
  %t = Train(%x) {training_mode = 1}
  %i = Train(%x) {training_mode = 0}
  %w = arg() {index = 1} -> (str[2])
  %u1 = Identity(%w) -> (str[2])
  %u2 = Identity(%w) -> (str[2])
  %r:0 = return(%e, %t, %i, %u1, %u2)
})");
  // CPU:0 (listed first) holds no strings and serves Train only in inference mode; CPU:1 does all
  auto any = [](std::string_view, std::string_view) { return true; };
  gpass::placement_device first{gpass::parse_device_name(cpu0), any, [](gpass::dtype t) { return t != gpass::dtype::string; },
                                [](const gpass::exec::kernel_query& q) {
                                  return q.op != "Train" || gpass::get_or(*q.attrs, "training_mode", std::int64_t{0}) == 0;
                                }};
  gpass::placement_device second{gpass::parse_device_name(cpu1), any};
  gpass::place(g, {first, second}, {});
  CHECK(dev(g, "s") == cpu1);  // makes a string
  CHECK(dev(g, "e") == cpu1);  // reads strings
  CHECK(dev(g, "t") == cpu1);  // not served in training mode
  CHECK(dev(g, "i") == cpu0);
  CHECK(dev(g, "w") == cpu1);  // a fed string (an interface op of two consumers: a group of its own)
  // no device serves it: the op-level answer decides (and the executor reports what is missing)
  gpass::placement_device picky{gpass::parse_device_name(cpu0), any, nullptr, [](const gpass::exec::kernel_query&) { return false; }};
  G h = gpass::parse_text(R"(graph {
  %x = arg() {index = 0} -> (f32[4])
  %t = Train(%x) {training_mode = 1}
  %r:0 = return(%t)
})");
  gpass::place(h, {picky}, {});
  CHECK(h[h.at("t")].device == cpu0);
  // no device serves it, but only one computes on its types (a GPU that holds complex values
  // and computes on them only in some ops): that one, though listed second
  auto complex_in = [](const gpass::exec::kernel_query& q) {
    return std::any_of(q.inputs.begin(), q.inputs.end(), [](gpass::dtype t) { return t == gpass::dtype::complex64; });
  };
  gpass::placement_device gpu_like{gpass::parse_device_name(cpu0), any, nullptr, [](const gpass::exec::kernel_query&) { return false; },
                                   [&](const gpass::exec::kernel_query& q) { return !complex_in(q); }};
  gpass::placement_device cpu_like{gpass::parse_device_name(cpu1), any, nullptr, [](const gpass::exec::kernel_query&) { return false; }};
  G c = gpass::parse_text(R"(graph {
  %z = arg() {index = 0} -> (c64[4])
  %x = arg() {index = 1} -> (f32[4])
  %a = Odd(%z) -> (c64[4])
  %b = Odd(%x) -> (f32[4])
  %r:0 = return(%a, %b)
})");
  gpass::place(c, {gpu_like, cpu_like}, {});
  CHECK(dev(c, "a") == cpu1);
  CHECK(dev(c, "b") == cpu0);  // the op-level answer, the first device
}

TEST_CASE("session.placer.lists_go_where_their_elements_are_held") {
  // a GPU-like first device that holds no strings: a list of strings stays on the CPU with every
  // op that reads it (list_size has no dtype attribute: its input's element type decides), a
  // list of f32 goes to the first device, its handle output (resource) too
  G g = gpass::parse_text(R"(graph {
  %x = arg() {index = 0} -> (f32[3])
  %n = Constant() {value = tensor<i64[]> [3]}
  %i = Constant() {value = tensor<i64[]> [1]}
  %ta:2 = list_reserve(%n) {dtype = f32, element_shape = shape[3]}
  %w = list_write(%ta:1, %i, %x)
  %st = list_stack(%w) {dtype = f32, element_shape = shape[3]}
  %s = Constant() {value = tensor<str[]> ["a"]}
  %sa:2 = list_reserve(%n) {dtype = str, element_shape = shape[]}
  %sw = list_write(%sa:1, %i, %s)
  %sz = list_size(%sw)
  %r:0 = return(%st, %sz)
})");
  gpass::pass_context ctx;
  gpass::infer_shapes(g, ctx);
  auto any = [](std::string_view, std::string_view) { return true; };
  // (as the CUDA policy: no strings, and no resource tensors of its own)
  gpass::placement_device gpu{gpass::parse_device_name(cpu0), any,
                              [](gpass::dtype t) { return t != gpass::dtype::string && t != gpass::dtype::resource; }};
  gpass::placement_device cpu{gpass::parse_device_name(cpu1), any};
  gpass::place(g, {gpu, cpu}, {});
  for (const char* n : {"ta", "w", "st"}) {
    CAPTURE(n);
    CHECK(dev(g, n) == cpu0);
  }
  for (const char* n : {"s", "sa", "sw", "sz"}) {
    CAPTURE(n);
    CHECK(dev(g, n) == cpu1);
  }
}

}  // namespace gpass_test_session_placer
