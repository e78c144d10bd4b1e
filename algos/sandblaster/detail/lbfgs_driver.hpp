#pragma once

// The Sandblaster driver's state and steps, shared by its iteration logic
// (actors/lbfgs_driver.cpp) and the code that places its roles and runs it
// (actors/lbfgs_run.cpp).

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <caf/response_promise.hpp>
#include <caf/stateful_actor.hpp>
#include <nlohmann/json.hpp>

#include "actors/coordinator.hpp"
#include "actors/probe.hpp"
#include "algos/sandblaster/lbfgs_driver.hpp"
#include "algos/sandblaster/lbfgs_shard.hpp"
#include "optim/portions.hpp"

namespace troupe::actors::detail {

struct lbfgs_driver_state {
  static inline const char* name = "lbfgs_driver";
  std::shared_ptr<const lbfgs_job> job;
  placement_plan where;
  std::vector<lbfgs_shard_actor> shards;
  std::vector<optim::slice> ranges;
  std::vector<caf::actor> workers;
  std::vector<bool> live, busy;
  /// Per worker: the serial of its current portion (handed out so far).
  std::vector<std::uint64_t> assignment;
  std::uint64_t handed = 0;
  std::vector<std::uint64_t> results; ///< per worker, counted or not
  optim::lbfgs_history h;
  std::optional<optim::portion_table> table;
  std::vector<double> losses;
  std::vector<std::uint64_t> samples;
  std::function<void(double)> pass_done;
  std::uint64_t pass = 0, counted = 0, duplicates = 0, backups = 0,
                reissued = 0, lost = 0, rejected = 0, evaluated = 0,
                reported = 0;
  std::size_t iterations = 0, ls = 0;
  double fx = 0, slope = 0, lo = 0, hi = 0, step = 1, gnorm = 0;
  std::shared_ptr<optim::two_loop> machine;
  std::chrono::steady_clock::time_point started;
  nlohmann::json trace = nlohmann::json::array();
  caf::response_promise result;
  bool finished = false;
  probe_ref probe;
};

using lbfgs_driver_ptr = caf::stateful_actor<lbfgs_driver_state>*;

/// Seconds since the run started.
double elapsed(const lbfgs_driver_state& st);

/// Ends the run: collects x from the shards (unless `collect` is false: a
/// shard is gone), delivers the final JSON with `reason` (and `error` if
/// set), stops every role and quits. Runs once.
void finish(lbfgs_driver_ptr self, const std::string& reason,
            std::optional<std::string> error = {}, bool collect = true);

/// Spawns (or asks the nodes to spawn) the shards and workers, monitors
/// them, then calls `k`; a node that cannot spawn ends the run.
void place_roles(lbfgs_driver_ptr self, std::function<void()> k);

/// A monitored role is gone: a worker's portions go back to the pool, a
/// shard ends the run.
void role_down(lbfgs_driver_ptr self, const caf::down_msg& msg);

/// Worker w is gone (down, or silent past the request timeout): its
/// portions go back to the pool; with no worker left the run ends.
void lose_worker(lbfgs_driver_ptr self, std::size_t w);

/// Hands worker w the next portion of the current pass, if any.
void give(lbfgs_driver_ptr self, std::size_t w);

caf::behavior lbfgs_driver(caf::stateful_actor<lbfgs_driver_state>* self,
                           std::shared_ptr<const lbfgs_job> job,
                           placement_plan where);

} // namespace troupe::actors::detail
