// The row dispatch and block loop of one sgemm micro-kernel family (see ../sgemm.hpp).
//
// Included once inside each kernel namespace (generic, avx2, avx512), not as a header: there
// is no include guard, and the text is stamped into each namespace on purpose. GCC target
// attributes do not propagate: an always_inline micro-kernel built for "avx512f,..." inlines
// only into functions carrying that same target, so one shared template cannot serve every
// ISA. Each inclusion compiles this one implementation again with its ISA's attributes.
//
// Expects in the enclosing namespace: `mr`, `nr`, and
// `template <int M, class A, class L> micro(const A&, const L&, i64 kc, float* c, i64 ldc,
// bool acc, const float* bias, i64 nv)`; and, for an x86 kernel, `GPASS_SGEMM_TARGET` defined to its target
// string (e.g. "avx2,fma"); the includer #undef's it afterwards. Without it (the portable
// kernel) the functions carry no attributes.

#ifdef GPASS_SGEMM_TARGET
#define GPASS_SGEMM_BLOCK_ATTR __attribute__((target(GPASS_SGEMM_TARGET)))
#define GPASS_SGEMM_ROWS_ATTR __attribute__((target(GPASS_SGEMM_TARGET), always_inline))
#else
#define GPASS_SGEMM_BLOCK_ATTR
#define GPASS_SGEMM_ROWS_ATTR
#endif

/// One tile of `m` rows (1 <= m <= M): the micro-kernel of exactly `m` rows, testing M, M - 1,
/// ... down to 1 (a full tile first); fully inlined into `block`.
template <int M, class A, class L>
GPASS_SGEMM_ROWS_ATTR inline void rows(i64 m, const A& ap, const L& bl, i64 kc, float* cp, i64 ldc, bool acc,
                                        const float* bias, i64 nv) {
  if constexpr (M > 1) {
    if (m != M) {
      rows<M - 1>(m, ap, bl, kc, cp, ldc, acc, bias, nv);
      return;
    }
  }
  micro<M>(ap, bl, kc, cp, ldc, acc, bias, nv);
}

/// A kernel's block function (`kernel_info::block`): every mr x nr tile of C, reading A and
/// B in whichever form `p` gives them.
GPASS_SGEMM_BLOCK_ATTR inline void block(const block_args& p) {
  for (i64 j0 = 0, jp = 0; j0 < p.n; j0 += nr, ++jp) {
    const i64 nv = std::min<i64>(nr, p.n - j0);
    for (i64 i0 = 0, ip = 0; i0 < p.m; i0 += mr, ++ip) {
      float* cp = p.c + i0 * p.ldc + j0;
      const i64 m = std::min<i64>(mr, p.m - i0);
      const float* bias = p.bias ? p.bias + i0 : nullptr;
      if (p.b_off)
        rows<mr>(m, packed_cols<mr>{p.a + ip * p.a_stride}, indirect_rows{p.b_base[2 * jp], p.b_base[2 * jp + 1], p.b_off},
                 p.kc, cp, p.ldc, p.accumulate, bias, nv);
      else if (p.m <= mr && p.a_ld > 0)  // one row panel: each B panel streamed once (see streamed_rows)
        rows<mr>(m, direct_cols{p.a, p.a_ld}, streamed_rows<nr>{p.b + jp * p.b_stride}, p.kc, cp, p.ldc, p.accumulate, bias, nv);
      else if (p.m <= mr)
        rows<mr>(m, packed_cols<mr>{p.a}, streamed_rows<nr>{p.b + jp * p.b_stride}, p.kc, cp, p.ldc, p.accumulate, bias, nv);
      else if (p.a_ld > 0)
        rows<mr>(m, direct_cols{p.a + i0 * p.a_ld, p.a_ld}, packed_rows<nr>{p.b + jp * p.b_stride}, p.kc, cp, p.ldc,
                 p.accumulate, bias, nv);
      else
        rows<mr>(m, packed_cols<mr>{p.a + ip * p.a_stride}, packed_rows<nr>{p.b + jp * p.b_stride}, p.kc, cp, p.ldc,
                 p.accumulate, bias, nv);
    }
  }
}

#undef GPASS_SGEMM_BLOCK_ATTR
#undef GPASS_SGEMM_ROWS_ATTR
