// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file linalg.hpp
/// The CUDA products, convolutions and pooling: MatMul, Gemm and the fused FusedGemm
/// (cuBLASLt, with its bias and ReLU epilogues where they apply), Conv and FusedConv (cuDNN's
/// legacy convolution API, 1 to 3 spatial dimensions), ConvTranspose (cuDNN's backward data),
/// MaxPool (with Indices), AveragePool, LpPool and their Global forms (generated kernels),
/// for f16, bf16, f32 and f64.
/// Semantics follow the Eigen CPU kernels (`eigen_cpu/kernels/linalg.hpp`).

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <gpass/core/error.hpp>
#include <gpass/core/shape.hpp>
#include <gpass/exec/cuda/codegen.hpp>
#include <gpass/exec/cuda/dynload.hpp>
#include <gpass/exec/cuda/kernels/common.hpp>
#include <gpass/exec/cuda/policy.hpp>
#include <gpass/exec/kernel.hpp>
#include <gpass/exec/nn_rules.hpp>
#include <gpass/exec/fused_activation.hpp>
#include <gpass/exec/shape_rules.hpp>

namespace gpass::exec {

namespace cuda_linalg {

using i64 = std::int64_t;
using cuda_detail::context;
using cuda_detail::fn;
using cuda_detail::lazy_library;

/// The float types the products, convolutions and pools take.
inline std::vector<dtype> float_types() { return {dtype::f16, dtype::bf16, dtype::f32, dtype::f64}; }

inline i64 product(const std::vector<i64>& v, std::size_t b = 0, std::size_t e = std::string::npos) {
  i64 p = 1;
  const std::size_t end = std::min(e, v.size());
  for (auto it = v.begin() + static_cast<std::ptrdiff_t>(std::min(b, end)); it != v.begin() + static_cast<std::ptrdiff_t>(end); ++it) p *= *it;
  return p;
}

/// The largest power of two (at most 256) dividing address `p` (256 for null).
inline std::uint32_t alignment_of(const void* p) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  std::uint32_t r = 256;
  while (r > 1 && (a % r) != 0) r >>= 1;
  return r;
}

// ---- fused activations --------------------------------------------------------------------

/// The activation of a fused op (`fused_activation`) with its generated form.
struct fused_act : fused_activation {
  static fused_act read(const kernel_node& n) { return {fused_activation::read(n)}; }
  /// The expression of the activation of `v` (of compute type `W`).
  std::string expr(dtype t) const {
    const std::string W(cuda_codegen::compute_type(t));
    auto lit = [&](double x) { return cuda_codegen::literal(x, W); };
    switch (k) {
      case kind::none: return "v";
      case kind::relu: return "(v < (W)0 ? (W)0 : v)";
      case kind::leaky_relu: return "(v < (W)0 ? " + lit(a) + " * v : v)";
      case kind::clip: return "g_min(g_max(v, " + lit(a) + "), " + lit(b) + ")";
      case kind::sigmoid: return "((W)1 / ((W)1 + g_exp(-v)))";
      case kind::tanh: return "g_tanh(v)";
      case kind::hard_sigmoid: return "g_max((W)0, g_min((W)1, " + lit(a) + " * v + " + lit(b) + "))";
    }
    return "v";
  }
  std::string key() const { return std::to_string(static_cast<int>(k)) + ":" + std::to_string(a) + ":" + std::to_string(b); }
};

/// `fused_act(T* y, const T* z, long long n)`: y = act(y + z) in place (z may be null).
inline std::string activation_source(dtype t, const fused_act& act) {
  const std::string T(cuda_codegen::storage_type(t)), W(cuda_codegen::compute_type(t));
  std::string s = cuda_codegen::cuda_prelude();
  s += "typedef " + W + " W;\n";
  s += "extern \"C\" __global__ void fused_act(" + T + "* y, const " + T + "* z, long long n) {\n";
  s += "  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {\n";
  s += "    W v = g_load(y, i);\n    if (z) v += g_load(z, i);\n";
  s += "    g_store(y, i, " + act.expr(t) + ");\n  }\n}\n";
  // a convolution's epilogue: y = act(y + b[channel] + z), channels of `inner` elements each
  s += "__device__ __forceinline__ W fba(" + T + "* y, const " + T + "* z, const " + T + "* b, long long i, long long c) {\n";
  s += "  W v = g_load(y, i);\n  if (b) v += g_load(b, c);\n  if (z) v += g_load(z, i);\n  return " + act.expr(t) + ";\n}\n";
  s += "extern \"C\" __global__ void fused_bias_act(" + T + "* y, const " + T + "* z, const " + T +
       "* b, long long n, long long inner, long long C) {\n";
  s += "  if (n <= 0x7fffffffLL) {\n";
  s += "    const unsigned un = (unsigned)n, ui = (unsigned)inner, uc = (unsigned)C;\n";
  s += "    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < un; i += gridDim.x * blockDim.x) {\n";
  s += "      const W r = fba(y, z, b, i, (i / ui) % uc);\n      g_store(y, i, r);\n    }\n";
  s += "  } else {\n";
  s += "    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {\n";
  s += "      const W r = fba(y, z, b, i, (i / inner) % C);\n      g_store(y, i, r);\n    }\n  }\n}\n";
  return s;
}

/// The activation library of `t` and `act` (`fused_act`, `fused_bias_act`): one key, one entry list.
inline const lazy_library::entry& activation_kernels(context& ctx, lazy_library& lib, dtype t, const fused_act& act) {
  return lib.get(ctx.policy(), "act," + std::string(to_string(t)) + "," + act.key(), {"fused_act", "fused_bias_act"},
                 [&] { return activation_source(t, act); });
}

/// Applies `act` (and adds `z` when given, same sizes) to `y` in place.
inline void apply_activation(context& ctx, lazy_library& lib, const cuda_tensor& y, const cuda_tensor* z, const fused_act& act) {
  const i64 n = y.size();
  if (n == 0 || (!z && act.k == fused_act::kind::none)) return;
  const dtype t = y.element_type();
  const auto& k = activation_kernels(ctx, lib, t, act);
  void* yp = y.data();
  void* zp = z ? z->data() : nullptr;
  long long nn = n;
  void* args[] = {&yp, &zp, &nn};
  ctx.policy().launch(k.kernels[0], ctx.policy().blocks_for(n), 256, args, ctx.stream());
}

/// A convolution's epilogue on its output `y` (N, C, spatial...) in place: y = act(y + b[c] +
/// z), each part optional; nothing to do launches nothing.
inline void apply_conv_epilogue(context& ctx, lazy_library& lib, const cuda_tensor& y, const cuda_tensor* bias, const cuda_tensor* z,
                                const fused_act& act) {
  const i64 n = y.size();
  if (n == 0 || (!bias && !z && act.k == fused_act::kind::none)) return;
  const dtype t = y.element_type();
  const auto& k = activation_kernels(ctx, lib, t, act);
  long long inner = 1;
  for (std::size_t d = 2; d < y.rank(); ++d) inner *= y.sizes()[d];
  long long nn = n, C = y.rank() > 1 ? y.sizes()[1] : 1;
  void* yp = y.data();
  void* zp = z ? z->data() : nullptr;
  void* bp = bias ? bias->data() : nullptr;
  void* args[] = {&yp, &zp, &bp, &nn, &inner, &C};
  ctx.policy().launch(k.kernels[1], ctx.policy().blocks_for(n), 256, args, ctx.stream());
}

// ---- cuBLASLt -----------------------------------------------------------------------------

inline cudaDataType_t cuda_type(dtype t) {
  switch (t) {
    case dtype::f16: return CUDA_R_16F;
    case dtype::bf16: return CUDA_R_16BF;
    case dtype::f64: return CUDA_R_64F;
    default: return CUDA_R_32F;
  }
}

inline void lt_check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw error(std::string("cuda: ") + what + " failed: " + GPASS_CUBLASLT(cublasLtGetStatusName)(s) + " (" + GPASS_CUBLASLT(cublasLtGetStatusString)(s) + ")");
}

enum class epilogue { none, relu, bias, relu_bias };

/// One product in row-major terms: Y[M,N] (ldc) = alpha op(A) op(B) + beta Y, where A is
/// [M,K] (lda) or, transposed, [K,M]; B is [K,N] (ldb) or, transposed, [N,K]; `batch` of
/// them at the given element strides.
struct lt_problem {
  dtype t = dtype::f32;
  bool ta = false, tb = false;
  i64 M = 0, N = 0, K = 0, lda = 0, ldb = 0, ldc = 0;
  i64 batch = 1, stride_a = 0, stride_b = 0, stride_c = 0;
  epilogue epi = epilogue::none;
  bool tf32 = false;
  std::uint32_t align_a = 256, align_b = 256, align_c = 256;

  std::string key() const {
    std::string k = std::string(to_string(t));
    for (i64 v : {i64(ta), i64(tb), M, N, K, lda, ldb, ldc, batch, stride_a, stride_b, stride_c, i64(epi), i64(tf32),
                  i64(align_a), i64(align_b), i64(align_c)})
      k += "," + std::to_string(v);
    return k;
  }
};

/// cuBLASLt descriptors and the algorithm chosen for one `lt_problem`.
struct lt_plan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  lt_plan() = default;
  lt_plan(const lt_plan&) = delete;
  lt_plan& operator=(const lt_plan&) = delete;
  ~lt_plan() {
    if (c) (void)GPASS_CUBLASLT(cublasLtMatrixLayoutDestroy)(c);
    if (b) (void)GPASS_CUBLASLT(cublasLtMatrixLayoutDestroy)(b);
    if (a) (void)GPASS_CUBLASLT(cublasLtMatrixLayoutDestroy)(a);
    if (op) (void)GPASS_CUBLASLT(cublasLtMatmulDescDestroy)(op);
  }
};

inline constexpr std::size_t lt_workspace_bytes = std::size_t{32} << 20;

/// A node's cuBLASLt state: its plans by problem (the workspace is the policy's).
/// Runs of the node hold `mu` while they set the bias pointer and queue the product.
struct lt_state {
  std::mutex mu;
  std::map<std::string, std::unique_ptr<lt_plan>> plans;
  lazy_library lib;  ///< the node's generated kernels (C broadcast, activation)
};

inline std::unique_ptr<lt_plan> make_lt_plan(cublasLtHandle_t h, const lt_problem& p) {
  auto r = std::make_unique<lt_plan>();
  const bool f64 = p.t == dtype::f64;
  const cublasComputeType_t ct = f64 ? CUBLAS_COMPUTE_64F : (p.tf32 && p.t == dtype::f32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F);
  lt_check(GPASS_CUBLASLT(cublasLtMatmulDescCreate)(&r->op, ct, f64 ? CUDA_R_64F : CUDA_R_32F), "cublasLtMatmulDescCreate");
  // column-major: Y^T [N,M] = op(B)^T [N,K] * op(A)^T [K,M]; cuBLAS's A is our B, its B our A
  const std::int32_t opa = p.tb ? CUBLAS_OP_T : CUBLAS_OP_N, opb = p.ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  lt_check(GPASS_CUBLASLT(cublasLtMatmulDescSetAttribute)(r->op, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof opa), "setting TRANSA");
  lt_check(GPASS_CUBLASLT(cublasLtMatmulDescSetAttribute)(r->op, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof opb), "setting TRANSB");
  std::uint32_t epi = CUBLASLT_EPILOGUE_DEFAULT;
  if (p.epi == epilogue::relu) epi = CUBLASLT_EPILOGUE_RELU;
  if (p.epi == epilogue::bias) epi = CUBLASLT_EPILOGUE_BIAS;
  if (p.epi == epilogue::relu_bias) epi = CUBLASLT_EPILOGUE_RELU_BIAS;
  lt_check(GPASS_CUBLASLT(cublasLtMatmulDescSetAttribute)(r->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi), "setting the epilogue");
  const cudaDataType_t dt = cuda_type(p.t);
  // stored (before op) column-major shapes
  const std::uint64_t a_rows = static_cast<std::uint64_t>(p.tb ? p.K : p.N), a_cols = static_cast<std::uint64_t>(p.tb ? p.N : p.K);
  const std::uint64_t b_rows = static_cast<std::uint64_t>(p.ta ? p.M : p.K), b_cols = static_cast<std::uint64_t>(p.ta ? p.K : p.M);
  lt_check(GPASS_CUBLASLT(cublasLtMatrixLayoutCreate)(&r->a, dt, a_rows, a_cols, p.ldb), "cublasLtMatrixLayoutCreate");
  lt_check(GPASS_CUBLASLT(cublasLtMatrixLayoutCreate)(&r->b, dt, b_rows, b_cols, p.lda), "cublasLtMatrixLayoutCreate");
  lt_check(GPASS_CUBLASLT(cublasLtMatrixLayoutCreate)(&r->c, dt, static_cast<std::uint64_t>(p.N), static_cast<std::uint64_t>(p.M), p.ldc),
           "cublasLtMatrixLayoutCreate");
  if (p.batch > 1) {
    const std::int32_t count = static_cast<std::int32_t>(p.batch);
    auto batch = [&](cublasLtMatrixLayout_t l, i64 stride) {
      lt_check(GPASS_CUBLASLT(cublasLtMatrixLayoutSetAttribute)(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count), "setting the batch count");
      const std::int64_t s = stride;
      lt_check(GPASS_CUBLASLT(cublasLtMatrixLayoutSetAttribute)(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &s, sizeof s), "setting the batch stride");
    };
    batch(r->a, p.stride_b);
    batch(r->b, p.stride_a);
    batch(r->c, p.stride_c);
  }
  cublasLtMatmulPreference_t pref = nullptr;
  lt_check(GPASS_CUBLASLT(cublasLtMatmulPreferenceCreate)(&pref), "cublasLtMatmulPreferenceCreate");
  struct pref_guard {
    cublasLtMatmulPreference_t p;
    ~pref_guard() { (void)GPASS_CUBLASLT(cublasLtMatmulPreferenceDestroy)(p); }
  } guard{pref};
  const std::uint64_t ws = lt_workspace_bytes;
  lt_check(GPASS_CUBLASLT(cublasLtMatmulPreferenceSetAttribute)(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws), "setting the workspace");
  auto align = [&](cublasLtMatmulPreferenceAttributes_t at, std::uint32_t v) {
    lt_check(GPASS_CUBLASLT(cublasLtMatmulPreferenceSetAttribute)(pref, at, &v, sizeof v), "setting an alignment");
  };
  align(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, p.align_b);
  align(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, p.align_a);
  align(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, p.align_c);
  align(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, p.align_c);
  cublasLtMatmulHeuristicResult_t res{};
  int found = 0;
  lt_check(GPASS_CUBLASLT(cublasLtMatmulAlgoGetHeuristic)(h, r->op, r->a, r->b, r->c, r->c, pref, 1, &res, &found), "cublasLtMatmulAlgoGetHeuristic");
  if (found == 0) throw error("cuda: cuBLASLt has no algorithm for the product " + p.key());
  r->algo = res.algo;
  return r;
}

/// Queues the product `p` (see `lt_problem`): Y = alpha op(A) op(B) + beta Y (+ bias [N] by
/// row, then ReLU, as `p.epi` says). `y` is read when `beta` is not 0.
inline void lt_matmul(context& ctx, lt_state& st, lt_problem p, double alpha, double beta, const void* a, const void* b, void* y,
                      const void* bias = nullptr) {
  auto& pol = ctx.policy();
  p.tf32 = pol.config().allow_tf32;
  p.align_a = alignment_of(a);
  p.align_b = alignment_of(b);
  p.align_c = alignment_of(y);
  cuda_detail::device_guard g(pol.device());  // before any cuBLASLt call (the heuristic too)
  cublasLtHandle_t h = pol.cublaslt();
  const std::shared_ptr<std::byte> workspace = pol.workspace(lt_workspace_bytes);
  std::lock_guard lock(st.mu);
  const std::string key = p.key();
  auto it = st.plans.find(key);
  if (it == st.plans.end()) it = st.plans.emplace(key, make_lt_plan(h, p)).first;
  lt_plan& pl = *it->second;
  if (p.epi == epilogue::bias || p.epi == epilogue::relu_bias)
    lt_check(GPASS_CUBLASLT(cublasLtMatmulDescSetAttribute)(pl.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias), "setting the bias");
  const float fa = static_cast<float>(alpha), fb = static_cast<float>(beta);
  const bool f64 = p.t == dtype::f64;
  const void* pa = f64 ? static_cast<const void*>(&alpha) : static_cast<const void*>(&fa);
  const void* pb = f64 ? static_cast<const void*>(&beta) : static_cast<const void*>(&fb);
  lt_check(GPASS_CUBLASLT(cublasLtMatmul)(h, pl.op, pa, b, pl.a, a, pl.b, pb, y, pl.c, y, pl.c, &pl.algo, workspace.get(), lt_workspace_bytes,
                          ctx.stream().stream),
           "cublasLtMatmul");
}

// ---- MatMul ---------------------------------------------------------------------------------

/// An operand's batch dims `b` right-aligned to the broadcast `batch` (1s in front).
inline std::vector<i64> padded_batch(const std::vector<i64>& b, const std::vector<i64>& batch) {
  std::vector<i64> r(batch.size() - b.size(), 1);
  r.insert(r.end(), b.begin(), b.end());
  return r;
}

/// Each output batch's matrix (row-major over `batch`) in a and in b, for batch dims `ba` and
/// `bb` broadcast to `batch` (MatMul's broadcasting).
inline std::vector<std::pair<i64, i64>> batch_offsets(const std::vector<i64>& batch, const std::vector<i64>& ba, const std::vector<i64>& bb) {
  const std::vector<i64> pa = padded_batch(ba, batch), pb = padded_batch(bb, batch);
  i64 batches = 1;
  for (i64 d : batch) batches *= d;
  std::vector<std::pair<i64, i64>> r;
  r.reserve(static_cast<std::size_t>(batches));
  std::vector<i64> idx(batch.size(), 0);
  for (i64 i = 0; i < batches; ++i) {
    i64 oa = 0, ob = 0;
    for (std::size_t d = 0; d < batch.size(); ++d) {
      oa = oa * pa[d] + (pa[d] == 1 ? 0 : idx[d]);
      ob = ob * pb[d] + (pb[d] == 1 ? 0 : idx[d]);
    }
    r.emplace_back(oa, ob);
    for (std::size_t d = batch.size(); d-- > 0;) {
      if (++idx[d] < batch[d]) break;
      idx[d] = 0;
    }
  }
  return r;
}

/// MatMul's shapes: A [..., M, K] (a vector: [1, K]) times B [..., K, N] (a vector: [K, 1]),
/// op swapping the last two dimensions of an operand of rank >= 2 when `ta` / `tb` says; the
/// batch dimensions of each operand (`ba`, `bb`) and their broadcast (`batch`), and the
/// output's sizes (without the dimension of a vector operand).
struct matmul_shape {
  bool ta = false, tb = false;
  i64 M = 0, K = 0, N = 0;
  std::vector<i64> ba, bb, batch, out;
};
inline matmul_shape matmul_shapes(const context& ctx, const std::vector<i64>& sa, const std::vector<i64>& sb, bool ta = false,
                                  bool tb = false) {
  if (sa.empty() || sb.empty()) ctx.fail("MatMul inputs must have rank >= 1");
  matmul_shape r;
  r.ta = ta && sa.size() >= 2;
  r.tb = tb && sb.size() >= 2;
  std::vector<i64> a2 = sa, b2 = sb;  // the logical (transposed) sizes
  if (r.ta) std::swap(a2[a2.size() - 2], a2[a2.size() - 1]);
  if (r.tb) std::swap(b2[b2.size() - 2], b2[b2.size() - 1]);
  if (sa.size() == 1) a2 = {1, sa[0]};
  if (sb.size() == 1) b2 = {sb[0], 1};
  r.M = a2[a2.size() - 2], r.K = a2.back(), r.N = b2.back();
  if (b2[b2.size() - 2] != r.K)
    ctx.fail("MatMul inner dimensions differ: " + shape::of(r.ta ? a2 : sa).to_string() + " x " + shape::of(r.tb ? b2 : sb).to_string());
  r.ba.assign(a2.begin(), a2.end() - 2);
  r.bb.assign(b2.begin(), b2.end() - 2);
  const std::vector<std::vector<i64>> both{r.ba, r.bb};
  r.batch = cuda_detail::broadcast_sizes(ctx, both);
  r.out = r.batch;
  if (sa.size() > 1) r.out.push_back(r.M);
  if (sb.size() > 1) r.out.push_back(r.N);
  return r;
}

/// Output 0 = alpha * op(A) x op(B) with MatMul's batch broadcasting, op swapping the last two
/// dimensions of an operand of rank >= 2 when `ta_attr` / `tb_attr` says (FusedMatMul's
/// transA / transB; MatMul: neither, alpha 1).
inline void batched_product(context& ctx, lt_state& st, bool ta_attr, bool tb_attr, double alpha) {
  const cuda_tensor& a = ctx.input(0);
  const cuda_tensor& b = ctx.input(1);
  const matmul_shape s = matmul_shapes(ctx, a.sizes(), b.sizes(), ta_attr, tb_attr);
  const bool ta = s.ta, tb = s.tb;
  const i64 M = s.M, K = s.K, N = s.N;
  const std::vector<i64>&ba = s.ba, &bb = s.bb, &batch = s.batch, &out = s.out;
  const dtype t = a.element_type();
  auto& y = ctx.allocate_output(0, t, out);
  if (y.size() == 0) return;
  if (K == 0) {
    ctx.policy().fill_zero(y, ctx.stream());
    return;
  }
  const i64 batches = product(batch);
  const std::size_t es = size_of(t);
  lt_problem p{.t = t, .ta = ta, .tb = tb, .M = M, .N = N, .K = K, .lda = ta ? M : K, .ldb = tb ? K : N, .ldc = N};
  if (!ta && product(bb) == 1 && ba == batch) {  // b has no batch: a's batches are more rows
    p.M = batches * M;
    lt_matmul(ctx, st, p, alpha, 0.0, a.data(), b.data(), y.data());
    return;
  }
  const std::vector<i64> pa = padded_batch(ba, batch), pb = padded_batch(bb, batch);
  if ((pa == batch || product(ba) == 1) && (pb == batch || product(bb) == 1) && batches <= INT_MAX) {
    // one strided batch (stride 0: the one matrix for every batch)
    p.batch = batches;
    p.stride_a = product(ba) == 1 ? 0 : M * K;
    p.stride_b = product(bb) == 1 ? 0 : K * N;
    p.stride_c = M * N;
    if (p.stride_a != 0 && p.stride_b != 0) {
      lt_matmul(ctx, st, p, alpha, 0.0, a.data(), b.data(), y.data());
      return;
    }
    // a zero batch stride is not documented for cuBLASLt: one product per batch instead
  }
  // general broadcast: one product per output batch
  p.batch = 1;
  p.stride_a = p.stride_b = p.stride_c = 0;
  const std::vector<std::pair<i64, i64>> offsets = batch_offsets(batch, ba, bb);
  for (i64 i = 0; i < batches; ++i) {
    const auto [oa, ob] = offsets[static_cast<std::size_t>(i)];
    const auto* ap = static_cast<const std::byte*>(a.data()) + static_cast<std::size_t>(oa * M * K) * es;
    const auto* bp = static_cast<const std::byte*>(b.data()) + static_cast<std::size_t>(ob * K * N) * es;
    auto* yp = static_cast<std::byte*>(y.data()) + static_cast<std::size_t>(i * M * N) * es;
    lt_matmul(ctx, st, p, alpha, 0.0, ap, bp, yp);
  }
}

inline fn make_matmul(const kernel_node&) {
  auto st = std::make_shared<lt_state>();
  return [st](context& ctx) {
    if (ctx.input(0).element_type() != ctx.input(1).element_type()) ctx.fail("MatMul inputs have different element types");
    batched_product(ctx, *st, false, false, 1.0);
  };
}

// ---- com.microsoft FusedMatMul --------------------------------------------------------------

/// alpha * op(A) x op(B) on the MatMul path, op swapping the last two dimensions (transA /
/// transB); a node with transBatchA or transBatchB is declined (`applies`) and runs on the CPU.
inline fn make_fused_matmul(const kernel_node& n) {
  const double alpha = n.attr<double>("alpha", 1.0);
  const bool ta = n.attr<i64>("transA", 0) != 0, tb = n.attr<i64>("transB", 0) != 0;
  const bool tba = n.attr<i64>("transBatchA", 0) != 0, tbb = n.attr<i64>("transBatchB", 0) != 0;
  auto st = std::make_shared<lt_state>();
  return [=](context& ctx) {
    if (ctx.input(0).element_type() != ctx.input(1).element_type()) ctx.fail("FusedMatMul inputs have different element types");
    if (tba || tbb) ctx.fail("transBatchA / transBatchB are not served by the CUDA kernel (the node runs on the CPU)");
    batched_product(ctx, *st, ta, tb, alpha);
  };
}

// ---- Gemm, FusedGemm ----------------------------------------------------------------------

/// `r = beta * x0` over C broadcast to Y.
inline std::string scale_source(dtype t, double beta) {
  return cuda_codegen::elementwise_source({{t}, t, "r = (R)(" + cuda_codegen::literal(beta, cuda_codegen::compute_type(t)) + " * x0);"});
}

inline fn make_gemm(const kernel_node& n, bool fused) {
  const bool ta = n.attr<i64>("transA", 0) != 0, tb = n.attr<i64>("transB", 0) != 0;
  const double alpha = n.attr<double>("alpha", 1.0), beta = n.attr<double>("beta", 1.0);
  const fused_act act = fused ? fused_act::read(n) : fused_act{};
  auto st = std::make_shared<lt_state>();
  return [=](context& ctx) {
    const cuda_tensor& a = ctx.input(0);
    const cuda_tensor& b = ctx.input(1);
    if (a.rank() != 2 || b.rank() != 2)
      ctx.fail("Gemm inputs must be matrices, got " + a.shape().to_string() + " and " + b.shape().to_string());
    if (a.element_type() != b.element_type()) ctx.fail("Gemm inputs have different element types");
    const dtype t = a.element_type();
    const i64 M = ta ? a.sizes()[1] : a.sizes()[0], K = ta ? a.sizes()[0] : a.sizes()[1];
    const i64 Kb = tb ? b.sizes()[1] : b.sizes()[0], N = tb ? b.sizes()[0] : b.sizes()[1];
    if (K != Kb) ctx.fail("Gemm inner dimensions differ: " + std::to_string(K) + " vs " + std::to_string(Kb));
    const cuda_tensor* c = ctx.has_input(2) && beta != 0.0 ? &ctx.input(2) : nullptr;
    if (c) {
      if (c->element_type() != t) ctx.fail("Gemm C has a different element type");
      const auto& cs = c->sizes();
      if (cs.size() > 2) ctx.fail("Gemm C must have rank <= 2, got " + c->shape().to_string());
      const i64 cr = cs.size() == 2 ? cs[0] : 1, cc = cs.empty() ? 1 : cs.back();
      if ((cr != 1 && cr != M) || (cc != 1 && cc != N))
        ctx.fail("Gemm C of shape " + c->shape().to_string() + " does not broadcast to [" + std::to_string(M) + "," + std::to_string(N) + "]");
    }
    auto& y = ctx.allocate_output(0, t, {M, N});
    if (y.size() == 0) return;
    // C a row of N added as is: the bias epilogue
    const bool bias = c && beta == 1.0 && alpha == 1.0 && t != dtype::f64 && K > 0 && c->size() == N &&
                      (c->rank() == 1 || (c->rank() == 2 && c->sizes()[0] == 1));
    if (c && !bias) {
      const cuda_tensor* xs[] = {c};
      const auto& k = st->lib.get(ctx.policy(), "beta," + std::string(to_string(t)) + "," + std::to_string(beta), {"ew_flat", "ew_strided"},
                                  [&] { return scale_source(t, beta); });
      cuda_detail::launch_elementwise(ctx, k, y, xs);
    }
    bool act_done = act.k == fused_act::kind::none;
    if (K == 0) {
      if (!c) ctx.policy().fill_zero(y, ctx.stream());
    } else {
      lt_problem p{.t = t, .ta = ta, .tb = tb, .M = M, .N = N, .K = K, .lda = a.sizes()[1], .ldb = b.sizes()[1], .ldc = N};
      // the ReLU epilogue as the bias one: not for f64
      const bool relu = act.k == fused_act::kind::relu && (!c || bias) && t != dtype::f64;
      p.epi = bias ? (relu ? epilogue::relu_bias : epilogue::bias) : (relu ? epilogue::relu : epilogue::none);
      if (relu) act_done = true;
      lt_matmul(ctx, *st, p, alpha, c && !bias ? 1.0 : 0.0, a.data(), b.data(), y.data(), bias ? c->data() : nullptr);
    }
    if (!act_done) apply_activation(ctx, st->lib, y, nullptr, act);
  };
}

// ---- window geometry ------------------------------------------------------------------------

// the window attributes and geometry the CPU kernels use (gpass/exec/shape_rules.hpp)
using shape_rules::resolve_window;
using shape_rules::window_attrs;
using shape_rules::window_geometry;

// ---- pooling and padding (generated) --------------------------------------------------------

/// The pooling library of element type `t`: `pool_max`, `pool_avg`, `pool_lp` (windows over
/// up to 3 spatial dimensions, as the CPU's `pool_plane`), `global_max`, `global_avg`,
/// `global_lp` (a block per plane) and `pad_zero` (copies planes into zero-padded planes, or
/// crops them: a negative `pb`).
inline std::string pool_source(dtype t) {
  const std::string T(cuda_codegen::storage_type(t)), W(cuda_codegen::compute_type(t));
  std::string s = cuda_codegen::cuda_prelude();
  s += "typedef " + T + " T;\ntypedef " + W + " W;\n";
  s += R"(struct g_window { long long planes; long long in[3], out[3], k[3], s[3], d[3], pb[3], pe[3]; int include_pad; int col_major; double p; };
// MODE 0: average, 1: max, 2: Lp norm ((sum |v|^p)^(1/p), padding adding nothing)
template <int MODE>
__device__ __forceinline__ void g_pool(const T* __restrict__ x, T* __restrict__ y, long long* __restrict__ ind, const g_window& g) {
  const long long Pin = g.in[0] * g.in[1] * g.in[2], Pout = g.out[0] * g.out[1] * g.out[2], n = g.planes * Pout;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    const long long pl = i / Pout;
    long long q = i - pl * Pout;
    const long long o2 = q % g.out[2]; q /= g.out[2];
    const long long o1 = q % g.out[1]; const long long o0 = q / g.out[1];
    const long long o[3] = {o0, o1, o2};
    long long lo[3], hi[3], first[3], padded = 1;
    for (int d = 0; d < 3; ++d) {
      first[d] = o[d] * g.s[d] - g.pb[d];
      long long l = 0, h = 0, p = 0; bool seen = false;
      for (long long t = 0; t < g.k[d]; ++t) {
        const long long pos = first[d] + t * g.d[d];
        if (pos >= -g.pb[d] && pos < g.in[d] + g.pe[d]) ++p;
        if (pos >= 0 && pos < g.in[d]) { if (!seen) l = t; seen = true; h = t + 1; }
      }
      lo[d] = l; hi[d] = seen ? h : l; padded *= p;
    }
    const bool MAX = MODE == 1;
    const T* xp = x + pl * Pin;
    W acc = MAX ? (W)(-1.0 / 0.0) : (W)0;
    long long best = -1, count = 0;
    for (long long k0 = lo[0]; k0 < hi[0]; ++k0) {
      const long long i0 = first[0] + k0 * g.d[0];
      for (long long k1 = lo[1]; k1 < hi[1]; ++k1) {
        const long long i1 = first[1] + k1 * g.d[1];
        for (long long k2 = lo[2]; k2 < hi[2]; ++k2) {
          const long long i2 = first[2] + k2 * g.d[2];
          const W v = g_load(xp, (i0 * g.in[1] + i1) * g.in[2] + i2);
          ++count;
          if (MAX) {
            if (ind) {
              if (v > acc || best < 0) { acc = v; best = g.col_major ? i0 + g.in[0] * (i1 + g.in[1] * i2) : (i0 * g.in[1] + i1) * g.in[2] + i2; }
            } else if (acc < v) {
              acc = v;
            }
          } else if (MODE == 2) {
            acc += (W)pow(fabs((double)v), g.p);
          } else {
            acc += v;
          }
        }
      }
    }
    if (MAX) {
      if (count == 0) { acc = (W)0; best = 0; }
      if (ind) ind[i] = pl * Pin + best;
    } else if (MODE == 2) {
      acc = (W)pow((double)acc, 1.0 / g.p);
    } else {
      const long long div = g.include_pad ? padded : count;
      acc = div > 0 ? (W)(acc / (W)div) : (W)0;
    }
    g_store(y, i, acc);
  }
}
extern "C" __global__ void pool_max(const T* __restrict__ x, T* __restrict__ y, long long* __restrict__ ind, g_window g) { g_pool<1>(x, y, ind, g); }
extern "C" __global__ void pool_avg(const T* __restrict__ x, T* __restrict__ y, long long* __restrict__ ind, g_window g) { g_pool<0>(x, y, ind, g); }
extern "C" __global__ void pool_lp(const T* __restrict__ x, T* __restrict__ y, long long* __restrict__ ind, g_window g) { g_pool<2>(x, y, ind, g); }
template <int MODE>
__device__ __forceinline__ void g_global(const T* __restrict__ x, T* __restrict__ y, long long planes, long long P, double p) {
  const bool MAX = MODE == 1;
  __shared__ W sh[32];
  for (long long pl = blockIdx.x; pl < planes; pl += gridDim.x) {
    const T* xp = x + pl * P;
    W acc = MAX ? (W)(-1.0 / 0.0) : (W)0;
    for (long long i = threadIdx.x; i < P; i += blockDim.x) {
      const W v = MODE == 2 ? (W)pow(fabs((double)g_load(xp, i)), p) : g_load(xp, i);
      acc = MAX ? g_max(acc, v) : acc + v;
    }
    for (int o = 16; o > 0; o >>= 1) { const W u = __shfl_down_sync(0xffffffffu, acc, o); acc = MAX ? g_max(acc, u) : acc + u; }
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
    __syncthreads();
    if (lane == 0) sh[w] = acc;
    __syncthreads();
    if (w == 0) {
      acc = lane < nw ? sh[lane] : (MAX ? (W)(-1.0 / 0.0) : (W)0);
      for (int o = 16; o > 0; o >>= 1) { const W u = __shfl_down_sync(0xffffffffu, acc, o); acc = MAX ? g_max(acc, u) : acc + u; }
      if (lane == 0) g_store(y, pl, P == 0 ? (W)0 : (MAX ? acc : MODE == 2 ? (W)pow((double)acc, 1.0 / p) : (W)(acc / (W)P)));
    }
  }
}
extern "C" __global__ void global_max(const T* __restrict__ x, T* __restrict__ y, long long planes, long long P) { g_global<1>(x, y, planes, P, 1.0); }
extern "C" __global__ void global_avg(const T* __restrict__ x, T* __restrict__ y, long long planes, long long P) { g_global<0>(x, y, planes, P, 1.0); }
extern "C" __global__ void global_lp(const T* __restrict__ x, T* __restrict__ y, long long planes, long long P, double p) { g_global<2>(x, y, planes, P, p); }
struct g_pad { long long planes; long long in[3], out[3], pb[3]; };
extern "C" __global__ void pad_zero(const T* __restrict__ x, T* __restrict__ y, g_pad g) {
  const long long Pout = g.out[0] * g.out[1] * g.out[2], n = g.planes * Pout;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    const long long pl = i / Pout;
    long long q = i - pl * Pout;
    const long long o2 = q % g.out[2]; q /= g.out[2];
    const long long o1 = q % g.out[1]; const long long o0 = q / g.out[1];
    const long long i0 = o0 - g.pb[0], i1 = o1 - g.pb[1], i2 = o2 - g.pb[2];
    if (i0 >= 0 && i0 < g.in[0] && i1 >= 0 && i1 < g.in[1] && i2 >= 0 && i2 < g.in[2])
      y[i] = x[pl * g.in[0] * g.in[1] * g.in[2] + (i0 * g.in[1] + i1) * g.in[2] + i2];
    else
      g_store(y, i, (W)0);
  }
}
)";
  return s;
}

inline const std::vector<std::string>& pool_entries() {
  static const std::vector<std::string> e{"pool_max", "pool_avg", "global_max", "global_avg", "pad_zero", "pool_lp", "global_lp"};
  return e;
}

/// The host image of `g_window`.
struct window_arg {
  long long planes;
  long long in[3], out[3], k[3], s[3], d[3], pb[3], pe[3];
  int include_pad;
  int col_major;
  double p;
};
struct pad_arg {
  long long planes;
  long long in[3], out[3], pb[3];
};

/// Spatial sizes right-aligned into 3 (leading 1s).
inline void put3(long long (&dst)[3], const std::vector<i64>& v, long long fill) {
  const std::size_t lead = 3 - v.size();
  for (std::size_t d = 0; d < 3; ++d) dst[d] = d < lead ? fill : v[d - lead];
}

inline void check_pool_input(const context& ctx, const cuda_tensor& x) {
  if (!cuda_codegen::is_float(x.element_type()))
    ctx.fail("no CUDA pooling kernel for element type " + std::string(to_string(x.element_type())));
}

/// What a pool computes over its window.
enum class pool_mode { average, max, lp };

/// LpPool's `p` (positive; 2 by default).
inline double lp_of(const kernel_node& n, pool_mode mode) {
  const double p = static_cast<double>(n.attr<i64>("p", 2));
  if (mode == pool_mode::lp && p <= 0) n.fail("p must be positive");
  return p;
}

inline fn make_pool(const kernel_node& n, pool_mode mode) {
  const window_attrs wa = window_attrs::read(n);
  if (wa.kernel.empty()) n.fail("missing attribute 'kernel_shape'");
  const bool max = mode == pool_mode::max;
  const double lp = lp_of(n, mode);
  const bool include_pad = n.attr<i64>("count_include_pad", 0) != 0;
  const i64 storage_order = n.attr<i64>("storage_order", 0);
  auto lib = std::make_shared<lazy_library>();
  return [=](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    check_pool_input(ctx, x);
    const auto& xs = x.sizes();
    if (xs.size() < 3) ctx.fail("input must have rank >= 3, got " + x.shape().to_string());
    if (xs.size() > 5) ctx.fail("pooling supports up to 3 spatial dimensions");
    const window_geometry g = resolve_window(wa, {xs.begin() + 2, xs.end()}, wa.kernel, ctx.node());
    std::vector<i64> ys{xs[0], xs[1]};
    ys.insert(ys.end(), g.out.begin(), g.out.end());
    const dtype t = x.element_type();
    auto& y = ctx.allocate_output(0, t, ys);
    void* ip = nullptr;
    if (max && ctx.num_outputs() > 1 && ctx.output_wanted(1)) ip = ctx.allocate_output(1, dtype::int64, ys).data();
    if (y.size() == 0) return;
    const auto& k = lib->get(ctx.policy(), std::string(to_string(t)), pool_entries(), [&] { return pool_source(t); });
    window_arg w{};
    w.planes = xs[0] * xs[1];
    put3(w.in, g.in, 1);
    put3(w.out, g.out, 1);
    put3(w.k, g.kernel, 1);
    put3(w.s, g.strides, 1);
    put3(w.d, g.dilations, 1);
    put3(w.pb, g.pad_begin, 0);
    put3(w.pe, g.pad_end, 0);
    w.include_pad = include_pad ? 1 : 0;
    w.col_major = storage_order != 0 ? 1 : 0;
    w.p = lp;
    const void* xp = x.data();
    void* yp = y.data();
    void* args[] = {&xp, &yp, &ip, &w};
    const int entry = max ? 0 : mode == pool_mode::lp ? 5 : 1;
    ctx.policy().launch(k.kernels[entry], ctx.policy().blocks_for(y.size()), 256, args, ctx.stream());
  };
}

inline fn make_global_pool(const kernel_node& n, pool_mode mode) {
  double lp = lp_of(n, mode);
  auto lib = std::make_shared<lazy_library>();
  return [=](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    check_pool_input(ctx, x);
    const auto& xs = x.sizes();
    if (xs.size() < 2) ctx.fail("input must have rank >= 2, got " + x.shape().to_string());
    std::vector<i64> ys(xs.size(), 1);
    ys[0] = xs[0];
    ys[1] = xs[1];
    const dtype t = x.element_type();
    auto& y = ctx.allocate_output(0, t, ys);
    if (y.size() == 0) return;
    const auto& k = lib->get(ctx.policy(), std::string(to_string(t)), pool_entries(), [&] { return pool_source(t); });
    const void* xp = x.data();
    void* yp = y.data();
    long long planes = xs[0] * xs[1], P = product(xs, 2);
    double p = lp;
    void* args[] = {&xp, &yp, &planes, &P, &p};
    const unsigned blocks = static_cast<unsigned>(std::min<long long>(planes, 65535));
    const int entry = mode == pool_mode::max ? 2 : mode == pool_mode::lp ? 6 : 3;
    ctx.policy().launch(k.kernels[entry], blocks, 256, args, ctx.stream());
  };
}

// ---- Conv, FusedConv (cuDNN) ------------------------------------------------------------------

inline void dnn_check(cudnnStatus_t s, const char* what) {
  if (s != CUDNN_STATUS_SUCCESS) throw error(std::string("cuda: ") + what + " failed: " + cudnnGetErrorString(s));
}

inline cudnnDataType_t dnn_type(dtype t) {
  switch (t) {
    case dtype::f16: return CUDNN_DATA_HALF;
    case dtype::bf16: return CUDNN_DATA_BFLOAT16;
    case dtype::f64: return CUDNN_DATA_DOUBLE;
    default: return CUDNN_DATA_FLOAT;
  }
}

/// cuDNN descriptors and the algorithm of one convolution shape.
struct conv_plan {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr, b = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  cudnnConvolutionBwdDataAlgo_t bwd_data_algo = CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;  ///< ConvTranspose's
  cudnnConvolutionBwdFilterAlgo_t bwd_filter_algo = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1;  ///< a filter gradient's
  std::size_t workspace = 0;
  cudnnActivationDescriptor_t relu = nullptr;  ///< for the fused form (made on first use)
  /// How bias, residual and activation are applied where cuDNN's fused call could: -1 not yet
  /// timed, 0 cuDNN's fused call, 1 the convolution then one generated epilogue kernel.
  int epilogue = -1;
  conv_plan() = default;
  conv_plan(const conv_plan&) = delete;
  conv_plan& operator=(const conv_plan&) = delete;
  ~conv_plan() {
    if (relu) (void)cudnnDestroyActivationDescriptor(relu);
    if (conv) (void)cudnnDestroyConvolutionDescriptor(conv);
    if (w) (void)cudnnDestroyFilterDescriptor(w);
    if (b) (void)cudnnDestroyTensorDescriptor(b);
    if (y) (void)cudnnDestroyTensorDescriptor(y);
    if (x) (void)cudnnDestroyTensorDescriptor(x);
  }
};

struct conv_state {
  std::mutex mu;
  std::map<std::vector<int>, std::unique_ptr<conv_plan>> plans;  ///< by dtype, TF32, dims, pads, strides, dilations
  lazy_library lib;
};

inline int to_int(const context& ctx, i64 v) {
  if (v < 0 || v > INT_MAX) ctx.fail("size " + std::to_string(v) + " is out of cuDNN's range");
  return static_cast<int>(v);
}

/// The descriptors of the convolution y = conv(x, w): `xd`, `wd`, `yd` full (N, C,
/// spatial...) dims with 2 or 3 spatial, symmetric `pad`.
inline std::unique_ptr<conv_plan> describe_conv(const context& ctx, dtype t, const std::vector<int>& xd, const std::vector<int>& wd,
                                                const std::vector<int>& yd, const std::vector<int>& pad, const std::vector<int>& stride,
                                                const std::vector<int>& dil, int G, bool exact) {
  auto p = std::make_unique<conv_plan>();
  const cudnnDataType_t dt = dnn_type(t);
  const int nd = static_cast<int>(xd.size());
  dnn_check(cudnnCreateTensorDescriptor(&p->x), "cudnnCreateTensorDescriptor");
  dnn_check(cudnnCreateTensorDescriptor(&p->y), "cudnnCreateTensorDescriptor");
  dnn_check(cudnnCreateTensorDescriptor(&p->b), "cudnnCreateTensorDescriptor");
  dnn_check(cudnnCreateFilterDescriptor(&p->w), "cudnnCreateFilterDescriptor");
  dnn_check(cudnnCreateConvolutionDescriptor(&p->conv), "cudnnCreateConvolutionDescriptor");
  dnn_check(cudnnSetTensorNdDescriptorEx(p->x, CUDNN_TENSOR_NCHW, dt, nd, xd.data()), "describing the convolution input");
  dnn_check(cudnnSetTensorNdDescriptorEx(p->y, CUDNN_TENSOR_NCHW, dt, nd, yd.data()), "describing the convolution output");
  std::vector<int> bd(static_cast<std::size_t>(nd), 1);
  bd[1] = yd[1];
  dnn_check(cudnnSetTensorNdDescriptorEx(p->b, CUDNN_TENSOR_NCHW, dt, nd, bd.data()), "describing the bias");
  dnn_check(cudnnSetFilterNdDescriptor(p->w, dt, CUDNN_TENSOR_NCHW, nd, wd.data()), "describing the filter");
  const cudnnDataType_t ct = t == dtype::f64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
  dnn_check(cudnnSetConvolutionNdDescriptor(p->conv, nd - 2, pad.data(), stride.data(), dil.data(), CUDNN_CROSS_CORRELATION, ct),
            "describing the convolution");
  dnn_check(cudnnSetConvolutionGroupCount(p->conv, G), "setting the group count");
  dnn_check(cudnnSetConvolutionMathType(p->conv, exact ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH), "setting the math type");
  std::vector<int> got(static_cast<std::size_t>(nd));
  dnn_check(cudnnGetConvolutionNdForwardOutputDim(p->conv, p->x, p->w, nd, got.data()), "cudnnGetConvolutionNdForwardOutputDim");
  if (got != yd) ctx.fail("cuDNN computes another output shape for this convolution");
  return p;
}

/// Picks the first of cuDNN's `returned` algorithm results `perf` (fastest first) that
/// succeeded, keeps exact f32 on FMA kernels, needs at most 1 GiB of scratch and whose
/// workspace size `workspace_of(algo, &bytes)` answers; sets the descriptor's math type to
/// its; else `fallback` with the default math. Returns (algorithm, workspace bytes).
template <class Perf, class Algo, class WorkspaceOf>
std::pair<Algo, std::size_t> pick_algorithm(const Perf* perf, int returned, bool exact, cudnnConvolutionDescriptor_t conv, Algo fallback,
                                            WorkspaceOf&& workspace_of, const char* what) {
  for (int i = 0; i < returned; ++i) {
    if (perf[i].status != CUDNN_STATUS_SUCCESS) continue;
    if (exact && perf[i].mathType != CUDNN_FMA_MATH) continue;
    if (perf[i].memory > (std::size_t{1} << 30)) continue;
    dnn_check(cudnnSetConvolutionMathType(conv, perf[i].mathType), "setting the math type");
    std::size_t ws = 0;
    if (workspace_of(perf[i].algo, &ws) != CUDNN_STATUS_SUCCESS) continue;
    return {perf[i].algo, ws};
  }
  dnn_check(cudnnSetConvolutionMathType(conv, exact ? CUDNN_FMA_MATH : CUDNN_DEFAULT_MATH), "setting the math type");
  std::size_t ws = 0;
  dnn_check(workspace_of(fallback, &ws), what);
  return {fallback, ws};
}

/// A convolution plan: the descriptors (`describe_conv`) and the forward algorithm.
inline std::unique_ptr<conv_plan> make_conv_plan(cudnnHandle_t h, const context& ctx, dtype t, const std::vector<int>& xd,
                                                 const std::vector<int>& wd, const std::vector<int>& yd, const std::vector<int>& pad,
                                                 const std::vector<int>& stride, const std::vector<int>& dil, int G, bool tf32) {
  // exact f32: FMA kernels only; otherwise tensor cores (TF32 for f32) may be used
  const bool exact = t == dtype::f32 && !tf32;
  auto p = describe_conv(ctx, t, xd, wd, yd, pad, stride, dil, G, exact);
  // the algorithms timed on this device, fastest first (cuDNN's exhaustive search, what
  // ONNX Runtime's CUDA provider does by default and PyTorch with cudnn.benchmark): once per
  // node and shape; the heuristic's guess when the search fails
  cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  int returned = 0;
  if (cudnnFindConvolutionForwardAlgorithm(h, p->x, p->w, p->conv, p->y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, perf) !=
      CUDNN_STATUS_SUCCESS)
    dnn_check(cudnnGetConvolutionForwardAlgorithm_v7(h, p->x, p->w, p->conv, p->y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, perf),
              "cudnnGetConvolutionForwardAlgorithm_v7");
  std::tie(p->algo, p->workspace) = pick_algorithm(
      perf, returned, exact, p->conv, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
      [&](cudnnConvolutionFwdAlgo_t a, std::size_t* ws) { return cudnnGetConvolutionForwardWorkspaceSize(h, p->x, p->w, p->conv, p->y, a, ws); },
      "cudnnGetConvolutionForwardWorkspaceSize");
  return p;
}

/// A transposed-convolution plan: y = conv_transpose(x, w) is the gradient of the data of
/// x = conv(y, w), so the descriptors are those of that convolution (`yd` its input, `xd`
/// its output) and the algorithm cuDNN's backward-data one.
inline std::unique_ptr<conv_plan> make_deconv_plan(cudnnHandle_t h, const context& ctx, dtype t, const std::vector<int>& xd,
                                                   const std::vector<int>& wd, const std::vector<int>& yd, const std::vector<int>& pad,
                                                   const std::vector<int>& stride, const std::vector<int>& dil, int G, bool tf32) {
  const bool exact = t == dtype::f32 && !tf32;
  auto p = describe_conv(ctx, t, yd, wd, xd, pad, stride, dil, G, exact);  // p->x: our y, p->y: our x
  cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
  int returned = 0;
  if (cudnnFindConvolutionBackwardDataAlgorithm(h, p->w, p->y, p->conv, p->x, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &returned, perf) !=
      CUDNN_STATUS_SUCCESS)
    dnn_check(cudnnGetConvolutionBackwardDataAlgorithm_v7(h, p->w, p->y, p->conv, p->x, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &returned,
                                                          perf),
              "cudnnGetConvolutionBackwardDataAlgorithm_v7");
  std::tie(p->bwd_data_algo, p->workspace) = pick_algorithm(
      perf, returned, exact, p->conv, CUDNN_CONVOLUTION_BWD_DATA_ALGO_1,
      [&](cudnnConvolutionBwdDataAlgo_t a, std::size_t* ws) {
        return cudnnGetConvolutionBackwardDataWorkspaceSize(h, p->w, p->y, p->conv, p->x, a, ws);
      },
      "cudnnGetConvolutionBackwardDataWorkspaceSize");
  return p;
}

/// The shared checks of a convolution's shapes (`nn_rules::check_conv_shapes`), then cuDNN's
/// limit of 3 spatial dimensions.
inline void check_conv_shapes(const context& ctx, const std::vector<i64>& xs, const std::vector<i64>& ws, i64 G) {
  nn_rules::check_conv_shapes(xs, ws, G, false, ctx.node());
  if (xs.size() > 5) ctx.fail("the CUDA convolution takes 1 to 3 spatial dimensions, got " + std::to_string(xs.size() - 2));
}

/// The device time of `work` on the policy's stream: the least of three runs after one to
/// warm up (it must be repeatable: it may only write its own output).
template <class F>
float time_on_stream(context& ctx, F&& work) {
  const cudaStream_t s = ctx.stream().stream;
  cudaEvent_t e0 = nullptr, e1 = nullptr;
  cuda_detail::check(cudaEventCreate(&e0), "creating an event");
  if (const cudaError_t e = cudaEventCreate(&e1); e != cudaSuccess) {
    (void)cudaEventDestroy(e0);
    cuda_detail::check(e, "creating an event");
  }
  float best = std::numeric_limits<float>::max();
  try {
    work();
    for (int rep = 0; rep < 3; ++rep) {
      cuda_detail::check(cudaEventRecord(e0, s), "recording an event");
      work();
      cuda_detail::check(cudaEventRecord(e1, s), "recording an event");
      cuda_detail::check(cudaEventSynchronize(e1), "waiting for an event");
      float ms = 0;
      cuda_detail::check(cudaEventElapsedTime(&ms, e0, e1), "timing on the stream");
      best = std::min(best, ms);
    }
  } catch (...) {
    (void)cudaEventDestroy(e0);
    (void)cudaEventDestroy(e1);
    throw;
  }
  (void)cudaEventDestroy(e0);
  (void)cudaEventDestroy(e1);
  return best;
}

/// The key of a node's cuDNN plan: the element type, TF32, then each dims vector (its size and
/// values; the groups follow from the input's and the filter's channels).
inline std::vector<int> dnn_key(dtype t, bool tf32, std::initializer_list<const std::vector<int>*> dims) {
  std::vector<int> key{static_cast<int>(t), tf32 ? 1 : 0};
  for (const auto* v : dims) {
    key.push_back(static_cast<int>(v->size()));
    key.insert(key.end(), v->begin(), v->end());
  }
  return key;
}

/// The plan of `st` for `key`, made by `make()` the first time (the caller holds `st.mu`).
template <class Make>
conv_plan& plan_of(conv_state& st, const std::vector<int>& key, Make&& make) {
  auto it = st.plans.find(key);
  if (it == st.plans.end()) it = st.plans.emplace(key, make()).first;
  return *it->second;
}

/// cuDNN's scaling factors 1 and 0 for element type `t` (doubles for f64, floats otherwise).
class dnn_scaling {
 public:
  explicit dnn_scaling(dtype t) : f64_(t == dtype::f64) {}
  dnn_scaling(const dnn_scaling&) = delete;
  dnn_scaling& operator=(const dnn_scaling&) = delete;
  const void* one() const { return f64_ ? static_cast<const void*>(&one_d_) : static_cast<const void*>(&one_f_); }
  const void* zero() const { return f64_ ? static_cast<const void*>(&zero_d_) : static_cast<const void*>(&zero_f_); }

 private:
  bool f64_;
  float one_f_ = 1.0f, zero_f_ = 0.0f;
  double one_d_ = 1.0, zero_d_ = 0.0;
};

/// Conv (and, `z_input` >= 0 or an activation, FusedConv) through cuDNN.
inline fn make_conv(const kernel_node& n, bool fused) {
  const window_attrs wa = window_attrs::read(n);
  const i64 G = n.attr<i64>("group", 1);
  const fused_act act = fused ? fused_act::read(n) : fused_act{};
  auto st = std::make_shared<conv_state>();
  return [=](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    const cuda_tensor& w = ctx.input(1);
    const dtype t = x.element_type();
    if (w.element_type() != t) ctx.fail("Conv X and W have different element types");
    if (!cuda_codegen::is_float(t)) ctx.fail("no CUDA convolution for element type " + std::string(to_string(t)));
    const auto& xs = x.sizes();
    const auto& wsz = w.sizes();
    check_conv_shapes(ctx, xs, wsz, G);
    const std::vector<i64> kernel = nn_rules::kernel_of(wa, wsz, ctx.node());
    window_attrs wa2 = wa;
    wa2.ceil_mode = false;
    const window_geometry g = resolve_window(wa2, {xs.begin() + 2, xs.end()}, kernel, ctx.node());
    const i64 N = xs[0], C = xs[1], M = wsz[0];
    std::vector<i64> ys{N, M};
    ys.insert(ys.end(), g.out.begin(), g.out.end());
    const cuda_tensor* bias = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    if (bias && bias->size() != M) ctx.fail("bias has " + std::to_string(bias->size()) + " elements, expected " + std::to_string(M));
    if (bias && bias->element_type() != t) ctx.fail("bias has a different element type");
    const cuda_tensor* z = fused && ctx.has_input(3) ? &ctx.input(3) : nullptr;
    auto& y = ctx.allocate_output(0, t, ys);
    if (z && (z->sizes() != y.sizes() || z->element_type() != t))
      ctx.fail("the added input has shape " + shape::of(z->sizes()).to_string() + ", the result " + shape::of(ys).to_string());
    if (y.size() == 0) return;
    auto& pol = ctx.policy();
    if (C == 0) {  // no input channels: the bias alone (cuDNN takes no empty tensors)
      pol.fill_zero(y, ctx.stream());
      if (bias) {
        std::vector<i64> bs(ys.size(), 1);
        bs[1] = M;
        const cuda_tensor bv = bias->reshaped(bs);
        const cuda_tensor* xs1[] = {&bv};
        const auto& k = st->lib.get(pol, "copy," + std::string(to_string(t)), {"ew_flat", "ew_strided"},
                                    [&] { return cuda_codegen::elementwise_source({{t}, t, "r = x0;"}); });
        cuda_detail::launch_elementwise(ctx, k, y, xs1);
      }
      apply_activation(ctx, st->lib, y, z, act);
      return;
    }
    const std::size_t r = g.in.size();
    // asymmetric padding: pad the input explicitly (zeros) and convolve without padding
    bool symmetric = true;
    for (std::size_t d = 0; d < r; ++d) symmetric = symmetric && g.pad_begin[d] == g.pad_end[d];
    cuda_tensor xin = x;
    std::vector<i64> in = g.in, pads = g.pad_begin;
    if (!symmetric) {
      std::vector<i64> padded_in(r);
      for (std::size_t d = 0; d < r; ++d) padded_in[d] = g.in[d] + g.pad_begin[d] + g.pad_end[d];
      std::vector<i64> ps{N, C};
      ps.insert(ps.end(), padded_in.begin(), padded_in.end());
      xin = pol.allocate_tensor(t, ps, ctx.stream());
      const auto& k = st->lib.get(pol, "pool," + std::string(to_string(t)), pool_entries(), [&] { return pool_source(t); });
      pad_arg pa{};
      pa.planes = N * C;
      put3(pa.in, g.in, 1);
      put3(pa.out, padded_in, 1);
      put3(pa.pb, g.pad_begin, 0);
      const void* src = x.data();
      void* dst = xin.data();
      void* args[] = {&src, &dst, &pa};
      if (xin.size() > 0) pol.launch(k.kernels[4], pol.blocks_for(xin.size()), 256, args, ctx.stream());
      in = padded_in;
      pads.assign(r, 0);
    }
    // cuDNN descriptors: 1-D as 2-D with a leading spatial size of 1
    std::vector<int> xd{to_int(ctx, N), to_int(ctx, C)}, wd{to_int(ctx, M), to_int(ctx, wsz[1])}, yd{to_int(ctx, N), to_int(ctx, M)};
    std::vector<int> pad, stride, dil;
    if (r == 1) {
      xd.push_back(1);
      wd.push_back(1);
      yd.push_back(1);
      pad.push_back(0);
      stride.push_back(1);
      dil.push_back(1);
    }
    for (std::size_t d = 0; d < r; ++d) {
      xd.push_back(to_int(ctx, in[d]));
      wd.push_back(to_int(ctx, kernel[d]));
      yd.push_back(to_int(ctx, g.out[d]));
      pad.push_back(to_int(ctx, pads[d]));
      stride.push_back(to_int(ctx, g.strides[d]));
      dil.push_back(to_int(ctx, g.dilations[d]));
    }
    cuda_detail::device_guard dg(pol.device());  // before any cuDNN call (the algorithm search too)
    auto [h, lock] = pol.cudnn();
    const bool tf32 = pol.config().allow_tf32;
    std::lock_guard state_lock(st->mu);
    conv_plan& p = plan_of(*st, dnn_key(t, tf32, {&xd, &wd, &yd, &pad, &stride, &dil}),
                           [&] { return make_conv_plan(h, ctx, t, xd, wd, yd, pad, stride, dil, static_cast<int>(G), tf32); });
    const std::shared_ptr<std::byte> workspace = pol.workspace(p.workspace);
    const dnn_scaling scale(t);
    const void* one = scale.one();
    const void* zero = scale.zero();
    // conv, then bias + residual + activation in one generated kernel
    auto separate = [&] {
      dnn_check(cudnnConvolutionForward(h, one, p.x, xin.data(), p.w, w.data(), p.conv, p.algo, workspace.get(), p.workspace, zero,
                                        p.y, y.data()),
                "cudnnConvolutionForward");
      apply_conv_epilogue(ctx, st->lib, y, bias, z, act);
    };
    // conv + bias + residual + ReLU (or nothing) in one cuDNN call where it has the form
    // y = act(conv(x) + alpha2 z + b) (the identity activation needs the precomputed implicit
    // GEMM; f32 only: the form measured on a GPU)
    const bool relu = act.k == fused_act::kind::relu;
    if (!(t == dtype::f32 && bias && (relu || (act.k == fused_act::kind::none && z && p.algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM)))) {
      separate();
      return;
    }
    if (!p.relu) {
      dnn_check(cudnnCreateActivationDescriptor(&p.relu), "cudnnCreateActivationDescriptor");
      dnn_check(cudnnSetActivationDescriptor(p.relu, relu ? CUDNN_ACTIVATION_RELU : CUDNN_ACTIVATION_IDENTITY, CUDNN_NOT_PROPAGATE_NAN, 0.0),
                "cudnnSetActivationDescriptor");
    }
    auto fused_call = [&] {
      const void* alpha2 = z ? one : zero;
      dnn_check(cudnnConvolutionBiasActivationForward(h, one, p.x, xin.data(), p.w, w.data(), p.conv, p.algo, workspace.get(),
                                                      p.workspace, alpha2, p.y, z ? z->data() : y.data(), p.b, bias->data(), p.relu,
                                                      p.y, y.data()),
                "cudnnConvolutionBiasActivationForward");
    };
    // which form is faster depends on the shape and the GPU (cuDNN's fused call may not run the
    // algorithm the search picked): both are timed once per shape, as the algorithm was (not
    // while a CUDA graph is captured, which cannot wait for a timing)
    using choice = cuda::options::epilogue;
    if (p.epilogue < 0) {
      const choice c = pol.config().conv_epilogue;
      if (c == choice::cudnn_fused || (c == choice::timed && pol.capturing())) p.epilogue = 0;
      else if (c == choice::separate) p.epilogue = 1;
      else p.epilogue = time_on_stream(ctx, fused_call) <= time_on_stream(ctx, separate) ? 0 : 1;
    }
    if (p.epilogue == 0) fused_call();
    else separate();
  };
}

// ---- ConvTranspose (cuDNN's backward data) ---------------------------------------------------

/// The cuDNN dims of a convolution-like geometry: 1-D as 2-D with a leading spatial size of 1.
struct dnn_dims {
  std::vector<int> x, w, y, pad, stride, dil;
};

inline fn make_conv_transpose(const kernel_node& n) {
  window_attrs wa = window_attrs::read(n);
  wa.ceil_mode = false;
  const i64 G = n.attr<i64>("group", 1);
  const std::vector<i64> output_padding = n.attr<std::vector<i64>>("output_padding", {});
  const std::vector<i64> output_shape = n.attr<std::vector<i64>>("output_shape", {});
  auto st = std::make_shared<conv_state>();
  return [=](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    const cuda_tensor& w = ctx.input(1);
    const dtype t = x.element_type();
    if (w.element_type() != t) ctx.fail("ConvTranspose X and W have different element types");
    if (!cuda_codegen::is_float(t)) ctx.fail("no CUDA transposed convolution for element type " + std::string(to_string(t)));
    const auto& xs = x.sizes();
    const auto& wsz = w.sizes();
    if (xs.size() < 3) ctx.fail("input must have rank >= 3 (N, C, spatial...), got " + shape::of(xs).to_string());
    if (wsz.size() != xs.size())
      ctx.fail("weight rank " + std::to_string(wsz.size()) + " differs from input rank " + std::to_string(xs.size()));
    if (G <= 0) ctx.fail("group must be positive");
    if (xs.size() > 5) ctx.fail("the CUDA transposed convolution takes 1 to 3 spatial dimensions, got " + std::to_string(xs.size() - 2));
    if (wsz[0] != xs[1]) ctx.fail("input has " + std::to_string(xs[1]) + " channels but weight has " + std::to_string(wsz[0]));
    if (xs[1] % G != 0) ctx.fail("input channels not divisible by group " + std::to_string(G));
    std::vector<i64> kernel(wsz.begin() + 2, wsz.end());
    for (i64 v : kernel)
      if (v <= 0) ctx.fail("weight has an empty spatial dimension: " + shape::of(wsz).to_string());
    if (!wa.kernel.empty() && wa.kernel != kernel)
      ctx.fail("kernel_shape " + shape::of(wa.kernel).to_string() + " differs from the weight's " + shape::of(kernel).to_string());
    const window_geometry g = shape_rules::resolve_transpose_window(wa, output_padding, output_shape, {xs.begin() + 2, xs.end()}, kernel,
                                                                    ctx.node());
    const i64 N = xs[0], C = xs[1], M = mul_or_throw(wsz[1], G, "output channels");
    std::vector<i64> ys{N, M};
    ys.insert(ys.end(), g.out.begin(), g.out.end());
    const cuda_tensor* bias = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    if (bias && bias->size() != M) ctx.fail("bias has " + std::to_string(bias->size()) + " elements, expected " + std::to_string(M));
    if (bias && bias->element_type() != t) ctx.fail("bias has a different element type");
    auto& y = ctx.allocate_output(0, t, ys);
    if (y.size() == 0) return;
    auto& pol = ctx.policy();
    const std::size_t r = g.in.size();
    // what the product covers before the pads crop it (output_padding adds zeros after it)
    std::vector<i64> full(r);
    bool direct = true, empty = C == 0 || x.size() == 0;
    for (std::size_t d = 0; d < r; ++d) {
      full[d] = g.strides[d] * (g.in[d] - 1) + g.effective(d);
      empty = empty || g.in[d] == 0;
      // cuDNN's backward data writes y of size out from pads p = pad_begin = pad_end when
      // floor((out + 2p - effective) / stride) + 1 is the input size (output_padding < stride)
      const bool symmetric = g.pad_begin[d] == g.pad_end[d] && g.pad_begin[d] >= 0 && g.pad_begin[d] <= INT_MAX;
      const i64 span = symmetric ? g.out[d] + 2 * g.pad_begin[d] - g.effective(d) : -1;
      direct = direct && symmetric && span >= 0 && span / g.strides[d] + 1 == g.in[d];
    }
    const fused_act none{};
    if (empty) {  // nothing to add up: the bias alone
      pol.fill_zero(y, ctx.stream());
      apply_conv_epilogue(ctx, st->lib, y, bias, nullptr, none);
      return;
    }
    // the product's own output: y itself, or the uncropped result the pads then crop
    std::vector<i64> ps{N, M};
    ps.insert(ps.end(), full.begin(), full.end());
    cuda_tensor yfull = direct ? y : pol.allocate_tensor(t, ps, ctx.stream());
    const std::vector<i64>& yspatial = direct ? g.out : full;
    dnn_dims dd;
    dd.x = {to_int(ctx, N), to_int(ctx, C)};
    dd.w = {to_int(ctx, wsz[0]), to_int(ctx, wsz[1])};
    dd.y = {to_int(ctx, N), to_int(ctx, M)};
    if (r == 1) {
      for (auto* v : {&dd.x, &dd.w, &dd.y}) v->push_back(1);
      dd.pad.push_back(0);
      dd.stride.push_back(1);
      dd.dil.push_back(1);
    }
    for (std::size_t d = 0; d < r; ++d) {
      dd.x.push_back(to_int(ctx, g.in[d]));
      dd.w.push_back(to_int(ctx, kernel[d]));
      dd.y.push_back(to_int(ctx, yspatial[d]));
      dd.pad.push_back(to_int(ctx, direct ? g.pad_begin[d] : 0));
      dd.stride.push_back(to_int(ctx, g.strides[d]));
      dd.dil.push_back(to_int(ctx, g.dilations[d]));
    }
    {
      cuda_detail::device_guard dg(pol.device());
      auto [h, lock] = pol.cudnn();
      const bool tf32 = pol.config().allow_tf32;
      std::lock_guard state_lock(st->mu);
      conv_plan& p = plan_of(*st, dnn_key(t, tf32, {&dd.x, &dd.w, &dd.y, &dd.pad, &dd.stride, &dd.dil}), [&] {
        return make_deconv_plan(h, ctx, t, dd.x, dd.w, dd.y, dd.pad, dd.stride, dd.dil, static_cast<int>(G), tf32);
      });
      const std::shared_ptr<std::byte> workspace = pol.workspace(p.workspace);
      const dnn_scaling scale(t);
      dnn_check(cudnnConvolutionBackwardData(h, scale.one(), p.w, w.data(), p.y, x.data(), p.conv, p.bwd_data_algo, workspace.get(),
                                             p.workspace, scale.zero(), p.x, yfull.data()),
                "cudnnConvolutionBackwardData");
    }
    if (!direct) {  // y[o] = full[o + pad_begin] where that lies inside, else 0
      const auto& k = st->lib.get(pol, "pool," + std::string(to_string(t)), pool_entries(), [&] { return pool_source(t); });
      pad_arg pa{};
      pa.planes = N * M;
      put3(pa.in, full, 1);
      put3(pa.out, g.out, 1);
      std::vector<i64> crop(r);
      for (std::size_t d = 0; d < r; ++d) crop[d] = -g.pad_begin[d];
      put3(pa.pb, crop, 0);
      const void* src = yfull.data();
      void* dst = y.data();
      void* args[] = {&src, &dst, &pa};
      pol.launch(k.kernels[4], pol.blocks_for(y.size()), 256, args, ctx.stream());
    }
    apply_conv_epilogue(ctx, st->lib, y, bias, nullptr, none);
  };
}

// ---- convolution filter gradients (cuDNN's backward filter) ---------------------------------

/// A filter-gradient plan: dw of y = conv(x, w) from x and dy, the descriptors those of that
/// convolution and the algorithm cuDNN's backward-filter one (timed, as the forward's).
inline std::unique_ptr<conv_plan> make_wgrad_plan(cudnnHandle_t h, const context& ctx, dtype t, const dnn_dims& dd, int G, bool tf32) {
  const bool exact = t == dtype::f32 && !tf32;
  auto p = describe_conv(ctx, t, dd.x, dd.w, dd.y, dd.pad, dd.stride, dd.dil, G, exact);
  cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
  int returned = 0;
  if (cudnnFindConvolutionBackwardFilterAlgorithm(h, p->x, p->y, p->conv, p->w, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &returned, perf) !=
      CUDNN_STATUS_SUCCESS)
    dnn_check(cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, p->x, p->y, p->conv, p->w, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &returned,
                                                            perf),
              "cudnnGetConvolutionBackwardFilterAlgorithm_v7");
  std::tie(p->bwd_filter_algo, p->workspace) = pick_algorithm(
      perf, returned, exact, p->conv, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1,
      [&](cudnnConvolutionBwdFilterAlgo_t a, std::size_t* ws) {
        return cudnnGetConvolutionBackwardFilterWorkspaceSize(h, p->x, p->y, p->conv, p->w, a, ws);
      },
      "cudnnGetConvolutionBackwardFilterWorkspaceSize");
  return p;
}

/// The window of a 2-D or 3-D convolution whose filter gradient `conv_filter_grad` takes, per
/// spatial dimension: the filter's sizes, strides, dilations, the cells of zeros before the
/// input; and the groups.
struct conv_window {
  std::vector<i64> k, stride, dil, pad;
  i64 G = 1;
};

/// dw [M, C / G, k...] of the 2-D or 3-D convolution y = conv(x, w) with x [N, C, spatial...]
/// and its output gradient dy [N, M, out spatial...] (all channels first, non-empty): the
/// windows start `pad` cells before the input and read zeros outside it. Where the zeros
/// before and after the input differ (TensorFlow's SAME, EXPLICIT pads) or cells at its end
/// are never read, the input is first copied into the exact extent the windows cover, which
/// cuDNN then reads unpadded.
inline void conv_filter_grad(context& ctx, conv_state& st, const cuda_tensor& x, const cuda_tensor& dy, cuda_tensor& dw, const conv_window& cw) {
  const dtype t = x.element_type();
  auto& pol = ctx.policy();
  const std::size_t r = cw.k.size();
  const i64 N = x.sizes()[0], C = x.sizes()[1], M = dy.sizes()[1];
  const std::vector<i64> in(x.sizes().begin() + 2, x.sizes().end()), out(dy.sizes().begin() + 2, dy.sizes().end());
  // the extent the windows cover, from the first window's start
  std::vector<i64> span(r);
  bool direct = true;
  for (std::size_t d = 0; d < r; ++d) {
    span[d] = (out[d] - 1) * cw.stride[d] + (cw.k[d] - 1) * cw.dil[d] + 1;
    direct = direct && cw.pad[d] >= 0 && span[d] - cw.pad[d] - in[d] == cw.pad[d];
  }
  cuda_tensor xin = x;
  if (!direct) {
    std::vector<i64> ps{N, C};
    ps.insert(ps.end(), span.begin(), span.end());
    xin = pol.allocate_tensor(t, ps, ctx.stream());
    const auto& k = st.lib.get(pol, "pool," + std::string(to_string(t)), pool_entries(), [&] { return pool_source(t); });
    pad_arg pa{};
    pa.planes = N * C;
    put3(pa.in, in, 1);
    put3(pa.out, span, 1);
    put3(pa.pb, cw.pad, 0);
    const void* src = x.data();
    void* dst = xin.data();
    void* args[] = {&src, &dst, &pa};
    pol.launch(k.kernels[4], pol.blocks_for(xin.size()), 256, args, ctx.stream());
  }
  dnn_dims dd;
  dd.x = {to_int(ctx, N), to_int(ctx, C)};
  dd.w = {to_int(ctx, M), to_int(ctx, C / cw.G)};
  dd.y = {to_int(ctx, N), to_int(ctx, M)};
  for (std::size_t d = 0; d < r; ++d) {
    dd.x.push_back(to_int(ctx, direct ? in[d] : span[d]));
    dd.w.push_back(to_int(ctx, cw.k[d]));
    dd.y.push_back(to_int(ctx, out[d]));
    dd.pad.push_back(to_int(ctx, direct ? cw.pad[d] : 0));
    dd.stride.push_back(to_int(ctx, cw.stride[d]));
    dd.dil.push_back(to_int(ctx, cw.dil[d]));
  }
  cuda_detail::device_guard dg(pol.device());
  auto [h, lock] = pol.cudnn();
  const bool tf32 = pol.config().allow_tf32;
  std::lock_guard state_lock(st.mu);
  conv_plan& p = plan_of(st, dnn_key(t, tf32, {&dd.x, &dd.w, &dd.y, &dd.pad, &dd.stride, &dd.dil}),
                         [&] { return make_wgrad_plan(h, ctx, t, dd, to_int(ctx, cw.G), tf32); });
  const std::shared_ptr<std::byte> workspace = pol.workspace(p.workspace);
  const dnn_scaling scale(t);
  dnn_check(cudnnConvolutionBackwardFilter(h, scale.one(), p.x, xin.data(), p.y, dy.data(), p.conv, p.bwd_filter_algo, workspace.get(),
                                           p.workspace, scale.zero(), p.w, dw.data()),
            "cudnnConvolutionBackwardFilter");
}

// ---- generated sources (for tests) ----------------------------------------------------------

/// Every generated source of this family for each float type: (name, source).
inline std::vector<std::pair<std::string, std::string>> linalg_generated_sources() {
  std::vector<std::pair<std::string, std::string>> r;
  for (dtype t : float_types()) {
    const std::string ts(to_string(t));
    r.emplace_back("pool_" + ts, pool_source(t));
    r.emplace_back("gemm_beta_" + ts, scale_source(t, 0.5));
    for (int k = 0; k <= static_cast<int>(fused_act::kind::hard_sigmoid); ++k) {
      fused_act a{{static_cast<fused_activation::kind>(k), 0.1, 0.9}};
      if (a.k == fused_act::kind::clip) a.a = -std::numeric_limits<double>::infinity();
      r.emplace_back("act" + std::to_string(k) + "_" + ts, activation_source(t, a));
    }
  }
  return r;
}

}  // namespace cuda_linalg

/// Registers MatMul, com.microsoft FusedMatMul (without transBatchA / transBatchB), Gemm, FusedGemm (domains gpass and com.microsoft), Conv, FusedConv
/// (both domains), ConvTranspose, MaxPool, AveragePool, LpPool, GlobalMaxPool,
/// GlobalAveragePool and GlobalLpPool.
inline void register_cuda_linalg(kernel_registry<cuda>& r) {
  using namespace cuda_linalg;
  const auto ft = float_types();
  r.add({.domain = "", .op = "MatMul", .dtypes = ft, .make = [](const kernel_node& n) { return make_matmul(n); }});
  r.add({.domain = "com.microsoft", .op = "FusedMatMul", .dtypes = ft, .make = make_fused_matmul, .applies = [](const kernel_query& q) {
           if (!q.attrs) return true;
           return get_or(*q.attrs, "transBatchA", i64{0}) == 0 && get_or(*q.attrs, "transBatchB", i64{0}) == 0;
         }});
  r.add({.domain = "", .op = "Gemm", .dtypes = ft, .make = [](const kernel_node& n) { return make_gemm(n, false); }});
  r.add({.domain = "", .op = "Conv", .dtypes = ft, .make = [](const kernel_node& n) { return make_conv(n, false); }});
  r.add({.domain = "", .op = "ConvTranspose", .dtypes = ft, .make = [](const kernel_node& n) { return make_conv_transpose(n); }});
  for (const char* domain : {"gpass", "com.microsoft"}) {
    r.add({.domain = domain, .op = "FusedGemm", .dtypes = ft, .make = [](const kernel_node& n) { return make_gemm(n, true); }});
    r.add({.domain = domain, .op = "FusedConv", .dtypes = ft, .make = [](const kernel_node& n) { return make_conv(n, true); }});
  }
  r.add({.domain = "", .op = "MaxPool", .dtypes = ft, .make = [](const kernel_node& n) { return make_pool(n, pool_mode::max); }});
  r.add({.domain = "", .op = "AveragePool", .dtypes = ft, .make = [](const kernel_node& n) { return make_pool(n, pool_mode::average); }});
  r.add({.domain = "", .op = "LpPool", .dtypes = ft, .make = [](const kernel_node& n) { return make_pool(n, pool_mode::lp); }});
  r.add({.domain = "", .op = "GlobalMaxPool", .dtypes = ft, .make = [](const kernel_node& n) { return make_global_pool(n, pool_mode::max); }});
  r.add({.domain = "", .op = "GlobalAveragePool", .dtypes = ft, .make = [](const kernel_node& n) { return make_global_pool(n, pool_mode::average); }});
  r.add({.domain = "", .op = "GlobalLpPool", .dtypes = ft, .make = [](const kernel_node& n) { return make_global_pool(n, pool_mode::lp); }});
}

}  // namespace gpass::exec
