// The roles every algorithm shares that a node agent spawns by name (shard,
// worker), configured from the job exactly as in the coordinator's own
// process (roles.hpp). An algorithm's own roles are registered from its
// folder (algos::algorithm::add_roles).

#include <cstdint>
#include <vector>

#include <caf/actor_cast.hpp>

#include "actors/role_registry.hpp"
#include "actors/roles.hpp"

namespace troupe::actors {

using messages::worker_id;

namespace {

using handles = std::vector<caf::actor>;

caf::actor spawn_shard(role_context& ctx, const std::uint32_t& i) {
  auto sc = shard_config(ctx.job(), i);
  // The coordinator asks for the shard's state (checkpoints).
  if (auto sender = ctx.self()->current_sender())
    sc.owner = sender->node();
  return ctx.host(
      caf::actor_cast<caf::actor>(ctx.self()->spawn(parameter_shard, sc)));
}

caf::actor spawn_worker_role(role_context& ctx, const worker_id& w,
                             const handles& shards,
                             const caf::actor& coordinator) {
  const auto& job = ctx.job();
  auto wc = worker_config_of(job, w, shard_refs(job, shards),
                             caf::actor_cast<coordinator_actor>(coordinator));
  return ctx.host(caf::actor_cast<caf::actor>(
      spawn_worker(ctx.self(), job, std::move(wc))));
}

} // namespace

void register_shared_roles(role_registry& roles) {
  roles.register_role<std::uint32_t>("shard", spawn_shard);
  roles.register_role<worker_id, handles, caf::actor>("worker",
                                                      spawn_worker_role);
}

} // namespace troupe::actors
