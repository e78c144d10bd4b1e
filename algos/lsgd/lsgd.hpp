// LSGD, asynchronous multi-leader (algorithms.md §4): workers take local
// steps; group leaders elect the best of their group every tau steps and
// have it pull the group toward it; a leader board does the same across
// groups every tau_g steps. No shards: the global leader's model is the
// evaluated one.

#pragma once

#include "actors/algorithm.hpp"

namespace troupe::algos {

class lsgd : public actors::algorithm {
public:
  std::string name() const override;
  actors::shard_plan plan(const actors::job_config& job) const override;
  void check(const actors::job_config& job) const override;
  void configure_worker(const actors::job_config& job,
                        actors::worker_config& config,
                        std::vector<actors::shard_ref> shards) const override;
  bool lingers() const noexcept override;
  std::unique_ptr<actors::algorithm_run>
  start(const actors::job_config& job) const override;
  void report(const actors::coordinator_state& st,
              nlohmann::json& out) const override;
  void report_worker(const messages::worker_stats& stats,
                     nlohmann::json& out) const override;
};

} // namespace troupe::algos
