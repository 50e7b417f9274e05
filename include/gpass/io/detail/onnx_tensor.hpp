// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file onnx_tensor.hpp
/// Private: conversion between ONNX `TensorProto` / `SparseTensorProto` and `gpass::tensor`,
/// including external data read from a folder.

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#if __has_include(<sys/mman.h>)
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>
#ifdef MAP_TYPE  // a Linux flag mask gpass does not use; ONNX's parser.h names an enumerator so
#undef MAP_TYPE
#endif
#define GPASS_HAVE_MMAP 1
#else
#define GPASS_HAVE_MMAP 0
#endif

#include <gpass/core/dtype.hpp>
#include <gpass/core/error.hpp>
#include <gpass/core/tensor.hpp>
#include <gpass/io/detail/onnx_dtype.hpp>
#include <gpass/io/detail/onnx_proto.hpp>
#include <gpass/io/detail/raw_bytes.hpp>

namespace gpass::detail::onnx_io {

/// Byte size of one scalar component (half of a complex element) for byte swapping.
inline std::size_t component_size(dtype t) noexcept {
  if (t == dtype::complex64) return 4;
  if (t == dtype::complex128) return 8;
  return size_of(t);
}

/// Copies `n` bytes of little-endian elements of `t` into native order.
inline void copy_little_endian(std::byte* dst, const void* src, std::size_t n, dtype t) {
  std::memcpy(dst, src, n);
  if constexpr (std::endian::native == std::endian::big) {
    std::size_t c = component_size(t);
    if (c > 1)
      for (std::size_t i = 0; i + c <= n; i += c) std::reverse(dst + i, dst + i + c);
  }
}

/// `what` for messages: `tensor 'name'` or `tensor` when unnamed.
inline std::string tensor_label(const onnx::TensorProto& t) {
  return t.name().empty() ? std::string("tensor") : "tensor '" + t.name() + "'";
}

/// The element count of `dims`, checking that each is non-negative and that the product fits.
inline std::int64_t checked_count(const google::protobuf::RepeatedField<std::int64_t>& dims, const std::string& what) {
  std::int64_t n = 1;
  for (auto d : dims) {
    if (d < 0) throw error(what + ": negative dimension " + std::to_string(d));
    if (d != 0 && n > std::numeric_limits<std::int64_t>::max() / 16 / d)
      throw error(what + ": too many elements");
    n *= d;
  }
  return n;
}

/// A file mapped into memory (private, copy-on-write: writes never reach the file), kept
/// alive by the tensors over it.
struct mapped_file {
  std::byte* data = nullptr;
  std::size_t size = 0;
  mapped_file() = default;
  mapped_file(const mapped_file&) = delete;
  mapped_file& operator=(const mapped_file&) = delete;
  ~mapped_file() {
#if GPASS_HAVE_MMAP
    if (data) ::munmap(data, size);
#endif
  }
};

/// The external data files of one import, each mapped once (`read_onnx_file`): tensors whose
/// data starts 64-byte aligned in a mapped file share its pages instead of copying them.
struct external_files {
  std::map<std::filesystem::path, std::shared_ptr<mapped_file>> mapped;
  /// The mapping of `file` (nullptr when it cannot be mapped: the caller reads it instead).
  std::shared_ptr<mapped_file> map(const std::filesystem::path& file) {
    if (auto it = mapped.find(file); it != mapped.end()) return it->second;
    std::shared_ptr<mapped_file> m;
#if GPASS_HAVE_MMAP
    const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      std::error_code ec;
      const auto size = std::filesystem::file_size(file, ec);
      if (!ec && size > 0) {
        void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
        if (p != MAP_FAILED) {
          m = std::make_shared<mapped_file>();
          m->data = static_cast<std::byte*>(p);
          m->size = size;
        }
      }
      ::close(fd);
    }
#endif
    mapped.emplace(file, m);
    return m;
  }
};

/// Where the external data of `t` is: its file in `dir` and offset, checked (ONNX
/// `external_data`: location, offset, length; the location must be a relative path without
/// `..`, the file must hold `expected` bytes at the offset).
struct external_ref {
  std::filesystem::path file;
  std::int64_t offset = 0;
};
inline external_ref locate_external_data(const onnx::TensorProto& t, const std::filesystem::path& dir, std::size_t expected,
                                         const std::string& what) {
  std::string location;
  std::int64_t offset = 0, length = -1;
  auto to_int = [&](const std::string& key, const std::string& v) {
    try {
      std::size_t used = 0;
      long long x = std::stoll(v, &used);
      if (used != v.size() || x < 0) throw 0;
      return static_cast<std::int64_t>(x);
    } catch (...) {
      throw error(what + ": bad external data " + key + " '" + v + "'");
    }
  };
  for (const auto& kv : t.external_data()) {
    if (kv.key() == "location") location = kv.value();
    else if (kv.key() == "offset") offset = to_int("offset", kv.value());
    else if (kv.key() == "length") length = to_int("length", kv.value());
  }
  if (dir.empty())
    throw error(what + ": external data ('" + location +
                "') needs a folder: read the model with read_onnx_file, or set onnx_import_options::external_data_dir");
  if (location.empty()) throw error(what + ": external data without a location");
  std::filesystem::path rel(location);
  if (rel.is_absolute() || rel.has_root_name() || rel.has_root_directory())
    throw error(what + ": external data location '" + location + "' is not a relative path");
  for (const auto& part : rel)
    if (part == "..") throw error(what + ": external data location '" + location + "' leaves the model's folder");
  if (length >= 0 && static_cast<std::uint64_t>(length) != expected)
    throw error(what + ": external data length " + std::to_string(length) + " does not match the " +
                std::to_string(expected) + " bytes of its dims");
  std::filesystem::path file = dir / rel;
  std::error_code ec;
  const auto fsize = std::filesystem::file_size(file, ec);
  if (ec) throw error(what + ": cannot open external data file '" + file.string() + "'");
  const auto size = static_cast<std::int64_t>(fsize);
  if (offset > size || static_cast<std::uint64_t>(size - offset) < expected)
    throw error(what + ": external data file '" + file.string() + "' is too short (" + std::to_string(size) +
                " bytes, need " + std::to_string(expected) + " at offset " + std::to_string(offset) + ")");
  return {file, offset};
}

/// Reads the external data of `t` from `dir` (see `locate_external_data`).
inline std::string read_external_data(const onnx::TensorProto& t, const std::filesystem::path& dir,
                                      std::size_t expected, const std::string& what) {
  const external_ref ref = locate_external_data(t, dir, expected, what);
  const std::filesystem::path& file = ref.file;
  std::ifstream in(file, std::ios::binary);
  if (!in) throw error(what + ": cannot open external data file '" + file.string() + "'");
  std::string bytes(expected, '\0');
  in.seekg(ref.offset);
  in.read(bytes.data(), static_cast<std::streamsize>(expected));
  if (!in) throw error(what + ": cannot read external data file '" + file.string() + "'");
  return bytes;
}

/// Converts an ONNX tensor to a gpass tensor. Data comes from `raw_data` (little-endian), from
/// the typed field ONNX assigns to the element type (float_data: f32/c64; int32_data:
/// i8/i16/i32/u8/u16/bool/f16/bf16 (f16/bf16 as bit patterns); int64_data: i64;
/// uint64_data: u32/u64; double_data: f64/c128; string_data: str), or from external data in
/// `external_dir` (mapped instead of read, when `files` is given, the data starts 64-byte
/// aligned and the machine is little-endian). The element count must match the dims exactly.
inline tensor tensor_from_onnx(const onnx::TensorProto& t, const std::filesystem::path& external_dir = {},
                               external_files* files = nullptr) {
  const std::string what = tensor_label(t);
  auto dt = dtype_from_onnx(t.data_type());
  if (!dt)
    throw error(what + ": unsupported data type " + std::to_string(t.data_type()) +
                (t.data_type() == 0 ? " (UNDEFINED)" : ""));
  if (t.has_segment()) throw error(what + ": segmented tensors are not supported");
  const std::int64_t n = checked_count(t.dims(), what);
  std::vector<std::int64_t> sizes(t.dims().begin(), t.dims().end());
  const auto count = static_cast<std::size_t>(n);
  const dtype d = *dt;

  // which typed field belongs to this dtype, and how many entries per element
  int field = 0;  // 1 float, 2 int32, 3 int64, 4 uint64, 5 double, 6 string
  std::size_t per = 1;
  switch (d) {
    case dtype::f32: field = 1; break;
    case dtype::complex64: field = 1; per = 2; break;
    case dtype::int8: case dtype::int16: case dtype::int32: case dtype::uint8: case dtype::uint16:
    case dtype::bool_: case dtype::f16: case dtype::bf16: field = 2; break;
    case dtype::int64: field = 3; break;
    case dtype::uint32: case dtype::uint64: field = 4; break;
    case dtype::f64: field = 5; break;
    case dtype::complex128: field = 5; per = 2; break;
    case dtype::string: field = 6; break;
    default:
      if (is_low_precision(d)) field = 2;  // codes (packed for the 4- and 2-bit types), one per entry
      break;
  }
  const std::size_t sizes_by_field[7] = {0,
                                         static_cast<std::size_t>(t.float_data_size()),
                                         static_cast<std::size_t>(t.int32_data_size()),
                                         static_cast<std::size_t>(t.int64_data_size()),
                                         static_cast<std::size_t>(t.uint64_data_size()),
                                         static_cast<std::size_t>(t.double_data_size()),
                                         static_cast<std::size_t>(t.string_data_size())};
  static constexpr const char* field_names[7] = {"", "float_data", "int32_data", "int64_data",
                                                 "uint64_data", "double_data", "string_data"};
  for (int f = 1; f <= 6; ++f)
    if (f != field && sizes_by_field[f] != 0)
      throw error(what + ": " + field_names[f] + " given for a tensor of type " + std::string(to_string(d)));

  const bool external = t.data_location() == onnx::TensorProto::EXTERNAL;
  if (d == dtype::string) {
    if (!t.raw_data().empty() || external) throw error(what + ": string tensors must use string_data");
    if (sizes_by_field[6] != count)
      throw error(what + ": " + std::to_string(sizes_by_field[6]) + " strings for " + std::to_string(n) +
                  " elements");
    tensor r(d, sizes);
    auto* p = r.data<std::string>();
    for (std::size_t i = 0; i < count; ++i) p[i] = t.string_data(static_cast<int>(i));
    return r;
  }

  if (is_low_precision(d)) {
    // one code per element in memory; ONNX packs the 4-bit types two to a byte and the 2-bit
    // types four, the first element in the low bits
    const int bits = static_cast<int>(bit_width(d));
    const std::size_t per_byte = static_cast<std::size_t>(8 / bits);
    const std::size_t nbytes = (count + per_byte - 1) / per_byte;
    std::string packed;
    if (external || !t.raw_data().empty()) {
      if (sizes_by_field[2] != 0) throw error(what + ": both raw_data and int32_data are given");
      if (external) packed = read_external_data(t, external_dir, nbytes, what);
      else packed = t.raw_data();
      if (packed.size() != nbytes)
        throw error(what + ": raw_data has " + std::to_string(packed.size()) + " bytes, " + std::to_string(n) +
                    " elements of " + std::string(to_string(d)) + " need " + std::to_string(nbytes));
    } else {
      if (sizes_by_field[2] != nbytes)
        throw error(what + ": int32_data has " + std::to_string(sizes_by_field[2]) + " entries, " + std::to_string(n) +
                    " elements of " + std::string(to_string(d)) + " need " + std::to_string(nbytes));
      for (std::size_t i = 0; i < nbytes; ++i) {
        const std::int32_t v = t.int32_data(static_cast<int>(i));
        if (v < 0 || v > 255) throw error(what + ": int32_data entry " + std::to_string(v) + " is not a byte");
        packed.push_back(static_cast<char>(v));
      }
    }
    tensor r(d, sizes);
    auto* codes = reinterpret_cast<std::uint8_t*>(r.raw());
    const unsigned mask = (1u << bits) - 1;
    for (std::size_t i = 0; i < count; ++i)
      codes[i] = static_cast<std::uint8_t>((static_cast<unsigned char>(packed[i / per_byte]) >> ((i % per_byte) * bits)) & mask);
    return r;
  }

  const std::size_t esize = size_of(d);
  if (external || !t.raw_data().empty()) {
    if (sizes_by_field[field] != 0) throw error(what + ": both raw_data and " + field_names[field] + " are given");
    const std::size_t expected = count * esize;
    if (external) {
      if (files && expected > 0 && std::endian::native == std::endian::little && d != dtype::bool_) {
        const external_ref ref = locate_external_data(t, external_dir, expected, what);
        if (auto m = files->map(ref.file)) {
          std::byte* p = m->data + ref.offset;
          if (reinterpret_cast<std::uintptr_t>(p) % 64 == 0)
            return tensor::wrap(d, sizes, std::shared_ptr<std::byte[]>(m, p));  // shares the mapping
        }
      }
      std::string bytes = read_external_data(t, external_dir, expected, what);
      tensor r(d, sizes);
      copy_little_endian(r.raw(), bytes.data(), expected, d);
      normalize_bools(r);
      return r;
    }
    if (t.raw_data().size() != expected)
      throw error(what + ": raw_data has " + std::to_string(t.raw_data().size()) + " bytes, " +
                  std::to_string(n) + " elements of " + std::string(to_string(d)) + " need " +
                  std::to_string(expected));
    tensor r(d, sizes);
    if (expected) copy_little_endian(r.raw(), t.raw_data().data(), expected, d);
    normalize_bools(r);
    return r;
  }
  if (sizes_by_field[field] != count * per)
    throw error(what + ": " + std::string(field_names[field]) + " has " + std::to_string(sizes_by_field[field]) +
                " entries, " + std::to_string(n) + " elements of " + std::string(to_string(d)) + " need " +
                std::to_string(count * per));
  tensor r(d, sizes);
  auto check_range = [&](std::int64_t v, std::int64_t lo, std::int64_t hi) {
    if (v < lo || v > hi)
      throw error(what + ": value " + std::to_string(v) + " out of range for " + std::string(to_string(d)));
  };
  std::byte* out = r.raw();
  for (std::size_t i = 0; i < count; ++i) {
    const int k = static_cast<int>(i);
    switch (d) {
      case dtype::f32: {
        float v = t.float_data(k);
        std::memcpy(out + 4 * i, &v, 4);
        break;
      }
      case dtype::complex64: {
        float v[2] = {t.float_data(2 * k), t.float_data(2 * k + 1)};
        std::memcpy(out + 8 * i, v, 8);
        break;
      }
      case dtype::f64: {
        double v = t.double_data(k);
        std::memcpy(out + 8 * i, &v, 8);
        break;
      }
      case dtype::complex128: {
        double v[2] = {t.double_data(2 * k), t.double_data(2 * k + 1)};
        std::memcpy(out + 16 * i, v, 16);
        break;
      }
      case dtype::int8: {
        std::int32_t v = t.int32_data(k);
        check_range(v, INT8_MIN, INT8_MAX);
        auto x = static_cast<std::int8_t>(v);
        std::memcpy(out + i, &x, 1);
        break;
      }
      case dtype::uint8: {
        std::int32_t v = t.int32_data(k);
        check_range(v, 0, UINT8_MAX);
        auto x = static_cast<std::uint8_t>(v);
        std::memcpy(out + i, &x, 1);
        break;
      }
      case dtype::bool_: {
        auto x = static_cast<std::uint8_t>(t.int32_data(k) != 0);
        std::memcpy(out + i, &x, 1);
        break;
      }
      case dtype::int16: {
        std::int32_t v = t.int32_data(k);
        check_range(v, INT16_MIN, INT16_MAX);
        auto x = static_cast<std::int16_t>(v);
        std::memcpy(out + 2 * i, &x, 2);
        break;
      }
      case dtype::uint16: case dtype::f16: case dtype::bf16: {
        std::int32_t v = t.int32_data(k);
        check_range(v, 0, UINT16_MAX);
        auto x = static_cast<std::uint16_t>(v);
        std::memcpy(out + 2 * i, &x, 2);
        break;
      }
      case dtype::int32: {
        std::int32_t v = t.int32_data(k);
        std::memcpy(out + 4 * i, &v, 4);
        break;
      }
      case dtype::int64: {
        std::int64_t v = t.int64_data(k);
        std::memcpy(out + 8 * i, &v, 8);
        break;
      }
      case dtype::uint32: {
        std::uint64_t v = t.uint64_data(k);
        if (v > UINT32_MAX) throw error(what + ": value " + std::to_string(v) + " out of range for u32");
        auto x = static_cast<std::uint32_t>(v);
        std::memcpy(out + 4 * i, &x, 4);
        break;
      }
      case dtype::uint64: {
        std::uint64_t v = t.uint64_data(k);
        std::memcpy(out + 8 * i, &v, 8);
        break;
      }
      default: break;
    }
  }
  return r;
}

/// Writes `t` as an ONNX tensor: numeric data as little-endian `raw_data`, strings as
/// `string_data`. The name is left to the caller.
inline void tensor_to_onnx(const tensor& t, onnx::TensorProto& out) {
  auto e = dtype_to_onnx(t.element_type());
  if (!e || *e == onnx::TensorProto::UNDEFINED)
    throw error("tensor of dtype " + std::string(to_string(t.element_type())) + " has no ONNX form");
  out.set_data_type(*e);
  for (auto s : t.sizes()) out.add_dims(s);
  if (t.element_type() == dtype::string) {
    for (const auto& s : t.values<std::string>()) out.add_string_data(s);
    return;
  }
  std::string* raw = out.mutable_raw_data();
  if (is_low_precision(t.element_type())) {  // packed as tensor_from_onnx reads it
    const int bits = static_cast<int>(bit_width(t.element_type()));
    const std::size_t per_byte = static_cast<std::size_t>(8 / bits), n = static_cast<std::size_t>(t.size());
    raw->assign((n + per_byte - 1) / per_byte, '\0');
    const auto* codes = reinterpret_cast<const std::uint8_t*>(t.raw());
    for (std::size_t i = 0; i < n; ++i)
      (*raw)[i / per_byte] = static_cast<char>(static_cast<unsigned char>((*raw)[i / per_byte]) |
                                               ((codes[i] & ((1u << bits) - 1)) << ((i % per_byte) * bits)));
    return;
  }
  raw->resize(t.nbytes());
  if (t.nbytes()) {
    copy_little_endian(reinterpret_cast<std::byte*>(raw->data()), t.raw(), t.nbytes(), t.element_type());
  }
}

/// Converts an ONNX sparse tensor to a dense gpass tensor (zeros, or empty strings, where
/// no value is given). Indices are int64, either `[NNZ]` (linear) or `[NNZ, rank]`.
inline tensor sparse_to_dense(const onnx::SparseTensorProto& s, const std::filesystem::path& external_dir = {}) {
  const std::string what =
      s.values().name().empty() ? std::string("sparse tensor") : "sparse tensor '" + s.values().name() + "'";
  tensor values = tensor_from_onnx(s.values(), external_dir);
  tensor indices = s.has_indices() ? tensor_from_onnx(s.indices(), external_dir) : tensor(dtype::int64, {0});
  const std::int64_t n = checked_count(s.dims(), what);
  if (values.rank() != 1) throw error(what + ": values must be a vector");
  const std::int64_t nnz = values.sizes()[0];
  if (is_trivial(values.element_type()) &&
      static_cast<std::uint64_t>(n) > (std::uint64_t{1} << 32) / size_of(values.element_type()))
    throw error(what + ": dense form would exceed 4 GiB");
  if (indices.element_type() != dtype::int64) throw error(what + ": indices must be int64");
  const std::size_t rank = static_cast<std::size_t>(s.dims_size());
  const bool linear = indices.rank() == 1;
  if (!(linear && indices.sizes()[0] == nnz) &&
      !(indices.rank() == 2 && indices.sizes()[0] == nnz && indices.sizes()[1] == static_cast<std::int64_t>(rank)))
    throw error(what + ": indices must be [NNZ] or [NNZ, rank]");
  tensor dense(values.element_type(), std::vector<std::int64_t>(s.dims().begin(), s.dims().end()));
  const std::int64_t* ix = indices.data<std::int64_t>();
  for (std::int64_t k = 0; k < nnz; ++k) {
    std::int64_t lin = 0;
    if (linear) lin = ix[k];
    else
      for (std::size_t j = 0; j < rank; ++j) {
        std::int64_t v = ix[static_cast<std::size_t>(k) * rank + j];
        if (v < 0 || v >= s.dims(static_cast<int>(j))) throw error(what + ": index out of range");
        lin = lin * s.dims(static_cast<int>(j)) + v;
      }
    if (lin < 0 || lin >= n) throw error(what + ": index " + std::to_string(lin) + " out of range");
    if (values.element_type() == dtype::string)
      dense.data<std::string>()[lin] = values.data<std::string>()[k];
    else {
      std::size_t es = size_of(values.element_type());
      std::memcpy(dense.raw() + static_cast<std::size_t>(lin) * es, values.raw() + static_cast<std::size_t>(k) * es, es);
    }
  }
  return dense;
}

}  // namespace gpass::detail::onnx_io
