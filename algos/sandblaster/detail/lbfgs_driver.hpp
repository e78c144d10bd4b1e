#pragma once

// The Sandblaster driver's state and steps, shared by its iteration logic
// (actors/lbfgs_driver.cpp) and the code that places its roles and runs it
// (actors/lbfgs_run.cpp).

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <caf/response_promise.hpp>
#include <caf/stateful_actor.hpp>
#include <nlohmann/json.hpp>

#include "actors/clock.hpp"
#include "actors/coordinator.hpp"
#include "actors/probe.hpp"
#include "algos/sandblaster/lbfgs_driver.hpp"
#include "algos/sandblaster/lbfgs_shard.hpp"
#include "optim/portions.hpp"

namespace troupe::algos::detail {

struct lbfgs_driver_state {
  static inline const char* name = "lbfgs_driver";
  std::shared_ptr<const lbfgs_job> job;
  actors::placement_plan where;
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
  actors::time_point started; ///< on the driver's clock
  nlohmann::json trace = nlohmann::json::array();
  caf::response_promise result;
  bool finished = false;
  // -- checkpoints (lbfgs_checkpoint.cpp) --
  /// The iteration of the last checkpoint written (or resumed from).
  std::uint64_t checkpointed = 0;
  actors::time_point checkpoint_time;
  bool checkpointing = false;
  /// The checkpoints written or failed, for the final JSON.
  nlohmann::json checkpoint_log = nlohmann::json::array();
  /// The run's seconds before the checkpoint it resumed from.
  double seconds_before = 0;
  /// The latest checkpoint written, every file of it, kept to bring a lost
  /// shard back (lbfgs_restore.cpp); none before the first.
  std::optional<actors::resume_point> kept;
  /// Counts the roll-backs to a kept checkpoint: a request's answer or
  /// failure from before the latest one is ignored.
  std::uint64_t generation = 0;
  /// The passes up to this one were made before the latest roll-back.
  std::uint64_t forgotten = 0;
  bool rolling_back = false; ///< the shards are loading the checkpoint
  /// The shards brought back, for the final JSON's "restored_shards".
  nlohmann::json restored = nlohmann::json::array();
  /// The run ends at the next iteration boundary with this reason (a
  /// signal, the time limit), after a checkpoint when checkpointing.
  std::optional<std::string> stopping;
  actors::probe_ref probe;
};

using lbfgs_driver_ptr = caf::stateful_actor<lbfgs_driver_state>*;

/// A test for the answers of a request sent now: true once the run ended
/// or rolled back to a checkpoint since (the answer is to be ignored).
inline std::function<bool()> outdated(lbfgs_driver_ptr self) {
  return [self, gen = self->state.generation] {
    return self->state.finished || self->state.generation != gen;
  };
}

/// Seconds since the run started (a resumed run's include those before its
/// checkpoint).
double elapsed(lbfgs_driver_ptr self);

/// At an iteration boundary, where nothing is in flight: writes a checkpoint
/// if one is due or the run is stopping (the time limit counts as a stop),
/// then calls `k`. A checkpoint that cannot be taken is logged and skipped.
void boundary(lbfgs_driver_ptr self, std::function<void()> k);

/// The stop request (a signal) arrived: the run ends at the next iteration
/// boundary, or after the request timeout if none comes by then (without a
/// checkpoint).
void request_stop(lbfgs_driver_ptr self);

/// The stop's request timeout is over (the stop came at `iteration`): if
/// no boundary came meanwhile, the run ends without a checkpoint.
void stop_timeout(lbfgs_driver_ptr self, std::uint64_t iteration);

/// The iteration to the probe's gauges and the observers (a step of the
/// driver whose loss is the objective).
void report_iteration(lbfgs_driver_ptr self, double seconds);

/// A resumed run, once its roles are placed: loads the driver's and the
/// workers' files and has every shard load its own, then calls `k` (at the
/// checkpoint's iteration boundary); a file that does not fit ends the run,
/// naming it.
void restore(lbfgs_driver_ptr self, std::function<void()> k);

/// Ends the run: collects x from the shards (unless `collect` is false: a
/// shard is gone), delivers the final JSON with `reason` (and `error` if
/// set), stops every role and quits. Runs once.
void finish(lbfgs_driver_ptr self, const std::string& reason,
            std::optional<std::string> error = {}, bool collect = true);

/// Spawns (or asks the nodes to spawn) the shards and workers, monitors
/// them, then calls `k`; a node that cannot spawn ends the run.
void place_roles(lbfgs_driver_ptr self, std::function<void()> k);

/// The checkpoint's shard files go to the shards (each loads its own), then
/// `k` runs; a file missing or refused ends the run, `bad` says why.
void load_shards(lbfgs_driver_ptr self,
                 const std::map<std::string, std::string>& files,
                 std::function<void()> k,
                 std::function<void(const std::string&)> bad);

/// Shard k was lost with `node` (`why`): with a kept checkpoint the run rolls
/// back to it (a new shard k here, every shard and the driver from the
/// checkpoint's files, the workers pointed at the new shard) and goes on
/// from its iteration boundary; false: no checkpoint to roll back to.
bool roll_back(lbfgs_driver_ptr self, std::size_t k, const std::string& node,
               const std::string& why);

/// Goes on from an iteration boundary (the next iteration).
void go_on(lbfgs_driver_ptr self);

/// A monitored role is gone: a worker's portions go back to the pool, a
/// shard is brought back from the latest checkpoint (roll_back) or ends the
/// run.
void role_down(lbfgs_driver_ptr self, const caf::down_msg& msg);

/// Worker w is gone (down, or silent past the request timeout): its
/// portions go back to the pool; with no worker left the run ends.
void lose_worker(lbfgs_driver_ptr self, std::size_t w);

/// Hands worker w the next portion of the current pass, if any.
void give(lbfgs_driver_ptr self, std::size_t w);

caf::behavior lbfgs_driver(caf::stateful_actor<lbfgs_driver_state>* self,
                           std::shared_ptr<const lbfgs_job> job,
                           actors::placement_plan where);

} // namespace troupe::algos::detail
