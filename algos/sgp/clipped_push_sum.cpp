#include "algos/sgp/clipped_push_sum.hpp"

#include <algorithm>

#include "optim/gossip.hpp"
#include "optim/robust_mix.hpp"

namespace troupe::algos {

const char* clipped_push_sum::refusal(const actors::peer_policy_options& opts,
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
  else if (m.weight > static_cast<double>(opts.workers))
    why = "a weight above the total mass";
  if (why)
    ++discarded_;
  return why;
}

bool clipped_push_sum::mix(std::vector<float>& x, double& w,
                           const messages::gossip_msg& m, double tau) {
  auto n = x.size();
  z_.resize(n);
  y_.resize(n);
  auto inv = 1.0 / w, inv_j = 1.0 / m.weight;
  const float* v = m.values.data();
  for (std::size_t i = 0; i < n; ++i) {
    z_[i] = static_cast<float>(x[i] * inv);
    y_[i] = static_cast<float>(v[i] * inv_j);
  }
  auto out
      = optim::clipped_mix(z_.data(), n, {{m.sender, y_.data(), 1.0}}, tau);
  clipped_ += out.clipped;
  discarded_ += out.skipped;
  if (out.skipped)
    return false;
  auto wj = static_cast<float>(m.weight);
  for (std::size_t i = 0; i < n; ++i)
    x[i] += wj * z_[i];
  w += m.weight;
  return true;
}

void clipped_push_sum::save(optim::state_writer& w,
                            const std::string& prefix) const {
  std::uint64_t counts[] = {clipped_, discarded_};
  w.put(prefix + "robust_mix", counts, 2);
}

void clipped_push_sum::load(const optim::state_reader& r,
                            const std::string& prefix) {
  clipped_ = discarded_ = 0;
  if (!r.has(prefix + "robust_mix"))
    return;
  auto counts = r.u64(prefix + "robust_mix", 2);
  clipped_ = counts[0];
  discarded_ = counts[1];
}

} // namespace troupe::algos
