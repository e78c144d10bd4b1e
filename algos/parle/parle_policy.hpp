// Parle's worker policy (parle_policy.cpp).

#pragma once

#include <memory>
#include <vector>

#include "algos/local_rounds.hpp"

namespace troupe::algos {

struct parle_policy_options {
  /// L steps a round in synchronous rounds; the inner and the anchor's
  /// steps: the local optimizer (its momentum and decay) at its rate or
  /// schedule.
  round_options rounds;
  double gamma = 0.01, gamma_max = 1;
  double rho = 0.01, rho_max = 10; ///< rho already x L x W
  double scoping = 0.5;
  double rounds_per_epoch = 0; ///< scoping's unit
  double alpha = 0.75;         ///< z's averaging
};

/// Round r (L steps): starts from the anchor (the first round from the
/// shards' parameters); each step y <- Opt(y, g + gamma_r (y - x_a)) and
/// z <- alpha z + (1 - alpha) y; the last x_a <- Opt'(x_a, (x_a - z) +
/// rho_r (x_a - x)) with x the replicas' mean fetched at the round's start,
/// and pushes x - x_a (outer SGD at 1 on the shards: their parameters
/// become the mean of the anchors).
std::unique_ptr<actors::comm_policy>
make_parle_policy(std::vector<actors::shard_ref> shards,
                  const parle_policy_options& opts, std::size_t parameters);

} // namespace troupe::algos
