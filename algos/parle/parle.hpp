// Parle (Chaudhari et al. 2017, "Parle: parallelizing stochastic gradient
// descent"; docs/algorithms.md): each worker is a replica with an anchor
// x_a; a round is L Entropy-SGD steps from the anchor (each gradient pulled
// back toward it by gamma), a running mean z of them, then the anchor's own
// step along (x_a - z) + rho (x_a - x), the elastic force toward the
// replicas' mean x, which the shards hold (the workers push their anchors
// once a round). gamma and rho grow each round (scoping), so that the
// replicas end at one point.

#pragma once

#include "algos/algorithm.hpp"
#include "algos/local_steps.hpp"

namespace troupe::algos {

class parle : public algorithm {
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
  void configure_worker(const actors::job_config& job,
                        actors::worker_config& config,
                        std::vector<actors::shard_ref> shards) const override;
  bool tracks_clocks(const actors::job_config& job) const noexcept override;
  bool reassigns_steps() const noexcept override;
  bool checkpointable() const noexcept override;
  bool restores_shards(const actors::job_config& job) const override;
  void report(const actors::coordinator_state& st,
              nlohmann::json& out) const override;

  // -- its flags --
  std::uint64_t inner_steps = 25; ///< L: Entropy-SGD steps a round
  double gamma = 0.01;            ///< the inner pull's start
  double rho = 0.01;              ///< the elastic force's start, x L x W
  double scoping = 0.5;           ///< growth exponent per epoch

  // -- its settings, resolved by build() --
  local_steps local;           ///< optimizer (its momentum), rate, schedule
  double rounds_per_epoch = 0; ///< a worker's rounds an epoch
};

} // namespace troupe::algos
