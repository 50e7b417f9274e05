// SPDX-License-Identifier: Apache-2.0
// Shape and value functions of the TensorFlow op schemas (domain `tf`), family by family,
// through the infer-shapes pass on text IR.

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>

#include <gpass/io/text.hpp>
#include <gpass/ops/registry.hpp>
#include <gpass/passes/common/infer_shapes.hpp>

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_ops_tf_ops {

namespace {

using G = gpass::graph<>;

// Runs infer-shapes on `body` (node lines) wrapped in a graph; returns the graph.
G infer(std::string_view body) {
  G g = gpass::parse_text("graph {\n" + std::string(body) + "\n}\n");
  gpass::pass_context ctx;
  gpass::infer_shapes(g, ctx);
  return g;
}

std::string out(const G& g, std::string_view node, std::size_t port = 0) {
  return g[g.at(node)].outputs.at(port).to_string();
}

std::string y_of(std::string_view body, std::size_t port = 0) { return out(infer(body), "y", port); }

std::string error_of(std::string_view body) {
  try {
    infer(body);
  } catch (const gpass::error& e) {
    return e.what();
  }
  return "no error";
}

// The recorded value of `node` port `port`: `[1,n,3]` (incomplete) or `{1,2,3}` (known).
std::string value_of(const G& g, std::string_view node, std::size_t port = 0) {
  const auto& a = g[g.at(node)].attrs;
  std::string suffix = port == 0 ? "" : ":" + std::to_string(port);
  if (auto it = a.find("_incomplete_value" + suffix); it != a.end()) return it->second.as<gpass::shape>().to_string();
  if (auto it = a.find("_value" + suffix); it != a.end()) {
    const auto& t = it->second.as<gpass::tensor>();
    std::string s = "{";
    for (std::int64_t i = 0; i < t.size(); ++i) {
      if (i) s += ",";
      gpass::visit_dtype(t.element_type(), [&]<class T>() {
        if constexpr (std::is_arithmetic_v<T>) s += std::to_string(t.values<T>()[static_cast<std::size_t>(i)]);
      });
    }
    return s + "}";
  }
  return "<none>";
}

bool contains(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("ops.tf.registry") {
  const auto& r = gpass::op_registry::global();
  for (const char* op : {"Const", "Placeholder", "Identity", "AddV2", "MatMul", "StridedSlice", "ConcatV2", "Sum"}) {
    const gpass::op_schema* s = r.find("tf", op);
    REQUIRE(s != nullptr);
    CHECK(s->domain == "tf");
    CHECK(s->frontend.empty());  // used whatever the graph's `frontend` attribute says
  }
  // the v1 control-flow primitives are core ops, not TF ones
  CHECK(r.find("tf", "Merge") == nullptr);
  CHECK(r.find("", "Merge") != nullptr);
  CHECK(r.find("tf", "NoOp")->max_outputs == 0);
  CHECK(r.find("tf", "Shape")->find_attribute("out_type")->default_value->as<gpass::dtype>() == gpass::dtype::int32);
}

TEST_CASE("ops.tf.sources_and_identities") {
  // Placeholder: unknown dims get the node's own symbols; declared names win by unification
  G g = infer("%x = tf::Placeholder() {dtype = f32, shape = shape[?,3]}\n"
              "%z = tf::Placeholder() {dtype = i32}\n"
              "%n = tf::Placeholder() {dtype = f32, shape = shape[?,2]} -> (f32[n,2])\n"
              "%c = tf::Const() {dtype = i32, value = tensor<i32[2]> [4, 5]}\n"
              "%i = tf::Identity(%c) {T = i32}\n%s = tf::StopGradient(%x) {T = f32}\n"
              "%d = tf::PlaceholderWithDefault(%c) {dtype = i32, shape = shape[2]}\n"
              "%x2 = tf::Placeholder() {dtype = f32, shape = shape[?,?]}\n"
              "%e = tf::EnsureShape(%x2) {T = f32, shape = shape[8,?]}\n"
              "%y:2 = tf::IdentityN(%c, %x) {T = [i32, f32]}");
  CHECK(out(g, "x") == "f32[x_d0,3]");
  CHECK(out(g, "z") == "i32[*]");
  CHECK(contains(out(g, "n"), ",2]"));
  CHECK(out(g, "c") == "i32[2]");
  CHECK(value_of(g, "i") == "{4,5}");
  CHECK(out(g, "s") == out(g, "x"));
  CHECK(out(g, "d") == "i32[2]");
  CHECK(value_of(g, "d") == "<none>");  // may be fed
  CHECK(out(g, "e") == "f32[8,x2_d1]");
  CHECK(out(g, "x2") == "f32[8,x2_d1]");  // EnsureShape's shape is the input's from now on
  CHECK(out(g, "y", 0) == "i32[2]");
  CHECK(out(g, "y", 1) == "f32[x_d0,3]");
  // type attributes: an input of another dtype is an error naming the node and op
  CHECK(contains(error_of("%a = arg() {index = 0} -> (f32[2])\n%y = tf::Identity(%a) {T = i32}"),
                 "node 'y' (op Identity): input 0 ('input') is f32, attribute T is i32"));
  CHECK(contains(error_of("%y = tf::PlaceholderWithDefault(%c) {dtype = i32, shape = shape[3]}\n"
                          "%c = tf::Const() {dtype = i32, value = tensor<i32[2]> [4, 5]}"),
                 "incompatible dims 3 and 2"));
}

TEST_CASE("ops.tf.elementwise") {
  CHECK(y_of("%a = arg() {index = 0} -> (f32[n,1,5])\n%b = arg() {index = 1} -> (f32[4,1])\n"
             "%y = tf::AddV2(%a, %b) {T = f32}") == "f32[n,4,5]");
  CHECK(y_of("%a = arg() {index = 0} -> (f32[n,3])\n%y = tf::Rsqrt(%a) {T = f32}") == "f32[n,3]");
  // different symbols broadcast to the node's own symbol (n or m, whichever is not 1)
  CHECK(y_of("%a = arg() {index = 0} -> (f32[n,3])\n%b = arg() {index = 1} -> (f32[m,1])\n%y = tf::Mul(%a, %b) {T = f32}") ==
        "f32[y_b0,3]");
  CHECK(y_of("%a = arg() {index = 0} -> (f32[?,3])\n%b = arg() {index = 1} -> (f32[m,1])\n%y = tf::Mul(%a, %b) {T = f32}") ==
        "f32[?,3]");
  CHECK(y_of("%a = arg() {index = 0} -> (i32[n])\n%b = arg() {index = 1} -> (i32[1])\n%y = tf::Less(%a, %b) {T = i32}") ==
        "bool[n]");
  CHECK(y_of("%a = arg() {index = 0} -> (bool[2,1])\n%b = arg() {index = 1} -> (bool[3])\n%y = tf::LogicalOr(%a, %b)") ==
        "bool[2,3]");
  CHECK(y_of("%a = arg() {index = 0} -> (i32[n,3])\n%y = tf::Cast(%a) {DstT = f32, SrcT = i32}") == "f32[n,3]");
  CHECK(y_of("%a = arg() {index = 0} -> (f32[n,3])\n%b = arg() {index = 1} -> (f32[n,3])\n"
             "%y = tf::AddN(%a, %b, %a) {N = 3, T = f32}") == "f32[n,3]");
  // Select: a vector condition matches the first dim; SelectV2 broadcasts
  CHECK(y_of("%c = arg() {index = 0} -> (bool[n])\n%a = arg() {index = 1} -> (f32[n,3])\n"
             "%y = tf::Select(%c, %a, %a) {T = f32}") == "f32[n,3]");
  CHECK(y_of("%c = arg() {index = 0} -> (bool[2,1])\n%a = arg() {index = 1} -> (f32[3])\n%b = arg() {index = 2} -> (f32[])\n"
             "%y = tf::SelectV2(%c, %a, %b) {T = f32}") == "f32[2,3]");
  CHECK(contains(error_of("%c = arg() {index = 0} -> (bool[2,2])\n%a = arg() {index = 1} -> (f32[2,3])\n"
                          "%y = tf::Select(%c, %a, %a) {T = f32}"),
                 "node 'y' (op Select): incompatible dims"));
  CHECK(contains(error_of("%a = arg() {index = 0} -> (f32[2,3])\n%b = arg() {index = 1} -> (f32[4])\n"
                          "%y = tf::Mul(%a, %b) {T = f32}"),
                 "node 'y' (op Mul): incompatible dims 3 and 4 in input 1"));
  CHECK(contains(error_of("%a = arg() {index = 0} -> (f32[2])\n%b = arg() {index = 1} -> (i32[2])\n"
                          "%y = tf::Sub(%a, %b)"),
                 "incompatible dtypes f32 and i32 for T"));
  // values: integer arithmetic on shapes, FloorDiv floors, comparisons of symbols
  G g = infer("%x = arg() {index = 0} -> (f32[n,6])\n%s = tf::Shape(%x) {T = f32}\n"
              "%two = tf::Const() {dtype = i32, value = tensor<i32[]> [2]}\n"
              "%m = tf::Mul(%s, %two) {T = i32}\n%f = tf::FloorDiv(%s, %two) {T = i32}\n"
              "%neg = tf::Const() {dtype = i32, value = tensor<i32[2]> [-7, 7]}\n"
              "%fd = tf::FloorDiv(%neg, %two) {T = i32}\n%fm = tf::FloorMod(%neg, %two) {T = i32}\n"
              "%eq = tf::Equal(%s, %s) {T = i32}\n%ne = tf::NotEqual(%m, %s) {T = i32}\n"
              "%c = tf::Cast(%s) {DstT = i64, SrcT = i32}\n%z = tf::ZerosLike(%neg) {T = i32}\n"
              "%sq = tf::Square(%two) {T = i32}");
  CHECK(value_of(g, "m") == "[2*n,12]");
  CHECK(value_of(g, "f") == "[?,3]");
  CHECK(value_of(g, "fd") == "{-4,3}");
  CHECK(value_of(g, "fm") == "{1,1}");
  CHECK(value_of(g, "eq") == "{1,1}");
  CHECK(value_of(g, "ne") == "[?,1]");
  CHECK(out(g, "c") == "i64[2]");
  CHECK(value_of(g, "c") == "[n,6]");
  CHECK(value_of(g, "z") == "{0,0}");
  CHECK(value_of(g, "sq") == "{4}");
}

TEST_CASE("ops.tf.shape_size_rank") {
  // seed 000: Shape of [1,?,3] is an incomplete value; StridedSlice keeps it
  G g = infer("%X = tf::Placeholder() {dtype = f32, shape = shape[1,?,3]} -> (f32[1,n,3])\n"
              "%Shape = tf::Shape(%X) {T = f32, out_type = i32}\n"
              "%begin = tf::Const() {dtype = i32, value = tensor<i32[1]> [1]}\n"
              "%end = tf::Const() {dtype = i32, value = tensor<i32[1]> [2]}\n"
              "%strides = tf::Const() {dtype = i32, value = tensor<i32[1]> [1]}\n"
              "%StridedSlice = tf::StridedSlice(%Shape, %begin, %end, %strides) {Index = i32, T = i32, shrink_axis_mask = 1}\n"
              "%Size = tf::Size(%X) {T = f32}\n%Rank = tf::Rank(%X) {T = f32}\n"
              "%S64 = tf::Shape(%X) {T = f32, out_type = i64}\n"
              "%N:2 = tf::ShapeN(%X, %X2) {N = 2, T = f32}\n%X2 = arg() {index = 0} -> (f32[4])");
  CHECK(out(g, "X") == "f32[1,n,3]");  // the declared name wins over the placeholder's own symbol
  const std::string n = "n";
  CHECK(out(g, "Shape") == "i32[3]");
  CHECK(value_of(g, "Shape") == "[1," + n + ",3]");
  CHECK(out(g, "StridedSlice") == "i32[]");
  CHECK(value_of(g, "StridedSlice") == "[" + n + "]");
  CHECK(out(g, "Size") == "i32[]");
  CHECK(value_of(g, "Size") == "[3*" + n + "]");
  CHECK(value_of(g, "Rank") == "{3}");
  CHECK(out(g, "S64") == "i64[3]");
  CHECK(out(g, "N", 1) == "i32[1]");
  CHECK(value_of(g, "N", 1) == "{4}");
  CHECK(value_of(g, "N", 0) == "[1," + n + ",3]");
  // fully known: a value
  G k = infer("%X = tf::Placeholder() {dtype = f32, shape = shape[1,2,3]}\n%Shape = tf::Shape(%X) {T = f32}\n"
              "%begin = tf::Const() {dtype = i32, value = tensor<i32[1]> [1]}\n"
              "%end = tf::Const() {dtype = i32, value = tensor<i32[1]> [2]}\n"
              "%strides = tf::Const() {dtype = i32, value = tensor<i32[1]> [1]}\n"
              "%ss = tf::StridedSlice(%Shape, %begin, %end, %strides) {Index = i32, T = i32, shrink_axis_mask = 1}");
  CHECK(value_of(k, "Shape") == "{1,2,3}");
  CHECK(value_of(k, "ss") == "{2}");
}

TEST_CASE("ops.tf.strided_slice") {
  auto ss = [](std::string_view in, std::string_view b, std::string_view e, std::string_view s, std::string_view attrs) {
    std::string body = "%x = arg() {index = 0} -> (" + std::string(in) + ")\n";
    body += "%b = tf::Const() {dtype = i32, value = tensor<i32[" + std::to_string(std::count(b.begin(), b.end(), ',') + 1) +
            "]> [" + std::string(b) + "]}\n";
    body += "%e = tf::Const() {dtype = i32, value = tensor<i32[" + std::to_string(std::count(e.begin(), e.end(), ',') + 1) +
            "]> [" + std::string(e) + "]}\n";
    body += "%s = tf::Const() {dtype = i32, value = tensor<i32[" + std::to_string(std::count(s.begin(), s.end(), ',') + 1) +
            "]> [" + std::string(s) + "]}\n";
    body += "%y = tf::StridedSlice(%x, %b, %e, %s) {" + std::string(attrs) + "}";
    return y_of(body);
  };
  CHECK(ss("f32[10,5]", "2", "8", "2", "T = f32") == "f32[3,5]");
  CHECK(ss("f32[10,5]", "-3", "0", "-1", "T = f32") == "f32[7,5]");             // x[-3:0:-1]
  CHECK(ss("f32[10,5]", "0", "0", "-1", "T = f32, begin_mask = 1, end_mask = 1") == "f32[10,5]");  // x[::-1]
  CHECK(ss("f32[10,5]", "0, 1", "0, 4", "1, 1", "T = f32, begin_mask = 1, end_mask = 1") == "f32[10,3]");  // x[:, 1:4]
  CHECK(ss("f32[10,5]", "0, 2", "0, 3", "1, 1", "T = f32, shrink_axis_mask = 2, begin_mask = 1, end_mask = 1") == "f32[10]");
  // new axis and ellipsis: x[..., None, 1]
  CHECK(ss("f32[2,3,4]", "0, 0, 1", "0, 0, 2", "1, 1, 1", "T = f32, ellipsis_mask = 1, new_axis_mask = 2, shrink_axis_mask = 4") ==
        "f32[2,3,1]");
  // x[None, 1:] on symbolic dims: n-1
  CHECK(ss("f32[n,m]", "0, 1", "0, 0", "1, 1", "T = f32, new_axis_mask = 1, end_mask = 2") == "f32[1,n-1,m]");
  CHECK(ss("f32[n,m]", "0", "-1", "1", "T = f32") == "f32[n-1,m]");  // x[:-1]
  CHECK(ss("f32[n,m]", "0, 0", "0, 0", "1, -1", "T = f32, begin_mask = 3, end_mask = 3") == "f32[n,m]");
  CHECK(ss("f32[n,m]", "2", "5", "1", "T = f32") == "f32[y_d0,m]");  // x[2:5] of n: min(3, n-2), its own symbol
  CHECK(ss("f32[n,m]", "0", "0", "1", "T = f32, begin_mask = 1, end_mask = 1") == "f32[n,m]");
  CHECK(contains(error_of("%x = arg() {index = 0} -> (f32[4])\n%b = tf::Const() {dtype = i32, value = tensor<i32[1]> [4]}\n"
                          "%s = tf::Const() {dtype = i32, value = tensor<i32[1]> [1]}\n"
                          "%y = tf::StridedSlice(%x, %b, %b, %s) {T = f32, shrink_axis_mask = 1}"),
                 "node 'y' (op StridedSlice): index 4 out of range for dim 0 of size 4"));
  CHECK(contains(error_of("%x = arg() {index = 0} -> (f32[4])\n%b = tf::Const() {dtype = i32, value = tensor<i32[2]> [0, 0]}\n"
                          "%s = tf::Const() {dtype = i32, value = tensor<i32[2]> [1, 1]}\n"
                          "%y = tf::StridedSlice(%x, %b, %b, %s) {T = f32}"),
                 "indexes more dims than the input's 1"));
  // values: reversed and strided slices of a shape, and a 2-D slice of a known constant
  G g = infer("%x = arg() {index = 0} -> (f32[a,b,c,d])\n%sh = tf::Shape(%x) {T = f32}\n"
              "%z = tf::Const() {dtype = i32, value = tensor<i32[1]> [0]}\n"
              "%m = tf::Const() {dtype = i32, value = tensor<i32[1]> [-1]}\n"
              "%two = tf::Const() {dtype = i32, value = tensor<i32[1]> [2]}\n"
              "%rev = tf::StridedSlice(%sh, %z, %z, %m) {T = i32, begin_mask = 1, end_mask = 1}\n"
              "%odd = tf::StridedSlice(%sh, %z, %z, %two) {T = i32, begin_mask = 1, end_mask = 1}\n"
              "%k = tf::Const() {dtype = i32, value = tensor<i32[2,3]> [1, 2, 3, 4, 5, 6]}\n"
              "%b2 = tf::Const() {dtype = i32, value = tensor<i32[2]> [0, 1]}\n"
              "%e2 = tf::Const() {dtype = i32, value = tensor<i32[2]> [2, 3]}\n"
              "%s2 = tf::Const() {dtype = i32, value = tensor<i32[2]> [1, 1]}\n"
              "%y = tf::StridedSlice(%k, %b2, %e2, %s2) {T = i32}");
  CHECK(value_of(g, "rev") == "[d,c,b,a]");
  CHECK(value_of(g, "odd") == "[a,c]");
  CHECK(out(g, "y") == "i32[2,2]");
  CHECK(value_of(g, "y") == "{2,3,5,6}");
}

TEST_CASE("ops.tf.fill_range_reshape") {
  // Fill(Shape(x)) has x's symbolic shape
  G g = infer("%x = arg() {index = 0} -> (f32[n,3])\n%s = tf::Shape(%x) {T = f32}\n"
              "%v = tf::Const() {dtype = f32, value = tensor<f32[]> [1.5]}\n"
              "%f = tf::Fill(%s, %v) {T = f32}\n"
              "%s2 = tf::Const() {dtype = i32, value = tensor<i32[2]> [2, 2]}\n%k = tf::Fill(%s2, %v) {T = f32}\n"
              "%st = tf::Const() {dtype = i32, value = tensor<i32[]> [2]}\n"
              "%li = tf::Const() {dtype = i32, value = tensor<i32[]> [11]}\n"
              "%de = tf::Const() {dtype = i32, value = tensor<i32[]> [3]}\n"
              "%r = tf::Range(%st, %li, %de) {Tidx = i32}\n"
              "%zero = tf::Const() {dtype = i32, value = tensor<i32[]> [0]}\n"
              "%one = tf::Const() {dtype = i32, value = tensor<i32[]> [1]}\n"
              "%s0 = tf::StridedSlice(%s, %z1, %o1, %o1) {T = i32, shrink_axis_mask = 1}\n"
              "%z1 = tf::Const() {dtype = i32, value = tensor<i32[1]> [0]}\n"
              "%o1 = tf::Const() {dtype = i32, value = tensor<i32[1]> [1]}\n"
              "%rn = tf::Range(%zero, %s0, %one) {Tidx = i32}\n"
              "%m1 = tf::Const() {dtype = i32, value = tensor<i32[2]> [-1, 6]}\n"
              "%x2 = arg() {index = 1} -> (f32[n,4,3])\n%re = tf::Reshape(%x2, %m1) {T = f32}\n"
              "%re2 = tf::Reshape(%x2, %s) {T = f32}\n"
              "%bt = tf::BroadcastTo(%v, %s) {T = f32}");
  CHECK(out(g, "f") == "f32[n,3]");
  CHECK(out(g, "k") == "f32[2,2]");
  CHECK(value_of(g, "k") == "{1.500000,1.500000,1.500000,1.500000}");
  CHECK(out(g, "r") == "i32[3]");
  CHECK(value_of(g, "r") == "{2,5,8}");
  CHECK(out(g, "rn") == "i32[n]");
  CHECK(out(g, "re") == "f32[2*n,6]");
  CHECK(contains(error_of("%x = arg() {index = 0} -> (f32[2,4,3])\n%s = arg() {index = 1} -> (f32[5,3])\n"
                          "%t = tf::Shape(%s) {T = f32}\n%y = tf::Reshape(%x, %t) {T = f32}"),
                 "node 'y' (op Reshape): cannot reshape [2,4,3] (24 elements) to [5,3]"));
  CHECK(out(g, "bt") == "f32[n,3]");
  // a TF 0 in the shape is a size, not ONNX's "copy this dim"
  CHECK(y_of("%x = arg() {index = 0} -> (f32[0,4])\n%s = tf::Const() {dtype = i32, value = tensor<i32[2]> [4, 0]}\n"
             "%y = tf::Reshape(%x, %s) {T = f32}") == "f32[4,0]");
  // values flow through Reshape
  G v = infer("%x = arg() {index = 0} -> (f32[n,3])\n%s = tf::Shape(%x) {T = f32}\n"
              "%t = tf::Const() {dtype = i32, value = tensor<i32[2]> [2, 1]}\n%y = tf::Reshape(%s, %t) {T = i32}");
  CHECK(out(v, "y") == "i32[2,1]");
  CHECK(value_of(v, "y") == "[n,3]");
}

TEST_CASE("ops.tf.concat_pack_unpack_split") {
  G g = infer("%x = arg() {index = 0} -> (f32[n,3])\n%ax = tf::Const() {dtype = i32, value = tensor<i32[]> [0]}\n"
              "%c = tf::ConcatV2(%x, %x, %ax) {N = 2, T = f32, Tidx = i32}\n"
              "%s = tf::Shape(%x) {T = f32}\n%s2 = tf::ConcatV2(%s, %s, %ax) {N = 2, T = i32}\n"
              "%p = tf::Pack(%x, %x, %x) {N = 3, T = f32, axis = 1}\n"
              "%five = tf::Const() {dtype = i32, value = tensor<i32[]> [5]}\n"
              "%ps = tf::Pack(%five, %five) {N = 2, T = i32}\n"
              "%d0 = tf::StridedSlice(%s, %b0, %b1, %b1) {T = i32, shrink_axis_mask = 1}\n"
              "%b0 = tf::Const() {dtype = i32, value = tensor<i32[1]> [0]}\n"
              "%b1 = tf::Const() {dtype = i32, value = tensor<i32[1]> [1]}\n"
              "%pd = tf::Pack(%d0, %five) {N = 2, T = i32}\n"
              "%u:3 = tf::Unpack(%x) {T = f32, axis = 1, num = 3}\n"
              "%us:2 = tf::Unpack(%s) {T = i32, num = 2}\n"
              "%one = tf::Const() {dtype = i32, value = tensor<i32[]> [1]}\n"
              "%x6 = arg() {index = 1} -> (f32[n,6])\n"
              "%sp:3 = tf::Split(%one, %x6) {T = f32, num_split = 3}\n"
              "%sz = tf::Const() {dtype = i32, value = tensor<i32[2]> [1, -1]}\n"
              "%sv:2 = tf::SplitV(%x6, %sz, %one) {T = f32, Tlen = i32, num_split = 2}\n"
              "%svn:2 = tf::SplitV(%x6, %sz, %ax) {T = f32, Tlen = i32, num_split = 2}");
  CHECK(out(g, "c") == "f32[2*n,3]");
  CHECK(value_of(g, "s2") == "[n,3,n,3]");
  CHECK(out(g, "p") == "f32[n,3,3]");
  CHECK(out(g, "ps") == "i32[2]");
  CHECK(value_of(g, "ps") == "{5,5}");
  CHECK(value_of(g, "pd") == "[n,5]");
  CHECK(out(g, "u", 2) == "f32[n]");
  CHECK(value_of(g, "us", 0) == "[n]");
  CHECK(value_of(g, "us", 1) == "{3}");
  CHECK(out(g, "sp", 1) == "f32[n,2]");
  CHECK(out(g, "sv", 1) == "f32[n,5]");
  CHECK(out(g, "svn", 1) == "f32[n-1,6]");
  // a symbolic dim that does not split evenly as an affine dim: the parts get one symbol
  G h = infer("%x = arg() {index = 0} -> (f32[n,3])\n%z = tf::Const() {dtype = i32, value = tensor<i32[]> [0]}\n"
              "%y:2 = tf::Split(%z, %x) {T = f32, num_split = 2}");
  CHECK(out(h, "y", 0) == "f32[y_part,3]");
  CHECK(out(h, "y", 1) == "f32[y_part,3]");
  CHECK(contains(error_of("%x = arg() {index = 0} -> (f32[2,3])\n%z = arg() {index = 1} -> (f32[2,4])\n"
                          "%ax = tf::Const() {dtype = i32, value = tensor<i32[]> [0]}\n"
                          "%y = tf::ConcatV2(%x, %z, %ax) {N = 2, T = f32}"),
                 "node 'y' (op ConcatV2): incompatible dims 3 and 4 in input 1"));
  CHECK(contains(error_of("%x = arg() {index = 0} -> (f32[2,3])\n%y:2 = tf::Unpack(%x) {T = f32, num = 2, axis = 1}"),
                 "node 'y' (op Unpack): incompatible dims 3 and 2"));
  CHECK(contains(error_of("%x = arg() {index = 0} -> (f32[2,5])\n%one = tf::Const() {dtype = i32, value = tensor<i32[]> [1]}\n"
                          "%y:2 = tf::Split(%one, %x) {T = f32, num_split = 2}"),
                 "does not split evenly"));
}

TEST_CASE("ops.tf.indexing") {
  G g = infer("%x = arg() {index = 0} -> (f32[n,5,7])\n"
              "%i = arg() {index = 1} -> (i32[k])\n%ax = tf::Const() {dtype = i32, value = tensor<i32[]> [1]}\n"
              "%g = tf::GatherV2(%x, %i, %ax) {Taxis = i32, Tindices = i32, Tparams = f32}\n"
              "%s = tf::Shape(%x) {T = f32}\n%idx = tf::Const() {dtype = i32, value = tensor<i32[2]> [2, 0]}\n"
              "%z = tf::Const() {dtype = i32, value = tensor<i32[]> [0]}\n"
              "%gs = tf::GatherV2(%s, %idx, %z) {Taxis = i32, Tindices = i32, Tparams = i32}\n"
              "%b = tf::Const() {dtype = i32, value = tensor<i32[3]> [0, 1, 2]}\n"
              "%sz = tf::Const() {dtype = i32, value = tensor<i32[3]> [-1, 3, 2]}\n"
              "%sl = tf::Slice(%x, %b, %sz) {Index = i32, T = f32}\n"
              "%b1 = tf::Const() {dtype = i32, value = tensor<i32[1]> [1]}\n"
              "%m1 = tf::Const() {dtype = i32, value = tensor<i32[1]> [-1]}\n"
              "%ssl = tf::Slice(%s, %b1, %m1) {Index = i32, T = i32}\n"
              "%p = tf::Const() {dtype = i32, value = tensor<i32[3,2]> [0, 0, 1, 2, 3, 3]}\n"
              "%pad = tf::Pad(%x, %p) {T = f32}\n"
              "%perm = tf::Const() {dtype = i32, value = tensor<i32[3]> [2, 0, 1]}\n"
              "%tr = tf::Transpose(%x, %perm) {T = f32}\n"
              "%ed = tf::ExpandDims(%x, %m1s) {T = f32}\n%m1s = tf::Const() {dtype = i32, value = tensor<i32[]> [-1]}\n"
              "%q = arg() {index = 2} -> (f32[1,n,1])\n%sq = tf::Squeeze(%q) {T = f32, squeeze_dims = [0]}\n"
              "%sqa = tf::Squeeze(%x1) {T = f32}\n%x1 = arg() {index = 3} -> (f32[1,4,1])\n"
              "%mul = tf::Const() {dtype = i32, value = tensor<i32[3]> [2, 1, 3]}\n%ti = tf::Tile(%x, %mul) {T = f32}\n"
              "%kk = tf::Const() {dtype = i32, value = tensor<i32[]> [3]}\n"
              "%tk:2 = tf::TopKV2(%x, %kk) {T = f32}\n"
              "%c = arg() {index = 4} -> (bool[n,5])\n%w = tf::Where(%c) {T = bool}");
  CHECK(out(g, "g") == "f32[n,k,7]");
  CHECK(value_of(g, "gs") == "[7,n]");
  CHECK(out(g, "sl") == "f32[n,3,2]");
  CHECK(value_of(g, "ssl") == "{5,7}");
  CHECK(out(g, "pad") == "f32[n,8,13]");
  CHECK(out(g, "tr") == "f32[7,n,5]");
  CHECK(out(g, "ed") == "f32[n,5,7,1]");
  CHECK(out(g, "sq") == "f32[n,1]");
  CHECK(out(g, "sqa") == "f32[4]");
  CHECK(out(g, "ti") == "f32[2*n,5,21]");
  CHECK(out(g, "tk", 0) == "f32[n,5,3]");
  CHECK(out(g, "tk", 1) == "i32[n,5,3]");
  CHECK(out(g, "w") == "i64[w_count,2]");
  G h = infer("%x = arg() {index = 0} -> (f32[n,5])\n%s = tf::Shape(%x) {T = f32}\n"
              "%t = tf::Const() {dtype = i32, value = tensor<i32[3]> [4, 1, 5]}\n"
              "%ba = tf::BroadcastArgs(%s, %t) {T = i32}\n"
              "%v = arg() {index = 1} -> (i32[k])\n%u:2 = tf::Unique(%v) {T = i32}\n"
              "%img = arg() {index = 2} -> (u8[n,8,8,3])\n%sz = tf::Const() {dtype = i32, value = tensor<i32[2]> [16, 12]}\n"
              "%rb = tf::ResizeBilinear(%img, %sz) {T = u8}\n%rn = tf::ResizeNearestNeighbor(%img, %sz) {T = u8}");
  CHECK(out(h, "ba") == "i32[3]");
  CHECK(value_of(h, "ba") == "[4,n,5]");
  CHECK(out(h, "u", 0) == "i32[u_count]");
  CHECK(out(h, "u", 1) == "i32[k]");
  CHECK(out(h, "rb") == "f32[n,16,12,3]");
  CHECK(out(h, "rn") == "u8[n,16,12,3]");
  CHECK(contains(error_of("%x = arg() {index = 0} -> (f32[4,5])\n%b = tf::Const() {dtype = i32, value = tensor<i32[2]> [2, 0]}\n"
                          "%s = tf::Const() {dtype = i32, value = tensor<i32[2]> [3, -1]}\n%y = tf::Slice(%x, %b, %s) {T = f32}"),
                 "node 'y' (op Slice): slice [2, 5) out of range for dim 0 of size 4"));
}

TEST_CASE("ops.tf.reductions") {
  G g = infer("%x = arg() {index = 0} -> (f32[n,3,4])\n"
              "%a1 = tf::Const() {dtype = i32, value = tensor<i32[]> [1]}\n"
              "%a2 = tf::Const() {dtype = i32, value = tensor<i32[2]> [-1, 0]}\n"
              "%none = tf::Const() {dtype = i32, value = tensor<i32[0]> []}\n"
              "%s = tf::Sum(%x, %a1) {T = f32, Tidx = i32}\n"
              "%m = tf::Mean(%x, %a2) {T = f32, keep_dims = true}\n"
              "%id = tf::Max(%x, %none) {T = f32}\n"
              "%am = tf::ArgMax(%x, %a1) {T = f32}\n%am32 = tf::ArgMin(%x, %a1) {T = f32, output_type = i32}\n"
              "%sh = tf::Shape(%x) {T = f32}\n%z = tf::Const() {dtype = i32, value = tensor<i32[1]> [0]}\n"
              "%p = tf::Prod(%sh, %z) {T = i32}\n"
              "%b = arg() {index = 1} -> (bool[n,2])\n%any = tf::Any(%b, %a1)");
  CHECK(out(g, "s") == "f32[n,4]");
  CHECK(out(g, "m") == "f32[1,3,1]");
  CHECK(out(g, "id") == "f32[n,3,4]");  // an empty axis list reduces nothing
  CHECK(out(g, "am") == "i64[n,4]");
  CHECK(out(g, "am32") == "i32[n,4]");
  CHECK(out(g, "p") == "i32[]");
  CHECK(value_of(g, "p") == "[12*n]");
  CHECK(out(g, "any") == "bool[n]");
  CHECK(contains(error_of("%x = arg() {index = 0} -> (f32[2,3])\n%a = tf::Const() {dtype = i32, value = tensor<i32[]> [2]}\n"
                          "%y = tf::Sum(%x, %a) {T = f32}"),
                 "node 'y' (op Sum): reduction axis 2 out of range for rank 2"));
}

TEST_CASE("ops.tf.matmul_and_nn") {
  CHECK(y_of("%a = arg() {index = 0} -> (f32[n,3])\n%b = arg() {index = 1} -> (f32[5,3])\n"
             "%y = tf::MatMul(%a, %b) {T = f32, transpose_b = true}") == "f32[n,5]");
  CHECK(contains(error_of("%a = arg() {index = 0} -> (f32[n,3])\n%b = arg() {index = 1} -> (f32[5,3])\n"
                          "%y = tf::MatMul(%a, %b) {T = f32}"),
                 "node 'y' (op MatMul): incompatible dims 3 and 5"));
  CHECK(contains(error_of("%a = arg() {index = 0} -> (f32[2,2,3])\n%y = tf::MatMul(%a, %a) {T = f32}"), "a must be 2-D"));
  CHECK(y_of("%a = arg() {index = 0} -> (f32[b,1,n,3])\n%c = arg() {index = 1} -> (f32[4,n,3])\n"
             "%y = tf::BatchMatMulV2(%a, %c) {T = f32, adj_y = true}") == "f32[b,4,n,n]");
  CHECK(y_of("%a = arg() {index = 0} -> (f32[b,n,3])\n%c = arg() {index = 1} -> (f32[b,3,5])\n"
             "%y = tf::Einsum(%a, %c) {N = 2, T = f32, equation = \"bij,bjk->bik\"}") == "f32[b,n,5]");
  CHECK(y_of("%a = arg() {index = 0} -> (f32[n,4])\n%b = arg() {index = 1} -> (f32[4])\n%y = tf::BiasAdd(%a, %b) {T = f32}") ==
        "f32[n,4]");
  CHECK(y_of("%a = arg() {index = 0} -> (f32[n,4,8,8])\n%b = arg() {index = 1} -> (f32[4])\n"
             "%y = tf::BiasAdd(%a, %b) {T = f32, data_format = \"NCHW\"}") == "f32[n,4,8,8]");
  CHECK(contains(error_of("%a = arg() {index = 0} -> (f32[n,4])\n%b = arg() {index = 1} -> (f32[3])\n"
                          "%y = tf::BiasAdd(%a, %b) {T = f32}"),
                 "node 'y' (op BiasAdd): incompatible dims 4 and 3"));
  CHECK(y_of("%a = arg() {index = 0} -> (f32[n,10])\n%y = tf::Softmax(%a) {T = f32}") == "f32[n,10]");
  CHECK(y_of("%x = arg() {index = 0} -> (f32[n,32,32,3])\n%f = arg() {index = 1} -> (f32[3,3,3,8])\n"
             "%y = tf::Conv2D(%x, %f) {T = f32, padding = \"SAME\", strides = [1, 2, 2, 1]}") == "f32[n,16,16,8]");
  CHECK(y_of("%x = arg() {index = 0} -> (f32[n,3,h,w])\n%f = arg() {index = 1} -> (f32[3,3,3,8])\n"
             "%y = tf::Conv2D(%x, %f) {T = f32, data_format = \"NCHW\", padding = \"VALID\"}") == "f32[n,8,h-2,w-2]");
  CHECK(y_of("%x = arg() {index = 0} -> (f32[n,7,7,4])\n%f = arg() {index = 1} -> (f32[3,3,4,2])\n"
             "%y = tf::DepthwiseConv2dNative(%x, %f) {T = f32, padding = \"VALID\"}") == "f32[n,5,5,8]");
  CHECK(y_of("%x = arg() {index = 0} -> (f32[n,5,5,3])\n"
             "%y = tf::MaxPool(%x) {T = f32, ksize = [1, 2, 2, 1], padding = \"VALID\", strides = [1, 2, 2, 1]}") ==
        "f32[n,2,2,3]");
  G g = infer("%x = arg() {index = 0} -> (f32[n,8,8,3])\n%s = arg() {index = 1} -> (f32[3])\n"
              "%y:6 = tf::FusedBatchNormV3(%x, %s, %s, %s, %s) {T = f32, U = f32}");
  CHECK(out(g, "y", 0) == "f32[n,8,8,3]");
  CHECK(out(g, "y", 5) == "f32[3]");
}

TEST_CASE("ops.tf.depth_space_block_size_overflow") {
  // block_size^2 was a signed overflow (UB) past 3037000499
  CHECK(y_of("%a = arg() {index = 0} -> (f32[1,2,2,8])\n%y = tf::DepthToSpace(%a) {T = f32, block_size = 2}") == "f32[1,4,4,2]");
  for (const char* op : {"DepthToSpace", "SpaceToDepth"})
    CHECK(contains(error_of(std::string("%a = arg() {index = 0} -> (f32[1,2,2,8])\n%y = tf::") + op +
                            "(%a) {T = f32, block_size = 4294967296}"),
                   "block_size 4294967296 is too large (its square overflows int64)"));
}

TEST_CASE("ops.tf.int64_overflow") {
  const std::string i64min = "-9223372036854775808", i64max = "9223372036854775807";
  // FloorDiv's value: INT64_MIN / -1 was a signed overflow (a SIGFPE on x86); that element is unknown
  G fd = infer("%a = tf::Const() {dtype = i64, value = tensor<i64[2]> [" + i64min + ", -7]}\n"
               "%b = tf::Const() {dtype = i64, value = tensor<i64[2]> [-1, 2]}\n%y = tf::FloorDiv(%a, %b) {T = i64}");
  CHECK(value_of(fd, "y") == "[?,-4]");
  // StridedSlice x[b:n] of a symbolic n: -b overflowed for b = INT64_MIN (the whole dim)
  auto from_to_n = [&](const std::string& b) {
    return y_of("%x = arg() {index = 0} -> (f32[n])\n%n = tf::Shape(%x) {T = f32, out_type = i64}\n"
                "%b = tf::Const() {dtype = i64, value = tensor<i64[1]> [" + b + "]}\n"
                "%s = tf::Const() {dtype = i64, value = tensor<i64[1]> [1]}\n"
                "%y = tf::StridedSlice(%x, %b, %n, %s) {Index = i64, T = f32}");
  };
  CHECK(from_to_n("-2") == "f32[2]");
  CHECK(from_to_n(i64min) == "f32[n]");
  // ... and the value of a slice of an empty constant with a dim of 2^40: its indices were
  // listed (2^40 of them) before the element count was checked
  G ss = infer("%k = tf::Const() {dtype = i32, value = tensor<i32[0,1099511627776]> []}\n"
               "%b = tf::Const() {dtype = i32, value = tensor<i32[2]> [0, 0]}\n"
               "%s = tf::Const() {dtype = i32, value = tensor<i32[2]> [1, 1]}\n"
               "%y = tf::StridedSlice(%k, %b, %b, %s) {T = i32, begin_mask = 3, end_mask = 3}");
  CHECK(out(ss, "y") == "i32[0,1099511627776]");
  // ExtractImagePatches (VALID) on a dim near INT64_MAX: in - window + stride overflowed
  CHECK(y_of("%x = arg() {index = 0} -> (f32[1," + i64max + ",4,1])\n"
             "%y = tf::ExtractImagePatches(%x) {T = f32, ksizes = [1, 1, 1, 1], strides = [1, 100, 1, 1], "
             "rates = [1, 1, 1, 1], padding = \"VALID\"}") == "f32[1,92233720368547759,4,1]");
  // Slice: begin + size past INT64_MAX was left unknown, and the slice passed unchecked
  CHECK(contains(error_of("%x = arg() {index = 0} -> (f32[10])\n"
                          "%b = tf::Const() {dtype = i64, value = tensor<i64[1]> [" + i64max + "]}\n"
                          "%s = tf::Const() {dtype = i64, value = tensor<i64[1]> [5]}\n"
                          "%y = tf::Slice(%x, %b, %s) {Index = i64, T = f32}"),
                 "out of range for dim 0 of size 10 (its end overflows int64)"));
  // SplitV: size_splits whose sum overflows were not checked against the axis
  CHECK(contains(error_of("%x = arg() {index = 0} -> (f32[10])\n"
                          "%sz = tf::Const() {dtype = i64, value = tensor<i64[2]> [" + i64max + ", " + i64max + "]}\n"
                          "%ax = tf::Const() {dtype = i32, value = tensor<i32[]> [0]}\n"
                          "%y:2 = tf::SplitV(%x, %sz, %ax) {T = f32, Tlen = i64, num_split = 2}"),
                 "size_splits sum to more than int64 holds"));
  // Range (ONNX's functions) on int64s: the length in doubles was rounded (4, not 3, past
  // 2^53) or cast from a double past INT64_MAX; floats whose length is no int64 were cast too
  auto range = [](const std::string& t, const std::string& a, const std::string& b, const std::string& d) {
    return "%st = tf::Const() {dtype = " + t + ", value = tensor<" + t + "[]> [" + a + "]}\n" +
           "%li = tf::Const() {dtype = " + t + ", value = tensor<" + t + "[]> [" + b + "]}\n" +
           "%de = tf::Const() {dtype = " + t + ", value = tensor<" + t + "[]> [" + d + "]}\n" +
           "%y = tf::Range(%st, %li, %de) {Tidx = " + t + "}";
  };
  G rg = infer(range("i64", "9007199254740993", "9007199254740996", "1"));
  CHECK(out(rg, "y") == "i64[3]");
  CHECK(value_of(rg, "y") == "{9007199254740993,9007199254740994,9007199254740995}");
  G rd = infer(range("i64", i64max, "9223372036854775800", "-3"));
  CHECK(value_of(rd, "y") == "{9223372036854775807,9223372036854775804,9223372036854775801}");
  CHECK(contains(error_of(range("i64", i64min, i64max, "1")), "node 'y' (op Range): "));
  CHECK(contains(error_of(range("f32", "0", "1e30", "1e-10")), "node 'y' (op Range): "));
  // StridedSlice's strides near INT64_MAX / at INT64_MIN overflowed in the slice length
  auto strided = [&](const std::string& st, const std::string& masks) {
    return y_of("%x = arg() {index = 0} -> (f32[10])\n%b = tf::Const() {dtype = i64, value = tensor<i64[1]> [0]}\n"
                "%s = tf::Const() {dtype = i64, value = tensor<i64[1]> [" + st + "]}\n"
                "%y = tf::StridedSlice(%x, %b, %b, %s) {Index = i64, T = f32, " + masks + "}");
  };
  CHECK(strided(i64max, "begin_mask = 1, end_mask = 1") == "f32[1]");
  CHECK(strided(i64min, "begin_mask = 1, end_mask = 1") == "f32[1]");
  // Pad: TensorFlow's paddings are not negative, and a padded size past INT64_MAX is no size
  auto pad = [](const std::string& x, const std::string& p) {
    return "%x = arg() {index = 0} -> (f32[" + x + "])\n%p = tf::Const() {dtype = i64, value = tensor<i64[1,2]> [" + p +
           "]}\n%y = tf::Pad(%x, %p) {T = f32, Tpaddings = i64}";
  };
  CHECK(y_of(pad("10", "1, 2")) == "f32[13]");
  CHECK(contains(error_of(pad("10", "-1, 2")), "paddings must be non-negative"));
  CHECK(contains(error_of(pad("10", i64max + ", 1")), "padded by 9223372036854775807 and 1 overflows int64"));
  // a shape input of unknown value and a huge declared length: inference made that many dims
  const std::pair<std::string, int> huge_shape_ops[] = {{"ScatterNd(%i, %u, %s) {T = f32, Tindices = i32}", 2},
                                                       {"RandomUniform(%s) {T = i32, dtype = f32}", 0},
                                                       {"Reshape(%u, %s) {T = f32, Tshape = i32}", 1}};
  for (const auto& [op, port] : huge_shape_ops) {
    const std::string g = "%i = arg() {index = 0} -> (i32[1,1])\n%u = arg() {index = 1} -> (f32[1])\n"
                          "%s = arg() {index = 2} -> (i32[1099511627776])\n%y = tf::" + op;
    INFO(op);
    CHECK(contains(error_of(g), "input " + std::to_string(port) +
                                    " holds a shape of 1099511627776 dims; TensorFlow allows at most 254"));
  }
  CHECK(y_of("%s = arg() {index = 0} -> (i32[3])\n%y = tf::RandomUniform(%s) {T = i32, dtype = f32}") == "f32[?,?,?]");
  // Unpack of an empty value whose other dims are huge: 2^40 empty rows were walked
  G up = infer("%k = tf::Const() {dtype = i32, value = tensor<i32[1099511627776,2,0]> []}\n"
               "%y:2 = tf::Unpack(%k) {T = i32, axis = 1, num = 2}");
  CHECK(out(up, "y") == "i32[1099511627776,0]");
}

}  // namespace gpass_test_ops_tf_ops
