// SPDX-License-Identifier: Apache-2.0
// The CUDA kernels of tf_image.hpp (ResizeBilinear, ResizeNearestNeighbor, ResizeBicubic,
// ResizeArea, CropAndResize): which nodes the GPU serves (no GPU needed), each resize against the Eigen CPU
// kernel on a GPU (without one, the CPU side of each comparison runs), and the errors naming
// the node.

#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <gpass/exec/cuda.hpp>

#include "fixture.hpp"

namespace gpass_test_cuda_tf_image {

namespace {

using namespace gpass_test_cuda::prelude;

gpass::exec::kernel_node tf(std::string op, gpass::attribute_map attrs = {}) { return node(std::move(op), 1, std::move(attrs), 1, "tf"); }

tensor size_of(std::int32_t h, std::int32_t w) { return tensor::from<std::int32_t>({h, w}, {2}); }

const char* const resizes[] = {"ResizeBilinear", "ResizeNearestNeighbor", "ResizeBicubic", "ResizeArea"};

}  // namespace

TEST_CASE("cuda: the TensorFlow resizes the GPU serves") {
  for (const char* op : resizes) {
    CAPTURE(op);
    for (dtype t : {dtype::f32, dtype::f64, dtype::f16, dtype::uint8, dtype::int64})
      CHECK(gpass_test_cuda::serves_in("tf", op, {t, dtype::int32}));
    CHECK_FALSE(gpass_test_cuda::serves_in("tf", op, {dtype::string, dtype::int32}));
  }
  CHECK(gpass_test_cuda::serves_in("tf", "ResizeNearestNeighbor", {dtype::bool_, dtype::int32}));
  CHECK_FALSE(gpass_test_cuda::serves_in("tf", "ResizeBilinear", {dtype::bool_, dtype::int32}));
}

TEST_CASE("cuda: TensorFlow ResizeBilinear, ResizeNearestNeighbor, ResizeBicubic and ResizeArea match the CPU kernels") {
  GPASS_GPU_OR_CPU_SIDE();
  const auto img = rnd({2, 5, 7, 3}, 1);
  // up, down, mixed; one row out (align_corners' scale of 0 rows), to one pixel
  const std::pair<std::int32_t, std::int32_t> sizes[] = {{9, 12}, {3, 4}, {8, 3}, {1, 10}, {1, 1}, {5, 7}};
  const gpass::attribute_map modes[] = {{}, {{"align_corners", true}}, {{"half_pixel_centers", true}}};
  for (const char* op : resizes)
    for (const auto& [h, w] : sizes)
      for (const auto& m : modes) {
        if (std::string(op) == "ResizeArea" && m.count("half_pixel_centers")) continue;  // (ResizeArea has no such attribute)
        CAPTURE(op);
        CAPTURE(h);
        CAPTURE(w);
        CAPTURE(m.size());
        differential(tf(op, m), {img, size_of(h, w)}, 1e-5, 1e-5);
      }
  // other image types: read as float (the nearest one keeps the type)
  for (const char* op : resizes) {
    CAPTURE(op);
    differential(tf(op, {{"half_pixel_centers", std::string(op) != "ResizeArea"}}), {rnd({1, 4, 6, 2}, 2, dtype::uint8, 0, 255), size_of(7, 5)}, 1e-5, 1e-4);
    differential(tf(op), {rnd({1, 3, 3, 1}, 3, dtype::f64), size_of(5, 2)}, 1e-6, 1e-6);
    differential(tf(op), {rnd({2, 2, 3, 4}, 4, dtype::f16), size_of(4, 6)}, 1e-3, 1e-3);
    differential(tf(op), {rnd({1, 6, 4, 1}, 5, dtype::int64, -1000, 1000), size_of(3, 9)}, 1e-5, 1e-3);
  }
  differential(tf("ResizeNearestNeighbor"), {rnd({1, 3, 3, 2}, 6, dtype::bool_), size_of(5, 4)}, 0, 0);
  // no images: an empty output
  differential(tf("ResizeBilinear"), {tensor(dtype::f32, {0, 4, 4, 3}), size_of(2, 2)}, 0, 0);
}

TEST_CASE("cuda: TensorFlow CropAndResize matches the CPU kernel") {
  for (dtype t : {dtype::f32, dtype::f64, dtype::f16, dtype::uint8, dtype::int64})
    CHECK(gpass_test_cuda::serves_in("tf", "CropAndResize", {t, dtype::f32, dtype::int32, dtype::int32}));
  CHECK_FALSE(gpass_test_cuda::serves_in("tf", "CropAndResize", {dtype::string, dtype::f32, dtype::int32, dtype::int32}));
  GPASS_GPU_OR_CPU_SIDE();
  const auto img = rnd({3, 6, 8, 2}, 7);
  // inside, flipped (y2 < y1), reaching out of the image (the extrapolation value), the whole
  // image, a degenerate box; boxes on images 2, 0, 1, 2, 0
  const auto boxes = tensor::from<float>({0.1f, 0.2f, 0.8f, 0.9f, 0.9f, 0.7f, 0.2f, 0.1f, -0.3f, 0.5f, 1.4f, 1.2f,
                                          0, 0, 1, 1, 0.5f, 0.5f, 0.5f, 0.5f},
                                         {5, 4});
  const auto ind = tensor::from<std::int32_t>({2, 0, 1, 2, 0}, {5});
  const std::pair<std::int32_t, std::int32_t> crops[] = {{4, 5}, {1, 1}, {7, 3}, {1, 6}};
  for (const char* method : {"bilinear", "nearest"})
    for (const auto& [h, w] : crops) {
      CAPTURE(method);
      CAPTURE(h);
      CAPTURE(w);
      const gpass::attribute_map a{{"method", std::string(method)}, {"extrapolation_value", 0.25}};
      differential(tf("CropAndResize", a), {img, boxes, ind, size_of(h, w)}, 0, 0);
    }
  // other image types, read as float
  const auto two = tensor::from<float>({0.1f, 0.2f, 0.8f, 0.9f, 1.0f, 0.0f, 0.0f, 1.0f}, {2, 4});
  const auto at = tensor::from<std::int32_t>({0, 1}, {2});
  differential(tf("CropAndResize"), {rnd({2, 5, 4, 3}, 8, dtype::uint8, 0, 255), two, at, size_of(6, 3)}, 0, 0);
  differential(tf("CropAndResize"), {rnd({2, 5, 4, 3}, 9, dtype::f64), two, at, size_of(3, 3)}, 0, 0);
  differential(tf("CropAndResize"), {rnd({2, 5, 4, 3}, 10, dtype::f16), two, at, size_of(2, 5)}, 0, 0);
  differential(tf("CropAndResize", {{"method", std::string("nearest")}}), {rnd({2, 3, 3, 1}, 11, dtype::int64, -9, 9), two, at, size_of(4, 4)}, 0, 0);
  // no boxes: no crops
  differential(tf("CropAndResize"), {img, tensor(dtype::f32, {0, 4}), tensor(dtype::int32, {0}), size_of(2, 2)}, 0, 0);
}

TEST_CASE("cuda: the TensorFlow resizes fail as the CPU's do, naming the node") {
  const auto fails = gpass_test_cuda::fails_alike;
  const auto img = rnd({1, 4, 4, 1}, 1);
  fails(tf("ResizeBilinear", {{"align_corners", true}, {"half_pixel_centers", true}}), {img, size_of(2, 2)}, "cannot both be true");
  fails(tf("ResizeBicubic"), {rnd({4, 4, 1}, 2), size_of(2, 2)}, "images must be 4-D");
  fails(tf("ResizeArea"), {img, size_of(0, 2)}, "size must be 2 positive values");
  fails(tf("ResizeNearestNeighbor"), {tensor(dtype::f32, {1, 0, 4, 1}), size_of(2, 2)}, "cannot resize an empty image");
  const auto box = tensor::from<float>({0, 0, 1, 1}, {1, 4});
  const auto zero = tensor::from<std::int32_t>({0}, {1});
  fails(tf("CropAndResize"), {img, box, tensor::from<std::int32_t>({1}, {1}), size_of(2, 2)}, "box_ind has values outside [0, batch_size)");
  fails(tf("CropAndResize"), {img, tensor::from<float>({0, std::numeric_limits<float>::quiet_NaN(), 1, 1}, {1, 4}), zero, size_of(2, 2)},
        "not finite");
  fails(tf("CropAndResize"), {img, box, zero, size_of(0, 2)}, "crop dimensions must be positive");
  fails(tf("CropAndResize"), {img, tensor::from<float>({0, 0, 1}, {1, 3}), zero, size_of(2, 2)}, "boxes must have 4 columns");
  fails(tf("CropAndResize"), {img, box, tensor::from<std::int32_t>({0, 0}, {2}), size_of(2, 2)}, "box_ind has 2 elements for 1 boxes");
  fails(tf("CropAndResize"), {img, box, zero, tensor::from<std::int32_t>({2, 2, 2}, {3})}, "crop_size must be 1-D with two elements");
  fails(tf("CropAndResize", {{"method", std::string("bicubic")}}), {img, box, zero, size_of(2, 2)}, "method must be 'bilinear' or 'nearest'");
}

}  // namespace gpass_test_cuda_tf_image
