// ShadowSync's own role: the shadow syncer a node agent spawns by name
// ("shadow_syncer": group g, its workers in rank order, shard handles;
// "resumed_shadow_syncer": the same and its checkpoint file), configured
// from the job exactly as in the coordinator's process.

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <caf/actor_cast.hpp>

#include "actors/coordinator.hpp"
#include "actors/role_registry.hpp"
#include "actors/roles.hpp"
#include "algos/lsgd/leader_board.hpp"
#include "algos/shadow/shadow.hpp"
#include "algos/shadow/shadow_state.hpp"
#include "algos/shadow/shadow_syncer.hpp"

namespace troupe::algos {

shadow_syncer_config syncer_config_of(const actors::job_config& job,
                                      const optim::shadow_options& opts,
                                      std::uint32_t g,
                                      std::vector<actors::worker_actor> members,
                                      std::vector<actors::shard_ref> shards) {
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

} // namespace troupe::algos

namespace troupe::algos {

using namespace actors;

namespace {

using handles = std::vector<caf::actor>;

/// Syncer g of the job, fresh or from `state` (its file in a checkpoint:
/// the coordinator reads the checkpoint, a node needs no access to it).
caf::actor host_syncer(role_context& ctx, std::uint32_t g,
                       const handles& workers, const handles& shards,
                       const std::string* state) {
  const auto& job = ctx.job();
  const auto* algo = dynamic_cast<const shadow*>(job.algorithm.get());
  if (!algo)
    throw std::invalid_argument("spawn of a shadow syncer in a job of another "
                                "algorithm");
  std::vector<worker_actor> members;
  for (auto& w : workers)
    members.push_back(caf::actor_cast<worker_actor>(w));
  auto sc = syncer_config_of(job, algo->settings, g, std::move(members),
                             shard_refs(job, shards));
  // The coordinator pauses, saves and resumes it (checkpoints).
  if (auto sender = ctx.self()->current_sender())
    sc.owner = sender->node();
  if (state) {
    auto file = shadow_syncer_file(g);
    auto saved = decode_shadow_syncer(*state, file);
    check_fits(sc, saved, file);
    sc.state = std::make_shared<const shadow_syncer_saved>(std::move(saved));
  }
  return ctx.host(caf::actor_cast<caf::actor>(
      ctx.self()->spawn(shadow_syncer, std::move(sc))));
}

caf::actor spawn_syncer(role_context& ctx, const std::uint32_t& g,
                        const handles& workers, const handles& shards) {
  return host_syncer(ctx, g, workers, shards, nullptr);
}

caf::actor spawn_resumed_syncer(role_context& ctx, const std::uint32_t& g,
                                const handles& workers, const handles& shards,
                                const std::string& state) {
  return host_syncer(ctx, g, workers, shards, &state);
}

} // namespace

void shadow::add_roles(actors::role_registry& roles) const {
  roles.register_role<std::uint32_t, handles, handles>("shadow_syncer",
                                                       spawn_syncer);
  roles.register_role<std::uint32_t, handles, handles, std::string>(
      "resumed_shadow_syncer", spawn_resumed_syncer);
}

} // namespace troupe::algos
