// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file sgemm.hpp
/// The f32 matrix-product engine of the CPU policy: register-blocked micro-kernels over
/// packed operands, chosen at run time by what the processor has (AVX-512F, AVX2 + FMA, or
/// portable C++), so a library built for a baseline x86-64 still multiplies with AVX-512.
/// Each kernel namespace defines its micro-kernel; the tile dispatch and block loop they share
/// are detail/sgemm_driver.inl, included into each namespace with that ISA's target attribute.
///
/// C[M x N] (row-major, row stride ldc) (=|+=) A[M x K] * B[K x N], with both operands in
/// panel form:
/// - A in panels of `mr` rows: panel i holds rows [i*mr, i*mr + mr) as K groups of `mr`
///   values (`a[i][k][r]`), rows past M zero;
/// - B in panels of `nr` columns: panel j holds columns [j*nr, j*nr + nr) as K groups of `nr`
///   values (`b[j][k][c]`), columns past N zero.
/// A slice of depth [k0, k0 + kc) of a panel is contiguous (at `k0 * mr` or `k0 * nr`), so
/// the driver walks depth blocks that keep one B panel slice in L1 and the A slices in L2.
///
/// The constant operand of a product (the weights of Gemm/MatMul, the filter of Conv) is
/// packed once when the plan binds the kernel (`packed_a` / `packed_b`); each run packs the
/// other operand (or im2col writes it straight into panel form).
///
/// `GPASS_CPU_ISA=avx512|avx2|generic` in the environment caps the kernel chosen (tests use it
/// to cover every kernel on one machine).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <string_view>
#include <vector>

#include <Eigen/Core>

#include <gpass/core/host_memory.hpp>

#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
#define GPASS_SGEMM_X86 1
#include <immintrin.h>
#else
#define GPASS_SGEMM_X86 0
#endif

namespace gpass::exec::cpu_detail::sgemm {

using i64 = std::int64_t;

/// One call of a kernel: C[m x n] (=|+=) A-slices * B-slices of depth `kc`.
struct block_args {
  const float* a = nullptr;  ///< depth slice of A panel 0; panel i at `a + i * a_stride`
  i64 a_stride = 0;
  /// A read in place (when > 0; `a_stride` is then unused): row-major with this row stride,
  /// `a` at A(0, first depth of the slice)
  i64 a_ld = 0;
  i64 m = 0;                 ///< rows of C (ceil(m / mr) A panels)
  const float* b = nullptr;  ///< depth slice of B panel 0; panel j at `b + j * b_stride`
  i64 b_stride = 0;
  i64 n = 0;                 ///< columns of C (ceil(n / nr) B panels)
  i64 kc = 0;
  float* c = nullptr;
  i64 ldc = 0;
  bool accumulate = false;   ///< C += A * B, else C = A * B (+ bias)
  /// Added to every column of C's row i when not accumulating (when not null): bias[i]
  const float* bias = nullptr;
  /// Indirect B (when not null; `b` is then unused): the nr values of panel j at depth k are
  /// two contiguous halves, at `b_base[2 j] + b_off[k]` and `b_base[2 j + 1] + b_off[k]`
  /// (`b_off` already at the slice's first depth). Every panel is full (n a multiple of nr).
  const i64* b_off = nullptr;
  const float* const* b_base = nullptr;
};

/// A micro-kernel family: its panel sizes and its block function.
struct kernel_info {
  std::string_view name;
  int mr = 1, nr = 1;
  i64 kc = 256;  ///< depth per block: one B panel slice (kc x nr) fits L1
  void (*block)(const block_args&) = nullptr;
};

/// Where a micro-kernel reads A(i, k) of its row panel: a packed panel (`MR` values per depth
/// step) ...
template <int MR>
struct packed_cols {
  const float* a;
  const float* at(i64 k, int i) const { return a + k * MR + i; }
};
/// ... or the rows of a row-major matrix, in place.
struct direct_cols {
  const float* a;
  i64 lda;
  const float* at(i64 k, int i) const { return a + i * lda + k; }
};

/// Where a micro-kernel reads the two halves of B's row k: a packed panel (`NR` values per
/// depth step, prefetched ahead: it streams from L3 on a block's first row panel) ...
template <int NR>
struct packed_rows {
  static constexpr bool prefetch = true;
  const float* b;
  const float* lo(i64 k) const { return b + k * NR; }
  const float* hi(i64 k) const { return b + k * NR + NR / 2; }
  const float* ahead(i64 k) const { return b + (k + 32) * NR; }
};
/// ... or the same panel read without software prefetches: a product of one row panel (a
/// matrix-vector product, a few rows) reads each B panel once, start to end, which the
/// hardware prefetchers follow; there the prefetch instructions cost more than they bring (AMD
/// Zen 4, one row, K x N = 1280 x 1000: 1.5x faster with B in memory, 1.3x in L3, 3% in L2;
/// 4 rows from memory 2.1x).
template <int NR>
struct streamed_rows {
  static constexpr bool prefetch = false;
  const float* b;
  const float* lo(i64 k) const { return b + k * NR; }
  const float* hi(i64 k) const { return b + k * NR + NR / 2; }
  const float* ahead(i64) const { return nullptr; }
};
/// ... or two bases plus a per-depth offset (a convolution reading its padded input in place).
struct indirect_rows {
  static constexpr bool prefetch = false;
  const float* base0;
  const float* base1;
  const i64* off;
  const float* lo(i64 k) const { return base0 + off[k]; }
  const float* hi(i64 k) const { return base1 + off[k]; }
  const float* ahead(i64) const { return nullptr; }
};

// ------------------------------------------------------------------------------------------
// Portable kernel (any compiler, any processor): 4 x 8 tiles the compiler may vectorize.

namespace generic {
inline constexpr int mr = 4, nr = 8;

template <int M, class A, class L>
void micro(const A& al, const L& bl, i64 kc, float* c, i64 ldc, bool acc, const float* bias, i64 nv) {
  float r[M][nr] = {};
  for (i64 k = 0; k < kc; ++k) {
    const float* lo = bl.lo(k);
    const float* hi = bl.hi(k);
    for (int i = 0; i < M; ++i) {
      const float av = *al.at(k, i);
      for (int j = 0; j < nr / 2; ++j) r[i][j] += av * lo[j];
      for (int j = 0; j < nr / 2; ++j) r[i][nr / 2 + j] += av * hi[j];
    }
  }
  for (int i = 0; i < M; ++i) {
    float* row = c + i * ldc;
    const float add = bias && !acc ? bias[i] : 0.0f;
    for (i64 j = 0; j < nv; ++j) row[j] = acc ? row[j] + r[i][j] : r[i][j] + add;
  }
}

#include <gpass/exec/eigen_cpu/kernels/detail/sgemm_driver.inl>  // rows, block
}  // namespace generic

#if GPASS_SGEMM_X86
// ------------------------------------------------------------------------------------------
// The micro-kernels below are one per instruction set on purpose, and alike in shape only:
// each holds its tile in that set's registers (__m256 / __m512), with its own loads, FMAs and
// ragged-column stores (a store through a buffer / masked stores). What they share, the
// dispatch over tile heights and the block loop, is written once in sgemm_driver.inl.
//
// AVX2 + FMA: 6 x 16 tiles (12 accumulators of 8 floats).

namespace avx2 {
inline constexpr int mr = 6, nr = 16;

template <int M, class A, class L>
__attribute__((target("avx2,fma"), always_inline)) inline void micro(const A& al, const L& bl, i64 kc, float* c,
                                                                     i64 ldc, bool acc, const float* bias, i64 nv) {
  // U independent sums per accumulator (depth steps k, k + 1, ... added apart, then
  // together): a tile of one or two rows has too few accumulators to hide the FMA latency
  constexpr int U = M == 1 ? 4 : M == 2 ? 2 : 1;
  __m256 r0[M * U], r1[M * U];
#pragma GCC unroll 8
  for (int i = 0; i < M * U; ++i) r0[i] = r1[i] = _mm256_setzero_ps();
#pragma GCC unroll 2
  for (i64 k0 = 0; k0 < kc; k0 += U)
#pragma GCC unroll 4
    for (int u = 0; u < U; ++u) {
      const i64 kk = k0 + u;
      if (U > 1 && kk >= kc) break;
      const __m256 b0 = _mm256_loadu_ps(bl.lo(kk)), b1 = _mm256_loadu_ps(bl.hi(kk));
      if constexpr (L::prefetch) _mm_prefetch(reinterpret_cast<const char*>(bl.ahead(kk)), _MM_HINT_T0);
#pragma GCC unroll 8
      for (int i = 0; i < M; ++i) {
        const __m256 av = _mm256_broadcast_ss(al.at(kk, i));
        r0[i * U + u] = _mm256_fmadd_ps(av, b0, r0[i * U + u]);
        r1[i * U + u] = _mm256_fmadd_ps(av, b1, r1[i * U + u]);
      }
    }
  if constexpr (U > 1)
#pragma GCC unroll 8
    for (int i = 0; i < M; ++i)
#pragma GCC unroll 4
      for (int u = 1; u < U; ++u) {
        r0[i * U] = _mm256_add_ps(r0[i * U], r0[i * U + u]);
        r1[i * U] = _mm256_add_ps(r1[i * U], r1[i * U + u]);
      }
  if constexpr (U > 1)
#pragma GCC unroll 8
    for (int i = 1; i < M; ++i) {
      r0[i] = r0[i * U];
      r1[i] = r1[i * U];
    }
  if (bias && !acc)
#pragma GCC unroll 8
    for (int i = 0; i < M; ++i) {
      const __m256 bv = _mm256_broadcast_ss(bias + i);
      r0[i] = _mm256_add_ps(r0[i], bv);
      r1[i] = _mm256_add_ps(r1[i], bv);
    }
  if (nv == nr) {
#pragma GCC unroll 8
    for (int i = 0; i < M; ++i) {
      float* row = c + i * ldc;
      if (acc) {
        r0[i] = _mm256_add_ps(r0[i], _mm256_loadu_ps(row));
        r1[i] = _mm256_add_ps(r1[i], _mm256_loadu_ps(row + 8));
      }
      _mm256_storeu_ps(row, r0[i]);
      _mm256_storeu_ps(row + 8, r1[i]);
    }
    return;
  }
  alignas(32) float t[nr];
#pragma GCC unroll 8
  for (int i = 0; i < M; ++i) {
    _mm256_store_ps(t, r0[i]);
    _mm256_store_ps(t + 8, r1[i]);
    float* row = c + i * ldc;
    for (i64 j = 0; j < nv; ++j) row[j] = acc ? row[j] + t[j] : t[j];
  }
}

#define GPASS_SGEMM_TARGET "avx2,fma"
#include <gpass/exec/eigen_cpu/kernels/detail/sgemm_driver.inl>  // rows, block
#undef GPASS_SGEMM_TARGET
}  // namespace avx2

// ------------------------------------------------------------------------------------------
// AVX-512F: 8 x 32 tiles (16 accumulators of 16 floats); ragged columns through masks.

namespace avx512 {
inline constexpr int mr = 8, nr = 32;

template <int M, class A, class L>
__attribute__((target("avx512f,avx2,fma"), always_inline)) inline void micro(const A& al, const L& bl, i64 kc,
                                                                             float* c, i64 ldc, bool acc,
                                                                             const float* bias, i64 nv) {
  // U independent sums per accumulator, as in the AVX2 kernel
  constexpr int U = M == 1 ? 4 : M == 2 ? 4 : M <= 4 ? 2 : 1;
  __m512 r0[M * U], r1[M * U];
#pragma GCC unroll 8
  for (int i = 0; i < M * U; ++i) r0[i] = r1[i] = _mm512_setzero_ps();
#pragma GCC unroll 2
  for (i64 k0 = 0; k0 < kc; k0 += U)
#pragma GCC unroll 4
    for (int u = 0; u < U; ++u) {
      const i64 kk = k0 + u;
      if (U > 1 && kk >= kc) break;
      const __m512 b0 = _mm512_loadu_ps(bl.lo(kk)), b1 = _mm512_loadu_ps(bl.hi(kk));
      if constexpr (L::prefetch) {
        _mm_prefetch(reinterpret_cast<const char*>(bl.ahead(kk)), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(bl.ahead(kk) + 16), _MM_HINT_T0);
      }
#pragma GCC unroll 8
      for (int i = 0; i < M; ++i) {
        const __m512 av = _mm512_set1_ps(*al.at(kk, i));
        r0[i * U + u] = _mm512_fmadd_ps(av, b0, r0[i * U + u]);
        r1[i * U + u] = _mm512_fmadd_ps(av, b1, r1[i * U + u]);
      }
    }
  if constexpr (U > 1)
#pragma GCC unroll 8
    for (int i = 0; i < M; ++i)
#pragma GCC unroll 4
      for (int u = 1; u < U; ++u) {
        r0[i * U] = _mm512_add_ps(r0[i * U], r0[i * U + u]);
        r1[i * U] = _mm512_add_ps(r1[i * U], r1[i * U + u]);
      }
  if constexpr (U > 1)
#pragma GCC unroll 8
    for (int i = 1; i < M; ++i) {
      r0[i] = r0[i * U];
      r1[i] = r1[i * U];
    }
  const __mmask16 m0 = nv >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << nv) - 1u);
  const __mmask16 m1 = nv >= 32 ? __mmask16(0xFFFF) : nv <= 16 ? __mmask16(0) : __mmask16((1u << (nv - 16)) - 1u);
#pragma GCC unroll 8
  for (int i = 0; i < M; ++i) {
    float* row = c + i * ldc;
    if (acc) {
      r0[i] = _mm512_add_ps(r0[i], _mm512_maskz_loadu_ps(m0, row));
      r1[i] = _mm512_add_ps(r1[i], _mm512_maskz_loadu_ps(m1, row + 16));
    } else if (bias) {
      const __m512 bv = _mm512_set1_ps(bias[i]);
      r0[i] = _mm512_add_ps(r0[i], bv);
      r1[i] = _mm512_add_ps(r1[i], bv);
    }
    _mm512_mask_storeu_ps(row, m0, r0[i]);
    _mm512_mask_storeu_ps(row + 16, m1, r1[i]);
  }
}

#define GPASS_SGEMM_TARGET "avx512f,avx2,fma"
#include <gpass/exec/eigen_cpu/kernels/detail/sgemm_driver.inl>  // rows, block
#undef GPASS_SGEMM_TARGET
}  // namespace avx512
#endif

// ------------------------------------------------------------------------------------------
// Choosing the kernel

/// The kernels this processor can run, best first (the portable one last); detected once.
inline const std::vector<kernel_info>& available_kernels() {
  static const std::vector<kernel_info> all = [] {
    std::vector<kernel_info> r;
#if GPASS_SGEMM_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) r.push_back({"avx512", avx512::mr, avx512::nr, 256, &avx512::block});
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
      r.push_back({"avx2", avx2::mr, avx2::nr, 256, &avx2::block});
#endif
    r.push_back({"generic", generic::mr, generic::nr, 256, &generic::block});
    return r;
  }();
  return all;
}

/// The kernel of this process: the best available one, capped by `GPASS_CPU_ISA` when set
/// (read once).
inline const kernel_info& kernel() {
  static const kernel_info* const k = [] {
    const std::vector<kernel_info>& all = available_kernels();
    if (const char* cap = std::getenv("GPASS_CPU_ISA"))
      for (const kernel_info& ki : all)
        if (ki.name == cap) return &ki;
    return &all.front();
  }();
  return *k;
}

// ------------------------------------------------------------------------------------------
// Packing

/// Storage aligned to 64 bytes: a cache line, one AVX-512 vector. (Eigen's aligned_allocator
/// aligns to EIGEN_MAX_ALIGN_BYTES, 16 or 32 in builds without AVX-512 flags, while the kernels
/// are chosen at run time: a packed filter 32 bytes off a line split every 64-byte load of the
/// AVX-512 convolution kernels in two lines, 3-15% slower per layer.)
template <class T>
struct line_aligned_allocator {
  using value_type = T;
  static constexpr std::align_val_t alignment{64};
  line_aligned_allocator() noexcept = default;
  template <class U>
  line_aligned_allocator(const line_aligned_allocator<U>&) noexcept {}
  T* allocate(std::size_t n) {
    if (n > std::numeric_limits<std::size_t>::max() / sizeof(T)) throw std::bad_array_new_length();
    return static_cast<T*>(::operator new(n * sizeof(T), alignment));
  }
  void deallocate(T* p, std::size_t) noexcept { ::operator delete(p, alignment); }
  template <class U>
  bool operator==(const line_aligned_allocator<U>&) const noexcept {
    return true;
  }
};

template <class T>
using aligned_vector = std::vector<T, line_aligned_allocator<T>>;

/// Storage of a constant packed once for a plan's life (a packed filter or weight matrix):
/// from `gpass::detail::huge_pool`, in transparent huge pages where the system has them,
/// 64-byte aligned. A model's weights are streamed from memory on every run; in 4 KiB pages
/// malloc's small buffers cost a page walk every 4 KiB, and the hardware prefetchers stop at
/// each page's end (MobileNetV2 at batch 1 on one thread: its kernels' minima summed 5.5 ->
/// 5.2 ms with glibc's heap in huge pages). Not for scratch or activations: buffers freed at
/// different times keep a whole chunk mapped.
template <class T>
struct packed_allocator {
  using value_type = T;
  packed_allocator() noexcept = default;
  template <class U>
  packed_allocator(const packed_allocator<U>&) noexcept {}
  T* allocate(std::size_t n) {
    if (n > std::numeric_limits<std::size_t>::max() / sizeof(T)) throw std::bad_array_new_length();
    return static_cast<T*>(gpass::detail::huge_pool::global().allocate(n * sizeof(T)));
  }
  void deallocate(T* p, std::size_t n) noexcept { gpass::detail::huge_pool::global().deallocate(p, n * sizeof(T)); }
  template <class U>
  bool operator==(const packed_allocator<U>&) const noexcept {
    return true;
  }
};

template <class T>
using packed_vector = std::vector<T, packed_allocator<T>>;

/// Writes A[M x K] (A(i, k) = a[i * lda + k], or a[k * lda + i] when `col_major`) in panels
/// of `mr` rows to `dst` (ceil(M / mr) * K * mr floats).
inline void pack_a(const float* a, i64 lda, bool col_major, i64 M, i64 K, int mr, float* dst) {
  for (i64 i0 = 0; i0 < M; i0 += mr) {
    const i64 rows = std::min<i64>(mr, M - i0);
    if (!col_major) {
      for (i64 k = 0; k < K; ++k, dst += mr) {
        i64 r = 0;
        for (; r < rows; ++r) dst[r] = a[(i0 + r) * lda + k];
        for (; r < mr; ++r) dst[r] = 0.0f;
      }
    } else {
      for (i64 k = 0; k < K; ++k, dst += mr) {
        const float* src = a + k * lda + i0;
        i64 r = 0;
        for (; r < rows; ++r) dst[r] = src[r];
        for (; r < mr; ++r) dst[r] = 0.0f;
      }
    }
  }
}

/// Writes B[K x N] (B(k, j) = b[k * ldb + j], or b[j * ldb + k] when `col_major`) in panels
/// of `nr` columns to `dst` (ceil(N / nr) * K * nr floats): the panels of the rows of B's
/// transpose, which is B read in the other order.
inline void pack_b(const float* b, i64 ldb, bool col_major, i64 K, i64 N, int nr, float* dst) {
  pack_a(b, ldb, !col_major, N, K, nr, dst);
}

inline i64 panels(i64 n, int w) { return (n + w - 1) / w; }

/// A constant operand packed once for kernel `ki` (the one its products then run on):
/// `outer` rows (of A, or of B's transpose) at depth `depth`, in panels of `width` rows.
struct packed_panels {
  const kernel_info* ki;
  i64 depth = 0;
  int width = 1;
  packed_vector<float> data;
  packed_panels(const float* x, i64 ld, bool col_major, i64 outer, i64 K, int w, const kernel_info& k)
      : ki(&k), depth(K), width(w) {
    data.resize(static_cast<std::size_t>(std::max<i64>(1, panels(outer, w) * K * w)));
    pack_a(x, ld, col_major, outer, K, w, data.data());
  }
  i64 panel_stride() const { return depth * width; }
};

/// A constant left operand A[M x K], in panels of `mr` rows.
struct packed_a : packed_panels {
  i64 rows = 0;
  packed_a(const float* a, i64 lda, bool col_major, i64 M, i64 K, const kernel_info& k = kernel())
      : packed_panels(a, lda, col_major, M, K, k.mr, k), rows(M) {}
};

/// A constant right operand B[K x N], in panels of `nr` columns.
struct packed_b : packed_panels {
  i64 cols = 0;
  packed_b(const float* b, i64 ldb, bool col_major, i64 K, i64 N, const kernel_info& k = kernel())
      : packed_panels(b, ldb, !col_major, N, K, k.nr, k), cols(N) {}
};

/// Per-thread scratch buffer `which` (0: packed activations, 1: im2col panels, 2: one im2col
/// row, 3: a padded convolution input): reused across runs and kernels, written only by its
/// thread (which may let others read it while it waits for them).
inline float* scratch(int which, i64 n) {
  thread_local aligned_vector<float> buffers[4];
  aligned_vector<float>& v = buffers[static_cast<std::size_t>(std::clamp(which, 0, 3))];
  if (static_cast<i64>(v.size()) < n) v.resize(static_cast<std::size_t>(n));
  return v.data();
}

// ------------------------------------------------------------------------------------------
// Driver

/// Rows per block of a product at depth block `kc`: a multiple of mr, the A slices within
/// about 512 KB.
inline i64 row_block(const kernel_info& ki, i64 kc) {
  return std::max<i64>(ki.mr, (i64{1} << 17) / std::max<i64>(kc, 1) / ki.mr * ki.mr);
}

/// Subnormal inputs read as zero and subnormal results written as zero (x86's MXCSR DAZ and
/// FTZ bits) while the object lives; the thread's mode is restored after. Every product of
/// the engine runs in this mode, as TensorFlow runs its kernels: a subnormal operand costs a
/// microcode assist per multiply-add on x86 (a product over subnormal softmax probabilities
/// ran 200x slower), and what it changes is below 1.2e-38 per term.
class flush_subnormals {
 public:
#if GPASS_SGEMM_X86
  flush_subnormals() noexcept : saved_(_mm_getcsr()) { _mm_setcsr(saved_ | 0x8040u); }  // FTZ 0x8000, DAZ 0x0040
  ~flush_subnormals() { _mm_setcsr(saved_); }
  flush_subnormals(const flush_subnormals&) = delete;
  flush_subnormals& operator=(const flush_subnormals&) = delete;

 private:
  unsigned saved_;
#else
  flush_subnormals() noexcept {}  // other processors: the mode is left as it is
#endif
};

/// The blocking of a product of `M` rows at depth `K` on kernel `ki`: depth blocks of about
/// kc, evenly split (no thin tail), and row blocks whose A slices stay in L2 (about 512 KB)
/// while the B panels stream past them. For each block, `f(p, k0, i0)` sets the operands of
/// `p` (its rows, depth, A panel stride, C stride and accumulation are set) and the block runs.
/// A product of one row panel (M <= mr) takes the whole depth in one block: no other row panel
/// reuses a B slice, and its sums stay in registers instead of going through C once per depth
/// block.
template <class F>
void for_each_block(const kernel_info& ki, i64 M, i64 K, i64 a_stride, i64 ldc, bool accumulate, F&& f) {
  const i64 nk = M <= ki.mr ? 1 : std::max<i64>(1, (K + ki.kc / 2) / ki.kc);
  const i64 kc = (K + nk - 1) / nk;
  const i64 mc = row_block(ki, kc);
  const flush_subnormals ftz;
  for (i64 k0 = 0; k0 < K; k0 += kc)
    for (i64 i0 = 0; i0 < M; i0 += mc) {
      block_args p;
      p.a_stride = a_stride;
      p.m = std::min(mc, M - i0);
      p.kc = std::min(kc, K - k0);
      p.ldc = ldc;
      p.accumulate = accumulate || k0 > 0;
      f(p, k0, i0);
      ki.block(p);
    }
}

/// C[M x N] (=|+=) A * B over panel-form operands of depth K (`a_stride`, `b_stride`: panel
/// strides, normally K * mr and K * nr); `n0`/`n1` restrict to the columns of B panels
/// [n0 / nr, ceil(n1 / nr)) (n0 a multiple of nr), for splitting across threads. With
/// `a_ld` > 0, A is not packed: row-major M x K with that row stride, read in place.
inline void multiply(const kernel_info& ki, const float* a, i64 a_stride, i64 M, const float* b, i64 b_stride, i64 N,
                     i64 K, float* c, i64 ldc, bool accumulate, i64 n0 = 0, i64 n1 = -1, i64 a_ld = 0,
                     const float* row_bias = nullptr) {
  if (n1 < 0) n1 = N;
  if (M <= 0 || n1 <= n0) return;
  if (K <= 0) {
    if (!accumulate)
      for (i64 i = 0; i < M; ++i) std::fill(c + i * ldc + n0, c + i * ldc + n1, row_bias ? row_bias[i] : 0.0f);
    return;
  }
  for_each_block(ki, M, K, a_stride, ldc, accumulate, [&](block_args& p, i64 k0, i64 i0) {
    p.a = a_ld > 0 ? a + i0 * a_ld + k0 : a + (i0 / ki.mr) * a_stride + k0 * ki.mr;
    p.a_ld = a_ld;
    p.b = b + (n0 / ki.nr) * b_stride + k0 * ki.nr;
    p.b_stride = b_stride;
    p.n = n1 - n0;
    p.c = c + i0 * ldc + n0;
    p.bias = row_bias ? row_bias + i0 : nullptr;
  });
}

/// C[M x N] (=|+=) A * B with B indirect (see `block_args::b_off`): `base` holds two
/// pointers per B panel, `off` the K offsets; N must be a multiple of nr.
inline void multiply_indirect(const kernel_info& ki, const float* a, i64 a_stride, i64 M, const float* const* base,
                              const i64* off, i64 N, i64 K, float* c, i64 ldc, bool accumulate,
                              const float* row_bias = nullptr) {
  if (M <= 0 || N <= 0) return;
  if (K <= 0) {
    if (!accumulate)
      for (i64 i = 0; i < M; ++i) std::fill(c + i * ldc, c + i * ldc + N, row_bias ? row_bias[i] : 0.0f);
    return;
  }
  for_each_block(ki, M, K, a_stride, ldc, accumulate, [&](block_args& p, i64 k0, i64 i0) {
    p.a = a + (i0 / ki.mr) * a_stride + k0 * ki.mr;
    p.n = N;
    p.c = c + i0 * ldc;
    p.bias = row_bias ? row_bias + i0 : nullptr;
    p.b_off = off + k0;
    p.b_base = base;
  });
}

}  // namespace gpass::exec::cpu_detail::sgemm
