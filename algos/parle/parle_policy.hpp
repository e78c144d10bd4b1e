// Parle's worker policy (parle_policy.cpp).

#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "actors/comm_policy.hpp"
#include "optim/optimizer.hpp"
#include "optim/schedule.hpp"

namespace troupe::algos {

struct parle_policy_options {
  std::uint64_t inner_steps = 25; ///< L
  double gamma = 0.01, gamma_max = 1;
  double rho = 0.01, rho_max = 10; ///< rho already x L x W
  double scoping = 0.5;
  double rounds_per_epoch = 0; ///< scoping's unit
  double alpha = 0.75;         ///< z's averaging
  /// The inner and the anchor's steps: this optimizer (its momentum and
  /// decay) at this rate or schedule.
  optim::optimizer_options optimizer{"nesterov", 0.9, 0};
  double lr = 0.01;
  std::optional<optim::schedule_options> schedule;
  actors::ps_policy_options exchange; ///< synchronous rounds
};

/// Round r (L steps): starts from the anchor (the first round from the
/// shards' parameters); each step y <- Opt(y, g + gamma_r (y - x_a)) and
/// z <- alpha z + (1 - alpha) y; the last x_a <- Opt'(x_a, (x_a - z) +
/// rho_r (x_a - x)) with x the replicas' mean fetched at the round's start,
/// and pushes x - x_a (outer SGD at 1 on the shards: their parameters
/// become the mean of the anchors).
std::unique_ptr<actors::comm_policy>
make_parle_policy(std::vector<actors::shard_ref> shards,
                  parle_policy_options opts, std::size_t parameters);

} // namespace troupe::algos
