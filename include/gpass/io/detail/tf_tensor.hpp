// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file tf_tensor.hpp
/// Private: TensorFlow `TensorShapeProto` -> `gpass::shape` and `TensorProto` ->
/// `gpass::tensor` (from the decoded `pb_message`). `tensor_content` is raw little-endian
/// data; the typed `*_val` fields may hold fewer values than the shape has elements, and then
/// the last value is repeated (none: zeros), as TensorFlow does.

#include <algorithm>
#include <bit>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include <gpass/core/dtype.hpp>
#include <gpass/core/error.hpp>
#include <gpass/core/shape.hpp>
#include <gpass/core/tensor.hpp>
#include <gpass/io/detail/raw_bytes.hpp>
#include <gpass/io/detail/tf_schema.hpp>

namespace gpass::detail::tf_io {

/// A `TensorShapeProto` as a gpass shape: `unknown_rank` -> unknown rank, size -1 -> unknown
/// dim. Sizes below -1 are errors. `m == nullptr` (field absent) is the scalar shape `[]`.
inline shape shape_from_tf(const pb_message* m) {
  if (!m) return shape::scalar();
  if (m->boolean(fields::shape_unknown_rank)) {
    if (m->has(fields::shape_dim)) throw error("shape has unknown_rank set and dims");
    return shape::unknown_rank();
  }
  std::vector<dim> dims;
  m->each(fields::shape_dim, [&](const pb_value& v) {
    std::int64_t size = v.m->i64(fields::dim_size);
    if (size < -1) throw error("shape has dim size " + std::to_string(size) + " (only -1 means unknown)");
    dims.push_back(size == -1 ? dim() : dim(size));
  });
  return shape(std::move(dims));
}

/// The TensorProto field holding the values of DataType `dt` (base type), or 0.
inline std::uint32_t value_field_of(dtype t) noexcept {
  switch (t) {
    case dtype::f32: return fields::float_val;
    case dtype::f64: return fields::double_val;
    case dtype::int32:
    case dtype::int16:
    case dtype::int8:
    case dtype::uint8:
    case dtype::uint16: return fields::int_val;
    case dtype::int64: return fields::int64_val;
    case dtype::uint32: return fields::uint32_val;
    case dtype::uint64: return fields::uint64_val;
    case dtype::bool_: return fields::bool_val;
    case dtype::f16:
    case dtype::bf16: return fields::half_val;
    case dtype::complex64: return fields::scomplex_val;
    case dtype::complex128: return fields::dcomplex_val;
    case dtype::string: return fields::string_val;
    default: return 0;
  }
}

inline const char* value_field_name(std::uint32_t n) noexcept {
  const field_schema* f = tensor_schema().find(n);
  return f ? f->name.data() : "?";
}

/// A `TensorProto` as a gpass tensor. A tensor made from a short `*_val` list (values
/// repeated over the shape, or zeros) is not bounded by the size of the input: its bytes are
/// taken from `budget` (an error when they exceed what is left). Data from `tensor_content` is
/// bounded by the input and costs nothing.
inline void fill_from_values(tensor& t, std::uint64_t n, const std::vector<const pb_value*>& vals, std::uint64_t given);

inline tensor tensor_from_tf(const pb_message& m, std::uint64_t& budget) {
  const std::int64_t code = m.i64(fields::tensor_dtype);
  auto dt = dtype_from_tf(code);
  const std::string tname = data_type_name(code);
  if (!dt) throw error("tensor of dtype " + tname + ": no gpass dtype for it");
  if (*dt == dtype::resource || *dt == dtype::variant)
    throw error("tensor of dtype " + tname + ": resource and variant tensor values are not supported");
  shape sh = shape_from_tf(m.msg(fields::tensor_shape));
  if (!sh.has_rank()) throw error("tensor of dtype " + tname + " has a shape of unknown rank");
  std::vector<std::int64_t> sizes;
  std::uint64_t n = 1;
  const std::uint64_t elem_bytes = *dt == dtype::string ? sizeof(std::string) : size_of(*dt);
  for (const auto& d : sh.dims()) {
    if (!d.is_known()) throw error("tensor of dtype " + tname + " has an unknown dim in its shape " + sh.to_string());
    const auto s = static_cast<std::uint64_t>(d.value());
    sizes.push_back(d.value());
    if (s != 0 && n > (std::uint64_t{1} << 62) / elem_bytes / s)
      throw error("tensor of dtype " + tname + " and shape " + sh.to_string() + " has too many elements");
    n *= s;
  }
  const std::uint32_t vf = value_field_of(*dt);
  // values in a field that does not belong to the dtype
  for (std::uint32_t f : {fields::float_val, fields::double_val, fields::int_val, fields::string_val, fields::scomplex_val,
                          fields::int64_val, fields::bool_val, fields::dcomplex_val, fields::half_val, fields::uint32_val,
                          fields::uint64_val})
    if (f != vf && m.has(f))
      throw error("tensor of dtype " + tname + " has values in " + value_field_name(f) + " (expected " +
                  (vf ? value_field_name(vf) : "none") + ")");
  const pb_value* content = m.last(fields::tensor_content);
  const bool has_content = content && !content->s.empty();
  if (has_content) {
    if (*dt != dtype::string && content->s.size() != n * elem_bytes)
      throw error("tensor of dtype " + tname + " and shape " + sh.to_string() + " needs " + std::to_string(n * elem_bytes) +
                  " bytes of tensor_content, got " + std::to_string(content->s.size()));
  } else {
    if (n * elem_bytes > budget)
      throw error("tensor of dtype " + tname + " and shape " + sh.to_string() + " needs " + std::to_string(n * elem_bytes) +
                  " bytes made of repeated values, more than the " + std::to_string(budget) +
                  " bytes left of max_tensor_bytes");
    budget -= n * elem_bytes;
  }
  tensor t(*dt, sizes);
  if (has_content) {
    if (*dt == dtype::string) throw error("tensor of dtype DT_STRING in tensor_content is not supported");
    if (m.has(vf))
      throw error(std::string("tensor has both tensor_content and ") + value_field_name(vf));
    if (content->s.size() != t.nbytes())
      throw error("tensor of dtype " + tname + " and shape " + sh.to_string() + " needs " + std::to_string(t.nbytes()) +
                  " bytes of tensor_content, got " + std::to_string(content->s.size()));
    if (t.nbytes() != 0) std::memcpy(t.raw(), content->s.data(), t.nbytes());
    normalize_bools(t);
    if constexpr (std::endian::native == std::endian::big) {
      std::size_t w = size_of(*dt);
      if (*dt == dtype::complex64 || *dt == dtype::complex128) w /= 2;
      for (std::size_t i = 0; i + w <= t.nbytes(); i += w) std::reverse(t.raw() + i, t.raw() + i + w);
    }
    return t;
  }
  // typed values: collect, check the count, broadcast the last one
  std::vector<const pb_value*> vals;
  m.each(vf, [&](const pb_value& v) { vals.push_back(&v); });
  const bool complex = *dt == dtype::complex64 || *dt == dtype::complex128;
  if (complex && vals.size() % 2 != 0)
    throw error("tensor of dtype " + tname + " has an odd number (" + std::to_string(vals.size()) + ") of " +
                value_field_name(vf) + " values (real and imaginary parts)");
  const std::uint64_t given = complex ? vals.size() / 2 : vals.size();
  if (given > n)
    throw error("tensor of dtype " + tname + " and shape " + sh.to_string() + " has " + std::to_string(given) + " " +
                value_field_name(vf) + " values for " + std::to_string(n) + " elements");
  if (given == 0 || n == 0) return t;  // zeros
  fill_from_values(t, n, vals, given);
  return t;
}

/// A large constant made of one repeated value (a `*_val` list of one value, or none: zeros)
/// over a shape of more than `min_bytes` bytes: its scalar value and its sizes, so that the
/// importer can make it a `Fill` instead of materializing it. nullopt for anything else
/// (`tensor_from_tf` reads it, and reports what is wrong with it).
struct tf_splat {
  tensor value;                      ///< rank 0
  std::vector<std::int64_t> sizes;   ///< the constant's shape
};
inline std::optional<tf_splat> splat_from_tf(const pb_message& m, std::uint64_t min_bytes) {
  const pb_value* content = m.last(fields::tensor_content);
  if (content && !content->s.empty()) return std::nullopt;
  auto dt = dtype_from_tf(m.i64(fields::tensor_dtype));
  if (!dt || *dt == dtype::string || *dt == dtype::resource || *dt == dtype::variant) return std::nullopt;
  const shape sh = shape_from_tf(m.msg(fields::tensor_shape));
  if (!sh.has_rank()) return std::nullopt;
  tf_splat r;
  std::uint64_t n = 1;
  const std::uint64_t elem_bytes = size_of(*dt);
  if (elem_bytes == 0) return std::nullopt;
  for (const auto& d : sh.dims()) {
    if (!d.is_known()) return std::nullopt;
    const auto s = static_cast<std::uint64_t>(d.value());
    if (s != 0 && n > (std::uint64_t{1} << 62) / elem_bytes / s) return std::nullopt;
    n *= s;
    r.sizes.push_back(d.value());
  }
  if (n <= 1 || n * elem_bytes <= min_bytes) return std::nullopt;
  const std::uint32_t vf = value_field_of(*dt);
  for (std::uint32_t f : {fields::float_val, fields::double_val, fields::int_val, fields::string_val, fields::scomplex_val,
                          fields::int64_val, fields::bool_val, fields::dcomplex_val, fields::half_val, fields::uint32_val,
                          fields::uint64_val})
    if (f != vf && m.has(f)) return std::nullopt;
  std::vector<const pb_value*> vals;
  m.each(vf, [&](const pb_value& v) { vals.push_back(&v); });
  const bool complex = *dt == dtype::complex64 || *dt == dtype::complex128;
  if (complex ? vals.size() != 0 && vals.size() != 2 : vals.size() > 1) return std::nullopt;
  r.value = tensor(*dt, std::vector<std::int64_t>{});
  if (!vals.empty()) fill_from_values(r.value, 1, vals, 1);
  return r;
}

/// Elements `[0, n)` of `t` from the `given` typed values `vals` (the last one repeated).
inline void fill_from_values(tensor& t, std::uint64_t n, const std::vector<const pb_value*>& vals, std::uint64_t given) {
  visit_dtype(t.element_type(), [&]<class T>() {
    T* p = t.data<T>();
    for (std::uint64_t i = 0; i < n; ++i) {
      const std::uint64_t k = std::min(i, given - 1);
      if constexpr (std::is_same_v<T, std::string>) {
        p[i] = vals[k]->s;
      } else if constexpr (std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>) {
        using R = typename T::value_type;
        p[i] = T(static_cast<R>(vals[2 * k]->d), static_cast<R>(vals[2 * k + 1]->d));
      } else if constexpr (std::is_same_v<T, Eigen::half> || std::is_same_v<T, Eigen::bfloat16>) {
        const auto bits = static_cast<std::uint16_t>(vals[k]->u & 0xffff);
        std::memcpy(static_cast<void*>(&p[i]), &bits, 2);
      } else if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
        p[i] = static_cast<T>(vals[k]->d);
      } else if constexpr (std::is_same_v<T, bool>) {
        p[i] = vals[k]->u != 0;
      } else {
        p[i] = static_cast<T>(vals[k]->u);
      }
    }
  });
}

}  // namespace gpass::detail::tf_io
