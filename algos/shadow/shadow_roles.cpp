// ShadowSync's own role: the shadow syncer a node agent spawns by name
// ("shadow_syncer": group g, its workers in rank order, shard handles),
// configured from the job exactly as in the coordinator's process.

#include <cstdint>
#include <stdexcept>
#include <vector>

#include <caf/actor_cast.hpp>

#include "actors/coordinator.hpp"
#include "actors/role_registry.hpp"
#include "actors/roles.hpp"
#include "algos/lsgd/leader_board.hpp"
#include "algos/shadow/shadow.hpp"
#include "algos/shadow/shadow_syncer.hpp"

namespace troupe::actors {

shadow_syncer_config syncer_config_of(const job_config& job,
                                      const optim::shadow_options& opts,
                                      std::uint32_t g,
                                      std::vector<worker_actor> members,
                                      std::vector<shard_ref> shards) {
  shadow_syncer_config sc;
  sc.index = g;
  for (auto& m : members)
    sc.members.push_back(caf::actor_cast<shadow_member_actor>(m));
  sc.shards = std::move(shards);
  sc.opts = opts;
  sc.workers = job.workers;
  sc.init = job.init;
  sc.timeout = job.request_timeout;
  return sc;
}

} // namespace troupe::actors

namespace troupe::algos {

using namespace actors;

namespace {

using handles = std::vector<caf::actor>;

caf::actor spawn_syncer(role_context& ctx, const std::uint32_t& g,
                        const handles& workers, const handles& shards) {
  const auto& job = ctx.job();
  const auto* algo = dynamic_cast<const shadow*>(job.algorithm.get());
  if (!algo)
    throw std::invalid_argument("spawn of a shadow syncer in a job of another "
                                "algorithm");
  std::vector<worker_actor> members;
  for (auto& w : workers)
    members.push_back(caf::actor_cast<worker_actor>(w));
  return ctx.host(caf::actor_cast<caf::actor>(ctx.self()->spawn(
      shadow_syncer,
      syncer_config_of(job, algo->settings, g, std::move(members),
                       shard_refs(job, shards)))));
}

} // namespace

void shadow::add_roles(actors::role_registry& roles) const {
  roles.register_role<std::uint32_t, handles, handles>("shadow_syncer",
                                                       spawn_syncer);
}

} // namespace troupe::algos
