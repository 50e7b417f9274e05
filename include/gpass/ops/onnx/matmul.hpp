// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file matmul.hpp
/// ONNX matrix products: MatMul (numpy semantics, batch broadcasting), MatMulInteger,
/// QLinearMatMul, Gemm (transposes; C broadcast to the result), Einsum (equation parsing,
/// ellipsis), Det.

#include <array>
#include <cctype>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <gpass/ops/fused_matmul.hpp>
#include <gpass/ops/onnx/common.hpp>

namespace gpass {

/// Registers the ONNX matrix-product ops into `r` (see the file comment).
void register_onnx_matmul_ops(op_registry& r);

namespace detail::onnx_ops {

using namespace gpass::onnx_shape;

// Numpy matmul of shapes a and b (inputs ia, ib name them in errors).
inline void matmul_shapes(infer_context& c, shape a, shape b) {
  if (!a.has_rank() || !b.has_rank()) return;
  if (a.rank() == 0 || b.rank() == 0) c.fail("MatMul inputs must not be scalars");
  const bool a1 = a.rank() == 1, b1 = b.rank() == 1;
  if (a1) a = shape{dim(1), a[0]};
  if (b1) b = shape{b[0], dim(1)};
  c.unify(a[a.rank() - 1], b[b.rank() - 2], "(inner dimensions of " + a.to_string() + " and " + b.to_string() + ")");
  shape ba(std::vector<dim>(a.dims().begin(), a.dims().end() - 2));
  shape bb(std::vector<dim>(b.dims().begin(), b.dims().end() - 2));
  shape batch;
  try {
    batch = broadcast_shapes({ba, bb}, c.symbols());
  } catch (const error& e) {
    c.fail(e.message() + " (batch dimensions)");
  }
  std::vector<dim> out = batch.dims();
  if (!a1) out.push_back(a[a.rank() - 2]);
  if (!b1) out.push_back(b[b.rank() - 1]);
  c.set_shape(0, shape(std::move(out)));
}

inline void matmul_infer(infer_context& c) {
  bool q = c.op() == "QLinearMatMul";
  matmul_shapes(c, c.input_shape(0), c.input_shape(q ? 3 : 1));
}

inline void gemm_infer(infer_context& c) {
  shape a = c.input_shape(0), b = c.input_shape(1);
  if (a.has_rank() && a.rank() != 2) c.fail("A must be 2-D, got " + a.to_string());
  if (b.has_rank() && b.rank() != 2) c.fail("B must be 2-D, got " + b.to_string());
  const bool ta = c.attr_int("transA", 0) != 0, tb = c.attr_int("transB", 0) != 0;
  dim m = a.has_rank() ? a[ta ? 1 : 0] : dim(), ka = a.has_rank() ? a[ta ? 0 : 1] : dim();
  dim kb = b.has_rank() ? b[tb ? 1 : 0] : dim(), n = b.has_rank() ? b[tb ? 0 : 1] : dim();
  c.unify(ka, kb, "(inner dimensions of A and B)");
  shape y{m, n};
  if (c.has_input(2)) {
    shape cs = c.input_shape(2);
    if (cs.has_rank()) {
      if (cs.rank() > 2) c.fail("C must have rank <= 2, got " + cs.to_string());
      try {
        shape bc = broadcast_shapes({y, cs}, c.symbols());
        // C broadcasts to (M, N): it may fill in unknown M or N, never grow them
        y = shape{y[0].is_unknown() ? bc[0] : y[0], y[1].is_unknown() ? bc[1] : y[1]};
      } catch (const error& e) {
        c.fail(e.message() + " (C does not broadcast to " + y.to_string() + ")");
      }
    }
  }
  c.set_shape(0, y);
}

inline void einsum_infer(infer_context& c) {
  std::string eq = c.attr_string("equation", "");
  std::string lhs = eq, rhs;
  bool has_arrow = false;
  if (auto p = eq.find("->"); p != std::string::npos) {
    lhs = eq.substr(0, p);
    rhs = eq.substr(p + 2);
    has_arrow = true;
  }
  auto strip = [](std::string s) {
    std::string r;
    for (char ch : s)
      if (ch != ' ') r += ch;
    return r;
  };
  lhs = strip(lhs);
  rhs = strip(rhs);
  std::vector<std::string> terms;
  {
    std::string cur;
    for (char ch : lhs) {
      if (ch == ',') {
        terms.push_back(cur);
        cur.clear();
      } else cur += ch;
    }
    terms.push_back(cur);
  }
  if (terms.size() != c.num_inputs())
    c.fail("equation '" + eq + "' has " + std::to_string(terms.size()) + " operands for " + std::to_string(c.num_inputs()) +
           " inputs");
  std::map<char, dim> letters;
  std::map<char, int> counts;
  std::vector<shape> ellipses;
  bool any_ellipsis = false;
  for (std::size_t i = 0; i < terms.size(); ++i) {
    shape s = c.input_shape(i);
    if (!s.has_rank()) return;
    const std::string& t = terms[i];
    std::size_t nl = 0;
    bool ell = false;
    for (std::size_t j = 0; j < t.size(); ++j) {
      if (t.compare(j, 3, "...") == 0) {
        if (ell) c.fail("operand " + std::to_string(i) + " has two ellipses");
        ell = true;
        j += 2;
      } else if (std::isalpha(static_cast<unsigned char>(t[j]))) {
        ++nl;
      } else {
        c.fail("bad character '" + std::string(1, t[j]) + "' in equation '" + eq + "'");
      }
    }
    if (!ell && nl != s.rank())
      c.fail("operand " + std::to_string(i) + " '" + t + "' has " + std::to_string(nl) + " labels for rank " +
             std::to_string(s.rank()));
    if (ell && nl > s.rank()) c.fail("operand " + std::to_string(i) + " has more labels than dims");
    std::size_t er = ell ? s.rank() - nl : 0;
    std::size_t d = 0;
    for (std::size_t j = 0; j < t.size(); ++j) {
      if (t.compare(j, 3, "...") == 0) {
        ellipses.push_back(shape(std::vector<dim>(s.dims().begin() + d, s.dims().begin() + d + er)));
        any_ellipsis = true;
        d += er;
        j += 2;
        continue;
      }
      char l = t[j];
      ++counts[l];
      auto it = letters.find(l);
      if (it == letters.end()) letters.emplace(l, s[d]);
      else if (!(it->second.is_known() && it->second.value() == 1) && !(s[d].is_known() && s[d].value() == 1))
        it->second = c.unify(it->second, s[d], std::string("(label '") + l + "' in operand " + std::to_string(i) + ")");
      else if (it->second.is_known() && it->second.value() == 1)
        it->second = s[d];
      ++d;
    }
  }
  shape ell;
  if (any_ellipsis) {
    try {
      ell = broadcast_shapes(ellipses, c.symbols());
    } catch (const error& e) {
      c.fail(e.message() + " (ellipsis dimensions)");
    }
  }
  std::vector<dim> out;
  if (has_arrow) {
    for (std::size_t j = 0; j < rhs.size(); ++j) {
      if (rhs.compare(j, 3, "...") == 0) {
        out.insert(out.end(), ell.dims().begin(), ell.dims().end());
        j += 2;
        continue;
      }
      auto it = letters.find(rhs[j]);
      if (it == letters.end()) c.fail(std::string("output label '") + rhs[j] + "' is not in any operand");
      out.push_back(it->second);
    }
  } else {
    out = ell.has_rank() ? ell.dims() : std::vector<dim>{};
    for (const auto& [l, n] : counts)
      if (n == 1) out.push_back(letters.at(l));
  }
  c.set_shape(0, shape(std::move(out)));
}

inline void det_infer(infer_context& c) {
  shape s = c.input_shape(0);
  if (!s.has_rank()) return;
  if (s.rank() < 2) c.fail("input must have rank >= 2, got " + s.to_string());
  c.unify(s[s.rank() - 1], s[s.rank() - 2], "(square matrices)");
  c.set_shape(0, shape(std::vector<dim>(s.dims().begin(), s.dims().end() - 2)));
}

}  // namespace detail::onnx_ops
}  // namespace gpass

inline void gpass::register_onnx_matmul_ops(op_registry& r) {
  using namespace detail::onnx_ops;
  namespace ot = onnx_types;
  const auto num = ot::numeric();
  onnx_op("MatMul", 1).in("A:T").in("B:T").out("Y:T").tc("T", num).infer(matmul_infer).add(r);
  onnx_op("MatMulInteger", 10).in("A:T1").in("B:T2").in("a_zero_point?:T1").in("b_zero_point?:T2").out("Y:i32")
      .tc("T1", ot::ints()).tc("T2", ot::ints()).infer(matmul_infer).add(r);
  onnx_op("QLinearMatMul", 10).in("a:T1").in("a_scale:f32").in("a_zero_point:T1").in("b:T2").in("b_scale:f32")
      .in("b_zero_point:T2").in("y_scale:f32").in("y_zero_point:T3").out("y:T3").tc("T1", ot::ints())
      .tc("T2", ot::ints()).tc("T3", ot::ints()).infer(matmul_infer).add(r);
  onnx_op("Gemm", 1).until(10).in("A:T").in("B:T").in("C:T").out("Y:T").tc("T", num).attr("alpha", "float", 1.0)
      .attr("beta", "float", 1.0).attr("transA", "int", std::int64_t{0}).attr("transB", "int", std::int64_t{0})
      .opt("broadcast", "int").infer(gemm_infer).add(r);
  onnx_op("Gemm", 11).in("A:T").in("B:T").in("C?:T").out("Y:T").tc("T", num).attr("alpha", "float", 1.0)
      .attr("beta", "float", 1.0).attr("transA", "int", std::int64_t{0}).attr("transB", "int", std::int64_t{0})
      .infer(gemm_infer).add(r);
  {  // gpass's fused op (the optimizer's -O3): act(Gemm(A, B, C))
    op_schema s = onnx_op("FusedGemm", 1).in("A:T").in("B:T").in("C?:T").out("Y:T").tc("T", num).attr("alpha", "float", 1.0)
                      .attr("beta", "float", 1.0).attr("transA", "int", std::int64_t{0}).attr("transB", "int", std::int64_t{0})
                      .attr("activation", "string", "").opt("activation_params", "floats").infer(gemm_infer)
                      .doc("Gemm through `activation` (gpass-opt -O3)").build();
    s.domain = "gpass";
    r.add(std::move(s));
  }
  // what ONNX Runtime's extended optimizer saves (domain com.microsoft)
  {
    op_schema s = onnx_op("FusedGemm", 1).in("A:T").in("B:T").in("C?:T").out("Y:T").tc("T", onnx_types::floats()).attr("alpha", "float", 1.0)
                      .attr("beta", "float", 1.0).attr("transA", "int", std::int64_t{0}).attr("transB", "int", std::int64_t{0})
                      .attr("activation", "string", "").opt("activation_alpha", "float").opt("activation_beta", "float")
                      .opt("activation_gamma", "float").infer(gemm_infer)
                      .doc("ONNX Runtime's Gemm through `activation`").build();
    s.domain = "com.microsoft";
    r.add(std::move(s));
    op_schema m = onnx_op("FusedMatMul", 1).in("A:T").in("B:T").out("Y:T").tc("T", onnx_types::floats()).attr("alpha", "float", 1.0)
                      .attr("transA", "int", std::int64_t{0}).attr("transB", "int", std::int64_t{0})
                      .attr("transBatchA", "int", std::int64_t{0}).attr("transBatchB", "int", std::int64_t{0})
                      .infer([](infer_context& c) {
                        auto op = [&](std::size_t i, const char* batch, const char* t) {
                          shape x = c.input_shape(i);
                          if (!x.has_rank()) return x;
                          std::vector<dim> d;
                          for (std::size_t k : fused_matmul_perm(x.rank(), c.attr_int(batch, 0) != 0, c.attr_int(t, 0) != 0)) d.push_back(x[k]);
                          return shape(std::move(d));
                        };
                        matmul_shapes(c, op(0, "transBatchA", "transA"), op(1, "transBatchB", "transB"));
                      })
                      .doc("ONNX Runtime's alpha * op(A) x op(B), op permuting the operand as transBatch and trans say").build();
    m.domain = "com.microsoft";
    r.add(std::move(m));
  }
  onnx_op("Einsum", 12).in("Inputs*:T").out("Output:T").tc("T", num).req("equation", "string").infer(einsum_infer).add(r);
  onnx_op("Det", 11).in("X:T").out("Y:T").tc("T", ot::floats()).infer(det_infer).add(r);
}
