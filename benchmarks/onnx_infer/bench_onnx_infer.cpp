// SPDX-License-Identifier: Apache-2.0
// gpass ONNX import + shape inference vs ONNX's own shape inference on one synthetic model.
//
// Builds (with the protobuf API) an ONNX model of about 10^5 nodes: a chain of blocks shaped
// like a PyTorch export, each
//
//   c = Conv(x, W, B)  r = Relu(c)  a = Add(r, x)                     // residual conv
//   s = Shape(a)  n = Gather(s, 0)  n1 = Unsqueeze(n, [0])            // the batch dim
//   f = Reshape(a, Concat(n1, [C*H*W]))                               // flatten
//   m = MatMul(f, M)  mb = Add(m, Mb)  mr = Relu(mb)                  // dense layer
//   x' = Reshape(mr, Concat(n1, [C,H,W]))                             // back to NCHW
//
// (13 nodes a block; the weights are initializers shared by all blocks) with a symbolic batch
// dim `N` on the graph input. Then times, in the same process:
//   (a) gpass::import_onnx (ModelProto -> gpass graph; the model is already parsed),
//   (b) gpass::infer_shapes on the imported graph,
//   (c) onnx::shape_inference::InferShapes on a copy of the same ModelProto (default options),
//   (d) the same with data propagation on (so that ONNX follows Shape->...->Reshape too),
// each the best of `reps` runs, and prints ns/node and the ratio gpass (a+b) / ONNX (c).
// It does so for the model above ("dynamic") and for the same model with constant Reshape
// shapes ("static"): ONNX 1.12 does not follow computed shapes into Reshape (not even with
// data propagation), so on the dynamic model everything after the first Reshape is of
// unknown rank for ONNX, and cheap; on the static model both infer every shape.
//
// Usage: gpass_bench_onnx_infer [nodes=100000] [reps=3]

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <gpass/io/onnx.hpp>
#include <gpass/pass/context.hpp>
#include <gpass/passes/common/infer_shapes.hpp>

namespace {

constexpr std::int64_t C = 8, H = 8, W = 8;

onnx::TensorProto f32_tensor(const std::string& name, std::vector<std::int64_t> dims) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  std::int64_t n = 1;
  for (auto d : dims) {
    t.add_dims(d);
    n *= d;
  }
  for (std::int64_t i = 0; i < n; ++i) t.add_float_data(static_cast<float>((i * 7919) % 17) * 0.01f - 0.08f);
  return t;
}

onnx::TensorProto i64_tensor(const std::string& name, std::vector<std::int64_t> dims, std::vector<std::int64_t> v) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::INT64);
  for (auto d : dims) t.add_dims(d);
  for (auto x : v) t.add_int64_data(x);
  return t;
}

onnx::NodeProto* node(onnx::GraphProto* g, const char* op, std::vector<std::string> in, const std::string& out) {
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(out);
  for (auto& i : in) n->add_input(i);
  n->add_output(out);
  return n;
}

void ints_attr(onnx::NodeProto* n, const char* name, std::vector<std::int64_t> v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (auto x : v) a->add_ints(x);
}
void int_attr(onnx::NodeProto* n, const char* name, std::int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

/// The synthetic model with at least `target` nodes (whole blocks). `static_reshapes`: the
/// Reshapes take constant shapes (`[-1,C*H*W]`, `[-1,C,H,W]`) instead of the computed ones (the
/// Shape->Gather->Unsqueeze->Concat nodes stay, unused), so that ONNX 1.12, which does not follow
/// computed shapes into Reshape, infers every value too.
onnx::ModelProto make_model(long target, bool static_reshapes) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.set_producer_name("gpass_bench_onnx_infer");
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(13);
  auto* g = m.mutable_graph();
  g->set_name("synthetic");
  auto* in = g->add_input();
  in->set_name("x");
  auto* tt = in->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  tt->mutable_shape()->add_dim()->set_dim_param("N");
  for (auto d : {C, H, W}) tt->mutable_shape()->add_dim()->set_dim_value(d);

  *g->add_initializer() = f32_tensor("W", {C, C, 3, 3});
  *g->add_initializer() = f32_tensor("B", {C});
  *g->add_initializer() = f32_tensor("M", {C * H * W, C * H * W});
  *g->add_initializer() = f32_tensor("Mb", {C * H * W});
  *g->add_initializer() = i64_tensor("idx0", {}, {0});
  *g->add_initializer() = i64_tensor("axes0", {1}, {0});
  *g->add_initializer() = i64_tensor("flat", {1}, {C * H * W});
  *g->add_initializer() = i64_tensor("chw", {3}, {C, H, W});
  *g->add_initializer() = i64_tensor("fshape_c", {2}, {-1, C * H * W});
  *g->add_initializer() = i64_tensor("ishape_c", {4}, {-1, C, H, W});

  std::string x = "x";
  long blocks = (target + 12) / 13;
  for (long b = 0; b < blocks; ++b) {
    const std::string p = "b" + std::to_string(b) + "_";
    auto* conv = node(g, "Conv", {x, "W", "B"}, p + "conv");
    ints_attr(conv, "kernel_shape", {3, 3});
    ints_attr(conv, "pads", {1, 1, 1, 1});
    node(g, "Relu", {p + "conv"}, p + "relu");
    node(g, "Add", {p + "relu", x}, p + "res");
    node(g, "Shape", {p + "res"}, p + "shape");
    int_attr(node(g, "Gather", {p + "shape", "idx0"}, p + "batch"), "axis", 0);
    node(g, "Unsqueeze", {p + "batch", "axes0"}, p + "batch1");
    int_attr(node(g, "Concat", {p + "batch1", "flat"}, p + "fshape"), "axis", 0);
    node(g, "Reshape", {p + "res", static_reshapes ? "fshape_c" : p + "fshape"}, p + "flat");
    node(g, "MatMul", {p + "flat", "M"}, p + "mm");
    node(g, "Add", {p + "mm", "Mb"}, p + "mmb");
    node(g, "Relu", {p + "mmb"}, p + "mmr");
    int_attr(node(g, "Concat", {p + "batch1", "chw"}, p + "ishape"), "axis", 0);
    node(g, "Reshape", {p + "mmr", static_reshapes ? "ishape_c" : p + "ishape"}, p + "out");
    x = p + "out";
  }
  g->add_output()->set_name(x);
  return m;
}

using clock_type = std::chrono::steady_clock;
double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

std::string onnx_type_text(const onnx::ModelProto& m, const std::string& name) {
  for (const auto* list : {&m.graph().value_info(), &m.graph().output()})
    for (const auto& vi : *list)
      if (vi.name() == name && vi.has_type() && vi.type().has_tensor_type()) {
        const auto& t = vi.type().tensor_type();
        if (!t.has_shape()) return "[*]";
        std::string s = "[";
        for (int k = 0; k < t.shape().dim_size(); ++k) {
          const auto& d = t.shape().dim(k);
          s += k ? "," : "";
          s += d.has_dim_value() ? std::to_string(d.dim_value()) : d.has_dim_param() ? d.dim_param() : "?";
        }
        return s + "]";
      }
  return "(none)";
}

/// Times one model; see the file comment.
void run(const char* label, long target, bool static_reshapes, int reps) {
  auto t0 = clock_type::now();
  onnx::ModelProto model = make_model(target, static_reshapes);
  const double gen_s = seconds_since(t0);
  const long nodes = model.graph().node_size();
  const std::string out_name = model.graph().output(0).name();
  std::printf("== %s model: %ld ONNX nodes (%ld blocks), %d initializers, %.1f MB serialized; generated in %.3f s\n",
              label, nodes, nodes / 13, model.graph().initializer_size(), model.ByteSizeLong() / 1e6, gen_s);

  double import_s = 1e30, infer_s = 1e30, onnx_s = 1e30, onnx_dp_s = 1e30;
  std::string gpass_out, onnx_out, onnx_dp_out;
  std::size_t gpass_nodes = 0;
  for (int r = 0; r < reps; ++r) {
    t0 = clock_type::now();
    auto g = gpass::import_onnx(model);
    import_s = std::min(import_s, seconds_since(t0));
    gpass_nodes = g.num_nodes();

    gpass::pass_context ctx;
    t0 = clock_type::now();
    gpass::infer_shapes(g, ctx);
    infer_s = std::min(infer_s, seconds_since(t0));
    for (auto v : g.nodes())
      if (g[v].op == "return") gpass_out = g[g.input(v, 0).node].outputs[g.input(v, 0).port].to_string();

    onnx::ModelProto copy = model;
    t0 = clock_type::now();
    onnx::shape_inference::InferShapes(copy);
    onnx_s = std::min(onnx_s, seconds_since(t0));
    onnx_out = onnx_type_text(copy, out_name);

    onnx::ModelProto copy2 = model;
    t0 = clock_type::now();
    onnx::shape_inference::InferShapes(copy2, onnx::OpSchemaRegistry::Instance(),
                                       onnx::ShapeInferenceOptions(false, 0, true));
    onnx_dp_s = std::min(onnx_dp_s, seconds_since(t0));
    onnx_dp_out = onnx_type_text(copy2, out_name);
  }
  auto ns_per_node = [&](double s) { return s * 1e9 / static_cast<double>(nodes); };
  std::printf("gpass graph: %zu nodes (ONNX nodes + graph input, initializer constants, return)\n", gpass_nodes);
  std::printf("best of %d runs, ns per ONNX node:\n", reps);
  std::printf("  (a) gpass import_onnx            %10.1f ns/node  (%.3f s)\n", ns_per_node(import_s), import_s);
  std::printf("  (b) gpass infer_shapes           %10.1f ns/node  (%.3f s)\n", ns_per_node(infer_s), infer_s);
  std::printf("  (a+b) gpass import + infer       %10.1f ns/node  (%.3f s)\n", ns_per_node(import_s + infer_s),
              import_s + infer_s);
  std::printf("  (c) ONNX InferShapes             %10.1f ns/node  (%.3f s)\n", ns_per_node(onnx_s), onnx_s);
  std::printf("  (d) ONNX InferShapes, data prop  %10.1f ns/node  (%.3f s)\n", ns_per_node(onnx_dp_s), onnx_dp_s);
  std::printf("ratio gpass (a+b) / ONNX (c): %.2f   gpass (b) / ONNX (c): %.2f   gpass (a+b) / ONNX (d): %.2f\n",
              (import_s + infer_s) / onnx_s, infer_s / onnx_s, (import_s + infer_s) / onnx_dp_s);
  std::printf("output type: gpass %s | ONNX %s | ONNX with data propagation %s\n", gpass_out.c_str(),
              onnx_out.c_str(), onnx_dp_out.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  long target = argc > 1 ? std::atol(argv[1]) : 100000;
  int reps = argc > 2 ? std::max(1, std::atoi(argv[2])) : 3;
  run("dynamic (computed Reshape shapes)", target, false, reps);
  run("static (constant Reshape shapes)", target, true, reps);
  return 0;
}
