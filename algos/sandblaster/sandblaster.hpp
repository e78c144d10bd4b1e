// Sandblaster L-BFGS (algorithms.md §2): a batch quasi-Newton method whose
// coordinator hands out portions of each batch to idle workers and whose
// shards hold slices of the iterate and the L-BFGS history. It runs with a
// driver of its own (actors/lbfgs_driver.hpp), not the job coordinator.

#pragma once

#include "algos/algorithm.hpp"

namespace troupe::algos {

class sandblaster : public algorithm {
public:
  // -- options (algos/algorithm.hpp) --
  std::string summary() const override;
  std::shared_ptr<algorithm> clone() const override;
  void bind(caf::config_option_set& set) override;
  void check_flags(const job_options& o,
                   const std::set<std::string>& given) const override;
  void resolve(job_options& o, double model_lr) const override;
  std::vector<std::string> ignored_flags() const override;
  runner run_by() const noexcept override;
  void add_roles(actors::role_registry& roles) const override;

  // -- behavior (actors/algorithm.hpp) --
  std::string name() const override;
  actors::shard_plan plan(const actors::job_config& job) const override;
  void check(const actors::job_config& job) const override;
  /// Never called: the driver builds its own workers.
  void configure_worker(const actors::job_config& job,
                        actors::worker_config& config,
                        std::vector<actors::shard_ref> shards) const override;
  std::optional<nlohmann::json>
  run(caf::actor_system& sys, const actors::job_config& job,
      std::chrono::seconds timeout) const override;

  // -- its flags --
  std::uint64_t portions = 0;       ///< portions per batch (0: automatic)
  std::uint64_t memory = 10;        ///< history pairs m
  double gradient_tolerance = 1e-6; ///< stop below this gradient norm
  bool backups = true;              ///< backup copies at the end of a pass
};

} // namespace troupe::algos
