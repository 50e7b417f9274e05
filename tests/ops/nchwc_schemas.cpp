// SPDX-License-Identifier: Apache-2.0
// Shape functions of gpass's channel-blocked ops (ops/onnx/nchwc.hpp), through type inference
// with the default registry (register_onnx_ops registers them).

#include <doctest/doctest.h>

#include <string>
#include <string_view>

#include <gpass/analysis/type_inference.hpp>
#include <gpass/io/text.hpp>
#include <gpass/ops/registry.hpp>

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_ops_nchwc_schemas {

namespace {

/// The type of node `y` after inference of `body` (node lines; `%x`, `%w` args as given).
std::string y_of(std::string_view body) {
  auto g = gpass::parse_text("graph {\n" + std::string(body) + "\n%r:0 = return(%y)\n}\n");
  gpass::type_inference<gpass::graph<>> ti(g, gpass::type_inference_options{});
  ti.run();
  return ti.port(g.at("y"), 0).type.to_string();
}

std::string error_of(std::string_view body) {
  try {
    return "no error: " + y_of(body);
  } catch (const gpass::error& e) {
    return e.what();
  }
}

}  // namespace

TEST_CASE("ops.nchwc.reorders") {
  CHECK(y_of("%x = arg() {index = 0} -> (f32[n,20,7,9])\n%y = gpass::NchwcReorderInput(%x) {block = 8}") == "f32[n,3,7,9,8]");
  CHECK(y_of("%x = arg() {index = 0} -> (f32[1,16,7,9])\n%y = gpass::NchwcReorderInput(%x) {block = 16}") == "f32[1,1,7,9,16]");
  CHECK(y_of("%x = arg() {index = 0} -> (f32[n,3,7,9,8])\n%y = gpass::NchwcReorderOutput(%x) {channels = 20}") ==
        "f32[n,20,7,9]");
  CHECK(error_of("%x = arg() {index = 0} -> (f32[1,20,7,9])\n%y = gpass::NchwcReorderInput(%x) {block = 4}")
            .find("block must be 8 or 16") != std::string::npos);
  CHECK(error_of("%x = arg() {index = 0} -> (f32[1,2,5,5,8])\n%y = gpass::NchwcReorderOutput(%x) {channels = 17}")
            .find("channel blocks") != std::string::npos);
  CHECK(error_of("%x = arg() {index = 0} -> (f32[1,2,5,5])\n%y = gpass::NchwcReorderOutput(%x) {channels = 16}")
            .find("rank 5") != std::string::npos);
}

TEST_CASE("ops.nchwc.conv") {
  // blocked input: 20 channels in 3 blocks of 8; 24 outputs, 3x3 over 7x9, stride 2, pad 1
  CHECK(y_of("%x = arg() {index = 0} -> (f32[n,3,7,9,8])\n%w = arg() {index = 1} -> (f32[24,20,3,3])\n"
             "%y = gpass::NchwcConv(%x, %w) {block = 8, pads = [1, 1, 1, 1], strides = [2, 2]}") == "f32[n,3,4,5,8]");
  // NCHW input (a stem): 3 channels as they are, 32 outputs in 2 blocks of 16
  CHECK(y_of("%x = arg() {index = 0} -> (f32[1,3,224,224])\n%w = arg() {index = 1} -> (f32[32,3,3,3])\n"
             "%y = gpass::NchwcConv(%x, %w) {block = 16, pads = [1, 1, 1, 1], strides = [2, 2]}") == "f32[1,2,112,112,16]");
  // depthwise: group = channels
  CHECK(y_of("%x = arg() {index = 0} -> (f32[1,3,14,14,16])\n%w = arg() {index = 1} -> (f32[40,1,3,3])\n"
             "%y = gpass::NchwcConv(%x, %w) {block = 16, group = 40, pads = [1, 1, 1, 1]}") == "f32[1,3,14,14,16]");
  // the input's blocks are not the filter's channels
  CHECK(error_of("%x = arg() {index = 0} -> (f32[1,2,7,7,8])\n%w = arg() {index = 1} -> (f32[8,24,3,3])\n"
                 "%y = gpass::NchwcConv(%x, %w) {block = 8}")
            .find("input channels") != std::string::npos);
  // a blocked input of another block size
  CHECK(error_of("%x = arg() {index = 0} -> (f32[1,2,7,7,16])\n%w = arg() {index = 1} -> (f32[8,16,3,3])\n"
                 "%y = gpass::NchwcConv(%x, %w) {block = 8}")
            .find("block") != std::string::npos);
  // block is required
  CHECK(error_of("%x = arg() {index = 0} -> (f32[1,2,7,7,8])\n%w = arg() {index = 1} -> (f32[8,16,3,3])\n"
                 "%y = gpass::NchwcConv(%x, %w)")
            .find("block") != std::string::npos);
}

TEST_CASE("ops.nchwc.pools") {
  CHECK(y_of("%x = arg() {index = 0} -> (f32[n,4,56,56,16])\n"
             "%y = gpass::NchwcMaxPool(%x) {block = 16, kernel_shape = [3, 3], pads = [1, 1, 1, 1], strides = [2, 2]}") ==
        "f32[n,4,28,28,16]");
  CHECK(y_of("%x = arg() {index = 0} -> (f32[1,4,7,7,8])\n"
             "%y = gpass::NchwcAveragePool(%x) {block = 8, kernel_shape = [2, 2], strides = [2, 2], ceil_mode = 1}") ==
        "f32[1,4,4,4,8]");
  CHECK(y_of("%x = arg() {index = 0} -> (f32[n,128,7,7,16])\n%y = gpass::NchwcGlobalAveragePool(%x) {block = 16}") ==
        "f32[n,128,1,1,16]");
  CHECK(y_of("%x = arg() {index = 0} -> (f32[1,2,7,7,8])\n%y = gpass::NchwcGlobalMaxPool(%x) {block = 8}") ==
        "f32[1,2,1,1,8]");
  CHECK(error_of("%x = arg() {index = 0} -> (f32[1,16,7,7])\n%y = gpass::NchwcGlobalMaxPool(%x) {block = 8}")
            .find("rank 5") != std::string::npos);
}

}  // namespace gpass_test_ops_nchwc_schemas
