# Compile time. CI builds troupe twice on two cores (optimized, then with
# sanitizers), and a source's time went mostly to the same headers and
# templates: parsing was about half of it (GCC 12: 3.2 of 5.2 s for an
# algorithm, 3.7 of 9.5 s for an actor test), and each source instantiated
# CAF's and Eigen's templates again. Two remedies, both on by default:
#
#   TROUPE_PCH    precompiled headers: the standard library, Eigen, CAF,
#                 nlohmann::json and Catch2, parsed once per set of
#                 headers: the targets asking for the same set share one
#                 (three for the libraries, three for the tests).
#   TROUPE_UNITY  the folder libraries compile as unity sources (CMake's
#                 UNITY_BUILD, batches of 8 sources), so their common
#                 templates are instantiated once per batch.
#
# Measured on troupe_algos (58 sources, -j2): 199 s plain, 153 s with PCH,
# 61 s with both. OFF and OFF compiles every source on its own: the check
# that each includes what it uses and that no two sources of a folder
# define the same name in their anonymous namespaces (a unity batch would
# see both). Private to troupe's own targets: nothing reaches an installed
# consumer.
option(TROUPE_PCH "Precompile the third-party headers of troupe's targets" ON)
option(TROUPE_UNITY "Compile troupe's libraries as unity sources" ON)

# troupe_build_speed(<target> [UNITY] [OWN] [EIGEN] [CAF] [CAF_IO] [JSON]
#                    [CATCH]): the precompiled header of
# the named libraries' headers (the standard library always), unity batches
# with UNITY. A precompiled header serves only sources compiled with the
# same definitions: the first target asking for a set of headers compiles
# it and the later ones reuse it, unless OWN.
function(troupe_build_speed target)
  cmake_parse_arguments(ARG "UNITY;OWN;EIGEN;CAF;CAF_IO;JSON;CATCH" "" ""
                        ${ARGN})
  # Generated sources (embedded files: one large literal each) stay apart.
  get_target_property(sources ${target} SOURCES)
  foreach(source IN LISTS sources)
    if(source MATCHES "^${PROJECT_BINARY_DIR}/")
      set_source_files_properties(${source} TARGET_DIRECTORY ${target}
        PROPERTIES SKIP_PRECOMPILE_HEADERS ON SKIP_UNITY_BUILD_INCLUSION ON)
    endif()
  endforeach()
  if(ARG_UNITY AND TROUPE_UNITY)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON
                                               UNITY_BUILD_BATCH_SIZE 8)
    # GCC warns of a class whose field's type is a source's own (anonymous
    # namespace) once the source is included by the batch; it is still the
    # only source that sees either.
    target_compile_options(${target} PRIVATE
      $<$<CXX_COMPILER_ID:GNU>:-Wno-subobject-linkage>)
  endif()
  if(NOT TROUPE_PCH)
    return()
  endif()
  # A precompiled header that does not fit is ignored: say so (GCC).
  target_compile_options(${target} PRIVATE
    $<$<CXX_COMPILER_ID:GNU>:-Winvalid-pch>)
  # One precompiled header per set of libraries: the first target that asks
  # for a set compiles it, the later ones reuse it (each is 150-300 MB).
  set(key PCH)
  foreach(part EIGEN CAF CAF_IO JSON CATCH)
    if(ARG_${part})
      string(APPEND key _${part})
    endif()
  endforeach()
  get_property(host GLOBAL PROPERTY TROUPE_${key}_HOST)
  if(host AND NOT ARG_OWN)
    target_precompile_headers(${target} REUSE_FROM ${host})
    return()
  endif()
  if(NOT host)
    set_property(GLOBAL PROPERTY TROUPE_${key}_HOST ${target})
  endif()
  set(headers <algorithm> <array> <atomic> <chrono> <cmath> <cstdint>
              <cstring> <functional> <map> <memory> <mutex> <optional>
              <set> <sstream> <string> <unordered_map> <utility> <vector>)
  foreach(part EIGEN CAF CAF_IO JSON CATCH)
    if(ARG_${part})
      list(APPEND headers ${_troupe_pch_${part}})
    endif()
  endforeach()
  target_precompile_headers(${target} PRIVATE ${headers})
endfunction()

set(_troupe_pch_EIGEN <Eigen/Dense>)
set(_troupe_pch_CAF <caf/all.hpp>)
set(_troupe_pch_CAF_IO <caf/io/all.hpp>)
set(_troupe_pch_JSON <nlohmann/json.hpp>)
set(_troupe_pch_CATCH <catch2/catch.hpp>)
