// Gaia's flags, their checks, its part of a job and its workers.

#include "algos/gaia/gaia.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <caf/config_option_set.hpp>

#include "actors/coordinator.hpp"
#include "algos/gaia/gaia_run.hpp"
#include "algos/lsgd/leader_board.hpp"
#include "algos/server_settings.hpp"

namespace troupe::algos {

std::string gaia::summary() const {
  return "groups with a server each; only significant changes cross (Gaia)";
}

std::shared_ptr<algorithm> gaia::clone() const {
  return std::make_shared<gaia>(*this);
}

void gaia::bind(caf::config_option_set& set) {
  caf::string_view g = "?gaia";
  set.add(groups, g, "groups",
          "groups (data centres), a server each (default: one per node in a "
          "distributed job, else 2)")
      .add(significance, g, "significance",
           "a change crosses to the other groups once |change| > this times "
           "|value| (default 0.05; the paper's 0.01; 0: every change)")
      .add(mirror_bound, g, "mirror-bound",
           "a group more than this many clocks ahead of the slowest waits "
           "(default 2; -1: none)")
      .add(bound_wait, g, "bound-wait",
           "seconds a fetch waits for --mirror-bound at most (default 2)")
      .add(server_optimizer, g, "server-optimizer",
           "optimizer of the group servers: sgd (default, --lr as Downpour's) "
           "| momentum | nesterov | adagrad | adam | novograd");
}

void gaia::check_flags(const job_options& o,
                       const std::set<std::string>&) const {
  auto fail
      = [](const std::string& what) { throw std::invalid_argument(what); };
  if (groups > o.workers)
    fail("--groups=" + std::to_string(groups) + " is above --workers="
         + std::to_string(o.workers) + ": a group needs a worker");
  if (!(significance >= 0 && significance <= 100))
    fail("--significance must be in [0, 100]");
  if (mirror_bound < -1 || mirror_bound > 1000000)
    fail("--mirror-bound must be -1 (none) or in [0, 1000000]");
  if (!(bound_wait > 0 && bound_wait <= 3600))
    fail("--bound-wait must be in (0, 3600] seconds");
  check_server_optimizer(server_optimizer);
}

void gaia::resolve(job_options& o, double model_lr) const {
  algorithm::resolve(o, model_lr);
  // As Downpour's shards: W workers' pushes move the replicas together.
  if (server_optimizer.empty() && o.lr == 0)
    o.lr = async_server_lr_factor(o.workers) * model_lr;
}

bool gaia::uses_shards(const job_options&) const {
  return false; // the group servers are Gaia's own
}

void gaia::build(job_build& b) {
  auto& job = b.job;
  job.shards = 0;
  job.policy.n_fetch = 1;
  job.policy.n_push = 1;
  job.policy.local_lr = 0;
  job.policy.prefetch = false;
  job.policy.sync = false;
  job.server.optimizer.name
      = server_optimizer.empty() ? "sgd" : server_optimizer;
  auto g = std::max<std::uint64_t>(groups > 0 ? groups : 2, 1);
  // A server updates once per push of its group's workers.
  job.server.lr_schedule = b.server_schedule(static_cast<double>(b.batches)
                                             / static_cast<double>(g));
  group_of.clear();
  if (groups > 0)
    group_of = lsgd_groups(job.workers, static_cast<std::uint32_t>(g), {});
}

std::string gaia::servers(const actors::job_config& job) const {
  // Before the placement (the job's description) a job without --groups
  // has a group per node if it has nodes, which only the placement tells.
  if (group_of.size() != job.workers && job.placement.worker_node.empty())
    return "a group per node (2 in one process)";
  auto g = gaia_groups(*this, job);
  std::uint32_t count = 0;
  for (auto x : g)
    count = std::max(count, x + 1);
  return std::to_string(count) + " groups";
}

std::string gaia::name() const {
  return "gaia";
}

actors::shard_plan gaia::plan(const actors::job_config&) const {
  return actors::shard_plan::none;
}

void gaia::configure_worker(const actors::job_config& job,
                            actors::worker_config& config,
                            std::vector<actors::shard_ref>) const {
  // Downpour's worker; its one "shard" is the group's server, whose handle
  // the run gives each worker before the start (gaia_run::provision).
  auto policy = job.policy;
  config.make_policy = [policy](std::size_t params) {
    std::vector<actors::shard_ref> server{{{}, optim::slice{0, params}}};
    return actors::make_ps_policy(std::move(server), policy, params);
  };
}

bool gaia::checkpointable() const noexcept {
  return true;
}

std::unique_ptr<actors::algorithm_run>
gaia::start(const actors::job_config&) const {
  return std::make_unique<gaia_run>(*this);
}

void gaia::report(const actors::coordinator_state&, nlohmann::json& out) const {
  out["gaia"]["significance"] = significance;
  out["gaia"]["mirror_bound"] = mirror_bound;
  out["gaia"]["server_optimizer"]
      = server_optimizer.empty() ? "sgd" : server_optimizer;
}

std::vector<std::uint32_t> gaia_groups(const gaia& algo,
                                       const actors::job_config& job) {
  if (algo.group_of.size() == job.workers)
    return algo.group_of;
  // One group per node of a distributed job; in one process two.
  auto by_node = lsgd_groups(job.workers, 1, job.placement.worker_node);
  if (std::any_of(by_node.begin(), by_node.end(),
                  [](std::uint32_t g) { return g > 0; }))
    return by_node;
  return lsgd_groups(job.workers, 2, {});
}

} // namespace troupe::algos
