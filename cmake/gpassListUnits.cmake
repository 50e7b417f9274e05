# SPDX-License-Identifier: Apache-2.0
# gpassListUnits.cmake: the gpass units (see include/gpass/config.hpp), one file per line.
#
#   include(gpassListUnits.cmake)      sets GPASS_UNIT_SOURCES (absolute paths) from
#                                      GPASS_UNITS_INCLUDE_DIR (default: ../include)
#   cmake -P gpassListUnits.cmake      prints them relative to the repository (for scripts)
#
# The list is written out rather than globbed: an installed package knows its files.
if(NOT DEFINED GPASS_UNITS_INCLUDE_DIR)
  get_filename_component(GPASS_UNITS_INCLUDE_DIR "${CMAKE_CURRENT_LIST_DIR}/../include" ABSOLUTE)
endif()
set(_gpass_units
  gpass/ops/src/registry.cpp
  gpass/ops/src/onnx_schemas.cpp
  gpass/ops/src/tf_schemas.cpp
  gpass/analysis/src/verify.cpp
  gpass/io/src/text.cpp
  gpass/passes/src/infer.cpp
  gpass/passes/src/passes.cpp
  gpass/exec/eigen_cpu/src/array.cpp
  gpass/exec/eigen_cpu/src/attention.cpp
  gpass/exec/eigen_cpu/src/control.cpp
  gpass/exec/eigen_cpu/src/elementwise.cpp
  gpass/exec/eigen_cpu/src/linalg.cpp
  gpass/exec/eigen_cpu/src/ml.cpp
  gpass/exec/eigen_cpu/src/nn.cpp
  gpass/exec/eigen_cpu/src/plan.cpp
  gpass/exec/eigen_cpu/src/reduce.cpp
  gpass/exec/eigen_cpu/src/tf_array.cpp
  gpass/exec/eigen_cpu/src/tf_elementwise.cpp
  gpass/exec/eigen_cpu/src/tf_math.cpp)
set(GPASS_UNIT_SOURCES "")
foreach(u IN LISTS _gpass_units)
  list(APPEND GPASS_UNIT_SOURCES "${GPASS_UNITS_INCLUDE_DIR}/${u}")
endforeach()
if(CMAKE_SCRIPT_MODE_FILE STREQUAL CMAKE_CURRENT_LIST_FILE)
  foreach(u IN LISTS _gpass_units)
    message(STATUS "include/${u}")
  endforeach()
endif()
unset(_gpass_units)
