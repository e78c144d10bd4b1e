// Divide-and-shuffle synchronization (algorithms.md §7): after each local
// step the workers average within groups that change every round (a digit
// schedule when the worker count is a power of the group size, else random
// partitions). No shards: the mean of the workers' models is evaluated.

#pragma once

#include "actors/algorithm.hpp"

namespace troupe::algos {

class dssync : public actors::algorithm {
public:
  std::string name() const override;
  actors::shard_plan plan(const actors::job_config& job) const override;
  void check(const actors::job_config& job) const override;
  void configure_worker(const actors::job_config& job,
                        actors::worker_config& config,
                        std::vector<actors::shard_ref> shards) const override;
  bool peer_to_peer() const noexcept override;
  bool lingers() const noexcept override;
  void report(const actors::coordinator_state& st,
              nlohmann::json& out) const override;
  void report_worker(const messages::worker_stats& stats,
                     nlohmann::json& out) const override;
};

} // namespace troupe::algos
