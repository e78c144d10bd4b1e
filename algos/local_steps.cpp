#include "algos/local_steps.hpp"

#include <cmath>
#include <stdexcept>

#include "optim/optimizer.hpp"
#include "optim/schedule.hpp"

namespace troupe::algos {

void check_local_steps(const actors::job_config& job, const std::string& algo,
                       bool zero_ok) {
  if (!(job.local_lr > 0 || (zero_ok && job.local_lr == 0))
      || !std::isfinite(job.local_lr))
    throw std::invalid_argument(algo + ": the learning rate must be positive");
  optim::make_optimizer<float>(job.local_optimizer, 1);
  if (job.local_schedule)
    optim::schedule{*job.local_schedule};
}

void set_local_steps(job_build& b) {
  const auto& o = b.options;
  auto& job = b.job;
  job.local_schedule = b.local_schedule();
  job.local_optimizer.name = o.optimizer;
  job.local_optimizer.momentum = o.momentum;
  job.local_optimizer.weight_decay = o.weight_decay;
  job.local_lr = o.lr;
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
}

} // namespace troupe::algos
