// Downpour SGD (algorithms.md §1): asynchronous workers fetch the shards'
// parameters and push their gradients, which each shard applies on arrival;
// optionally under a staleness bound (SSP), with a warm start, compressed.

#pragma once

#include "algos/algorithm.hpp"
#include "algos/compression_flags.hpp"

namespace troupe::algos {

class downpour : public algorithm {
public:
  // -- options (algos/algorithm.hpp) --
  std::string summary() const override;
  std::shared_ptr<algorithm> clone() const override;
  void bind(caf::config_option_set& set) override;
  void check_flags(const job_options& o,
                   const std::set<std::string>& given) const override;
  void resolve(job_options& o, double model_lr) const override;
  void build(job_build& b) const override;

  // -- behavior (actors/algorithm.hpp) --
  std::string name() const override;
  actors::shard_plan plan(const actors::job_config& job) const override;
  void configure_worker(const actors::job_config& job,
                        actors::worker_config& config,
                        std::vector<actors::shard_ref> shards) const override;
  bool warm_start() const noexcept override;
  bool tracks_clocks(const actors::job_config& job) const noexcept override;
  const optim::compress_options*
  compression(const actors::job_config& job) const noexcept override;

  // -- its flags --
  std::uint64_t n_fetch = 1;         ///< fetch every n steps
  std::uint64_t n_push = 1;          ///< push the summed gradient every n
  std::int64_t staleness_bound = -1; ///< SSP bound s (-1: none)
  bool staleness_aware = false;      ///< server rate / max(staleness, 1)
  std::uint64_t warm_start_steps = 0;
  std::string server_optimizer; ///< empty: sgd at 4x the model's rate
  double local_lr = -1;         ///< replica rate (-1: auto)
  compression_flags compression_settings;
};

} // namespace troupe::algos
