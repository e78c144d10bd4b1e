#include "algos/sgp/clipped_gossip.hpp"

#include <algorithm>

#include "optim/gossip.hpp"
#include "optim/robust_mix.hpp"

namespace troupe::algos {

const char* clipped_gossip::refusal(const actors::peer_policy_options& opts,
                                    std::uint32_t rank,
                                    const messages::gossip_msg& m,
                                    const std::vector<std::uint64_t>& heard) {
  auto in = optim::exponential_in_peers(rank, m.iteration, opts.workers,
                                        opts.peers);
  const char* why = nullptr;
  if (std::find(in.begin(), in.end(), m.sender) == in.end())
    why = "it is not an in-peer of the share's iteration";
  else if (m.sender < heard.size() && m.iteration < heard[m.sender])
    why = "an iteration already heard from it";
  else if (!(m.weight > 0 && m.weight <= 0.5))
    why = "a mixing weight outside (0, 1/2]";
  if (why)
    ++discarded_;
  return why;
}

bool clipped_gossip::mix(std::vector<float>& x, const messages::gossip_msg& m,
                         double tau) {
  auto out = optim::clipped_mix(x.data(), x.size(),
                                {{m.sender, m.values.data(), m.weight}}, tau);
  clipped_ += out.clipped;
  discarded_ += out.skipped;
  return out.skipped == 0;
}

void clipped_gossip::save(optim::state_writer& w,
                          const std::string& prefix) const {
  std::uint64_t counts[] = {clipped_, discarded_};
  w.put(prefix + "robust_mix", counts, 2);
}

void clipped_gossip::load(const optim::state_reader& r,
                          const std::string& prefix) {
  clipped_ = discarded_ = 0;
  if (!r.has(prefix + "robust_mix"))
    return;
  auto counts = r.u64(prefix + "robust_mix", 2);
  clipped_ = counts[0];
  discarded_ = counts[1];
}

} // namespace troupe::algos
