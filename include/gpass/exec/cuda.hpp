// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file cuda.hpp
/// The CUDA backend: the `gpass::exec::cuda` policy with its kernels (generated element-wise,
/// reduction and data-movement kernels compiled by NVRTC; cuBLASLt products (MatMul, Gemm,
/// com.microsoft FusedMatMul, Einsum's pairs); cuDNN convolutions and pooling; determinants; the
/// losses (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss); GridSample, AffineGrid and
/// RoiAlign; Col2Im and MaxUnpool; the normalizations (RMS, group, LRN), Hardmax, RotaryEmbedding
/// and inference Dropout; the window functions; QuantizeLinear, DequantizeLinear and
/// DynamicQuantizeLinear; MatMulInteger, QLinearMatMul, ConvInteger and QLinearConv; the
/// transformer fusions' SkipLayerNormalization and attention; ONNX Attention, TensorScatter,
/// SwiGLU, NonMaxSuppression, Unique, LinearAttention and
/// CausalConvWithState; TensorFlow's ops: element-wise,
/// views, products, reductions, convolutions and pools (2-D and 3-D) with their gradients, batch
/// norm in training, segments, bincounts, diagonals, random streams, resizes and crops, colour,
/// patches, the FFT family and complex parts, non-max suppressions, Unique, CTCGreedyDecoder), and `cuda_devices` for sessions. Part of the optional `cuda` component
/// (`find_package(gpass COMPONENTS cuda)`, target `gpass::cuda`); never included by
/// `<gpass/all.hpp>`.
/// \code
///   #include <gpass/exec/cuda.hpp>
///   gpass::session s(g, {.devices = gpass::cuda_devices()});   // GPU:0 first, CPU:0 for the rest
///   auto out = s.run({{"x", x}}, {"y"});
/// \endcode

#include <gpass/exec/cuda/graph.hpp>
#include <gpass/exec/cuda/kernels/array.hpp>
#include <gpass/exec/cuda/kernels/attention.hpp>
#include <gpass/exec/cuda/kernels/control.hpp>
#include <gpass/exec/cuda/kernels/det.hpp>
#include <gpass/exec/cuda/kernels/einsum.hpp>
#include <gpass/exec/cuda/kernels/elementwise.hpp>
#include <gpass/exec/cuda/kernels/fold.hpp>
#include <gpass/exec/cuda/kernels/globals.hpp>
#include <gpass/exec/cuda/kernels/grid.hpp>
#include <gpass/exec/cuda/kernels/linalg.hpp>
#include <gpass/exec/cuda/kernels/loss.hpp>
#include <gpass/exec/cuda/kernels/nms.hpp>
#include <gpass/exec/cuda/kernels/nn.hpp>
#include <gpass/exec/cuda/kernels/norm.hpp>
#include <gpass/exec/cuda/kernels/qlinear.hpp>
#include <gpass/exec/cuda/kernels/quant.hpp>
#include <gpass/exec/cuda/kernels/recurrent.hpp>
#include <gpass/exec/cuda/kernels/reduce.hpp>
#include <gpass/exec/cuda/kernels/resize.hpp>
#include <gpass/exec/cuda/kernels/rnn.hpp>
#include <gpass/exec/cuda/kernels/select.hpp>
#include <gpass/exec/cuda/kernels/sequence.hpp>
#include <gpass/exec/cuda/kernels/signal.hpp>
#include <gpass/exec/cuda/kernels/tf.hpp>
#include <gpass/exec/cuda/kernels/tf_array.hpp>
#include <gpass/exec/cuda/kernels/tf_batch_norm.hpp>
#include <gpass/exec/cuda/kernels/tf_color.hpp>
#include <gpass/exec/cuda/kernels/tf_ctc.hpp>
#include <gpass/exec/cuda/kernels/tf_fake_quant.hpp>
#include <gpass/exec/cuda/kernels/tf_image.hpp>
#include <gpass/exec/cuda/kernels/tf_matrix.hpp>
#include <gpass/exec/cuda/kernels/tf_nms.hpp>
#include <gpass/exec/cuda/kernels/tf_random.hpp>
#include <gpass/exec/cuda/kernels/tf_sparse.hpp>
#include <gpass/exec/cuda/kernels/tf_spectral.hpp>
#include <gpass/exec/cuda/kernels/transformer.hpp>
#include <gpass/exec/cuda/kernels/unique.hpp>
#include <gpass/exec/cuda/policy.hpp>
#include <gpass/exec/kernel.hpp>

#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace gpass::exec {

/// Adds every CUDA kernel family to `r`.
inline void register_cuda_kernels(kernel_registry<cuda>& r) {
  register_cuda_elementwise(r);
  register_cuda_control(r);
  register_cuda_globals(r);
  register_cuda_linalg(r);
  register_cuda_einsum(r);
  register_cuda_det(r);
  register_cuda_nn(r);
  register_cuda_loss(r);
  register_cuda_grid(r);
  register_cuda_fold(r);
  register_cuda_norm(r);
  register_cuda_quant(r);
  register_cuda_qlinear(r);
  register_cuda_array(r);
  register_cuda_reduce(r);
  register_cuda_transformer(r);
  register_cuda_attention(r);
  register_cuda_recurrent(r);
  register_cuda_nms(r);
  register_cuda_resize(r);
  register_cuda_select(r);
  register_cuda_unique(r);
  register_cuda_sequence(r);
  register_cuda_rnn(r);
  register_cuda_signal(r);
  register_cuda_tf(r);  // last: they reuse ONNX kernels registered above
  register_cuda_tf_array(r);
  register_cuda_tf_matrix(r);
  register_cuda_tf_sparse(r);
  register_cuda_tf_random(r);
  register_cuda_tf_image(r);
  register_cuda_tf_batch_norm(r);
  register_cuda_tf_fake_quant(r);
  register_cuda_tf_color(r);
  register_cuda_tf_spectral(r);
  register_cuda_tf_nms(r);
  register_cuda_tf_ctc(r);
}

/// Every source the kernel families generate, for representative types and attributes: (name,
/// source). What the tests compile with NVRTC for sm_80 and sm_90, and `bench_cuda
/// --kernel-set` times.
inline std::vector<std::pair<std::string, std::string>> cuda_generated_sources() {
  std::vector<std::pair<std::string, std::string>> r = cuda_detail::elementwise_generated_sources();
  for (auto&& part : {cuda_linalg::linalg_generated_sources(), cuda_nn::nn_generated_sources(), cuda_norm::norm_generated_sources(),
                      cuda_quant::quant_generated_sources(),
                      array_generated_sources(), cuda_globals::globals_generated_sources(),
                      reduce_generated_sources(), cuda_transformer::transformer_generated_sources(),
                      cuda_resize::resize_generated_sources(), cuda_select::select_generated_sources(),
                      cuda_unique::unique_generated_sources(),
                      cuda_rnn::rnn_generated_sources(), tf_generated_sources(), tf_array_generated_sources(),
                      tf_matrix_generated_sources(), tf_sparse_generated_sources(), einsum_generated_sources(),
                      tf_random_generated_sources(), tf_image_generated_sources(),
                      tf_batch_norm_generated_sources(), tf_fake_quant_generated_sources(),
                      tf_color_generated_sources(), det_generated_sources(), loss_generated_sources(), signal_generated_sources(),
                      qlinear_generated_sources(), grid_generated_sources(), fold_generated_sources(),
                      cuda_attention::attention_generated_sources(), cuda_recurrent::recurrent_generated_sources(), cuda_nms::nms_generated_sources(),
                      tf_spectral_generated_sources(), tf_nms_generated_sources(),
                      cuda_tf_ctc::ctc_generated_sources()})
    r.insert(r.end(), part.begin(), part.end());
  return r;
}

/// The ops whose CUDA kernels take complex values: TensorFlow's FFT family and complex parts,
/// and the ops that only move a buffer or make a constant (domain, op).
inline const std::set<std::pair<std::string, std::string>>& cuda_complex_ops() {
  static const std::set<std::pair<std::string, std::string>> s = [] {
    std::set<std::pair<std::string, std::string>> r;
    for (const char* op : {"Identity", "Reshape", "Squeeze", "Constant"}) r.emplace("", op);
    for (const char* op : {"Identity", "StopGradient", "Snapshot", "PreventGradient", "PlaceholderWithDefault", "EnsureShape", "Reshape",
                           "ExpandDims", "Squeeze", "Const"})
      r.emplace("tf", op);
    for (const auto& op : cuda_tf_spectral::complex_ops()) r.emplace("tf", op);
    return r;
  }();
  return s;
}

inline bool cuda::serves_types(const kernel_query& q) {
  using cuda_tf_spectral::is_complex;
  if (std::none_of(q.inputs.begin(), q.inputs.end(), is_complex) && std::none_of(q.outputs.begin(), q.outputs.end(), is_complex)) return true;
  return cuda_complex_ops().contains({std::string(q.domain), std::string(q.op)});
}

inline const kernel_registry<cuda>& cuda::kernels() const {
  static const kernel_registry<cuda> r = [] {
    kernel_registry<cuda> k;
    register_cuda_kernels(k);
    return k;
  }();
  return r;
}

}  // namespace gpass::exec
