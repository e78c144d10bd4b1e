// LSGD, asynchronous multi-leader (algorithms.md §4): workers take local
// steps; group leaders elect the best of their group every tau steps and
// have it pull the group toward it; a leader board does the same across
// groups every tau_g steps. No shards: the global leader's model is the
// evaluated one.

#pragma once

#include "algos/algorithm.hpp"
#include "algos/local_steps.hpp"
#include "optim/consensus.hpp"

namespace troupe::algos {

class lsgd : public algorithm {
public:
  // -- options (algos/algorithm.hpp) --
  std::string summary() const override;
  std::shared_ptr<algorithm> clone() const override;
  void bind(caf::config_option_set& set) override;
  void check_flags(const job_options& o,
                   const std::set<std::string>& given) const override;
  void resolve(job_options& o, double model_lr) const override;
  void build(job_build& b) override;
  /// "G groups" when the groups are fixed (--groups), else "no shards".
  std::string servers(const actors::job_config& job) const override;
  bool uses_shards(const job_options& o) const override;

  // -- behavior (actors/algorithm.hpp) --
  std::string name() const override;
  actors::shard_plan plan(const actors::job_config& job) const override;
  void check(const actors::job_config& job) const override;
  void configure_worker(const actors::job_config& job,
                        actors::worker_config& config,
                        std::vector<actors::shard_ref> shards) const override;
  bool lingers() const noexcept override;
  /// The leaders' state is the run's (lsgd_run::save), the rest the
  /// workers' policies'.
  bool checkpointable() const noexcept override;
  std::unique_ptr<actors::algorithm_run>
  start(const actors::job_config& job) const override;
  void report(const actors::coordinator_state& st,
              nlohmann::json& out) const override;
  void report_worker(const messages::worker_stats& stats,
                     nlohmann::json& out) const override;

  // -- its flags --
  std::uint64_t tau = 4;          ///< steps per worker between local rounds
  std::uint64_t groups = 0;       ///< groups (0: one per node, or one)
  double lambda = 0.1;            ///< local pull strength
  double lambda_g = 0.1;          ///< global pull strength
  std::uint64_t tau_g = 16;       ///< steps between global rounds
  std::uint64_t score_window = 0; ///< losses in the score (0: tau)

  // -- its settings, resolved by build() --
  /// Groups, pull strengths, periods and score window.
  optim::lsgd_options settings;
  /// Each worker's group (empty: lsgd_groups(workers, settings.groups,
  /// placement), i.e. one group per node when placed).
  std::vector<std::uint32_t> group_of;
  /// The workers' optimizer, rate and schedule.
  local_steps local;
};

} // namespace troupe::algos
