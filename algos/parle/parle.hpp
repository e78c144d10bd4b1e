// Parle (Chaudhari et al. 2017, "Parle: parallelizing stochastic gradient
// descent"; docs/algorithms.md): each worker is a replica with an anchor
// x_a; a round is L Entropy-SGD steps from the anchor (each gradient pulled
// back toward it by gamma), a running mean z of them, then the anchor's own
// step along (x_a - z) + rho (x_a - x), the elastic force toward the
// replicas' mean x, which the shards hold (the workers push their anchors
// once a round). gamma and rho grow each round (scoping), so that the
// replicas end at one point.

#pragma once

#include "algos/local_rounds.hpp"

namespace troupe::algos {

class parle : public round_algorithm {
public:
  parle() {
    round_steps = 25; // L
  }

  // -- options (algos/algorithm.hpp) --
  std::string summary() const override;
  std::shared_ptr<algorithm> clone() const override;
  void bind(caf::config_option_set& set) override;
  void check_flags(const job_options& o,
                   const std::set<std::string>& given) const override;
  void build(job_build& b) override;

  // -- behavior (actors/algorithm.hpp; the rounds' in local_rounds.hpp) --
  std::string name() const override;
  void configure_worker(const actors::job_config& job,
                        actors::worker_config& config,
                        std::vector<actors::shard_ref> shards) const override;
  void report(const actors::coordinator_state& st,
              nlohmann::json& out) const override;

  // -- its flags (and --inner-steps: round_steps) --
  double gamma = 0.01;  ///< the inner pull's start
  double rho = 0.01;    ///< the elastic force's start, x L x W
  double scoping = 0.5; ///< growth exponent per epoch

  // -- its settings, resolved by build() --
  double rounds_per_epoch = 0; ///< a worker's rounds an epoch

private:
  /// rho as the workers apply it: x L x W, as the authors scale it.
  double scaled_rho(std::uint32_t workers) const noexcept;
};

} // namespace troupe::algos
