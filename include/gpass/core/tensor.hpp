// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file tensor.hpp
/// `gpass::tensor`: a host tensor value (owning, reference-counted buffer, dtype, sizes) with Eigen views.

#include <algorithm>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <Eigen/Core>

#include <gpass/core/checked.hpp>
#include <gpass/core/dtype.hpp>
#include <gpass/core/error.hpp>
#include <gpass/core/shape.hpp>

namespace gpass {

/// The dtype of a C++ element type: `dtype_of_v<float> == dtype::f32`.
template <class T> struct dtype_of;
template <> struct dtype_of<bool> { static constexpr dtype value = dtype::bool_; };
template <> struct dtype_of<std::int8_t> { static constexpr dtype value = dtype::int8; };
template <> struct dtype_of<std::int16_t> { static constexpr dtype value = dtype::int16; };
template <> struct dtype_of<std::int32_t> { static constexpr dtype value = dtype::int32; };
template <> struct dtype_of<std::int64_t> { static constexpr dtype value = dtype::int64; };
template <> struct dtype_of<std::uint8_t> { static constexpr dtype value = dtype::uint8; };
template <> struct dtype_of<std::uint16_t> { static constexpr dtype value = dtype::uint16; };
template <> struct dtype_of<std::uint32_t> { static constexpr dtype value = dtype::uint32; };
template <> struct dtype_of<std::uint64_t> { static constexpr dtype value = dtype::uint64; };
template <> struct dtype_of<Eigen::half> { static constexpr dtype value = dtype::f16; };
template <> struct dtype_of<Eigen::bfloat16> { static constexpr dtype value = dtype::bf16; };
template <> struct dtype_of<float> { static constexpr dtype value = dtype::f32; };
template <> struct dtype_of<double> { static constexpr dtype value = dtype::f64; };
template <> struct dtype_of<std::complex<float>> { static constexpr dtype value = dtype::complex64; };
template <> struct dtype_of<std::complex<double>> { static constexpr dtype value = dtype::complex128; };
template <> struct dtype_of<std::string> { static constexpr dtype value = dtype::string; };
template <class T> inline constexpr dtype dtype_of_v = dtype_of<T>::value;

/// Calls `f(T{})`-style with the C++ element type of `t` as a template argument:
/// `visit_dtype(t, [&]<class T>() { ... })`. Throws for dtypes without a C++ element type.
template <class F>
decltype(auto) visit_dtype(dtype t, F&& f) {
  switch (t) {
    case dtype::bool_: return f.template operator()<bool>();
    case dtype::int8: return f.template operator()<std::int8_t>();
    case dtype::int16: return f.template operator()<std::int16_t>();
    case dtype::int32: return f.template operator()<std::int32_t>();
    case dtype::int64: return f.template operator()<std::int64_t>();
    case dtype::uint8: return f.template operator()<std::uint8_t>();
    case dtype::uint16: return f.template operator()<std::uint16_t>();
    case dtype::uint32: return f.template operator()<std::uint32_t>();
    case dtype::uint64: return f.template operator()<std::uint64_t>();
    case dtype::f16: return f.template operator()<Eigen::half>();
    case dtype::bf16: return f.template operator()<Eigen::bfloat16>();
    case dtype::f32: return f.template operator()<float>();
    case dtype::f64: return f.template operator()<double>();
    case dtype::complex64: return f.template operator()<std::complex<float>>();
    case dtype::complex128: return f.template operator()<std::complex<double>>();
    case dtype::string: return f.template operator()<std::string>();
    default: break;
  }
  throw error("no element type for dtype '" + std::string(to_string(t)) + "'");
}

/// A host tensor: dtype, sizes and a reference-counted buffer (copies share it, like
/// TensorFlow's `Tensor`; `clone()` makes a deep copy). Numeric buffers are 64-byte
/// aligned and zero-initialized; string tensors hold `std::string`s.
/// \code
///   auto t = gpass::tensor::from<float>({1, 2, 3, 4}, {2, 2});
///   t.matrix<float>()(1, 0) == 3.0f;   // row-major Eigen view
/// \endcode
class tensor {
 public:
  /// An empty f32 scalar-less tensor (dtype undefined, no elements).
  tensor() = default;

  /// A zero-filled tensor of the given dtype and sizes.
  tensor(dtype t, std::vector<std::int64_t> sizes) : dtype_(t), sizes_(std::move(sizes)) {
    check_sizes(dtype_, sizes_);
    allocate();
  }

  /// A numeric tensor whose elements are not initialized (for outputs a kernel fills in
  /// completely: saves the zero fill).
  static tensor uninitialized(dtype t, std::vector<std::int64_t> sizes) {
    tensor r;
    r.dtype_ = t;
    r.sizes_ = std::move(sizes);
    check_sizes(t, r.sizes_);
    r.allocate(false);
    return r;
  }

  /// A numeric tensor over an existing buffer of at least `nbytes()` bytes, sharing its
  /// ownership (an execution plan's arena; the aliasing `std::shared_ptr` constructor gives
  /// a pointer into a larger block that keeps the block alive).
  static tensor wrap(dtype t, std::vector<std::int64_t> sizes, std::shared_ptr<std::byte[]> bytes) {
    if (t == dtype::string || (!is_trivial(t) && t != dtype::undefined))
      throw error("tensor::wrap: dtype " + std::string(to_string(t)) + " has no flat buffer");
    check_sizes(t, sizes);
    tensor r;
    r.dtype_ = t;
    r.sizes_ = std::move(sizes);
    r.bytes_ = std::move(bytes);
    return r;
  }

  /// The same elements (shared buffer) seen with other sizes of the same element count
  /// (a reshape that copies nothing).
  tensor reshaped(std::vector<std::int64_t> sizes) const {
    check_sizes(dtype_, sizes);
    if (num_elements(sizes) != size())
      throw error("tensor::reshaped: " + std::to_string(num_elements(sizes)) + " elements for " +
                  std::to_string(size()));
    tensor r = *this;
    r.sizes_ = std::move(sizes);
    return r;
  }

  /// The shared buffer (null for string tensors and empty ones).
  const std::shared_ptr<std::byte[]>& buffer() const noexcept { return bytes_; }

  /// A tensor holding `values` with the given sizes (default: a vector of all values).
  template <class T>
  static tensor from(std::vector<T> values, std::vector<std::int64_t> sizes) {
    tensor t(dtype_of_v<T>, std::move(sizes));
    if (static_cast<std::int64_t>(values.size()) != t.size())
      throw error("tensor: " + std::to_string(values.size()) + " values for " + std::to_string(t.size()) +
                  " elements");
    T* p = t.data<T>();
    for (std::size_t i = 0; i < values.size(); ++i) p[i] = std::move(values[i]);
    return t;
  }
  template <class T>
  static tensor from(std::vector<T> values) {
    std::int64_t n = static_cast<std::int64_t>(values.size());
    return from<T>(std::move(values), {n});
  }
  /// A scalar (rank 0) tensor.
  template <class T>
  static tensor scalar(T v) {
    return from<T>(std::vector<T>{std::move(v)}, {});
  }

  dtype element_type() const noexcept { return dtype_; }
  const std::vector<std::int64_t>& sizes() const noexcept { return sizes_; }
  /// The shape as a `gpass::shape` (fully known).
  gpass::shape shape() const { return gpass::shape::of(sizes_); }
  std::size_t rank() const noexcept { return sizes_.size(); }
  /// Number of elements.
  std::int64_t size() const noexcept {
    std::int64_t n = 1;
    for (auto s : sizes_) n *= s;  // cannot overflow: every constructor checked the sizes
    return n;
  }
  /// Bytes of element storage (0 for string tensors).
  std::size_t nbytes() const noexcept { return static_cast<std::size_t>(size()) * size_of(dtype_); }
  /// True when no dtype is set.
  bool empty() const noexcept { return dtype_ == dtype::undefined; }

  /// Typed element pointer; throws when `T` does not match the dtype.
  template <class T>
  T* data() {
    check<T>();
    if constexpr (std::is_same_v<T, std::string>) return strings_ ? strings_->data() : nullptr;
    else return reinterpret_cast<T*>(bytes_.get());
  }
  template <class T>
  const T* data() const {
    return const_cast<tensor*>(this)->data<T>();
  }
  /// The elements as a span.
  template <class T>
  std::span<T> values() {
    return {data<T>(), static_cast<std::size_t>(size())};
  }
  template <class T>
  std::span<const T> values() const {
    return {data<T>(), static_cast<std::size_t>(size())};
  }
  /// Raw bytes of a numeric tensor.
  std::byte* raw() noexcept { return bytes_.get(); }
  const std::byte* raw() const noexcept { return bytes_.get(); }

  /// The elements as an Eigen column vector (flat view, shared storage).
  template <class T>
  Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, 1>> vec() {
    return {data<T>(), static_cast<Eigen::Index>(size())};
  }
  template <class T>
  Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, 1>> vec() const {
    return {data<T>(), static_cast<Eigen::Index>(size())};
  }
  /// A rank-2 tensor as a row-major Eigen matrix (shared storage).
  template <class T>
  Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>> matrix() {
    if (rank() != 2) throw error("tensor::matrix: rank " + std::to_string(rank()) + " is not 2");
    return {data<T>(), static_cast<Eigen::Index>(sizes_[0]), static_cast<Eigen::Index>(sizes_[1])};
  }

  /// A deep copy.
  tensor clone() const {
    tensor t;
    t.dtype_ = dtype_;
    t.sizes_ = sizes_;
    t.allocate(dtype_ == dtype::string);
    if (dtype_ == dtype::string) *t.strings_ = *strings_;
    else if (nbytes()) std::memcpy(t.bytes_.get(), bytes_.get(), nbytes());
    return t;
  }

  /// Same dtype, sizes and bit-identical elements.
  friend bool operator==(const tensor& a, const tensor& b) {
    if (a.dtype_ != b.dtype_ || a.sizes_ != b.sizes_) return false;
    if (a.dtype_ == dtype::string) return *a.strings_ == *b.strings_;
    return a.nbytes() == 0 || std::memcmp(a.bytes_.get(), b.bytes_.get(), a.nbytes()) == 0;
  }

 private:
  struct aligned_delete {
    void operator()(std::byte* p) const { ::operator delete[](p, std::align_val_t{64}); }
  };

  /// Sizes must be non-negative, and the element count and byte count must not overflow.
  static void check_sizes(dtype t, const std::vector<std::int64_t>& sizes) {
    for (auto s : sizes)
      if (s < 0) throw error("tensor size must be non-negative, got " + std::to_string(s));
    const std::int64_t n = num_elements_or_throw(sizes);
    (void)bytes_or_throw(n, std::max<std::size_t>(size_of(t), 1));
  }

  template <class T>
  void check() const {
    if (dtype_of_v<T> != dtype_)
      throw error("tensor of dtype " + std::string(to_string(dtype_)) + " accessed as " +
                  std::string(to_string(dtype_of_v<T>)));
  }

  void allocate(bool zero = true) {
    if (dtype_ == dtype::string) {
      strings_ = std::make_shared<std::vector<std::string>>(static_cast<std::size_t>(size()));
      return;
    }
    if (!is_trivial(dtype_) && dtype_ != dtype::undefined)
      throw error("cannot allocate a tensor of dtype " + std::string(to_string(dtype_)));
    std::size_t n = nbytes();
    if (n == 0) return;
    auto* p = static_cast<std::byte*>(::operator new[](n, std::align_val_t{64}));
    if (zero) std::memset(p, 0, n);
    bytes_ = std::shared_ptr<std::byte[]>(p, aligned_delete{});
  }

  dtype dtype_ = dtype::undefined;
  std::vector<std::int64_t> sizes_;
  std::shared_ptr<std::byte[]> bytes_;
  std::shared_ptr<std::vector<std::string>> strings_;
};

}  // namespace gpass
