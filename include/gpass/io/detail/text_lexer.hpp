// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file text_lexer.hpp
/// Private: the tokenizer of the text IR. Tokens carry their 1-based line and column;
/// every malformed input throws `gpass::error` with the position, nothing else can escape.

#include <cstddef>
#include <cstdint>
#include <array>
#include <string>
#include <string_view>
#include <utility>

#include <gpass/core/error.hpp>
#include <gpass/io/detail/text_format.hpp>

namespace gpass::detail::text {

enum class tok : std::uint8_t {
  end,     ///< end of input
  ident,   ///< `[A-Za-z_][A-Za-z0-9_.]*`
  number,  ///< `-?[0-9][A-Za-z0-9_.]*` (with `e+`/`e-` exponents)
  string,  ///< `"..."`
  node,    ///< `%name` or `%"name"`
  func,    ///< `@name` or `@"name"`
  punct,   ///< one of `( ) { } [ ] < > , = : * + - ^ ?`
  dcolon,  ///< `::`
  arrow,   ///< `->`
};

struct token {
  tok kind = tok::end;
  char ch = 0;             ///< the character of a punct token
  bool quoted = false;     ///< node/func names written as a string
  std::string_view text;   ///< the source text of the token
  std::string value;       ///< unescaped contents of strings and quoted names
  int line = 1;
  int column = 1;

  /// The name of an ident, a string's contents, or a node/func name.
  std::string_view str() const noexcept {
    if (kind == tok::string || quoted) return value;
    if (kind == tok::node || kind == tok::func) return text.substr(1);
    return text;
  }
  bool is(char c) const noexcept { return kind == tok::punct && ch == c; }
  bool is_ident(std::string_view s) const noexcept { return kind == tok::ident && text == s; }

  /// How the token reads in an error message.
  std::string describe() const {
    switch (kind) {
      case tok::end: return "end of input";
      case tok::string: {
        std::string s = "string ";
        std::string q;
        append_quoted(q, value);
        if (q.size() > 40) q = q.substr(0, 37) + "...";
        return s + q;
      }
      default: {
        std::string t(text.substr(0, 40));
        if (text.size() > 40) t += "...";
        return "'" + t + "'";
      }
    }
  }
};

/// Splits text IR into tokens; one token at a time, with a small look-ahead buffer.
class lexer {
 public:
  lexer(std::string_view src, std::string source_name) : src_(src), source_(std::move(source_name)) {}

  const std::string& source_name() const noexcept { return source_; }

  /// The token `k` places ahead (0 = the current one; `k` < `lookahead`). The reference
  /// stays valid until the token is taken.
  const token& peek(std::size_t k = 0) {
    while (count_ <= k) {
      buf_[(head_ + count_) % lookahead] = lex();
      ++count_;
    }
    return buf_[(head_ + k) % lookahead];
  }
  /// Removes and returns the current token.
  token take() {
    peek();
    token t = std::move(buf_[head_]);
    head_ = (head_ + 1) % lookahead;
    --count_;
    return t;
  }

  /// How many tokens `peek` can look ahead.
  static constexpr std::size_t lookahead = 4;

  /// Throws `gpass::error` at a position.
  [[noreturn]] void fail(int line, int column, std::string message) const {
    error_context c;
    c.file = source_;
    c.line = line;
    c.column = column;
    throw error(std::move(message), std::move(c));
  }
  [[noreturn]] void fail(const token& t, std::string message) const { fail(t.line, t.column, std::move(message)); }

 private:
  int column_at(std::size_t pos) const { return static_cast<int>(pos - line_start_) + 1; }

  void skip_space() {
    while (pos_ < src_.size()) {
      char c = src_[pos_];
      if (c == '\n') {
        ++pos_;
        ++line_;
        line_start_ = pos_;
      } else if (c == ' ' || c == '\t' || c == '\r') {
        ++pos_;
      } else if (c == '#') {
        while (pos_ < src_.size() && src_[pos_] != '\n') ++pos_;
      } else {
        break;
      }
    }
  }

  static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  // Reads a string literal starting at the quote at pos_ into `out`.
  void lex_string(std::string& out) {
    int line = line_, col = column_at(pos_);
    ++pos_;  // opening quote
    for (;;) {
      if (pos_ >= src_.size()) fail(line, col, "unterminated string");
      char c = src_[pos_];
      if (c == '"') {
        ++pos_;
        return;
      }
      if (c == '\n') fail(line_, column_at(pos_), "newline in string (write it as \\n)");
      if (c != '\\') {
        out += c;
        ++pos_;
        continue;
      }
      int ecol = column_at(pos_);
      if (pos_ + 1 >= src_.size()) fail(line, col, "unterminated string");
      char e = src_[pos_ + 1];
      pos_ += 2;
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case '0': out += '\0'; break;
        case 'x': {
          int hi = pos_ < src_.size() ? hex_value(src_[pos_]) : -1;
          int lo = pos_ + 1 < src_.size() ? hex_value(src_[pos_ + 1]) : -1;
          if (hi < 0 || lo < 0) fail(line_, ecol, "malformed string escape: \\x needs two hex digits");
          out += static_cast<char>(hi * 16 + lo);
          pos_ += 2;
          break;
        }
        default: {
          std::string shown = (static_cast<unsigned char>(e) >= 0x20 && static_cast<unsigned char>(e) < 0x7f)
                                  ? std::string(1, e)
                                  : std::string("?");
          fail(line_, ecol, "malformed string escape '\\" + shown + "'");
        }
      }
    }
  }

  token lex() {
    skip_space();
    token t;
    t.line = line_;
    t.column = column_at(pos_);
    std::size_t start = pos_;
    if (pos_ >= src_.size()) {
      t.kind = tok::end;
      t.text = src_.substr(src_.size());
      return t;
    }
    char c = src_[pos_];
    auto finish = [&](tok k) {
      t.kind = k;
      t.text = src_.substr(start, pos_ - start);
    };
    if (is_ident_start(c)) {
      while (pos_ < src_.size() && is_ident_char(src_[pos_])) ++pos_;
      finish(tok::ident);
      return t;
    }
    if (is_digit(c) || (c == '-' && pos_ + 1 < src_.size() && is_digit(src_[pos_ + 1]))) {
      if (c == '-') ++pos_;
      bool hex = pos_ + 1 < src_.size() && src_[pos_] == '0' && (src_[pos_ + 1] == 'x' || src_[pos_ + 1] == 'X');
      while (pos_ < src_.size()) {
        char d = src_[pos_];
        if (is_ident_char(d) || is_digit(d)) {
          ++pos_;
        } else if ((d == '+' || d == '-') && !hex && (src_[pos_ - 1] == 'e' || src_[pos_ - 1] == 'E')) {
          ++pos_;
        } else {
          break;
        }
      }
      finish(tok::number);
      return t;
    }
    if (c == '"') {
      lex_string(t.value);
      finish(tok::string);
      return t;
    }
    if (c == '%' || c == '@') {
      ++pos_;
      if (pos_ < src_.size() && src_[pos_] == '"') {
        lex_string(t.value);
        t.quoted = true;
      } else {
        std::size_t s = pos_;
        while (pos_ < src_.size() && is_name_char(src_[pos_])) ++pos_;
        if (pos_ == s)
          fail(t.line, t.column, std::string("expected a ") + (c == '%' ? "node" : "function") + " name after '" +
                                     c + "'");
      }
      finish(c == '%' ? tok::node : tok::func);
      return t;
    }
    if (c == ':' && pos_ + 1 < src_.size() && src_[pos_ + 1] == ':') {
      pos_ += 2;
      finish(tok::dcolon);
      return t;
    }
    if (c == '-' && pos_ + 1 < src_.size() && src_[pos_ + 1] == '>') {
      pos_ += 2;
      finish(tok::arrow);
      return t;
    }
    switch (c) {
      case '(': case ')': case '{': case '}': case '[': case ']': case '<': case '>':
      case ',': case '=': case ':': case '*': case '+': case '-': case '^': case '?':
        ++pos_;
        t.ch = c;
        finish(tok::punct);
      return t;
      default: break;
    }
    auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f) fail(t.line, t.column, std::string("unexpected character '") + c + "'");
    std::string h;
    append_hex(h, u);
    fail(t.line, t.column, "unexpected byte " + h);
  }

  std::string_view src_;
  std::string source_;
  std::size_t pos_ = 0;
  std::size_t line_start_ = 0;
  int line_ = 1;
  std::array<token, lookahead> buf_{};
  std::size_t head_ = 0;
  std::size_t count_ = 0;
};

}  // namespace gpass::detail::text
