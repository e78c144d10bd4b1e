// EASGD / EAMSGD (algorithms.md §3): the shards hold a center; every tau of
// its own steps a worker moves toward it and it toward the worker by the
// elastic difference; between exchanges the workers take local steps.

#pragma once

#include "algos/algorithm.hpp"
#include "algos/local_steps.hpp"
#include "optim/consensus.hpp"

namespace troupe::algos {

class easgd : public algorithm {
public:
  // -- options (algos/algorithm.hpp) --
  std::string summary() const override;
  std::shared_ptr<algorithm> clone() const override;
  void bind(caf::config_option_set& set) override;
  void check_flags(const job_options& o,
                   const std::set<std::string>& given) const override;
  void resolve(job_options& o, double model_lr) const override;
  void build(job_build& b) override;

  // -- behavior (actors/algorithm.hpp) --
  std::string name() const override;
  actors::shard_plan plan(const actors::job_config& job) const override;
  void check(const actors::job_config& job) const override;
  void configure_shard(const actors::job_config& job,
                       actors::parameter_shard_config& config) const override;
  void configure_worker(const actors::job_config& job,
                        actors::worker_config& config,
                        std::vector<actors::shard_ref> shards) const override;
  /// The center is the shards' state, the rest the workers' policies'.
  bool checkpointable() const noexcept override;
  /// The center's shards come back from the latest checkpoint.
  bool restores_shards(const actors::job_config& job) const override;
  /// The center's shards apply the elastic pushes on arrival; the workers
  /// keep their recent ones for a backup that takes over.
  bool replicates_shards(const actors::job_config& job) const override;
  /// A joining node's workers start from the center (their first exchange)
  /// and move it like the others.
  bool elastic(const actors::job_config& job) const noexcept override;
  void report(const actors::coordinator_state& st,
              nlohmann::json& out) const override;

  // -- its flags --
  std::uint64_t tau = 4;     ///< steps between exchanges with the center
  double alpha = 0;          ///< moving rate (0: 0.9 / workers)
  double easgd_momentum = 0; ///< EAMSGD's delta (0: plain EASGD)

  // -- its settings, resolved by build() --
  /// Period, moving rate (<= 0: 0.9 / workers), momentum, the workers' rate.
  optim::easgd_options settings;
  /// The workers' rate schedule over their own steps (their rate and
  /// momentum are settings.lr and settings.momentum).
  local_steps local;
};

/// EASGD's moving rate: `o.alpha`, or 0.9 / workers if unset.
double easgd_alpha(const optim::easgd_options& o,
                   std::uint32_t workers) noexcept;

/// The center's shard settings: it adds each worker's elastic difference e,
/// sent negated as a gradient (x_c <- x_c - 1 * (-e)).
void center_shard(const actors::job_config& job,
                  actors::parameter_shard_config& config);

} // namespace troupe::algos
