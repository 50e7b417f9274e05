// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file onnx.hpp
/// ONNX import and export: `gpass::import_onnx`, `gpass::read_onnx_file`,
/// `gpass::export_onnx`, `gpass::write_onnx_file` (see those headers for the mapping).
///
/// Needs ONNX and protobuf: link the CMake target `gpass::onnx` (compile definitions
/// `ONNX_ML=1 ONNX_NAMESPACE=onnx`; libraries `onnx onnx_proto protobuf`). Not included by
/// `gpass/all.hpp`.

#include <gpass/io/onnx_export.hpp>
#include <gpass/io/onnx_import.hpp>
