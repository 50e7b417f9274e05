// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file onnx_dtype.hpp
/// Private: the mapping between ONNX `TensorProto.DataType` numbers and `gpass::dtype`.

#include <optional>

#include <gpass/core/dtype.hpp>
#include <gpass/io/detail/onnx_proto.hpp>

namespace gpass::detail::onnx_io {

/// The gpass dtype of an ONNX element type number; `std::nullopt` for UNDEFINED (0) and for
/// numbers gpass does not know (FLOAT6E2M3 and later).
inline std::optional<dtype> dtype_from_onnx(int t) noexcept {
  switch (t) {
    case onnx::TensorProto::FLOAT: return dtype::f32;
    case onnx::TensorProto::UINT8: return dtype::uint8;
    case onnx::TensorProto::INT8: return dtype::int8;
    case onnx::TensorProto::UINT16: return dtype::uint16;
    case onnx::TensorProto::INT16: return dtype::int16;
    case onnx::TensorProto::INT32: return dtype::int32;
    case onnx::TensorProto::INT64: return dtype::int64;
    case onnx::TensorProto::STRING: return dtype::string;
    case onnx::TensorProto::BOOL: return dtype::bool_;
    case onnx::TensorProto::FLOAT16: return dtype::f16;
    case onnx::TensorProto::DOUBLE: return dtype::f64;
    case onnx::TensorProto::UINT32: return dtype::uint32;
    case onnx::TensorProto::UINT64: return dtype::uint64;
    case onnx::TensorProto::COMPLEX64: return dtype::complex64;
    case onnx::TensorProto::COMPLEX128: return dtype::complex128;
    case onnx::TensorProto::BFLOAT16: return dtype::bf16;
    default: break;
  }
  // the low-precision types (numbers 17-26; newer than the protos of Debian's onnx 1.12)
  if (t >= 17 && t <= 26) return dtype_from_onnx_code(t);
  return std::nullopt;
}

/// The ONNX element type number of a gpass dtype: 0 (UNDEFINED) for `undefined`, and
/// `std::nullopt` for the dtypes ONNX has no element type for (`resource`, `variant`).
inline std::optional<int> dtype_to_onnx(dtype t) noexcept {
  switch (t) {
    case dtype::undefined: return onnx::TensorProto::UNDEFINED;
    case dtype::f32: return onnx::TensorProto::FLOAT;
    case dtype::uint8: return onnx::TensorProto::UINT8;
    case dtype::int8: return onnx::TensorProto::INT8;
    case dtype::uint16: return onnx::TensorProto::UINT16;
    case dtype::int16: return onnx::TensorProto::INT16;
    case dtype::int32: return onnx::TensorProto::INT32;
    case dtype::int64: return onnx::TensorProto::INT64;
    case dtype::string: return onnx::TensorProto::STRING;
    case dtype::bool_: return onnx::TensorProto::BOOL;
    case dtype::f16: return onnx::TensorProto::FLOAT16;
    case dtype::f64: return onnx::TensorProto::DOUBLE;
    case dtype::uint32: return onnx::TensorProto::UINT32;
    case dtype::uint64: return onnx::TensorProto::UINT64;
    case dtype::complex64: return onnx::TensorProto::COMPLEX64;
    case dtype::complex128: return onnx::TensorProto::COMPLEX128;
    case dtype::bf16: return onnx::TensorProto::BFLOAT16;
    case dtype::f8e4m3fn: return 17;
    case dtype::f8e4m3fnuz: return 18;
    case dtype::f8e5m2: return 19;
    case dtype::f8e5m2fnuz: return 20;
    case dtype::u4: return 21;
    case dtype::i4: return 22;
    case dtype::f4e2m1: return 23;
    case dtype::f8e8m0: return 24;
    case dtype::u2: return 25;
    case dtype::i2: return 26;
    default: return std::nullopt;
  }
}

}  // namespace gpass::detail::onnx_io
