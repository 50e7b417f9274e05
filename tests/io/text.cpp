// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <gpass/io/text.hpp>

#include <algorithm>
#include <bit>
#include <complex>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_io_text {

namespace {

using G = gpass::graph<>;
namespace fs = std::filesystem;

fs::path ir_dir() { return fs::path(GPASS_TEST_DATA_DIR) / "ir"; }

std::vector<fs::path> fixtures() {
  std::vector<fs::path> r;
  for (const auto& e : fs::directory_iterator(ir_dir()))
    if (e.is_regular_file() && e.path().extension() == ".gir") r.push_back(e.path());
  std::sort(r.begin(), r.end());
  return r;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Lines that are neither blank nor full-line comments: a fixture written in canonical form
// equals the printer's output once these are dropped.
std::string strip_comments(const std::string& s) {
  std::string out;
  std::istringstream in(s);
  std::string line;
  while (std::getline(in, line)) {
    auto p = line.find_first_not_of(" \t");
    if (p == std::string::npos || line[p] == '#') continue;
    out += line;
    out += '\n';
  }
  return out;
}

// Attribute equality that treats doubles bit for bit (NaN == NaN with the same bits).
bool same_attribute(const gpass::attribute& a, const gpass::attribute& b) {
  if (a.is<double>() && b.is<double>())
    return std::bit_cast<std::uint64_t>(a.as<double>()) == std::bit_cast<std::uint64_t>(b.as<double>());
  if (a.is<std::vector<double>>() && b.is<std::vector<double>>()) {
    const auto& x = a.as<std::vector<double>>();
    const auto& y = b.as<std::vector<double>>();
    if (x.size() != y.size()) return false;
    for (std::size_t i = 0; i < x.size(); ++i)
      if (std::bit_cast<std::uint64_t>(x[i]) != std::bit_cast<std::uint64_t>(y[i])) return false;
    return true;
  }
  return a == b;
}

bool same_attributes(const gpass::attribute_map& a, const gpass::attribute_map& b) {
  if (a.size() != b.size()) return false;
  for (auto i = a.begin(), j = b.begin(); i != a.end(); ++i, ++j)
    if (i->first != j->first || !same_attribute(i->second, j->second)) return false;
  return true;
}

// Structural equality of two graphs (by node names, in node order), functions included.
template <class Graph>
void check_same_graph(const Graph& a, const Graph& b) {
  REQUIRE(a.num_nodes() == b.num_nodes());
  CHECK(a.num_edges() == b.num_edges());
  CHECK(same_attributes(a.attrs(), b.attrs()));
  auto ib = b.nodes().begin();
  for (auto va : a.nodes()) {
    auto vb = *ib++;
    const auto& na = a[va];
    const auto& nb = b[vb];
    CAPTURE(na.name);
    CHECK(na.name == nb.name);
    CHECK(na.op == nb.op);
    CHECK(na.domain == nb.domain);
    CHECK(na.device == nb.device);
    CHECK(na.outputs == nb.outputs);
    CHECK(same_attributes(na.attrs, nb.attrs));
    REQUIRE(a.num_inputs(va) == b.num_inputs(vb));
    for (std::size_t k = 0; k < a.num_inputs(va); ++k) {
      auto x = a.input(va, static_cast<int>(k));
      auto y = b.input(vb, static_cast<int>(k));
      CHECK(x.empty == y.empty);
      if (!x.empty && !y.empty) {
        CHECK(a[x.node].name == b[y.node].name);
        CHECK(x.port == y.port);
      }
    }
    std::vector<std::string> ca, cb;
    for (auto c : a.control_inputs(va)) ca.push_back(a[c].name);
    for (auto c : b.control_inputs(vb)) cb.push_back(b[c].name);
    CHECK(ca == cb);
  }
  REQUIRE(a.functions().size() == b.functions().size());
  for (auto i = a.functions().begin(), j = b.functions().begin(); i != a.functions().end(); ++i, ++j) {
    CHECK(i->first == j->first);
    check_same_graph(*i->second, *j->second);
  }
}

// Parses `text` and returns the error (fails the test when parsing succeeds).
gpass::error parse_error(const std::string& text) {
  try {
    (void)gpass::parse_text(text, "test.gir");
  } catch (const gpass::error& e) {
    return e;
  }
  FAIL("parsed without error: " << text);
  return gpass::error("unreachable");
}

std::string print_attr(const gpass::attribute& a) {
  G g;
  auto v = g.add_node({.name = "n", .op = "A"});
  g[v].attrs["a"] = a;
  std::string s = gpass::print_text(g);
  auto b = s.find("{a = ");
  auto e = s.rfind('}', s.rfind('}') - 1);
  REQUIRE(b != std::string::npos);
  return s.substr(b + 5, e - b - 5);
}

template <class T>
gpass::tensor tensor_round_trip(const gpass::tensor& t) {
  G g;
  auto v = g.add_node({.name = "c", .op = "Const"});
  g[v].attrs["value"] = t;
  std::string s = gpass::print_text(g);
  G h = gpass::parse_text(s);
  CHECK(gpass::print_text(h) == s);
  return h[h.at("c")].attrs.at("value").as<gpass::tensor>();
}

}  // namespace

TEST_CASE("io.text.fixtures_round_trip") {
  auto files = fixtures();
  CHECK(files.size() >= 8);
  for (const auto& f : files) {
    CAPTURE(f.filename().string());
    std::string src = slurp(f);
    G g1 = gpass::read_text_file(f);
    std::string p1 = gpass::print_text(g1);
    // fixtures are written in the printer's canonical form (comments and blank lines aside)
    CHECK(strip_comments(src) == strip_comments(p1));
    G g2 = gpass::parse_text(p1);
    check_same_graph(g1, g2);
    CHECK(gpass::print_text(g2) == p1);
    std::ostringstream os;
    gpass::write_text(os, g2);
    CHECK(os.str() == p1);
  }
}

TEST_CASE("io.text.spec_example") {
  const char* src = R"(# comment to end of line
graph {name = "main"} {                       # the top graph
  %x = Placeholder() {dtype = f32, shape = shape[2,?]} -> (f32[2,?])
  %y:2 = Split(%x) {axis = 0}                   # two output ports
  %z = Add(%y:0, %y:1, ^%x) on "/device:CPU:0"
  %w = com.microsoft::FusedConv(%z, _, %x)
  %loop = while(%x) {cond = @cond_0, body = @body_0} -> (f32[2,?])
  %r:0 = return(%w, %loop)
}
func @body_0 {
  %args = function_entry() -> (f32[2,?])
  %one = Const() {value = tensor<f32[]> [1.0]}
  %n = Add(%args, %one)
  %ret:0 = return(%n)
}
)";
  G g = gpass::parse_text(src);
  REQUIRE(g.num_nodes() == 6);
  CHECK(g.attrs().at("name").as<std::string>() == "main");
  auto x = g.at("x"), y = g.at("y"), z = g.at("z"), w = g.at("w"), r = g.at("r");
  CHECK(g[x].attrs.at("dtype").as<gpass::dtype>() == gpass::dtype::f32);
  CHECK(g[x].attrs.at("shape").as<gpass::shape>().to_string() == "[2,?]");
  CHECK(g[x].outputs.at(0).to_string() == "f32[2,?]");
  CHECK(g.num_outputs(y) == 2);
  CHECK(g[y].outputs[0].is_unknown());
  CHECK(g.num_inputs(z) == 2);
  CHECK(g.input(z, 1).node == y);
  CHECK(g.input(z, 1).port == 1);
  CHECK(g.control_inputs(z) == std::vector{x});
  CHECK(g[z].device == "/device:CPU:0");
  CHECK(g[w].domain == "com.microsoft");
  CHECK(g[w].op == "FusedConv");
  CHECK(g.num_inputs(w) == 3);
  CHECK(g.input(w, 1).empty);
  CHECK(g[g.at("loop")].attrs.at("body").as<gpass::function_ref>().name == "body_0");
  CHECK(g.num_outputs(r) == 0);
  CHECK(g.num_inputs(r) == 2);
  const G* body = g.find_function("body_0");
  REQUIRE(body);
  CHECK(body->num_nodes() == 4);
  auto one = body->at("one");
  CHECK((*body)[one].attrs.at("value").as<gpass::tensor>() == gpass::tensor::scalar<float>(1.0f));
  CHECK(body->input(body->at("n"), 0).node == body->at("args"));
  std::string p = gpass::print_text(g);
  CHECK(p.find("  %z = Add(%y:0, %y:1, ^%x) on \"/device:CPU:0\"\n") != std::string::npos);
  CHECK(p.find("{body = @body_0, cond = @cond_0}") != std::string::npos);  // attributes by name
  CHECK(p.find("\nfunc @body_0 {\n") != std::string::npos);
}

TEST_CASE("io.text.tf_v1_loop_cycle") {
  G g = gpass::read_text_file(ir_dir() / "seed000_tf_while_one_var.gir");
  auto merge = g.at("while/Merge");
  auto next = g.at("while/NextIteration");
  // Merge's second input is defined later in the file: the cycle Merge -> ... -> NextIteration -> Merge
  CHECK(g.input(merge, 1).node == next);
  CHECK(g.input(g.at("while/Switch"), 0).node == merge);
  CHECK(g.input(g.at("while/Exit"), 0).port == 0);
  CHECK(g.input(g.at("while/Identity"), 0).port == 1);
  CHECK(g.control_inputs(g.at("while/Less/y")) == std::vector{merge});
  CHECK(g.attrs().at("producer").as<std::int64_t>() == 26);
}

TEST_CASE("io.text.programmatic_round_trip") {
  using namespace gpass;
  G g;
  g.attrs()["name"] = "prog";
  g.attrs()["nan"] = std::numeric_limits<double>::quiet_NaN();
  auto a = g.add_node({.name = "a", .op = "Placeholder", .outputs = {tensor_type{dtype::f32, shape{2, dim::symbol("n")}}}});
  auto b = g.add_node({.name = "b c", .op = "Split", .domain = "my.domain", .device = "/device:GPU:1"});
  g[b].outputs.resize(3);
  g[b].outputs[2] = list_type{tensor_type{dtype::int64, shape()}, dim::symbol("n") * 2 - 1, "a:0"};
  auto c = g.add_node({.name = "c", .op = "Merge"});
  g[c].outputs = {type(), tuple_type{{type(), tensor_type{dtype::bool_, shape(std::vector<dim>{})}}}};
  auto d = g.add_node({.name = "d", .op = "NextIteration"});
  auto e = g.add_node({.name = "e", .op = "NoOp"});
  g[e].outputs.clear();
  g.add_input(b, a);
  g.add_input(c, a);
  g.add_input(c, d);  // cycle c -> d -> c
  g.add_input(d, c, 1);
  g.add_empty_input(d);
  g.add_input(d, b, 2);
  g.add_empty_input(d);
  g.add_control(e, a);  // a control edge from a node added later
  g.add_control(d, e);
  g.add_control(b, e);
  g[a].attrs["ints"] = std::vector<std::int64_t>{1, -2};
  g[a].attrs["floats"] = std::vector<double>{0.5, -0.0, std::numeric_limits<double>::infinity()};
  g[a].attrs["t"] = tensor::from<std::int16_t>({1, -2, 3, -4}, {2, 2});
  g[a].attrs["s"] = std::string("\x00\x7f\"\\ \xe2\x82\xac", 8);
  g[a].attrs["ty"] = type(tensor_type{dtype::f16, shape()});
  g[a].attrs["f"] = function_ref{"body fn"};
  g[a].attrs["dt"] = std::vector<dtype>{dtype::bf16, dtype::undefined};
  g[a].attrs["bs"] = std::vector<bool>{};
  g[a].attrs["neg"] = std::int64_t{std::numeric_limits<std::int64_t>::min()};
  // (build functions in place: add_function(name, non-empty graph) moves the graph)
  G& body = g.add_function("body fn", G{});
  auto args = body.add_node({.name = "args", .op = "function_entry"});
  auto ret = body.add_node({.name = "ret", .op = "return"});
  body[ret].outputs.clear();
  body.add_input(ret, args);
  body.attrs()["kind"] = "body";
  g.add_function("a_cond", G{});

  std::string p1 = print_text(g);
  G h = parse_text(p1);
  check_same_graph(g, h);
  CHECK(print_text(h) == p1);
  CHECK(p1.find("%\"b c\":3 = my.domain::Split(%a) on \"/device:GPU:1\" -> (?, ?, list<i64[*], 2*n-1, like %a:0>)") !=
        std::string::npos);
  CHECK(p1.find("%d = NextIteration(%c:1, _, %\"b c\":2, _, ^%e)") == std::string::npos);  // e is d's control *successor*
  CHECK(p1.find("%d = NextIteration(%c:1, _, %\"b c\":2, _)") != std::string::npos);
  CHECK(p1.find("%a = Placeholder(^%e)") != std::string::npos);
  CHECK(p1.find("%e:0 = NoOp(^%d, ^%\"b c\")") != std::string::npos);
  CHECK(p1.find("neg = -9223372036854775808") != std::string::npos);
  CHECK(p1.find("s = \"\\x00\\x7f\\\"\\\\ \\xe2\\x82\\xac\"") != std::string::npos);
  // the function library, in name order
  auto fa = p1.find("func @a_cond {");
  auto fb = p1.find("func @\"body fn\" {kind = \"body\"} {");
  CHECK(fa != std::string::npos);
  CHECK(fb != std::string::npos);
  CHECK(fa < fb);
}

TEST_CASE("io.text.types_print_as_to_string") {
  using namespace gpass;
  dim n = dim::symbol("n"), m = dim::symbol("m");
  std::vector<type> types = {
      type(),
      tensor_type{},
      tensor_type{dtype::f32, shape(std::vector<dim>{})},
      tensor_type{dtype::undefined, shape{2}},
      tensor_type{dtype::int64, shape{2 * n + m - 3, dim(), dim(1) - n, n * 4 / 2, dim(0)}},
      list_type{tensor_type{dtype::f32, shape{dim(), 3}}, n, ""},
      list_type{tensor_type{dtype::f32, shape{dim(), 3}}, dim(), "ta:0"},
      tuple_type{{tensor_type{dtype::f32, shape{2}}, type()}},
      tuple_type{},
      tuple_type{{tuple_type{{tuple_type{}}}, list_type{tensor_type{}, dim(5), "x"}}},
  };
  if constexpr (requires { dim::integer(std::int64_t{}); })
    types.push_back(tensor_type{dtype::int32, shape{dim::integer(-1), dim(3)}});
  for (const auto& t : types) {
    CAPTURE(t.to_string());
    G g;
    g.add_node({.name = "x", .op = "T", .outputs = {t, tensor_type{dtype::f32, shape{1}}}});
    std::string p = print_text(g);
    CHECK(p.find("-> (" + t.to_string() + ", f32[1])") != std::string::npos);
    G h = parse_text(p);
    CHECK(h[h.at("x")].outputs.at(0) == t);
    // and as an attribute value
    g[g.at("x")].attrs["t"] = t;
    G k = parse_text(print_text(g));
    CHECK(k[k.at("x")].attrs.at("t").as<type>() == t);
  }
  // symbols that are not identifiers are quoted, and still round-trip
  type odd = tensor_type{dtype::f32, shape{dim::symbol("a b") + dim::symbol("9x") * 2}};
  G g;
  g.add_node({.name = "x", .op = "T", .outputs = {odd}});
  std::string p = print_text(g);
  CHECK(p.find("f32[2*\"9x\"+\"a b\"]") != std::string::npos);
  G h = parse_text(p);
  CHECK(h[h.at("x")].outputs.at(0) == odd);
}

TEST_CASE("io.text.attribute_spelling") {
  using namespace gpass;
  CHECK(print_attr(std::int64_t{3}) == "3");
  CHECK(print_attr(std::int64_t{-3}) == "-3");
  CHECK(print_attr(1.0) == "1.0");
  CHECK(print_attr(-0.0) == "-0.0");
  CHECK(print_attr(2.5) == "2.5");
  CHECK(print_attr(0.1) == "0.1");
  CHECK(print_attr(1e20) == "1e+20");
  CHECK(print_attr(123456789012345678.0) == "123456789012345680.0");
  CHECK(print_attr(std::numeric_limits<double>::infinity()) == "inf");
  CHECK(print_attr(-std::numeric_limits<double>::infinity()) == "-inf");
  CHECK(print_attr(std::numeric_limits<double>::quiet_NaN()) == "nan");
  CHECK(print_attr(-std::numeric_limits<double>::quiet_NaN()) == "-nan");
  CHECK(print_attr(std::bit_cast<double>(std::uint64_t{0x7ff0000000000001})) == "nan(0x7ff0000000000001)");
  CHECK(print_attr(std::string("a\"b\\c\nd\te\x01")) == "\"a\\\"b\\\\c\\nd\\te\\x01\"");
  CHECK(print_attr(true) == "true");
  CHECK(print_attr(dtype::f32) == "f32");
  CHECK(print_attr(dtype::undefined) == "?");
  CHECK(print_attr(shape{2, dim(), dim::symbol("n")}) == "shape[2,?,n]");
  CHECK(print_attr(shape()) == "shape[*]");
  CHECK(print_attr(type(tensor_type{dtype::f32, shape{2}})) == "type<f32[2]>");
  CHECK(print_attr(function_ref{"f"}) == "@f");
  CHECK(print_attr(tensor::from<float>({1, 2, 3, 4}, {2, 2})) == "tensor<f32[2,2]> [1.0, 2.0, 3.0, 4.0]");
  CHECK(print_attr(tensor::from<std::string>({"a"})) == "tensor<str[1]> [\"a\"]");
  CHECK(print_attr(tensor::from<bool>({true, false})) == "tensor<bool[2]> [true, false]");
  CHECK(print_attr(tensor::from<std::complex<float>>({{1, -2}})) == "tensor<c64[1]> [(1.0, -2.0)]");
  CHECK(print_attr(tensor::from<Eigen::half>({Eigen::half(0.5f)})) == "tensor<f16[1]> [0.5]");
  CHECK(print_attr(tensor::from<std::int8_t>({-128, 127})) == "tensor<i8[2]> [-128, 127]");
  CHECK(print_attr(tensor::from<std::uint8_t>({255})) == "tensor<u8[1]> [255]");
  CHECK(print_attr(std::vector<std::int64_t>{1, 2}) == "[1, 2]");
  CHECK(print_attr(std::vector<double>{1.0, 2.5}) == "[1.0, 2.5]");
  CHECK(print_attr(std::vector<std::string>{"a"}) == "[\"a\"]");
  CHECK(print_attr(std::vector<dtype>{dtype::f32, dtype::int64}) == "[f32, i64]");
  CHECK(print_attr(std::vector<shape>{shape{1}, shape()}) == "[shape[1], shape[*]]");
  CHECK(print_attr(std::vector<function_ref>{{"f"}, {"g"}}) == "[@f, @g]");
  CHECK(print_attr(std::vector<std::int64_t>{}) == "ints[]");
  CHECK(print_attr(std::vector<double>{}) == "floats[]");
  CHECK(print_attr(std::vector<std::string>{}) == "strings[]");
  CHECK(print_attr(std::vector<bool>{}) == "bools[]");
  CHECK(print_attr(std::vector<dtype>{}) == "dtypes[]");
  CHECK(print_attr(std::vector<shape>{}) == "shapes[]");
  CHECK(print_attr(std::vector<type>{}) == "types[]");
  CHECK(print_attr(std::vector<tensor>{}) == "tensors[]");
  CHECK(print_attr(std::vector<function_ref>{}) == "funcs[]");
}

TEST_CASE("io.text.tensors_round_trip_bit_exact") {
  using namespace gpass;
  std::mt19937_64 rng(12345);
  auto bits32 = [&] { return static_cast<std::uint32_t>(rng()); };
  // every f32 class: random bit patterns (NaN payloads, denormals, -0.0 included)
  {
    std::vector<float> v;
    for (int i = 0; i < 2000; ++i) v.push_back(std::bit_cast<float>(bits32()));
    v.push_back(-0.0f);
    v.push_back(std::numeric_limits<float>::denorm_min());
    v.push_back(-std::numeric_limits<float>::denorm_min());
    v.push_back(std::numeric_limits<float>::max());
    v.push_back(std::numeric_limits<float>::lowest());
    v.push_back(std::numeric_limits<float>::quiet_NaN());
    v.push_back(std::bit_cast<float>(std::uint32_t{0x7f800001}));  // signaling NaN
    auto t = tensor::from<float>(v);
    CHECK(tensor_round_trip<float>(t) == t);
  }
  {
    std::vector<double> v;
    for (int i = 0; i < 2000; ++i) v.push_back(std::bit_cast<double>(static_cast<std::uint64_t>(rng())));
    v.push_back(-0.0);
    v.push_back(std::numeric_limits<double>::denorm_min());
    v.push_back(std::numeric_limits<double>::max());
    v.push_back(1.0);
    auto t = tensor::from<double>(v, {static_cast<std::int64_t>(v.size()) / 4, 4});
    CHECK(tensor_round_trip<double>(t) == t);
  }
  // every 16-bit pattern of f16 and bf16
  {
    std::vector<Eigen::half> h;
    std::vector<Eigen::bfloat16> b;
    for (std::uint32_t i = 0; i < 65536; ++i) {
      h.push_back(Eigen::numext::bit_cast<Eigen::half>(static_cast<std::uint16_t>(i)));
      b.push_back(Eigen::numext::bit_cast<Eigen::bfloat16>(static_cast<std::uint16_t>(i)));
    }
    auto th = tensor::from<Eigen::half>(h, {256, 256});
    auto tb = tensor::from<Eigen::bfloat16>(b);
    CHECK(tensor_round_trip<Eigen::half>(th) == th);
    CHECK(tensor_round_trip<Eigen::bfloat16>(tb) == tb);
  }
  {
    std::vector<std::complex<float>> c;
    for (int i = 0; i < 100; ++i) c.emplace_back(std::bit_cast<float>(bits32()), std::bit_cast<float>(bits32()));
    auto t = tensor::from<std::complex<float>>(c);
    CHECK(tensor_round_trip<std::complex<float>>(t) == t);
    std::vector<std::complex<double>> z{{0.1, -0.0}, {std::numeric_limits<double>::infinity(), 5e-324}};
    auto tz = tensor::from<std::complex<double>>(z);
    CHECK(tensor_round_trip<std::complex<double>>(tz) == tz);
  }
  auto check_ints = [&]<class T>() {
    std::vector<T> v{std::numeric_limits<T>::min(), std::numeric_limits<T>::max(), T{0}, T{1}};
    for (int i = 0; i < 50; ++i) v.push_back(static_cast<T>(rng()));
    auto t = tensor::from<T>(v);
    CHECK(tensor_round_trip<T>(t) == t);
  };
  check_ints.operator()<std::int8_t>();
  check_ints.operator()<std::int16_t>();
  check_ints.operator()<std::int32_t>();
  check_ints.operator()<std::int64_t>();
  check_ints.operator()<std::uint8_t>();
  check_ints.operator()<std::uint16_t>();
  check_ints.operator()<std::uint32_t>();
  check_ints.operator()<std::uint64_t>();
  {
    std::string all;
    for (int i = 0; i < 256; ++i) all += static_cast<char>(i);
    auto t = tensor::from<std::string>({all, "", "plain"}, {3, 1});
    CHECK(tensor_round_trip<std::string>(t) == t);
  }
  {
    auto t = tensor::from<bool>({true, false, true, true, false, false}, {1, 2, 3});
    CHECK(tensor_round_trip<bool>(t) == t);
    tensor empty(dtype::f64, {0});
    CHECK(tensor_round_trip<double>(empty) == empty);
    tensor undefined;
    CHECK(tensor_round_trip<float>(undefined) == undefined);
  }
}

TEST_CASE("io.text.lenient_input_forms") {
  // forms the printer never writes but the parser accepts
  G g = gpass::parse_text(R"(graph {} {
  %b = Add(%a:0, %a)   # explicit port 0; a defined later
  %a = Const() {v = tensor<f32[2]> [1, -2], s = shape[ 2 , n ], x = "\r\0"} -> (f32[2])
  %c = Split(%a) -> (?, ?)
  %d = Id(^%a, %c:1)
  %e = Sym() -> (f32[1+n, 3*n-m, -1+n])
})");
  CHECK(g.num_outputs(g.at("c")) == 2);  // the '->' list gives the number of outputs
  CHECK(g.input(g.at("b"), 0).node == g.at("a"));
  CHECK(g.num_inputs(g.at("d")) == 1);
  CHECK(g.control_inputs(g.at("d")) == std::vector{g.at("a")});
  CHECK(g[g.at("a")].attrs.at("v").as<gpass::tensor>() == gpass::tensor::from<float>({1, -2}));
  CHECK(g[g.at("a")].attrs.at("x").as<std::string>() == std::string("\r\0", 2));
  CHECK(g[g.at("e")].outputs[0].to_string() == "f32[n+1,-m+3*n,n-1]");
  std::string p = gpass::print_text(g);
  CHECK(p.find("%b = Add(%a, %a)") != std::string::npos);
  CHECK(p.find("%d = Id(%c:1, ^%a)") != std::string::npos);
  CHECK(p.find("%c:2 = Split(%a)\n") != std::string::npos);
  CHECK(p.find("x = \"\\x0d\\x00\"") != std::string::npos);
}

TEST_CASE("io.text.parse_errors_have_positions") {
  struct case_ {
    std::string text;
    int line, column;
    std::string message;
  };
  const std::string deep_tuple = "graph {\n  %x = A() -> (" + std::string(1000, 't') + ")\n}";
  std::string nested;
  for (int i = 0; i < 100000; ++i) nested += "tuple<";
  std::vector<case_> cases = {
      {"graph {\n  %x = Foo(%y)\n}\n", 2, 12, "unknown node %y"},
      {"graph {\n  %x = Foo(^%\"a b\")\n}\n", 2, 13, "unknown node %\"a b\""},
      {"graph {\n  %x = A()\n  %x = B()\n}", 3, 3, "duplicate node name %x"},
      {"graph {\n  %x = A()\n  %y = B(%x:1)\n}", 3, 10, "bad port: %x:1, but node %x has 1 output"},
      {"graph {\n  %x:2 = A()\n  %y = B(%x:2)\n}", 3, 10, "has 2 outputs"},
      {"graph {\n  %x = A()\n  %y = B(%x:99999999999)\n}", 3, 13, "bad port"},
      {"graph {\n  %x = A()\n  %y = B(%x:1.5)\n}", 3, 13, "got the float"},
      {"graph {\n  %x = A(,)\n}", 2, 10, "unexpected ',', expected an input"},
      {"graph {\n  %x = A() {a = 12abc}\n}", 2, 17, "malformed number '12abc'"},
      {"graph {\n  %x = A() {a = 99999999999999999999}\n}", 2, 17, "out of range"},
      {"graph {\n  %x = A() {a = 1e999}\n}", 2, 17, "out of range"},
      {"graph {\n  %x = A() {s = \"abc\n}", 2, 21, "newline in string"},
      {"graph {\n  %x = A() {s = \"abc", 2, 17, "unterminated string"},
      {"graph {\n  %x = A() {s = \"a\\qb\"}\n}", 2, 19, "malformed string escape '\\q'"},
      {"graph {\n  %x = A() {s = \"a\\x4\"}\n}", 2, 19, "\\x needs two hex digits"},
      {"graph {\n  %x = A() {d = f33}\n}", 2, 17, "unknown dtype 'f33'"},
      {"graph {\n  %x = A() -> (q32[1])\n}", 2, 16, "unknown dtype 'q32'"},
      {"graph {\n  %x = A() {l = [1, 2.0]}\n}", 2, 21, "mixed-kind list: a float in a list of ints"},
      {"graph {\n  %x = A() {l = [\"a\", @f]}\n}", 2, 23, "mixed-kind list"},
      {"graph {\n  %x = A() {l = []}\n}", 2, 17, "an empty list needs its kind"},
      {"graph {\n  %x = A() {l = [[1]]}\n}", 2, 18, "lists of lists"},
      {"graph {\n  %x = A() {l = ints[1]}\n}", 2, 22, "only for empty lists"},
      {"graph {\n  %x = A() {a = 1, a = 2}\n}", 2, 20, "duplicate attribute 'a'"},
      {"func @f {\n}\n", 3, 1, "missing 'graph"},
      {"", 1, 1, "missing 'graph"},
      {"# only a comment", 1, 17, "missing 'graph"},
      {"graph {\n}\ngraph {\n}\n", 3, 1, "a second 'graph'"},
      {"graph {\n}\nfunc @f {\n}\nfunc @f {\n}\n", 5, 6, "duplicate function @f"},
      {"graph {\n  %x = A(", 2, 10, "unexpected end of input"},
      {"graph {\n  %x = A()", 2, 11, "unexpected end of input"},
      {"graph {\n  %x = A() $\n}", 2, 12, "unexpected character '$'"},
      {"graph {\n  %x = A() \x01\n}", 2, 12, "unexpected byte 0x01"},
      {"graph {\n  %a = B()\n  x = A()\n}", 3, 3, "expected a node definition"},
      {"graph {\n  % = A()\n}", 2, 3, "expected a node name after '%'"},
      {"graph {\n  %\"\" = A()\n}", 2, 3, "empty node name"},
      {"grph {\n}", 1, 1, "expected 'graph' or 'func'"},
      {"graph {\n  %x:2 = A() -> (f32[1])\n}", 2, 14, "has 2 outputs but 1 output types"},
      {"graph {\n  %x:9999999 = A()\n}", 2, 6, "bad number of outputs"},
      {"graph {\n  %x = A() -> (f32[n+n])\n}", 2, 20, "symbol 'n' appears twice in a dim"},
      {"graph {\n  %x = A() -> (f32[2*])\n}", 2, 22, "expected a symbol name"},
      {"graph {\n  %x = A() -> (f32)\n}", 2, 19, "expected '['"},
      {"graph {\n  %x = A() -> (f32[9223372036854775807+1])\n}", 2, 40, "dim overflows"},
      {deep_tuple, 2, 16, "unknown dtype"},
      {"graph {\n  %x = A() -> (" + nested + ")\n}", 2, 16 + 6 * 64, "type nesting too deep"},
      {"graph {\n  %x = A() -> (list<f32[1], 2, like x>)\n}", 2, 37, "expected a node reference"},
      {"graph {\n  %x = A() {t = tensor<f32[2]> [1.0]}\n}", 2, 32, "needs 2 elements, got 1"},
      {"graph {\n  %x = A() {t = tensor<f32[1]> [1.0, 2.0]}\n}", 2, 38, "too many elements"},
      {"graph {\n  %x = A() {t = tensor<f32[1000000000000000]> []}\n}", 2, 47, "needs 1000000000000000 elements, got 0"},
      {"graph {\n  %x = A() {t = tensor<f32[4294967296,4294967296]> []}\n}", 2, 24, "too many elements"},
      {"graph {\n  %x = A() {t = tensor<f32[n]> [1.0]}\n}", 2, 24, "needs a known shape"},
      {"graph {\n  %x = A() {t = tensor<f32[*]> [1.0]}\n}", 2, 24, "needs a known shape"},
      {"graph {\n  %x = A() {t = tensor<resource[1]> [1]}\n}", 2, 24, "cannot hold values"},
      {"graph {\n  %x = A() {t = tensor<f16[1]> [70000.0]}\n}", 2, 33, "out of range for f16"},
      {"graph {\n  %x = A() {t = tensor<f32[1]> [1e39]}\n}", 2, 33, "out of range for f32"},
      {"graph {\n  %x = A() {t = tensor<u8[1]> [256]}\n}", 2, 32, "out of range for u8"},
      {"graph {\n  %x = A() {t = tensor<u8[1]> [-1]}\n}", 2, 32, "out of range for u8"},
      {"graph {\n  %x = A() {t = tensor<i8[1]> [-129]}\n}", 2, 32, "out of range for i8"},
      {"graph {\n  %x = A() {t = tensor<i32[1]> [1.5]}\n}", 2, 33, "got the float"},
      {"graph {\n  %x = A() {t = tensor<bool[1]> [1]}\n}", 2, 34, "expected true or false"},
      {"graph {\n  %x = A() {t = tensor<str[1]> [a]}\n}", 2, 33, "expected a string"},
      {"graph {\n  %x = A() {t = tensor<f32[1]> [nan(0x3f800000)]}\n}", 2, 37, "is not the bits of a NaN"},
      {"graph {\n  %x = A() {t = tensor<f16[1]> [nan(0x7c00)]}\n}", 2, 37, "is not the bits of a f16 NaN"},
      {"graph {\n  %x = A() {t = tensor<?[1]> [1]}\n}", 2, 31, "has no elements"},
      {"graph {\n  %x = A() {f = -x}\n}", 2, 18, "expected 'inf' or 'nan'"},
      {"graph {\n  %x = A() {f = shape}\n}", 2, 22, "expected '[' after 'shape'"},
      {"graph {\n  %x = A() on dev\n}", 2, 15, "expected a device string"},
      {"graph {\n  %x = com::(%y)\n}", 2, 13, "expected an op name after '::'"},
      {"graph {\n  %x = A() -> (f32[1]\n}", 3, 1, "unexpected '}'"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.text.substr(0, 200));
    gpass::error e = parse_error(c.text);
    CAPTURE(std::string(e.what()).substr(0, 300));
    CHECK(e.context().file == "test.gir");
    CHECK(e.context().line == c.line);
    CHECK(e.context().column == c.column);
    CHECK(e.message().find(c.message) != std::string::npos);
    CHECK(std::string(e.what()).find("test.gir:" + std::to_string(c.line) + ":" + std::to_string(c.column) + ": ") !=
          std::string::npos);
  }
}

TEST_CASE("io.text.output_port_budget") {
  // outputs declared by a count alone cost no input, so their total is bounded
  std::string text = "graph {\n";
  for (int i = 0; i < 20; ++i) text += "  %x" + std::to_string(i) + ":65536 = A()\n";
  text += "}\n";
  gpass::error e = parse_error(text);
  CHECK(e.message().find("too many output ports in total") != std::string::npos);
  CHECK(e.context().line == 18);  // 16 * 65536 == 2^20 fit, plus the input size
  CHECK(e.context().column == 3);
  // a count backed by an explicit type list is not limited by the budget
  G g = gpass::parse_text("graph {\n  %x:3 = A() -> (?, ?, f32[1])\n}\n");
  CHECK(g.num_outputs(g.at("x")) == 3);
}

TEST_CASE("io.text.valid_edge_cases") {
  // empty attribute dictionary before the body, empty graph, zero outputs with types omitted
  G g = gpass::parse_text("graph {} {\n}\nfunc @f {} {\n  %e:0 = function_entry() -> ()\n}\n");
  CHECK(g.empty());
  CHECK(g.attrs().empty());
  REQUIRE(g.find_function("f"));
  CHECK(g.find_function("f")->num_outputs(g.find_function("f")->at("e")) == 0);
  CHECK(gpass::print_text(g) == "graph {\n}\n\nfunc @f {\n  %e:0 = function_entry()\n}\n");
  // functions may come before the graph
  G h = gpass::parse_text("func @f {\n}\ngraph {\n  %x = A() {g = @f}\n}\n");
  CHECK(h.find_function("f"));
  if constexpr (requires { gpass::dim::integer(std::int64_t{}); }) {
    G k = gpass::parse_text("graph {\n  %x = Reshape() -> (f32[-1,3])\n}\n");
    CHECK(k[k.at("x")].outputs[0].tensor().shape[0] == gpass::dim::integer(-1));
  }
}

TEST_CASE("io.text.nested_function_library_throws") {
  G g;
  G f;
  f.add_function("inner", G{});
  g.add_function("outer", f);
  CHECK_THROWS_WITH_AS(gpass::print_text(g), doctest::Contains("function 'outer' has a function library of its own"),
                       gpass::error);
}

TEST_CASE("io.text.read_text_file_names_the_file") {
  fs::path missing = ir_dir() / "does_not_exist.gir";
  try {
    (void)gpass::read_text_file(missing);
    FAIL("no error");
  } catch (const gpass::error& e) {
    CHECK(e.context().file == missing.string());
    CHECK(std::string(e.what()).find("cannot open the text IR file: no such file") != std::string::npos);
  }
  fs::path tmp = fs::temp_directory_path() / "gpass_io_text_bad.gir";
  {
    std::ofstream out(tmp, std::ios::binary);
    out << "graph {\n  %x = A(%nope)\n}\n";
  }
  try {
    (void)gpass::read_text_file(tmp);
    FAIL("no error");
  } catch (const gpass::error& e) {
    CHECK(e.context().file == tmp.string());
    CHECK(e.context().line == 2);
    CHECK(e.context().column == 10);
    CHECK(std::string(e.what()).find(tmp.string() + ":2:10: unknown node %nope") != std::string::npos);
  }
  fs::remove(tmp);
}

TEST_CASE("io.text.truncated_and_mutated_input_never_crash") {
  std::mt19937 rng(7);
  std::size_t ok = 0, errors = 0;
  for (const auto& f : fixtures()) {
    std::string src = slurp(f);
    for (std::size_t n = 0; n <= src.size(); ++n) {
      try {
        (void)gpass::parse_text(std::string_view(src).substr(0, n));
        ++ok;
      } catch (const gpass::error&) {
        ++errors;
      }
    }
    for (int i = 0; i < 300; ++i) {
      std::string m = src;
      int edits = 1 + static_cast<int>(rng() % 4);
      for (int k = 0; k < edits && !m.empty(); ++k) {
        std::size_t at = rng() % m.size();
        static const char pool[] = "%@^_:,()[]{}<>\"\\#-+*?=0123456789xn \n\x01\xff";
        switch (rng() % 3) {
          case 0: m[at] = pool[rng() % (sizeof pool - 1)]; break;
          case 1: m.erase(at, 1 + rng() % 8); break;
          default: m.insert(at, 1, pool[rng() % (sizeof pool - 1)]); break;
        }
      }
      try {
        G g = gpass::parse_text(m);
        // whatever parses must print and parse back to the same text
        std::string p = gpass::print_text(g);
        CHECK(gpass::print_text(gpass::parse_text(p)) == p);
        ++ok;
      } catch (const gpass::error&) {
        ++errors;
      }
    }
  }
  CHECK(ok > 0);
  CHECK(errors > 0);
}

namespace {
struct tagged_node : gpass::node {
  int tag = 0;
  friend bool operator==(const tagged_node&, const tagged_node&) = default;
};
}  // namespace

TEST_CASE("io.text.user_node_type") {
  using TG = gpass::graph<tagged_node>;
  TG g = gpass::parse_text<TG>("graph {\n  %x = A()\n  %y = B(%x) on \"cpu\"\n}\n");
  CHECK(g.num_nodes() == 2);
  CHECK(g[g.at("y")].tag == 0);
  CHECK(g[g.at("y")].device == "cpu");
  CHECK(gpass::print_text(g) == "graph {\n  %x = A()\n  %y = B(%x) on \"cpu\"\n}\n");
}

TEST_CASE("io.text.large_graph_round_trip") {
  // a long chain with fan-in: linear time, and no recursion over the graph
  constexpr int n = 20000;
  G g;
  auto prev = g.add_node({.name = "n0", .op = "Placeholder", .outputs = {gpass::tensor_type{gpass::dtype::f32, gpass::shape{8}}}});
  auto first = prev;
  for (int i = 1; i < n; ++i) {
    auto v = g.add_node({.name = "n" + std::to_string(i), .op = "Add"});
    g[v].attrs["i"] = std::int64_t{i};
    g.add_input(v, prev);
    g.add_input(v, first);
    prev = v;
  }
  std::string p = gpass::print_text(g);
  G h = gpass::parse_text(p);
  CHECK(h.num_nodes() == static_cast<std::size_t>(n));
  CHECK(h.num_edges() == g.num_edges());
  CHECK(gpass::print_text(h) == p);
}

}  // namespace gpass_test_io_text
