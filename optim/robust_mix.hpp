// Robust mixing for the decentralized algorithms (issue [15]): how a gossip
// peer combines its neighbours' models when some of them may be Byzantine.
// No CAF.
//
//   clipped_mix   ClippedGossip (He, Karimireddy, Jaggi, "Byzantine-robust
//                 decentralized learning via ClippedGossip", 2022):
//                 x <- x + sum_j w_j clip(y_j - x, tau), with
//                 clip(v, tau) = v min(1, tau / ||v||). A neighbour moves x
//                 by at most w_j tau whatever it sends.
//   group_mix     a DS-Sync group's models combined by an aggregation rule
//                 of optim/aggregate.hpp (median, trimmed mean, Krum, ...),
//                 the member's own model among them.

#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "optim/aggregate.hpp"

namespace troupe::optim {

/// One neighbour's model and its mixing weight.
struct neighbour_model {
  std::uint32_t rank = 0;
  const float* values = nullptr;
  double weight = 0; ///< w_j in [0, 1]
};

/// What a mix did.
struct mix_outcome {
  std::size_t clipped = 0; ///< neighbours whose difference was clipped
  std::size_t skipped = 0; ///< neighbours with a non-finite value (ignored)
};

/// ClippedGossip's step on x[0..n): x += sum_j w_j clip(y_j - x, tau), the
/// differences all taken from the x given (computed in double). A
/// neighbour holding a NaN or infinity is skipped (its weight stays with
/// x). With tau = +infinity it is the plain weighted mix
/// x <- (1 - sum w_j) x + sum w_j y_j. Throws std::invalid_argument if
/// tau <= 0, a weight is outside [0, 1] or the weights sum above 1.
mix_outcome clipped_mix(float* x, std::size_t n,
                        const std::vector<neighbour_model>& neighbours,
                        double tau);

/// A DS-Sync group's models combined by `rule` (each weighing one, the
/// member's own model `own` among them, in rank order), written to x.
/// "cclip" is not a group rule here (use clipped_mix, centred at the
/// member's own model). Returns the ranks the rule discarded.
std::vector<std::uint32_t>
group_mix(aggregation_rule& rule, float* x, std::size_t n,
          const std::vector<neighbour_model>& members);

} // namespace troupe::optim
