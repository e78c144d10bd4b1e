# Warnings for troupe's own targets only (third-party headers are SYSTEM).
add_library(troupe_warnings INTERFACE)
target_compile_options(troupe_warnings INTERFACE -Wall -Wextra -Wpedantic
                                                 -Wno-unused-parameter
                                                 # GCC 12 false positives in AVX-512 intrinsics
                                                 $<$<CXX_COMPILER_ID:GNU>:-Wno-maybe-uninitialized>)

# troupe_folder_library(<name> [PUBLIC deps...]): the library target of one
# source folder, built from its *.cpp files; an INTERFACE target while the
# folder holds only headers (later issues fill actors/ and net/).
function(troupe_folder_library name)
  cmake_parse_arguments(ARG "" "" "PUBLIC;PRIVATE" ${ARGN})
  file(GLOB sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp
                                       ${CMAKE_CURRENT_SOURCE_DIR}/detail/*.cpp)
  if(sources)
    add_library(${name} STATIC ${sources})
    target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR})
    target_link_libraries(${name} PUBLIC ${ARG_PUBLIC}
                                  PRIVATE troupe_warnings ${ARG_PRIVATE})
  else()
    add_library(${name} INTERFACE)
    target_include_directories(${name} INTERFACE ${PROJECT_SOURCE_DIR})
    target_link_libraries(${name} INTERFACE ${ARG_PUBLIC})
  endif()
endfunction()
