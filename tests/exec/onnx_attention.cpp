// SPDX-License-Identifier: Apache-2.0
// Tests of the ONNX attention family: the Eigen CPU kernels of Attention, RMSNormalization,
// RotaryEmbedding, GroupNormalization, LinearAttention, CausalConvWithState and SwiGLU, and
// the shape functions of their schemas. Expected
// values are computed by hand or by a small independent loop written here from the ONNX
// operator definitions.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include <gpass/core/error.hpp>
#include <gpass/exec/eigen_cpu.hpp>
#include <gpass/io/text.hpp>
#include <gpass/passes/common/infer_shapes.hpp>

#include "kernel_fixture.hpp"

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_exec_onnx_attention {

namespace {

using gpass::attribute;
using gpass::attribute_map;
using gpass::tensor;
using gpass::exec::eigen_cpu;
using gpass::exec::kernel_node;
using gpass::exec::value;
using i64 = std::int64_t;

using fixture = gpass_test_exec::kernel_fixture<gpass::exec::register_eigen_cpu_attention, 0>;
using gpass_test_exec::attrs;
using gpass_test_exec::node;

std::vector<double> values(const tensor& t) {
  std::vector<double> r;
  for (i64 i = 0; i < t.size(); ++i) {
    if (t.element_type() == gpass::dtype::f32) r.push_back(t.values<float>()[i]);
    else if (t.element_type() == gpass::dtype::f64) r.push_back(t.values<double>()[i]);
    else if (t.element_type() == gpass::dtype::f16) r.push_back(static_cast<float>(t.values<Eigen::half>()[i]));
    else FAIL("unexpected dtype");
  }
  return r;
}

void check_close(const tensor& t, const std::vector<double>& want, double tol = 1e-5) {
  const auto got = values(t);
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    INFO("element " << i);
    CHECK(got[i] == doctest::Approx(want[i]).epsilon(tol).scale(1.0));
  }
}

std::vector<float> wave(i64 n, float scale = 1.0f, float shift = 0.0f) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (i64 i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = std::sin(static_cast<float>(i) * 0.37f + shift) * scale;
  return v;
}

/// Attention on 4-D (batch, heads, seq, head) arrays, straight from the ONNX definition:
/// scores Q K^T * scale, plus `bias(b, h, i, j)` (-inf masks), softmax, times V; KV head
/// h / (heads / kv_heads) serves query head h. A row with every key masked is zero.
template <class Bias>
std::vector<double> attention_ref(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v, i64 B,
                                  i64 H, i64 KH, i64 Sq, i64 T, i64 D, i64 Dv, double scale, Bias bias) {
  std::vector<double> y(static_cast<std::size_t>(B * H * Sq * Dv), 0.0);
  for (i64 b = 0; b < B; ++b)
    for (i64 h = 0; h < H; ++h) {
      const i64 kh = h / (H / KH);
      for (i64 i = 0; i < Sq; ++i) {
        std::vector<double> s(static_cast<std::size_t>(T));
        double m = -std::numeric_limits<double>::infinity();
        for (i64 j = 0; j < T; ++j) {
          double dot = 0;
          for (i64 d = 0; d < D; ++d)
            dot += q[static_cast<std::size_t>(((b * H + h) * Sq + i) * D + d)] * k[static_cast<std::size_t>(((b * KH + kh) * T + j) * D + d)];
          s[static_cast<std::size_t>(j)] = dot * scale + bias(b, h, i, j);
          m = std::max(m, s[static_cast<std::size_t>(j)]);
        }
        if (std::isinf(m)) continue;
        double sum = 0;
        for (double& x : s) sum += (x = std::exp(x - m));
        for (i64 j = 0; j < T; ++j)
          for (i64 d = 0; d < Dv; ++d)
            y[static_cast<std::size_t>(((b * H + h) * Sq + i) * Dv + d)] +=
                s[static_cast<std::size_t>(j)] / sum * v[static_cast<std::size_t>(((b * KH + kh) * T + j) * Dv + d)];
      }
    }
  return y;
}

constexpr double inf = std::numeric_limits<double>::infinity();

using G = gpass::graph<>;

// The type of output `port` of node `y` after infer-shapes on `body` at `opset`, or the error.
std::string inferred(std::string_view body, int opset, std::size_t port = 0) {
  std::string text = "graph {opset_import = [\":" + std::to_string(opset) + "\"]} {\n" + std::string(body) + "\n}\n";
  try {
    G g = gpass::parse_text(text);
    gpass::pass_context ctx;
    gpass::infer_shapes(g, ctx);
    return g[g.at("y")].outputs.at(port).to_string();
  } catch (const gpass::error& e) {
    return e.what();
  }
}

}  // namespace

// ---- Attention ------------------------------------------------------------------------

TEST_CASE("exec.onnx_attention.causal_by_hand") {
  fixture f;
  // one head, head size 1: scale 1/sqrt(1); query 0 sees key 0 only, query 1 keys 0 and 1
  auto q = tensor::from<float>({1, 2}, {1, 1, 2, 1});
  auto k = tensor::from<float>({1, 3}, {1, 1, 2, 1});
  auto v = tensor::from<float>({10, 20}, {1, 1, 2, 1});
  auto y = f.run(node("Attention", 23, 1, attrs({{"is_causal", i64{1}}})), {q, k, v})[0].tensor();
  CHECK(y.sizes() == std::vector<i64>{1, 1, 2, 1});
  const double p1 = 1.0 / (1.0 + std::exp(2.0 - 6.0));  // softmax of (2, 6), second
  check_close(y, {10.0, 10.0 * (1 - p1) + 20.0 * p1});
  // without the causal mask query 0 sees both keys: scores (1, 3)
  auto full = f.run(node("Attention", 23), {q, k, v})[0].tensor();
  const double p0 = 1.0 / (1.0 + std::exp(1.0 - 3.0));
  check_close(full, {10.0 * (1 - p0) + 20.0 * p0, 10.0 * (1 - p1) + 20.0 * p1});
}

TEST_CASE("exec.onnx_attention.gqa_3d_matches_reference") {
  fixture f;
  // 3-D inputs: 4 query heads over 2 key/value heads, head size 3, value head size 2
  const i64 B = 2, H = 4, KH = 2, Sq = 3, S = 5, D = 3, Dv = 2;
  auto q4 = wave(B * H * Sq * D), k4 = wave(B * KH * S * D, 1.0f, 0.5f), v4 = wave(B * KH * S * Dv, 2.0f, 1.0f);
  // the 3-D forms: (batch, seq, heads * head)
  auto to3 = [](const std::vector<float>& x, i64 b, i64 h, i64 s, i64 d) {
    std::vector<float> r(x.size());
    for (i64 i = 0; i < b; ++i)
      for (i64 j = 0; j < h; ++j)
        for (i64 t = 0; t < s; ++t)
          for (i64 e = 0; e < d; ++e)
            r[static_cast<std::size_t>(((i * s + t) * h + j) * d + e)] = x[static_cast<std::size_t>(((i * h + j) * s + t) * d + e)];
    return r;
  };
  auto n = node("Attention", 23, 1, attrs({{"q_num_heads", H}, {"kv_num_heads", KH}}));
  auto y = f.run(n, {tensor::from<float>(to3(q4, B, H, Sq, D), {B, Sq, H * D}), tensor::from<float>(to3(k4, B, KH, S, D), {B, S, KH * D}),
                     tensor::from<float>(to3(v4, B, KH, S, Dv), {B, S, KH * Dv})})[0]
               .tensor();
  CHECK(y.sizes() == std::vector<i64>{B, Sq, H * Dv});
  auto want4 = attention_ref(q4, k4, v4, B, H, KH, Sq, S, D, Dv, 1 / std::sqrt(3.0), [](i64, i64, i64, i64) { return 0.0; });
  std::vector<float> w(want4.begin(), want4.end());
  auto want3 = to3(w, B, H, Sq, Dv);
  check_close(y, std::vector<double>(want3.begin(), want3.end()), 1e-5);
  // the same on 4-D inputs, and with two threads
  fixture two(2);
  auto y4 = two.run(node("Attention", 24), {tensor::from<float>(q4, {B, H, Sq, D}), tensor::from<float>(k4, {B, KH, S, D}),
                                            tensor::from<float>(v4, {B, KH, S, Dv})})[0]
                .tensor();
  check_close(y4, want4, 1e-5);
}

TEST_CASE("exec.onnx_attention.masks_and_qk_output_modes") {
  fixture f;
  const i64 B = 1, H = 2, Sq = 2, S = 3, D = 2;
  auto q = wave(B * H * Sq * D), k = wave(B * H * S * D, 1.0f, 0.3f), v = wave(B * H * S * D, 1.0f, 0.7f);
  const auto qt = tensor::from<float>(q, {B, H, Sq, D}), kt = tensor::from<float>(k, {B, H, S, D}), vt = tensor::from<float>(v, {B, H, S, D});
  const double scale = 1 / std::sqrt(2.0);
  // boolean mask (q_seq, kv_seq): row 1 masks everything, so its output row is zero, not NaN
  auto mask = tensor::from<bool>({true, false, true, false, false, false}, {2, 3});
  auto out = f.run(node("Attention", 24, 4, attrs({{"qk_matmul_output_mode", i64{3}}})), {qt, kt, vt, mask, value{}, value{}, value{}});
  auto bias = [](i64, i64, i64 i, i64 j) { return i == 0 && j != 1 ? 0.0 : -inf; };
  check_close(out[0].tensor(), attention_ref(q, k, v, B, H, H, Sq, S, D, D, scale, bias));
  // mode 3: the probabilities, zero for the fully masked row
  auto probs = values(out[3].tensor());
  REQUIRE(probs.size() == 12u);
  CHECK(probs[0] + probs[2] == doctest::Approx(1.0));
  CHECK(probs[1] == 0.0);
  for (int j = 3; j < 6; ++j) CHECK(probs[static_cast<std::size_t>(j)] == 0.0);
  // a float mask is added; mode 2 exposes the scores plus the mask, mode 0 the raw scores
  auto fmask = tensor::from<float>({0.5f, -1.0f, 0.0f}, {3});
  auto m2 = f.run(node("Attention", 23, 4, attrs({{"qk_matmul_output_mode", i64{2}}})), {qt, kt, vt, fmask})[3].tensor();
  auto m0 = f.run(node("Attention", 23, 4), {qt, kt, vt, fmask})[3].tensor();
  const auto s0 = values(m0), s2 = values(m2);
  double dot = 0;
  for (i64 d = 0; d < D; ++d) dot += q[static_cast<std::size_t>(d)] * k[static_cast<std::size_t>(d)];
  CHECK(s0[0] == doctest::Approx(dot * scale));
  for (std::size_t i = 0; i < s0.size(); ++i) CHECK(s2[i] == doctest::Approx(s0[i] + std::vector<double>{0.5, -1.0, 0.0}[i % 3]));
  // softcap: mode 1 is capped, mode 0 stays raw
  auto m1 = f.run(node("Attention", 23, 4, attrs({{"qk_matmul_output_mode", i64{1}}, {"softcap", 0.1}})), {qt, kt, vt})[3].tensor();
  auto m0c = f.run(node("Attention", 23, 4, attrs({{"softcap", 0.1}})), {qt, kt, vt})[3].tensor();
  const auto s1 = values(m1), s0c = values(m0c);
  for (std::size_t i = 0; i < s1.size(); ++i) {
    CHECK(s1[i] == doctest::Approx(0.1 * std::tanh(s0[i] / 0.1)));
    CHECK(s0c[i] == doctest::Approx(s0[i]));
  }
}

TEST_CASE("exec.onnx_attention.past_present_and_nonpad") {
  fixture f;
  const i64 B = 2, H = 1, Sq = 2, S = 2, P = 3, D = 2, T = P + S;
  auto q = wave(B * H * Sq * D), k = wave(B * H * S * D, 1.0f, 0.2f), v = wave(B * H * S * D, 1.0f, 0.4f);
  auto pk = wave(B * H * P * D, 1.0f, 0.6f), pv = wave(B * H * P * D, 1.0f, 0.8f);
  auto out = f.run(node("Attention", 23, 3, attrs({{"is_causal", i64{1}}})),
                   {tensor::from<float>(q, {B, H, Sq, D}), tensor::from<float>(k, {B, H, S, D}), tensor::from<float>(v, {B, H, S, D}), value{},
                    tensor::from<float>(pk, {B, H, P, D}), tensor::from<float>(pv, {B, H, P, D})});
  // present: the cache then this step's keys, per (batch, head)
  std::vector<float> kc, vc;
  for (i64 b = 0; b < B; ++b) {
    kc.insert(kc.end(), pk.begin() + b * P * D, pk.begin() + (b + 1) * P * D);
    kc.insert(kc.end(), k.begin() + b * S * D, k.begin() + (b + 1) * S * D);
    vc.insert(vc.end(), pv.begin() + b * P * D, pv.begin() + (b + 1) * P * D);
    vc.insert(vc.end(), v.begin() + b * S * D, v.begin() + (b + 1) * S * D);
  }
  CHECK(out[1].tensor().sizes() == std::vector<i64>{B, H, T, D});
  check_close(out[1].tensor(), std::vector<double>(kc.begin(), kc.end()), 1e-12);
  check_close(out[2].tensor(), std::vector<double>(vc.begin(), vc.end()), 1e-12);
  // causal with a cache is offset by the past length: query i sees keys j <= i + 3
  auto causal = [&](i64, i64, i64 i, i64 j) { return j <= i + P ? 0.0 : -inf; };
  check_close(out[0].tensor(), attention_ref(q, kc, vc, B, H, H, Sq, T, D, D, 1 / std::sqrt(2.0), causal));
  // an external cache: nonpad_kv_seqlen (3, 1) pads keys and offsets the causal mask by len - q_seq
  auto lens = tensor::from<i64>({3, 1}, {B});
  auto y = f.run(node("Attention", 24, 1, attrs({{"is_causal", i64{1}}})),
                 {tensor::from<float>(q, {B, H, Sq, D}), tensor::from<float>(kc, {B, H, T, D}), tensor::from<float>(vc, {B, H, T, D}),
                  value{}, value{}, value{}, lens})[0]
               .tensor();
  auto ext = [](i64 b, i64, i64 i, i64 j) {
    const i64 len = b == 0 ? 3 : 1;
    return j < len && j <= i + len - 2 ? 0.0 : -inf;
  };
  const auto want = attention_ref(q, kc, vc, B, H, H, Sq, T, D, D, 1 / std::sqrt(2.0), ext);
  check_close(y, want);
  // batch 1, query 0: offset -1 masks every key: a zero row
  CHECK(want[4] == 0.0);
  // a sliding window (25): query i at position i sees keys i-1..i+1
  auto w = f.run(node("Attention", 25, 1, attrs({{"left_window_size", i64{1}}, {"right_window_size", i64{1}}})),
                 {tensor::from<float>(q, {B, H, Sq, D}), tensor::from<float>(kc, {B, H, T, D}), tensor::from<float>(vc, {B, H, T, D})})[0]
               .tensor();
  auto win = [](i64, i64, i64 i, i64 j) { return j >= i - 1 && j <= i + 1 ? 0.0 : -inf; };
  check_close(w, attention_ref(q, kc, vc, B, H, H, Sq, T, D, D, 1 / std::sqrt(2.0), win));
}

TEST_CASE("exec.onnx_attention.f16_and_f64") {
  fixture f;
  auto y16 = f.run(node("Attention", 23, 1, attrs({{"scale", 1.0}})),
                   {tensor::from<Eigen::half>({Eigen::half(1), Eigen::half(2)}, {1, 1, 2, 1}),
                    tensor::from<Eigen::half>({Eigen::half(1), Eigen::half(3)}, {1, 1, 2, 1}),
                    tensor::from<Eigen::half>({Eigen::half(10), Eigen::half(20)}, {1, 1, 2, 1})})[0]
                 .tensor();
  CHECK(y16.element_type() == gpass::dtype::f16);
  const double p0 = 1.0 / (1.0 + std::exp(-2.0)), p1 = 1.0 / (1.0 + std::exp(-4.0));
  check_close(y16, {10 + 10 * p0, 10 + 10 * p1}, 2e-3);
  auto y64 = f.run(node("Attention", 23, 1, attrs({{"scale", 1.0}})),
                   {tensor::from<double>({1, 2}, {1, 1, 2, 1}), tensor::from<double>({1, 3}, {1, 1, 2, 1}),
                    tensor::from<double>({10, 20}, {1, 1, 2, 1})})[0]
                 .tensor();
  CHECK(y64.element_type() == gpass::dtype::f64);
  check_close(y64, {10 + 10 * p0, 10 + 10 * p1}, 1e-12);
}

TEST_CASE("exec.onnx_attention.sdpa_matches_double") {
  // gpass::ScaledDotProductAttention in f32 (on AVX-512 its softmax runs 16 lanes at a time)
  // against the definition in double: key counts ragged against the lanes (1 to 100), no
  // bias, a full [B, H, S, L] bias with masked (-inf) keys, a bias broadcast over heads and
  // query rows, and one query row broadcast by a bias of several rows; a row whose every key
  // is masked gives NaN, as the Softmax it replaces does
  fixture f;
  const i64 B = 2, H = 2, D = 8, Dv = 5;
  const double scale = 0.3;
  for (i64 L : {1, 5, 16, 17, 33, 100})
    for (int kind = 0; kind < 4; ++kind) {
      const i64 S = kind == 3 ? 1 : 3, So = 3;
      INFO("L=" << L << " kind " << kind);
      const auto q = wave(B * H * S * D, 1.5f, 0.1f), k = wave(B * H * L * D, 1.2f, 0.7f), v = wave(B * H * L * Dv, 1.0f, 1.3f);
      std::vector<i64> bias_sizes = kind == 0 ? std::vector<i64>{} : kind == 2 ? std::vector<i64>{B, 1, 1, L} : std::vector<i64>{B, H, So, L};
      std::vector<float> bias;
      if (kind != 0) {
        bias = wave(bias_sizes[0] * bias_sizes[1] * bias_sizes[2] * L, 2.0f, 0.4f);
        if (L > 1) {
          for (std::size_t j = 0; j < bias.size(); j += 3) bias[j] = -std::numeric_limits<float>::infinity();  // masked keys
          for (std::size_t j = 0; j < bias.size(); j += static_cast<std::size_t>(L)) bias[j + 1] = 0.0f;  // never all of a row
        }
      }
      auto bias_at = [&](i64 b, i64 h, i64 i, i64 j) -> double {
        if (kind == 0) return 0.0;
        if (kind == 2) return bias[static_cast<std::size_t>(b * L + j)];
        return bias[static_cast<std::size_t>(((b * H + h) * So + i) * L + j)];
      };
      std::vector<float> q_rows = q;  // kind 3: the one query row repeated for each bias row
      if (kind == 3) {
        q_rows.clear();
        for (i64 bh = 0; bh < B * H; ++bh)
          for (i64 i = 0; i < So; ++i) q_rows.insert(q_rows.end(), q.begin() + bh * D, q.begin() + (bh + 1) * D);
      }
      const i64 rows = kind == 2 ? S : So;
      const auto want = attention_ref(q_rows, k, v, B, H, H, rows, L, D, Dv, scale, bias_at);
      auto n = node("ScaledDotProductAttention", 1, 1, attrs({{"scale", scale}}));
      n.domain = "gpass";
      std::vector<value> in{tensor::from<float>(q, {B, H, S, D}), tensor::from<float>(k, {B, H, L, D}), tensor::from<float>(v, {B, H, L, Dv})};
      if (kind != 0) in.push_back(tensor::from<float>(bias, bias_sizes));
      const tensor y = f.run(n, in)[0].tensor();
      CHECK(y.sizes() == std::vector<i64>{B, H, rows, Dv});
      check_close(y, want, 1e-5);
    }
  // every key of a row masked: NaN
  auto n = node("ScaledDotProductAttention", 1, 1, attrs({{"scale", 1.0}}));
  n.domain = "gpass";
  const float ninf = -std::numeric_limits<float>::infinity();
  const tensor y = f.run(n, {tensor::from<float>(wave(4), {1, 1, 1, 4}), tensor::from<float>(wave(12), {1, 1, 3, 4}),
                             tensor::from<float>(wave(6), {1, 1, 3, 2}), tensor::from<float>({ninf, ninf, ninf}, {1, 1, 1, 3})})[0]
                       .tensor();
  CHECK(std::isnan(y.values<float>()[0]));
  CHECK(std::isnan(y.values<float>()[1]));
}

TEST_CASE("exec.onnx_attention.errors_name_the_node") {
  fixture f;
  auto q = tensor::from<float>(wave(3 * 2 * 2), {1, 3, 2, 2});
  auto k = tensor::from<float>(wave(2 * 2 * 2), {1, 2, 2, 2});
  // 3 query heads over 2 key/value heads
  try {
    f.run(node("Attention", 23), {q, k, k});
    FAIL("no error");
  } catch (const gpass::error& e) {
    const std::string m = e.what();
    CHECK(m.find("node 'n'") != std::string::npos);
    CHECK(m.find("Attention") != std::string::npos);
    CHECK(m.find("query heads (3) must be a multiple of the key/value heads (2)") != std::string::npos);
  }
  // 3-D inputs need the head counts; version 25 refuses them with 4-D inputs
  auto q3 = tensor::from<float>(wave(8), {1, 2, 4});
  CHECK_THROWS_AS(f.run(node("Attention", 23), {q3, q3, q3}), gpass::error);
  auto q4 = tensor::from<float>(wave(8), {1, 2, 2, 2});
  CHECK_THROWS_AS(f.run(node("Attention", 25, 1, attrs({{"q_num_heads", i64{2}}})), {q4, q4, q4}), gpass::error);
  // past_key without past_value; a mask longer than the keys
  CHECK_THROWS_AS(f.run(node("Attention", 23), {q4, q4, q4, value{}, q4}), gpass::error);
  CHECK_THROWS_AS(f.run(node("Attention", 23), {q4, q4, q4, tensor::from<float>(wave(3), {3})}), gpass::error);
  CHECK_THROWS_AS(f.run(node("Attention", 23, 1, attrs({{"softmax_precision", i64{7}}})), {q4, q4, q4}), gpass::error);
  // more valid keys than there are
  CHECK_THROWS_AS(f.run(node("Attention", 24), {q4, q4, q4, value{}, value{}, value{}, tensor::from<i64>({3}, {1})}), gpass::error);
}

// ---- RMSNormalization, RotaryEmbedding, GroupNormalization ------------------------------

TEST_CASE("exec.onnx_attention.rms_normalization") {
  fixture f;
  // rows (3, 4) and (0, 1): rms sqrt(12.5) and sqrt(0.5)
  auto x = tensor::from<float>({3, 4, 0, 1}, {2, 2});
  auto s = tensor::from<float>({1, 2}, {2});
  auto y = f.run(node("RMSNormalization", 23, 1, attrs({{"epsilon", 0.0}})), {x, s})[0].tensor();
  const double r0 = std::sqrt(12.5), r1 = std::sqrt(0.5);
  check_close(y, {3 / r0, 2 * 4 / r0, 0, 2 * 1 / r1});
  // axis 0: one rms over all four, sqrt(26 / 4); a scale of the full shape
  auto all = f.run(node("RMSNormalization", 23, 1, attrs({{"axis", i64{0}}, {"epsilon", 0.0}})),
                   {x, tensor::from<float>({1, 1, 1, -1}, {2, 2})})[0]
                 .tensor();
  const double r = std::sqrt(26.0 / 4);
  check_close(all, {3 / r, 4 / r, 0, -1 / r});
  // epsilon, stash_type double on f64
  auto d = f.run(node("RMSNormalization", 23, 1, attrs({{"epsilon", 0.5}, {"stash_type", i64{11}}})),
                 {tensor::from<double>({3, 4}, {1, 2}), tensor::from<double>({1}, {1})})[0]
               .tensor();
  check_close(d, {3 / std::sqrt(13.0), 4 / std::sqrt(13.0)}, 1e-7);
  CHECK_THROWS_AS(f.run(node("RMSNormalization", 23), {x, tensor::from<float>({1, 2, 3}, {3})}), gpass::error);
}

TEST_CASE("exec.onnx_attention.rotary_embedding") {
  fixture f;
  // one batch, one head, two positions, head size 4; position ids (1, 0) into a 2-row cache
  const double a = 0.3, b = 1.1;
  auto cs = tensor::from<float>({1, 1, static_cast<float>(std::cos(a)), static_cast<float>(std::cos(b))}, {2, 2});
  auto sn = tensor::from<float>({0, 0, static_cast<float>(std::sin(a)), static_cast<float>(std::sin(b))}, {2, 2});
  auto x = tensor::from<float>({1, 2, 3, 4, 5, 6, 7, 8}, {1, 1, 2, 4});
  auto ids = tensor::from<i64>({1, 0}, {1, 2});
  auto y = f.run(node("RotaryEmbedding", 23), {x, cs, sn, ids})[0].tensor();
  // halves: (x0, x2) and (x1, x3) rotate by a and b; position 0 of the cache is no rotation
  auto rot = [](double u, double w, double t) { return std::vector<double>{u * std::cos(t) - w * std::sin(t), u * std::sin(t) + w * std::cos(t)}; };
  auto p0 = rot(1, 3, a), p1 = rot(2, 4, b);
  check_close(y, {p0[0], p1[0], p0[1], p1[1], 5, 6, 7, 8});
  // interleaved: pairs (x0, x1) and (x2, x3)
  auto yi = f.run(node("RotaryEmbedding", 23, 1, attrs({{"interleaved", i64{1}}})), {x, cs, sn, ids})[0].tensor();
  auto q0 = rot(1, 2, a), q1 = rot(3, 4, b);
  check_close(yi, {q0[0], q0[1], q1[0], q1[1], 5, 6, 7, 8});
  // 3-D input with num_heads 2 (head size 2), partial rotation of 2, caches per (batch, seq)
  auto x3 = tensor::from<float>({1, 2, 3, 4}, {1, 1, 4});
  auto c3 = tensor::from<float>({static_cast<float>(std::cos(a))}, {1, 1, 1});
  auto s3 = tensor::from<float>({static_cast<float>(std::sin(a))}, {1, 1, 1});
  auto y3 = f.run(node("RotaryEmbedding", 23, 1, attrs({{"num_heads", i64{2}}, {"rotary_embedding_dim", i64{2}}})), {x3, c3, s3})[0].tensor();
  auto h0 = rot(1, 2, a), h1 = rot(3, 4, a);
  check_close(y3, {h0[0], h0[1], h1[0], h1[1]});
  // a position id past the cache
  CHECK_THROWS_AS(f.run(node("RotaryEmbedding", 23), {x, cs, sn, tensor::from<i64>({2, 0}, {1, 2})}), gpass::error);
}

TEST_CASE("exec.onnx_attention.group_normalization") {
  fixture f;
  // N=1, C=4, 2 groups of 2 channels x 1 element: groups (1, 3) and (2, 6)
  auto x = tensor::from<float>({1, 3, 2, 6}, {1, 4, 1});
  // version 21: scale and bias per channel
  auto y21 = f.run(node("GroupNormalization", 21, 1, attrs({{"num_groups", i64{2}}, {"epsilon", 0.0}})),
                   {x, tensor::from<float>({1, 2, 3, 4}, {4}), tensor::from<float>({0, 0, 1, 1}, {4})})[0]
                 .tensor();
  check_close(y21, {-1, 2, 1 - 3, 1 + 4});
  // version 18: per group
  auto y18 = f.run(node("GroupNormalization", 18, 1, attrs({{"num_groups", i64{2}}, {"epsilon", 0.0}})),
                   {x, tensor::from<float>({2, 3}, {2}), tensor::from<float>({0, 1}, {2})})[0]
                 .tensor();
  check_close(y18, {-2, 2, 1 - 3, 1 + 3});
  // a per-group scale at version 21 is an error
  CHECK_THROWS_AS(f.run(node("GroupNormalization", 21, 1, attrs({{"num_groups", i64{2}}})),
                        {x, tensor::from<float>({2, 3}, {2}), tensor::from<float>({0, 1}, {2})}),
                  gpass::error);
}

// Head counts are attributes: with a hidden size of 0 any count divides it, so a hostile
// model had 2^40 heads of nothing loop 2^40 times or size an 8 TB bias. Empty outputs now
// take no work, and scratch that grows faster than the output is checked as a tensor.
TEST_CASE("exec.onnx_attention.head_counts_with_empty_heads") {
  fixture f;
  const i64 many = i64{1} << 40;
  auto empty3 = tensor(gpass::dtype::f32, {1, 3, 0});
  auto heads = attrs({{"q_num_heads", many}, {"kv_num_heads", many}});
  auto y = f.run(node("Attention", 23, 1, heads), {empty3, empty3, empty3})[0].tensor();
  CHECK(y.sizes() == std::vector<i64>{1, 3, 0});
  auto causal = attrs({{"q_num_heads", many}, {"kv_num_heads", many}, {"is_causal", i64{1}}});
  CHECK_THROWS_WITH_AS(f.run(node("Attention", 23, 1, causal), {empty3, empty3, empty3}), doctest::Contains("max_tensor_bytes"),
                       gpass::error);
  // scores grow as Sq x T where the output grows as Sq: 10^5 x 10^5 causal scores are 80 GB
  auto long_q = tensor(gpass::dtype::f32, {1, 100000, 1});
  CHECK_THROWS_WITH_AS(f.run(node("Attention", 23, 1, attrs({{"q_num_heads", i64{1}}, {"kv_num_heads", i64{1}}, {"is_causal", i64{1}}})),
                             {long_q, long_q, long_q}),
                       doctest::Contains("max_tensor_bytes"), gpass::error);
  // GroupNormalization of no channels, LinearAttention and RotaryEmbedding of empty heads
  auto g = f.run(node("GroupNormalization", 21, 1, attrs({{"num_groups", many}})),
                 {tensor(gpass::dtype::f32, {i64{1} << 20, 0, 4}), tensor(gpass::dtype::f32, {0}), tensor(gpass::dtype::f32, {0})})[0]
               .tensor();
  CHECK(g.size() == 0);
  auto lin = f.run(node("LinearAttention", 27, 2, attrs({{"q_num_heads", many}, {"kv_num_heads", many}, {"update_rule", std::string("linear")}})),
                   {empty3, empty3, empty3});
  CHECK(lin[0].tensor().sizes() == std::vector<i64>{1, 3, 0});
  CHECK(lin[1].tensor().sizes() == std::vector<i64>{1, many, 0, 0});
  auto rot = f.run(node("RotaryEmbedding", 23, 1, attrs({{"num_heads", many}})),
                   {tensor(gpass::dtype::f32, {i64{1} << 20, i64{1} << 20, 0}), tensor(gpass::dtype::f32, {i64{1} << 20, i64{1} << 20, 0}),
                    tensor(gpass::dtype::f32, {i64{1} << 20, i64{1} << 20, 0})})[0]
                 .tensor();
  CHECK(rot.size() == 0);
}

// ---- LinearAttention, CausalConvWithState, SwiGLU ------------------------------------------

TEST_CASE("exec.onnx_attention.linear_attention_by_hand") {
  fixture f;
  // one head, k_head 1, v_head 2, two steps; scale 1/sqrt(1)
  auto q = tensor::from<float>({1, 2}, {1, 2, 1});
  auto k = tensor::from<float>({3, 4}, {1, 2, 1});
  auto v = tensor::from<float>({1, 2, 5, 6}, {1, 2, 2});
  auto heads = [](const char* rule) {
    return attrs({{"q_num_heads", i64{1}}, {"kv_num_heads", i64{1}}, {"update_rule", std::string(rule)}});
  };
  // linear: S1 = 3 (1, 2), S2 = S1 + 4 (5, 6) = (23, 30); o_t = q_t S_t
  auto lin = f.run(node("LinearAttention", 27, 2, heads("linear")), {q, k, v});
  check_close(lin[0].tensor(), {3, 6, 46, 60});
  CHECK(lin[1].tensor().sizes() == std::vector<i64>{1, 1, 1, 2});
  check_close(lin[1].tensor(), {23, 30});
  // gated, per-head decay (0, ln 0.5): S2 = 0.5 S1 + 4 (5, 6)
  auto decay = tensor::from<float>({0, static_cast<float>(std::log(0.5))}, {1, 2, 1});
  check_close(f.run(node("LinearAttention", 27, 2, heads("gated")), {q, k, v, value{}, decay})[0].tensor(), {3, 6, 43, 54});
  // delta, beta (1, 0.5): v2 <- 0.5 ((5, 6) - 4 S1) = (-3.5, -9), S2 = S1 + 4 v2 = (-11, -30)
  auto beta = tensor::from<float>({1, 0.5f}, {1, 2, 1});
  check_close(f.run(node("LinearAttention", 27, 2, heads("delta")), {q, k, v, value{}, value{}, beta})[0].tensor(), {3, 6, -22, -60});
  // two query heads share the one state; a past state is added to
  auto q2 = tensor::from<float>({1, -1, 2, 0.5f}, {1, 2, 2});
  auto gqa = attrs({{"q_num_heads", i64{2}}, {"kv_num_heads", i64{1}}, {"update_rule", std::string("linear")}, {"scale", 1.0}});
  check_close(f.run(node("LinearAttention", 27, 2, gqa), {q2, k, v})[0].tensor(), {3, 6, -3, -6, 46, 60, 11.5, 15});
  auto past = tensor::from<float>({1, 1}, {1, 1, 1, 2});
  check_close(f.run(node("LinearAttention", 27, 2, gqa), {q2, k, v, past})[1].tensor(), {24, 31});
  // the default rule gated_delta needs decay and beta
  CHECK_THROWS_AS(f.run(node("LinearAttention", 27, 2, attrs({{"q_num_heads", i64{1}}, {"kv_num_heads", i64{1}}})), {q, k, v}), gpass::error);
}

TEST_CASE("exec.onnx_attention.causal_conv_with_state_by_hand") {
  fixture f;
  // channels (1, 2, 3) and (4, 5, 6); kernels (1, 2) and (0, 1): y_i = w0 x_{i-1} + w1 x_i
  auto x = tensor::from<float>({1, 2, 3, 4, 5, 6}, {1, 2, 3});
  auto w = tensor::from<float>({1, 2, 0, 1}, {2, 1, 2});
  auto out = f.run(node("CausalConvWithState", 27, 2), {x, w});
  check_close(out[0].tensor(), {2, 5, 8, 4, 5, 6});
  CHECK(out[1].tensor().sizes() == std::vector<i64>{1, 2, 1});
  check_close(out[1].tensor(), {3, 6});
  // a carry state and a bias
  auto past = tensor::from<float>({10, 20}, {1, 2, 1});
  auto bias = tensor::from<float>({1, -1}, {2});
  check_close(f.run(node("CausalConvWithState", 27, 2), {x, w, bias, past})[0].tensor(), {13, 6, 9, 3, 4, 5});
  // silu
  auto silu = [](double t) { return t / (1 + std::exp(-t)); };
  check_close(f.run(node("CausalConvWithState", 27, 2, attrs({{"activation", std::string("silu")}})), {x, w})[0].tensor(),
              {silu(2), silu(5), silu(8), silu(4), silu(5), silu(6)});
  CHECK_THROWS_AS(f.run(node("CausalConvWithState", 27, 2), {x, tensor::from<float>({1, 2}, {1, 1, 2})}), gpass::error);
}

TEST_CASE("exec.onnx_attention.swiglu_by_hand") {
  fixture f;
  auto sig = [](double t) { return 1 / (1 + std::exp(-t)); };
  auto a = tensor::from<float>({0, 1, -2}, {3});
  auto b = tensor::from<float>({2, 3, 4}, {3});
  check_close(f.run(node("SwiGLU", 28), {a, b})[0].tensor(), {0, sig(1) * 3, -2 * sig(-2) * 4});
  check_close(f.run(node("SwiGLU", 28, 1, attrs({{"alpha", 0.5}})), {a, b})[0].tensor(), {0, sig(0.5) * 3, -2 * sig(-1) * 4});
  // no broadcasting
  CHECK_THROWS_AS(f.run(node("SwiGLU", 28), {a, tensor::from<float>({1}, {1})}), gpass::error);
}

// ---- shape functions --------------------------------------------------------------------

TEST_CASE("exec.onnx_attention.shape_inference") {
  const char* gqa =
      "%q = arg() {index = 0} -> (f32[b,5,32])\n%k = arg() {index = 1} -> (f32[b,6,16])\n"
      "%v = arg() {index = 2} -> (f32[b,6,24])\n%pk = arg() {index = 3} -> (f32[b,2,p,8])\n"
      "%pv = arg() {index = 4} -> (f32[b,2,p,12])\n"
      "%y:4 = Attention(%q, %k, %v, _, %pk, %pv) {q_num_heads = 4, kv_num_heads = 2}";
  CHECK(inferred(gqa, 23, 0) == "f32[b,5,48]");
  CHECK(inferred(gqa, 23, 1) == "f32[b,2,p+6,8]");
  CHECK(inferred(gqa, 23, 2) == "f32[b,2,p+6,12]");
  CHECK(inferred(gqa, 23, 3) == "f32[b,4,5,p+6]");
  CHECK(inferred("%q = arg() {index = 0} -> (f16[2,8,3,4])\n%k = arg() {index = 1} -> (f16[2,2,7,4])\n"
                 "%y = Attention(%q, %k, %k)",
                 25) == "f16[2,8,3,4]");
  // heads that do not divide, and a hidden size that is not a multiple of the heads
  CHECK(inferred("%q = arg() {index = 0} -> (f32[2,3,3,4])\n%k = arg() {index = 1} -> (f32[2,2,7,4])\n"
                 "%y = Attention(%q, %k, %k)",
                 23)
            .find("node 'y' (op Attention): q_num_heads 3 is not a multiple of kv_num_heads 2") != std::string::npos);
  CHECK(inferred("%q = arg() {index = 0} -> (f32[2,3,10])\n%y = Attention(%q, %q, %q) {q_num_heads = 4, kv_num_heads = 2}", 23)
            .find("not a multiple of 4 heads") != std::string::npos);
  // RMSNormalization keeps X's type; RotaryEmbedding checks its caches; GroupNormalization its scale
  CHECK(inferred("%x = arg() {index = 0} -> (f16[n,4])\n%s = arg() {index = 1} -> (f16[4])\n%y = RMSNormalization(%x, %s)", 23) ==
        "f16[n,4]");
  CHECK(inferred("%x = arg() {index = 0} -> (f32[1,2,3,8])\n%c = arg() {index = 1} -> (f32[9,3])\n"
                 "%p = arg() {index = 2} -> (i64[1,3])\n%y = RotaryEmbedding(%x, %c, %c, %p)",
                 23)
            .find("last dim of cos_cache") != std::string::npos);
  CHECK(inferred("%x = arg() {index = 0} -> (f32[n,6,5])\n%s = arg() {index = 1} -> (f32[6])\n"
                 "%y = GroupNormalization(%x, %s, %s) {num_groups = 3}",
                 21) == "f32[n,6,5]");
  CHECK(inferred("%x = arg() {index = 0} -> (f32[n,6,5])\n%s = arg() {index = 1} -> (f32[6])\n"
                 "%y = GroupNormalization(%x, %s, %s) {num_groups = 3}",
                 18)
            .find("scale vs num_groups") != std::string::npos);
  // LinearAttention's state has past_state's type, else the query's
  const char* la = "%q = arg() {index = 0} -> (f16[b,t,64])\n%k = arg() {index = 1} -> (f16[b,t,32])\n"
                   "%v = arg() {index = 2} -> (f16[b,t,48])\n";
  CHECK(inferred(std::string(la) + "%y:2 = LinearAttention(%q, %k, %v) {q_num_heads = 8, kv_num_heads = 4, update_rule = \"linear\"}", 27, 0) ==
        "f16[b,t,96]");
  CHECK(inferred(std::string(la) + "%y:2 = LinearAttention(%q, %k, %v) {q_num_heads = 8, kv_num_heads = 4, update_rule = \"linear\"}", 27, 1) ==
        "f16[b,4,8,12]");
  CHECK(inferred(std::string(la) + "%p = arg() {index = 3} -> (f32[b,4,8,12])\n"
                                   "%y:2 = LinearAttention(%q, %k, %v, %p) {q_num_heads = 8, kv_num_heads = 4, update_rule = \"linear\"}",
                 27, 1) == "f32[b,4,8,12]");
  CHECK(inferred(std::string(la) + "%y:2 = LinearAttention(%q, %k, %v) {q_num_heads = 8, kv_num_heads = 4}", 27)
            .find("needs the input decay") != std::string::npos);
  CHECK(inferred("%x = arg() {index = 0} -> (f32[b,4,n])\n%w = arg() {index = 1} -> (f32[4,1,5])\n"
                 "%y:2 = CausalConvWithState(%x, %w)",
                 27, 1) == "f32[b,4,4]");
  CHECK(inferred("%a = arg() {index = 0} -> (f32[n,4])\n%b = arg() {index = 1} -> (f32[n,5])\n%y = SwiGLU(%a, %b)", 28)
            .find("A and B must have the same shape") != std::string::npos);
}

}  // namespace gpass_test_exec_onnx_attention
