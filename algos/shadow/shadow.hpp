// ShadowSync (algorithms.md §8): the workers take local steps and never
// wait; syncers, one per group of workers, synchronize their models in the
// background by model averaging, BMUF, or elastic averaging with a center on
// the shards.

#pragma once

#include "actors/algorithm.hpp"

namespace troupe::algos {

class shadow : public actors::algorithm {
public:
  std::string name() const override;
  /// A center on the shards with --shadow=easgd, else none.
  actors::shard_plan plan(const actors::job_config& job) const override;
  void check(const actors::job_config& job) const override;
  void configure_shard(const actors::job_config& job,
                       actors::parameter_shard_config& config) const override;
  void configure_worker(const actors::job_config& job,
                        actors::worker_config& config,
                        std::vector<actors::shard_ref> shards) const override;
  bool lingers() const noexcept override;
  std::unique_ptr<actors::algorithm_run>
  start(const actors::job_config& job) const override;
  void report_worker(const messages::worker_stats& stats,
                     nlohmann::json& out) const override;
};

} // namespace troupe::algos
