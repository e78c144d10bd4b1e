#include "algos/shadow/shadow.hpp"

#include <algorithm>
#include <stdexcept>

#include "actors/coordinator.hpp"
#include "algos/easgd/easgd.hpp"
#include "algos/local_steps.hpp"
#include "algos/lsgd/leader_board.hpp"
#include "algos/shadow/shadow_policy.hpp"
#include "algos/shadow/shadow_run.hpp"

namespace troupe::algos {

std::string shadow::name() const {
  return "shadow";
}

actors::shard_plan shadow::plan(const actors::job_config&) const {
  return settings.mode == "easgd" ? actors::shard_plan::center
                                  : actors::shard_plan::none;
}

void shadow::check(const actors::job_config& job) const {
  // A rate of 0 is pure averaging.
  local.check("shadow", true);
  auto bad = [](const std::string& what) { throw std::invalid_argument(what); };
  const auto& o = settings;
  if (o.mode != "easgd" && o.mode != "ma" && o.mode != "bmuf")
    bad("shadow: unknown synchronization '" + o.mode + "' (easgd, ma or bmuf)");
  auto alpha = shadow_alpha(o, job.workers);
  if (o.mode == "easgd" && !(alpha > 0 && alpha < 1))
    bad("shadow: alpha must be in (0, 1)");
  auto eta = shadow_block_momentum(o, job.workers);
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

void shadow::configure_worker(const actors::job_config&,
                              actors::worker_config& config,
                              std::vector<actors::shard_ref>) const {
  // Local steps that never wait; the syncer corrects in the background.
  config.make_policy = [opt = local.optimizer, lr = local.lr,
                        sched = local.schedule](std::size_t params) {
    return make_shadow_policy(opt, lr, params, sched);
  };
  config.yield_steps = true;
}

bool shadow::lingers() const noexcept {
  return true; // the syncers read the workers' models to the end
}

std::unique_ptr<actors::algorithm_run>
shadow::start(const actors::job_config&) const {
  return std::make_unique<shadow_run>(*this);
}

std::string shadow::servers(const actors::job_config& job) const {
  if (job.shards > 0 || group_of.empty())
    return algorithm::servers(job);
  return std::to_string(std::max<std::uint64_t>(groups, 1)) + " groups";
}

std::vector<std::uint32_t>
shadow::groups_in(const actors::job_config& job) const {
  if (group_of.size() == job.workers)
    return group_of;
  return lsgd_groups(
      job.workers,
      static_cast<std::uint32_t>(std::max<std::uint64_t>(groups, 1)),
      job.placement.worker_node);
}

void shadow::report_worker(const messages::worker_stats& stats,
                           nlohmann::json& out) const {
  report_mixes(stats, out);
}

bool shadow::checkpointable() const noexcept {
  return true;
}

bool shadow::restores_shards(const actors::job_config&) const {
  return settings.mode == "easgd";
}

} // namespace troupe::algos
