// Sandblaster's own roles a node agent spawns by name: "lbfgs_shard" (index
// i) and "lbfgs_worker" (rank w, L-BFGS shard handles in shard order,
// driver), configured from the run of the job's algorithm.

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <caf/actor_cast.hpp>

#include "actors/coordinator.hpp"
#include "actors/role_registry.hpp"
#include "algos/sandblaster/detail/lbfgs_worker.hpp"
#include "algos/sandblaster/lbfgs_driver.hpp"
#include "algos/sandblaster/lbfgs_shard.hpp"
#include "algos/sandblaster/sandblaster.hpp"

namespace troupe::algos {

using namespace actors;
using messages::worker_id;

namespace {

using handles = std::vector<caf::actor>;

/// The L-BFGS run of the job's algorithm (Sandblaster, built).
std::shared_ptr<const lbfgs_job> lbfgs_of(role_context& ctx, const char* what) {
  const auto* algo
      = dynamic_cast<const sandblaster*>(ctx.job().algorithm.get());
  if (!algo || !algo->lbfgs)
    throw std::invalid_argument(std::string{"spawn of an L-BFGS "} + what
                                + " without an L-BFGS job");
  return algo->lbfgs;
}

caf::actor spawn_lbfgs_shard(role_context& ctx, const std::uint32_t& i) {
  auto run = lbfgs_of(ctx, "shard");
  const auto& job = *run;
  if (i >= job.shards)
    throw std::out_of_range("no L-BFGS shard " + std::to_string(i));
  lbfgs_shard_config config;
  config.index = i;
  config.range = job.ranges()[i];
  config.init = job.init;
  config.memory = job.options.memory;
  // The driver asks for the shard (and later for its state, checkpoints).
  if (auto sender = ctx.self()->current_sender())
    config.driver = caf::actor_cast<caf::actor_addr>(sender);
  return ctx.host(caf::actor_cast<caf::actor>(
      ctx.self()->spawn(lbfgs_shard, std::move(config))));
}

caf::actor spawn_lbfgs_worker(role_context& ctx, const worker_id& w,
                              const handles& shards, const caf::actor& driver) {
  auto job = lbfgs_of(ctx, "worker");
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

void sandblaster::add_roles(actors::role_registry& roles) const {
  roles.register_role<std::uint32_t>("lbfgs_shard", spawn_lbfgs_shard);
  roles.register_role<worker_id, handles, caf::actor>("lbfgs_worker",
                                                      spawn_lbfgs_worker);
}

} // namespace troupe::algos
