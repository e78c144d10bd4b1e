// SGP's robust mixing (--aggregation=cclip): clipped push-sum, the
// ClippedGossip step of optim/robust_mix.hpp on the de-biased models of
// push-sum, and the checks of who may send a share.

#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "actors/comm_policy.hpp"
#include "messages/gossip.hpp"
#include "optim/state_file.hpp"

namespace troupe::algos {

class clipped_push_sum {
public:
  /// Why the share `m` is refused at rank `rank` (nullptr: accepted): its
  /// sender is not an in-peer of the share's iteration, an iteration of
  /// that sender was heard already (`heard`: the next iteration expected
  /// per sender), or its weight is above the total mass (the worker
  /// count). A refusal is counted as discarded.
  const char* refusal(const actors::peer_policy_options& opts,
                      std::uint32_t rank, const messages::gossip_msg& m,
                      const std::vector<std::uint64_t>& heard);

  /// Mixes the share into the numerator x and weight w: with z = x / w and
  /// the share's model y = x_j / w_j, x += w_j (z + clip(y - z, tau)) and
  /// w += w_j, so z moves by w_j / (w + w_j) clip(y - z, tau): at most
  /// tau. False (nothing mixed, counted) if y is not finite.
  bool mix(std::vector<float>& x, double& w, const messages::gossip_msg& m,
           double tau);

  std::uint64_t clipped() const noexcept {
    return clipped_;
  }

  std::uint64_t discarded() const noexcept {
    return discarded_;
  }

  /// The counts in a checkpoint ("<prefix>robust_mix"; absent before wire
  /// version 17: zeros).
  void save(optim::state_writer& w, const std::string& prefix) const;
  void load(const optim::state_reader& r, const std::string& prefix);

private:
  std::vector<float> z_, y_;
  std::uint64_t clipped_ = 0, discarded_ = 0;
};

} // namespace troupe::algos
