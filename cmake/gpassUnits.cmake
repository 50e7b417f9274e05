# SPDX-License-Identifier: Apache-2.0
# gpassUnits.cmake: compile gpass's heavy parts once per build (see include/gpass/config.hpp).
#
# gpass is header-only; in the default mode every translation unit that runs a plan compiles
# every Eigen CPU kernel and every op schema. The "units" (include/gpass/**/src/*.cpp, listed
# by gpassListUnits.cmake) hold those definitions; a build that defines
# GPASS_SEPARATE_COMPILATION everywhere and compiles each unit once sees only declarations in
# its own files. This file offers two ways to do that:
#
#   target_link_libraries(app PRIVATE gpass::eigen_cpu)
#       an INTERFACE target whose INTERFACE_SOURCES are the units and whose interface
#       defines GPASS_SEPARATE_COMPILATION: the units are compiled as part of `app`. Link it
#       into ONE target of a program (an executable, or the one library the others use);
#       linking it into two targets of the same program defines the units twice.
#
#   gpass_add_units_library(<name> [STATIC|SHARED|OBJECT])
#       a library target <name> made of the units, with GPASS_SEPARATE_COMPILATION as a
#       PUBLIC definition: link it into as many targets as you like (gpass's own tests,
#       tools and benchmarks share one such library).
#
# Included by gpassConfig.cmake (installed package) and by gpass's CMakeLists.txt; the
# includer may set GPASS_UNITS_INCLUDE_DIR (the directory holding gpass/) first.

include_guard(GLOBAL)
include("${CMAKE_CURRENT_LIST_DIR}/gpassListUnits.cmake")
set_property(GLOBAL PROPERTY GPASS_UNIT_SOURCES "${GPASS_UNIT_SOURCES}")

function(gpass_add_units_library name)
  set(type STATIC)
  if(ARGC GREATER 1)
    set(type "${ARGV1}")
  endif()
  if(NOT type MATCHES "^(STATIC|SHARED|OBJECT)$")
    message(FATAL_ERROR "gpass_add_units_library(${name} ${type}): the type must be STATIC, SHARED or OBJECT")
  endif()
  get_property(sources GLOBAL PROPERTY GPASS_UNIT_SOURCES)
  add_library(${name} ${type} ${sources})
  target_link_libraries(${name} PUBLIC gpass::gpass)
  target_compile_definitions(${name} PUBLIC GPASS_SEPARATE_COMPILATION)
  if(NOT type STREQUAL "STATIC")
    set_target_properties(${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  endif()
endfunction()

# gpass::eigen_cpu (imported in an installed package; the build tree makes its own).
if(NOT TARGET gpass::eigen_cpu AND TARGET gpass::gpass)
  get_property(_gpass_sources GLOBAL PROPERTY GPASS_UNIT_SOURCES)
  add_library(gpass::eigen_cpu INTERFACE IMPORTED)
  set_target_properties(gpass::eigen_cpu PROPERTIES
    INTERFACE_SOURCES "${_gpass_sources}"
    INTERFACE_COMPILE_DEFINITIONS GPASS_SEPARATE_COMPILATION
    INTERFACE_LINK_LIBRARIES gpass::gpass)
  unset(_gpass_sources)
endif()
