#include "algos/sandblaster/sandblaster.hpp"

#include <stdexcept>

#include "actors/coordinator.hpp"
#include "algos/sandblaster/lbfgs_driver.hpp"

namespace troupe::algos {

std::string sandblaster::name() const {
  return "lbfgs";
}

actors::shard_plan sandblaster::plan(const actors::job_config&) const {
  return actors::shard_plan::sync; // the driver's shards, one per slice
}

void sandblaster::check(const actors::job_config&) const {
  if (!lbfgs)
    throw std::invalid_argument("lbfgs: the algorithm has no L-BFGS run "
                                "(sandblaster::lbfgs; build() makes it)");
  algos::check(*lbfgs);
}

void sandblaster::configure_worker(const actors::job_config&,
                                   actors::worker_config&,
                                   std::vector<actors::shard_ref>) const {
  throw std::logic_error("lbfgs: its driver builds its own workers");
}

std::optional<nlohmann::json>
sandblaster::run(caf::actor_system& sys, const actors::job_config& config,
                 std::chrono::seconds timeout) const {
  check(config);
  auto job = std::make_shared<lbfgs_job>(*lbfgs);
  job->observers = config.observers;
  job->monitor = config.monitor;
  job->monitor_interval = config.monitor_interval;
  job->node_name = config.node_name;
  job->checkpoints = config.checkpoints;
  job->resume = config.resume;
  job->stop = config.stop;
  return run_lbfgs_in(sys, job, config.placement, timeout);
}

bool sandblaster::checkpointable() const noexcept {
  return true; // its driver takes them (lbfgs_checkpoint.cpp)
}

} // namespace troupe::algos
