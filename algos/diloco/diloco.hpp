// DiLoCo (Douillard et al. 2023, "DiLoCo: Distributed Low-Communication
// Training of Language Models"; docs/algorithms.md): each worker takes H
// local steps with its inner optimizer from the global parameters, then
// sends the round's pseudo-gradient (start - end) to the shards, which
// apply the workers' mean through the outer optimizer (Nesterov momentum);
// the workers start the next round from the result. Asynchronous
// (--asynchronous; Liu et al. 2024, "Asynchronous Local-SGD Training for
// Language Modeling"): the shards apply each pseudo-gradient as it
// arrives, and a worker goes on from the newest parameters without
// waiting for the others.

#pragma once

#include "algos/local_rounds.hpp"

namespace troupe::algos {

class diloco : public round_algorithm {
public:
  diloco() {
    round_steps = 20; // H
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
  double outer_lr = 0;           ///< 0: 0.7, asynchronous 1 / workers
  double outer_momentum = -1;    ///< -1: 0.9, delayed-nesterov 0.5
  std::string outer_optimizer;   ///< empty: nesterov, asynchronous sgd
  std::uint64_t outer_delay = 0; ///< delayed-nesterov's N; 0: the workers
  double outer_activation = 0;   ///< delayed-nesterov's c
  bool asynchronous = false;

protected:
  bool asynchronous_rounds() const noexcept override {
    return asynchronous;
  }
};

/// DiLoCo's outer rate: `lr`, or unset (0) the paper's 0.7; asynchronous
/// 1 / workers (each pseudo-gradient applied alone: a round of all the
/// workers' moves the model by their mean, as averaging does), unless the
/// `optimizer` is delayed-nesterov, which divides each by its delay itself.
double diloco_outer_lr(double lr, const std::string& optimizer,
                       bool asynchronous, std::uint32_t workers) noexcept;

/// DiLoCo's outer optimizer: `name`, or unset the paper's Nesterov;
/// asynchronous plain SGD (Nesterov momentum over stale pseudo-gradients
/// diverges: docs/algorithms.md).
std::string diloco_outer_optimizer(const std::string& name, bool asynchronous);

/// DiLoCo's outer momentum: `momentum`, or unset (negative) the paper's 0.9;
/// 0.5 for delayed-nesterov (0.9 over stale pseudo-gradients kept lenet at
/// 8 workers at 0.63: docs/algorithms.md).
double diloco_outer_momentum(double momentum,
                             const std::string& optimizer) noexcept;

} // namespace troupe::algos
