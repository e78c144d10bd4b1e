#pragma once

// Sandblaster's worker (actors/lbfgs_worker.cpp), spawned by the driver
// (actors/lbfgs_driver.cpp): it takes (grad, pass, portion), reads the
// evaluation point once per pass, computes the portion, sends each shard
// its slice of the gradient sum and reports (done, worker, pass, portion,
// loss sum, samples) to the driver.

#include <cstdint>
#include <memory>
#include <vector>

#include <caf/error.hpp>
#include <caf/stateful_actor.hpp>

#include "actors/probe.hpp"
#include "algos/sandblaster/lbfgs_driver.hpp"
#include "algos/sandblaster/lbfgs_shard.hpp"

namespace troupe::algos::detail {

struct lbfgs_worker_state {
  std::uint32_t id = 0;
  caf::actor driver;
  std::vector<lbfgs_shard_actor> shards;
  std::vector<optim::slice> ranges;
  static inline const char* name = "lbfgs_worker";
  std::shared_ptr<const lbfgs_job> job;
  portion_fn compute; ///< this worker's own (make_compute) or the shared one
  std::uint64_t pass = 0, done = 0;
  /// Counts the driver's rebinds (a lost shard restored, the run rolled
  /// back): a shard request's failure from before the latest is ignored.
  std::uint64_t epoch = 0;
  /// A shard request failed: the worker waits one request timeout for a
  /// rebind, then ends with this error.
  caf::error failed;
  std::vector<double> x, grad;
  actors::probe_ref probe;
};

caf::behavior lbfgs_worker(caf::stateful_actor<lbfgs_worker_state>* self,
                           std::uint32_t id, caf::actor driver,
                           std::vector<lbfgs_shard_actor> shards,
                           std::vector<optim::slice> ranges,
                           std::shared_ptr<const lbfgs_job> job);

} // namespace troupe::algos::detail
