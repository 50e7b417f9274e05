// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file version.hpp
/// The library version, also exported by CMake as `gpass_VERSION`.

#define GPASS_VERSION_MAJOR 0
#define GPASS_VERSION_MINOR 1
#define GPASS_VERSION_PATCH 0

namespace gpass {
/// The library version as a string, e.g. "0.1.0".
inline constexpr const char* version_string = "0.1.0";
}  // namespace gpass
