#include "algos/shadow/shadow.hpp"

#include <stdexcept>

#include "actors/coordinator.hpp"
#include "algos/easgd/easgd.hpp"
#include "algos/local_steps.hpp"
#include "algos/shadow/shadow_policy.hpp"
#include "algos/shadow/shadow_run.hpp"

namespace troupe::algos {

namespace {

bool has_center(const actors::job_config& job) {
  return job.shadow.mode == "easgd";
}

} // namespace

std::string shadow::name() const {
  return "shadow";
}

actors::shard_plan shadow::plan(const actors::job_config& job) const {
  return has_center(job) ? actors::shard_plan::center
                         : actors::shard_plan::none;
}

void shadow::check(const actors::job_config& job) const {
  // A rate of 0 is pure averaging.
  check_local_steps(job, "shadow", true);
  auto bad = [](const std::string& what) { throw std::invalid_argument(what); };
  const auto& o = job.shadow;
  if (o.mode != "easgd" && o.mode != "ma" && o.mode != "bmuf")
    bad("shadow: unknown synchronization '" + o.mode + "' (easgd, ma or bmuf)");
  auto alpha = actors::shadow_alpha(o, job.workers);
  if (o.mode == "easgd" && !(alpha > 0 && alpha < 1))
    bad("shadow: alpha must be in (0, 1)");
  auto eta = actors::shadow_block_momentum(o, job.workers);
  if (o.mode == "bmuf"
      && (!(eta >= 0 && eta <= 0.999999) || !(o.block_lr > 0)
          || o.block_lr > 10))
    bad("shadow: bmuf needs a block momentum in [0, 1) and a block rate in "
        "(0, 10]");
}

void shadow::configure_shard(const actors::job_config& job,
                             actors::parameter_shard_config& config) const {
  center_shard(job, config);
}

void shadow::configure_worker(const actors::job_config& job,
                              actors::worker_config& config,
                              std::vector<actors::shard_ref>) const {
  // Local steps that never wait; the syncer corrects in the background.
  config.make_policy = [opt = job.local_optimizer, lr = job.local_lr,
                        sched = job.local_schedule](std::size_t params) {
    return actors::make_shadow_policy(opt, lr, params, sched);
  };
  config.yield_steps = true;
}

bool shadow::lingers() const noexcept {
  return true; // the syncers read the workers' models to the end
}

std::unique_ptr<actors::algorithm_run>
shadow::start(const actors::job_config&) const {
  return std::make_unique<shadow_run>();
}

void shadow::report_worker(const messages::worker_stats& stats,
                           nlohmann::json& out) const {
  report_mixes(stats, out);
}

} // namespace troupe::algos
