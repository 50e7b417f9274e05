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
  SUBCASE("a domain imported twice at two opsets (found by the onnx fuzz target)") {
    auto m = calling_model(relu_function("F"));
    auto* o = m.add_opset_import();
    o->set_domain("ai.onnx");
    o->set_version(26);
    CHECK(import_error(m).find("the model imports the domain 'ai.onnx' twice, at opsets 18 and 26") != std::string::npos);
    auto* same = m.mutable_opset_import(static_cast<int>(m.opset_import_size()) - 1);
    same->set_version(18);  // the same opset twice is one import
    CHECK(import_error(m) == "no error");
    auto f = relu_function("F");
    auto* fo = f.add_opset_import();
    fo->set_domain("local");
    fo->set_version(1);
    fo = f.add_opset_import();
    fo->set_domain("local");
    fo->set_version(2);
    CHECK(import_error(calling_model(f)).find("model-local function 'F' imports the domain 'local' twice, at opsets 1 and 2") !=
          std::string::npos);
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

namespace gpass_test_onnx_functions {

namespace {

// Runs a one-node text-IR graph on `in` and returns its outputs.
std::vector<gpass::exec::value> run_text(const std::string& text, std::vector<gpass::exec::value> in) {
  G g = gpass::parse_text<G>(text);
  gpass::exec::eigen_cpu cpu({.threads = 1});
  gpass::exec::plan p(g, cpu);
  return p.run(std::move(in));
}

// The message of the gpass::error running `text` on `in` throws, or "no error".
std::string run_text_error(const std::string& text, std::vector<gpass::exec::value> in) {
  try {
    (void)run_text(text, std::move(in));
  } catch (const gpass::error& e) {
    return e.what();
  }
  return "no error";
}

std::vector<double> floats_of(const gpass::exec::value& v) {
  const auto& t = v.tensor();
  REQUIRE(t.element_type() == gpass::dtype::f32);
  return std::vector<double>(t.data<float>(), t.data<float>() + t.size());
}

double logistic(double x) { return 1 / (1 + std::exp(-x)); }

}  // namespace

TEST_CASE("onnx.functions.ai_onnx_ml_classic_models") {
  // LinearClassifier (int and string labels, SOFTMAX, binary LOGISTIC, double input),
  // LinearRegressor, SVMClassifier (RBF votes over 3 classes, POLY with probabilities, SIGMOID
  // binary, LINEAR binary with probabilities, linear mode), SVMRegressor (RBF, linear,
  // one_class POLY), TreeEnsembleRegressor (SUM over 2 targets with base values, AVERAGE, MIN,
  // MAX, double thresholds and weights with SOFTMAX), TreeEnsembleClassifier (multiclass with
  // base values and SOFTMAX, 4 classes, the binary forest and boosting forms, double
  // attributes), Scaler, Normalizer (MAX, L1, L2), Imputer (NaN, int64), OneHotEncoder (strings,
  // int64, floats cast), FeatureVectorizer (cut, padded; float, double, int64 inputs),
  // CategoryMapper (both ways): ONNX Runtime's outputs
  G g = gpass::read_onnx_file(dir / "onnx_ml_classic.onnx");
  {
    G t = g;
    gpass::pass_context ctx;
    gpass::infer_shapes(t, ctx);
    auto type = [&](const char* node, std::size_t k) { return t[t.at(node)].outputs.at(k).to_string(); };
    CHECK(type("lc_softmax_y", 0) == "str[8]");
    CHECK(type("lc_multi_y", 0) == "i64[8]");
    CHECK(type("lc_binary_y", 1) == "f32[8,2]");
    CHECK(type("svc_rbf_y", 1) == "f32[8,3]");
    CHECK(type("svc_sigmoid_binary_y", 1) == "f32[8,2]");
    CHECK(type("svc_poly_prob_y", 1) == "f32[8,3]");
    CHECK(type("svr_rbf", 0) == "f32[8,1]");
    CHECK(type("ter_sum", 0) == "f32[8,2]");
    CHECK(type("tec_multi_none_y", 1) == "f32[8,4]");
    CHECK(type("tec_binary_boost_y", 0) == "str[8]");
    CHECK(type("onehot_s", 0) == "f32[2,3,4]");
    CHECK(type("imputed_int", 0) == "i64[4,3]");
    CHECK(type("features", 0) == "f32[8,9]");
    CHECK(type("cat_names", 0) == "str[5]");
  }
  check_against_ort(g, "onnx_ml_classic", 54, 8);
}

TEST_CASE("onnx.functions.ai_onnx_ml_classic_spec_cases") {
  // where ONNX Runtime departs from the spec, or leaves a case to its own convention, the
  // values by hand
  using gpass::tensor;
  SUBCASE("TreeEnsembleRegressor: base values, one-target transforms, NaN at BRANCH_NEQ") {
    // x != 0.5 -> leaf 1 (target 0: 1.0, or 0.975), else leaf 2 (target 0: 2.0, or 0.025); a NaN
    // takes the branch the flag (0) names: the false one (ONNX Runtime: true, NaN != 0.5)
    const std::string tree = R"(nodes_falsenodeids = [2, 0, 0], nodes_featureids = [0, 0, 0], nodes_missing_value_tracks_true = [0, 0, 0], nodes_modes = ["BRANCH_NEQ", "LEAF", "LEAF"], nodes_nodeids = [0, 1, 2], nodes_treeids = [0, 0, 0], nodes_truenodeids = [1, 0, 0], nodes_values = [0.5, 0.0, 0.0], target_ids = [0, 0], target_nodeids = [1, 2], target_treeids = [0, 0])";
    const auto out = run_text(R"(graph {
  %x = arg() {index = 0} -> (f32[3,1])
  %y = ai.onnx.ml::TreeEnsembleRegressor(%x) {base_values = [0.5, 0.25], n_targets = 2, post_transform = "LOGISTIC", target_weights = [1.0, 2.0], )" + tree + R"(}
  %p = ai.onnx.ml::TreeEnsembleRegressor(%x) {n_targets = 1, post_transform = "PROBIT", target_weights = [0.975, 0.025], )" + tree + R"(}
  %r:0 = return(%y, %p)
})",
                              {tensor::from<float>({0.0f, 0.5f, std::nanf("")}).reshaped({3, 1})});
    const auto y = floats_of(out.at(0));
    // target 1 no leaf weighs: its base value (ONNX Runtime leaves it 0); LOGISTIC on each target
    const std::vector<double> want{logistic(1.5), logistic(0.25), logistic(2.5), logistic(0.25), logistic(2.5), logistic(0.25)};
    REQUIRE(y.size() == want.size());
    for (std::size_t i = 0; i < y.size(); ++i) CHECK(y[i] == doctest::Approx(want[i]).epsilon(1e-6));
    // PROBIT on one target, exact (ONNX Runtime: an approximation, and no transform but PROBIT for one target)
    const auto p = floats_of(out.at(1));
    CHECK(p[0] == doctest::Approx(1.959964).epsilon(1e-6));
    CHECK(p[1] == doctest::Approx(-1.959964).epsilon(1e-6));
    CHECK(p[2] == doctest::Approx(-1.959964).epsilon(1e-6));
  }
  SUBCASE("LinearClassifier binary without a transform, LinearRegressor on doubles") {
    // one row of coefficients for two labels: label by the sign, scores (1 - s, s)
    const auto out = run_text(R"(graph {
  %x = arg() {index = 0} -> (f64[2,2])
  %c:2 = ai.onnx.ml::LinearClassifier(%x) {classlabels_ints = [0, 1], coefficients = [2.0, -1.0], intercepts = [0.5]}
  %l = ai.onnx.ml::LinearRegressor(%x) {coefficients = [1.0, 0.0], intercepts = [-16777216.0]}
  %r:0 = return(%c:0, %c:1, %l)
})",
                              {tensor::from<double>({1.0, 1.0, 16777217.0, 2.0}).reshaped({2, 2})});
    CHECK(out.at(0).tensor() == tensor::from<std::int64_t>({1, 1}));
    const auto z = floats_of(out.at(1));
    CHECK(z[0] == doctest::Approx(-0.5));
    CHECK(z[1] == doctest::Approx(1.5));
    // double X is computed in double: 2^24 + 1 - 2^24 is 1 (0 through float, as ONNX Runtime casts)
    CHECK(floats_of(out.at(2)) == std::vector<double>{-16777215.0, 1.0});
  }
  SUBCASE("TreeEnsembleClassifier: two classes weighed both, binary with SOFTMAX") {
    // one tree: x <= 0 -> leaf 1 (class 0: 0.75, class 1: 0.25), else leaf 2 (0.25, 0.75): the
    // label is the argmax (ONNX Runtime writes label index 1 whenever class 1's score is positive)
    const std::string tree = R"(nodes_falsenodeids = [2, 0, 0], nodes_featureids = [0, 0, 0], nodes_modes = ["BRANCH_LEQ", "LEAF", "LEAF"], nodes_nodeids = [0, 1, 2], nodes_treeids = [0, 0, 0], nodes_truenodeids = [1, 0, 0], nodes_values = [0.0, 0.0, 0.0])";
    const auto out = run_text(R"(graph {
  %x = arg() {index = 0} -> (f32[2,1])
  %c:2 = ai.onnx.ml::TreeEnsembleClassifier(%x) {class_ids = [0, 1, 0, 1], class_nodeids = [1, 1, 2, 2], class_treeids = [0, 0, 0, 0], class_weights = [0.75, 0.25, 0.25, 0.75], classlabels_int64s = [3, 7], )" + tree + R"(}
  %b:2 = ai.onnx.ml::TreeEnsembleClassifier(%x) {class_ids = [0, 0], class_nodeids = [1, 2], class_treeids = [0, 0], class_weights = [0.25, -0.5], classlabels_strings = ["no", "yes"], post_transform = "SOFTMAX", )" + tree + R"(}
  %r:0 = return(%c:0, %c:1, %b:0, %b:1)
})",
                              {tensor::from<float>({-1.0f, 1.0f}).reshaped({2, 1})});
    CHECK(out.at(0).tensor() == tensor::from<std::int64_t>({3, 7}));
    CHECK(floats_of(out.at(1)) == std::vector<double>{0.75, 0.25, 0.25, 0.75});
    // a margin (negative weights): label by its sign, SOFTMAX of (-s, s) (ONNX Runtime: no transform)
    const tensor& labels = out.at(2).tensor();
    CHECK(labels.data<std::string>()[0] == "yes");
    CHECK(labels.data<std::string>()[1] == "no");
    const auto z = floats_of(out.at(3));
    CHECK(z[1] == doctest::Approx(logistic(0.5)));
    CHECK(z[0] == doctest::Approx(logistic(-0.5)));
    CHECK(z[3] == doctest::Approx(logistic(-1.0)));
  }
  SUBCASE("SVMRegressor applies post_transform") {  // (ONNX Runtime ignores it)
    const auto out = run_text(R"(graph {
  %x = arg() {index = 0} -> (f32[1,2])
  %y = ai.onnx.ml::SVMRegressor(%x) {coefficients = [1.0, 1.0], post_transform = "LOGISTIC", rho = [0.0]}
  %r:0 = return(%y)
})",
                              {tensor::from<float>({0.5f, 0.5f}).reshaped({1, 2})});
    CHECK(floats_of(out.at(0))[0] == doctest::Approx(logistic(1.0)));
  }
}

TEST_CASE("onnx.functions.ai_onnx_ml_classic_errors") {
  using gpass::tensor;
  const auto x = tensor::from<float>({1, 2, 3, 4}).reshaped({2, 2});
  auto expect = [](const std::string& m, const std::string& what) {
    INFO(m);
    CHECK(m.find("node 'y'") != std::string::npos);
    CHECK(m.find(what) != std::string::npos);
  };
  SUBCASE("coefficients that do not fit the features") {
    expect(run_text_error(R"(graph {
  %x = arg() {index = 0} -> (f32[2,2])
  %y:2 = ai.onnx.ml::LinearClassifier(%x) {classlabels_ints = [0, 1], coefficients = [1.0, 2.0, 3.0, 4.0, 5.0], intercepts = [0.0, 0.0]}
  %r:0 = return(%y:0, %y:1)
})", {x}),
           "coefficients has 5 values, 2 rows of X's 2 features need 4");
  }
  SUBCASE("a class id past the labels") {
    expect(run_text_error(R"(graph {
  %x = arg() {index = 0} -> (f32[2,2])
  %y:2 = ai.onnx.ml::TreeEnsembleClassifier(%x) {class_ids = [2], class_nodeids = [0], class_treeids = [0], class_weights = [1.0], classlabels_int64s = [0, 1], nodes_falsenodeids = [0], nodes_featureids = [0], nodes_modes = ["LEAF"], nodes_nodeids = [0], nodes_treeids = [0], nodes_truenodeids = [0], nodes_values = [0.0]}
  %r:0 = return(%y:0, %y:1)
})", {x}),
           "class id 2 (weight 0) is outside [0, 2)");
  }
  SUBCASE("a branch to a node the tree does not have") {
    expect(run_text_error(R"(graph {
  %x = arg() {index = 0} -> (f32[2,2])
  %y = ai.onnx.ml::TreeEnsembleRegressor(%x) {n_targets = 1, nodes_falsenodeids = [7, 0], nodes_featureids = [0, 0], nodes_modes = ["BRANCH_LEQ", "LEAF"], nodes_nodeids = [0, 1], nodes_treeids = [0, 0], nodes_truenodeids = [1, 0], nodes_values = [0.0, 0.0], target_ids = [0], target_nodeids = [1], target_treeids = [0], target_weights = [1.0]}
  %r:0 = return(%y)
})", {x}),
           "node 0 of tree 0 branches to node 7, which the tree does not have");
  }
  SUBCASE("a feature past X's") {
    expect(run_text_error(R"(graph {
  %x = arg() {index = 0} -> (f32[2,2])
  %y = ai.onnx.ml::TreeEnsembleRegressor(%x) {n_targets = 1, nodes_falsenodeids = [2, 0, 0], nodes_featureids = [5, 0, 0], nodes_modes = ["BRANCH_LEQ", "LEAF", "LEAF"], nodes_nodeids = [0, 1, 2], nodes_treeids = [0, 0, 0], nodes_truenodeids = [1, 0, 0], nodes_values = [0.0, 0.0, 0.0], target_ids = [0], target_nodeids = [1], target_treeids = [0], target_weights = [1.0]}
  %r:0 = return(%y)
})", {x}),
           "reads feature 5 of 2");
  }
  SUBCASE("an unknown post_transform") {
    expect(run_text_error(R"(graph {
  %x = arg() {index = 0} -> (f32[2,2])
  %y = ai.onnx.ml::LinearRegressor(%x) {coefficients = [1.0, 2.0], post_transform = "SIGMOID"}
  %r:0 = return(%y)
})", {x}),
           "post_transform must be NONE, SOFTMAX, LOGISTIC, SOFTMAX_ZERO or PROBIT, got 'SIGMOID'");
  }
  SUBCASE("support vectors per class that do not fit the labels") {
    expect(run_text_error(R"(graph {
  %x = arg() {index = 0} -> (f32[2,2])
  %y:2 = ai.onnx.ml::SVMClassifier(%x) {classlabels_ints = [0, 1], coefficients = [1.0, 1.0], rho = [0.0], support_vectors = [1.0, 2.0, 3.0, 4.0], vectors_per_class = [2]}
  %r:0 = return(%y:0, %y:1)
})", {x}),
           "vectors_per_class has 1 entries for 2 classes");
  }
  SUBCASE("an unknown category with zeros = 0") {
    expect(run_text_error(R"(graph {
  %x = arg() {index = 0} -> (i64[3])
  %y = ai.onnx.ml::OneHotEncoder(%x) {cats_int64s = [1, 2], zeros = 0}
  %r:0 = return(%y)
})", {tensor::from<std::int64_t>({1, 5, 2})}),
           "element 1 (5.000000) is not a category and zeros is 0");
  }
  SUBCASE("scale and offset sizes") {
    expect(run_text_error(R"(graph {
  %x = arg() {index = 0} -> (f32[2,2])
  %y = ai.onnx.ml::Scaler(%x) {offset = [1.0, 2.0, 3.0], scale = [1.0]}
  %r:0 = return(%y)
})", {x}),
           "offset has 3 values for 2 features");
  }
  SUBCASE("ZipMap: maps are refused by name") {
    // imported (an op of the ai.onnx.ml domain gpass keeps), inferred as of unknown type with
    // a note naming why (an optimizer still passes over the model), unrunnable
    auto m = onnx_test::make_model(17, 8);
    auto* o = m.add_opset_import();
    o->set_domain("ai.onnx.ml");
    o->set_version(1);
    auto* gp = m.mutable_graph();
    onnx_test::add_input(gp, "x", onnx_test::f32({2, 2}));
    auto* n = onnx_test::add_node(gp, "ZipMap", {"x"}, {"y"}, "y");
    n->set_domain("ai.onnx.ml");
    auto* a = onnx_test::add_attr(n, "classlabels_int64s", onnx::AttributeProto::INTS);
    a->add_ints(0);
    a->add_ints(1);
    onnx_test::add_output(gp, "y");
    G g = gpass::import_onnx(m);
    G t = g;
    gpass::pass_context ctx;
    REQUIRE_NOTHROW(gpass::infer_shapes(t, ctx));
    CHECK(t[t.at("y")].outputs[0].is_unknown());
    std::string notes;
    for (const auto& d : ctx.diagnostics()) notes += d.message + "\n";
    expect(notes, "ZipMap makes a sequence of maps, and gpass has no map type: its output type is unknown and it has no "
                  "kernel (unsupported op)");
    std::string ran = "no error";
    try {
      gpass::exec::eigen_cpu cpu({.threads = 1});
      gpass::exec::plan p(g, cpu);
    } catch (const gpass::error& e) {
      ran = e.what();
    }
    expect(ran, "(unsupported op)");
  }
}

}  // namespace gpass_test_onnx_functions
