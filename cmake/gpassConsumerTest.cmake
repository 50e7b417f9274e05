# SPDX-License-Identifier: Apache-2.0
# gpassConsumerTest.cmake: the `install.find_package_consumer` test (cmake -P script).
#
#   cmake -DBUILD_DIR=<gpass build tree> -DSOURCE_DIR=<gpass source tree> -DWORK_DIR=<scratch>
#         -DGENERATOR=<generator> [-DCONFIG=<cfg>] [-DCXX_COMPILER=<path>]
#         [-DCOMPONENTS=<comp,comp>] -P gpassConsumerTest.cmake
#
# 1. installs the gpass build tree into WORK_DIR/prefix (cmake --install);
# 2. configures examples/consumer against it in a fresh WORK_DIR/consumer-build, with only
#    CMAKE_PREFIX_PATH=WORK_DIR/prefix (package registries off), checks that gpass was
#    found there, builds it with gpass::eigen_cpu (the installed units as its sources) and
#    runs it (it checks its own results and prints the graph); the header-only build of the
#    same program is gpass's own target gpass_header_only_consumer (test header_only.consumer),
#    built from the same headers, so it is not compiled a second time here;
# 3. checks the package's component and version handling with configure-only projects:
#    every built component (COMPONENTS) is found with REQUIRED and defines gpass::<comp>;
#    an unknown REQUIRED component fails; an unknown OPTIONAL one leaves gpass found with
#    gpass_<comp>_FOUND false; version 0.2 is rejected (SameMinorVersion), 0.1 accepted.

foreach(v BUILD_DIR SOURCE_DIR WORK_DIR GENERATOR)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "gpassConsumerTest.cmake: ${v} is not set")
  endif()
endforeach()

function(run_step name)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  set(step_rc "${rc}" PARENT_SCOPE)
  set(step_out "${out}" PARENT_SCOPE)
  message(STATUS "[${name}] exit ${rc}")
endfunction()

function(require_ok name)
  if(NOT step_rc EQUAL 0)
    message(FATAL_ERROR "FAIL at step '${name}' (exit ${step_rc}):\n${step_out}")
  endif()
endfunction()

set(prefix "${WORK_DIR}/prefix")
set(consumer_build "${WORK_DIR}/consumer-build")
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

set(config_args "")
set(build_type_arg "")
string(TOUPPER "${CONFIG}" CONFIG_UPPER)
if(DEFINED CONFIG AND NOT CONFIG STREQUAL "")
  set(config_args --config "${CONFIG}")
  set(build_type_arg "-DCMAKE_BUILD_TYPE=${CONFIG}")
endif()
set(compiler_arg "")
if(DEFINED CXX_COMPILER AND NOT CXX_COMPILER STREQUAL "")
  set(compiler_arg "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}")
endif()
set(isolation_args
  "-DCMAKE_PREFIX_PATH=${prefix}"
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
  -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF)

# 1. install
run_step(install "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${prefix}" ${config_args})
require_ok(install)
file(GLOB_RECURSE config_file "${prefix}/*/gpassConfig.cmake")
if(NOT config_file)
  message(FATAL_ERROR "FAIL: no gpassConfig.cmake under ${prefix}:\n${step_out}")
endif()
if(NOT EXISTS "${prefix}/include/gpass/all.hpp")
  message(FATAL_ERROR "FAIL: include/gpass/all.hpp was not installed under ${prefix}")
endif()

# 2. consumer: configure, build, run
# (no debug info, -O0: the consumer compiles every unit; in two batches (a CMake unity
# build) rather than one file each, which shares their common headers and templates: each
# unit also compiles on its own in gpass's build tree, in gpass_units)
run_step(configure-consumer "${CMAKE_COMMAND}" -S "${SOURCE_DIR}/examples/consumer" -B "${consumer_build}"
         -G "${GENERATOR}" ${build_type_arg} ${compiler_arg} ${isolation_args} "-DCMAKE_CXX_FLAGS_${CONFIG_UPPER}=-O0"
         -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=9 -DCONSUMER_HEADER_ONLY=OFF)
require_ok(configure-consumer)
if(NOT step_out MATCHES "consumer: gpass ([0-9.]+) from ([^\n]*)")
  message(FATAL_ERROR "FAIL: the consumer did not report where it found gpass:\n${step_out}")
endif()
set(found_dir "${CMAKE_MATCH_2}")
file(REAL_PATH "${prefix}" real_prefix)
file(REAL_PATH "${found_dir}" real_found)
string(FIND "${real_found}" "${real_prefix}/" pos)
if(NOT pos EQUAL 0)
  message(FATAL_ERROR "FAIL: the consumer found gpass in ${found_dir}, not in the installed prefix ${prefix}")
endif()

run_step(build-consumer "${CMAKE_COMMAND}" --build "${consumer_build}" ${config_args} --parallel 2)
require_ok(build-consumer)

# consumer_compiled: gpass::eigen_cpu (the units as its sources)
foreach(name consumer_compiled)
  set(exe "")
  foreach(candidate "${consumer_build}/${name}" "${consumer_build}/${CONFIG}/${name}")
    if(EXISTS "${candidate}")
      set(exe "${candidate}")
      break()
    endif()
  endforeach()
  if(NOT exe)
    message(FATAL_ERROR "FAIL: the binary ${name} was not found in ${consumer_build}")
  endif()
  run_step(run-${name} "${exe}")
  message(STATUS "${name} output:\n${step_out}")
  require_ok(run-${name})
  if(NOT step_out MATCHES "consumer: OK")
    message(FATAL_ERROR "FAIL: ${name} did not print 'consumer: OK'")
  endif()
endforeach()

# 3. components and versions (configure-only projects; CXX is enabled because FindProtobuf
#    needs a language, as any real consumer has)
function(probe name expect_success body)
  set(dir "${WORK_DIR}/probe-${name}")
  file(WRITE "${dir}/CMakeLists.txt"
    "cmake_minimum_required(VERSION 3.25)\nproject(probe_${name} LANGUAGES CXX)\n${body}\n")
  run_step(probe-${name} "${CMAKE_COMMAND}" -S "${dir}" -B "${dir}/build" -G "${GENERATOR}" ${compiler_arg} ${isolation_args})
  if(expect_success AND NOT step_rc EQUAL 0)
    message(FATAL_ERROR "FAIL: probe '${name}' should configure, but:\n${step_out}")
  elseif(NOT expect_success AND step_rc EQUAL 0)
    message(FATAL_ERROR "FAIL: probe '${name}' should fail to configure, but it succeeded:\n${step_out}")
  endif()
  set(step_out "${step_out}" PARENT_SCOPE)
endfunction()

string(REPLACE "," ";" components "${COMPONENTS}")
foreach(comp IN LISTS components)
  probe(component-${comp} TRUE "
find_package(gpass 0.1 CONFIG REQUIRED COMPONENTS ${comp})
if(NOT TARGET gpass::${comp} OR NOT gpass_${comp}_FOUND)
  message(FATAL_ERROR \"gpass::${comp} missing\")
endif()")
endforeach()

probe(unknown-required FALSE "find_package(gpass 0.1 CONFIG REQUIRED COMPONENTS no_such_component)")
if(NOT step_out MATCHES "no_such_component")
  message(FATAL_ERROR "FAIL: the error for an unknown required component does not name it:\n${step_out}")
endif()

probe(unknown-optional TRUE "
find_package(gpass 0.1 CONFIG REQUIRED OPTIONAL_COMPONENTS no_such_component)
if(gpass_no_such_component_FOUND OR NOT TARGET gpass::gpass)
  message(FATAL_ERROR \"optional component handling is wrong\")
endif()")

probe(versions TRUE "
find_package(gpass 0.2 CONFIG QUIET)
if(gpass_FOUND)
  message(FATAL_ERROR \"gpass 0.1.x accepted a request for 0.2 (SameMinorVersion expected)\")
endif()
unset(gpass_DIR CACHE)
find_package(gpass 0.1.0 CONFIG REQUIRED)
if(NOT gpass_VERSION VERSION_GREATER_EQUAL 0.1 OR NOT TARGET gpass::gpass)
  message(FATAL_ERROR \"gpass 0.1 not accepted\")
endif()")

message(STATUS "PASS: installed gpass is usable through find_package (components: ${COMPONENTS})")
