// Sandblaster L-BFGS (algorithms.md §2): a batch quasi-Newton method whose
// coordinator hands out portions of each batch to idle workers and whose
// shards hold slices of the iterate and the L-BFGS history. It runs with a
// driver of its own (algos/sandblaster/lbfgs_driver.hpp), not the job
// coordinator, on the data set's full-batch objective: the mean
// cross-entropy of the model over the training examples plus
// (--weight-decay / 2) ||x||^2, in double.

#pragma once

#include <memory>

#include "algos/algorithm.hpp"

namespace troupe::algos {

struct lbfgs_job;

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
  /// Its run over the training set: portions, L2 penalty, iteration limit
  /// (the job's step budget) and each worker's portion function; throws
  /// std::invalid_argument if --portions exceeds the training examples.
  void build(job_build& b) override;
  std::string describe(const job_build& b) const override;
  /// The final point's test accuracy and loss, the objective, steps,
  /// epochs, samples per second and the run's settings.
  void complete_result(nlohmann::json& result, const optim::dataset& test,
                       std::vector<float>& params) const override;

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
  /// Its driver writes the checkpoints at iteration boundaries (the shards'
  /// slices and history, its own scalars) and resumes from them.
  bool checkpointable() const noexcept override;

  // -- its flags --
  std::uint64_t portions = 0;       ///< portions per batch (0: automatic)
  std::uint64_t memory = 10;        ///< history pairs m
  double gradient_tolerance = 1e-6; ///< stop below this gradient norm
  bool backups = true;              ///< backup copies at the end of a pass

  /// The defaults: the L2 penalty (a unique optimum on logreg) and the
  /// iteration limit without --max-steps.
  static constexpr double default_l2 = 1e-4;
  static constexpr std::uint64_t default_iterations = 100;

  // -- its settings, resolved by build() --
  /// The run: shards, workers, portions, L-BFGS options, the portion
  /// function (null before build()).
  std::shared_ptr<const lbfgs_job> lbfgs;
  double l2 = default_l2; ///< the L2 penalty
  /// The model and its input (the training set's), for the final
  /// evaluation.
  std::string model;
  optim::shape sample_shape;
  int classes = 0;
  std::size_t train_examples = 0; ///< training examples in the objective
};

} // namespace troupe::algos
