// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file symbols.hpp
/// `gpass::symbol_table`: symbolic dims during inference: fresh symbols, union-find style
/// bindings (`n = m`, `n = 3`, `m = 2*n`), resolution, and the two lattice operations on
/// types: `unify` (two descriptions of the same value) and `join` (a value that is one of two).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <gpass/core/dim.hpp>
#include <gpass/core/error.hpp>
#include <gpass/core/shape.hpp>
#include <gpass/core/type.hpp>

namespace gpass {

/// The symbols of one inference run and what is known about them.
///
/// A symbol (`n`) names a size that is not known. Unification learns equalities: `n = m`
/// (union), `n = 3` (binding to a constant) or `m = 2*n+1` (binding to an affine
/// expression). `resolve` rewrites a dim, shape or type in terms of the remaining free
/// symbols. Fresh symbols get deterministic names that do not clash with the symbols already
/// in the graph (`declare` them first): `fresh_for(key, base)` returns the same symbol every
/// time it is asked with the same key, so re-running a transfer function is stable.
///
/// `unify` is the meet used where two descriptions of one value must agree (declared vs
/// inferred types, MatMul's inner dims, Concat's other dims): it binds symbols and fails on a
/// contradiction (`3` vs `4`). `join` is used where a value is one of two (If branches, loop
/// iterations, Merge): equal dims stay, different dims become the fresh symbol of that
/// position (absorbing: joining it with anything gives it again, so loops reach a fixed
/// point), different ranks give an unknown rank.
///
/// Bindings are acyclic (a symbol is only ever bound to an expression over symbols that
/// were free at the time), resolution is iterative and path-compressed.
/// \code
///   gpass::symbol_table s;
///   auto n = gpass::dim::symbol("n"), m = gpass::dim::symbol("m");
///   s.declare("n"); s.declare("m");
///   s.unify(m, n * 2);                       // m = 2*n
///   s.unify(n, 3);                           // n = 3
///   assert(s.resolve(m) == gpass::dim(6));
/// \endcode
class symbol_table {
 public:
  /// Marks `name` as used by the input (never returned as a fresh name).
  void declare(std::string_view name) { info_of(name); }
  /// Declares every symbol occurring in `d`, `s` or `t`.
  void declare_all(const dim& d) {
    for (const auto& [n, c] : d.terms()) declare(n);
  }
  void declare_all(const shape& s) {
    if (s.has_rank())
      for (const auto& d : s.dims()) declare_all(d);
  }
  void declare_all(const type& t) {
    if (t.is_tensor()) declare_all(t.tensor().shape);
    else if (t.is_list()) {
      declare_all(t.list().element.shape);
      declare_all(t.list().length);
    } else if (t.is_tuple())
      for (const auto& e : t.tuple().elements) declare_all(e);
  }

  /// A new symbol named after `base` (sanitized to `[A-Za-z0-9_]`, `base`, `base_1`, ...).
  dim fresh(std::string_view base) {
    std::string b = sanitize(base);
    std::string name = b;
    if (infos_.count(name)) {
      std::size_t& next = next_suffix_[b];
      do name = b + "_" + std::to_string(++next);
      while (infos_.count(name));
    }
    info_of(name);
    return dim::symbol(name);
  }
  /// The symbol for `key`, made by `fresh(base)` the first time `key` is seen.
  dim fresh_for(std::string_view key, std::string_view base) {
    auto it = by_key_.find(std::string(key));
    if (it != by_key_.end()) return dim::symbol(it->second);
    dim d = fresh(base);
    by_key_.emplace(std::string(key), d.terms().front().first);
    return d;
  }
  /// True when `fresh_for(key, ...)` was called before.
  bool has_key(std::string_view key) const { return by_key_.count(std::string(key)) != 0; }

  /// Number of bindings made so far (grows whenever unification learns something).
  std::size_t version() const noexcept { return version_; }
  /// True when `name` is bound (equal to another symbol or an expression).
  bool is_bound(std::string_view name) const {
    if (version_ == 0) return false;  // nothing bound yet
    auto it = infos_.find(name);
    return it != infos_.end() && it->second.bound;
  }
  /// Number of symbols known to the table.
  std::size_t size() const noexcept { return infos_.size(); }

  /// True when `d` (or a dim of `t`) mentions a bound symbol: `resolve` would change it.
  bool mentions_bound(const dim& d) const {
    if (version_ == 0) return false;
    for (const auto& [n, c] : d.terms())
      if (is_bound(n)) return true;
    return false;
  }
  bool mentions_bound(const shape& s) const {
    if (version_ == 0 || !s.has_rank()) return false;
    for (const auto& d : s.dims())
      if (mentions_bound(d)) return true;
    return false;
  }
  bool mentions_bound(const type& t) const {
    if (version_ == 0) return false;
    if (t.is_tensor()) {
      if (t.tensor().shape.has_rank())
        for (const auto& d : t.tensor().shape.dims())
          if (mentions_bound(d)) return true;
      return false;
    }
    if (t.is_list()) {
      if (t.list().element.shape.has_rank())
        for (const auto& d : t.list().element.shape.dims())
          if (mentions_bound(d)) return true;
      return mentions_bound(t.list().length);
    }
    if (t.is_tuple())
      for (const auto& e : t.tuple().elements)
        if (mentions_bound(e)) return true;
    return false;
  }
  /// `t = resolve(t)`, without a copy when nothing in `t` is bound.
  void resolve_in_place(type& t) {
    if (mentions_bound(t)) t = resolve(t);
  }

  /// `d` in terms of free symbols (bound symbols substituted).
  dim resolve(const dim& d) {
    if (!d.is_symbolic()) return d;
    bool any_bound = false;
    for (const auto& [n, c] : d.terms())
      if (is_bound(n)) any_bound = true;
    if (!any_bound) return d;
    lin r{d.constant(), {}};
    for (const auto& [n, c] : d.terms()) {
      const dim v = resolve_symbol(n);
      if (v.is_unknown() || !r.add(lin::of(v), c)) return dim();  // overflowed: not known, as dim's operators
    }
    return r.to_dim();
  }
  shape resolve(const shape& s) {
    if (!s.has_rank()) return s;
    std::vector<dim> ds;
    ds.reserve(s.rank());
    for (const auto& d : s.dims()) ds.push_back(resolve(d));
    return shape(std::move(ds));
  }
  tensor_type resolve(const tensor_type& t) { return {t.element, resolve(t.shape)}; }
  type resolve(const type& t) {
    if (t.is_tensor()) return resolve(t.tensor());
    if (t.is_list()) {
      list_type l = t.list();
      l.element = resolve(l.element);
      l.length = resolve(l.length);
      return l;
    }
    if (t.is_tuple()) {
      tuple_type u;
      for (const auto& e : t.tuple().elements) u.elements.push_back(resolve(e));
      return u;
    }
    return t;
  }

  /// Learns `a == b`. Returns false on a contradiction (`3` vs `4`, `n` vs `n+1`, `n+5` vs
  /// `2`); true otherwise, including when nothing can be learned (`?`, `2*n` vs `3*m`).
  bool unify(const dim& a, const dim& b) {
    if (a.is_unknown() || b.is_unknown() || a == b) return true;
    dim ra = resolve(a), rb = resolve(b);
    if (ra.is_unknown() || rb.is_unknown() || ra == rb) return true;
    lin diff = lin::of(ra);
    // a difference past int64 (sizes are not that far apart, but values propagated as dims
    // can be): two different constants contradict, otherwise nothing is learned
    if (!diff.add(lin::of(rb), -1)) return !(ra.is_known() && rb.is_known());
    if (diff.terms.empty()) return diff.constant == 0;
    // Solve for a symbol with coefficient +-1, preferring the most recently made one (so user
    // symbols survive and generated ones are bound to them).
    const std::string* pick = nullptr;
    std::int64_t pick_coef = 0;
    std::size_t pick_order = 0;
    for (const auto& [n, c] : diff.terms)
      if ((c == 1 || c == -1) && (!pick || info_of(n).order > pick_order)) {
        pick = &n;
        pick_coef = c;
        pick_order = info_of(n).order;
      }
    if (!pick) {
      if (diff.terms.size() != 1) return true;  // not solvable in integers by us: learn nothing
      auto [n, c] = *diff.terms.begin();
      if (diff.constant % c != 0) return false;  // (|c| >= 2 here: no INT64_MIN / -1)
      const std::int64_t v = -(diff.constant / c);
      if (v < 0) return false;
      bind(n, dim(v));
      return true;
    }
    std::string name = *pick;
    lin rest = diff;
    rest.terms.erase(name);
    // c*s + rest == 0  =>  s = -rest / c, c = +-1
    lin sol{0, {}};
    if (!sol.add(rest, pick_coef == 1 ? -1 : 1)) return true;  // -rest overflows: learn nothing
    if (sol.terms.empty() && sol.constant < 0) return false;
    bind(name, sol.to_dim());
    return true;
  }

  /// Unifies two shapes; throws `gpass::error` ("incompatible ranks 2 and 3", "incompatible
  /// dims 3 and 4 (dim 1)") on a contradiction. Returns the unified, resolved shape.
  shape unify(const shape& a, const shape& b) {
    if (!a.has_rank()) return resolve(b);
    if (!b.has_rank()) return resolve(a);
    if (a == b && !mentions_bound(a)) return a;  // the common case: nothing to learn
    if (a.rank() != b.rank())
      throw error("incompatible ranks " + std::to_string(a.rank()) + " and " + std::to_string(b.rank()) + " (" +
                  a.to_string() + " vs " + b.to_string() + ")");
    std::vector<dim> r;
    r.reserve(a.rank());
    for (std::size_t i = 0; i < a.rank(); ++i) {
      dim x = resolve(a[i]), y = resolve(b[i]);
      if (!unify(x, y))
        throw error("incompatible dims " + x.to_string() + " and " + y.to_string() + " (dim " + std::to_string(i) +
                    " of " + a.to_string() + " vs " + b.to_string() + ")");
      r.push_back(x.is_unknown() ? y : x);
    }
    return resolve(shape(std::move(r)));
  }

  /// Unifies two types (unknown unifies with anything; an undefined dtype with any dtype);
  /// throws `gpass::error` naming what is incompatible. Returns the unified, resolved type.
  type unify(const type& a, const type& b) {
    if (a.is_unknown()) return resolve(b);
    if (b.is_unknown()) return resolve(a);
    if (a.is_tensor() && b.is_tensor()) return unify(a.tensor(), b.tensor());
    if (a.is_list() && b.is_list()) {
      list_type l;
      l.element = unify(a.list().element, b.list().element);
      if (!unify(a.list().length, b.list().length))
        throw error("incompatible list lengths " + a.list().length.to_string() + " and " + b.list().length.to_string());
      l.length = resolve(a.list().length.is_unknown() ? b.list().length : a.list().length);
      l.same_length_as = a.list().same_length_as.empty() ? b.list().same_length_as : a.list().same_length_as;
      return l;
    }
    if (a.is_tuple() && b.is_tuple() && a.tuple().elements.size() == b.tuple().elements.size()) {
      tuple_type t;
      for (std::size_t i = 0; i < a.tuple().elements.size(); ++i)
        t.elements.push_back(unify(a.tuple().elements[i], b.tuple().elements[i]));
      return t;
    }
    throw error("incompatible types " + a.to_string() + " and " + b.to_string());
  }
  tensor_type unify(const tensor_type& a, const tensor_type& b) {
    tensor_type r;
    if (a.element != dtype::undefined && b.element != dtype::undefined && a.element != b.element)
      throw error("incompatible dtypes " + std::string(to_string(a.element)) + " and " +
                  std::string(to_string(b.element)));
    r.element = a.element == dtype::undefined ? b.element : a.element;
    r.shape = unify(a.shape, b.shape);
    return r;
  }

  /// Join of two dims: equal (after resolution) stays; else the fresh symbol of `key`
  /// (named after `base`); unknown when either is unknown.
  dim join(const dim& a, const dim& b, std::string_view key, std::string_view base) {
    dim ra = resolve(a), rb = resolve(b);
    if (ra == rb) return ra;
    if (ra.is_unknown() || rb.is_unknown()) return dim();
    return resolve(fresh_for(key, base));
  }
  /// Join of two shapes (per-dim keys are `key.i`).
  shape join(const shape& a, const shape& b, std::string_view key, std::string_view base) {
    if (!a.has_rank() || !b.has_rank() || a.rank() != b.rank()) return shape();
    std::vector<dim> r;
    r.reserve(a.rank());
    for (std::size_t i = 0; i < a.rank(); ++i)
      r.push_back(join(a[i], b[i], std::string(key) + "." + std::to_string(i), base));
    return shape(std::move(r));
  }
  /// Join of two types. Unknown joined with anything is unknown; two tensors of different
  /// (defined) dtypes throw `gpass::error` ("incompatible dtypes f32 and i64"): a value does
  /// not change its element type across branches or iterations.
  type join(const type& a, const type& b, std::string_view key, std::string_view base) {
    if (a.is_unknown() || b.is_unknown()) return type{};
    if (a.is_tensor() && b.is_tensor()) return join(a.tensor(), b.tensor(), key, base);
    if (a.is_list() && b.is_list()) {
      list_type l;
      // an empty list says nothing about its elements: the other list's element type holds
      const dim la = resolve(a.list().length), lb = resolve(b.list().length);
      if (la.is_known() && la.value() == 0) l.element = resolve(b.list().element);
      else if (lb.is_known() && lb.value() == 0) l.element = resolve(a.list().element);
      // an element shape of unknown rank is not constrained yet (a TensorArray made without an
      // element_shape, before its first write): the other list's elements hold, so writes in
      // a loop body refine the element shape through the loop's fixed point
      else if (!a.list().element.shape.has_rank() && compatible(a.list().element.element, b.list().element.element))
        l.element = resolve(b.list().element), l.element.element = known_of(a.list().element.element, l.element.element);
      else if (!b.list().element.shape.has_rank() && compatible(a.list().element.element, b.list().element.element))
        l.element = resolve(a.list().element), l.element.element = known_of(b.list().element.element, l.element.element);
      else l.element = join_list_element(a.list().element, b.list().element, std::string(key) + ".e", base);
      l.length = join(a.list().length, b.list().length, std::string(key) + ".n", std::string(base) + "_len");
      if (a.list().same_length_as == b.list().same_length_as) l.same_length_as = a.list().same_length_as;
      return l;
    }
    if (a.is_tuple() && b.is_tuple() && a.tuple().elements.size() == b.tuple().elements.size()) {
      tuple_type t;
      for (std::size_t i = 0; i < a.tuple().elements.size(); ++i)
        t.elements.push_back(
            join(a.tuple().elements[i], b.tuple().elements[i], std::string(key) + ".t" + std::to_string(i), base));
      return t;
    }
    if (a == b) return resolve(a);
    return type{};
  }
  /// Join of two list element types of the same dtype: like tensors, except that a dim one
  /// side does not know takes the other side's dim. A list's elements share one shape (a
  /// TensorArray's declared `element_shape` such as `[?,5]` is a constraint on elements not
  /// written yet), so a write of `[n,5]` inside a loop body refines the declared `[?,5]` to
  /// `[n,5]` through the loop's fixed point instead of joining it away.
  tensor_type join_list_element(const tensor_type& a, const tensor_type& b, std::string_view key,
                                std::string_view base) {
    tensor_type r = join(a, b, key, base);
    if (!a.shape.has_rank() || !b.shape.has_rank() || a.shape.rank() != b.shape.rank()) return r;
    std::vector<dim> d;
    d.reserve(a.shape.rank());
    for (std::size_t i = 0; i < a.shape.rank(); ++i) {
      const dim x = resolve(a.shape[i]), y = resolve(b.shape[i]);
      d.push_back(x.is_unknown() ? y : y.is_unknown() ? x : r.shape[i]);
    }
    r.shape = shape(std::move(d));
    return r;
  }
  tensor_type join(const tensor_type& a, const tensor_type& b, std::string_view key, std::string_view base) {
    if (a.element != dtype::undefined && b.element != dtype::undefined && a.element != b.element)
      throw error("incompatible dtypes " + std::string(to_string(a.element)) + " and " +
                  std::string(to_string(b.element)));
    tensor_type r;
    r.element = a.element == b.element ? a.element : dtype::undefined;
    r.shape = join(a.shape, b.shape, key, base);
    return r;
  }

  // Element types of a list that may be joined as above (equal, or one not known).
  static bool compatible(dtype a, dtype b) { return a == b || a == dtype::undefined || b == dtype::undefined; }
  static dtype known_of(dtype a, dtype b) { return b == dtype::undefined ? a : b; }

  /// Replaces characters outside `[A-Za-z0-9_]` by `_` and makes the result start with a
  /// letter or `_` (a valid symbol name for the text IR).
  static std::string sanitize(std::string_view s) {
    std::string r;
    r.reserve(s.size() + 1);
    for (char c : s) {
      bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
      r += ok ? c : '_';
    }
    if (r.empty()) r = "s";
    else if (r[0] >= '0' && r[0] <= '9') r.insert(r.begin(), 's');
    return r;
  }

 private:
  // A linear expression constant + sum(coef * symbol) with exact integer coefficients (unlike
  // `dim`, a negative constant is fine here).
  struct lin {
    std::int64_t constant = 0;
    std::map<std::string, std::int64_t> terms;
    static lin of(const dim& d) {
      lin l{d.constant(), {}};
      for (const auto& [n, c] : d.terms()) l.terms[n] += c;
      return l;
    }
    /// Adds `k * o`; false when the constant or a coefficient overflows int64 (the
    /// expression is then not usable: callers treat it as unknown).
    [[nodiscard]] bool add(const lin& o, std::int64_t k) {
      std::int64_t p = 0;
      if (__builtin_mul_overflow(o.constant, k, &p) || __builtin_add_overflow(constant, p, &constant)) return false;
      for (const auto& [n, c] : o.terms) {
        auto& x = terms[n];
        if (__builtin_mul_overflow(c, k, &p) || __builtin_add_overflow(x, p, &x)) return false;
        if (x == 0) terms.erase(n);
      }
      return true;
    }
    dim to_dim() const {
      std::vector<dim::term> t(terms.begin(), terms.end());
      return dim::affine(constant, std::move(t));
    }
  };

  struct info {
    std::size_t order = 0;
    bool bound = false;
    dim value;  // when bound: an expression over symbols free at binding time
  };

  info& info_of(std::string_view name) {
    auto it = infos_.find(name);
    if (it == infos_.end()) it = infos_.emplace(std::string(name), info{infos_.size(), false, dim()}).first;
    return it->second;
  }

  void bind(const std::string& name, dim value) {
    info& i = info_of(name);
    i.bound = true;
    i.value = std::move(value);
    ++version_;
  }

  // The value of a symbol in terms of free symbols. Iterative over the binding chain (which
  // can be long) with path compression.
  dim resolve_symbol(const std::string& name) {
    if (!is_bound(name)) return dim::symbol(name);
    std::vector<std::string> stack{name};
    while (!stack.empty()) {
      info& top = infos_.at(stack.back());
      bool pushed = false;
      for (const auto& [n, c] : top.value.terms()) {
        const info& ti = infos_.at(n);
        if (!ti.bound) continue;
        bool dirty = false;
        for (const auto& [m, k] : ti.value.terms())
          if (infos_.at(m).bound) dirty = true;
        if (dirty) {
          stack.push_back(n);
          pushed = true;
          break;
        }
      }
      if (pushed) continue;
      if (!top.value.is_symbolic()) {  // a constant, or `?` (an overflowed substitution): nothing to do
        stack.pop_back();
        continue;
      }
      // every bound symbol in top.value is bound to an expression over free symbols: substitute
      // (a substitution that overflows int64 leaves the symbol bound to `?`)
      lin r{top.value.constant(), {}};
      bool known = true;
      for (const auto& [n, c] : top.value.terms()) {
        const info& ti = infos_.at(n);
        const dim v = ti.bound ? ti.value : dim::symbol(n);
        if (v.is_unknown() || !r.add(lin::of(v), c)) {
          known = false;
          break;
        }
      }
      top.value = known ? r.to_dim() : dim();
      stack.pop_back();
    }
    return infos_.at(name).value;
  }

  // heterogeneous lookup: names are looked up as string_views without a copy
  struct name_hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, info, name_hash, std::equal_to<>> infos_;
  std::unordered_map<std::string, std::string> by_key_;
  std::unordered_map<std::string, std::size_t> next_suffix_;
  std::size_t version_ = 0;
};

}  // namespace gpass
