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
