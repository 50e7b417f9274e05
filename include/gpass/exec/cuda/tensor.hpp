// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file tensor.hpp
/// `gpass::exec::cuda_tensor`: a tensor in GPU memory (dtype, sizes, a reference-counted
/// device buffer), the `tensor_type` of the CUDA policy. Copies share the buffer; a reshape
/// is a view. Its memory goes back to the policy's stream-ordered pool when the last copy is
/// gone; the pool and its stream live as long as any tensor of theirs does.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gpass/core/checked.hpp>
#include <gpass/core/dtype.hpp>
#include <gpass/core/error.hpp>
#include <gpass/core/shape.hpp>

namespace gpass::exec {

/// A tensor in device memory. `data()` is a device pointer: the host must not dereference it.
class cuda_tensor {
 public:
  cuda_tensor() = default;
  /// A tensor of `t` and `sizes` over `buffer` (device memory of at least `nbytes()` bytes).
  cuda_tensor(dtype t, std::vector<std::int64_t> sizes, std::shared_ptr<std::byte> buffer)
      : dtype_(t), sizes_(std::move(sizes)), buffer_(std::move(buffer)) {}

  dtype element_type() const noexcept { return dtype_; }
  const std::vector<std::int64_t>& sizes() const noexcept { return sizes_; }
  gpass::shape shape() const { return gpass::shape::of(sizes_); }
  std::size_t rank() const noexcept { return sizes_.size(); }
  /// Number of elements (1 for a scalar).
  std::int64_t size() const noexcept {
    std::int64_t n = 1;
    for (auto s : sizes_) n *= s;
    return n;
  }
  std::size_t nbytes() const noexcept { return static_cast<std::size_t>(size()) * size_of(dtype_); }
  bool empty() const noexcept { return dtype_ == dtype::undefined; }

  /// The device address of element 0 (null for a tensor of no elements).
  void* data() const noexcept { return buffer_.get(); }
  template <class T>
  T* data_as() const noexcept {
    return reinterpret_cast<T*>(buffer_.get());
  }
  const std::byte* raw() const noexcept { return buffer_.get(); }
  const std::shared_ptr<std::byte>& buffer() const noexcept { return buffer_; }

  /// The same buffer with other sizes of the same element count (a view).
  cuda_tensor reshaped(std::vector<std::int64_t> sizes) const {
    std::int64_t n = 1;
    for (auto s : sizes) n *= s;
    if (n != size())
      throw error("cuda_tensor: cannot view " + std::to_string(size()) + " elements as " + shape::of(sizes).to_string());
    return cuda_tensor(dtype_, std::move(sizes), buffer_);
  }

 private:
  dtype dtype_ = dtype::undefined;
  std::vector<std::int64_t> sizes_;
  std::shared_ptr<std::byte> buffer_;
};

}  // namespace gpass::exec
