# SPDX-License-Identifier: Apache-2.0
# gpass_bench_units: the gpass units (cmake/gpassUnits.cmake) that the benchmarks link.
# The executor benchmark times the kernels, which live in the units, so in a Release build
# (the bench preset, the run.sh scripts) they are compiled once for all benchmarks with the
# benchmark flags: -O3 -march=${GPASS_BENCH_UNITS_MARCH} (default x86-64-v3) -DNDEBUG. In
# the test builds (ci, dev, asan) the benchmarks only have to build, and share gpass_units.
if(NOT TARGET gpass_bench_units)
  if(CMAKE_BUILD_TYPE STREQUAL "Release")
    if(NOT GPASS_BENCH_UNITS_MARCH)
      set(GPASS_BENCH_UNITS_MARCH x86-64-v3)
    endif()
    gpass_add_units_library(gpass_bench_units STATIC)
    target_compile_options(gpass_bench_units PRIVATE -O3 -march=${GPASS_BENCH_UNITS_MARCH})
    target_compile_definitions(gpass_bench_units PRIVATE NDEBUG)
    message(STATUS "gpass: benchmark units compiled with -O3 -march=${GPASS_BENCH_UNITS_MARCH}")
  else()
    add_library(gpass_bench_units ALIAS gpass_units)
  endif()
endif()
