// SPDX-License-Identifier: Apache-2.0
// Shape functions of the ONNX op schemas, family by family, through the infer-shapes pass.

#include <doctest/doctest.h>

#include <string>
#include <string_view>

#include <gpass/io/text.hpp>
#include <gpass/passes/common/infer_shapes.hpp>

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_ops_onnx_ops {

namespace {

using G = gpass::graph<>;

// Runs infer-shapes on `body` (node lines) wrapped in a graph with `opset`; returns the graph.
G infer(std::string_view body, int opset = 17) {
  std::string text = "graph {opset_import = [\":" + std::to_string(opset) + "\"]} {\n" + std::string(body) + "\n}\n";
  G g = gpass::parse_text(text);
  gpass::pass_context ctx;
  gpass::infer_shapes(g, ctx);
  return g;
}

std::string out(const G& g, std::string_view node, std::size_t port = 0) {
  return g[g.at(node)].outputs.at(port).to_string();
}

// The type of node `y` in `body`.
std::string y_of(std::string_view body, int opset = 17, std::size_t port = 0) { return out(infer(body, opset), "y", port); }

std::string error_of(std::string_view body, int opset = 17) {
  try {
    infer(body, opset);
  } catch (const gpass::error& e) {
    return e.what();
  }
  return "no error";
}

std::string value_of(const G& g, std::string_view node) {
  const auto& a = g[g.at(node)].attrs;
  if (auto it = a.find("_incomplete_value"); it != a.end()) return it->second.as<gpass::shape>().to_string();
  if (auto it = a.find("_value"); it != a.end()) {
    const auto& t = it->second.as<gpass::tensor>();
    std::string s = "{";
    if (t.element_type() == gpass::dtype::int64)
      for (std::size_t i = 0; i < static_cast<std::size_t>(t.size()); ++i) s += (i ? "," : "") + std::to_string(t.values<std::int64_t>()[i]);
    else if (t.element_type() == gpass::dtype::bool_)
      for (std::size_t i = 0; i < static_cast<std::size_t>(t.size()); ++i) s += (i ? "," : "") + std::string(t.values<bool>()[i] ? "1" : "0");
    return s + "}";
  }
  return "<none>";
}

}  // namespace

TEST_CASE("ops.onnx.elementwise") {
  CHECK(y_of("%x = arg() {index = 0} -> (f32[n,3])\n%y = Relu(%x)") == "f32[n,3]");
  CHECK(y_of("%x = arg() {index = 0} -> (f32[2,3])\n%y = Selu(%x)") == "f32[2,3]");
  CHECK(y_of("%a = arg() {index = 0} -> (f32[n,1,5])\n%b = arg() {index = 1} -> (f32[4,1])\n%y = Add(%a, %b)") ==
        "f32[n,4,5]");
  CHECK(y_of("%a = arg() {index = 0} -> (i32[n])\n%b = arg() {index = 1} -> (i32[])\n%y = Mod(%a, %b)") == "i32[n]");
  // Pow: the exponent may have another dtype
  CHECK(y_of("%a = arg() {index = 0} -> (f32[3])\n%b = arg() {index = 1} -> (i64[])\n%y = Pow(%a, %b)") == "f32[3]");
  // opset 6: legacy broadcast of B to A
  CHECK(y_of("%a = arg() {index = 0} -> (f32[2,3,4])\n%b = arg() {index = 1} -> (f32[3])\n"
             "%y = Add(%a, %b) {axis = 1, broadcast = 1}",
             6) == "f32[2,3,4]");
  CHECK(error_of("%a = arg() {index = 0} -> (f32[2,3])\n%b = arg() {index = 1} -> (f32[3])\n%y = Add(%a, %b)", 6)
            .find("node 'y' (op Add): incompatible ranks 2 and 1") != std::string::npos);
  CHECK(y_of("%a = arg() {index = 0} -> (f32[2,1])\n%b = arg() {index = 1} -> (f32[3])\n"
             "%c = arg() {index = 2} -> (f32[1,1,1])\n%y = Max(%a, %b, %c)") == "f32[1,2,3]");
  CHECK(y_of("%x = arg() {index = 0} -> (f32[2,5])\n%lo = Constant() {value = tensor<f32[]> [0.0]}\n"
             "%y = Clip(%x, %lo, _)") == "f32[2,5]");
  CHECK(error_of("%x = arg() {index = 0} -> (f32[2,5])\n%y = Softmax(%x) {axis = 2}").find("axis 2 out of range for rank 2") !=
        std::string::npos);
  CHECK(y_of("%c = arg() {index = 0} -> (bool[n,1])\n%a = arg() {index = 1} -> (f32[3])\n"
             "%b = arg() {index = 2} -> (f32[])\n%y = Where(%c, %a, %b)") == "f32[n,3]");
  CHECK(y_of("%x = arg() {index = 0} -> (f32[1,3,4])\n%s = arg() {index = 1} -> (f32[3,1])\n%y = PRelu(%x, %s)") ==
        "f32[1,3,4]");
}

TEST_CASE("ops.onnx.casts_comparisons_logical") {
  CHECK(y_of("%x = arg() {index = 0} -> (f32[n])\n%y = Cast(%x) {to = 7}") == "i64[n]");
  CHECK(y_of("%x = arg() {index = 0} -> (f32[n])\n%t = arg() {index = 1} -> (f16[1])\n%y = CastLike(%x, %t)") == "f16[n]");
  CHECK(y_of("%a = arg() {index = 0} -> (i64[n,1])\n%b = arg() {index = 1} -> (i64[4])\n%y = Greater(%a, %b)") ==
        "bool[n,4]");
  CHECK(y_of("%a = arg() {index = 0} -> (bool[2])\n%y = Not(%a)") == "bool[2]");
  CHECK(y_of("%a = arg() {index = 0} -> (f32[2])\n%y = IsNaN(%a)") == "bool[2]");
  // values: a cast keeps the dims; Equal compares symbols
  G g = infer("%x = arg() {index = 0} -> (f32[n,3])\n%s = Shape(%x)\n%c = Cast(%s) {to = 6}\n"
              "%t = Constant() {value = tensor<i64[2]> [5, 3]}\n%e = Equal(%s, %t)\n%f = Equal(%s, %s)");
  CHECK(out(g, "c") == "i32[2]");
  CHECK(value_of(g, "c") == "[n,3]");
  CHECK(value_of(g, "e") == "[?,1]");
  CHECK(value_of(g, "f") == "{1,1}");
}

TEST_CASE("ops.onnx.reductions") {
  CHECK(y_of("%x = arg() {index = 0} -> (f32[n,3,4])\n%y = ReduceMean(%x) {axes = [1]}") == "f32[n,1,4]");
  CHECK(y_of("%x = arg() {index = 0} -> (f32[n,3,4])\n%y = ReduceMax(%x) {axes = [-1, 0], keepdims = 0}") == "f32[3]");
  CHECK(y_of("%x = arg() {index = 0} -> (f32[n,3,4])\n%y = ReduceL2(%x) {keepdims = 0}") == "f32[]");
  CHECK(y_of("%x = arg() {index = 0} -> (f32[n,3,4])\n%a = Constant() {value = tensor<i64[1]> [1]}\n"
             "%y = ReduceSum(%x, %a) {keepdims = 0}") == "f32[n,4]");
  CHECK(y_of("%x = arg() {index = 0} -> (f32[n,3,4])\n%a = arg() {index = 1} -> (i64[2])\n"
             "%y = ReduceSum(%x, %a) {keepdims = 0}") == "f32[?]");
  CHECK(y_of("%x = arg() {index = 0} -> (f32[n,3,4])\n%y = ReduceSum(%x) {axes = [1]}", 11) == "f32[n,1,4]");
  CHECK(y_of("%x = arg() {index = 0} -> (f32[n,3])\n%y = ArgMax(%x) {axis = 1, keepdims = 0}") == "i64[n]");
  // the element count computed from Shape stays symbolic
  G g = infer("%x = arg() {index = 0} -> (f32[n,3,4])\n%s = Shape(%x)\n%y = ReduceProd(%s) {keepdims = 0}");
  CHECK(out(g, "y") == "i64[]");
  CHECK(value_of(g, "y") == "[12*n]");
}

TEST_CASE("ops.onnx.convolution_and_pooling") {
  CHECK(y_of("%x = arg() {index = 0} -> (f32[1,3,32,32])\n%w = arg() {index = 1} -> (f32[8,3,3,3])\n"
             "%y = Conv(%x, %w) {pads = [1, 1, 1, 1], strides = [2, 2]}") == "f32[1,8,16,16]");
  CHECK(y_of("%x = arg() {index = 0} -> (f32[b,4,h,w])\n%w = arg() {index = 1} -> (f32[6,2,3,3])\n"
             "%y = Conv(%x, %w) {group = 2}") == "f32[b,6,h-2,w-2]");
  CHECK(y_of("%x = arg() {index = 0} -> (f32[1,3,7,7])\n%w = arg() {index = 1} -> (f32[8,3,3,3])\n"
             "%y = Conv(%x, %w) {auto_pad = \"SAME_UPPER\", strides = [2, 2]}") == "f32[1,8,4,4]");
  CHECK(y_of("%x = arg() {index = 0} -> (f32[1,3,7,7])\n%w = arg() {index = 1} -> (f32[8,3,3,3])\n"
             "%y = Conv(%x, %w) {dilations = [2, 2]}") == "f32[1,8,3,3]");
  CHECK(error_of("%x = arg() {index = 0} -> (f32[1,3,7,7])\n%w = arg() {index = 1} -> (f32[8,4,3,3])\n%y = Conv(%x, %w)")
            .find("node 'y' (op Conv): incompatible dims 3 and 4") != std::string::npos);
  CHECK(y_of("%x = arg() {index = 0} -> (f32[1,1,3,3])\n%w = arg() {index = 1} -> (f32[1,2,3,3])\n"
             "%y = ConvTranspose(%x, %w) {strides = [3, 2]}") == "f32[1,2,9,7]");
  G g = infer("%x = arg() {index = 0} -> (f32[1,3,5,5])\n"
              "%y:2 = MaxPool(%x) {ceil_mode = 1, kernel_shape = [2, 2], strides = [2, 2]}");
  CHECK(out(g, "y", 0) == "f32[1,3,3,3]");
  CHECK(out(g, "y", 1) == "i64[1,3,3,3]");
  CHECK(y_of("%x = arg() {index = 0} -> (f32[1,3,5,5])\n%y = AveragePool(%x) {kernel_shape = [2, 2], strides = [2, 2]}") ==
        "f32[1,3,2,2]");
  CHECK(y_of("%x = arg() {index = 0} -> (f32[n,3,h,w])\n%y = GlobalAveragePool(%x)") == "f32[n,3,1,1]");
}

TEST_CASE("ops.onnx.normalization_dropout_resize_rnn") {
  G g = infer("%x = arg() {index = 0} -> (f32[n,3,8,8])\n%s = arg() {index = 1} -> (f32[3])\n"
              "%y:3 = BatchNormalization(%x, %s, %s, %s, %s) {training_mode = 1}");
  CHECK(out(g, "y", 0) == "f32[n,3,8,8]");
  CHECK(out(g, "y", 1) == "f32[3]");
  G l = infer("%x = arg() {index = 0} -> (f16[n,5,4])\n%s = arg() {index = 1} -> (f16[4])\n"
              "%y:3 = LayerNormalization(%x, %s) {axis = -1}");
  CHECK(out(l, "y", 0) == "f16[n,5,4]");
  CHECK(out(l, "y", 1) == "f32[n,5,1]");
  G d = infer("%x = arg() {index = 0} -> (f32[n,5])\n%y:2 = Dropout(%x)");
  CHECK(out(d, "y", 1) == "bool[n,5]");
  CHECK(y_of("%x = arg() {index = 0} -> (f32[1,3,4,n])\n%s = Constant() {value = tensor<f32[4]> [1.0, 1.0, 1.5, 2.0]}\n"
             "%y = Resize(%x, _, %s)") == "f32[1,3,6,2*n]");
  CHECK(y_of("%x = arg() {index = 0} -> (f32[1,3,4,4])\n%s = Constant() {value = tensor<i64[4]> [1, 3, 9, 10]}\n"
             "%y = Resize(%x, _, _, %s)") == "f32[1,3,9,10]");
  G r = infer("%x = arg() {index = 0} -> (f32[t,b,10])\n%w = arg() {index = 1} -> (f32[2,80,10])\n"
              "%rr = arg() {index = 2} -> (f32[2,80,20])\n"
              "%y:3 = LSTM(%x, %w, %rr) {direction = \"bidirectional\", hidden_size = 20}");
  CHECK(out(r, "y", 0) == "f32[t,2,b,20]");
  CHECK(out(r, "y", 2) == "f32[2,b,20]");
}

TEST_CASE("ops.onnx.shape_ops") {
  G s = infer("%x = arg() {index = 0} -> (f32[n,3,4,5])\n%y = Shape(%x) {end = -1, start = 1}\n%z = Size(%x)");
  CHECK(out(s, "y") == "i64[2]");
  CHECK(value_of(s, "y") == "{3,4}");
  CHECK(value_of(s, "z") == "[60*n]");
  CHECK(y_of("%x = arg() {index = 0} -> (f32[n,3,4,5])\n%y = Flatten(%x) {axis = 2}") == "f32[3*n,20]");
  CHECK(y_of("%x = arg() {index = 0} -> (f32[1,n,1])\n%y = Squeeze(%x)") == "f32[*]");  // n might be 1
  CHECK(y_of("%x = arg() {index = 0} -> (f32[1,3,1])\n%y = Squeeze(%x)") == "f32[3]");
  CHECK(y_of("%x = arg() {index = 0} -> (f32[3,4])\n%a = Constant() {value = tensor<i64[2]> [0, -1]}\n%y = Unsqueeze(%x, %a)") ==
        "f32[1,3,4,1]");
  CHECK(y_of("%x = arg() {index = 0} -> (f32[3,4])\n%y = Unsqueeze(%x) {axes = [1]}", 11) == "f32[3,1,4]");
  CHECK(error_of("%x = arg() {index = 0} -> (f32[3,4])\n%a = Constant() {value = tensor<i64[1]> [0]}\n%y = Squeeze(%x, %a)")
            .find("cannot squeeze axis 0 of size 3") != std::string::npos);
  G sp = infer("%x = arg() {index = 0} -> (f32[n,6])\n%y:3 = Split(%x) {axis = 1}");
  CHECK(out(sp, "y", 2) == "f32[n,2]");
  G sp2 = infer("%x = arg() {index = 0} -> (f32[2*n,6])\n%s = Constant() {value = tensor<i64[2]> [2, 4]}\n"
                "%y:2 = Split(%x, %s) {axis = -1}\n%z:2 = Split(%x)");
  CHECK(out(sp2, "y", 1) == "f32[2*n,4]");
  CHECK(out(sp2, "z", 1) == "f32[n,6]");
  CHECK(y_of("%x = arg() {index = 0} -> (f32[10,n])\n%y = Slice(%x) {axes = [0, 1], ends = [8, 9223372036854775807], starts = [2, 1]}",
             9) == "f32[6,n-1]");
  // min(n, 1000000) - 1 is not affine
  CHECK(y_of("%x = arg() {index = 0} -> (f32[10,n])\n%y = Slice(%x) {axes = [1], ends = [1000000], starts = [1]}", 9) ==
        "f32[10,?]");
  // an end of 10^9 (tf2onnx's masked ends) is "to the end": n - 1
  CHECK(y_of("%x = arg() {index = 0} -> (f32[10,n])\n%y = Slice(%x) {axes = [1], ends = [1000000000], starts = [1]}", 9) ==
        "f32[10,n-1]");
  CHECK(y_of("%x = arg() {index = 0} -> (f32[n])\n%y = Slice(%x) {ends = [-1], starts = [-3]}", 9) == "f32[2]");
  CHECK(y_of("%x = arg() {index = 0} -> (f32[10,5])\n%st = Constant() {value = tensor<i64[2]> [-1, 0]}\n"
             "%en = Constant() {value = tensor<i64[2]> [-11, 5]}\n%ax = Constant() {value = tensor<i64[2]> [0, 1]}\n"
             "%sp = Constant() {value = tensor<i64[2]> [-3, 2]}\n%y = Slice(%x, %st, %en, %ax, %sp)") == "f32[4,3]");
  CHECK(y_of("%x = arg() {index = 0} -> (f32[a,b,c])\n%i = arg() {index = 1} -> (i64[2,3])\n%y = Gather(%x, %i) {axis = 1}") ==
        "f32[a,2,3,c]");
  CHECK(y_of("%x = arg() {index = 0} -> (f32[2,3,4])\n%i = arg() {index = 1} -> (i64[5,2])\n%y = GatherND(%x, %i)") ==
        "f32[5,4]");
  CHECK(y_of("%x = arg() {index = 0} -> (f32[a,b,c])\n%y = Transpose(%x) {perm = [2, 0, 1]}") == "f32[c,a,b]");
  CHECK(y_of("%x = arg() {index = 0} -> (f32[a,b,c])\n%y = Transpose(%x)") == "f32[c,b,a]");
  CHECK(y_of("%x = arg() {index = 0} -> (f32[3,1])\n%s = Constant() {value = tensor<i64[3]> [2, 1, 6]}\n%y = Expand(%x, %s)") ==
        "f32[2,3,6]");
  CHECK(y_of("%x = arg() {index = 0} -> (f32[n,2])\n%s = Constant() {value = tensor<i64[2]> [3, 2]}\n%y = Tile(%x, %s)") ==
        "f32[3*n,4]");
  CHECK(y_of("%x = arg() {index = 0} -> (f32[n,2])\n%p = Constant() {value = tensor<i64[4]> [1, 0, 2, -1]}\n%y = Pad(%x, %p)") ==
        "f32[n+3,1]");
  CHECK(y_of("%x = arg() {index = 0} -> (f32[2,2])\n%y = Pad(%x) {pads = [1, 1, 1, 1]}", 2) == "f32[4,4]");
  // sizes are never negative: Tile's repeats must not be, nor any size a shape function takes
  // from a value (Expand's shape) (the negative shapes were handed on: a fuzzed Tile with repeats
  // near INT64_MIN overflowed the symbol table's arithmetic)
  CHECK(error_of("%x = arg() {index = 0} -> (f32[n,2])\n%s = Constant() {value = tensor<i64[2]> [-9223372036854775807, 2]}\n"
                 "%y = Tile(%x, %s)")
            .find("repeats[0] is -9223372036854775807 (repeats must not be negative)") != std::string::npos);
  const std::string neg = error_of("%x = arg() {index = 0} -> (f32[1,2])\n%s = Constant() {value = tensor<i64[2]> [-3, 2]}\n"
                                   "%y = Expand(%x, %s)");
  CHECK(neg == "gpass: pass 'infer-shapes': node 'y' (op Expand): output 0 would have a negative size -3 (dim 0 of [-3,2])");
  // window attributes: the extent (kernel - 1) * dilation + 1 and the padded input were
  // signed overflows (UB) for huge attributes
  CHECK(error_of("%x = arg() {index = 0} -> (f32[1,1,8,8])\n%y = MaxPool(%x) {dilations = [4611686018427387904, 1], "
                 "kernel_shape = [3, 1]}", 12)
            .find("kernel_shape x dilations") != std::string::npos);
  CHECK(error_of("%x = arg() {index = 0} -> (f32[1,1,8,8])\n%y = AveragePool(%x) {kernel_shape = [2, 2], "
                 "pads = [9223372036854775807, 0, 9223372036854775807, 0]}")
            .find("pads") != std::string::npos);
  CHECK(error_of("%x = arg() {index = 0} -> (f32[1,1,8,8])\n%y = MaxPool(%x) {kernel_shape = [0, 2]}", 12)
            .find("kernel_shape must be positive") != std::string::npos);
  CHECK(error_of("%x = arg() {index = 0} -> (f32[1,1,8,8])\n%w = arg() {index = 1} -> (f32[1,1,3,3])\n"
                 "%y = ConvTranspose(%x, %w) {pads = [-9223372036854775807, 0, -9223372036854775807, 0]}")
            .find("pads") != std::string::npos);
  // a negative batch_dims wrapped (as size_t) and gave a wrong shape
  CHECK(error_of("%x = arg() {index = 0} -> (f32[2,3,4])\n%i = arg() {index = 1} -> (i64[5,1])\n"
                 "%y = GatherND(%x, %i) {batch_dims = -1}", 13)
            .find("batch_dims must not be negative, got -1") != std::string::npos);
  for (const char* op : {"DepthToSpace", "SpaceToDepth"})  // blocksize^2 was a signed overflow (UB)
    CHECK(error_of(std::string("%x = arg() {index = 0} -> (f32[1,4,2,2])\n%y = ") + op + "(%x) {blocksize = 4294967296}")
              .find("blocksize 4294967296 is too large (its square overflows int64)") != std::string::npos);
  // sizes and counts from attributes and constant inputs: sums, ceil-divisions and steps near
  // INT64_MAX were signed overflows (UB), doubles past int64 were cast (UB, a garbage size)
  CHECK(error_of("%x = arg() {index = 0} -> (f32[4])\n%s = Constant() {value = tensor<i64[2]> [9223372036854775807, "
                 "9223372036854775807]}\n%y:2 = Split(%x, %s)")
            .find("split sizes sum past int64") != std::string::npos);
  G sp18 = infer("%x = arg() {index = 0} -> (f32[9223372036854775807])\n%y:2 = Split(%x) {num_outputs = 2}", 18);
  CHECK(out(sp18, "y", 0) == "f32[4611686018427387904]");
  CHECK(out(sp18, "y", 1) == "f32[4611686018427387903]");
  CHECK(y_of("%x = arg() {index = 0} -> (f32[10])\n%b = Constant() {value = tensor<i64[1]> [0]}\n"
             "%e = Constant() {value = tensor<i64[1]> [10]}\n%a = Constant() {value = tensor<i64[1]> [0]}\n"
             "%s = Constant() {value = tensor<i64[1]> [9223372036854775807]}\n%y = Slice(%x, %b, %e, %a, %s)") == "f32[1]");
  CHECK(y_of("%x = arg() {index = 0} -> (f32[10])\n%b = Constant() {value = tensor<i64[1]> [9]}\n"
             "%e = Constant() {value = tensor<i64[1]> [-20]}\n%a = Constant() {value = tensor<i64[1]> [0]}\n"
             "%s = Constant() {value = tensor<i64[1]> [-9223372036854775808]}\n%y = Slice(%x, %b, %e, %a, %s)") == "f32[1]");
  // Range: integers counted exactly (through doubles 2^53 + 1 lost its 1, and near INT64_MAX
  // limit - start was 0); counts past int64 fail
  CHECK(y_of("%a = Constant() {value = tensor<i64[]> [0]}\n%b = Constant() {value = tensor<i64[]> [9007199254740993]}\n"
             "%c = Constant() {value = tensor<i64[]> [1]}\n%y = Range(%a, %b, %c)") == "i64[9007199254740993]");
  G rt = infer("%a = Constant() {value = tensor<i64[]> [9223372036854775800]}\n"
               "%b = Constant() {value = tensor<i64[]> [9223372036854775807]}\n"
               "%c = Constant() {value = tensor<i64[]> [3]}\n%y = Range(%a, %b, %c)");
  CHECK(out(rt, "y") == "i64[3]");
  CHECK(value_of(rt, "y") == "{9223372036854775800,9223372036854775803,9223372036854775806}");
  CHECK(error_of("%a = Constant() {value = tensor<i64[]> [-9223372036854775807]}\n"
                 "%b = Constant() {value = tensor<i64[]> [9223372036854775807]}\n"
                 "%c = Constant() {value = tensor<i64[]> [1]}\n%y = Range(%a, %b, %c)")
            .find("the range has too many elements") != std::string::npos);
  CHECK(error_of("%a = Constant() {value = tensor<f32[]> [0.0]}\n%b = Constant() {value = tensor<f32[]> [1e30]}\n"
                 "%c = Constant() {value = tensor<f32[]> [1.0]}\n%y = Range(%a, %b, %c)")
            .find("the range has too many elements") != std::string::npos);
  CHECK(error_of("%i = arg() {index = 0} -> (i64[3])\n%d = Constant() {value = tensor<f32[]> [1e30]}\n"
                 "%v = arg() {index = 1} -> (f32[2])\n%y = OneHot(%i, %d, %v)")
            .find("is not a size (NaN, or past int64)") != std::string::npos);
  CHECK(error_of("%x = arg() {index = 0} -> (f32[1,4,9])\n%i = Constant() {value = tensor<i64[2]> [3, 3]}\n"
                 "%b = Constant() {value = tensor<i64[2]> [4294967296, 4294967296]}\n%y = Col2Im(%x, %i, %b)", 18)
            .find("the product of block_shape [4294967296,4294967296] overflows int64") != std::string::npos);
  CHECK(error_of("%x = arg() {index = 0} -> (f32[1,1,4,4])\n%s = Constant() {value = tensor<f32[4]> [1.0, 1.0, 1e30, 1.0]}\n"
                 "%y = Resize(%x, _, %s)")
            .find("makes a size of 4 past int64") != std::string::npos);
  CHECK(error_of("%x = arg() {index = 0} -> (f32[1,1,1,1000])\n%s = Constant() {value = tensor<i64[2]> [4611686018427387904, 1]}\n"
                 "%y = Resize(%x, _, _, %s) {axes = [2, 3], keep_aspect_ratio_policy = \"not_smaller\"}", 18)
            .find("the aspect-ratio scale") != std::string::npos);
  for (const char* fl : {"12", "-9223372036854775808"})  // longer than the signal: one frame; INT64_MIN: UB
    CHECK(error_of(std::string("%x = arg() {index = 0} -> (f32[1,10,1])\n%s = Constant() {value = tensor<i64[]> [4]}\n"
                               "%l = Constant() {value = tensor<i64[]> [") + fl + "]}\n%y = STFT(%x, %s, _, %l)")
              .find("must be in [1, 10] (the signal length)") != std::string::npos);
  CHECK(error_of("%x = arg() {index = 0} -> (i64[5])\n%y = TfIdfVectorizer(%x) {max_gram_length = 1, max_skip_count = 0, "
                 "min_gram_length = 1, mode = \"TF\", ngram_counts = [0], ngram_indexes = [9223372036854775807], "
                 "pool_int64s = [1]}")
            .find("ngram_indexes has 9223372036854775807") != std::string::npos);
  CHECK(error_of("%a = arg() {index = 0} -> (f32[2,3])\n%y = ai.onnx.ml::FeatureVectorizer(%a, %a) "
                 "{inputdimensions = [9223372036854775807, 1]}")
            .find("inputdimensions sum past int64") != std::string::npos);
  CHECK(error_of("%a = arg() {index = 0} -> (f32[2,3])\n%y:2 = ai.onnx.ml::SVMClassifier(%a) "
                 "{classlabels_ints = [0, 1], vectors_per_class = [9223372036854775807, 1]}")
            .find("vectors_per_class sums past int64") != std::string::npos);
  CHECK(out(infer("%x = arg() {index = 0} -> (f32[9223372036854775807])\n"
                  "%c = Constant() {value = tensor<i64[]> [9223372036854775807]}\n%y = SplitToSequence(%x, %c)"),
            "y") == "list<f32[9223372036854775807], 1>");
  // a negative num_scan_inputs wrapped (as size_t) past the input count check
  CHECK(error_of("%s = arg() {index = 0} -> (f32[2])\n%y:1 = Scan(_, %s) {body = @b, num_scan_inputs = -1}\n}\n"
                 "func @b {\n%e:1 = function_entry()\n%r:0 = return(%e:0)", 8)
            .find("num_scan_inputs must not be negative, got -1") != std::string::npos);
  // value propagation: INT64_MIN / -1, % -1 and -INT64_MIN are UB (the first two trap); a
  // double past the integer type (a Cast of 1e30) is not cast: the value is left to run time
  const char* min = "%a = Constant() {value = tensor<i64[]> [-9223372036854775808]}\n"
                    "%b = Constant() {value = tensor<i64[]> [-1]}\n";
  CHECK(value_of(infer(std::string(min) + "%y = Mod(%a, %b)"), "y") == "{0}");
  CHECK(value_of(infer(std::string(min) + "%y = Div(%a, %b)"), "y") == "[?]");
  CHECK(value_of(infer(std::string(min) + "%y = Abs(%a)"), "y") == "[?]");
  CHECK(value_of(infer("%a = Constant() {value = tensor<f32[]> [1e30]}\n%y = Cast(%a) {to = 7}"), "y") == "<none>");
  // a declared length of a shape input past any real rank allocated that many dims
  CHECK(y_of("%s = arg() {index = 0} -> (i64[9223372036854775807])\n%y = ConstantOfShape(%s)") == "f32[*]");
  CHECK(y_of("%x = arg() {index = 0} -> (f32[2])\n%s = arg() {index = 1} -> (i64[9223372036854775807])\n"
             "%y = Expand(%x, %s)") == "f32[*]");
  CHECK(y_of("%x = arg() {index = 0} -> (f32[2])\n%s = arg() {index = 1} -> (i64[9223372036854775807])\n"
             "%y = Unsqueeze(%x, %s)") == "f32[*]");
  G rg = infer("%a = Constant() {value = tensor<i64[]> [1]}\n%b = Constant() {value = tensor<i64[]> [10]}\n"
               "%c = Constant() {value = tensor<i64[]> [3]}\n%y = Range(%a, %b, %c)");
  CHECK(out(rg, "y") == "i64[3]");
  CHECK(value_of(rg, "y") == "{1,4,7}");
  CHECK(y_of("%x = arg() {index = 0} -> (f32[n,3])\n%s = Shape(%x)\n%y = ConstantOfShape(%s)") == "f32[n,3]");
  CHECK(y_of("%i = arg() {index = 0} -> (i64[n,2])\n%d = Constant() {value = tensor<i64[]> [10]}\n"
             "%v = arg() {index = 1} -> (f32[2])\n%y = OneHot(%i, %d, %v) {axis = 1}") == "f32[n,10,2]");
  G tk = infer("%x = arg() {index = 0} -> (f32[n,20])\n%k = Constant() {value = tensor<i64[1]> [5]}\n%y:2 = TopK(%x, %k)");
  CHECK(out(tk, "y", 0) == "f32[n,5]");
  CHECK(out(tk, "y", 1) == "i64[n,5]");
  CHECK(y_of("%x = arg() {index = 0} -> (f32[1,8,2,3])\n%y = DepthToSpace(%x) {blocksize = 2}") == "f32[1,2,4,6]");
  CHECK(y_of("%x = arg() {index = 0} -> (f32[1,2,4,6])\n%y = SpaceToDepth(%x) {blocksize = 2}") == "f32[1,8,2,3]");
  G c = infer("%y = Constant() {value_ints = [1, 2, 3]}\n%z = Constant() {value_float = 2.5}");
  CHECK(out(c, "y") == "i64[3]");
  CHECK(out(c, "z") == "f32[]");
}

TEST_CASE("ops.onnx.matmul_gemm_einsum") {
  CHECK(y_of("%a = arg() {index = 0} -> (f32[b,1,n,k])\n%w = arg() {index = 1} -> (f32[3,k,m])\n%y = MatMul(%a, %w)") ==
        "f32[b,3,n,m]");
  CHECK(y_of("%a = arg() {index = 0} -> (f32[4])\n%w = arg() {index = 1} -> (f32[2,4,5])\n%y = MatMul(%a, %w)") ==
        "f32[2,5]");
  CHECK(y_of("%a = arg() {index = 0} -> (f32[2,4])\n%w = arg() {index = 1} -> (f32[4])\n%y = MatMul(%a, %w)") == "f32[2]");
  CHECK(y_of("%a = arg() {index = 0} -> (f32[4,m])\n%b = arg() {index = 1} -> (f32[n,4])\n%c = arg() {index = 2} -> (f32[n])\n"
             "%y = Gemm(%a, %b, %c) {transA = 1, transB = 1}") == "f32[m,n]");
  CHECK(y_of("%a = arg() {index = 0} -> (f32[b,i,k])\n%w = arg() {index = 1} -> (f32[b,k,j])\n"
             "%y = Einsum(%a, %w) {equation = \"bik,bkj->bij\"}") == "f32[b,i,j]");
  CHECK(y_of("%a = arg() {index = 0} -> (f32[2,3,4])\n%y = Einsum(%a) {equation = \"...ij->...ji\"}") == "f32[2,4,3]");
  CHECK(y_of("%a = arg() {index = 0} -> (f32[3,5])\n%b = arg() {index = 1} -> (f32[5])\n%y = Einsum(%a, %b) {equation = \"ij,j\"}") ==
        "f32[3]");
  CHECK(y_of("%a = arg() {index = 0} -> (f32[n,3,3])\n%y = Det(%a)") == "f32[n]");
}

TEST_CASE("ops.onnx.sequences") {
  G g = infer("%a = arg() {index = 0} -> (f32[2,3])\n%b = arg() {index = 1} -> (f32[2,3])\n"
              "%s = SequenceConstruct(%a, %b)\n%n = SequenceLength(%s)\n%i = Constant() {value = tensor<i64[]> [0]}\n"
              "%e = SequenceAt(%s, %i)\n%c = ConcatFromSequence(%s) {axis = 0}\n%d = ConcatFromSequence(%s) {axis = 0, new_axis = 1}\n"
              "%t = SplitToSequence(%a) {axis = 1, keepdims = 0}");
  CHECK(out(g, "s") == "list<f32[2,3], 2>");
  CHECK(value_of(g, "n") == "{2}");
  CHECK(out(g, "e") == "f32[2,3]");
  CHECK(out(g, "c") == "f32[4,3]");
  CHECK(out(g, "d") == "f32[2,2,3]");
  CHECK(out(g, "t") == "list<f32[2], 3>");
}

TEST_CASE("ops.onnx.misc") {
  CHECK(y_of("%y = RandomNormal() {shape = [2, 3]}") == "f32[2,3]");
  CHECK(y_of("%x = arg() {index = 0} -> (f64[n])\n%y = RandomUniformLike(%x)") == "f64[n]");
  CHECK(y_of("%x = arg() {index = 0} -> (f32[n,5,2])\n%t = arg() {index = 1} -> (i64[n,2])\n%y = NegativeLogLikelihoodLoss(%x, %t)") ==
        "f32[]");
  CHECK(y_of("%x = arg() {index = 0} -> (f32[n,5,2])\n%t = arg() {index = 1} -> (i64[n,2])\n"
             "%y = NegativeLogLikelihoodLoss(%x, %t) {reduction = \"none\"}") == "f32[n,2]");
  CHECK(y_of("%s = Constant() {value = tensor<i64[]> [10]}\n%y = HannWindow(%s)") == "f32[10]");
  CHECK(y_of("%x = arg() {index = 0} -> (f32[n,4])\n%y = QuantizeLinear(%x, %x)") == "u8[n,4]");
}

}  // namespace gpass_test_ops_onnx_ops
