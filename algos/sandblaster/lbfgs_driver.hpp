#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <caf/duration.hpp>
#include <nlohmann/json.hpp>

#include "actors/coordinator.hpp"
#include "actors/events.hpp"
#include "actors/interfaces.hpp"
#include "actors/monitor.hpp"
#include "actors/stop_request.hpp"
#include "optim/lbfgs.hpp"
#include "optim/range_table.hpp"

// Sandblaster L-BFGS (algorithms.md §2): a driver actor (the coordinator:
// scalars only) runs the iterations as rounds of vector commands to the
// L-BFGS shards and batch passes over the workers, which take portions from
// its table (backup copies at the end of a pass, first result wins, a lost
// worker's portions re-issued). The shards and workers run in the driver's
// process or on the nodes of a distributed job (node_agent.hpp), the same
// roles either way.

namespace troupe::algos {

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
  /// The portion function: one per worker from `make_compute` (each gets
  /// its own model and buffers), else `compute`, shared (must be
  /// thread-safe).
  std::function<portion_fn()> make_compute;
  portion_fn compute;
  optim::lbfgs_options options;
  caf::duration request_timeout{std::chrono::seconds{30}};
  /// Stop after this many seconds (0: no limit).
  double max_seconds = 0;
  /// Backup copies of outstanding portions at the end of a pass.
  bool backups = true;
  /// Per worker: a factor >= 1 by which its portions take longer (it sleeps
  /// factor - 1 times its compute time after each); for benchmarks.
  std::vector<double> slowdown;
  /// Progress and monitoring, as the coordinator's (job_config): observers
  /// get an on_step per iteration (steps: iterations; samples: examples
  /// evaluated since the last one; loss: the objective) and on_finish; the
  /// nodes' actor metrics are polled into `monitor` every
  /// `monitor_interval`.
  std::vector<std::shared_ptr<actors::job_observer>> observers;
  std::shared_ptr<actors::cluster_view> monitor;
  std::chrono::milliseconds monitor_interval{500};
  std::string node_name = "local";
  /// Checkpoints (issue [11]): written by the driver at an iteration
  /// boundary every `every_steps` iterations (or `every_seconds`), and when
  /// the run is stopped (`stop`, the time limit); no writer: none.
  actors::checkpoint_settings checkpoints;
  /// A checkpoint to continue from (its files: shard-<k>.state,
  /// worker-<w>.state, algo-driver-0.state); null: a fresh run.
  std::shared_ptr<const actors::resume_point> resume;
  /// Ends the run from outside (a signal) at the next iteration boundary,
  /// after a checkpoint when checkpointing; may be null.
  std::shared_ptr<actors::stop_request> stop;

  /// The shards' slices of the parameter vector.
  std::vector<optim::slice> ranges() const {
    return optim::balanced_split(init->size(), shards);
  }
  /// Tests: a delay per portion for some workers, and a worker that dies
  /// when it receives its n-th portion, before computing it (0: never).
  std::vector<std::chrono::microseconds> delays;
  std::vector<std::uint64_t> die_after;
};

/// Runs the job in a fresh actor system; returns the final JSON (x,
/// iterations, passes, f, gradient norm, seconds, stop reason, a trace per
/// iteration, portions counted, duplicates discarded, backups, re-issued,
/// lost workers) with "error" if it failed.
nlohmann::json run_lbfgs(const lbfgs_job& job);

/// The same in an existing actor system, with the shards and workers placed
/// by `where` (nodes whose agents built the same job; empty: all here).
nlohmann::json run_lbfgs_in(caf::actor_system& sys,
                            std::shared_ptr<const lbfgs_job> job,
                            const actors::placement_plan& where,
                            std::chrono::seconds timeout);

/// Checks a job's settings; throws std::invalid_argument naming the
/// problem.
void check(const lbfgs_job& job);

} // namespace troupe::algos
