#include "algos/sgp/sgp.hpp"

#include <cmath>
#include <stdexcept>

#include "actors/coordinator.hpp"
#include "algos/local_steps.hpp"
#include "algos/sgp/gossip_policy.hpp"
#include "optim/gossip.hpp"

namespace troupe::algos {

actors::peer_policy_options peer_options(const actors::job_config& job,
                                         actors::peer_policy_options settings,
                                         const local_steps& local) {
  auto opts = std::move(settings);
  opts.workers = job.workers;
  opts.optimizer = local.optimizer;
  opts.lr = local.lr;
  opts.schedule = local.schedule;
  opts.init = job.init;
  return opts;
}

std::string sgp::name() const {
  return "sgp";
}

actors::shard_plan sgp::plan(const actors::job_config&) const {
  return actors::shard_plan::none;
}

void sgp::check(const actors::job_config&) const {
  // A rate of 0 is pure averaging (algorithms.md §5 T1).
  local.check("sgp", true);
  if (settings.peers < 1 || settings.peers > 2)
    throw std::invalid_argument("sgp: peers must be 1 or 2");
}

void sgp::configure_worker(const actors::job_config& job,
                           actors::worker_config& config,
                           std::vector<actors::shard_ref>) const {
  auto opts = peer_options(job, settings, local);
  opts.neighbours = peer_ranks(job, config.id);
  config.make_policy = [opts = std::move(opts)](std::size_t params) {
    return make_sgp_policy(opts, params);
  };
  config.yield_steps = true;
}

bool sgp::peer_to_peer() const noexcept {
  return true;
}

std::vector<messages::worker_id> sgp::peer_ranks(const actors::job_config& job,
                                                 messages::worker_id w) const {
  return optim::exponential_neighbours(w, job.workers);
}

bool sgp::lingers() const noexcept {
  return true; // late shares still count; the workers' mean is evaluated
}

bool sgp::checkpointable() const noexcept {
  return true;
}

const optim::compress_options*
sgp::compression(const actors::job_config&) const noexcept {
  return &settings.compress;
}

void sgp::report(const actors::coordinator_state& st,
                 nlohmann::json& out) const {
  const auto& p = settings;
  double w = 0;
  for (auto& r : st.worker_reports)
    w += std::isfinite(r.weight.value) ? r.weight.value : 0.0;
  out["sgp"] = {{"optimizer", local.optimizer.name},
                {"lr", local.lr},
                {"evaluated", evaluated_mean(st.config)},
                {"mixing", mixing_report(p)},
                {"peers", p.peers},
                {"overlap", p.overlap},
                {"weight_sum", w}};
  if (out.contains("compression"))
    out["compression"]["gossip_gamma"] = p.gamma;
}

void sgp::report_worker(const messages::worker_stats& stats,
                        nlohmann::json& out) const {
  report_mixes(stats, out);
  out["weight"] = stats.weight.value;
}

} // namespace troupe::algos
