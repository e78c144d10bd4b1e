#include "algos/sync/sync.hpp"

#include <algorithm>

#include "actors/coordinator.hpp"
#include "actors/parameter_shard.hpp"

namespace troupe::algos {

std::string sync::name() const {
  return "sync";
}

actors::shard_plan sync::plan(const actors::job_config&) const {
  return actors::shard_plan::sync;
}

void sync::configure_worker(const actors::job_config& job,
                            actors::worker_config& config,
                            std::vector<actors::shard_ref> shards) const {
  if (pipeline_) {
    configure_head(job, *pipeline_, config);
    return;
  }
  auto policy = job.policy;
  policy.sync = true;
  // A shard restored from a checkpoint (its node lost) takes each worker's
  // last push again: the round it was lost in completes.
  policy.replay = std::max<std::size_t>(policy.replay, 1);
  config.make_policy
      = [shards = std::move(shards), policy](std::size_t params) {
          return actors::make_ps_policy(shards, policy, params);
        };
}

void sync::configure_shard(const actors::job_config&,
                           actors::parameter_shard_config& config) const {
  config.aggregation = aggregation_settings.rule;
  config.rules = aggregation_settings.options();
}

bool sync::reassigns_steps() const noexcept {
  return false; // a round's examples are the batch of every worker
}

bool sync::restores_shards(const actors::job_config&) const {
  // Moved to the job's round (parameter_shard_config::catch_up), where each
  // worker's last push is sent again; a pipeline's stages keep no pushes.
  return !pipeline_;
}

void sync::add_roles(actors::role_registry& roles) const {
  add_pipeline_roles(roles);
}

std::vector<optim::slice>
sync::shard_ranges(const actors::job_config& job) const {
  if (pipeline_)
    return pipeline_->layout.shards;
  return algorithm::shard_ranges(job);
}

std::unique_ptr<actors::algorithm_run>
sync::start(const actors::job_config& job) const {
  if (pipeline_)
    return make_pipeline_run(*pipeline_);
  return algorithm::start(job);
}

bool sync::tracks_clocks(const actors::job_config&) const noexcept {
  return true;
}

const optim::compress_options*
sync::compression(const actors::job_config& job) const noexcept {
  return &job.policy.compress;
}

bool sync::checkpointable() const noexcept {
  return true; // the shared roles' state is all of it
}

} // namespace troupe::algos
