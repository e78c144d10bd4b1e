#include "actors/roles.hpp"

#include <algorithm>
#include <stdexcept>

#include <caf/actor_cast.hpp>

namespace troupe::actors {

bool needs_shards(const job_config& job) noexcept {
  return job.algorithm && job.algorithm->plan(job) != shard_plan::none;
}

bool is_peer_to_peer(const job_config& job) noexcept {
  return job.algorithm && job.algorithm->peer_to_peer();
}

bool lingers(const job_config& job) noexcept {
  return job.algorithm && job.algorithm->lingers();
}

std::vector<optim::slice> shard_ranges(const job_config& job) {
  if (job.shards == 0)
    return {}; // lsgd, sgp, dssync: no parameter server
  return job.algorithm ? job.algorithm->shard_ranges(job)
                       : optim::balanced_split(job.init->size(), job.shards);
}

void check_algorithm(const job_config& job) {
  if (!job.algorithm)
    throw std::invalid_argument("no algorithm (job_config::algorithm)");
  job.algorithm->check(job);
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
  sc.mode = job.algorithm->plan(job) == shard_plan::sync ? shard_mode::sync
                                                         : shard_mode::async;
  sc.request_timeout = job.request_timeout;
  job.algorithm->configure_shard(job, sc);
  if (job.resume) {
    auto it = job.resume->files.find("shard-" + std::to_string(i) + ".state");
    if (it != job.resume->files.end())
      sc.state = std::make_shared<const std::string>(it->second);
  }
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
  job.algorithm->configure_worker(job, wc, std::move(shards));
  wc.linger = lingers(job);
  wc.coordinator = std::move(coordinator);
  wc.max_steps = job.steps_per_worker;
  if (job.resume) {
    auto it = job.resume->files.find("worker-" + std::to_string(w) + ".state");
    if (it != job.resume->files.end())
      wc.state = std::make_shared<const std::string>(it->second);
  }
  wc.request_timeout = job.request_timeout;
  wc.adopt_data = job.adopt_data;
  wc.divergence_steps = job.divergence_steps;
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
