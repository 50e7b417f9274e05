// SPDX-License-Identifier: Apache-2.0
// ONNX model-local functions: import as gpass functions called by `call` nodes (one instance
// per set of attribute values), inference and execution through the calls, the
// inline-functions pass, export back to FunctionProtos; and external data (read, mapped,
// written); ONNX Runtime's com.microsoft ops; the ai.onnx.ml, ai.onnx.preview and
// ai.onnx.preview.training ops. The fixtures and their peers' outputs (ONNX Runtime's, or onnx's
// reference evaluator's where ONNX Runtime has no kernel) come from
// tests/data/onnx/make_fixtures.py.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include <gpass/exec/eigen_cpu.hpp>
#include <gpass/io/onnx.hpp>
#include <gpass/io/onnx_tensor_file.hpp>
#include <gpass/io/text.hpp>
#include <gpass/passes/common/infer_shapes.hpp>
#include <gpass/passes/common/inline_functions.hpp>

#include "onnx_test_support.hpp"

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_onnx_functions {

namespace {

using G = gpass::graph<>;
const std::filesystem::path dir = std::filesystem::path(GPASS_TEST_DATA_DIR) / "onnx";

std::size_t count_op(const G& g, const std::string& op) {
  std::size_t n = 0;
  for (auto v : g.nodes()) n += g[v].op == op;
  return n;
}

// Runs `g` on the fixture's inputs and checks its outputs against the peer's.
void check_against_ort(G g, const std::string& name, std::size_t outputs, std::size_t inputs = 1) {
  gpass::pass_context ctx;
  gpass::infer_shapes(g, ctx);
  gpass::exec::eigen_cpu cpu({.threads = 1});
  gpass::exec::plan p(g, cpu);
  std::vector<gpass::exec::value> in;
  for (std::size_t k = 0; k < inputs; ++k)
    in.emplace_back(gpass::read_onnx_tensor_file(dir / (name + ".input_" + std::to_string(k) + ".pb")));
  auto out = p.run(std::move(in));
  REQUIRE(out.size() == outputs);
  for (std::size_t k = 0; k < outputs; ++k) {
    const auto want = gpass::read_onnx_tensor_file(dir / (name + ".output_" + std::to_string(k) + ".pb"));
    const auto& got = out[k].tensor();
    INFO(name << " output " << k);
    REQUIRE(got.sizes() == want.sizes());
    REQUIRE(got.element_type() == want.element_type());
    if (got.element_type() == gpass::dtype::f16) {  // float16 results: within one unit in the last place or so
      for (std::int64_t i = 0; i < got.size(); ++i) {
        const float a = static_cast<float>(got.data<Eigen::half>()[i]), b = static_cast<float>(want.data<Eigen::half>()[i]);
        CHECK(std::abs(a - b) <= 1e-3f + 2e-3f * std::abs(b));
      }
      continue;
    }
    if (got.element_type() != gpass::dtype::f32) {  // integers (EmbedLayerNormalization's mask_index), strings: exact
      CHECK(got == want);
      continue;
    }
    for (std::int64_t i = 0; i < got.size(); ++i) {
      const float a = got.data<float>()[i], b = want.data<float>()[i];
      CHECK(((std::isnan(a) && std::isnan(b)) || std::abs(a - b) <= 1e-5 + 1e-5 * std::abs(b)));
    }
  }
}

std::string import_error(const onnx::ModelProto& m) {
  try {
    (void)gpass::import_onnx(m);
  } catch (const gpass::error& e) {
    return e.what();
  }
  return "no error";
}

// A model calling function `f` of domain "local" (inputs x, output y) once.
onnx::ModelProto calling_model(const onnx::FunctionProto& f, int model_opset = 18) {
  auto m = onnx_test::make_model(model_opset, 10);
  auto* o = m.add_opset_import();
  o->set_domain("local");
  o->set_version(1);
  auto* g = m.mutable_graph();
  onnx_test::add_input(g, "x", onnx_test::f32({2}));
  auto* n = onnx_test::add_node(g, f.name(), {"x"}, {"y"}, "c");
  n->set_domain("local");
  onnx_test::add_output(g, "y", onnx_test::f32({2}));
  *m.add_functions() = f;
  return m;
}

onnx::FunctionProto relu_function(const std::string& name, const std::string& body_op = "Relu", int opset = 18) {
  onnx::FunctionProto f;
  f.set_name(name);
  f.set_domain("local");
  f.add_input("a");
  f.add_output("b");
  auto* n = f.add_node();
  n->set_op_type(body_op);
  n->add_input("a");
  n->add_output("b");
  if (body_op == name) n->set_domain("local");
  auto* o = f.add_opset_import();
  o->set_domain("");
  o->set_version(opset);
  return f;
}

}  // namespace

TEST_CASE("onnx.functions.import_run_inline_export") {
  G g = gpass::read_onnx_file(dir / "local_functions.onnx");
  // Mlp, Gelu (called from Mlp), LayerNormLike with epsilon 1e-3 and with its default
  CHECK(g.functions().size() == 4);
  CHECK(count_op(g, "call") == 3);
  CHECK(count_op(*g.find_function("Mlp"), "call") == 1);
  const G* ln = g.find_function("LayerNormLike");
  const G* ln_default = g.find_function("LayerNormLike_1");
  REQUIRE(ln);
  REQUIRE(ln_default);
  CHECK(ln->at("eps") != ln_default->at("eps"));
  CHECK((*ln)[ln->at("eps")].attrs.at("value_float").as<double>() == doctest::Approx(1e-3));
  CHECK((*ln_default)[ln_default->at("eps")].attrs.at("value_float").as<double>() == doctest::Approx(1e-5));
  {  // types flow through the calls
    G t = g;
    gpass::pass_context ctx;
    gpass::infer_shapes(t, ctx);
    CHECK(t[t.at("ln2")].outputs.at(0).to_string() == "f32[2,5,8]");
  }
  check_against_ort(g, "local_functions", 2);

  G flat = g;
  gpass::pass_context ctx;
  gpass::inline_functions(flat, ctx);
  CHECK(count_op(flat, "call") == 0);
  CHECK(flat.functions().empty());
  CHECK(ctx.statistics().at("inline-functions.calls") == 5);
  check_against_ort(flat, "local_functions", 2);

  // export: the calls become nodes of the functions' domain, the functions FunctionProtos
  onnx::ModelProto m = gpass::export_onnx(g);
  CHECK(m.functions_size() == 4);
  bool ln_node = false;
  for (const auto& n : m.graph().node())
    if (n.op_type() == "LayerNormLike") ln_node = n.domain() == "pkg.torch.2.9" && n.attribute_size() == 0;
  CHECK(ln_node);
  G back = gpass::import_onnx(m);
  CHECK(back.functions().size() == 4);
  check_against_ort(back, "local_functions", 2);
}

TEST_CASE("onnx.functions.errors") {
  SUBCASE("unknown attribute of a call") {
    auto m = calling_model(relu_function("F"));
    auto* a = m.mutable_graph()->mutable_node(0)->add_attribute();
    a->set_name("alpha");
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(1);
    CHECK(import_error(m).find("node 'c' (op F): attribute 'alpha' is not an attribute of model-local function 'F'") !=
          std::string::npos);
  }
  SUBCASE("recursion") {
    auto m = calling_model(relu_function("F", "F"));
    CHECK(import_error(m).find("calls itself") != std::string::npos);
  }
  SUBCASE("another default-domain opset") {
    auto m = calling_model(relu_function("F", "Relu", 17));
    CHECK(import_error(m).find("imports opset 17 of the default domain, the model 18") != std::string::npos);
  }
  SUBCASE("a body reading a value it does not define") {
    auto f = relu_function("F");
    f.mutable_node(0)->set_input(0, "outer");
    CHECK(import_error(calling_model(f)).find("in model-local function 'F'") != std::string::npos);
  }
  SUBCASE("a function defined twice") {
    auto m = calling_model(relu_function("F"));
    *m.add_functions() = relu_function("F");
    CHECK(import_error(m).find("defined twice") != std::string::npos);
  }
  SUBCASE("a reserved op name") {
    auto m = onnx_test::make_model(18, 10);
    auto* g = m.mutable_graph();
    onnx_test::add_input(g, "x", onnx_test::f32({2}));
    onnx_test::add_node(g, "call", {"x"}, {"y"}, "c");
    onnx_test::add_output(g, "y", onnx_test::f32({2}));
    CHECK(import_error(m).find("reserved by gpass") != std::string::npos);
  }
}

TEST_CASE("onnx.functions.external_data") {
  // weights in external_data.bin beside the model
  G g = gpass::read_onnx_file(dir / "external_data.onnx");
  check_against_ort(g, "external_data", 1);
  // written back with every tensor of 64 bytes or more in out.onnx.data, 64-byte aligned
  const auto tmp = std::filesystem::temp_directory_path() / "gpass_test_external_data";
  std::filesystem::remove_all(tmp);
  std::filesystem::create_directories(tmp);
  gpass::write_onnx_file(g, tmp / "out.onnx", {.external_data_threshold = 64});
  CHECK(std::filesystem::file_size(tmp / "out.onnx.data") >= (64 * 32 + 32) * 4);
  CHECK(std::filesystem::file_size(tmp / "out.onnx") < 1024);
  G back = gpass::read_onnx_file(tmp / "out.onnx");  // the weights mapped from the file
  const auto& w = back[back.at("w")].attrs.at("value").as<gpass::tensor>();
  CHECK(w.sizes() == std::vector<std::int64_t>{64, 32});
  CHECK(reinterpret_cast<std::uintptr_t>(w.raw()) % 64 == 0);
  check_against_ort(back, "external_data", 1);
  CHECK_THROWS_WITH_AS(gpass::write_onnx_file(g, tmp / "bad.onnx", {.external_data_threshold = 0, .external_data_file = "../x"}),
                       doctest::Contains("must be a file name"), gpass::error);
  std::filesystem::remove_all(tmp);
}

TEST_CASE("onnx.functions.ort_contrib_ops") {
  // ONNX Runtime's com.microsoft Gelu, BiasGelu, FastGelu, QuickGelu, SkipLayerNormalization
  G g = gpass::read_onnx_file(dir / "ort_contrib.onnx");
  check_against_ort(g, "ort_contrib", 6, 2);
}

TEST_CASE("onnx.functions.ort_contrib_embed_norms_and_attention") {
  // SkipSimplifiedLayerNormalization (RMS), EmbedLayerNormalization with segments, a mask and
  // position ids, and without them; Attention with a 0/1 mask, with end positions, and
  // unidirectional with an attention bias
  G g = gpass::read_onnx_file(dir / "ort_contrib2.onnx");
  check_against_ort(g, "ort_contrib2", 11, 6);
}

TEST_CASE("onnx.functions.ort_multi_head_attention") {
  // MultiHeadAttention: self-attention with a bias and a 0/1 key padding mask; cross-attention
  // with key lengths, a scale and an attention bias; per-head key and value; a decoder step
  // with past_key / past_value, unidirectional, with present_key / present_value; Attention
  // with its past state and present output (a [B, P + S] mask, unidirectional; end positions);
  // FusedMatMul with transBatchA / transBatchB
  G g = gpass::read_onnx_file(dir / "ort_contrib3.onnx");
  check_against_ort(g, "ort_contrib3", 13, 16);
}

TEST_CASE("onnx.functions.multi_head_attention_packed_forms") {
  // packed QKV [B, S, N, 3, H] and packed KV [B, L, N, 2, H] give what the same values as
  // separate query, key and value give (ONNX Runtime's CPU kernel has no packed form to
  // compare with)
  using gpass::tensor;
  const std::int64_t B = 2, S = 3, L = 5, N = 2, H = 4, D = N * H;
  auto filled = [](std::vector<std::int64_t> sizes, float k) {
    tensor t(gpass::dtype::f32, std::move(sizes));
    for (std::int64_t i = 0; i < t.size(); ++i) t.data<float>()[i] = std::sin(k * static_cast<float>(i + 1));
    return t;
  };
  const tensor qkv = filled({B, S, N, 3, H}, 0.37f), kvp = filled({B, L, N, 2, H}, 0.71f), q = filled({B, S, D}, 0.53f);
  // the separate forms: part `which` of each head of a packed tensor, as [B, len, N * H]
  auto unpack = [&](const tensor& t, std::int64_t len, std::int64_t parts, std::int64_t which) {
    tensor r(gpass::dtype::f32, {B, len, D});
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t j = 0; j < len; ++j)
        for (std::int64_t h = 0; h < N; ++h)
          for (std::int64_t d = 0; d < H; ++d)
            r.data<float>()[(b * len + j) * D + h * H + d] = t.data<float>()[(((b * len + j) * N + h) * parts + which) * H + d];
    return r;
  };
  gpass::exec::eigen_cpu cpu({.threads = 1});
  auto run = [&](std::vector<tensor> in) {
    gpass::exec::kernel_node n{.name = "mha", .op = "MultiHeadAttention", .domain = "com.microsoft", .attrs = {{"num_heads", N}}, .opset = 1};
    n.output_types.resize(1);
    n.input_types.resize(in.size());
    std::vector<gpass::exec::value> v;
    for (auto& t : in) v.emplace_back(std::move(t));
    return gpass::exec::run_kernel(cpu, cpu.kernels(), n, std::move(v))[0].tensor();
  };
  auto close = [](const tensor& a, const tensor& b) {
    REQUIRE(a.sizes() == b.sizes());
    for (std::int64_t i = 0; i < a.size(); ++i) CHECK(std::abs(a.data<float>()[i] - b.data<float>()[i]) <= 1e-6);
  };
  close(run({qkv}), run({unpack(qkv, S, 3, 0), unpack(qkv, S, 3, 1), unpack(qkv, S, 3, 2)}));
  close(run({q, kvp}), run({q, unpack(kvp, L, 2, 0), unpack(kvp, L, 2, 1)}));
  // what does not fit is an error naming the node
  CHECK_THROWS_WITH_AS(run({q, filled({B, L, D + 1}, 0.1f), filled({B, L, D}, 0.2f)}), doctest::Contains("node 'mha'"), gpass::error);
  CHECK_THROWS_WITH_AS(run({q}), doctest::Contains("key is missing"), gpass::error);
}

}  // namespace gpass_test_onnx_functions

namespace gpass_test_onnx_functions {

TEST_CASE("onnx.functions.ai_onnx_ml_ops") {
  // ArrayFeatureExtractor, Binarizer, LabelEncoder (strings, NaN keys, tensors), TreeEnsemble
  // (SUM with a member set and NaN tracking, AVERAGE over 3 targets with a one-leaf tree)
  G g = gpass::read_onnx_file(dir / "onnx_ml.onnx");
  {
    G t = g;
    gpass::pass_context ctx;
    gpass::infer_shapes(t, ctx);
    CHECK(t[t.at("afe")].outputs.at(0).to_string() == "f32[6,2]");
    CHECK(t[t.at("labels")].outputs.at(0).to_string() == "str[5]");
    CHECK(t[t.at("te_avg")].outputs.at(0).to_string() == "f32[6,3]");
  }
  check_against_ort(g, "onnx_ml", 8, 7);
}

TEST_CASE("onnx.functions.ai_onnx_preview_ops") {
  // FlexAttention (grouped-query heads, a score_mod with its bias and mask inside, the same
  // captured from the outer graph, a prob_mod with a scale, float16) and the training
  // optimizers Adagrad, Adam, Momentum (Nesterov), two tensors each: onnx's reference outputs
  G g = gpass::read_onnx_file(dir / "onnx_preview.onnx");
  check_against_ort(g, "onnx_preview", 18, 14);
}

TEST_CASE("onnx.functions.tree_ensemble_post_transforms") {
  // node 0: x <= 0 -> leaf 0 (target 0, 0.975), else node 1: x <= 0 -> leaf 1 (unreached),
  // else leaf 2 (target 1, -1); rows x = -1 and x = 1 score (0.975, 0) and (0, -1); the post
  // transforms as ONNX numbers them (1 SOFTMAX, 2 LOGISTIC, 3 SOFTMAX_ZERO, 4 PROBIT)
  auto run = [](std::int64_t post) {
    const std::string text = R"(graph {
  %x = arg() {index = 0} -> (f32[2,1])
  %y = ai.onnx.ml::TreeEnsemble(%x) {leaf_targetids = [0, 1, 1], leaf_weights = tensor<f32[3]> [0.975, 5.0, -1.0], n_targets = 2, nodes_falseleafs = [0, 1], nodes_falsenodeids = [1, 2], nodes_featureids = [0, 0], nodes_modes = tensor<u8[2]> [0, 0], nodes_splits = tensor<f32[2]> [0.0, 0.0], nodes_trueleafs = [1, 1], nodes_truenodeids = [0, 1], post_transform = )" +
                             std::to_string(post) + R"(, tree_roots = [0]}
  %r:0 = return(%y)
})";
    G g = gpass::parse_text<G>(text);
    gpass::exec::eigen_cpu cpu({.threads = 1});
    gpass::exec::plan p(g, cpu);
    auto out = p.run({gpass::tensor::from<float>({-1.0f, 1.0f}).reshaped({2, 1})});
    const float* y = out.at(0).tensor().data<float>();
    return std::vector<double>(y, y + 4);
  };
  const double w = static_cast<float>(0.975), e = std::exp(1.0);
  const auto none = run(0);
  CHECK(none == std::vector<double>{w, 0.0, 0.0, -1.0});
  const auto softmax = run(1);
  CHECK(softmax[0] == doctest::Approx(std::exp(w) / (std::exp(w) + 1)));
  CHECK(softmax[1] == doctest::Approx(1 / (std::exp(w) + 1)));
  CHECK(softmax[2] == doctest::Approx(e / (e + 1)));
  const auto logistic = run(2);
  CHECK(logistic[0] == doctest::Approx(1 / (1 + std::exp(-w))));
  CHECK(logistic[1] == doctest::Approx(0.5));
  CHECK(logistic[3] == doctest::Approx(1 / (1 + e)));
  const auto softmax_zero = run(3);  // zeros stay zero
  CHECK(softmax_zero == std::vector<double>{1.0, 0.0, 0.0, 1.0});
  const auto probit = run(4);  // the standard normal quantile: 0.975 -> 1.959964
  CHECK(probit[0] == doctest::Approx(1.959964).epsilon(1e-6));
  CHECK(std::isinf(probit[1]));
  CHECK(probit[1] < 0);
}

TEST_CASE("onnx.functions.ai_onnx_ml_errors") {
  using gpass::exec::value;
  auto run_one = [](const std::string& text, std::vector<value> in) {
    G g = gpass::parse_text<G>(text);
    gpass::exec::eigen_cpu cpu({.threads = 1});
    gpass::exec::plan p(g, cpu);
    return p.run(std::move(in));
  };
  auto message = [&](const std::string& text, std::vector<value> in) {
    try {
      (void)run_one(text, std::move(in));
    } catch (const gpass::error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const auto x = gpass::tensor::from<float>({1, 2, 3, 4, 5, 6}).reshaped({2, 3});
  SUBCASE("an index past the last axis") {
    const std::string m = message(R"(graph {
  %x = arg() {index = 0} -> (f32[2,3])
  %i = arg() {index = 1} -> (i64[1])
  %z = ai.onnx.ml::ArrayFeatureExtractor(%x, %i)
  %r:0 = return(%z)
})", {x, gpass::tensor::from<std::int64_t>({3})});
    CHECK(m.find("node 'z'") != std::string::npos);
    CHECK(m.find("out of range for the last axis of size 3") != std::string::npos);
  }
  SUBCASE("a tree whose branches form a cycle") {
    const std::string m = message(R"(graph {
  %x = arg() {index = 0} -> (f32[2,3])
  %y = ai.onnx.ml::TreeEnsemble(%x) {leaf_targetids = [0], leaf_weights = tensor<f32[1]> [1.0], nodes_falseleafs = [0, 0], nodes_falsenodeids = [1, 0], nodes_featureids = [0, 1], nodes_modes = tensor<u8[2]> [0, 0], nodes_splits = tensor<f32[2]> [0.5, 0.5], nodes_trueleafs = [0, 0], nodes_truenodeids = [1, 0], tree_roots = [0]}
  %r:0 = return(%y)
})", {x});
    CHECK(m.find("has a cycle") != std::string::npos);
  }
  SUBCASE("FlexAttention scores over the per-tensor limit") {
    // Q, K and V of 1 KiB each; the 64 x 64 scores take 32 KiB as doubles
    G g = gpass::parse_text<G>(R"(graph {
  %q = arg() {index = 0} -> (f32[1,1,64,4])
  %y = ai.onnx.preview::FlexAttention(%q, %q, %q)
  %r:0 = return(%y)
})");
    gpass::exec::eigen_cpu cpu({.threads = 1});
    gpass::exec::plan<gpass::exec::eigen_cpu> p(g, cpu, {.limits = {.max_tensor_bytes = 16384}});
    std::string m = "no error";
    try {
      (void)p.run({gpass::tensor(gpass::dtype::f32, {1, 1, 64, 4})});
    } catch (const gpass::error& e) {
      m = e.what();
    }
    CHECK(m.find("node 'y' (op FlexAttention): the scores: a tensor of 32768 bytes is over the limit") != std::string::npos);
  }
  SUBCASE("keys and values of different lengths") {
    const std::string m = message(R"(graph {
  %x = arg() {index = 0} -> (i64[2])
  %y = ai.onnx.ml::LabelEncoder(%x) {keys_int64s = [1, 2, 3], values_floats = [0.5, 1.5]}
  %r:0 = return(%y)
})", {gpass::tensor::from<std::int64_t>({1, 2})});
    CHECK(m.find("differ in length") != std::string::npos);
  }
}

}  // namespace gpass_test_onnx_functions
