// EASGD / EAMSGD (algorithms.md §3): the shards hold a center; every tau of
// its own steps a worker moves toward it and it toward the worker by the
// elastic difference; between exchanges the workers take local steps.

#pragma once

#include "actors/algorithm.hpp"

namespace troupe::algos {

class easgd : public actors::algorithm {
public:
  std::string name() const override;
  actors::shard_plan plan(const actors::job_config& job) const override;
  void check(const actors::job_config& job) const override;
  void configure_shard(const actors::job_config& job,
                       actors::parameter_shard_config& config) const override;
  void configure_worker(const actors::job_config& job,
                        actors::worker_config& config,
                        std::vector<actors::shard_ref> shards) const override;
  void report(const actors::coordinator_state& st,
              nlohmann::json& out) const override;
};

/// EASGD's moving rate: job.easgd.alpha, or 0.9 / workers if unset.
double easgd_alpha(const actors::job_config& job) noexcept;

/// The center's shard settings: it adds each worker's elastic difference e,
/// sent negated as a gradient (x_c <- x_c - 1 * (-e)).
void center_shard(const actors::job_config& job,
                  actors::parameter_shard_config& config);

} // namespace troupe::algos
