// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file fused_elementwise.hpp
/// The program of `gpass::FusedElementwise`, the op `fuse-elementwise` makes of a chain of
/// element-wise ops: one step per fused op, each reading the op's inputs (`x<k>`) or an
/// earlier step's result (`s<k>`); the last step is the output. Written in the op's
/// attribute `program` as strings, one a step:
///
///     program = ["Mul x0 x1", "Add s0 x2", "Tanh s1"]      // tanh(x0 * x1 + x2)
///
/// `parse_fused_program` reads and checks it; the executors' kernels and the pass share it.

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <gpass/core/error.hpp>

namespace gpass {

/// The ops a fused element-wise program may use (ONNX semantics, floating-point types), and
/// their arity: the unary ones take one operand, the binary ones two.
inline constexpr std::array<std::string_view, 12> fused_unary_ops{"Relu", "Sigmoid", "Tanh", "Exp",        "Log",  "Neg",
                                                                 "Abs",  "Sqrt",    "Erf",  "Reciprocal", "Ceil", "Floor"};
inline constexpr std::array<std::string_view, 4> fused_binary_ops{"Add", "Sub", "Mul", "Div"};

/// The arity of `op` in a fused program: 1, 2, or 0 when it cannot be fused.
inline int fused_op_arity(std::string_view op) {
  for (auto u : fused_unary_ops)
    if (u == op) return 1;
  for (auto b : fused_binary_ops)
    if (b == op) return 2;
  return 0;
}

/// The ops of `fused_binary_ops` then `fused_unary_ops`, in their order: what a kernel
/// switches on (no string compare per block).
enum class fused_op : unsigned char {
  Add, Sub, Mul, Div,
  Relu, Sigmoid, Tanh, Exp, Log, Neg, Abs, Sqrt, Erf, Reciprocal, Ceil, Floor
};

/// The `fused_op` of `op` (one of `fused_binary_ops` or `fused_unary_ops`).
inline fused_op fused_op_code(std::string_view op) {
  for (std::size_t i = 0; i < fused_binary_ops.size(); ++i)
    if (fused_binary_ops[i] == op) return static_cast<fused_op>(i);
  for (std::size_t i = 0; i < fused_unary_ops.size(); ++i)
    if (fused_unary_ops[i] == op) return static_cast<fused_op>(fused_binary_ops.size() + i);
  throw error("'" + std::string(op) + "' is not an op a fused program may use");
}

/// One step of a fused program: the op (its name and code) and its operands, each an input
/// index (>= 0) or an earlier step `k` encoded as `-(k + 1)`.
struct fused_step {
  std::string op;
  fused_op code = fused_op::Add;
  int arity = 0;
  std::array<int, 2> args{0, 0};
};

/// An operand as written: `x<k>` for input k, `s<k>` for step k.
inline std::string fused_operand_text(int arg) {
  return arg >= 0 ? "x" + std::to_string(arg) : "s" + std::to_string(-arg - 1);
}

/// Reads `program` for an op of `num_inputs` inputs. Throws `gpass::error` naming the step
/// when a step names an unknown op, has the wrong number of operands, or reads an input that
/// does not exist or a step that does not come before it; an empty program is an error too.
inline std::vector<fused_step> parse_fused_program(const std::vector<std::string>& program, std::size_t num_inputs) {
  if (program.empty()) throw error("the fused element-wise program is empty");
  std::vector<fused_step> steps;
  steps.reserve(program.size());
  for (std::size_t i = 0; i < program.size(); ++i) {
    const std::string& text = program[i];
    auto fail = [&](const std::string& why) -> void {
      throw error("step " + std::to_string(i) + " of the fused element-wise program ('" + text + "'): " + why);
    };
    std::vector<std::string_view> words;
    std::string_view rest = text;
    while (!rest.empty()) {
      const auto b = rest.find_first_not_of(' ');
      if (b == std::string_view::npos) break;
      rest.remove_prefix(b);
      const auto e = rest.find(' ');
      words.push_back(rest.substr(0, e));
      rest = e == std::string_view::npos ? std::string_view() : rest.substr(e);
    }
    if (words.empty()) fail("no op");
    fused_step s;
    s.op = std::string(words[0]);
    s.arity = fused_op_arity(s.op);
    if (s.arity == 0) fail("'" + s.op + "' is not an op a fused program may use");
    s.code = fused_op_code(s.op);
    if (words.size() != static_cast<std::size_t>(s.arity) + 1)
      fail(s.op + " takes " + std::to_string(s.arity) + " operand(s), got " + std::to_string(words.size() - 1));
    for (int a = 0; a < s.arity; ++a) {
      const std::string_view w = words[static_cast<std::size_t>(a) + 1];
      std::size_t k = 0;
      bool ok = w.size() >= 2 && w.size() <= 6 && (w[0] == 'x' || w[0] == 's');
      for (std::size_t c = 1; ok && c < w.size(); ++c) {
        ok = w[c] >= '0' && w[c] <= '9';
        k = k * 10 + static_cast<std::size_t>(w[c] - '0');
      }
      if (!ok) fail("operand '" + std::string(w) + "' is neither x<input> nor s<step>");
      if (w[0] == 'x' && k >= num_inputs)
        fail("operand '" + std::string(w) + "' reads input " + std::to_string(k) + " of " + std::to_string(num_inputs));
      if (w[0] == 's' && k >= i) fail("operand '" + std::string(w) + "' reads a step that does not come before it");
      s.args[static_cast<std::size_t>(a)] = w[0] == 'x' ? static_cast<int>(k) : -static_cast<int>(k) - 1;
    }
    steps.push_back(std::move(s));
  }
  return steps;
}

/// `parse_fused_program`, its error given to `fail` (a kernel's or an inference context's,
/// which names the node and throws) instead of thrown as it is.
template <class Fail>
std::vector<fused_step> parse_fused_program(const std::vector<std::string>& program, std::size_t num_inputs, Fail&& fail) {
  try {
    return parse_fused_program(program, num_inputs);
  } catch (const error& e) {
    fail(std::string(e.what()));
  }
  return {};
}

}  // namespace gpass
