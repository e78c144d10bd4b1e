// GADMM's worker policy (gadmm_policy.cpp).

#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "actors/comm_policy.hpp"

namespace troupe::algos {

/// GADMM's own settings (the rest is the peer policy's).
struct gadmm_settings {
  /// The penalty rho of the augmented Lagrangian, and the duals' step.
  double rho = 1;
  /// Local steps of the worker's optimizer on its augmented Lagrangian per
  /// iteration (1: linearized GADMM; more: closer to the exact argmin).
  std::uint64_t round_steps = 1;
  /// Dynamic GADMM: iterations between chain changes (0: one chain).
  std::uint64_t rechain = 0;
};

/// GADMM (docs/algorithms.md "GADMM"): iteration k of a worker is
/// `round_steps` steps of its optimizer on the gradient of its loss plus its
/// edges' augmented Lagrangian terms (optim::gadmm_gradient). Heads (even
/// positions of the chain) start from their tail neighbours' models of
/// iteration k, tails from their head neighbours' models of iteration k +
/// 1; each sends its new model to its neighbours at the end of the
/// iteration, and each edge's dual takes its step at both ends once both
/// new models are known. With `rechain`, the chain changes every `rechain`
/// iterations and the duals of the new edges are passed down it.
std::unique_ptr<actors::comm_policy>
make_gadmm_policy(actors::peer_policy_options opts, gadmm_settings g,
                  std::size_t parameters, std::uint64_t steps);

/// Worker `rank`'s neighbours on the chain used at iteration k (one or two
/// ranks, increasing; none for one worker).
std::vector<std::uint32_t> gadmm_neighbours(std::uint32_t workers,
                                            const gadmm_settings& g,
                                            std::uint64_t seed, std::uint64_t k,
                                            std::uint32_t rank);

} // namespace troupe::algos
