// SPDX-License-Identifier: Apache-2.0
// Shape functions of the ONNX op versions after opset 17 (onnx 1.13 to 1.23): Reduce*-18 with
// axes as an input, Split-18 num_outputs, Pad-18 axes, Resize-18 axes and aspect-ratio
// policies, DFT-20's axis input, Quantize/DequantizeLinear-21/23 output types, and the ops
// new since: CenterCropPad, Col2Im, AffineGrid, BitCast, TensorScatter, CumProd, Bitwise*.

#include <doctest/doctest.h>

#include <string>
#include <string_view>

#include <gpass/io/text.hpp>
#include <gpass/ops/registry.hpp>
#include <gpass/passes/common/infer_shapes.hpp>

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_ops_onnx_recent_ops {

namespace {

using G = gpass::graph<>;

G infer(std::string_view body, int opset) {
  std::string text = "graph {opset_import = [\":" + std::to_string(opset) + "\"]} {\n" + std::string(body) + "\n}\n";
  G g = gpass::parse_text(text);
  gpass::pass_context ctx;
  gpass::infer_shapes(g, ctx);
  return g;
}

std::string y_of(std::string_view body, int opset, std::size_t port = 0) {
  G g = infer(body, opset);
  return g[g.at("y")].outputs.at(port).to_string();
}

std::string error_of(std::string_view body, int opset) {
  try {
    infer(body, opset);
  } catch (const gpass::error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("ops.onnx_recent.versions") {
  auto& r = gpass::op_registry::global();
  // every version after 17 that changed a signature has its own schema
  CHECK(r.find("", "ReduceMean", 17)->max_inputs == 1);
  CHECK(r.find("", "ReduceMean", 18)->max_inputs == 2);
  CHECK(r.find("", "Split", 18)->since_version == 18);
  CHECK(r.find("", "Pad", 19)->max_inputs == 4);
  CHECK(r.find("", "Cast", 24)->since_version == 24);
  CHECK(r.find("", "Cast", 18)->since_version == 1);
  CHECK(r.find("", "DFT", 20)->max_inputs == 3);
  CHECK(r.find("", "QuantizeLinear", 23)->since_version == 23);
  CHECK(r.find("", "SpaceToDepth", 28)->since_version == 28);
  CHECK(r.find("", "Mish", 17) == nullptr);
  CHECK(r.find("", "Mish", 18) != nullptr);
}

TEST_CASE("ops.onnx_recent.reduce_split_pad") {
  CHECK(y_of("%x = arg() {index = 0} -> (f32[2,3,4])\n%a = Constant() {value = tensor<i64[1]> [1]}\n"
             "%y = ReduceMax(%x, %a) {keepdims = 0}",
             18) == "f32[2,4]");
  CHECK(y_of("%x = arg() {index = 0} -> (bool[2,3])\n%y = ReduceMin(%x)", 20) == "bool[1,1]");
  G sp = infer("%x = arg() {index = 0} -> (f32[7,2])\n%y:3 = Split(%x) {num_outputs = 3}", 18);
  CHECK(sp[sp.at("y")].outputs.at(0).to_string() == "f32[3,2]");
  CHECK(sp[sp.at("y")].outputs.at(2).to_string() == "f32[1,2]");
  CHECK(error_of("%x = arg() {index = 0} -> (f32[6])\n%y:3 = Split(%x) {num_outputs = 2}", 18).find("num_outputs is 2") !=
        std::string::npos);
  CHECK(y_of("%x = arg() {index = 0} -> (f32[2,3,4])\n%p = Constant() {value = tensor<i64[4]> [1, 0, 2, 3]}\n"
             "%a = Constant() {value = tensor<i64[2]> [0, -1]}\n%c = Constant() {value = tensor<f32[]> [0.0]}\n"
             "%y = Pad(%x, %p, %c, %a)",
             18) == "f32[5,3,7]");
}

TEST_CASE("ops.onnx_recent.resize_dft_quant") {
  // Resize-18: sizes for the listed axes only; not_larger keeps the aspect ratio
  CHECK(y_of("%x = arg() {index = 0} -> (f32[1,3,20,40])\n%s = Constant() {value = tensor<i64[2]> [10, 10]}\n"
             "%y = Resize(%x, _, _, %s) {axes = [2, 3], keep_aspect_ratio_policy = \"not_larger\"}",
             18) == "f32[1,3,5,10]");
  CHECK(y_of("%x = arg() {index = 0} -> (f32[1,3,20,40])\n%s = Constant() {value = tensor<i64[2]> [10, 10]}\n"
             "%y = Resize(%x, _, _, %s) {axes = [2, 3], keep_aspect_ratio_policy = \"not_smaller\"}",
             18) == "f32[1,3,10,20]");
  CHECK(y_of("%x = arg() {index = 0} -> (f32[1,3,20,40])\n%s = Constant() {value = tensor<f32[1]> [0.5]}\n"
             "%y = Resize(%x, _, %s) {axes = [3]}",
             18) == "f32[1,3,20,20]");
  // DFT-20: axis input, default -2
  CHECK(y_of("%x = arg() {index = 0} -> (f32[2,8,3,1])\n%y = DFT(%x)", 20) == "f32[2,8,3,2]");
  CHECK(y_of("%x = arg() {index = 0} -> (f32[2,8,3,1])\n%a = Constant() {value = tensor<i64[]> [1]}\n"
             "%y = DFT(%x, _, %a) {onesided = 1}",
             20) == "f32[2,5,3,2]");
  CHECK(y_of("%x = arg() {index = 0} -> (f32[4,6])\n%s = Constant() {value = tensor<f32[4,3]> [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]}\n"
             "%y = QuantizeLinear(%x, %s) {axis = 1, block_size = 2, output_dtype = 5}",
             21) == "i16[4,6]");
  CHECK(y_of("%x = arg() {index = 0} -> (i8[4])\n%s = Constant() {value = tensor<f32[]> [1.0]}\n"
             "%y = DequantizeLinear(%x, %s) {output_dtype = 10}",
             23) == "f16[4]");
}

TEST_CASE("ops.onnx_recent.new_ops") {
  CHECK(y_of("%x = arg() {index = 0} -> (f32[5,8])\n%s = Constant() {value = tensor<i64[1]> [4]}\n"
             "%y = CenterCropPad(%x, %s) {axes = [-1]}",
             18) == "f32[5,4]");
  CHECK(y_of("%x = arg() {index = 0} -> (f32[1,10,12])\n%i = Constant() {value = tensor<i64[2]> [5, 5]}\n"
             "%b = Constant() {value = tensor<i64[2]> [1, 5]}\n%y = Col2Im(%x, %i, %b)",
             18) == "f32[1,2,5,5]");
  CHECK(y_of("%t = arg() {index = 0} -> (f32[2,2,3])\n%s = Constant() {value = tensor<i64[4]> [2, 3, 4, 5]}\n"
             "%y = AffineGrid(%t, %s)",
             20) == "f32[2,4,5,2]");
  CHECK(y_of("%x = arg() {index = 0} -> (f32[3])\n%y = BitCast(%x) {to = 6}", 26) == "i32[3]");
  CHECK(error_of("%x = arg() {index = 0} -> (f32[3])\n%y = BitCast(%x) {to = 7}", 26).find("the widths differ") !=
        std::string::npos);
  CHECK(y_of("%c = arg() {index = 0} -> (f32[2,2,8,4])\n%u = arg() {index = 1} -> (f32[2,2,1,4])\n%y = TensorScatter(%c, %u)",
             24) == "f32[2,2,8,4]");
  CHECK(y_of("%x = arg() {index = 0} -> (i32[2,3])\n%b = arg() {index = 1} -> (i32[3])\n%y = BitwiseXor(%x, %b)", 18) ==
        "i32[2,3]");
}

}  // namespace gpass_test_ops_onnx_recent_ops
