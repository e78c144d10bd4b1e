#include "algos/diloco/diloco.hpp"

#include <cmath>
#include <stdexcept>

#include "actors/coordinator.hpp"
#include "algos/diloco/diloco_policy.hpp"

namespace troupe::algos {

double diloco_outer_lr(double lr, bool asynchronous,
                       std::uint32_t workers) noexcept {
  if (lr > 0)
    return lr;
  return asynchronous ? 1.0 / static_cast<double>(std::max(workers, 1u)) : 0.7;
}

std::string diloco_outer_optimizer(const std::string& name, bool asynchronous) {
  if (!name.empty())
    return name;
  return asynchronous ? "sgd" : "nesterov";
}

std::string diloco::name() const {
  return "diloco";
}

actors::shard_plan diloco::plan(const actors::job_config&) const {
  return asynchronous ? actors::shard_plan::async : actors::shard_plan::sync;
}

void diloco::check(const actors::job_config& job) const {
  if (inner_steps == 0)
    throw std::invalid_argument("diloco: --inner-steps must be at least 1");
  local.check("diloco", false);
  optim::check_optimizer(job.server.optimizer);
}

void diloco::configure_worker(const actors::job_config& job,
                              actors::worker_config& config,
                              std::vector<actors::shard_ref> shards) const {
  diloco_policy_options opts;
  opts.inner_steps = inner_steps;
  opts.inner = local.optimizer;
  opts.lr = local.lr;
  opts.schedule = local.schedule;
  opts.exchange = job.policy;
  opts.exchange.sync = !asynchronous;
  // A shard restored into synchronous rounds takes each worker's last
  // push again (as sync's).
  if (!asynchronous)
    opts.exchange.replay = std::max<std::size_t>(opts.exchange.replay, 1);
  config.make_policy = [shards = std::move(shards),
                        opts = std::move(opts)](std::size_t params) {
    return make_diloco_policy(shards, opts, params);
  };
}

bool diloco::tracks_clocks(const actors::job_config&) const noexcept {
  return !asynchronous;
}

bool diloco::reassigns_steps() const noexcept {
  return false;
}

bool diloco::restores_shards(const actors::job_config&) const {
  return false;
}

bool diloco::replicates_shards(const actors::job_config&) const {
  return false;
}

bool diloco::checkpointable() const noexcept {
  return true;
}

void diloco::report(const actors::coordinator_state& st,
                    nlohmann::json& out) const {
  const auto& o = st.config.server;
  out["diloco"] = {{"inner_steps", inner_steps},
                   {"inner_optimizer", local.optimizer.name},
                   {"inner_lr", local.lr},
                   {"outer_optimizer", o.optimizer.name},
                   {"outer_lr", o.lr},
                   {"outer_momentum", o.optimizer.momentum},
                   {"asynchronous", asynchronous}};
}

} // namespace troupe::algos
