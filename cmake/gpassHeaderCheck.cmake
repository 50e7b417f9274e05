# SPDX-License-Identifier: Apache-2.0
# gpassHeaderCheck.cmake: the "every public header compiles on its own" test.
#
# gpass_add_header_check(<prefix> INCLUDE_DIR <dir> BINARY_DIR <dir> [UNITS <unit.cpp>...])
#
# Generates one translation unit per header under <dir>/gpass except gpass/src.hpp
# (`#include <gpass/x.hpp>` twice, to also catch a missing include guard, plus an empty
# function) and compiles each group in an OBJECT library built with ALL, with
# GPASS_SEPARATE_COMPILATION:
#
#   <prefix>                  headers that need only gpass::gpass (linked to gpass::gpass)
#   <prefix>_<comp>[_<comp>]  headers that need optional components (linked to gpass_<comp>),
#                             created only when every component they need was built, plus
#                             two units including <gpass/all.hpp> and all of that group's
#                             headers (in both orders): they must coexist
#
# A header needs component
#   onnx        when it is io/onnx*.hpp, io/detail/onnx*.hpp, under io/onnx/, or includes
#               <onnx/...>;
#   tensorflow  when it includes <google/protobuf/...> or a generated *.pb.h (and not onnx);
#   mpi         when it includes <mpi.h>;
#   cuda        when it lies under a cuda/ folder, is named cuda*.hpp, or includes a CUDA
#               header (<cuda*.h>, <cublas*>, <cudnn*>, <nvrtc*>);
# and every component needed by a gpass header it includes (transitively), so umbrella
# headers of component folders land in the right group.
#
# A header that a unit (UNITS: the gpass units, built with the same warnings and
# GPASS_SEPARATE_COMPILATION) includes first is left out: compiling that unit already
# compiles it on its own, and the kernel family headers are the costliest to compile (their
# kernel bodies are analysed whether or not anything calls them): checking them again took
# as long as building the units.
#
# Cost: compiling a header costs about the same with -fsyntax-only as with -c -O0 -g0 (the
# front end dominates; measured with g++ 12 on graph.hpp: 1.5 s either way), so a plain
# OBJECT library with -O0 -g0 is used: it keeps CMake's dependency tracking (a header edit
# rebuilds only the units that include it) and needs no custom commands.

function(gpass_add_header_check prefix)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "INCLUDE_DIR;BINARY_DIR" "UNITS")
  file(GLOB_RECURSE headers CONFIGURE_DEPENDS RELATIVE "${arg_INCLUDE_DIR}" "${arg_INCLUDE_DIR}/gpass/*.hpp")
  list(SORT headers)
  # gpass/src.hpp is not a header to include anywhere: it is every unit in one file (see
  # gpass/config.hpp), compiled on purpose once per program.
  list(REMOVE_ITEM headers gpass/src.hpp)
  set(proven "")
  foreach(u IN LISTS arg_UNITS)
    file(STRINGS "${u}" first REGEX "^#include <gpass/" LIMIT_COUNT 1)
    if(first MATCHES "^#include <(gpass/[^>]+)>")
      list(APPEND proven "${CMAKE_MATCH_1}")
    endif()
  endforeach()

  # Precompiled bases, costliest first: a header that includes one of them (directly or
  # not) is compiled with that header precompiled. It sees exactly the declarations it would
  # see anyway, since it includes the base itself; only the base's parse is shared. (Boost
  # Graph and Eigen made up most of the ~2.5 s each header cost.)
  set(pch_bases gpass/graph/graph.hpp gpass/core/attribute.hpp)

  # Direct needs and gpass includes of every header.
  foreach(h IN LISTS headers)
    string(MAKE_C_IDENTIFIER "${h}" key)
    set(comps "")
    if(h MATCHES "^gpass/io/(detail/)?onnx(\\.hpp|/|_)")
      list(APPEND comps onnx)
    endif()
    if(h MATCHES "(^|/)cuda(/|[^/]*\\.hpp$)")
      list(APPEND comps cuda)
    endif()
    file(STRINGS "${arg_INCLUDE_DIR}/${h}" includes REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"]")
    set(deps "")
    foreach(line IN LISTS includes)
      if(line MATCHES "^[ \t]*#[ \t]*include[ \t]*[<\"]([^>\"]+)[>\"]")
        set(inc "${CMAKE_MATCH_1}")
        if(inc MATCHES "^gpass/")
          list(APPEND deps "${inc}")
          # markers (not components): the header includes a precompiled base, directly or not
          foreach(base IN LISTS pch_bases)
            if(inc STREQUAL base)
              list(APPEND comps "+${base}")
            endif()
          endforeach()
        elseif(inc MATCHES "^onnx/")
          list(APPEND comps onnx)
        elseif(inc STREQUAL "mpi.h")
          list(APPEND comps mpi)
        elseif(inc MATCHES "^(cuda|cublas|cudnn|nvrtc|cuda_runtime)")
          list(APPEND comps cuda)
        elseif(inc MATCHES "^google/protobuf/" OR inc MATCHES "\\.pb\\.h$")
          list(APPEND comps tensorflow)
        endif()
      endif()
    endforeach()
    if("onnx" IN_LIST comps)
      list(REMOVE_ITEM comps tensorflow)  # ONNX's own protobuf headers
    endif()
    set(comps_${key} "${comps}")
    set(deps_${key} "${deps}")
  endforeach()

  # Propagate needs along gpass includes to a fixed point (a header needs what it includes).
  set(changed TRUE)
  while(changed)
    set(changed FALSE)
    foreach(h IN LISTS headers)
      string(MAKE_C_IDENTIFIER "${h}" key)
      foreach(d IN LISTS deps_${key})
        string(MAKE_C_IDENTIFIER "${d}" dkey)
        foreach(c IN LISTS comps_${dkey})
          if(NOT c IN_LIST comps_${key})
            list(APPEND comps_${key} ${c})
            set(changed TRUE)
          endif()
        endforeach()
      endforeach()
    endforeach()
  endwhile()

  # Group, generate, and create one OBJECT library per buildable group.
  set(groups "")
  set(skipped "")
  if(proven)
    list(REMOVE_ITEM headers ${proven})
  endif()
  foreach(h IN LISTS headers)
    string(MAKE_C_IDENTIFIER "${h}" key)
    set(comps ${comps_${key}})
    list(REMOVE_DUPLICATES comps)
    set(pch "")
    foreach(base IN LISTS pch_bases)
      if("+${base}" IN_LIST comps AND NOT pch)
        set(pch "${base}")
      endif()
      list(REMOVE_ITEM comps "+${base}")
    endforeach()
    list(SORT comps)
    set(ok TRUE)
    foreach(c IN LISTS comps)
      if(NOT TARGET gpass_${c})
        set(ok FALSE)
      endif()
    endforeach()
    if(NOT ok)
      list(APPEND skipped "${h}")
      continue()
    endif()
    if(comps)
      string(REPLACE ";" "_" group "${comps}")
      set(pch "")  # (component groups are small: no precompiled base)
    elseif(pch)
      get_filename_component(stem "${pch}" NAME_WE)
      set(group "pch_${stem}")
    else()
      set(group core)  # (an empty string cannot be a list element)
    endif()
    if(NOT group IN_LIST groups)
      list(APPEND groups "${group}")
      set(group_comps_${group} ${comps})
      set(group_pch_${group} "${pch}")
      set(group_srcs_${group} "")
    endif()
    set(src "${arg_BINARY_DIR}/${h}.cpp")
    # file(CONFIGURE) rewrites only on change, so a re-configure does not rebuild them all.
    set(GPASS_HEADER "${h}")
    file(CONFIGURE OUTPUT "${src}" CONTENT
      "// Generated by gpass_add_header_check: <@GPASS_HEADER@> must compile on its own.\n#include <@GPASS_HEADER@>\n#include <@GPASS_HEADER@>\nvoid gpass_header_check_@key@() {}\n"
      @ONLY)
    list(APPEND group_srcs_${group} "${src}")
  endforeach()

  foreach(group IN LISTS groups)
    if(group STREQUAL "core")
      set(tgt ${prefix})
    else()
      set(tgt ${prefix}_${group})
    endif()
    # Component headers must also coexist with everything else: one unit includes
    # <gpass/all.hpp> and then every header of the group, one the other way round (catches
    # clashes such as a gpass::detail::onnx namespace hiding ::onnx in another header).
    if(group_comps_${group} AND "gpass/all.hpp" IN_LIST headers)
      set(group_includes "")
      foreach(src IN LISTS group_srcs_${group})
        file(RELATIVE_PATH rel "${arg_BINARY_DIR}" "${src}")
        string(REGEX REPLACE "\\.cpp$" "" rel "${rel}")
        string(APPEND group_includes "#include <${rel}>\n")
      endforeach()
      set(all_include "#include <gpass/all.hpp>\n")
      file(CONFIGURE OUTPUT "${arg_BINARY_DIR}/all_then_${group}.cpp" CONTENT
        "// Generated by gpass_add_header_check: <gpass/all.hpp> together with the ${group} headers.\n${all_include}${group_includes}void gpass_header_check_all_then_${group}() {}\n")
      file(CONFIGURE OUTPUT "${arg_BINARY_DIR}/${group}_then_all.cpp" CONTENT
        "// Generated by gpass_add_header_check: the ${group} headers together with <gpass/all.hpp>.\n${group_includes}${all_include}void gpass_header_check_${group}_then_all() {}\n")
      list(APPEND group_srcs_${group} "${arg_BINARY_DIR}/all_then_${group}.cpp" "${arg_BINARY_DIR}/${group}_then_all.cpp")
    endif()
    add_library(${tgt} OBJECT ${group_srcs_${group}})
    target_link_libraries(${tgt} PRIVATE gpass::gpass)
    if(group_pch_${group})
      target_precompile_headers(${tgt} PRIVATE "<${group_pch_${group}}>")
    endif()
    foreach(c IN LISTS group_comps_${group})
      target_link_libraries(${tgt} PRIVATE gpass_${c})
    endforeach()
    # Headers are checked in the separate-compilation mode, in which they only declare what
    # the units define; header-only mode adds the units at the end of a few headers, and is
    # checked by install.find_package_consumer (the `consumer` program) instead of once per
    # header (in that mode every header that includes ops/registry.hpp compiles all op
    # schemas, and exec/eigen_cpu.hpp every kernel).
    target_compile_definitions(${tgt} PRIVATE GPASS_SEPARATE_COMPILATION)
    # The front end is the whole cost: no optimisation, no debug info.
    if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
      target_compile_options(${tgt} PRIVATE -O0 -g0 -Wall -Wextra -Wno-missing-field-initializers)
    endif()
  endforeach()
  list(LENGTH skipped nskipped)
  list(LENGTH headers total)
  math(EXPR total "${total} - ${nskipped}")
  list(LENGTH proven nproven)
  message(STATUS "gpass: header check compiles ${total} headers; ${nskipped} skipped (components not built), "
                 "${nproven} compiled first by a unit")
endfunction()
