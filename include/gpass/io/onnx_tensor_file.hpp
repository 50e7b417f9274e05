// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file onnx_tensor_file.hpp
/// `gpass::read_onnx_tensor_file`, `gpass::write_onnx_tensor_file`,
/// `gpass::read_onnx_sequence_file`: ONNX `TensorProto` / `SequenceProto` files (`.pb`, as
/// in ONNX's backend test data `test_data_set_*/input_0.pb`) to and from host tensors.
///
/// Needs ONNX and protobuf (CMake target `gpass::onnx`).

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gpass/core/error.hpp>
#include <gpass/core/tensor.hpp>
#include <gpass/io/detail/file.hpp>
#include <gpass/io/detail/onnx_proto.hpp>
#include <gpass/io/detail/onnx_tensor.hpp>

#include <onnx/onnx-data_pb.h>  // SequenceProto, OptionalProto

namespace gpass {

namespace detail::onnx_io {
template <class Proto>
Proto parse_proto_file(const std::filesystem::path& p, const char* what) {
  Proto m;
  // (an empty message is a valid one here: an empty sequence, a tensor of defaults)
  const std::string bytes = gpass::detail::read_model_file(p, std::string("ONNX ") + what, true);
  if (!m.ParseFromString(bytes)) throw error("'" + p.string() + "' is not a valid ONNX " + what);
  return m;
}
}  // namespace detail::onnx_io

/// Reads a serialized `onnx.TensorProto`; malformed data is a `gpass::error` naming the file.
/// \code
///   gpass::tensor x = gpass::read_onnx_tensor_file("test_data_set_0/input_0.pb");
/// \endcode
inline tensor read_onnx_tensor_file(const std::filesystem::path& p) {
  auto t = detail::onnx_io::parse_proto_file<onnx::TensorProto>(p, "TensorProto");
  try {
    return detail::onnx_io::tensor_from_onnx(t, p.parent_path());
  } catch (const error& e) {
    throw error(p.string() + ": " + e.message(), e.context());
  }
}

/// Reads a serialized `onnx.SequenceProto` of tensors.
inline std::vector<tensor> read_onnx_sequence_file(const std::filesystem::path& p) {
  auto s = detail::onnx_io::parse_proto_file<onnx::SequenceProto>(p, "SequenceProto");
  if (s.elem_type() != onnx::SequenceProto::TENSOR && s.tensor_values_size() == 0 && s.elem_type() != 0)
    throw error(p.string() + ": only sequences of tensors are supported");
  std::vector<tensor> r;
  for (const auto& t : s.tensor_values()) r.push_back(detail::onnx_io::tensor_from_onnx(t, p.parent_path()));
  return r;
}

/// Writes `t` as a serialized `onnx.TensorProto` named `name` (numeric data as raw_data).
inline void write_onnx_tensor_file(const std::filesystem::path& p, const tensor& t, const std::string& name = {}) {
  onnx::TensorProto proto;
  detail::onnx_io::tensor_to_onnx(t, proto);
  if (!name.empty()) proto.set_name(name);
  std::ofstream out(p, std::ios::binary);
  if (!out || !proto.SerializeToOstream(&out)) throw error("cannot write '" + p.string() + "'");
}

}  // namespace gpass
