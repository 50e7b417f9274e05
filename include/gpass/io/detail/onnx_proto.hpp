// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file onnx_proto.hpp
/// Private: includes the ONNX protobuf classes (`onnx::ModelProto`, ...) for the ONNX importer
/// and exporter, and checks that the compile definitions ONNX needs are set.
///
/// Only `gpass/io/onnx*.hpp` include this header (never `gpass/all.hpp`). A program that uses
/// them links the CMake target `gpass::onnx`, which brings `ONNX_ML=1`, `ONNX_NAMESPACE=onnx`,
/// libonnx, libonnx_proto and libprotobuf.

#if !defined(ONNX_NAMESPACE)
#error "gpass/io/onnx*.hpp need the compile definitions ONNX_NAMESPACE=onnx and ONNX_ML=1 (link gpass::onnx)"
#endif
#if !defined(ONNX_ML) && !__has_include(<onnx/onnx.pb.h>)
#error "this ONNX installation only has the ONNX-ML protos: define ONNX_ML=1 (link gpass::onnx)"
#endif

#include <onnx/onnx_pb.h>

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>
#include <google/protobuf/unknown_field_set.h>

#include <string>
#include <vector>

namespace gpass::detail::onnx_io {

/// The values of field `number` of `m` as bytes (strings as they are, messages serialized),
/// whether the ONNX the build links knows the field or keeps it as an unknown field (fields
/// newer than Debian's onnx 1.12: FunctionProto.attribute_proto (11), value_info (12),
/// overload (13), NodeProto.overload (8)).
inline std::vector<std::string> field_bytes(const google::protobuf::Message& m, int number) {
  std::vector<std::string> r;
  const auto* refl = m.GetReflection();
  if (const auto* f = m.GetDescriptor()->FindFieldByNumber(number)) {
    using FD = google::protobuf::FieldDescriptor;
    if (f->is_repeated()) {
      for (int i = 0; i < refl->FieldSize(m, f); ++i)
        r.push_back(f->cpp_type() == FD::CPPTYPE_MESSAGE ? refl->GetRepeatedMessage(m, f, i).SerializeAsString()
                                                         : refl->GetRepeatedString(m, f, i));
    } else if (refl->HasField(m, f)) {
      r.push_back(f->cpp_type() == FD::CPPTYPE_MESSAGE ? refl->GetMessage(m, f).SerializeAsString() : refl->GetString(m, f));
    }
    return r;
  }
  const auto& u = refl->GetUnknownFields(m);
  for (int i = 0; i < u.field_count(); ++i)
    if (u.field(i).number() == number && u.field(i).type() == google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED)
      r.push_back(u.field(i).length_delimited());
  return r;
}

/// A string field of `m` by number ("" when absent; see `field_bytes`).
inline std::string string_field(const google::protobuf::Message& m, int number) {
  auto v = field_bytes(m, number);
  return v.empty() ? std::string() : v.back();
}

}  // namespace gpass::detail::onnx_io
