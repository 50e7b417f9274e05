# SPDX-License-Identifier: Apache-2.0
# gpassCompileFail.cmake: run one compile-fail test (cmake -P script, used by CTest).
#
#   cmake -DBUILD_DIR=<build tree> -DTARGET=<target> -DSOURCE=<file.cpp> [-DCONFIG=<cfg>]
#         -P gpassCompileFail.cmake
#
# The first line of SOURCE is `// EXPECT: <regex>`. The test passes only when building
# TARGET fails AND the build output matches the regex: a file that compiles, or that fails
# for another reason (a typo, a missing include), makes the test fail.

foreach(v BUILD_DIR TARGET SOURCE)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "gpassCompileFail.cmake: ${v} is not set")
  endif()
endforeach()

file(READ "${SOURCE}" content LIMIT 4096)
string(REGEX MATCH "^[^\n]*" first_line "${content}")
if(NOT first_line MATCHES "^//[ \t]*EXPECT:[ \t]*(.*[^ \t\r])[ \t\r]*$")
  message(FATAL_ERROR "${SOURCE}: the first line must be `// EXPECT: <regex>`, got: ${first_line}")
endif()
set(expect "${CMAKE_MATCH_1}")

set(config_args "")
if(DEFINED CONFIG AND NOT CONFIG STREQUAL "")
  set(config_args --config "${CONFIG}")
endif()

execute_process(
  COMMAND "${CMAKE_COMMAND}" --build "${BUILD_DIR}" --target "${TARGET}" ${config_args}
  RESULT_VARIABLE rc
  OUTPUT_VARIABLE out
  ERROR_VARIABLE out)

if(rc EQUAL 0)
  message(FATAL_ERROR "FAIL: ${SOURCE} compiled, but it must not (expected an error matching: ${expect})")
endif()
if(NOT out MATCHES "${expect}")
  message(NOTICE "${out}")  # unformatted, unlike FATAL_ERROR's text
  message(FATAL_ERROR "FAIL: ${SOURCE} failed to compile, but the output (above) does not match `${expect}`")
endif()
string(REGEX MATCH "[^\n]*${expect}[^\n]*" matched_line "${out}")
message(STATUS "PASS: ${SOURCE} is rejected as expected:\n  ${matched_line}")
