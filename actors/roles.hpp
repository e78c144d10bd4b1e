#pragma once

#include <cstdint>
#include <vector>

#include <caf/actor_cast.hpp>

#include "actors/coordinator.hpp"
#include "actors/worker.hpp"

// How a job's roles are configured, shared by the coordinator (roles in its
// own process) and the node agent (roles on another node): the same job
// builds the same shards and workers wherever they run.

namespace troupe::actors {

/// The shards' ranges of the flat parameter vector, in shard order.
std::vector<optim::slice> shard_ranges(const job_config& job);

/// Throws std::invalid_argument naming the first bad setting of the job's
/// algorithm (none given, or its algorithm::check()).
void check_algorithm(const job_config& job);

/// The configuration of shard i of a job.
parameter_shard_config shard_config(const job_config& job, std::uint32_t i);

/// The configuration of worker w of a job, talking to `shards` and
/// reporting to `coordinator`.
worker_config worker_config_of(const job_config& job, messages::worker_id w,
                               std::vector<shard_ref> shards,
                               coordinator_actor coordinator);

/// Whether the job's algorithm has parameter shards (its shard_plan).
bool needs_shards(const job_config& job) noexcept;

/// Peer-to-peer algorithms (algorithm::peer_to_peer): the workers get each
/// other's handles before the start.
bool is_peer_to_peer(const job_config& job) noexcept;

/// Workers stay alive after their last step, answering fetches (the
/// evaluated model is theirs: algorithm::lingers), until the job ends; the
/// coordinator asks them for their report once more then.
bool lingers(const job_config& job) noexcept;

/// Shard references from handles in shard order (as they cross the wire).
std::vector<shard_ref> shard_refs(const job_config& job,
                                  const std::vector<caf::actor>& handles);

/// Spawns a worker from `self`: on a thread of its own if the job asks for
/// detached workers.
template <class Self>
worker_actor spawn_worker(Self* self, const job_config& job,
                          worker_config config) {
  if (job.detached_workers)
    return caf::actor_cast<worker_actor>(
        self->template spawn<caf::detached>(worker, std::move(config)));
  return caf::actor_cast<worker_actor>(self->spawn(worker, std::move(config)));
}

} // namespace troupe::actors
