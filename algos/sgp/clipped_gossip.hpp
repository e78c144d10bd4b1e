// SGP's robust mixing (--aggregation=cclip): ClippedGossip (the step of
// optim/robust_mix.hpp) on SGP's exponential graph, and the checks of who
// may send a share. Push-sum's weights are dropped (w stays 1): a sender
// keeps its model x and sends it whole with its mixing weight p = 1 / (d +
// 1); a receiver moves x by p clip(y - x, tau). On the regular exponential
// graph, with every peer live and nothing clipped, that is SGP's own mixing
// matrix. With push-sum's weights a peer that takes shares and returns
// garbage drains the honest peers' mass: their w fell to 0.05 in 35 steps
// and the de-biased steps grew 20-fold (mlp, 8 workers, one NaN attacker).

#pragma once

#include <cstdint>
#include <vector>

#include "actors/comm_policy.hpp"
#include "messages/gossip.hpp"

namespace troupe::algos {

/// Why the share `m` is refused at rank `rank` (nullptr: accepted): its
/// sender is not an in-peer of the share's iteration, an iteration of that
/// sender was heard already (`heard`: the next iteration expected from
/// the sender), or its mixing weight is outside (0, 1/2] (p = 1 / (d + 1) with
/// d >= 1 out-peers).
const char* clipped_gossip_refusal(const actors::peer_policy_options& opts,
                                   std::uint32_t rank,
                                   const messages::gossip_msg& m,
                                   std::uint64_t heard);

} // namespace troupe::algos
