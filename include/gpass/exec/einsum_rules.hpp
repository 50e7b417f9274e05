// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file einsum_rules.hpp
/// What the Einsum kernels (ONNX's and TensorFlow's) share across policies: the equation's
/// parse (`parse`: labels per operand and for the output, ellipsis dimensions), each label's
/// size (`label_sizes`, size-1 dimensions broadcasting), and the contraction `schedule` as
/// numpy's and ONNX Runtime's optimizing einsum computes it: each operand first sums the labels
/// no other operand and not the output has (and takes its diagonals: a label repeated in one
/// operand walks the sum of its strides), then pairs of terms contract as batched matrix
/// products, the pair with the smallest product first (opt_einsum's greedy order), until one
/// term remains, which is read into the output. A policy runs the schedule with its own sums,
/// copies and products; work and scratch stay within the sizes of the operands, the
/// intermediates and the output ("a,b,c,d->" over four [1000] vectors is four sums and three
/// products of scalars, not 10^12 steps of one loop over every label).

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

#include <gpass/exec/kernel.hpp>
#include <gpass/exec/shape_rules.hpp>

namespace gpass::exec::einsum_rules {

using i64 = std::int64_t;

/// An equation's labels: 0..51 are letters, 52 + i the i-th ellipsis dimension.
struct plan {
  std::vector<std::vector<int>> operands;  ///< labels of each operand's dimensions
  std::vector<int> output;                 ///< labels of the output dimensions
  int ellipsis_rank = 0;
  int label_count() const { return 52 + ellipsis_rank; }
};

/// Parses an equation given the operand ranks (an implicit output: the ellipsis, then the
/// letters that appear once, in alphabetical order).
inline plan parse(const std::string& eq0, const std::vector<std::size_t>& ranks, const kernel_node& n) {
  std::string eq;
  for (char ch : eq0)
    if (ch != ' ') eq += ch;
  const auto arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms(1);
  for (char ch : lhs) {
    if (ch == ',') terms.emplace_back();
    else terms.back() += ch;
  }
  if (terms.size() != ranks.size())
    n.fail("equation '" + eq0 + "' has " + std::to_string(terms.size()) + " operands, got " + std::to_string(ranks.size()) + " inputs");
  auto letter = [&](char ch) -> int {
    if (ch >= 'a' && ch <= 'z') return ch - 'a';
    if (ch >= 'A' && ch <= 'Z') return 26 + (ch - 'A');
    n.fail(std::string("bad character '") + ch + "' in equation '" + eq0 + "'");
  };
  struct term_info {
    std::vector<int> before, after;
    bool ellipsis = false;
  };
  auto split_term = [&](const std::string& s) {
    term_info ti;
    for (std::size_t i = 0; i < s.size();) {
      if (s.compare(i, 3, "...") == 0) {
        if (ti.ellipsis) n.fail("more than one ellipsis in a term of '" + eq0 + "'");
        ti.ellipsis = true;
        i += 3;
        continue;
      }
      (ti.ellipsis ? ti.after : ti.before).push_back(letter(s[i]));
      ++i;
    }
    return ti;
  };
  plan p;
  std::vector<term_info> infos;
  for (std::size_t k = 0; k < terms.size(); ++k) {
    infos.push_back(split_term(terms[k]));
    const auto& ti = infos.back();
    const std::size_t letters = ti.before.size() + ti.after.size();
    if (letters > ranks[k] || (!ti.ellipsis && letters != ranks[k]))
      n.fail("term '" + terms[k] + "' does not match input " + std::to_string(k) + " of rank " + std::to_string(ranks[k]));
    if (ti.ellipsis) p.ellipsis_rank = std::max(p.ellipsis_rank, static_cast<int>(ranks[k] - letters));
  }
  auto ell = [&](int e) {  // the last e ellipsis labels (an operand's ellipsis aligns right)
    std::vector<int> r;
    for (int i = p.ellipsis_rank - e; i < p.ellipsis_rank; ++i) r.push_back(52 + i);
    return r;
  };
  std::array<int, 52> count{};
  for (std::size_t k = 0; k < terms.size(); ++k) {
    const auto& ti = infos[k];
    std::vector<int> labels = ti.before;
    if (ti.ellipsis) {
      auto e = ell(static_cast<int>(ranks[k] - ti.before.size() - ti.after.size()));
      labels.insert(labels.end(), e.begin(), e.end());
    }
    labels.insert(labels.end(), ti.after.begin(), ti.after.end());
    for (int l : labels)
      if (l < 52) ++count[static_cast<std::size_t>(l)];
    p.operands.push_back(std::move(labels));
  }
  if (arrow != std::string::npos) {
    term_info to = split_term(eq.substr(arrow + 2));
    p.output = to.before;
    if (to.ellipsis) {
      auto e = ell(p.ellipsis_rank);
      p.output.insert(p.output.end(), e.begin(), e.end());
    }
    p.output.insert(p.output.end(), to.after.begin(), to.after.end());
    for (std::size_t i = 0; i < p.output.size(); ++i) {
      if (p.output[i] < 52 && count[static_cast<std::size_t>(p.output[i])] == 0)
        n.fail("output label of '" + eq0 + "' does not appear in the inputs");
      for (std::size_t j = 0; j < i; ++j)
        if (p.output[j] == p.output[i]) n.fail("repeated output label in '" + eq0 + "'");
    }
  } else {
    p.output = ell(p.ellipsis_rank);
    for (int l = 0; l < 52; ++l)
      if (count[static_cast<std::size_t>(l)] == 1) p.output.push_back(l);
  }
  return p;
}

/// Each label's size over operands of `sizes` (-1: a label no operand has); a size-1
/// dimension broadcasts against another size, two other sizes that differ fail.
inline std::vector<i64> label_sizes(const plan& p, const std::vector<std::vector<i64>>& sizes, const kernel_node& n) {
  std::vector<i64> size(static_cast<std::size_t>(p.label_count()), -1);
  for (std::size_t k = 0; k < sizes.size(); ++k)
    for (std::size_t d = 0; d < p.operands[k].size(); ++d) {
      i64& s = size[static_cast<std::size_t>(p.operands[k][d])];
      const i64 v = sizes[k][d];
      if (s == -1 || s == 1) s = v;
      else if (v != s && v != 1) n.fail("Einsum dimension sizes " + std::to_string(s) + " and " + std::to_string(v) + " of one label differ");
    }
  return size;
}

/// The output's sizes.
inline std::vector<i64> output_sizes(const plan& p, const std::vector<i64>& size) {
  std::vector<i64> ys;
  for (int l : p.output) ys.push_back(size[static_cast<std::size_t>(l)]);
  return ys;
}

/// A term of the contraction: contiguous values, one distinct label per dimension.
struct term {
  std::vector<int> labels;
  std::vector<i64> sizes;
  i64 count() const { return shape_rules::prod(sizes, 0, sizes.size()); }
};

/// Operand k's term: element i (row-major over `t`'s sizes) is the sum over the summed
/// dimensions of the operand's elements at the offset `walk` / `strides` give: the first
/// `kept` dimensions of `walk` are t's, the rest are summed (`summed()` elements).
struct operand_step {
  term t;
  std::vector<i64> walk, strides;
  std::size_t kept = 0;
  i64 summed() const { return shape_rules::prod(walk, kept, walk.size()); }
};

/// One contraction: terms `a` and `b` (a < b) of the current list become r = A x B, batched
/// [nb, M, K] x [nb, K, N] -> [nb, M, N], A stored [nb, K, M] when `ta`, B [nb, N, K] when
/// `tb`; `a_to` / `b_to` (when not empty) are the label orders a / b must first be permuted
/// into. Then b leaves the list and r takes a's place.
struct pair_step {
  std::size_t a = 0, b = 1;
  std::vector<int> a_to, b_to;
  bool ta = false, tb = false;
  i64 nb = 1, M = 1, N = 1, K = 1;
  term r;
};

/// The whole contraction; output element i (row-major over the output's sizes) reads the last
/// term at the offset `out_strides` give (0 for a dimension the term does not have: size 1).
struct schedule {
  std::vector<operand_step> operands;
  std::vector<pair_step> pairs;
  std::vector<i64> out_strides;
};

/// The schedule of plan `p` over operands of `in_sizes`, labels of `size` (`label_sizes`).
inline schedule make_schedule(const plan& p, const std::vector<std::vector<i64>>& in_sizes, const std::vector<i64>& size) {
  const std::size_t L = size.size(), nin = in_sizes.size();
  std::vector<char> in_out(L, 0);
  for (int l : p.output) in_out[static_cast<std::size_t>(l)] = 1;
  schedule s;

  // each operand's distinct labels: extent and the sum of the strides of its dimensions; a
  // dimension of size 1 under a label of another size broadcasts (the operand is constant
  // along it), so it leaves the label out
  struct axis {
    int label;
    i64 extent, stride;
  };
  std::vector<std::vector<axis>> axes(nin);
  std::vector<int> holders(L, 0);  // terms that have each label
  for (std::size_t k = 0; k < nin; ++k) {
    const auto st = shape_rules::strides_of(in_sizes[k]);
    for (std::size_t d = 0; d < p.operands[k].size(); ++d) {
      const int l = p.operands[k][d];
      const i64 v = in_sizes[k][d];
      if (v == 1 && size[static_cast<std::size_t>(l)] != 1) continue;
      auto it = std::find_if(axes[k].begin(), axes[k].end(), [&](const axis& a) { return a.label == l; });
      if (it != axes[k].end()) it->stride += st[d];
      else axes[k].push_back({l, v, st[d]});
    }
    for (const axis& a : axes[k]) ++holders[static_cast<std::size_t>(a.label)];
  }
  std::vector<term> terms(nin);
  for (std::size_t k = 0; k < nin; ++k) {
    operand_step op;
    for (const axis& a : axes[k])
      if (in_out[static_cast<std::size_t>(a.label)] || holders[static_cast<std::size_t>(a.label)] > 1) {
        op.t.labels.push_back(a.label);
        op.t.sizes.push_back(a.extent);
        op.walk.push_back(a.extent);
        op.strides.push_back(a.stride);
      }
    op.kept = op.walk.size();
    for (const axis& a : axes[k])
      if (!in_out[static_cast<std::size_t>(a.label)] && holders[static_cast<std::size_t>(a.label)] == 1) {
        op.walk.push_back(a.extent);
        op.strides.push_back(a.stride);
        --holders[static_cast<std::size_t>(a.label)];
      }
    terms[k] = op.t;
    s.operands.push_back(std::move(op));
  }

  // contract pairs until one term is left; a label stays when the output or a third term has it
  std::vector<char> mark(L, 0);
  auto kept = [&](int l, int here) { return in_out[static_cast<std::size_t>(l)] || holders[static_cast<std::size_t>(l)] > here; };
  auto has = [](const term& t, int l) { return std::find(t.labels.begin(), t.labels.end(), l) != t.labels.end(); };
  while (terms.size() > 1) {
    pair_step ps;
    if (terms.size() <= 64) {  // (beyond, left to right: the search is cubic in the operands)
      double best = std::numeric_limits<double>::infinity();
      for (std::size_t i = 0; i < terms.size(); ++i)
        for (std::size_t j = i + 1; j < terms.size(); ++j) {
          for (int l : terms[j].labels) mark[static_cast<std::size_t>(l)] = 1;
          double n = 1;
          for (std::size_t d = 0; d < terms[i].labels.size(); ++d) {
            const int l = terms[i].labels[d];
            if (!mark[static_cast<std::size_t>(l)] || kept(l, 2)) n *= static_cast<double>(terms[i].sizes[d]);
          }
          for (std::size_t d = 0; d < terms[j].labels.size(); ++d) {
            const int l = terms[j].labels[d];
            if (!has(terms[i], l)) n *= static_cast<double>(terms[j].sizes[d]);
            mark[static_cast<std::size_t>(l)] = 0;
          }
          if (n < best) {
            best = n;
            ps.a = i;
            ps.b = j;
          }
        }
    }
    const term& a = terms[ps.a];
    const term& b = terms[ps.b];
    // A as [batch, free A, summed] and B as [batch, summed, free B] (or either transposed)
    std::vector<int> batch, sum, fa, fb;
    for (std::size_t d = 0; d < a.labels.size(); ++d) {
      const int l = a.labels[d];
      if (!has(b, l)) continue;
      if (kept(l, 2)) {
        batch.push_back(l);
        ps.nb *= a.sizes[d];
        ps.r.sizes.push_back(a.sizes[d]);
      } else {
        sum.push_back(l);
        ps.K *= a.sizes[d];
      }
    }
    for (std::size_t d = 0; d < a.labels.size(); ++d)
      if (!has(b, a.labels[d])) {
        fa.push_back(a.labels[d]);
        ps.M *= a.sizes[d];
        ps.r.sizes.push_back(a.sizes[d]);
      }
    for (std::size_t d = 0; d < b.labels.size(); ++d)
      if (!has(a, b.labels[d])) {
        fb.push_back(b.labels[d]);
        ps.N *= b.sizes[d];
        ps.r.sizes.push_back(b.sizes[d]);
      }
    auto cat = [](std::initializer_list<const std::vector<int>*> parts) {
      std::vector<int> r;
      for (const auto* q : parts) r.insert(r.end(), q->begin(), q->end());
      return r;
    };
    const std::vector<int> a_mk = cat({&batch, &fa, &sum}), a_km = cat({&batch, &sum, &fa});
    const std::vector<int> b_kn = cat({&batch, &sum, &fb}), b_nk = cat({&batch, &fb, &sum});
    ps.ta = a.labels != a_mk && a.labels == a_km;
    ps.tb = b.labels != b_kn && b.labels == b_nk;
    if (a.labels != a_mk && !ps.ta) ps.a_to = a_mk;
    if (b.labels != b_kn && !ps.tb) ps.b_to = b_kn;
    ps.r.labels = cat({&batch, &fa, &fb});
    for (int l : a.labels) --holders[static_cast<std::size_t>(l)];
    for (int l : b.labels) --holders[static_cast<std::size_t>(l)];
    for (int l : ps.r.labels) ++holders[static_cast<std::size_t>(l)];
    terms.erase(terms.begin() + static_cast<std::ptrdiff_t>(ps.b));
    terms[ps.a] = ps.r;
    s.pairs.push_back(std::move(ps));
  }

  // the last term has the output's labels (each held by some operand at full extent)
  const term& t = terms[0];
  const auto st = shape_rules::strides_of(t.sizes);
  for (int l : p.output) {
    const auto it = std::find(t.labels.begin(), t.labels.end(), l);
    s.out_strides.push_back(it == t.labels.end() ? 0 : st[static_cast<std::size_t>(it - t.labels.begin())]);
  }
  return s;
}

/// The sizes and source strides that read term `t` permuted into the label order `to` (a
/// permutation of its labels).
inline std::pair<std::vector<i64>, std::vector<i64>> permuted_view(const term& t, const std::vector<int>& to) {
  const auto st = shape_rules::strides_of(t.sizes);
  std::vector<i64> sz, pst;
  for (int l : to) {
    const auto d = static_cast<std::size_t>(std::find(t.labels.begin(), t.labels.end(), l) - t.labels.begin());
    sz.push_back(t.sizes[d]);
    pst.push_back(st[d]);
  }
  return {sz, pst};
}

}  // namespace gpass::exec::einsum_rules
