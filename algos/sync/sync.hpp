// Synchronous SGD (algorithms.md §1): every worker pushes each step's
// gradient; each shard combines a round's pushes (a sample-weighted mean, or
// a Byzantine-robust rule: --aggregation) and applies it once, then answers
// the round's fetches.

#pragma once

#include "algos/aggregation_flags.hpp"
#include "algos/algorithm.hpp"
#include "algos/compression_flags.hpp"
#include "algos/pipeline/pipeline.hpp"

namespace troupe::algos {

class sync : public algorithm, public pipeline_hosting {
public:
  // -- options (algos/algorithm.hpp) --
  std::string summary() const override;
  std::shared_ptr<algorithm> clone() const override;
  void bind(caf::config_option_set& set) override;
  void check_flags(const job_options& o,
                   const std::set<std::string>& given) const override;
  void resolve(job_options& o, double model_lr) const override;
  void build(job_build& b) override;
  data_layout layout() const noexcept override;

  // -- behavior (actors/algorithm.hpp) --
  std::string name() const override;
  actors::shard_plan plan(const actors::job_config& job) const override;
  void configure_worker(const actors::job_config& job,
                        actors::worker_config& config,
                        std::vector<actors::shard_ref> shards) const override;
  void configure_shard(const actors::job_config& job,
                       actors::parameter_shard_config& config) const override;
  bool reassigns_steps() const noexcept override;
  bool restores_shards(const actors::job_config& job) const override;
  bool tracks_clocks(const actors::job_config& job) const noexcept override;
  bool checkpointable() const noexcept override;
  /// With --stages (GPipe): each replica a pipeline whose stages push to
  /// the rounds of their own shards.
  void add_roles(actors::role_registry& roles) const override;
  std::vector<optim::slice>
  shard_ranges(const actors::job_config& job) const override;
  std::unique_ptr<actors::algorithm_run>
  start(const actors::job_config& job) const override;
  const optim::compress_options*
  compression(const actors::job_config& job) const noexcept override;

  // -- its flags --
  std::string server_optimizer; ///< empty: --optimizer
  compression_flags compression_settings;
  aggregation_flags aggregation_settings;
};

} // namespace troupe::algos
