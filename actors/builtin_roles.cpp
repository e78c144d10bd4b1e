// The built-in roles a node agent spawns by name, configured from the job
// exactly as in the coordinator's own process (roles.hpp).

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <caf/actor_cast.hpp>

#include "actors/detail/lbfgs_worker.hpp"
#include "actors/lbfgs_driver.hpp"
#include "actors/lbfgs_shard.hpp"
#include "actors/role_registry.hpp"
#include "actors/roles.hpp"

namespace troupe::actors {

using messages::worker_id;

namespace {

using handles = std::vector<caf::actor>;

caf::actor spawn_shard(role_context& ctx, const std::uint32_t& i) {
  return ctx.host(caf::actor_cast<caf::actor>(
      ctx.self()->spawn(parameter_shard, shard_config(ctx.job(), i))));
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

caf::actor spawn_syncer(role_context& ctx, const std::uint32_t& g,
                        const handles& workers, const handles& shards) {
  const auto& job = ctx.job();
  std::vector<worker_actor> members;
  for (auto& w : workers)
    members.push_back(caf::actor_cast<worker_actor>(w));
  return ctx.host(caf::actor_cast<caf::actor>(ctx.self()->spawn(
      shadow_syncer,
      syncer_config_of(job, g, std::move(members), shard_refs(job, shards)))));
}

const lbfgs_job& lbfgs_of(role_context& ctx, const char* what) {
  if (!ctx.job().lbfgs)
    throw std::invalid_argument(std::string{"spawn of an L-BFGS "} + what
                                + " without an L-BFGS job");
  return *ctx.job().lbfgs;
}

caf::actor spawn_lbfgs_shard(role_context& ctx, const std::uint32_t& i) {
  const auto& job = lbfgs_of(ctx, "shard");
  if (i >= job.shards)
    throw std::out_of_range("no L-BFGS shard " + std::to_string(i));
  return ctx.host(caf::actor_cast<caf::actor>(ctx.self()->spawn(
      lbfgs_shard,
      lbfgs_shard_config{i, job.ranges()[i], job.init, job.options.memory})));
}

caf::actor spawn_lbfgs_worker(role_context& ctx, const worker_id& w,
                              const handles& shards, const caf::actor& driver) {
  lbfgs_of(ctx, "worker");
  auto job = ctx.job().lbfgs;
  if (w >= job->workers || shards.size() != job->shards)
    throw std::invalid_argument("L-BFGS worker " + std::to_string(w) + " with "
                                + std::to_string(shards.size()) + " shards");
  std::vector<lbfgs_shard_actor> typed;
  for (auto& s : shards)
    typed.push_back(caf::actor_cast<lbfgs_shard_actor>(s));
  return ctx.host(caf::actor_cast<caf::actor>(ctx.self()->spawn<caf::detached>(
      detail::lbfgs_worker, w, driver, std::move(typed), job->ranges(), job)));
}

} // namespace

void register_builtin_roles(role_registry& roles) {
  roles.register_role<std::uint32_t>("shard", spawn_shard);
  roles.register_role<worker_id, handles, caf::actor>("worker",
                                                      spawn_worker_role);
  roles.register_role<std::uint32_t, handles, handles>("shadow_syncer",
                                                       spawn_syncer);
  roles.register_role<std::uint32_t>("lbfgs_shard", spawn_lbfgs_shard);
  roles.register_role<worker_id, handles, caf::actor>("lbfgs_worker",
                                                      spawn_lbfgs_worker);
}

} // namespace troupe::actors
