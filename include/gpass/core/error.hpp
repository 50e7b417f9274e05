// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file error.hpp
/// `gpass::error`: the one exception type of the library, with context.

#include <stdexcept>
#include <string>
#include <utility>

namespace gpass {

/// Where an error happened: the pass, the node and its op, and (for parsers) a
/// file position. Every field is optional; `what()` prints the ones that are set.
struct error_context {
  std::string pass;  ///< name of the pass that failed, if any
  std::string node;  ///< name of the offending node, if any
  std::string op;    ///< op of the offending node, if any
  std::string file;  ///< input file or source name (parsers)
  int line = 0;      ///< 1-based line (parsers); 0 when unknown
  int column = 0;    ///< 1-based column (parsers); 0 when unknown
};

/// The exception thrown by gpass for bad input and failed invariants.
///
/// The message reads like a compiler diagnostic:
/// `gpass: pass 'dce': node 'add_1' (op Add): input 2 is not connected`.
/// Example:
/// \code
///   try { run(g); } catch (const gpass::error& e) { std::cerr << e.what() << '\n'; }
/// \endcode
class error : public std::runtime_error {
 public:
  explicit error(std::string message, error_context ctx = {})
      : std::runtime_error(format(message, ctx)), message_(std::move(message)), ctx_(std::move(ctx)) {}

  /// The bare message, without context.
  const std::string& message() const noexcept { return message_; }
  /// The context the error was raised with.
  const error_context& context() const noexcept { return ctx_; }

  /// A copy of this error with the pass name filled in (when not already set).
  error with_pass(const std::string& pass) const {
    error_context c = ctx_;
    if (c.pass.empty()) c.pass = pass;
    return error(message_, std::move(c));
  }

  /// A copy of this error with the node and op filled in (when not already set).
  error with_node(const std::string& node, const std::string& op) const {
    error_context c = ctx_;
    if (c.node.empty()) {
      c.node = node;
      c.op = op;
    }
    return error(message_, std::move(c));
  }

 private:
  static std::string format(const std::string& msg, const error_context& c) {
    std::string s = "gpass: ";
    if (!c.file.empty() || c.line > 0) {
      s += c.file.empty() ? std::string("<input>") : c.file;
      if (c.line > 0) s += ":" + std::to_string(c.line);
      if (c.column > 0) s += ":" + std::to_string(c.column);
      s += ": ";
    }
    if (!c.pass.empty()) s += "pass '" + c.pass + "': ";
    if (!c.node.empty()) {
      s += "node '" + c.node + "'";
      if (!c.op.empty()) s += " (op " + c.op + ")";
      s += ": ";
    }
    return s + msg;
  }

  std::string message_;
  error_context ctx_;
};

/// Throws `gpass::error` naming a node and its op.
[[noreturn]] inline void throw_node_error(std::string message, std::string node, std::string op) {
  error_context c;
  c.node = std::move(node);
  c.op = std::move(op);
  throw error(std::move(message), std::move(c));
}

}  // namespace gpass
