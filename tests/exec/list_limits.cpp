// SPDX-License-Identifier: Apache-2.0
// Hostile inputs to the list kernels (exec/list_kernels.hpp): sizes, indices and row counts taken
// from tensor values are checked against the run's limits before a list or a tensor is made
// (each case failed on the old kernels with std::bad_alloc, or ran past the limits), and
// unwritten elements read as zeros made through allocate_output; plus the values of
// ordinary runs, and TensorFlow's rule that an unwritten element takes the shape of a
// written one when none is declared.
#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <gpass/exec/eigen_cpu.hpp>
#include <gpass/exec/plan.hpp>
#include <gpass/io/text.hpp>

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_exec_list_limits {

namespace {

namespace ex = gpass::exec;
using gpass::tensor;
using i64 = std::int64_t;

constexpr i64 tera = i64{1} << 40;  // elements: 64 TiB of list handles, 4 TiB of f32
constexpr std::uint64_t one_mb = std::uint64_t{1} << 20;

std::vector<ex::value> run(const char* text, std::vector<ex::value> in, ex::run_limits limits = {}) {
  ex::eigen_cpu cpu;
  ex::plan<ex::eigen_cpu> p(gpass::parse_text(text), cpu, {.limits = limits});
  return p.run(std::move(in));
}

// The gpass::error a run throws ("" when it does not; another exception fails the test).
std::string run_error(const char* text, std::vector<ex::value> in, ex::run_limits limits = {}) {
  try {
    (void)run(text, std::move(in), limits);
  } catch (const gpass::error& e) {
    return e.what();
  }
  return "";
}

bool has(const std::string& s, const std::string& part) {
  const bool found = s.find(part) != std::string::npos;
  if (!found) MESSAGE("\"" << part << "\" is not in \"" << s << "\"");
  return found;
}

std::vector<float> floats(const ex::value& v) {
  auto s = v.tensor().values<float>();
  return {s.begin(), s.end()};
}

tensor i64s(std::vector<i64> v) { return tensor::from<i64>(v); }
tensor scalar(i64 v) { return tensor::scalar<i64>(v); }

// reserve(n), write x at i, then the size and the stacked list
constexpr const char* write_graph = R"(graph {
  %n = arg() {index = 0} -> (i64[])
  %i = arg() {index = 1} -> (i64[])
  %x = arg() {index = 2} -> (f32[2])
  %ta:2 = list_reserve(%n) {dtype = f32, element_shape = shape[2]}
  %w = list_write(%ta:1, %i, %x)
  %s = list_size(%w)
  %st = list_stack(%w) {dtype = f32, element_shape = shape[2]}
  %r:0 = return(%s, %st)
}
)";

// reserve(n), scatter the rows of v at idx, then the size and the stacked list
constexpr const char* scatter_graph = R"(graph {
  %n = arg() {index = 0} -> (i64[])
  %idx = arg() {index = 1} -> (i64[?])
  %v = arg() {index = 2} -> (f32[?,2])
  %ta:2 = list_reserve(%n) {dtype = f32, element_shape = shape[2]}
  %sc = list_scatter(%ta:1, %idx, %v)
  %s = list_size(%sc)
  %st = list_stack(%sc) {dtype = f32, element_shape = shape[2]}
  %r:0 = return(%s, %st)
}
)";

// a list of n unwritten elements of 2^40 f32 (4 TiB each), read in every way
constexpr const char* huge_elements = R"(graph {
  %n = arg() {index = 0} -> (i64[])
  %i = arg() {index = 1} -> (i64[])
  %ta:2 = list_reserve(%n) {dtype = f32, element_shape = shape[1099511627776]}
  %%OP%%
}
)";

std::string with_op(const std::string& op) {
  std::string s = huge_elements;
  return s.replace(s.find("%%OP%%"), 6, op);
}

}  // namespace

TEST_CASE("exec.list_limits.reserve") {
  constexpr const char* g = R"(graph {
  %n = arg() {index = 0} -> (i64[])
  %ta:2 = list_reserve(%n) {dtype = f32}
  %s = list_size(%ta:1)
  %r:0 = return(%s)
}
)";
  // 2^40 handles: a gpass error naming the node, not a 64 TiB std::vector
  const std::string e = run_error(g, {scalar(tera)});
  CHECK(has(e, "(op list_reserve)"));
  CHECK(has(e, "a list of 1099511627776 elements needs"));
  CHECK(has(e, "(max_tensor_bytes)"));
  // the list's storage counts as scratch against the limit set
  CHECK(has(run_error(g, {scalar(100000)}, {.max_tensor_bytes = one_mb}), "a list of 100000 elements needs"));
  CHECK(has(run_error(g, {scalar(-1)}), "negative list size -1"));
  CHECK(run(g, {scalar(1000)}, {.max_tensor_bytes = one_mb})[0].tensor().values<std::int32_t>()[0] == 1000);
}

TEST_CASE("exec.list_limits.write_past_the_end") {
  const tensor x = tensor::from<float>({1, 2});
  const std::string e = run_error(write_graph, {scalar(1), scalar(tera), x});
  CHECK(has(e, "(op list_write)"));
  CHECK(has(e, "a list of 1099511627777 elements needs"));
  CHECK(has(run_error(write_graph, {scalar(1), scalar(std::numeric_limits<i64>::max()), x}),
            "a list of 9223372036854775808 elements"));
  CHECK(has(run_error(write_graph, {scalar(1), scalar(100000), x}, {.max_tensor_bytes = one_mb}),
            "a list of 100001 elements needs"));
  CHECK(has(run_error(write_graph, {scalar(1), scalar(-2), x}), "negative index -2"));
  // a write past the end still grows the list; the elements between read as zeros
  auto out = run(write_graph, {scalar(1), scalar(2), x});
  CHECK(out[0].tensor().values<std::int32_t>()[0] == 3);
  CHECK(out[1].tensor().sizes() == std::vector<i64>{3, 2});
  CHECK(floats(out[1]) == std::vector<float>{0, 0, 0, 0, 1, 2});
}

TEST_CASE("exec.list_limits.scatter_past_the_end") {
  const tensor v = tensor::from<float>({1, 2, 3, 4}, {2, 2});
  const std::string e = run_error(scatter_graph, {scalar(1), i64s({1, tera}), v});
  CHECK(has(e, "(op list_scatter)"));
  CHECK(has(e, "a list of 1099511627777 elements needs"));
  CHECK(has(run_error(scatter_graph, {scalar(1), i64s({1, -1}), v}), "negative index -1"));
  auto out = run(scatter_graph, {scalar(1), i64s({3, 0}), v});
  CHECK(out[0].tensor().values<std::int32_t>()[0] == 4);
  CHECK(floats(out[1]) == std::vector<float>{3, 4, 0, 0, 0, 0, 1, 2});
}

TEST_CASE("exec.list_limits.unwritten_elements_of_a_huge_shape") {
  // zeros of 2^40 f32: the limit error of allocate_output, not std::bad_alloc
  struct reader {
    const char* op;
    std::string node;
  } readers[] = {
      {"list_read", "%y = list_read(%ta:1, %i) {dtype = f32, element_shape = shape[1099511627776]}\n  %r:0 = return(%y)"},
      {"list_stack", "%y = list_stack(%ta:1) {dtype = f32, element_shape = shape[1099511627776]}\n  %r:0 = return(%y)"},
      {"list_gather", "%ix = Constant() {value = tensor<i64[2]> [0, 0]}\n"
                      "  %y = list_gather(%ta:1, %ix) {dtype = f32, element_shape = shape[1099511627776]}\n"
                      "  %r:0 = return(%y)"},
      {"list_pop_back", "%p:2 = list_pop_back(%ta:1) {dtype = f32, element_shape = shape[1099511627776]}\n  %r:0 = return(%p:1)"},
  };
  for (const auto& r : readers) {
    CAPTURE(r.op);
    const std::string e = run_error(with_op(r.node).c_str(), {scalar(1), scalar(0)});
    CHECK(has(e, std::string("(op ") + r.op + ")"));
    CHECK(has(e, "bytes is over the limit of 17179869184 bytes per tensor (max_tensor_bytes)"));
  }
}

TEST_CASE("exec.list_limits.unwritten_elements_under_a_small_limit") {
  // 4 MiB zeros under a 1 MiB limit: the old kernels made them outside allocate_output
  constexpr const char* g = R"(graph {
  %n = arg() {index = 0} -> (i64[])
  %i = arg() {index = 1} -> (i64[])
  %ta:2 = list_reserve(%n) {dtype = f32, element_shape = shape[1048576]}
  %y = list_read(%ta:1, %i) {dtype = f32, element_shape = shape[1048576]}
  %p:2 = list_pop_back(%ta:1) {dtype = f32, element_shape = shape[1048576]}
  %r:0 = return(%y, %p:1)
}
)";
  const std::string e = run_error(g, {scalar(2), scalar(1)}, {.max_tensor_bytes = one_mb});
  CHECK(has(e, "a tensor of 4194304 bytes is over the limit of 1048576 bytes per tensor (max_tensor_bytes)"));
  CHECK((has(e, "(op list_read)") || has(e, "(op list_pop_back)")));
  // and counted against max_run_bytes while alive: two 4 MiB zeros outputs
  CHECK(has(run_error(g, {scalar(2), scalar(1)}, {.max_run_bytes = 6 * one_mb}), "max_run_bytes"));
  auto out = run(g, {scalar(2), scalar(1)}, {.max_run_bytes = 9 * one_mb});
  CHECK(out[0].tensor().sizes() == std::vector<i64>{1048576});
  CHECK(out[1].tensor().values<float>()[1048575] == 0.0f);
}

TEST_CASE("exec.list_limits.rows_of_empty_values") {
  // an empty value may have any number of rows: each row is a list handle
  constexpr const char* from = R"(graph {
  %x = arg() {index = 0} -> (f32[?,0])
  %l = list_from_tensor(%x)
  %s = list_size(%l)
  %r:0 = return(%s)
}
)";
  const std::string e = run_error(from, {tensor(gpass::dtype::f32, {tera, 0})});
  CHECK(has(e, "(op list_from_tensor)"));
  CHECK(has(e, "a list of 1099511627776 elements needs"));
  CHECK(run(from, {tensor(gpass::dtype::f32, {5, 0})})[0].tensor().values<std::int32_t>()[0] == 5);

  constexpr const char* split = R"(graph {
  %x = arg() {index = 0} -> (f32[?,0])
  %len = arg() {index = 1} -> (i64[?])
  %z = Constant() {value = tensor<i64[]> [0]}
  %ta:2 = list_reserve(%z) {dtype = f32}
  %l = list_split(%ta:1, %x, %len)
  %s = list_size(%l)
  %r:0 = return(%s)
}
)";
  // lengths whose sum wraps around to the value's one row
  const i64 q = i64{1} << 62;
  const std::string w = run_error(split, {tensor(gpass::dtype::f32, {1, 0}), i64s({q, q, q, q + 1})});
  CHECK(has(w, "(op list_split)"));
  CHECK(has(w, "lengths add up to more than the 1 rows of the value"));
  // 2^20 empty pieces: 8 MiB of lengths make a list of 2^20 handles
  const std::string m = run_error(split, {tensor(gpass::dtype::f32, {0, 0}), tensor(gpass::dtype::int64, {i64{1} << 20})},
                                  {.max_tensor_bytes = one_mb});
  CHECK(has(m, "a list of 1048576 elements needs"));

  constexpr const char* concat = R"(graph {
  %x = arg() {index = 0} -> (f32[?,0])
  %z = Constant() {value = tensor<i64[]> [0]}
  %ta:2 = list_reserve(%z) {dtype = f32, dynamic_size = true}
  %a = list_push_back(%ta:1, %x)
  %b = list_push_back(%a, %x)
  %c = list_push_back(%b, %x)
  %d = list_push_back(%c, %x)
  %cat:2 = list_concat(%d) {dtype = f32}
  %r:0 = return(%cat:0, %cat:1)
}
)";
  // four elements of 2^62 empty rows: their lengths add up past int64
  const std::string c = run_error(concat, {tensor(gpass::dtype::f32, {q, 0})});
  CHECK(has(c, "(op list_concat)"));
  CHECK(has(c, "lengths add up to more than an i64 holds"));
  auto out = run(concat, {tensor(gpass::dtype::f32, {3, 0})});
  CHECK(out[0].tensor().sizes() == std::vector<i64>{12, 0});
  CHECK(out[1].tensor().values<i64>()[3] == 3);
}

TEST_CASE("exec.list_limits.values") {
  // every list op on a small case, unwritten elements included
  constexpr const char* g = R"(graph {
  %x = arg() {index = 0} -> (f32[2,2])
  %n = Constant() {value = tensor<i64[]> [4]}
  %i0 = Constant() {value = tensor<i64[]> [0]}
  %i1 = Constant() {value = tensor<i64[]> [1]}
  %i3 = Constant() {value = tensor<i64[]> [3]}
  %ta:2 = list_reserve(%n) {dtype = f32, element_shape = shape[2]}
  %row = Constant() {value = tensor<f32[2]> [5, 6]}
  %w = list_write(%ta:1, %i1, %row)
  %rd = list_read(%w, %i3) {dtype = f32, element_shape = shape[2]}
  %idx = Constant() {value = tensor<i64[3]> [1, 3, 3]}
  %ga = list_gather(%w, %idx) {dtype = f32, element_shape = shape[2]}
  %st = list_stack(%w) {dtype = f32, element_shape = shape[2]}
  %p:2 = list_pop_back(%w) {dtype = f32, element_shape = shape[2]}
  %ps = list_size(%p:0)
  %fl = list_from_tensor(%x)
  %pb = list_push_back(%fl, %row)
  %cat:2 = list_concat(%pb) {dtype = f32}
  %lens = Constant() {value = tensor<i64[2]> [0, 2]}
  %sp = list_split(%ta:1, %x, %lens)
  %spr = list_read(%sp, %i1) {dtype = f32}
  %r:0 = return(%rd, %ga, %st, %p:1, %ps, %cat:0, %cat:1, %spr)
}
)";
  auto out = run(g, {tensor::from<float>({1, 2, 3, 4}, {2, 2})}, {.max_tensor_bytes = one_mb});
  CHECK(floats(out[0]) == std::vector<float>{0, 0});
  CHECK(out[1].tensor().sizes() == std::vector<i64>{3, 2});
  CHECK(floats(out[1]) == std::vector<float>{5, 6, 0, 0, 0, 0});
  CHECK(floats(out[2]) == std::vector<float>{0, 0, 5, 6, 0, 0, 0, 0});
  CHECK(floats(out[3]) == std::vector<float>{0, 0});
  CHECK(out[4].tensor().values<std::int32_t>()[0] == 3);
  // rows [1,2], [3,4] and [5,6] concatenated: each a 1-D element of 2 rows
  CHECK(out[5].tensor().sizes() == std::vector<i64>{6});
  CHECK(floats(out[5]) == std::vector<float>{1, 2, 3, 4, 5, 6});
  CHECK(std::vector<i64>(out[6].tensor().values<i64>().begin(), out[6].tensor().values<i64>().end()) ==
        std::vector<i64>{2, 2, 2});
  CHECK(out[7].tensor().sizes() == std::vector<i64>{2, 2});
  CHECK(floats(out[7]) == std::vector<float>{1, 2, 3, 4});

  // strings: unwritten elements stack as ""
  constexpr const char* s = R"(graph {
  %n = Constant() {value = tensor<i64[]> [2]}
  %i = Constant() {value = tensor<i64[]> [1]}
  %ta:2 = list_reserve(%n) {dtype = str, element_shape = shape[1]}
  %v = Constant() {value = tensor<str[1]> ["b"]}
  %w = list_write(%ta:1, %i, %v)
  %st = list_stack(%w) {dtype = str, element_shape = shape[1]}
  %r:0 = return(%st)
}
)";
  auto so = run(s, {});
  CHECK(so[0].tensor().sizes() == std::vector<i64>{2, 1});
  CHECK(so[0].tensor().values<std::string>()[0] == "");
  CHECK(so[0].tensor().values<std::string>()[1] == "b");
}

TEST_CASE("exec.list_limits.unwritten_elements_take_a_written_elements_shape") {
  // TensorFlow (TensorListStack, TensorListGather, TensorListGetItem): without a fully
  // declared element shape, zeros take the shape of a written element; with none written
  // it is an error
  constexpr const char* g = R"(graph {
  %x = arg() {index = 0} -> (f32[?])
  %n = Constant() {value = tensor<i64[]> [3]}
  %i0 = Constant() {value = tensor<i64[]> [0]}
  %i1 = Constant() {value = tensor<i64[]> [1]}
  %ta:2 = list_reserve(%n) {dtype = f32}
  %w = list_write(%ta:1, %i1, %x)
  %st = list_stack(%w) {dtype = f32}
  %rd = list_read(%w, %i0) {dtype = f32}
  %idx = Constant() {value = tensor<i64[2]> [2, 1]}
  %ga = list_gather(%w, %idx) {dtype = f32}
  %r:0 = return(%st, %rd, %ga)
}
)";
  auto out = run(g, {tensor::from<float>({1, 2})});
  CHECK(out[0].tensor().sizes() == std::vector<i64>{3, 2});
  CHECK(floats(out[0]) == std::vector<float>{0, 0, 1, 2, 0, 0});
  CHECK(floats(out[1]) == std::vector<float>{0, 0});
  CHECK(floats(out[2]) == std::vector<float>{0, 0, 1, 2});
  constexpr const char* none = R"(graph {
  %n = Constant() {value = tensor<i64[]> [2]}
  %ta:2 = list_reserve(%n) {dtype = f32}
  %st = list_stack(%ta:1) {dtype = f32}
  %r:0 = return(%st)
}
)";
  CHECK(has(run_error(none, {}), "element 0 was never written and its shape is not known"));
  // a written element that does not fit the declared zeros
  constexpr const char* clash = R"(graph {
  %x = arg() {index = 0} -> (f32[?])
  %n = Constant() {value = tensor<i64[]> [2]}
  %i1 = Constant() {value = tensor<i64[]> [1]}
  %ta:2 = list_reserve(%n) {dtype = f32, element_shape = shape[?]}
  %w = list_write(%ta:1, %i1, %x)
  %st = list_stack(%w) {dtype = f32, element_shape = shape[3]}
  %r:0 = return(%st)
}
)";
  CHECK(has(run_error(clash, {tensor::from<float>({1, 2})}), "cannot stack f32[2] with the zeros f32[3] of unwritten element 0"));
}

}  // namespace gpass_test_exec_list_limits
