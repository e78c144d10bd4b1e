#include "algos/gadmm/gadmm.hpp"

#include <cmath>
#include <stdexcept>

#include <caf/config_option_set.hpp>

#include "actors/coordinator.hpp"
#include "algos/sgp/sgp.hpp"

namespace troupe::algos {

std::string gadmm::summary() const {
  return "ADMM on a chain of workers, heads and tails alternating (GADMM)";
}

std::shared_ptr<algorithm> gadmm::clone() const {
  return std::make_shared<gadmm>(*this);
}

void gadmm::bind(caf::config_option_set& set) {
  caf::string_view g = "?gadmm";
  set.add(settings.rho, g, "rho",
          "the augmented Lagrangian's penalty and the duals' step "
          "(default 1)")
      .add(settings.round_steps, g, "inner-steps",
           "local steps an iteration (default 1: linearized GADMM)")
      .add(settings.rechain, g, "rechain",
           "dynamic GADMM: a new chain every this many iterations (default "
           "0: one chain)");
}

void gadmm::check_flags(const job_options&,
                        const std::set<std::string>&) const {
  auto fail
      = [](const std::string& what) { throw std::invalid_argument(what); };
  if (!(settings.rho > 0 && settings.rho <= 1e6)
      || !std::isfinite(settings.rho))
    fail("--rho must be in (0, 1e6]");
  if (settings.round_steps < 1 || settings.round_steps > 1000000)
    fail("--inner-steps must be in [1, 1000000]");
  if (settings.rechain > 1000000000)
    fail("--rechain must be at most 1e9 iterations (0: one chain)");
}

void gadmm::resolve(job_options& o, double model_lr) const {
  // Plain SGD: with momentum the primal lags the duals' ascent and the
  // iteration diverges (mlp, Nesterov 0.9 at 0.01 with rho 0.01, and on
  // LSQ; docs/algorithms.md).
  if (o.optimizer.empty())
    o.optimizer = "sgd";
  algorithm::resolve(o, model_lr);
  if (o.lr == 0)
    o.lr
        = 8 * model_lr; // plain SGD (mlp 0.4: 0.867 after 3 epochs, 0.2: 0.863)
}

bool gadmm::uses_shards(const job_options&) const {
  return false;
}

void gadmm::build(job_build& b) {
  local = local_steps::of(b);
  seed = b.options.seed;
  b.job.shards = 0;
}

std::string gadmm::name() const {
  return "gadmm";
}

actors::shard_plan gadmm::plan(const actors::job_config&) const {
  return actors::shard_plan::none;
}

void gadmm::check(const actors::job_config&) const {
  local.check("gadmm", false);
  if (!(settings.rho > 0) || settings.round_steps < 1)
    throw std::invalid_argument(
        "gadmm: rho must be positive and an iteration at least one step");
}

void gadmm::configure_worker(const actors::job_config& job,
                             actors::worker_config& config,
                             std::vector<actors::shard_ref>) const {
  actors::peer_policy_options q;
  q.seed = seed;
  auto opts = peer_options(job, q, local);
  opts.any_peer = any_peer(job);
  if (!opts.any_peer)
    opts.neighbours = peer_ranks(job, config.id);
  config.make_policy = [opts = std::move(opts), g = settings,
                        steps = job.steps_per_worker](std::size_t params) {
    return make_gadmm_policy(opts, g, params, steps);
  };
  config.yield_steps = true;
}

bool gadmm::peer_to_peer() const noexcept {
  return true;
}

bool gadmm::any_peer(const actors::job_config&) const {
  return settings.rechain > 0;
}

std::vector<messages::worker_id>
gadmm::peer_ranks(const actors::job_config& job, messages::worker_id w) const {
  if (settings.rechain > 0)
    return algorithm::peer_ranks(job, w);
  auto out = gadmm_neighbours(job.workers, settings, seed, 0, w);
  return {out.begin(), out.end()};
}

bool gadmm::lingers() const noexcept {
  return true; // the workers' mean is evaluated
}

bool gadmm::checkpointable() const noexcept {
  return true;
}

void gadmm::report(const actors::coordinator_state& st,
                   nlohmann::json& out) const {
  out["gadmm"]
      = {{"optimizer", local.optimizer.name},
         {"lr", local.lr},
         {"rho", settings.rho},
         {"inner_steps", settings.round_steps},
         {"rechain", settings.rechain},
         {"chain", settings.rechain > 0 ? "dynamic" : "ranks in order"},
         {"evaluated", evaluated_mean(st.config)}};
}

void gadmm::report_worker(const messages::worker_stats& stats,
                          nlohmann::json& out) const {
  report_mixes(stats, out);
}

} // namespace troupe::algos
