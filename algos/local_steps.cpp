#include "algos/local_steps.hpp"

#include <cmath>
#include <stdexcept>

namespace troupe::algos {

local_steps local_steps::of(const job_build& b) {
  const auto& o = b.options;
  local_steps s;
  s.schedule = b.local_schedule();
  s.optimizer.name = o.optimizer;
  s.optimizer.momentum = o.momentum;
  s.optimizer.weight_decay = o.weight_decay;
  for (const auto& l : b.layers) // (novograd's moments are per layer)
    s.optimizer.layers.push_back(l.size);
  s.lr = o.lr;
  return s;
}

void local_steps::check(const std::string& algo, bool zero_ok) const {
  if (!(lr > 0 || (zero_ok && lr == 0)) || !std::isfinite(lr))
    throw std::invalid_argument(algo + ": the learning rate must be positive");
  optim::check_optimizer(optimizer);
  if (schedule)
    optim::schedule{*schedule};
}

void decentralized_defaults(job_options& o) {
  if (o.optimizer.empty())
    o.optimizer = "nesterov";
  if (o.weight_decay == -1)
    o.weight_decay = 1e-4;
}

void report_mixes(const messages::worker_stats& stats, nlohmann::json& out) {
  out["mixes"] = stats.mixes;
  out["timeouts"] = stats.timeouts;
  if (stats.mix_clipped || stats.mix_discarded) {
    out["mix_clipped"] = stats.mix_clipped;
    out["mix_discarded"] = stats.mix_discarded;
  }
}

std::string evaluated_mean(const actors::job_config& job) {
  return job.byzantine.empty() ? "mean of the workers' models"
                               : "mean of the honest workers' models";
}

nlohmann::json mixing_report(const actors::peer_policy_options& p) {
  nlohmann::json out{{"rule", p.mix_rule}};
  if (p.mix_rule == "cclip")
    out["clip_radius"] = p.mix_options.clip_radius;
  if (p.mix_rule == "krum" || p.mix_rule == "multi_krum"
      || p.mix_rule == "trimmed_mean" || p.mix_rule == "cge")
    out["f"] = p.mix_options.f;
  return out;
}

} // namespace troupe::algos
