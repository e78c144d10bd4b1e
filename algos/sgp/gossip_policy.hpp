// SGP's worker policy (gossip_policy.cpp): push-sum shares to the
// out-peers of each step.

#pragma once

#include <cstddef>
#include <memory>

#include "actors/comm_policy.hpp"

namespace troupe::algos {

/// SGP / overlap SGP (algorithms.md §5): the worker keeps the push-sum
/// numerator x and weight w, computes its gradient at z = x / w (the
/// replica's parameters are z), steps x with its optimizer, keeps 1 / (d +
/// 1) of x and w and sends the same share to each of its d out-peers of the
/// step; shares are added whenever they arrive.
std::unique_ptr<actors::comm_policy>
make_sgp_policy(actors::peer_policy_options opts, std::size_t parameters);

} // namespace troupe::algos
