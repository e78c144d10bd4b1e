#include "algos/lsgd/lsgd.hpp"

#include <stdexcept>

#include "actors/coordinator.hpp"
#include "algos/local_steps.hpp"
#include "algos/lsgd/lsgd_policy.hpp"
#include "algos/lsgd/lsgd_run.hpp"

namespace troupe::algos {

std::string lsgd::name() const {
  return "lsgd";
}

actors::shard_plan lsgd::plan(const actors::job_config&) const {
  return actors::shard_plan::none;
}

void lsgd::check(const actors::job_config& job) const {
  check_local_steps(job, "lsgd", false);
  auto in = [](double x, double lo, double hi) { return x >= lo && x <= hi; };
  const auto& l = job.lsgd;
  if (!in(l.lambda, 0, 1) || !in(l.lambda_g, 0, 1))
    throw std::invalid_argument("lsgd: lambda and lambda_g must be in [0, 1]");
  if (l.tau == 0 || l.tau_g < l.tau)
    throw std::invalid_argument("lsgd: need 1 <= tau <= tau_g");
  if (l.score_window == 0)
    throw std::invalid_argument("lsgd: the score window must be at least 1");
}

void lsgd::configure_worker(const actors::job_config& job,
                            actors::worker_config& config,
                            std::vector<actors::shard_ref>) const {
  config.make_policy = [opt = job.local_optimizer, lr = job.local_lr,
                        sched = job.local_schedule,
                        window = job.lsgd.score_window](std::size_t params) {
    return actors::make_lsgd_policy(opt, lr, params, sched, window);
  };
  config.yield_steps = true;
}

bool lsgd::lingers() const noexcept {
  return true; // the global leader's model is evaluated at the end
}

std::unique_ptr<actors::algorithm_run>
lsgd::start(const actors::job_config&) const {
  return std::make_unique<lsgd_run>();
}

void lsgd::report(const actors::coordinator_state& st,
                  nlohmann::json& out) const {
  const auto& l = st.config.lsgd;
  out["lsgd"] = {{"lambda", l.lambda},
                 {"lambda_g", l.lambda_g},
                 {"tau", l.tau},
                 {"tau_g", l.tau_g},
                 {"score_window", l.score_window},
                 {"optimizer", st.config.local_optimizer.name},
                 {"lr", st.config.local_lr}};
}

void lsgd::report_worker(const messages::worker_stats& w,
                         nlohmann::json& out) const {
  out["pulls"] = w.pulls;
  out["mean_pull_distance"]
      = w.pulls > 0 ? w.pull_distance.value / w.pulls : 0.0;
}

} // namespace troupe::algos
