// SPDX-License-Identifier: Apache-2.0
// The CUDA sequence and optional kernels: on a GPU, each op gives what the Eigen CPU kernel
// gives (sequences of device tensors, positions from device scalars, splits and concatenations
// by the data-movement kernels).

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include <gpass/exec/cuda.hpp>

#include "fixture.hpp"

namespace gpass_test_cuda_sequence {

namespace {

using namespace gpass_test_cuda::prelude;
using cvalue = ex::basic_value<ex::cuda_tensor>;

/// An input: a tensor, a sequence of tensors, or nothing (an omitted input).
struct in {
  std::vector<tensor> seq;
  bool is_seq = false;
  in(tensor t) : seq{std::move(t)} {}  // NOLINT(implicit)
  static in sequence(std::vector<tensor> s) {
    in r{tensor{}};
    r.seq = std::move(s);
    r.is_seq = true;
    return r;
  }
};

/// Runs `n` on the CPU and on the GPU and compares every output (tensors and sequences).
/// (Without a GPU, in a case marked GPASS_GPU_OR_CPU_SIDE, the CPU side only.)
void both(const ex::kernel_node& n0, const std::vector<in>& ins) {
  static ex::eigen_cpu cpu;
  ex::kernel_node n = n0;
  n.input_types.resize(ins.size());
  std::vector<ex::value> hv;
  for (const auto& i : ins) {
    if (i.is_seq) hv.emplace_back(ex::value::sequence_type(i.seq));
    else if (i.seq[0].empty()) hv.emplace_back();
    else hv.emplace_back(i.seq[0]);
  }
  const auto want = ex::run_kernel(cpu, cpu.kernels(), n, std::move(hv));
  if (gpass_test_cuda::cpu_side_only()) return;
  auto& g = *gpass_test_cuda::gpu();
  std::vector<cvalue> dv;
  for (const auto& i : ins) {
    if (i.is_seq) {
      cvalue::sequence_type d;
      for (const auto& t : i.seq) d.push_back(g.upload(t, g.default_stream()));
      dv.emplace_back(std::move(d));
    } else if (i.seq[0].empty()) {
      dv.emplace_back();
    } else {
      dv.emplace_back(g.upload(i.seq[0], g.default_stream()));
    }
  }
  const auto got = ex::run_kernel(g, g.kernels(), n, std::move(dv));
  REQUIRE(got.size() == want.size());
  for (std::size_t k = 0; k < want.size(); ++k) {
    INFO("op " << n.op << ", output " << k);
    REQUIRE(got[k].is_sequence() == want[k].is_sequence());
    REQUIRE(got[k].is_none() == want[k].is_none());
    if (want[k].is_tensor()) {
      gpass_test_cuda::check_close(g.download(got[k].tensor(), g.default_stream()), want[k].tensor(), 0, 0);
    } else if (want[k].is_sequence()) {
      REQUIRE(got[k].sequence().size() == want[k].sequence().size());
      for (std::size_t j = 0; j < want[k].sequence().size(); ++j)
        gpass_test_cuda::check_close(g.download(got[k].sequence()[j], g.default_stream()), want[k].sequence()[j], 0, 0);
    }
  }
}

}  // namespace

TEST_CASE("cuda: the sequence and optional kernels are registered") {
  ex::kernel_registry<ex::cuda> r;
  ex::register_cuda_kernels(r);
  for (const char* op : {"SequenceEmpty", "SequenceConstruct", "SequenceInsert", "SequenceErase", "SequenceAt", "SequenceLength",
                         "SplitToSequence", "ConcatFromSequence", "SequenceMap", "Optional", "OptionalHasElement", "OptionalGetElement", "Scan"})
    CHECK(r.has("", op));
}

TEST_CASE("cuda: sequence ops match the CPU kernels") {
  GPASS_GPU_OR_CPU_SIDE();
  const tensor a = rnd({2, 3}, 1), b = rnd({2, 3}, 2), c = rnd({2, 3}, 3), d = rnd({4, 3}, 4);
  const auto abc = in::sequence({a, b, c});
  both(node("SequenceConstruct", 11), {a, b, c});
  both(node("SequenceLength", 11), {abc});
  both(node("SequenceLength", 11), {in::sequence({})});
  for (i64 p : {-3, -1, 0, 2}) {
    INFO("position " << p);
    both(node("SequenceAt", 11), {abc, I({p}).reshaped({})});
    both(node("SequenceErase", 11), {abc, I32({static_cast<std::int32_t>(p)}).reshaped({})});
  }
  both(node("SequenceErase", 11), {abc});
  both(node("SequenceInsert", 11), {abc, d});
  both(node("SequenceInsert", 11), {abc, d, I({-1}).reshaped({})});
  both(node("SequenceInsert", 11), {abc, d, I({3}).reshaped({})});
  CHECK_THROWS_AS(both(node("SequenceAt", 11), {abc, I({3}).reshaped({})}), gpass::error);
  for (i64 axis : {0, 1, -1}) {
    INFO("axis " << axis);
    both(node("ConcatFromSequence", 11, {{"axis", axis}}), {abc});
    both(node("ConcatFromSequence", 11, {{"axis", axis}, {"new_axis", i64{1}}}), {abc});
  }
  both(node("ConcatFromSequence", 11, {{"axis", i64{2}}, {"new_axis", i64{1}}}), {abc});
  both(node("ConcatFromSequence", 11, {{"axis", i64{0}}}), {in::sequence({a, d})});
  const tensor x = rnd({4, 6, 2}, 5);
  for (i64 axis : {0, 1, 2, -2}) {
    INFO("split axis " << axis);
    both(node("SplitToSequence", 11, {{"axis", axis}}), {x});
    both(node("SplitToSequence", 11, {{"axis", axis}, {"keepdims", i64{0}}}), {x});
    both(node("SplitToSequence", 11, {{"axis", axis}}), {x, I({1}).reshaped({})});
  }
  both(node("SplitToSequence", 11, {{"axis", i64{1}}}), {x, I({4}).reshaped({})});  // 4 + 2
  both(node("SplitToSequence", 11, {{"axis", i64{1}}}), {x, I({1, 0, 5})});
  both(node("SplitToSequence", 11, {{"axis", i64{1}}}), {rnd({3, 5}, 6, dtype::int64, -9, 9), I32({2, 3})});
  both(node("OptionalHasElement", 18), {a});
  both(node("OptionalHasElement", 18), {tensor{}});
  both(node("OptionalGetElement", 18), {abc});
  both(node("Optional", 15), {a});
}

TEST_CASE("cuda: SplitToSequence of a scalar fails as on the CPU") {
  GPASS_REQUIRE_GPU();
  // a scalar has no axis to split (normalize_axis would let axis 0 through): a gpass error on
  // both, never a read past the empty size vector
  auto& g = *gpass_test_cuda::gpu();
  static ex::eigen_cpu cpu;
  const tensor s = tensor::scalar<float>(2.5f);
  for (i64 axis : {0, -1}) {
    INFO("axis " << axis);
    ex::kernel_node n = node("SplitToSequence", 11, {{"axis", axis}});
    n.input_types.resize(1);
    std::vector<ex::value> hv;
    hv.emplace_back(s);
    std::vector<cvalue> dv;
    dv.emplace_back(g.upload(s, g.default_stream()));
    CHECK_THROWS_AS(ex::run_kernel(cpu, cpu.kernels(), n, std::move(hv)), gpass::error);
    CHECK_THROWS_AS(ex::run_kernel(g, g.kernels(), n, std::move(dv)), gpass::error);
  }
}

}  // namespace gpass_test_cuda_sequence
