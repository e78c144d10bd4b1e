#pragma once

// GADMM's vector steps, without actors (Elgabli et al. 2020, docs/
// algorithms.md "GADMM"): the workers form a chain, each minimizes its own
// loss plus the augmented Lagrangian terms of its one or two edges, heads
// (even positions) and tails (odd positions) alternating; each edge's dual
// variable lambda_e (edge e joins positions e and e + 1) then moves by
// rho (x_e - x_{e+1}). Dynamic GADMM re-forms the chain and rebuilds the
// edges' duals from each worker's net dual, which keeps the optimality
// conditions of the whole problem.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace troupe::optim {

/// The chain of workers 0..n-1 used from chain change `change` on (0: the
/// first): the positions' ranks. Change 0 is the identity; later ones are
/// keyed shuffles of `seed` and `change` (optim::shuffle_rank, the same on
/// every worker). O(n); a worker's own place is gadmm_place's O(1).
std::vector<std::uint32_t> gadmm_chain(std::uint32_t n, std::uint64_t change,
                                       std::uint64_t seed);

/// Rank `rank`'s position on chain `change` (gadmm_chain's inverse).
std::uint32_t gadmm_place(std::uint32_t rank, std::uint32_t n,
                          std::uint64_t change, std::uint64_t seed);

/// The rank at position `place` of chain `change`.
std::uint32_t gadmm_rank_at(std::uint32_t place, std::uint32_t n,
                            std::uint64_t change, std::uint64_t seed);

/// The augmented Lagrangian's gradient at x in place of the loss's
/// gradient g: g <- g - mu + rho (d x - s), where mu = lambda_left -
/// lambda_right is the worker's net dual, s the sum of its d neighbours'
/// models (d = 0, 1 or 2; s may be null when d = 0). A step of any
/// optimizer on it moves x toward the argmin of GADMM's local problem.
void gadmm_gradient(float* g, const float* x, const float* mu, const float* s,
                    std::size_t d, double rho, std::size_t n) noexcept;

/// An edge's dual step: lambda <- lambda + rho (left - right), where left
/// and right are the models at the edge's lower and upper positions.
void gadmm_dual(float* lambda, const float* left, const float* right,
                double rho, std::size_t n) noexcept;

/// Dynamic GADMM's rebuild: given the net duals mu of the workers in the
/// order of the new chain (mu[p] of position p, each n values), the duals of
/// its edges such that every worker's net dual is unchanged: lambda_p =
/// lambda_{p-1} - mu_p, lambda_{-1} = 0 (edges 0..positions-2). The net
/// duals sum to zero (they telescope), so the last edge's right side
/// closes.
std::vector<std::vector<float>>
gadmm_rebuild(const std::vector<const float*>& mu, std::size_t n);

} // namespace troupe::optim
