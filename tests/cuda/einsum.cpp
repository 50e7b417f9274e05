// SPDX-License-Identifier: Apache-2.0
// The CUDA Einsum (ONNX's and TensorFlow's): which nodes the GPU serves (no GPU needed), the
// equations against the Eigen CPU kernel on a GPU (without one, the CPU side of each
// comparison runs), and the errors naming the node.

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <gpass/exec/cuda.hpp>

#include "fixture.hpp"

namespace gpass_test_cuda_einsum {

namespace {

using namespace gpass_test_cuda::prelude;
using gpass_test_cuda::run_cpu;
using gpass_test_cuda::run_gpu;

gpass::exec::kernel_node einsum(const std::string& eq, bool tf = false) {
  return tf ? node("Einsum", 1, {{"equation", eq}}, 1, "tf") : node("Einsum", 12, {{"equation", eq}});
}

}  // namespace

TEST_CASE("cuda: the Einsum nodes the GPU serves") {
  for (const char* domain : {"", "tf"}) {
    CAPTURE(domain);
    for (dtype t : {dtype::f32, dtype::f64, dtype::f16, dtype::bf16}) CHECK(gpass_test_cuda::serves_in(domain, "Einsum", {t, t}));
    CHECK_FALSE(gpass_test_cuda::serves_in(domain, "Einsum", {dtype::int32, dtype::int32}));  // (integer Einsum: the CPU)
  }
}

TEST_CASE("cuda: Einsum matches the CPU kernel") {
  GPASS_GPU_OR_CPU_SIDE();
  struct eq_case {
    const char* eq;
    std::vector<ints> sizes;
  };
  const eq_case cases[] = {
      {"ij,jk->ik", {{5, 7}, {7, 3}}},                 // a product
      {"ji,jk->ik", {{7, 5}, {7, 3}}},                 // A transposed in place
      {"ij,kj->ik", {{5, 7}, {3, 7}}},                 // B transposed in place
      {"jbi,bkj->bik", {{7, 2, 5}, {2, 3, 7}}},        // both permuted first
      {"bij,bjk->bik", {{4, 5, 7}, {4, 7, 3}}},        // batched
      {"bhqd,bhkd->bhqk", {{2, 3, 6, 8}, {2, 3, 5, 8}}},  // attention scores
      {"bhqk,bhkd->bhqd", {{2, 3, 6, 5}, {2, 3, 5, 8}}},  // attention values
      {"ii->i", {{6, 6}}},                             // a diagonal
      {"ii", {{6, 6}}},                                // the trace (implicit output)
      {"ij->", {{9, 13}}},                             // a full sum
      {"ij->ji", {{4, 9}}},                            // a transpose
      {"ijk->kj", {{3, 4, 5}}},                        // a sum and a transpose
      {"i,j->ij", {{5}, {4}}},                         // an outer product
      {"i,i->", {{33}, {33}}},                         // a dot product
      {"ij,jk,kl->il", {{3, 4}, {4, 5}, {5, 2}}},       // three operands (greedy order)
      {"a,b,c,d->", {{3}, {4}, {5}, {6}}},             // sums first
      {"...ij,...jk->...ik", {{2, 1, 3, 4}, {5, 4, 2}}},  // ellipsis with broadcasting
      {"ij,jk", {{3, 4}, {4, 5}}},                     // implicit output
      {"iij,jk->ik", {{3, 3, 4}, {4, 2}}},             // a diagonal inside a product
      {"ij,ij->ij", {{3, 4}, {3, 4}}},                 // element-wise (all batch)
      {"ij,jk->ik", {{3, 0}, {0, 4}}},                 // an empty contraction: zeros
      {"ij,jk->ik", {{0, 5}, {5, 4}}},                 // an empty output
      {"abcdefghijklm,mlkjihgfedcba->", {ints(13, 2), ints(13, 2)}},  // a permutation of 13 dimensions
  };
  for (const auto& c : cases) {
    CAPTURE(c.eq);
    for (const bool tf : {false, true}) {
      std::vector<tensor> in;
      std::uint64_t seed = 1;
      for (const auto& s : c.sizes) in.push_back(rnd(s, seed++));
      differential(einsum(c.eq, tf), in, 1e-4, 1e-5);
    }
    std::vector<tensor> in64, in16, inb;
    std::uint64_t seed = 10;
    for (const auto& s : c.sizes) {
      in64.push_back(rnd(s, seed, dtype::f64));
      in16.push_back(rnd(s, seed, dtype::f16, -1, 1));
      inb.push_back(rnd(s, seed++, dtype::bf16, -1, 1));
    }
    differential(einsum(c.eq), in64, 1e-10, 1e-12);
    differential(einsum(c.eq), in16, 2e-3, 2e-3);
    differential(einsum(c.eq), inb, 1e-2, 1e-2);
  }
}

TEST_CASE("cuda: Einsum fails as the CPU kernel does, naming the node") {
  const auto fails = gpass_test_cuda::fails_alike;
  fails(einsum("ij,jk->ik"), {rnd({2, 3}, 1), rnd({4, 5}, 2)}, "of one label differ");
  fails(einsum("ij,jk->ik"), {rnd({2, 3}, 1)}, "has 2 operands, got 1 inputs");
  fails(einsum("ij->k"), {rnd({2, 3}, 1)}, "does not appear in the inputs");
  fails(einsum("ijk->i"), {rnd({2, 3}, 1)}, "does not match input 0");
  fails(einsum("ij,jk->ik"), {rnd({2, 3}, 1), rnd({3, 2}, 2, dtype::f64)}, "different element types");
  fails(einsum("i1->i"), {rnd({2, 3}, 1)}, "bad character");
}

}  // namespace gpass_test_cuda_einsum
