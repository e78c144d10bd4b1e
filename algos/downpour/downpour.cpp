#include "algos/downpour/downpour.hpp"

#include <algorithm>

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
  if (pipeline_) {
    configure_head(job, *pipeline_, config);
    return;
  }
  auto policy = job.policy;
  policy.sync = false;
  config.make_policy
      = [shards = std::move(shards), policy](std::size_t params) {
          return actors::make_ps_policy(shards, policy, params);
        };
}

void downpour::configure_shard(const actors::job_config& job,
                               actors::parameter_shard_config& config) const {
  if (staleness_bound >= 0)
    config.staleness_bound = static_cast<std::uint64_t>(staleness_bound);
  if (buffered()) {
    config.aggregation = aggregation_settings.rule;
    config.rules = aggregation_settings.options();
    config.buffer
        = static_cast<std::uint32_t>(agg_buffer > 0 ? agg_buffer : job.workers);
    config.buffer_deadline = std::chrono::milliseconds{
        static_cast<std::int64_t>(agg_deadline * 1000)};
  }
}

std::vector<optim::slice>
downpour::shard_ranges(const actors::job_config& job) const {
  if (pipeline_)
    return pipeline_->layout.shards;
  return algorithm::shard_ranges(job);
}

std::unique_ptr<actors::algorithm_run>
downpour::start(const actors::job_config& job) const {
  if (pipeline_)
    return make_pipeline_run(*pipeline_);
  return algorithm::start(job);
}

bool downpour::replicates_shards(const actors::job_config& job) const {
  return !pipeline_ && algorithm::replicates_shards(job);
}

std::string downpour::replica_refusal(const actors::job_config& job) const {
  if (pipeline_)
    return "a pipeline's stages keep no log of their pushes to send again";
  return algorithm::replica_refusal(job);
}

void downpour::add_roles(actors::role_registry& roles) const {
  add_pipeline_roles(roles);
}

std::uint64_t downpour::warm_start_steps() const noexcept {
  return warm_steps;
}

bool downpour::tracks_clocks(const actors::job_config&) const noexcept {
  return staleness_bound >= 0;
}

const optim::compress_options*
downpour::compression(const actors::job_config& job) const noexcept {
  return &job.policy.compress;
}

void downpour::report(const actors::coordinator_state& st,
                      nlohmann::json& out) const {
  if (staleness_bound < 0)
    return;
  std::uint64_t max_gap = 0;
  for (const auto& s : st.shard_reports)
    max_gap = std::max(max_gap, s.max_clock_gap);
  out["staleness_bound"] = static_cast<std::uint64_t>(staleness_bound);
  out["max_clock_gap"] = max_gap;
}

bool downpour::elastic(const actors::job_config&) const noexcept {
  // A joining worker would need stages of its own.
  return staleness_bound < 0 && !pipeline_;
}

bool downpour::checkpointable() const noexcept {
  // The shared roles' state is all of it. Under a staleness bound a worker
  // waiting in its fetch for a slower one (the shard holds the fetch) is
  // before its step's computation: it pauses there (worker_pause.cpp), its
  // flush is answered behind the held fetch, and the restored worker
  // fetches again from the shards' restored clocks.
  return true;
}

} // namespace troupe::algos
