# SPDX-License-Identifier: Apache-2.0
# gpassPkgConfigTest.cmake: the `install.pkg_config_consumer` test (cmake -P script).
#
#   cmake -DBUILD_DIR=<gpass build tree> -DSOURCE_DIR=<gpass source tree> -DWORK_DIR=<scratch>
#         -DCXX_COMPILER=<path> [-DCONFIG=<cfg>] -P gpassPkgConfigTest.cmake
#
# Installs the build tree into WORK_DIR/prefix, then builds examples/pkgconfig/main.cpp with
# only `pkg-config --cflags gpass` / `--libs gpass` (PKG_CONFIG_PATH = the installed
# share/pkgconfig) and runs it; checks the version pkg-config reports.

foreach(v BUILD_DIR SOURCE_DIR WORK_DIR CXX_COMPILER)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "gpassPkgConfigTest.cmake: ${v} is not set")
  endif()
endforeach()
find_program(PKG_CONFIG NAMES pkg-config pkgconf REQUIRED)
set(prefix "${WORK_DIR}/prefix")
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
set(config_args "")
if(DEFINED CONFIG AND NOT CONFIG STREQUAL "")
  set(config_args --config "${CONFIG}")
endif()

function(step name)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  message(STATUS "[${name}] exit ${rc}: ${out}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "FAIL at step '${name}' (exit ${rc}):\n${out}\n${err}")
  endif()
  set(step_out "${out}" PARENT_SCOPE)
endfunction()

step(install "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${prefix}" ${config_args})
set(ENV{PKG_CONFIG_PATH} "${prefix}/share/pkgconfig")
step(modversion "${PKG_CONFIG}" --modversion gpass)
file(STRINGS "${SOURCE_DIR}/include/gpass/version.hpp" vline REGEX "version_string = ")
string(REGEX MATCH "\"([0-9.]+)\"" _ "${vline}")
if(NOT step_out STREQUAL CMAKE_MATCH_1)
  message(FATAL_ERROR "FAIL: pkg-config says version '${step_out}', version.hpp '${CMAKE_MATCH_1}'")
endif()
step(cflags "${PKG_CONFIG}" --cflags gpass)
separate_arguments(cflags UNIX_COMMAND "${step_out}")
set(found_include FALSE)
foreach(f IN LISTS cflags)
  if(f MATCHES "^-I(.*)$")
    get_filename_component(dir "${CMAKE_MATCH_1}" REALPATH)
    get_filename_component(want "${prefix}/include" REALPATH)
    if(dir STREQUAL want)
      set(found_include TRUE)
    endif()
  endif()
endforeach()
if(NOT found_include)
  message(FATAL_ERROR "FAIL: --cflags does not name the installed include directory ${prefix}/include: ${step_out}")
endif()
step(libs "${PKG_CONFIG}" --libs gpass)
separate_arguments(libs UNIX_COMMAND "${step_out}")
step(compile "${CXX_COMPILER}" ${cflags} "${SOURCE_DIR}/examples/pkgconfig/main.cpp" ${libs} -o "${WORK_DIR}/consumer")
step(run "${WORK_DIR}/consumer")
if(NOT step_out MATCHES "^gpass [0-9.]+: x y$")
  message(FATAL_ERROR "FAIL: unexpected output '${step_out}'")
endif()
message(STATUS "pkg-config consumer: OK")
