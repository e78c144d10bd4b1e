// The roles every algorithm shares that a node agent spawns by name (shard,
// worker), configured from the job exactly as in the coordinator's own
// process (roles.hpp). An algorithm's own roles are registered from its
// folder (algos::algorithm::add_roles).

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <caf/actor_cast.hpp>

#include "actors/role_registry.hpp"
#include "actors/roles.hpp"

namespace troupe::actors {

using messages::worker_id;

namespace {

using handles = std::vector<caf::actor>;

/// Shard i, fresh or from `state` (its file in a checkpoint: the
/// coordinator reads the checkpoint, a node needs no access to it).
caf::actor host_shard(role_context& ctx, std::uint32_t i,
                      const std::string* state) {
  auto sc = shard_config(ctx.job(), i);
  // The coordinator asks for the shard's state (checkpoints).
  if (auto sender = ctx.self()->current_sender())
    sc.owner = sender->node();
  if (state)
    sc.state = std::make_shared<const std::string>(*state);
  return ctx.host(
      caf::actor_cast<caf::actor>(ctx.self()->spawn(parameter_shard, sc)));
}

/// Worker w, fresh or from its checkpoint file `state`.
caf::actor host_worker(role_context& ctx, worker_id w, const handles& shards,
                       const caf::actor& coordinator,
                       const std::string* state) {
  const auto& job = ctx.job();
  auto wc = worker_config_of(job, w, shard_refs(job, shards),
                             caf::actor_cast<coordinator_actor>(coordinator));
  if (state)
    wc.state = std::make_shared<const std::string>(*state);
  return ctx.host(caf::actor_cast<caf::actor>(
      spawn_worker(ctx.self(), job, std::move(wc))));
}

/// Shard i's hot backup: takes its state and pushes from `primary` alone.
caf::actor spawn_shard_backup(role_context& ctx, const std::uint32_t& i,
                              const caf::actor& primary) {
  auto sc = shard_config(ctx.job(), i);
  if (auto sender = ctx.self()->current_sender())
    sc.owner = sender->node();
  sc.state = nullptr; // the primary sends its own
  sc.primary = primary.address();
  return ctx.host(
      caf::actor_cast<caf::actor>(ctx.self()->spawn(parameter_shard, sc)));
}

caf::actor spawn_shard(role_context& ctx, const std::uint32_t& i) {
  return host_shard(ctx, i, nullptr);
}

caf::actor spawn_resumed_shard(role_context& ctx, const std::uint32_t& i,
                               const std::string& state) {
  return host_shard(ctx, i, &state);
}

caf::actor spawn_worker_role(role_context& ctx, const worker_id& w,
                             const handles& shards,
                             const caf::actor& coordinator) {
  return host_worker(ctx, w, shards, coordinator, nullptr);
}

caf::actor spawn_resumed_worker(role_context& ctx, const worker_id& w,
                                const handles& shards,
                                const caf::actor& coordinator,
                                const std::string& state) {
  return host_worker(ctx, w, shards, coordinator, &state);
}

/// A worker of a node that joined the running job: its id is beyond the
/// job's workers, its replica is over the examples the live workers ceded
/// and its steps are those they ceded (`share`).
caf::actor spawn_joined_worker(role_context& ctx, const worker_id& w,
                               const handles& shards,
                               const caf::actor& coordinator,
                               const messages::cede_msg& share) {
  const auto& job = ctx.job();
  if (!job.make_joined_replica)
    throw std::invalid_argument("this job cannot build a joining worker's "
                                "replica");
  // Worker 0's settings: the algorithm's are the same for every worker.
  auto wc = worker_config_of(job, 0, shard_refs(job, shards),
                             caf::actor_cast<coordinator_actor>(coordinator));
  wc.id = w;
  wc.make_replica = [f = job.make_joined_replica, w, ex = share.examples] {
    return f(w, ex);
  };
  wc.max_steps = share.steps;
  wc.state = nullptr;
  wc.step_counter = nullptr;
  wc.step_delay = w < job.step_delays.size() ? job.step_delays[w]
                  : job.step_delays.empty()  ? std::chrono::microseconds{0}
                                             : job.step_delays.front();
  return ctx.host(caf::actor_cast<caf::actor>(
      spawn_worker(ctx.self(), job, std::move(wc))));
}

} // namespace

void register_shared_roles(role_registry& roles) {
  roles.register_role<worker_id, handles, caf::actor, messages::cede_msg>(
      "joined_worker", spawn_joined_worker);
  roles.register_role<std::uint32_t>("shard", spawn_shard);
  roles.register_role<worker_id, handles, caf::actor>("worker",
                                                      spawn_worker_role);
  roles.register_role<std::uint32_t, caf::actor>("shard_backup",
                                                 spawn_shard_backup);
  roles.register_role<std::uint32_t, std::string>("resumed_shard",
                                                  spawn_resumed_shard);
  roles.register_role<worker_id, handles, caf::actor, std::string>(
      "resumed_worker", spawn_resumed_worker);
}

} // namespace troupe::actors
