#include "algos/downpour/downpour.hpp"

#include "actors/coordinator.hpp"

namespace troupe::algos {

std::string downpour::name() const {
  return "downpour";
}

actors::shard_plan downpour::plan(const actors::job_config&) const {
  return actors::shard_plan::async;
}

void downpour::configure_worker(const actors::job_config& job,
                                actors::worker_config& config,
                                std::vector<actors::shard_ref> shards) const {
  auto policy = job.policy;
  policy.sync = false;
  config.make_policy
      = [shards = std::move(shards), policy](std::size_t params) {
          return actors::make_ps_policy(shards, policy, params);
        };
}

bool downpour::warm_start() const noexcept {
  return true;
}

bool downpour::tracks_clocks(const actors::job_config& job) const noexcept {
  return job.staleness_bound.has_value();
}

const optim::compress_options*
downpour::compression(const actors::job_config& job) const noexcept {
  return &job.policy.compress;
}

} // namespace troupe::algos
