// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <gpass/core/error.hpp>

#include <string>

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_core_error {

TEST_CASE("core.error.formatting") {
  CHECK(std::string(gpass::error("boom").what()) == "gpass: boom");
  gpass::error_context c;
  c.file = "model.gir";
  c.line = 3;
  c.column = 7;
  CHECK(std::string(gpass::error("unexpected ','", c).what()) == "gpass: model.gir:3:7: unexpected ','");
  gpass::error_context l;
  l.line = 2;
  CHECK(std::string(gpass::error("x", l).what()) == "gpass: <input>:2: x");
  gpass::error_context f;
  f.file = "a.pb";
  CHECK(std::string(gpass::error("cannot open file", f).what()) == "gpass: a.pb: cannot open file");
  gpass::error_context p;
  p.pass = "dce";
  p.node = "add_1";
  p.op = "Add";
  CHECK(std::string(gpass::error("input 2 is not connected", p).what()) ==
        "gpass: pass 'dce': node 'add_1' (op Add): input 2 is not connected");
  gpass::error_context n;
  n.node = "x";
  CHECK(std::string(gpass::error("m", n).what()) == "gpass: node 'x': m");
}

TEST_CASE("core.error.context_and_with") {
  gpass::error e("bad");
  CHECK(e.message() == "bad");
  CHECK(e.context().pass.empty());
  auto e2 = e.with_pass("cse").with_node("n", "Mul");
  CHECK(e2.message() == "bad");
  CHECK(e2.context().pass == "cse");
  CHECK(e2.context().node == "n");
  CHECK(e2.context().op == "Mul");
  CHECK(std::string(e2.what()) == "gpass: pass 'cse': node 'n' (op Mul): bad");
  // already-set fields are kept
  auto e3 = e2.with_pass("other").with_node("m", "Add");
  CHECK(e3.context().pass == "cse");
  CHECK(e3.context().node == "n");
  CHECK(e3.context().op == "Mul");
  CHECK_THROWS_WITH_AS(gpass::throw_node_error("no inputs", "relu", "Relu"), "gpass: node 'relu' (op Relu): no inputs",
                       gpass::error);
  try {
    gpass::throw_node_error("m", "a", "B");
  } catch (const std::runtime_error& r) {  // gpass::error is a std::runtime_error
    CHECK(std::string(r.what()) == "gpass: node 'a' (op B): m");
  }
}

}  // namespace gpass_test_core_error
