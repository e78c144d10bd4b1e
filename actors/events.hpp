#pragma once

#include <cstdint>
#include <string>

#include "messages/messages.hpp"

// What a running job tells application code. Observers are called on the
// coordinator's thread, in order, and must return quickly (copy what they
// need; never block): they sit on the path of every step's progress.

namespace troupe::actors {

struct failure_record;

/// A worker finished a step.
struct step_event {
  messages::worker_id worker = 0;
  std::uint64_t steps = 0;   ///< the worker's steps so far
  std::uint64_t samples = 0; ///< examples in this step
  double loss = 0;           ///< the step's minibatch loss
  double seconds = 0;        ///< since the job started
};

/// The test set was evaluated.
struct evaluation_event {
  std::uint64_t steps = 0, samples = 0; ///< totals over workers
  double seconds = 0, accuracy = 0, loss = 0;
};

/// A node joined the job or was lost (it died or hung).
struct node_event {
  std::string node;   ///< host:pid
  std::string reason; ///< why it was lost (empty when it joined)
  double seconds = 0; ///< since the job started (0: before it started)
};

/// A group's leader changed (leader-based algorithms such as LSGD).
struct leader_event {
  /// The group; the number of groups for the global leader (LSGD).
  std::uint32_t group = 0;
  std::string leader;        ///< the new leader's actor name
  std::uint64_t changes = 0; ///< leader changes in this group so far
  double seconds = 0;
  bool global = false; ///< the global leader (LSGD with several groups)
};

/// Receives a job's events (job_config::observers). Override what you need.
class job_observer {
public:
  virtual ~job_observer() = default;
  virtual void on_step(const step_event&) {}
  virtual void on_evaluation(const evaluation_event&) {}
  /// A worker or shard was lost (its node died or hung).
  virtual void on_failure(const failure_record&) {}
  /// A node joined (before the job starts) or was lost.
  virtual void on_node_joined(const node_event&) {}
  virtual void on_node_lost(const node_event&) {}
  /// A group's leader changed.
  virtual void on_leader_change(const leader_event&) {}
  /// The job ended; `report` is its final JSON text.
  virtual void on_finish(const std::string& report) {
    (void)report;
  }
};

} // namespace troupe::actors
