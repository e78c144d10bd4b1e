#pragma once

#include <chrono>
#include <cstddef>
#include <string>

#include <caf/fwd.hpp>
#include <nlohmann/json.hpp>

#include "actors/coordinator.hpp"

namespace troupe::actors {

/// Settings of the actor system a job runs in.
struct runtime_options {
  /// Scheduler threads (0: one per core, at least 2).
  std::size_t threads = 0;
  /// CAF scheduler policy: "sharing" (one shared queue; replies wake an idle
  /// thread at once) or "stealing" (per-thread queues; idle threads poll).
  std::string scheduler = "sharing";
  /// How long to wait for the job's result before giving up (the job's own
  /// limits normally end it much earlier).
  std::chrono::seconds timeout{std::chrono::hours{24}};
};

/// Runs a whole job in this process: starts an actor system, spawns the
/// coordinator (which spawns shards, workers and the evaluator), waits for
/// the final result and shuts everything down. Returns the coordinator's
/// final JSON; throws std::runtime_error if no result arrives in time.
nlohmann::json run_job(job_config config, runtime_options rt = {});

/// Runs a job in an existing actor system (a distributed job's, whose
/// middleman links the nodes). Same result and errors as run_job.
nlohmann::json run_job_in(caf::actor_system& sys, job_config config,
                          std::chrono::seconds timeout);

} // namespace troupe::actors
