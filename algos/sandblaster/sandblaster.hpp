// Sandblaster L-BFGS (algorithms.md §2): a batch quasi-Newton method whose
// coordinator hands out portions of each batch to idle workers and whose
// shards hold slices of the iterate and the L-BFGS history. It runs with a
// driver of its own (actors/lbfgs_driver.hpp), not the job coordinator.

#pragma once

#include "actors/algorithm.hpp"

namespace troupe::algos {

class sandblaster : public actors::algorithm {
public:
  std::string name() const override;
  actors::shard_plan plan(const actors::job_config& job) const override;
  void check(const actors::job_config& job) const override;
  /// Never called: the driver builds its own workers.
  void configure_worker(const actors::job_config& job,
                        actors::worker_config& config,
                        std::vector<actors::shard_ref> shards) const override;
  std::optional<nlohmann::json>
  run(caf::actor_system& sys, const actors::job_config& job,
      std::chrono::seconds timeout) const override;
};

} // namespace troupe::algos
