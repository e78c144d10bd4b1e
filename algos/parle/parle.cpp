#include "algos/parle/parle.hpp"

#include <stdexcept>

#include "actors/coordinator.hpp"
#include "algos/parle/parle_policy.hpp"

namespace troupe::algos {

std::string parle::name() const {
  return "parle";
}

actors::shard_plan parle::plan(const actors::job_config&) const {
  return actors::shard_plan::sync;
}

void parle::check(const actors::job_config&) const {
  if (inner_steps == 0)
    throw std::invalid_argument("parle: --inner-steps must be at least 1");
  local.check("parle", false);
}

void parle::configure_worker(const actors::job_config& job,
                             actors::worker_config& config,
                             std::vector<actors::shard_ref> shards) const {
  parle_policy_options opts;
  opts.inner_steps = inner_steps;
  opts.gamma = gamma;
  opts.rho = rho * static_cast<double>(inner_steps) * job.workers;
  opts.scoping = scoping;
  opts.rounds_per_epoch = rounds_per_epoch;
  opts.optimizer = local.optimizer;
  opts.lr = local.lr;
  opts.schedule = local.schedule;
  opts.exchange = job.policy;
  opts.exchange.sync = true;
  opts.exchange.replay = std::max<std::size_t>(opts.exchange.replay, 1);
  config.make_policy = [shards = std::move(shards),
                        opts = std::move(opts)](std::size_t params) {
    return make_parle_policy(shards, opts, params);
  };
}

bool parle::tracks_clocks(const actors::job_config&) const noexcept {
  return true; // a round waits for every replica's anchor
}

bool parle::reassigns_steps() const noexcept {
  return false;
}

bool parle::checkpointable() const noexcept {
  return true;
}

bool parle::restores_shards(const actors::job_config&) const {
  return false;
}

void parle::report(const actors::coordinator_state& st,
                   nlohmann::json& out) const {
  out["parle"]
      = {{"inner_steps", inner_steps},
         {"gamma", gamma},
         {"rho", rho * static_cast<double>(inner_steps) * st.config.workers},
         {"scoping", scoping},
         {"rounds_per_epoch", rounds_per_epoch}};
}

} // namespace troupe::algos
