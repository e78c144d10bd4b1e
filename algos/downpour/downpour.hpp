// Downpour SGD (algorithms.md §1): asynchronous workers fetch the shards'
// parameters and push their gradients, which each shard applies on arrival;
// optionally under a staleness bound (SSP), with a warm start, compressed.

#pragma once

#include "algos/aggregation_flags.hpp"
#include "algos/algorithm.hpp"
#include "algos/compression_flags.hpp"
#include "algos/pipeline/pipeline.hpp"

namespace troupe::algos {

class downpour : public algorithm, public pipeline_hosting {
public:
  // -- options (algos/algorithm.hpp) --
  std::string summary() const override;
  std::shared_ptr<algorithm> clone() const override;
  void bind(caf::config_option_set& set) override;
  void check_flags(const job_options& o,
                   const std::set<std::string>& given) const override;
  void resolve(job_options& o, double model_lr) const override;
  void build(job_build& b) override;
  /// With --stages: the pipeline's stage role.
  void add_roles(actors::role_registry& roles) const override;

  // -- behavior (actors/algorithm.hpp) --
  std::string name() const override;
  actors::shard_plan plan(const actors::job_config& job) const override;
  void configure_worker(const actors::job_config& job,
                        actors::worker_config& config,
                        std::vector<actors::shard_ref> shards) const override;
  /// The staleness bound, if any.
  void configure_shard(const actors::job_config& job,
                       actors::parameter_shard_config& config) const override;
  /// With --stages: no shard crosses a stage's slice.
  std::vector<optim::slice>
  shard_ranges(const actors::job_config& job) const override;
  /// With --stages: the pipeline's run (its stages).
  std::unique_ptr<actors::algorithm_run>
  start(const actors::job_config& job) const override;
  /// Not with --stages (a stage keeps no log of its pushes).
  bool replicates_shards(const actors::job_config& job) const override;
  std::string replica_refusal(const actors::job_config& job) const override;
  std::uint64_t warm_start_steps() const noexcept override;
  /// Under a staleness bound.
  bool tracks_clocks(const actors::job_config& job) const noexcept override;
  bool checkpointable() const noexcept override;
  /// Without a staleness bound (no clocks for a joining worker to enter).
  bool elastic(const actors::job_config& job) const noexcept override;
  const optim::compress_options*
  compression(const actors::job_config& job) const noexcept override;
  /// The staleness bound and the largest clock gap the shards saw.
  void report(const actors::coordinator_state& st,
              nlohmann::json& out) const override;

  // -- its flags --
  std::uint64_t n_fetch = 1;         ///< fetch every n steps
  std::uint64_t n_push = 1;          ///< push the summed gradient every n
  std::int64_t staleness_bound = -1; ///< SSP bound s (-1: none)
  bool staleness_aware = false;      ///< server rate / max(staleness, 1)
  std::uint64_t warm_steps = 0;      ///< worker 0 alone for N steps first
  std::string server_optimizer;      ///< empty: sgd, rate min(4, 8/W) x model's
  double local_lr = -1;              ///< replica rate (-1: auto)
  /// The next fetch in flight while a step computes (not under a
  /// staleness bound: its clocks count each step's own fetch).
  bool prefetch = false;
  compression_flags compression_settings;
  /// A robust rule (--aggregation other than mean): buffered rounds of at
  /// most one push per worker (actors/detail/shard_buffer.hpp).
  aggregation_flags aggregation_settings;
  std::uint64_t agg_buffer = 0; ///< pushes a round waits for (0: workers)
  double agg_deadline = 1.0;    ///< seconds before a round closes anyway

  /// Whether the shards buffer rounds.
  bool buffered() const noexcept {
    return aggregation_settings.rule != "mean";
  }
};

} // namespace troupe::algos
