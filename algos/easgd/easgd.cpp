#include "algos/easgd/easgd.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "actors/coordinator.hpp"
#include "algos/easgd/easgd_policy.hpp"
#include "algos/local_steps.hpp"
#include "optim/schedule.hpp"

namespace troupe::algos {

double easgd_alpha(const optim::easgd_options& o,
                   std::uint32_t workers) noexcept {
  if (o.alpha > 0)
    return o.alpha;
  return 0.9 / static_cast<double>(std::max<std::uint32_t>(workers, 1));
}

void center_shard(const actors::job_config& job,
                  actors::parameter_shard_config& config) {
  config.store = {};
  config.store.optimizer = {"sgd", 0, 0};
  config.store.lr = 1;
  config.store.histogram_buckets = job.server.histogram_buckets;
}

std::string easgd::name() const {
  return "easgd";
}

actors::shard_plan easgd::plan(const actors::job_config&) const {
  return actors::shard_plan::center;
}

void easgd::check(const actors::job_config& job) const {
  auto bad = [](const std::string& what) { throw std::invalid_argument(what); };
  const auto& e = settings;
  if (e.tau == 0)
    bad("easgd: tau must be at least 1");
  if (!(e.lr > 0) || !std::isfinite(e.lr))
    bad("easgd: the learning rate must be positive");
  auto alpha = easgd_alpha(settings, job.workers);
  if (!(alpha > 0 && alpha < 1))
    bad("easgd: alpha must be in (0, 1)");
  if (alpha * job.workers >= 1)
    bad("easgd: beta = workers * alpha = " + std::to_string(alpha * job.workers)
        + " must be below 1 (the center overshoots)");
  if (!(e.momentum >= 0 && e.momentum <= 0.999999))
    bad("easgd: the momentum must be in [0, 1)");
  if (local.schedule)
    optim::schedule{*local.schedule};
}

void easgd::configure_shard(const actors::job_config& job,
                            actors::parameter_shard_config& config) const {
  center_shard(job, config);
}

void easgd::configure_worker(const actors::job_config& job,
                             actors::worker_config& config,
                             std::vector<actors::shard_ref> shards) const {
  auto opts = settings;
  opts.alpha = easgd_alpha(settings, job.workers);
  config.make_policy
      = [shards = std::move(shards), opts, sched = local.schedule,
         replay = job.policy.replay](std::size_t params) {
          return make_easgd_policy(shards, opts, params, sched, replay);
        };
  config.yield_steps = true;
}

bool easgd::checkpointable() const noexcept {
  return true;
}

bool easgd::restores_shards(const actors::job_config&) const {
  return true;
}

bool easgd::replicates_shards(const actors::job_config&) const {
  return true;
}

bool easgd::elastic(const actors::job_config&) const noexcept {
  return true;
}

void easgd::report(const actors::coordinator_state& st,
                   nlohmann::json& out) const {
  out["easgd"] = {{"tau", settings.tau},
                  {"alpha", easgd_alpha(settings, st.config.workers)},
                  {"momentum", settings.momentum},
                  {"lr", settings.lr}};
}

} // namespace troupe::algos
