// Divide-and-shuffle synchronization (algorithms.md §7): after each local
// step the workers average within groups that change every round (a digit
// schedule when the worker count is a power of the group size, else random
// partitions). No shards: the mean of the workers' models is evaluated.

#pragma once

#include "actors/comm_policy.hpp"
#include "algos/aggregation_flags.hpp"
#include "algos/algorithm.hpp"
#include "algos/local_steps.hpp"

namespace troupe::algos {

class dssync : public algorithm {
public:
  // -- options (algos/algorithm.hpp) --
  std::string summary() const override;
  std::shared_ptr<algorithm> clone() const override;
  void bind(caf::config_option_set& set) override;
  void check_flags(const job_options& o,
                   const std::set<std::string>& given) const override;
  void resolve(job_options& o, double model_lr) const override;
  void build(job_build& b) override;
  bool uses_shards(const job_options& o) const override;

  // -- behavior (actors/algorithm.hpp) --
  std::string name() const override;
  actors::shard_plan plan(const actors::job_config& job) const override;
  void check(const actors::job_config& job) const override;
  void configure_worker(const actors::job_config& job,
                        actors::worker_config& config,
                        std::vector<actors::shard_ref> shards) const override;
  bool peer_to_peer() const noexcept override;
  /// The digit schedule's group mates of every round (q (m - 1) ranks);
  /// with random groups, every other worker.
  std::vector<messages::worker_id>
  peer_ranks(const actors::job_config& job,
             messages::worker_id w) const override;
  /// Random groups: any worker may share a round's group (the workers get
  /// one shared table of handles).
  bool any_peer(const actors::job_config& job) const override;
  bool lingers() const noexcept override;
  /// The workers' state is all of it (markers settle the group copies in
  /// flight, peer_policy::quiesce).
  bool checkpointable() const noexcept override;
  /// A run that declines a checkpoint near the workers' last step.
  std::unique_ptr<actors::algorithm_run>
  start(const actors::job_config& job) const override;
  void report(const actors::coordinator_state& st,
              nlohmann::json& out) const override;
  void report_worker(const messages::worker_stats& stats,
                     nlohmann::json& out) const override;

  // -- its flags --
  std::uint64_t group_size = 2; ///< workers per averaging group
  /// Robust mixing of a group's models (--aggregation).
  aggregation_flags mixing;

  // -- its settings, resolved by build() --
  /// Group size and seed (the workers' count, optimizer, rate, schedule
  /// and start come from the job and `local`).
  actors::peer_policy_options settings;
  /// The workers' optimizer, rate and schedule.
  local_steps local;
};

} // namespace troupe::algos
