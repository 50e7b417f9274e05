// SPDX-License-Identifier: Apache-2.0
// The low-precision dtypes: names, ONNX codes, and the float conversions (checked against
// the values ml_dtypes, ONNX's reference, gives).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include <gpass/core/low_precision.hpp>

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_core_low_precision {

using gpass::dtype;
using gpass::from_low_precision;
using gpass::to_low_precision;

TEST_CASE("core.low_precision.names") {
  CHECK(gpass::to_string(dtype::f8e4m3fn) == "f8e4m3fn");
  CHECK(gpass::parse_dtype("i4") == dtype::i4);
  CHECK(gpass::dtype_from_onnx_code(17) == dtype::f8e4m3fn);
  CHECK(gpass::dtype_from_onnx_code(26) == dtype::i2);
  CHECK(gpass::size_of(dtype::u4) == 1);
  CHECK(gpass::is_low_precision(dtype::f4e2m1));
  CHECK_FALSE(gpass::is_low_precision(dtype::bf16));
  CHECK_FALSE(gpass::is_floating(dtype::f8e5m2));
}

TEST_CASE("core.low_precision.float8") {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  // 3.14159 rounds to 3.25 (e4m3) and 3 (e5m2)
  CHECK(to_low_precision(dtype::f8e4m3fn, 3.14159) == 69);
  CHECK(to_low_precision(dtype::f8e4m3fnuz, 3.14159) == 77);
  CHECK(to_low_precision(dtype::f8e5m2, 3.14159) == 66);
  CHECK(to_low_precision(dtype::f8e5m2fnuz, 3.14159) == 70);
  CHECK(from_low_precision(dtype::f8e4m3fn, 69) == 3.25f);
  // without saturation: overflow is NaN (no inf) or inf (e5m2); with it, the largest value
  CHECK(to_low_precision(dtype::f8e4m3fn, 1000, false) == 0x7F);
  CHECK(to_low_precision(dtype::f8e4m3fn, -1000, false) == 0xFF);
  CHECK(to_low_precision(dtype::f8e4m3fn, 1000) == 0x7E);
  CHECK(from_low_precision(dtype::f8e4m3fn, 0x7E) == 448.0f);
  CHECK(to_low_precision(dtype::f8e4m3fnuz, inf, false) == 0x80);
  CHECK(to_low_precision(dtype::f8e5m2, inf, false) == 0x7C);
  CHECK(to_low_precision(dtype::f8e5m2, -inf) == 0xFB);  // -57344
  CHECK(from_low_precision(dtype::f8e5m2, 0xFB) == -57344.0f);
  CHECK(to_low_precision(dtype::f8e5m2, nan) == 0x7E);
  // 464 is halfway between 448 and 480: ties to even (448); above, overflow
  CHECK(to_low_precision(dtype::f8e4m3fn, 464, false) == 0x7E);
  CHECK(to_low_precision(dtype::f8e4m3fn, 465, false) == 0x7F);
  // signed zero, subnormals
  CHECK(to_low_precision(dtype::f8e4m3fn, -0.0) == 0x80);
  CHECK(to_low_precision(dtype::f8e4m3fnuz, -0.0) == 0x00);
  CHECK(to_low_precision(dtype::f8e4m3fn, std::ldexp(1.0, -8)) == 2);
  CHECK(from_low_precision(dtype::f8e4m3fn, 1) == static_cast<float>(std::ldexp(1.0, -9)));
  CHECK(std::isnan(from_low_precision(dtype::f8e5m2fnuz, 0x80)));
  // every code decodes and encodes back to itself (NaN codes to the canonical NaN)
  for (dtype d : {dtype::f8e4m3fn, dtype::f8e4m3fnuz, dtype::f8e5m2, dtype::f8e5m2fnuz}) {
    int mismatches = 0;
    for (int c = 0; c < 256; ++c) {
      const float v = from_low_precision(d, static_cast<std::uint8_t>(c));
      if (std::isnan(v)) continue;
      mismatches += to_low_precision(d, v, false) != c;
    }
    CHECK(mismatches == 0);
  }
}

TEST_CASE("core.low_precision.float4_e8m0_ints") {
  // float4e2m1: 0.3 -> 0.5, ties to even (1.25 -> 1, 5 -> 4), always saturating, NaN -> -0
  CHECK(to_low_precision(dtype::f4e2m1, 0.3) == 1);
  CHECK(to_low_precision(dtype::f4e2m1, 1.25) == 2);
  CHECK(to_low_precision(dtype::f4e2m1, 5.0) == 6);
  CHECK(to_low_precision(dtype::f4e2m1, 100.0, false) == 7);
  CHECK(to_low_precision(dtype::f4e2m1, std::nan("")) == 8);
  CHECK(from_low_precision(dtype::f4e2m1, 15) == -6.0f);
  // float8e8m0: the exponent, rounded up by default
  CHECK(to_low_precision(dtype::f8e8m0, 1.0) == 127);
  CHECK(to_low_precision(dtype::f8e8m0, 1.5) == 128);
  CHECK(to_low_precision(dtype::f8e8m0, 1.5, true, gpass::e8m0_rounding::down) == 127);
  CHECK(to_low_precision(dtype::f8e8m0, 1.4, true, gpass::e8m0_rounding::nearest) == 127);
  CHECK(from_low_precision(dtype::f8e8m0, 130) == 8.0f);
  // the small integers: truncated toward zero and wrapped; NaN gives 0
  CHECK(from_low_precision(dtype::i4, to_low_precision(dtype::i4, -1.7)) == -1.0f);
  CHECK(from_low_precision(dtype::i4, to_low_precision(dtype::i4, 8.5)) == -8.0f);
  CHECK(from_low_precision(dtype::u4, to_low_precision(dtype::u4, -1.0)) == 15.0f);
  CHECK(from_low_precision(dtype::i2, to_low_precision(dtype::i2, 2.5)) == -2.0f);
  CHECK(to_low_precision(dtype::u2, std::nan("")) == 0);
}

}  // namespace gpass_test_core_low_precision
