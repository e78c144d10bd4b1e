#pragma once

// Sandblaster's state in a checkpoint (issue [11]), as state files
// (optim/state_file.hpp) taken at an iteration boundary, where nothing is in
// flight: a shard's slices (x, g and the history pairs s, y of every ring
// position), the driver's scalars (the history's ring, rho and gamma, the
// objective, the iteration and pass counts and its counters) and each
// worker's counters. The line search and the portion table start afresh
// every iteration and pass, so a boundary holds none of theirs.

#include <cstdint>
#include <string>

#include "algos/sandblaster/detail/lbfgs_driver.hpp"
#include "algos/sandblaster/lbfgs_shard.hpp"

namespace troupe::algos::detail {

/// The shard's x, g, history slices (every ring position), pass and
/// counters.
std::string save_lbfgs_shard(const lbfgs_shard_state& st);

/// Loads save_lbfgs_shard's bytes into a shard of the same job (its
/// evaluation point becomes x); throws optim::data_error naming `file` and
/// the tensor that does not fit.
void load_lbfgs_shard(lbfgs_shard_state& st, const std::string& bytes,
                      const std::string& file);

/// The driver's history (ring positions, rho, gamma), objective, iteration
/// and pass counts and counters, at an iteration boundary.
std::string save_lbfgs_driver(const lbfgs_driver_state& st);

/// Loads save_lbfgs_driver's bytes into a driver of the same job; throws
/// optim::data_error naming `file` and the tensor that does not fit.
void load_lbfgs_driver(lbfgs_driver_state& st, const std::string& bytes,
                       const std::string& file);

/// Worker w's counters as the driver keeps them (portions reported, lost or
/// not): a Sandblaster worker keeps nothing else between passes.
std::string save_lbfgs_worker(const lbfgs_driver_state& st, std::size_t w);

/// Loads save_lbfgs_worker's bytes for worker w; throws optim::data_error
/// naming `file`.
void load_lbfgs_worker(lbfgs_driver_state& st, std::size_t w,
                       const std::string& bytes, const std::string& file);

} // namespace troupe::algos::detail
