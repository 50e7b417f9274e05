// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file misc.hpp
/// Other ONNX ops: random generators (RandomNormal/Uniform[Like], Multinomial, Bernoulli;
/// stateful), window functions (Hann, Hamming, Blackman), DFT, STFT, MelWeightMatrix,
/// quantization (QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear), losses
/// (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss), StringNormalizer, TfIdfVectorizer.

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <gpass/ops/onnx/common.hpp>

namespace gpass {

/// Registers the other ONNX ops into `r` (see the file comment).
void register_onnx_misc_ops(op_registry& r);

namespace detail::onnx_ops {

using namespace gpass::onnx_shape;

inline void random_infer(infer_context& c) {
  dtype d = c.attr_dtype("dtype").value_or(dtype::f32);
  auto s = c.attr_ints("shape");
  c.set_tensor(0, d, s ? shape::of(*s) : shape());
}

inline void random_like_infer(infer_context& c) {
  dtype d = c.attr_dtype("dtype").value_or(c.input_dtype(0));
  c.set_tensor(0, d, c.input_shape(0));
}

// A scalar (or one-element) integer input as a dim.
inline dim scalar_dim(infer_context& c, std::size_t i) {
  if (auto d = c.input_dims(i); d && d->size() == 1) return (*d)[0];
  if (auto v = c.input_doubles(i); v && v->size() == 1) {
    const auto k = double_to_int64((*v)[0]);  // (casting NaN or 1e30 is UB)
    if (!k) c.fail("input " + std::to_string(i) + " (" + std::to_string((*v)[0]) + ") is not a size (NaN, or past int64)");
    return dim(*k);
  }
  return dim();
}

inline void window_fn_infer(infer_context& c) {
  dtype d = c.attr_dtype("output_datatype").value_or(dtype::f32);
  c.set_tensor(0, d, shape{scalar_dim(c, 0)});
}

inline void dft_infer(infer_context& c) {
  shape s = c.input_shape(0);
  if (!s.has_rank()) return;
  if (s.rank() < 2) c.fail("input must have rank >= 2, got " + s.to_string());
  std::vector<dim> out = s.dims();
  out.back() = dim(2);
  std::int64_t ax = c.attr_int("axis", 1);
  if (c.opset() >= 20 || c.has_input(2)) {  // DFT-20
    ax = -2;
    if (c.has_input(2)) {
      auto v = c.input_ints(2);
      if (!v) return c.set_shape(0, shape::unknown_dims(s.rank()));
      if (v->size() != 1) c.fail("axis must be a scalar");
      ax = (*v)[0];
    }
  }
  std::size_t a = axis(c, ax, s.rank());
  if (a == s.rank() - 1) c.fail("axis must not be the last (complex) axis");
  dim n = c.has_input(1) ? scalar_dim(c, 1) : s[a];
  if (c.attr_int("onesided", 0) != 0 && c.attr_int("inverse", 0) == 0) n = n.is_known() ? dim(n.value() / 2 + 1) : dim();
  out[a] = n;
  c.set_shape(0, shape(std::move(out)));
}

inline void stft_infer(infer_context& c) {
  shape s = c.input_shape(0);
  dim step = scalar_dim(c, 1);
  dim flen = c.has_input(3) ? scalar_dim(c, 3) : dim();
  if (flen.is_unknown() && c.has_input(2)) {
    shape w = c.input_shape(2);
    if (w.has_rank() && w.rank() == 1) flen = w[0];
  }
  if (s.has_rank() && s.rank() != 3) c.fail("signal must be 3-D [batch, length, 1 or 2], got " + s.to_string());
  dim batch = s.has_rank() ? s[0] : dim(), frames;
  if (s.has_rank() && s.rank() >= 2 && s[1].is_known() && flen.is_known() && step.is_known() && step.value() > 0) {
    // as the kernels require (a negative frame length overflowed the difference, a longer one
    // than the signal gave one frame)
    if (flen.value() < 1 || flen.value() > s[1].value())
      c.fail("frame_length " + flen.to_string() + " must be in [1, " + s[1].to_string() + "] (the signal length)");
    frames = dim((s[1].value() - flen.value()) / step.value() + 1);
  }
  dim bins = flen;
  if (c.attr_int("onesided", 1) != 0) bins = flen.is_known() ? dim(flen.value() / 2 + 1) : dim();
  c.set_shape(0, shape{batch, frames, bins, dim(2)});
}

inline void loss_infer(infer_context& c) {
  shape x = c.input_shape(0), t = c.input_shape(1);
  std::string red = c.attr_string("reduction", "mean");
  if (red != "none") c.set_shape(0, shape::scalar());
  else if (t.has_rank()) c.set_shape(0, t);
  else if (x.has_rank() && x.rank() >= 2) {
    auto d = x.dims();
    d.erase(d.begin() + 1);
    c.set_shape(0, shape(std::move(d)));
  }
  if (x.has_rank() && x.rank() < 2) c.fail("input must have rank >= 2 (N, C, ...), got " + x.to_string());
  if (t.has_rank() && t.rank() < 1) c.fail("target must have rank >= 1 (N, ...), got " + t.to_string());
  if (x.has_rank() && t.has_rank()) {
    if (x.rank() != t.rank() + 1)
      c.fail("input of rank " + std::to_string(x.rank()) + " and target of rank " + std::to_string(t.rank()) +
             " (expected input rank = target rank + 1)");
    c.unify(x[0], t[0], "(batch of input and target)");
  }
  c.set_shape(1, x);  // SoftmaxCrossEntropyLoss's log_prob
}

}  // namespace detail::onnx_ops
}  // namespace gpass

inline void gpass::register_onnx_misc_ops(op_registry& r) {
  using namespace detail::onnx_ops;
  namespace ot = onnx_types;
  const auto fl = ot::floats();
  const op_traits random{.stateful = true};
  for (const char* n : {"RandomNormal", "RandomUniform"})
    onnx_op(n, 1).out("output:T").tc("T", fl).attr("dtype", "int", std::int64_t{1}).opt("seed", "float")
        .req("shape", "ints").attr("mean", "float", 0.0).attr("scale", "float", 1.0).attr("high", "float", 1.0)
        .attr("low", "float", 0.0).traits(random).infer(random_infer).add(r);
  for (const char* n : {"RandomNormalLike", "RandomUniformLike"})
    onnx_op(n, 1).in("input:T1").out("output:T2").tc("T1", ot::all()).tc("T2", fl).opt("dtype", "int")
        .opt("seed", "float").traits(random).infer(random_like_infer).add(r);
  onnx_op("Bernoulli", 15).in("input:T1").out("output:T2").tc("T1", fl).tc("T2", ot::all()).opt("dtype", "int")
      .opt("seed", "float").traits(random).infer(random_like_infer).add(r);
  onnx_op("Multinomial", 7).in("input:T1").out("output:T2").tc("T1", fl).tc("T2", ot::index())
      .attr("dtype", "int", std::int64_t{6}).attr("sample_size", "int", std::int64_t{1}).opt("seed", "float")
      .traits(random)
      .infer([](infer_context& c) {
        shape s = c.input_shape(0);
        if (s.has_rank() && s.rank() != 2) c.fail("input must be 2-D, got " + s.to_string());
        c.set_tensor(0, c.attr_dtype("dtype").value_or(dtype::int32),
                     shape{s.has_rank() ? s[0] : dim(), dim(c.attr_int("sample_size", 1))});
      })
      .add(r);

  for (const char* n : {"HannWindow", "HammingWindow", "BlackmanWindow"})
    onnx_op(n, 17).in("size:T1").out("output:T2").tc("T1", ot::index()).tc("T2", ot::numeric())
        .attr("output_datatype", "int", std::int64_t{1}).attr("periodic", "int", std::int64_t{1})
        .infer(window_fn_infer).add(r);
  onnx_op("DFT", 17).until(19).in("input:T1").in("dft_length?:T2").out("output:T1").tc("T1", fl).tc("T2", ot::index())
      .attr("axis", "int", std::int64_t{1}).attr("inverse", "int", std::int64_t{0}).attr("onesided", "int", std::int64_t{0})
      .infer(dft_infer).add(r);
  // DFT-20: the axis is input 2 (default -2)
  onnx_op("DFT", 20).in("input:T1").in("dft_length?:T2").in("axis?:i64").out("output:T1").tc("T1", fl)
      .tc("T2", ot::index()).attr("inverse", "int", std::int64_t{0}).attr("onesided", "int", std::int64_t{0})
      .infer(dft_infer).add(r);
  onnx_op("STFT", 17).in("signal:T1").in("frame_step:T2").in("window?:T1").in("frame_length?:T2").out("output:T1")
      .tc("T1", fl).tc("T2", ot::index()).attr("onesided", "int", std::int64_t{1}).infer(stft_infer).add(r);
  onnx_op("MelWeightMatrix", 17).in("num_mel_bins:T1").in("dft_length:T1").in("sample_rate:T1")
      .in("lower_edge_hertz:T2").in("upper_edge_hertz:T2").out("output:T3").tc("T1", ot::index()).tc("T2", fl)
      .tc("T3", ot::numeric()).attr("output_datatype", "int", std::int64_t{1})
      .infer([](infer_context& c) {
        dim bins = scalar_dim(c, 0), n = scalar_dim(c, 1);
        c.set_tensor(0, c.attr_dtype("output_datatype").value_or(dtype::f32),
                     shape{n.is_known() ? dim(n.value() / 2 + 1) : dim(), bins});
      })
      .add(r);

  // QuantizeLinear-19 adds `saturate` (float8 targets), 21 blocked quantization
  // (`block_size`), `output_dtype` and 16-bit targets, 23 `precision`; DequantizeLinear-21
  // `block_size`, 23 `output_dtype`. The float8 / 4-bit / 2-bit types go through
  // gpass/core/low_precision.hpp.
  // `output_dtype` (0, the default, means "not given")
  const auto output_dtype = [](infer_context& c) -> std::optional<dtype> {
    const attribute* a = c.attr("output_dtype");
    if (!a || (a->is<std::int64_t>() && a->as<std::int64_t>() == 0)) return std::nullopt;
    return c.attr_dtype("output_dtype");
  };
  const auto quant_infer = [output_dtype](infer_context& c) {
    dtype d = dtype::uint8;
    if (c.has_input(2)) d = c.input_dtype(2);
    else if (auto o = output_dtype(c)) d = *o;
    c.set_tensor(0, d, c.input_shape(0));
  };
  const auto dequant_infer = [output_dtype](infer_context& c) {
    dtype d = c.input_dtype(1);
    if (is_low_precision(d)) d = dtype::f32;  // an f8e8m0 scale: float out unless output_dtype says
    if (auto o = output_dtype(c)) d = *o;
    c.set_tensor(0, d, c.input_shape(0));
  };
  const std::vector<dtype> q8{dtype::int8, dtype::uint8}, q16{dtype::int8, dtype::uint8, dtype::int16, dtype::uint16};
  const std::vector<dtype> qx{dtype::f32, dtype::f16, dtype::bf16, dtype::int32};
  onnx_op("QuantizeLinear", 10).until(18).in("x:T1").in("y_scale:T1").in("y_zero_point?:T2").out("y:T2").tc("T1", fl)
      .tc("T2", q8).attr("axis", "int", std::int64_t{1}).infer(quant_infer).add(r);
  onnx_op("QuantizeLinear", 19).until(20).in("x:T1").in("y_scale:T1").in("y_zero_point?:T2").out("y:T2").tc("T1", qx)
      .tc("T2", q8).attr("axis", "int", std::int64_t{1}).attr("saturate", "int", std::int64_t{1}).infer(quant_infer).add(r);
  onnx_op("QuantizeLinear", 21).until(22).in("x:T1").in("y_scale:T1").in("y_zero_point?:T2").out("y:T2").tc("T1", qx)
      .tc("T2", q16).attr("axis", "int", std::int64_t{1}).attr("block_size", "int", std::int64_t{0})
      .attr("output_dtype", "int", std::int64_t{0}).attr("saturate", "int", std::int64_t{1}).infer(quant_infer).add(r);
  onnx_op("QuantizeLinear", 23).in("x:T1").in("y_scale:T2").in("y_zero_point?:T3").out("y:T3").tc("T1", qx)
      .tc("T2", qx).tc("T3", q16).attr("axis", "int", std::int64_t{1}).attr("block_size", "int", std::int64_t{0})
      .attr("output_dtype", "int", std::int64_t{0}).attr("precision", "int", std::int64_t{0})
      .attr("saturate", "int", std::int64_t{1}).infer(quant_infer).add(r);
  const std::vector<dtype> dq{dtype::int8, dtype::uint8, dtype::int16, dtype::uint16, dtype::int32};
  const std::vector<dtype> dqs{dtype::f32, dtype::f16, dtype::bf16};
  onnx_op("DequantizeLinear", 10).until(20).in("x:T").in("x_scale:T2").in("x_zero_point?:T").out("y:T2")
      .tc("T", dq).tc("T2", dqs).attr("axis", "int", std::int64_t{1}).infer(dequant_infer).add(r);
  onnx_op("DequantizeLinear", 21).until(22).in("x:T").in("x_scale:T2").in("x_zero_point?:T").out("y:T2")
      .tc("T", dq).tc("T2", dqs).attr("axis", "int", std::int64_t{1}).attr("block_size", "int", std::int64_t{0})
      .infer(dequant_infer).add(r);
  onnx_op("DequantizeLinear", 23).in("x:T1").in("x_scale:T2").in("x_zero_point?:T1").out("y:T3")
      .tc("T1", dq).tc("T2", dqs).tc("T3", dqs).attr("axis", "int", std::int64_t{1})
      .attr("block_size", "int", std::int64_t{0}).attr("output_dtype", "int", std::int64_t{0})
      .infer(dequant_infer).add(r);
  onnx_op("DynamicQuantizeLinear", 11).in("x:f32").out("y:u8").out("y_scale:f32").out("y_zero_point:u8")
      .infer([](infer_context& c) {
        c.set_shape(0, c.input_shape(0));
        c.set_shape(1, shape::scalar());
        c.set_shape(2, shape::scalar());
      })
      .add(r);

  onnx_op("NegativeLogLikelihoodLoss", 12).in("input:T").in("target:Tind").in("weight?:T").out("loss:T").tc("T", fl)
      .tc("Tind", ot::index()).opt("ignore_index", "int").attr("reduction", "string", "mean").infer(loss_infer).add(r);
  onnx_op("SoftmaxCrossEntropyLoss", 12).in("scores:T").in("labels:Tind").in("weights?:T").out("output:T")
      .out("log_prob?:T").tc("T", fl).tc("Tind", ot::index()).opt("ignore_index", "int")
      .attr("reduction", "string", "mean").infer(loss_infer).add(r);

  onnx_op("StringNormalizer", 10).in("X:str").out("Y:str").attr("case_change_action", "string", "NONE")
      .attr("is_case_sensitive", "int", std::int64_t{0}).opt("locale", "string").opt("stopwords", "strings")
      .infer([](infer_context& c) {
        shape s = c.input_shape(0);
        auto words = c.attr("stopwords");
        dim n = s.has_rank() && !s.dims().empty() ? s[s.rank() - 1] : dim();
        if (words && words->is<std::vector<std::string>>() && !words->as<std::vector<std::string>>().empty())
          n = c.fresh_dim("0");
        if (!s.has_rank()) return;
        if (s.rank() == 1) c.set_shape(0, shape{n});
        else if (s.rank() == 2) c.set_shape(0, shape{dim(1), n});
        else c.fail("X must be [C] or [1, C], got " + s.to_string());
      })
      .add(r);
  onnx_op("StringConcat", 20).in("X:str").in("Y:str").out("Z:str").infer(numpy_broadcast).add(r);
  onnx_op("RegexFullMatch", 20).in("X:str").out("Y:bool").req("pattern", "string").infer(shape_as_input0).add(r);
  onnx_op("StringSplit", 20).in("X:str").out("Y:str").out("Z:i64").opt("delimiter", "string").opt("maxsplit", "int")
      .infer([](infer_context& c) {
        shape s = c.input_shape(0);
        if (!s.has_rank()) return;
        std::vector<dim> d = s.dims();
        c.set_shape(1, s);
        d.push_back(dim());  // the most pieces of any element: known when run
        c.set_shape(0, shape(std::move(d)));
      })
      .add(r);
  onnx_op("TfIdfVectorizer", 9).in("X:T").out("Y:f32").tc("T", {dtype::string, dtype::int32, dtype::int64})
      .req("max_gram_length", "int").req("max_skip_count", "int").req("min_gram_length", "int").req("mode", "string")
      .req("ngram_counts", "ints").req("ngram_indexes", "ints").opt("pool_int64s", "ints").opt("pool_strings", "strings")
      .opt("weights", "floats")
      .infer([](infer_context& c) {
        auto idx = c.attr_ints("ngram_indexes").value_or(std::vector<std::int64_t>{});
        std::int64_t n = 0;
        for (auto i : idx) {
          if (i == std::numeric_limits<std::int64_t>::max()) c.fail("ngram_indexes has " + std::to_string(i) + " (past int64 + 1)");
          n = std::max(n, i + 1);
        }
        shape s = c.input_shape(0);
        if (!s.has_rank()) return;
        if (s.rank() == 1) c.set_shape(0, shape{dim(n)});
        else if (s.rank() == 2) c.set_shape(0, shape{s[0], dim(n)});
        else c.fail("X must be 1-D or 2-D, got " + s.to_string());
      })
      .add(r);
}
