#include "algos/sgp/clipped_gossip.hpp"

#include <algorithm>

#include "optim/gossip.hpp"

namespace troupe::algos {

const char* clipped_gossip_refusal(const actors::peer_policy_options& opts,
                                   std::uint32_t rank,
                                   const messages::gossip_msg& m,
                                   std::uint64_t heard) {
  auto in = optim::exponential_in_peers(rank, m.iteration, opts.workers,
                                        opts.peers);
  if (std::find(in.begin(), in.end(), m.sender) == in.end())
    return "it is not an in-peer of the share's iteration";
  if (m.iteration < heard)
    return "an iteration already heard from it";
  if (!(m.weight > 0 && m.weight <= 0.5))
    return "a mixing weight outside (0, 1/2]";
  return nullptr;
}

} // namespace troupe::algos
