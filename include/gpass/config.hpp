#pragma once
/// \file config.hpp
/// Compiler requirements and library-wide configuration macros (all `GPASS_`-prefixed).

#if __cplusplus < 202002L && !defined(_MSVC_LANG)
#error "gpass requires C++20"
#endif

/// `GPASS_ASSERT(cond)`: internal invariant check, active unless NDEBUG.
#include <cassert>
#define GPASS_ASSERT(cond) assert(cond)
