#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <caf/duration.hpp>
#include <nlohmann/json.hpp>

#include "optim/lbfgs.hpp"
#include "optim/range_table.hpp"

// Sandblaster L-BFGS in one process (algorithms.md §2): a driver actor (the
// coordinator: scalars only) runs the iterations as rounds of vector
// commands to the L-BFGS shards and batch passes over the workers, which
// take portions from its table (backup copies at the end of a pass, first
// result wins, a lost worker's portions re-issued). Groundwork for issue
// [8]: no CLI, no nodes yet.

namespace troupe::actors {

/// A worker's computation of one portion at point x (n values): writes the
/// gradient sum over the portion's examples to `grad`, sets `samples`,
/// returns the loss sum.
using portion_fn
    = std::function<double(const double* x, std::size_t n, std::size_t portion,
                           double* grad, std::uint64_t& samples)>;

/// Settings of a Sandblaster run.
struct lbfgs_job {
  std::shared_ptr<const std::vector<float>> init;
  std::uint32_t shards = 1;
  std::uint32_t workers = 1;
  std::size_t portions = 8;
  portion_fn compute;
  optim::lbfgs_options options;
  caf::duration request_timeout{std::chrono::seconds{30}};
  /// Tests: a delay per portion for some workers, and a worker that dies
  /// when it receives its n-th portion, before computing it (0: never).
  std::vector<std::chrono::microseconds> delays;
  std::vector<std::uint64_t> die_after;
};

/// Runs the job in a fresh actor system; returns the final JSON (x,
/// iterations, passes, f, gradient norm, portions counted, duplicates
/// discarded, backups, re-issued, lost workers) or {"error": ...}.
nlohmann::json run_lbfgs(const lbfgs_job& job);

} // namespace troupe::actors
