#!/usr/bin/env bash
# package_test.sh SOURCE_DIR BUILD_DIR IN_TREE_OWN_MODEL: the out-of-tree
# test of the package. Installs troupe from BUILD_DIR (its libraries already
# built) into a temporary prefix, builds examples (a), (b) and (c) against it
# with find_package(troupe) and without -march=native, and runs them:
# (a) with one worker must give the same final parameters (param hash) as
# the in-tree build of the same example, (b) must learn, (c) must find its
# actor on the
# dashboard. Last, troupe as a subproject (add_subdirectory) must configure
# with its troupe:: targets and examples but without tests or benchmarks.
set -uo pipefail
src=$1
build=$2
in_tree=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
start=$SECONDS

cmake --install "$build" --prefix "$work/prefix" >"$work/install.log" 2>&1 \
  || { cat "$work/install.log"; fail "cmake --install"; }
[ -f "$work/prefix/include/troupe/troupe.hpp" ] || fail "no troupe/troupe.hpp"
[ -f "$work/prefix/include/troupe/actors/worker.hpp" ] || fail "no actors/worker.hpp"

# The consumer: a plain Release build, no -march=native anywhere.
cmake -S "$src/tests/package/consumer" -B "$work/consumer" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DTROUPE_EXAMPLES_DIR="$src/examples" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
  >"$work/configure.log" 2>&1 || { cat "$work/configure.log"; fail "find_package(troupe)"; }
cmake --build "$work/consumer" -j2 >"$work/build.log" 2>&1 \
  || { tail -40 "$work/build.log"; fail "building the consumer"; }
if grep -q 'march=native' "$work/consumer/compile_commands.json"; then
  fail "the consumer was compiled with -march=native"
fi
echo "package_test: installed and built in $((SECONDS - start)) s"

# (a): same steps, one worker (deterministic), in-tree and out of tree.
steps=150
out_tree=$(timeout 200 "$work/consumer/own_model" $steps 1 2>&1) \
  || { printf '%s\n' "$out_tree"; fail "own_model (out of tree) exited $?"; }
printf '%s\n' "$out_tree"
in=$(timeout 200 "$in_tree" $steps 1 2>&1) \
  || { printf '%s\n' "$in"; fail "own_model (in tree) exited $?"; }
h_out=$(grep -o 'param hash [0-9a-f]*' <<<"$out_tree")
h_in=$(grep -o 'param hash [0-9a-f]*' <<<"$in")
echo "in tree: $h_in, out of tree: $h_out"
[ -n "$h_in" ] && [ "$h_in" = "$h_out" ] || fail "the param hashes differ"

# (c): the application's actor is on the dashboard.
out_c=$(timeout 200 "$work/consumer/own_actor_probe" 500 2>&1) \
  || { printf '%s\n' "$out_c"; fail "own_actor_probe exited $?"; }
printf '%s\n' "$out_c"
grep -q 'dashboard lists step_tally' <<<"$out_c" || fail "step_tally not listed"

# (b): the application's algorithm, chosen on its command line, trains.
out_b=$(timeout 200 "$work/consumer/own_algorithm" --workers=2 --epochs=1 \
  --seed=3 2>&1) \
  || { printf '%s\n' "$out_b"; fail "own_algorithm exited $?"; }
printf '%s\n' "$out_b" | tail -3
grep -q 'test accuracy 0\.[3-9]' <<<"$out_b" || fail "own_algorithm did not learn"

# As a subproject: configure only (nothing is built).
mkdir -p "$work/parent"
cat >"$work/parent/CMakeLists.txt" <<EOT
cmake_minimum_required(VERSION 3.18)
project(parent LANGUAGES CXX)
add_subdirectory("$src" troupe)
foreach(t troupe_test_main optim_dense_test train_throughput)
  if(TARGET \${t})
    message(FATAL_ERROR "troupe as a subproject built its tests: \${t}")
  endif()
endforeach()
if(NOT TARGET troupe::troupe OR NOT TARGET own_model)
  message(FATAL_ERROR "troupe as a subproject: no troupe::troupe or examples")
endif()
EOT
cmake -S "$work/parent" -B "$work/parent/build" -DCMAKE_BUILD_TYPE=Release \
  >"$work/parent.log" 2>&1 || { cat "$work/parent.log"; fail "as a subproject"; }
echo "package_test: as a subproject, no tests or benchmarks"
echo "package_test: passed in $((SECONDS - start)) s"
