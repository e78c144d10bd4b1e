#include "algos/sgp/sgp.hpp"

#include <cmath>
#include <stdexcept>

#include "actors/coordinator.hpp"
#include "algos/local_steps.hpp"
#include "algos/sgp/gossip_policy.hpp"

namespace troupe::algos {

actors::peer_policy_options peer_options(const actors::job_config& job) {
  auto opts = job.peer;
  opts.workers = job.workers;
  opts.optimizer = job.local_optimizer;
  opts.lr = job.local_lr;
  opts.schedule = job.local_schedule;
  opts.init = job.init;
  return opts;
}

std::string sgp::name() const {
  return "sgp";
}

actors::shard_plan sgp::plan(const actors::job_config&) const {
  return actors::shard_plan::none;
}

void sgp::check(const actors::job_config& job) const {
  // A rate of 0 is pure averaging (algorithms.md §5 T1).
  check_local_steps(job, "sgp", true);
  if (job.peer.peers < 1 || job.peer.peers > 2)
    throw std::invalid_argument("sgp: peers must be 1 or 2");
}

void sgp::configure_worker(const actors::job_config& job,
                           actors::worker_config& config,
                           std::vector<actors::shard_ref>) const {
  config.make_policy = [opts = peer_options(job)](std::size_t params) {
    return actors::make_sgp_policy(opts, params);
  };
  config.yield_steps = true;
}

bool sgp::peer_to_peer() const noexcept {
  return true;
}

bool sgp::lingers() const noexcept {
  return true; // late shares still count; the workers' mean is evaluated
}

const optim::compress_options*
sgp::compression(const actors::job_config& job) const noexcept {
  return &job.peer.compress;
}

void sgp::report(const actors::coordinator_state& st,
                 nlohmann::json& out) const {
  const auto& p = st.config.peer;
  double w = 0;
  for (auto& r : st.worker_reports)
    w += std::isfinite(r.weight.value) ? r.weight.value : 0.0;
  out["sgp"] = {{"optimizer", st.config.local_optimizer.name},
                {"lr", st.config.local_lr},
                {"evaluated", "mean of the workers' models"},
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
