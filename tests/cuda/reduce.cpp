// SPDX-License-Identifier: Apache-2.0
// The CUDA reductions, ArgMax / ArgMin and CumSum: every generated source compiles to PTX
// for sm_80 and sm_90 (no GPU needed), and on a GPU each op matches the Eigen CPU kernel.

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include <gpass/exec/cuda.hpp>

#include "fixture.hpp"

namespace gpass_test_cuda_reduce {

namespace {

using namespace gpass_test_cuda::prelude;


// Tolerances for outputs of `t` whose sums are added in another order than the CPU's.
double rtol_for(dtype t) { return t == dtype::bf16 ? 2e-2 : t == dtype::f16 ? 4e-3 : t == dtype::f32 ? 1e-4 : 1e-9; }
double atol_for(dtype t) { return t == dtype::bf16 ? 2e-2 : t == dtype::f16 ? 4e-3 : t == dtype::f32 ? 1e-4 : 1e-9; }

const char* const all_reductions[] = {"ReduceSum",  "ReduceMean",   "ReduceMax",       "ReduceMin",      "ReduceProd",
                                      "ReduceL1",   "ReduceL2",     "ReduceLogSum",    "ReduceLogSumExp", "ReduceSumSquare"};

// An input for `op` of type `t`: positive (LogSum), near 1 (Prod), small integers.
tensor input_for(const std::string& op, dtype t, ints sizes, std::uint64_t seed) {
  const bool is_int = t != dtype::f32 && t != dtype::f64 && t != dtype::f16 && t != dtype::bf16;
  if (op == "ReduceProd") return is_int ? random_tensor(t, std::move(sizes), 1, 3, seed) : random_tensor(t, std::move(sizes), 0.8, 1.25, seed);
  if (op == "ReduceLogSum") return random_tensor(t, std::move(sizes), is_int ? 1 : 0.1, is_int ? 9 : 2, seed);
  if (t == dtype::uint32 || t == dtype::uint8) return random_tensor(t, std::move(sizes), 0, 9, seed);
  return is_int ? random_tensor(t, std::move(sizes), -9, 9, seed) : random_tensor(t, std::move(sizes), -2, 2, seed);
}

}  // namespace

TEST_CASE("cuda: reductions match the CPU kernels (axes, keepdims, noop_with_empty_axes, opsets)") {
  GPASS_GPU_OR_CPU_SIDE();
  for (const char* op : all_reductions) {
    const std::string o = op;
    const bool float_only = o == "ReduceLogSumExp";
    for (dtype t : {dtype::f32, dtype::f16, dtype::bf16, dtype::f64, dtype::int32, dtype::int64, dtype::uint32}) {
      if (float_only && t != dtype::f32 && t != dtype::f16 && t != dtype::bf16 && t != dtype::f64) continue;
      INFO(op << " on " << gpass::to_string(t));
      const double rt = rtol_for(t), at = atol_for(t);
      // rows (LayerNorm-like): the block kernel over the contiguous last axis
      const auto rows = input_for(o, t, {6, 7, 96}, 1);
      differential(node(op, 18), {rows, I({-1})}, rt, at);
      differential(node(op, 18, {{"keepdims", i64{0}}}), {rows, I({2})}, rt, at);
      // global pooling-like: N, C reduced over H, W
      const auto img = input_for(o, t, {2, 5, 9, 11}, 2);
      differential(node(op, 18), {img, I({2, 3})}, rt, at);
      // kept innermost: a thread per output
      differential(node(op, 18), {img, I({0})}, rt, at);
      differential(node(op, 18, {{"keepdims", i64{0}}}), {img, I({0, 2})}, rt, at);
      // every axis (no axes input), and none (noop_with_empty_axes)
      differential(node(op, 18), {img}, rt, at);
      differential(node(op, 18, {{"noop_with_empty_axes", i64{1}}}), {img}, rt, at);
      // axes as attribute (older opsets)
      differential(node(op, 11, {{"axes", ints{1, -1}}, {"keepdims", i64{0}}}), {img}, rt, at);
      // few outputs, many reduced elements with the kept axis innermost (block kernel, strided)
      const auto tall = input_for(o, t, {4000, 3}, 3);
      differential(node(op, 18), {tall, I({0})}, o == "ReduceProd" ? 1e-2 : rt * 10, at * 10);
      // an empty reduced axis (not LogSum of integers: log(0) has no integer value)
      if (!(o == "ReduceLogSum" && (t == dtype::int32 || t == dtype::int64 || t == dtype::uint32)))
        differential(node(op, 18), {input_for(o, t, {3, 0, 2}, 4), I({1})}, rt, at);
      // a scalar
      differential(node(op, 18), {input_for(o, t, {}, 5)}, rt, at);
    }
  }
  // ReduceSum's axes input since opset 13
  differential(node("ReduceSum", 13), {random_tensor(dtype::f32, {3, 4, 5}), I({1})}, 1e-5, 1e-5);
  // large rows: several warps per row, a 1024-thread block for few long rows
  differential(node("ReduceMean", 18), {random_tensor(dtype::f32, {64, 4096}, -1, 1, 6), I({1})}, 1e-4, 1e-5);
  differential(node("ReduceSum", 18), {random_tensor(dtype::f32, {2, 100000}, -1, 1, 7), I({1})}, 1e-3, 1e-3);
  differential(node("ReduceMax", 18), {random_tensor(dtype::f16, {2, 100000}, -1, 1, 8), I({1})});
  // integer and bool types
  for (dtype t : {dtype::int8, dtype::uint8})
    for (const char* op : {"ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceSumSquare"})
      differential(node(op, 18), {random_tensor(t, {4, 6, 5}, 0, 7, 9), I({1})});
  const auto b = random_tensor(dtype::bool_, {4, 6, 5}, 0, 1, 10);
  differential(node("ReduceMax", 20), {b, I({1})});
  differential(node("ReduceMin", 20), {b, I({0, 2})});
}

TEST_CASE("cuda: ArgMax and ArgMin match the CPU kernels") {
  GPASS_GPU_OR_CPU_SIDE();
  for (const char* op : {"ArgMax", "ArgMin"})
    for (i64 last : {0, 1})
      for (dtype t : {dtype::f32, dtype::f16, dtype::f64, dtype::int32, dtype::int8, dtype::uint16, dtype::int64}) {
        INFO(op << " on " << gpass::to_string(t) << ", select_last_index " << last);
        // integers from a small range: many ties
        const bool is_int = t != dtype::f32 && t != dtype::f16 && t != dtype::f64;
        const auto x = random_tensor(t, {3, 5, 7}, is_int ? 0 : -2, is_int ? 4 : 2, 11);
        for (i64 axis : {0, 1, -1})
          for (i64 keep : {0, 1})
            differential(node(op, 13, {{"axis", axis}, {"keepdims", keep}, {"select_last_index", last}}), {x});
        // long rows: the block kernel
        const auto rows = random_tensor(t, {5, 1000}, is_int ? 0 : -2, is_int ? 4 : 2, 12);
        differential(node(op, 13, {{"axis", i64{1}}, {"select_last_index", last}}), {rows});
        differential(node(op, 13, {{"axis", i64{0}}, {"select_last_index", last}}), {rows});
      }
  // a vocabulary-sized row (the next token of a language model)
  differential(node("ArgMax", 13, {{"axis", i64{-1}}}), {random_tensor(dtype::f32, {2, 1, 50257}, -5, 5, 13)});
}

TEST_CASE("cuda: CumSum matches the CPU kernel") {
  GPASS_GPU_OR_CPU_SIDE();
  for (dtype t : {dtype::f32, dtype::f64, dtype::f16, dtype::bf16, dtype::int32, dtype::int64, dtype::uint32, dtype::uint64}) {
    const bool is_int = t != dtype::f32 && t != dtype::f16 && t != dtype::f64 && t != dtype::bf16;
    const auto x = random_tensor(t, {3, 4, 6}, is_int ? 0 : -2, is_int ? 9 : 2, 14);
    for (i64 axis : {0, 1, -1})
      for (i64 ex_ : {0, 1})
        for (i64 rev : {0, 1}) {
          INFO("CumSum on " << gpass::to_string(t) << ", axis " << axis << ", exclusive " << ex_ << ", reverse " << rev);
          differential(node("CumSum", 14, {{"exclusive", ex_}, {"reverse", rev}}), {x, tensor::scalar<i64>(axis)}, rtol_for(t),
                       atol_for(t));
        }
  }
  differential(node("CumSum", 14), {random_tensor(dtype::f32, {5, 7}), tensor::from<std::int32_t>({1})});
}

TEST_CASE("cuda: CumProd matches the CPU kernel") {
  GPASS_GPU_OR_CPU_SIDE();
  for (dtype t : {dtype::f32, dtype::f64, dtype::f16, dtype::int32, dtype::int64, dtype::uint64}) {
    const bool is_int = t != dtype::f32 && t != dtype::f16 && t != dtype::f64;
    // factors near 1 (floats) or small (integers): products stay representable
    const auto x = random_tensor(t, {3, 4, 6}, is_int ? 1 : 0.5, is_int ? 4 : 1.5, 15);
    for (i64 axis : {0, 1, -1})
      for (i64 ex_ : {0, 1})
        for (i64 rev : {0, 1}) {
          INFO("CumProd on " << gpass::to_string(t) << ", axis " << axis << ", exclusive " << ex_ << ", reverse " << rev);
          differential(node("CumProd", 26, {{"exclusive", ex_}, {"reverse", rev}}), {x, tensor::scalar<i64>(axis)}, rtol_for(t),
                       atol_for(t));
        }
  }
}

}  // namespace gpass_test_cuda_reduce
