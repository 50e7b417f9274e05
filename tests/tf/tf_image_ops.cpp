// SPDX-License-Identifier: Apache-2.0
// The TensorFlow image ops (ops/tf/image.hpp, exec/eigen_cpu/kernels/tf_image.hpp) on
// hand-written graphs: shapes from known max_output_size / crop_size / window attributes, the
// errors of bad ranks, sizes, thresholds and indices (at inference, and in the kernels when
// the values are fed), TensorFlow's tie order in NMS, its crop of size 1 and its patch order.
// Their values against TensorFlow are checked by the fixture tests/data/tf/image_ops
// (tests/tf/frontend_fixtures.cpp).

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <gpass/exec/eigen_cpu.hpp>
#include <gpass/exec/plan.hpp>
#include <gpass/io/text.hpp>
#include <gpass/passes/common/infer_shapes.hpp>

#include "text_graphs.hpp"

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_tf_image_ops {

namespace {

using G = gpass::graph<>;
namespace ex = gpass::exec;
using gpass_test::tf_text::infer;
using gpass_test::tf_text::out_of;
using gpass_test::tf_text::run;

void infer_fails(const std::string& body, const char* what) {
  CHECK_THROWS_WITH_AS(infer(body), doctest::Contains(what), gpass::error);
}

template <class T>
std::vector<T> values(const ex::value& v) {
  const auto s = v.tensor().values<T>();
  return std::vector<T>(s.begin(), s.end());
}

gpass::tensor floats(std::vector<float> v, std::vector<std::int64_t> sizes) {
  return gpass::tensor::from<float>(std::move(v), std::move(sizes));
}

gpass::tensor i32(std::vector<std::int32_t> v, std::vector<std::int64_t> sizes) {
  return gpass::tensor::from<std::int32_t>(std::move(v), std::move(sizes));
}

std::string cst(const char* name, const char* type, const std::string& value) {
  return "%" + std::string(name) + " = tf::Const() {dtype = " + type + ", value = tensor<" + type + "[]> [" + value +
         "]}\n";
}

const std::string nms_args = "%b = arg() {index = 0} -> (f32[n,4])\n%s = arg() {index = 1} -> (f32[n])\n";

// boxes (four: 0 and 1 overlap with IoU 0.818, 2 is 0 flipped and shifted, 3 far away) and
// scores with a tie between 0 and 3
gpass::tensor nms_boxes() {
  return floats({0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 1, 10.1f, 0, 11.1f, 0, 10, 1, 11}, {4, 4});
}

}  // namespace

TEST_CASE("tf.image.shapes") {
  CHECK(out_of(nms_args + cst("m", "i32", "5") + "%y = tf::NonMaxSuppression(%b, %s, %m) {iou_threshold = 0.5}") ==
        "i32[y_selected]");
  const std::string thr = cst("m", "i32", "6") + cst("t", "f32", "0.5") + cst("u", "f32", "0.1");
  CHECK(out_of(nms_args + thr + "%y:2 = tf::NonMaxSuppressionV4(%b, %s, %m, %t, %u) {T = f32, T_threshold = f32, "
                                "pad_to_max_output_size = true}") == "i32[6]");
  CHECK(out_of(nms_args + thr + "%y:3 = tf::NonMaxSuppressionV5(%b, %s, %m, %t, %u, %u) {T = f32}", "y", 1) ==
        "f32[y_selected]");
  CHECK(out_of(nms_args + thr + "%y:3 = tf::NonMaxSuppressionV5(%b, %s, %m, %t, %u, %u) {T = f32}", "y", 2) ==
        "i32[]");
  const std::string crop = "%i = arg() {index = 0} -> (u8[b,9,9,3])\n%x = arg() {index = 1} -> (f32[n,4])\n"
                           "%k = arg() {index = 2} -> (i32[n])\n"
                           "%c = tf::Const() {dtype = i32, value = tensor<i32[2]> [4, 1]}\n";
  CHECK(out_of(crop + "%y = tf::CropAndResize(%i, %x, %k, %c) {T = u8}") == "f32[n,4,1,3]");
  const std::string img = "%x = arg() {index = 0} -> (f32[b,7,8,3])\n";
  CHECK(out_of(img + "%y = tf::ExtractImagePatches(%x) {T = f32, ksizes = [1, 3, 2, 1], strides = [1, 2, 3, 1], "
                     "rates = [1, 1, 1, 1], padding = \"SAME\"}") == "f32[b,4,3,18]");
  CHECK(out_of(img + "%y = tf::ExtractImagePatches(%x) {T = f32, ksizes = [1, 2, 3, 1], strides = [1, 1, 2, 1], "
                     "rates = [1, 2, 2, 1], padding = \"VALID\"}") == "f32[b,5,2,18]");
  CHECK(out_of(img + cst("d", "f32", "0.25") + "%y = tf::AdjustHue(%x, %d) {T = f32}") == "f32[b,7,8,3]");
  CHECK(out_of(img + "%y = tf::RGBToHSV(%x) {T = f32}") == "f32[b,7,8,3]");

  // bad ranks, sizes, thresholds and attributes, when known, fail at inference
  infer_fails("%b = arg() {index = 0} -> (f32[3,5])\n%s = arg() {index = 1} -> (f32[3])\n" + cst("m", "i32", "2") +
                  "%y = tf::NonMaxSuppression(%b, %s, %m)",
              "boxes' dim 1");
  infer_fails("%b = arg() {index = 0} -> (f32[3,4])\n%s = arg() {index = 1} -> (f32[2])\n" + cst("m", "i32", "2") +
                  "%y = tf::NonMaxSuppression(%b, %s, %m)",
              "incompatible dims");
  infer_fails(nms_args + cst("m", "i32", "-1") + "%y = tf::NonMaxSuppression(%b, %s, %m)", "non-negative");
  infer_fails(nms_args + cst("m", "i32", "2") + "%y = tf::NonMaxSuppression(%b, %s, %m) {iou_threshold = 1.5}",
              "iou_threshold must be in [0, 1]");
  infer_fails(nms_args + thr + cst("g", "f32", "-1.0") +
                  "%y:3 = tf::NonMaxSuppressionV5(%b, %s, %m, %t, %u, %g) {T = f32}",
              "soft_nms_sigma must be >= 0");
  infer_fails("%i = arg() {index = 0} -> (f32[1,4,4])\n%x = arg() {index = 1} -> (f32[n,4])\n"
              "%k = arg() {index = 2} -> (i32[n])\n%c = tf::Const() {dtype = i32, value = tensor<i32[2]> [2, 2]}\n"
              "%y = tf::CropAndResize(%i, %x, %k, %c) {T = f32}",
              "image must have rank 4");
  infer_fails("%i = arg() {index = 0} -> (f32[1,4,4,1])\n%x = arg() {index = 1} -> (f32[n,4])\n"
              "%k = arg() {index = 2} -> (i32[n])\n%c = tf::Const() {dtype = i32, value = tensor<i32[2]> [0, 2]}\n"
              "%y = tf::CropAndResize(%i, %x, %k, %c) {T = f32}",
              "crop dimensions must be positive");
  infer_fails("%i = arg() {index = 0} -> (f32[1,4,4,1])\n%x = arg() {index = 1} -> (f32[n,4])\n"
              "%k = arg() {index = 2} -> (i32[n])\n%c = tf::Const() {dtype = i32, value = tensor<i32[2]> [2, 2]}\n"
              "%y = tf::CropAndResize(%i, %x, %k, %c) {T = f32, method = \"cubic\"}",
              "method must be");
  infer_fails(img + "%y = tf::ExtractImagePatches(%x) {T = f32, ksizes = [1, 3, 1], strides = [1, 1, 1, 1], "
                    "rates = [1, 1, 1, 1], padding = \"SAME\"}",
              "ksizes must have 4 values");
  infer_fails(img + "%y = tf::ExtractImagePatches(%x) {T = f32, ksizes = [1, 3, 3, 1], strides = [1, 1, 1, 1], "
                    "rates = [1, 4, 1, 1], padding = \"VALID\"}",
              "would be negative");
  infer_fails(img + "%y = tf::ExtractImagePatches(%x) {T = f32, ksizes = [1, 3, 3, 1], strides = [1, 0, 1, 1], "
                    "rates = [1, 1, 1, 1], padding = \"VALID\"}",
              "strides must be positive");
  infer_fails("%x = arg() {index = 0} -> (f32[2,2,4])\n" + cst("d", "f32", "0.25") +
                  "%y = tf::AdjustSaturation(%x, %d) {T = f32}",
              "its channels");
  infer_fails("%x = arg() {index = 0} -> (f32[2,2])\n" + cst("d", "f32", "0.25") +
                  "%y = tf::AdjustContrastv2(%x, %d) {T = f32}",
              "rank >= 3");
  infer_fails("%x = arg() {index = 0} -> (f32[5,2])\n%y = tf::HSVToRGB(%x) {T = f32}", "last dim");
}

TEST_CASE("tf.image.combined_nms_shapes") {
  const std::string args = "%b = arg() {index = 0} -> (f32[n,8,1,4])\n%s = arg() {index = 1} -> (f32[n,8,3])\n" +
                           cst("p", "i32", "4") + cst("m", "i32", "20") + cst("t", "f32", "0.5");
  CHECK(out_of(args + "%y:4 = tf::CombinedNonMaxSuppression(%b, %s, %p, %m, %t, %t)", "y", 0) == "f32[n,20,4]");
  CHECK(out_of(args + "%y:4 = tf::CombinedNonMaxSuppression(%b, %s, %p, %m, %t, %t) {pad_per_class = true}", "y", 1) ==
        "f32[n,12]");
  CHECK(out_of(args + "%y:4 = tf::CombinedNonMaxSuppression(%b, %s, %p, %m, %t, %t)", "y", 3) == "i32[n]");
  infer_fails("%b = arg() {index = 0} -> (f32[2,8,2,4])\n%s = arg() {index = 1} -> (f32[2,8,3])\n" + cst("p", "i32", "4") +
                  cst("m", "i32", "20") + cst("t", "f32", "0.5") + "%y:4 = tf::CombinedNonMaxSuppression(%b, %s, %p, %m, %t, %t)",
              "either 1 or num classes");
  infer_fails("%b = arg() {index = 0} -> (f32[2,8,1,4])\n%s = arg() {index = 1} -> (f32[2,8,3])\n" + cst("p", "i32", "4") +
                  cst("m", "i32", "0") + cst("t", "f32", "0.5") + "%y:4 = tf::CombinedNonMaxSuppression(%b, %s, %p, %m, %t, %t)",
              "max_total_size must be > 0");
}

TEST_CASE("tf.image.kernel_errors") {
  const std::string nms = "  %b = arg() {index = 0} -> (f32[*])\n  %s = arg() {index = 1} -> (f32[*])\n"
                          "  %m = arg() {index = 2} -> (i32[*])\n  %t = arg() {index = 3} -> (f32[*])\n"
                          "  %y:2 = tf::NonMaxSuppressionV4(%b, %s, %m, %t, %t) {T = f32, T_threshold = f32}\n"
                          "  %r:0 = return(%y:0)\n";
  const auto s4 = floats({0.9f, 0.8f, 0.7f, 0.9f}, {4});
  const auto half = floats({0.5f}, {});
  CHECK_THROWS_WITH_AS(run(nms, {nms_boxes(), s4, i32({-1}, {}), half}), doctest::Contains("non-negative"),
                       gpass::error);
  CHECK_THROWS_WITH_AS(run(nms, {nms_boxes(), s4, i32({2}, {1}), half}),
                       doctest::Contains("max_output_size must be 0-D"), gpass::error);
  CHECK_THROWS_WITH_AS(run(nms, {nms_boxes(), s4, i32({2}, {}), floats({1.5f}, {})}),
                       doctest::Contains("iou_threshold must be in [0, 1]"), gpass::error);
  CHECK_THROWS_WITH_AS(run(nms, {nms_boxes(), floats({1, 2, 3}, {3}), i32({2}, {}), half}),
                       doctest::Contains("scores has 3 elements for 4 boxes"), gpass::error);
  CHECK_THROWS_WITH_AS(run(nms, {floats({1, 2, 3}, {1, 3}), floats({1}, {1}), i32({2}, {}), half}),
                       doctest::Contains("4 columns"), gpass::error);
  CHECK_THROWS_WITH_AS(run(nms, {floats({1, 2, 3, 4}, {4}), s4, i32({2}, {}), half}),
                       doctest::Contains("boxes must be 2-D"), gpass::error);

  // CombinedNonMaxSuppression: bad sizes, counts and thresholds, when fed
  const std::string cnms = "  %b = arg() {index = 0} -> (f32[*])\n  %s = arg() {index = 1} -> (f32[*])\n"
                           "  %p = arg() {index = 2} -> (i32[*])\n  %m = arg() {index = 3} -> (i32[*])\n"
                           "  %t = arg() {index = 4} -> (f32[*])\n"
                           "  %y:4 = tf::CombinedNonMaxSuppression(%b, %s, %p, %m, %t, %t)\n  %r:0 = return(%y:3)\n";
  const gpass::tensor b1(gpass::dtype::f32, {1, 3, 1, 4}), b2(gpass::dtype::f32, {1, 3, 2, 4}), sc(gpass::dtype::f32, {1, 3, 3});
  CHECK_THROWS_WITH_AS(run(cnms, {b2, sc, i32({2}, {}), i32({4}, {}), half}),
                       doctest::Contains("third dimension of boxes must be either 1 or num classes"), gpass::error);
  CHECK_THROWS_WITH_AS(run(cnms, {b1, sc, i32({0}, {}), i32({4}, {}), half}), doctest::Contains("max_size_per_class must be > 0"),
                       gpass::error);
  CHECK_THROWS_WITH_AS(run(cnms, {b1, sc, i32({2}, {}), i32({0}, {}), half}), doctest::Contains("max_total_size must be > 0"),
                       gpass::error);
  CHECK_THROWS_WITH_AS(run(cnms, {b1, sc, i32({2}, {}), i32({4}, {}), floats({-0.5f}, {})}),
                       doctest::Contains("iou_threshold must be in [0, 1]"), gpass::error);
  CHECK_THROWS_WITH_AS(run(cnms, {b1, gpass::tensor(gpass::dtype::f32, {1, 4, 3}), i32({2}, {}), i32({4}, {}), half}),
                       doctest::Contains("must be [batch, num_boxes, num_classes]"), gpass::error);
  // three identical boxes: one detection per class; the ties between classes go to the lower class first
  const auto same = floats({0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1}, {1, 3, 1, 4});
  const auto tied = floats({0.5f, 0.5f, 0.1f, 0.4f, 0.3f, 0.2f, 0.3f, 0.2f, 0.9f}, {1, 3, 3});
  const std::string all = "  %b = arg() {index = 0} -> (f32[*])\n  %s = arg() {index = 1} -> (f32[*])\n"
                          "  %p = tf::Const() {dtype = i32, value = tensor<i32[]> [3]}\n"
                          "  %m = tf::Const() {dtype = i32, value = tensor<i32[]> [5]}\n"
                          "  %t = tf::Const() {dtype = f32, value = tensor<f32[]> [0.5]}\n"
                          "  %z = tf::Const() {dtype = f32, value = tensor<f32[]> [0.0]}\n"
                          "  %y:4 = tf::CombinedNonMaxSuppression(%b, %s, %p, %m, %t, %z)\n"
                          "  %r:0 = return(%y:1, %y:2, %y:3)\n";
  const auto got = run(all, {same, tied});
  CHECK(values<float>(got.at(0)) == std::vector<float>{0.9f, 0.5f, 0.5f, 0, 0});
  CHECK(values<float>(got.at(1)) == std::vector<float>{2, 0, 1, 0, 0});
  CHECK(values<std::int32_t>(got.at(2)) == std::vector<std::int32_t>{3});

  const std::string crop = "  %i = arg() {index = 0} -> (f32[*])\n  %x = arg() {index = 1} -> (f32[*])\n"
                           "  %k = arg() {index = 2} -> (i32[*])\n  %c = arg() {index = 3} -> (i32[*])\n"
                           "  %y = tf::CropAndResize(%i, %x, %k, %c) {T = f32}\n  %r:0 = return(%y)\n";
  const auto image = gpass::tensor(gpass::dtype::f32, {2, 3, 3, 1});
  const auto box = floats({0, 0, 1, 1}, {1, 4});
  CHECK_THROWS_WITH_AS(run(crop, {image, box, i32({2}, {1}), i32({2, 2}, {2})}),
                       doctest::Contains("box_ind has values outside [0, batch_size)"), gpass::error);
  CHECK_THROWS_WITH_AS(run(crop, {image, box, i32({-1}, {1}), i32({2, 2}, {2})}),
                       doctest::Contains("outside [0, batch_size)"), gpass::error);
  CHECK_THROWS_WITH_AS(run(crop, {image, box, i32({0}, {1}), i32({2, -3}, {2})}),
                       doctest::Contains("crop dimensions must be positive"), gpass::error);
  CHECK_THROWS_WITH_AS(run(crop, {image, box, i32({0}, {1}), i32({2, 2, 2}, {3})}),
                       doctest::Contains("two elements"), gpass::error);
  CHECK_THROWS_WITH_AS(run(crop, {image, floats({0, 0, 1, 1}, {4}), i32({0}, {1}), i32({2, 2}, {2})}),
                       doctest::Contains("boxes must be 2-D"), gpass::error);
  CHECK_THROWS_WITH_AS(run(crop, {image, box, i32({0, 1}, {2}), i32({2, 2}, {2})}),
                       doctest::Contains("box_ind has 2 elements for 1 boxes"), gpass::error);
  CHECK_THROWS_WITH_AS(run(crop, {image, floats({0, 0, 1, 1e30f * 1e30f}, {1, 4}), i32({0}, {1}), i32({2, 2}, {2})}),
                       doctest::Contains("not finite"), gpass::error);
  CHECK_THROWS_WITH_AS(run(crop, {gpass::tensor(gpass::dtype::f32, {2, 0, 3, 1}), box, i32({0}, {1}),
                                  i32({2, 2}, {2})}),
                       doctest::Contains("image dimensions must be positive"), gpass::error);

  const std::string hue = "  %x = arg() {index = 0} -> (f32[*])\n  %d = arg() {index = 1} -> (f32[*])\n"
                          "  %y = tf::AdjustHue(%x, %d) {T = f32}\n  %r:0 = return(%y)\n";
  CHECK_THROWS_WITH_AS(run(hue, {gpass::tensor(gpass::dtype::f32, {2, 2, 4}), half}),
                       doctest::Contains("3 channels"), gpass::error);
  CHECK_THROWS_WITH_AS(run(hue, {gpass::tensor(gpass::dtype::f32, {2, 3}), half}),
                       doctest::Contains("at least 3-D"), gpass::error);
  CHECK_THROWS_WITH_AS(run(hue, {gpass::tensor(gpass::dtype::f32, {2, 2, 3}), floats({1, 2}, {2})}),
                       doctest::Contains("delta must be scalar"), gpass::error);
  CHECK_THROWS_WITH_AS(run("  %x = arg() {index = 0} -> (f32[*])\n  %y = tf::RGBToHSV(%x) {T = f32}\n"
                           "  %r:0 = return(%y)\n",
                           {gpass::tensor(gpass::dtype::f32, {4, 2})}),
                       doctest::Contains("3 channels"), gpass::error);
  CHECK_THROWS_WITH_AS(run("  %x = arg() {index = 0} -> (f32[*])\n"
                           "  %y = tf::ExtractImagePatches(%x) {T = f32, ksizes = [1, 2, 2, 1], "
                           "strides = [1, 1, 1, 1], rates = [1, 1, 1, 1], padding = \"VALID\"}\n  %r:0 = return(%y)\n",
                           {gpass::tensor(gpass::dtype::f32, {3, 3, 1})}),
                       doctest::Contains("4-dimensional"), gpass::error);
}

TEST_CASE("tf.image.values") {
  // NMS: the tie between boxes 0 and 3 goes to the lower index; box 1 overlaps 0 (IoU 0.82),
  // box 2 (flipped corners) overlaps 3; V4 pads with zeros and counts the valid ones
  const std::string nms = "  %b = arg() {index = 0} -> (f32[*])\n  %s = arg() {index = 1} -> (f32[*])\n" +
                          std::string("  ") + cst("m", "i32", "3") + "  " + cst("t", "f32", "0.5") +
                          "  %y:2 = tf::NonMaxSuppressionV4(%b, %s, %m, %t, %t) {T = f32, T_threshold = f32, "
                          "pad_to_max_output_size = true}\n"
                          "  %r:0 = return(%y:0, %y:1)\n";
  const auto out = run(nms, {nms_boxes(), floats({0.9f, 0.8f, 0.7f, 0.9f}, {4})});
  CHECK(values<std::int32_t>(out.at(0)) == std::vector<std::int32_t>{0, 3, 0});
  CHECK(values<std::int32_t>(out.at(1)) == std::vector<std::int32_t>{2});

  // CropAndResize with a crop of 1 row samples the box's centre row; a box reaching outside
  // the image gets the extrapolation value there
  std::vector<float> px(16);
  for (int i = 0; i < 16; ++i) px[static_cast<std::size_t>(i)] = static_cast<float>(i);
  const auto crop = run("  %i = arg() {index = 0} -> (f32[*])\n  %x = arg() {index = 1} -> (f32[*])\n"
                        "  %k = tf::Const() {dtype = i32, value = tensor<i32[1]> [0]}\n"
                        "  %c = tf::Const() {dtype = i32, value = tensor<i32[2]> [1, 3]}\n"
                        "  %y = tf::CropAndResize(%i, %x, %k, %c) {T = f32, extrapolation_value = -1.0}\n"
                        "  %r:0 = return(%y)\n",
                        {floats(px, {1, 4, 4, 1}), floats({0, 0, 1, 1.5f}, {1, 4})});
  // centre row 1.5 (between rows 1 and 2), columns 0, 2.25 and 4.5 (outside)
  CHECK(values<float>(crop.at(0)) == std::vector<float>{6, 8.25f, -1});

  // ExtractImagePatches: depth in (row, column, channel) order
  std::vector<float> v(18);
  for (int i = 0; i < 18; ++i) v[static_cast<std::size_t>(i)] = static_cast<float>(i);
  const auto patches = run("  %x = arg() {index = 0} -> (f32[*])\n"
                           "  %y = tf::ExtractImagePatches(%x) {T = f32, ksizes = [1, 2, 2, 1], "
                           "strides = [1, 2, 2, 1], rates = [1, 1, 1, 1], padding = \"SAME\"}\n  %r:0 = return(%y)\n",
                           {floats(v, {1, 3, 3, 2})});
  CHECK(patches.at(0).tensor().sizes() == std::vector<std::int64_t>{1, 2, 2, 8});
  CHECK(values<float>(patches.at(0)) ==
        std::vector<float>{0, 1, 2, 3, 6, 7, 8, 9, 4, 5, 0, 0, 10, 11, 0, 0,
                           12, 13, 14, 15, 0, 0, 0, 0, 16, 17, 0, 0, 0, 0, 0, 0});
}

}  // namespace gpass_test_tf_image_ops
