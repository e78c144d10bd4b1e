#include "actors/roles.hpp"

#include <stdexcept>

#include <caf/actor_cast.hpp>

namespace troupe::actors {

std::vector<optim::slice> shard_ranges(const job_config& job) {
  return optim::balanced_split(job.init->size(), job.shards);
}

parameter_shard_config shard_config(const job_config& job, std::uint32_t i) {
  auto ranges = shard_ranges(job);
  if (i >= ranges.size())
    throw std::out_of_range("shard " + std::to_string(i) + " of a job with "
                            + std::to_string(ranges.size()) + " shards");
  parameter_shard_config sc;
  sc.index = i;
  sc.range = ranges[i];
  sc.init = job.init;
  sc.store = job.server;
  sc.mode = job.algo == "sync" ? shard_mode::sync : shard_mode::async;
  sc.staleness_bound = job.staleness_bound;
  return sc;
}

worker_config worker_config_of(const job_config& job, messages::worker_id w,
                               std::vector<shard_ref> shards,
                               coordinator_actor coordinator) {
  if (w >= job.workers)
    throw std::out_of_range("worker " + std::to_string(w) + " of a job with "
                            + std::to_string(job.workers) + " workers");
  worker_config wc;
  wc.id = w;
  wc.make_replica = [f = job.make_replica, w] { return f(w); };
  auto policy = job.policy;
  policy.sync = job.algo == "sync";
  wc.make_policy = [shards = std::move(shards), policy](std::size_t params) {
    return make_ps_policy(shards, policy, params);
  };
  wc.coordinator = std::move(coordinator);
  wc.max_steps = job.steps_per_worker;
  wc.request_timeout = job.request_timeout;
  wc.adopt_data = job.adopt_data;
  if (w < job.step_counters.size())
    wc.step_counter = job.step_counters[w];
  if (w < job.step_delays.size())
    wc.step_delay = job.step_delays[w];
  return wc;
}

std::vector<shard_ref> shard_refs(const job_config& job,
                                  const std::vector<caf::actor>& handles) {
  auto ranges = shard_ranges(job);
  if (handles.size() != ranges.size())
    throw std::invalid_argument(std::to_string(handles.size())
                                + " shard handles for a job with "
                                + std::to_string(ranges.size()) + " shards");
  std::vector<shard_ref> refs;
  for (std::size_t i = 0; i < ranges.size(); ++i)
    refs.push_back(
        {caf::actor_cast<parameter_shard_actor>(handles[i]), ranges[i]});
  return refs;
}

} // namespace troupe::actors
