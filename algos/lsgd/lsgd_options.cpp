// LSGD's flags, their checks and its part of a job.

#include <algorithm>
#include <stdexcept>

#include <caf/config_option_set.hpp>

#include "actors/coordinator.hpp"
#include "algos/local_steps.hpp"
#include "algos/lsgd/leader_board.hpp"
#include "algos/lsgd/lsgd.hpp"

namespace troupe::algos {

std::string lsgd::summary() const {
  return "multi-leader: pulls toward the best workers, no shards";
}

std::shared_ptr<algorithm> lsgd::clone() const {
  return std::make_shared<lsgd>(*this);
}

void lsgd::bind(caf::config_option_set& set) {
  caf::string_view g = "?lsgd";
  set.add(tau, g, "tau", "steps per worker between local rounds (default 4)")
      .add(groups, g, "groups",
           "groups of workers with a leader each (default: one per node in "
           "a distributed job, else 1)")
      .add(lambda, g, "lambda",
           "pull toward the group's leader, in [0, 1] (default 0.1)")
      .add(lambda_g, g, "lambda-g",
           "pull toward the global leader, in [0, 1] (default 0.1)")
      .add(tau_g, g, "tau-g",
           "steps per worker between global rounds (default 16)")
      .add(score_window, g, "score-window",
           "recent losses averaged into the leader score (default: --tau)");
}

void lsgd::check_flags(const job_options& o,
                       const std::set<std::string>&) const {
  auto fail
      = [](const std::string& what) { throw std::invalid_argument(what); };
  if (tau < 1 || tau > 1000000)
    fail("--tau must be in [1, 1000000]");
  if (groups > o.workers)
    fail("--groups must be at most --workers");
  if (!(lambda >= 0 && lambda <= 1) || !(lambda_g >= 0 && lambda_g <= 1))
    fail("--lambda and --lambda-g must be in [0, 1]");
  if (tau_g < tau)
    fail("--tau-g must be at least --tau");
  if (score_window > 100000)
    fail("--score-window must be at most 100000");
}

void lsgd::resolve(job_options& o, double model_lr) const {
  decentralized_defaults(o);
  algorithm::resolve(o, model_lr);
}

bool lsgd::uses_shards(const job_options&) const {
  return false;
}

void lsgd::build(job_build& b) {
  auto& job = b.job;
  local = local_steps::of(b);
  settings.tau = tau;
  settings.tau_g = tau_g;
  settings.lambda = lambda;
  settings.lambda_g = lambda_g;
  settings.score_window = score_window > 0 ? score_window : tau;
  settings.groups
      = static_cast<std::uint32_t>(std::max<std::uint64_t>(groups, 1));
  group_of.clear();
  if (groups > 0)
    group_of = lsgd_groups(job.workers, settings.groups, {});
  job.shards = 0;
}

} // namespace troupe::algos
