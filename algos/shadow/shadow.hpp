// ShadowSync (algorithms.md §8): the workers take local steps and never
// wait; syncers, one per group of workers, synchronize their models in the
// background by model averaging, BMUF, or elastic averaging with a center on
// the shards.

#pragma once

#include "algos/algorithm.hpp"
#include "algos/local_steps.hpp"
#include "optim/shadow.hpp"

namespace troupe::algos {

class shadow : public algorithm {
public:
  // -- options (algos/algorithm.hpp) --
  std::string summary() const override;
  std::shared_ptr<algorithm> clone() const override;
  void bind(caf::config_option_set& set) override;
  void check_flags(const job_options& o,
                   const std::set<std::string>& given) const override;
  void resolve(job_options& o, double model_lr) const override;
  void build(job_build& b) override;
  /// "G groups" with --groups and no center, else the default.
  std::string servers(const actors::job_config& job) const override;
  bool uses_shards(const job_options& o) const override;
  void add_roles(actors::role_registry& roles) const override;

  // -- behavior (actors/algorithm.hpp) --
  std::string name() const override;
  /// A center on the shards with --shadow=easgd, else none.
  actors::shard_plan plan(const actors::job_config& job) const override;
  void check(const actors::job_config& job) const override;
  void configure_shard(const actors::job_config& job,
                       actors::parameter_shard_config& config) const override;
  void configure_worker(const actors::job_config& job,
                        actors::worker_config& config,
                        std::vector<actors::shard_ref> shards) const override;
  bool lingers() const noexcept override;
  /// Its syncers save their state (shadow_state.hpp), its workers their
  /// local optimizer (durability.md).
  bool checkpointable() const noexcept override;
  /// S-EASGD: a center shard lost with its node comes back from the latest
  /// checkpoint; the syncers are pointed at it (shadow_run::shard_restored).
  bool restores_shards(const actors::job_config& job) const override;
  std::unique_ptr<actors::algorithm_run>
  start(const actors::job_config& job) const override;
  void report_worker(const messages::worker_stats& stats,
                     nlohmann::json& out) const override;

  // -- its flags --
  std::string mode = "ma";    ///< easgd | ma | bmuf
  double period = 0;          ///< seconds between rounds
  double alpha = 0;           ///< easgd: moving rate (0: 0.9 / workers)
  double block_momentum = -1; ///< bmuf eta_b (-1: 1 - 1 / workers)
  double block_lr = 1;        ///< bmuf zeta
  std::uint64_t groups = 0;   ///< syncers (0: one per node, or one)

  // -- its settings, resolved by build() --
  /// The syncers' body and settings.
  optim::shadow_options settings;
  /// Each worker's group, one syncer per group (empty: one per node when
  /// placed, else one).
  std::vector<std::uint32_t> group_of;
  /// The workers' optimizer, rate and schedule.
  local_steps local;

  /// Each worker's group in `job` (group_of, or one per node).
  std::vector<std::uint32_t> groups_in(const actors::job_config& job) const;
};

} // namespace troupe::algos
