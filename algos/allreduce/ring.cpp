#include "algos/allreduce/ring.hpp"

#include <cmath>

namespace troupe::algos {

using messages::ring_phase;

ring_phase ring_phase_of(const optim::ring_plan& plan, std::size_t k) noexcept {
  return plan.at(0, k).reduce ? ring_phase::reduce_scatter
                              : ring_phase::all_gather;
}

std::uint32_t ring_hop_of(const optim::ring_plan& plan,
                          std::size_t k) noexcept {
  auto first = plan.ranks() - 1; // reduce-scatter hops
  return static_cast<std::uint32_t>(k < first ? k : k - first);
}

std::string ring_position(const optim::ring_plan& plan, std::size_t k) {
  return std::string{ring_phase_of(plan, k) == ring_phase::reduce_scatter
                         ? "reduce-scatter"
                         : "all-gather"}
         + " hop " + std::to_string(ring_hop_of(plan, k));
}

std::string ring_header_problem(const optim::ring_plan& plan, std::size_t r,
                                std::uint64_t step, std::size_t k,
                                const messages::ring_chunk_msg& m) {
  if (m.sender != plan.left(r))
    return "not from the ring predecessor, worker "
           + std::to_string(plan.left(r));
  if (k >= plan.steps())
    return "more messages than a step has";
  if (m.step != step)
    return "not of step " + std::to_string(step);
  if (m.phase != static_cast<std::uint8_t>(ring_phase_of(plan, k))
      || m.hop != ring_hop_of(plan, k))
    return "not the next hop (expected the " + ring_position(plan, k) + ")";
  auto c = plan.at(r, k).recv_chunk;
  if (m.chunk != c)
    return "not chunk " + std::to_string(c);
  return {};
}

std::string ring_payload_problem(const optim::ring_plan& plan,
                                 const messages::ring_chunk_msg& m,
                                 std::uint64_t max_samples) {
  auto expected = m.chunk < plan.ranks() ? plan.chunk(m.chunk).size : 0;
  if (m.chunk >= plan.ranks() || m.values.size() != expected)
    return std::to_string(m.values.size())
           + " values, not one per entry of the chunk ("
           + std::to_string(expected) + ")";
  if (m.samples > max_samples)
    return std::to_string(m.samples) + " examples, more than "
           + std::to_string(max_samples);
  const float* v = m.values.data();
  for (std::size_t i = 0; i < m.values.size(); ++i)
    if (!std::isfinite(v[i]))
      return "a NaN or infinite value at entry " + std::to_string(i);
  return {};
}

std::string ring_counts_problem(const std::vector<std::uint64_t>& count,
                                std::uint64_t step) {
  for (std::size_t c = 1; c < count.size(); ++c)
    if (count[c] != count[0])
      return "the chunks of step " + std::to_string(step)
             + " sum different numbers of examples (" + std::to_string(count[0])
             + " and " + std::to_string(count[c]) + ")";
  return {};
}

std::string ring_missing(const optim::ring_plan& plan, std::size_t r,
                         std::size_t k, std::uint64_t seq,
                         std::size_t exchanges) {
  return "no message " + std::to_string(k + 1) + " of "
         + std::to_string(plan.steps()) + " (" + ring_position(plan, k)
         + ") of exchange " + std::to_string(seq) + " (step "
         + std::to_string(seq / exchanges) + ")" + " from ring predecessor "
         + std::to_string(plan.left(r));
}

} // namespace troupe::algos
