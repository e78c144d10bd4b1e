# Warnings for troupe's own targets only (third-party headers are SYSTEM).
# Linked as $<BUILD_INTERFACE:troupe_warnings>: never exported, so a
# consumer of the installed package gets none of these flags.
add_library(troupe_warnings INTERFACE)
target_compile_options(troupe_warnings INTERFACE -Wall -Wextra -Wpedantic
                                                 -Wno-unused-parameter
                                                 # GCC 12 false positives in AVX-512 intrinsics
                                                 $<$<CXX_COMPILER_ID:GNU>:-Wno-maybe-uninitialized>)

# troupe_public_includes(<target> <scope>): the include directories a
# library hands its users. In the build tree the sources include each other
# as "actors/worker.hpp" (the source root) and users include
# <troupe/actors/worker.hpp> (build/include/troupe/<folder> links to the
# source folders, cmake/TroupeInstall.cmake). Installed, the headers live in
# P/include/troupe/<folder>/, and both P/include and P/include/troupe are
# exported: the second so the headers' own "actors/..." includes resolve
# (docs/using-troupe.md, "Include paths").
function(troupe_public_includes target scope)
  target_include_directories(${target} ${scope}
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>
    $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}/include>
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
    $<INSTALL_INTERFACE:include>
    $<INSTALL_INTERFACE:include/troupe>)
endfunction()

# troupe_folder_library(<name> [PUBLIC deps...]): the library target of one
# source folder, built from its *.cpp files; an INTERFACE target while the
# folder holds only headers (later issues fill actors/ and net/).
function(troupe_folder_library name)
  cmake_parse_arguments(ARG "" "" "PUBLIC;PRIVATE" ${ARGN})
  file(GLOB sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp
                                       ${CMAKE_CURRENT_SOURCE_DIR}/detail/*.cpp)
  if(sources)
    add_library(${name} STATIC ${sources})
    troupe_public_includes(${name} PUBLIC)
    target_link_libraries(${name} PUBLIC ${ARG_PUBLIC}
                                  PRIVATE $<BUILD_INTERFACE:troupe_warnings>
                                          ${ARG_PRIVATE})
  else()
    add_library(${name} INTERFACE)
    troupe_public_includes(${name} INTERFACE)
    target_link_libraries(${name} INTERFACE ${ARG_PUBLIC})
  endif()
endfunction()
