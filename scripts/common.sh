# Shared by scripts/demo and scripts/test: install what is missing, configure
# and build into build/. Sourced, not run.
set -euo pipefail

TROUPE_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TROUPE_BUILD=${TROUPE_BUILD:-$TROUPE_ROOT/build}

# Debian 12 packages the build, the tests and the demo need.
TROUPE_PACKAGES=(
  cmake make g++ pkg-config
  libcaf-dev libeigen3-dev libboost-dev catch2 zlib1g-dev nlohmann-json3-dev
  libbenchmark-dev libspdlog-dev dataset-fashion-mnist
  libssl-dev openssl iproute2 prometheus-cpp-dev python3-numpy
)
# What the test suite adds (scripts/test): libtorch for TorchScript modules
# (--model=torchscript:FILE.pt, found by CMake when installed; optional, so
# the demo goes without) and PyTorch for Python, which scripts the LeNet the
# interoperability test trains (tests/apps/torchscript_test.sh); OpenBLAS,
# which libtorch's products go to through libblas.so.3 (Debian's reference
# BLAS otherwise, 10-20x slower: docs/benchmarks.md); and scikit-learn,
# whose bundled breast cancer CSV is the real tabular data examples/csv
# trains on (read at run time, never copied).
# Slurm's daemons and client with MUNGE, and Open MPI's mpirun, which start
# troupe jobs in tests/apps/launchers_test.sh (a one-host Slurm of the
# test's own, not the machine's); PyYAML, which reads the Kubernetes
# manifests of deploy/ in tests/apps/kubernetes_test.py.
TROUPE_TEST_PACKAGES=(libtorch-dev python3-torch libopenblas0-pthread
                      python3-sklearn slurmctld slurmd slurm-client munge
                      openmpi-bin python3-yaml)
# Clang with its sanitizer and libFuzzer runtimes (scripts/sanitize,
# scripts/fuzz; libclang-rt-dev holds libclang_rt.{asan,ubsan,fuzzer}), and
# Ninja, which builds their many test targets in parallel.
TROUPE_CLANG_PACKAGES=(clang libclang-rt-dev ninja-build)
# The configuration of build-asan/ (scripts/sanitize and scripts/fuzz share
# it): Clang with ASan + UBSan and libFuzzer's coverage, at -O0 but for the
# numerical kernels of troupe_optim at -O1 (TROUPE_SANITIZE_MATH_OPT): the
# CAF-heavy folders compile in half of -O1's time (coordinator.cpp 23 s -> 13 s),
# and the training inside the cluster scenarios stays fast. Without libtorch
# (TROUPE_WITH_TORCH=OFF): its uninstrumented libraries stay out of the
# sanitized runs.
TROUPE_ASAN_CMAKE_ARGS=(-G Ninja -DCMAKE_CXX_COMPILER=clang++
                        -DTROUPE_SANITIZE=address,undefined -DTROUPE_FUZZ=ON
                        -DTROUPE_BUILD_BENCH=OFF -DTROUPE_TEST_TIMEOUT=900
                        -DTROUPE_WITH_TORCH=OFF
                        "-DCMAKE_CXX_FLAGS_RELEASE=-O0 -DNDEBUG")

log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

# Installs the packages that are missing (apt-get as root, else sudo).
install_missing() {
  local missing=()
  for pkg in "${TROUPE_PACKAGES[@]}" "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" \
      || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing ${missing[*]}"
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || {
      echo "error: need root (or sudo) to install: ${missing[*]}" >&2
      exit 1
    }
    sudo=(sudo)
  fi
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q >&2
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
}

# Configures build/ once (Release, native ISA, plus the array
# TROUPE_CMAKE_ARGS if the caller set it) and builds the given targets
# (all by default). Incremental: quick when nothing changed. Build output
# goes to stderr, so a script's stdout carries only its result.
build() {
  if [ ! -f "$TROUPE_BUILD/CMakeCache.txt" ]; then
    log "configuring $TROUPE_BUILD"
    cmake -S "$TROUPE_ROOT" -B "$TROUPE_BUILD" -DCMAKE_BUILD_TYPE=Release \
      -DTROUPE_BUILD_TESTS=ON ${TROUPE_CMAKE_ARGS[@]+"${TROUPE_CMAKE_ARGS[@]}"} \
      >/dev/null
  fi
  local jobs
  jobs=$(nproc 2>/dev/null || echo 2)
  log "building ${*:-all}"
  # gold's notes on ASan's local symbols (one per register, every link)
  # would bury the output that matters.
  local quiet='warning: Cannot export local symbol .__asan'
  if [ $# -gt 0 ]; then
    cmake --build "$TROUPE_BUILD" -j "$jobs" --target "$@" 2>&1 \
      | { grep -v "$quiet" || true; } >&2
  else
    cmake --build "$TROUPE_BUILD" -j "$jobs" 2>&1 \
      | { grep -v "$quiet" || true; } >&2
  fi
}
