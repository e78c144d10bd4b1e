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

void lsgd::check(const actors::job_config&) const {
  local.check("lsgd", false);
  auto in = [](double x, double lo, double hi) { return x >= lo && x <= hi; };
  const auto& l = settings;
  if (!in(l.lambda, 0, 1) || !in(l.lambda_g, 0, 1))
    throw std::invalid_argument("lsgd: lambda and lambda_g must be in [0, 1]");
  if (l.tau == 0 || l.tau_g < l.tau)
    throw std::invalid_argument("lsgd: need 1 <= tau <= tau_g");
  if (l.score_window == 0)
    throw std::invalid_argument("lsgd: the score window must be at least 1");
}

void lsgd::configure_worker(const actors::job_config&,
                            actors::worker_config& config,
                            std::vector<actors::shard_ref>) const {
  config.make_policy
      = [opt = local.optimizer, lr = local.lr, sched = local.schedule,
         window = settings.score_window](std::size_t params) {
          return make_lsgd_policy(opt, lr, params, sched, window);
        };
  config.yield_steps = true;
}

std::string lsgd::servers(const actors::job_config& job) const {
  if (job.shards > 0 || group_of.empty())
    return algorithm::servers(job);
  return std::to_string(settings.groups) + " groups";
}

bool lsgd::lingers() const noexcept {
  return true; // the global leader's model is evaluated at the end
}

bool lsgd::checkpointable() const noexcept {
  return true;
}

std::unique_ptr<actors::algorithm_run>
lsgd::start(const actors::job_config&) const {
  return std::make_unique<lsgd_run>(settings, group_of);
}

void lsgd::report(const actors::coordinator_state& st,
                  nlohmann::json& out) const {
  const auto& l = settings;
  out["lsgd"] = {{"lambda", l.lambda},
                 {"lambda_g", l.lambda_g},
                 {"tau", l.tau},
                 {"tau_g", l.tau_g},
                 {"score_window", l.score_window},
                 {"optimizer", local.optimizer.name},
                 {"lr", local.lr}};
}

void lsgd::report_worker(const messages::worker_stats& w,
                         nlohmann::json& out) const {
  out["pulls"] = w.pulls;
  out["mean_pull_distance"]
      = w.pulls > 0 ? w.pull_distance.value / w.pulls : 0.0;
}

} // namespace troupe::algos
