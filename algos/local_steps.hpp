// What the algorithms whose workers take local steps share (EASGD, LSGD,
// SGP, DS-Sync, ShadowSync): the workers' own optimizer, rate and schedule,
// resolved from the job's options and held by the algorithm.

#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "actors/coordinator.hpp"
#include "algos/algorithm.hpp"
#include "optim/optimizer.hpp"
#include "optim/schedule.hpp"

namespace troupe::algos {

/// The workers' local steps: optimizer, rate and schedule.
struct local_steps {
  optim::optimizer_options optimizer{"nesterov", 0.9, 1e-4};
  double lr = 0.01;
  /// Over each worker's own steps; empty: `lr` throughout.
  std::optional<optim::schedule_options> schedule;

  /// The job's --optimizer, --momentum, --weight-decay and --lr, and its
  /// rate schedule over the workers' own steps.
  static local_steps of(const job_build& b);

  /// Throws std::invalid_argument naming `algo` if the rate is not positive
  /// (0 allowed with `zero_ok`: pure averaging), the optimizer is unknown,
  /// or the schedule is invalid.
  void check(const std::string& algo, bool zero_ok) const;
};

/// The defaults of the decentralized algorithms' workers: the authors'
/// local optimizer, Nesterov momentum 0.9 with weight decay 1e-4 (LSGD on
/// lenet with 2 groups of 2 reached 0.90, plain momentum without decay
/// stopped at 0.898; SGP's job scripts use the same).
void decentralized_defaults(job_options& o);

/// The workers' mixes and timeouts (averaging algorithms), for the report.
void report_mixes(const messages::worker_stats& stats, nlohmann::json& out);

/// What a job without shards evaluates: the mean of the workers' models,
/// the honest ones' when the job staged attackers (job_config::byzantine).
std::string evaluated_mean(const actors::job_config& job);

/// The gossip algorithms' robust mixing (rule and settings), for the report.
nlohmann::json mixing_report(const actors::peer_policy_options& p);

} // namespace troupe::algos
