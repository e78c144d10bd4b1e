# Sanitizer and fuzzing instrumentation for every troupe target.
#
#   TROUPE_SANITIZE=address,undefined  compiles and links every target of the
#       project with those -fsanitize= checks (GCC or Clang); a finding aborts
#       the process (no recovery), so a test under it fails.
#   TROUPE_FUZZ=ON  (Clang only) adds libFuzzer's coverage instrumentation
#       (-fsanitize=fuzzer-no-link) to every target and builds tests/fuzz/.
#
# CAF, Eigen's compiled parts and the other Debian libraries are not
# instrumented; docs/assurance.md lists what that hides and the exceptions
# taken (cmake/sanitize_ignorelist.txt, Clang only: GCC reports CAF's
# patterns too).

set(TROUPE_SANITIZE "" CACHE STRING
    "Sanitizers for every target, e.g. address,undefined (empty: none)")
option(TROUPE_FUZZ "Build the libFuzzer targets in tests/fuzz (Clang only)" OFF)

if(TROUPE_SANITIZE)
  add_compile_options(-fsanitize=${TROUPE_SANITIZE} -fno-sanitize-recover=all
                      -fno-omit-frame-pointer)
  add_link_options(-fsanitize=${TROUPE_SANITIZE})
  # Line tables only: symbolized reports without the cost of full debug info.
  if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    add_compile_options(-gline-tables-only)
    # CAF 0.17.6's own patterns that UBSan flags (each entry says why).
    add_compile_options(
      -fsanitize-ignorelist=${CMAKE_CURRENT_LIST_DIR}/sanitize_ignorelist.txt)
  else()
    add_compile_options(-g1)
  endif()
endif()

# TROUPE_SANITIZE_MATH_OPT: the optimization level of troupe_optim (the
# numerical kernels) in a sanitizer build, whose other folders scripts/common.sh
# compiles at -O0: that halves Clang's time for the CAF-heavy folders, while
# the training inside the cluster scenarios keeps the speed of optimized math.
set(TROUPE_SANITIZE_MATH_OPT "-O1" CACHE STRING
    "Optimization flag of troupe_optim in a sanitizer build")

if(TROUPE_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "TROUPE_FUZZ needs Clang (libFuzzer): configure with "
                        "-DCMAKE_CXX_COMPILER=clang++")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
