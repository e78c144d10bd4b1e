#include "optim/ring_plan.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace troupe::optim {

ring_plan::ring_plan(std::size_t ranks, std::size_t length)
    : ranks_(ranks), length_(length) {
  if (ranks == 0 || length < ranks)
    throw std::invalid_argument("ring_plan: need 1 <= ranks <= length, got "
                                + std::to_string(ranks) + " ranks for "
                                + std::to_string(length) + " elements");
  range_table table;
  table.add("vector", length, range_kind::weight);
  chunks_ = table.balanced_split(ranks);
}

ring_transfer ring_plan::at(std::size_t rank, std::size_t step) const noexcept {
  const auto n = ranks_;
  ring_transfer t;
  if (step + 1 < n) {
    // Reduce-scatter step s: send chunk (r - s), receive chunk (r - s - 1).
    t.send_chunk = (rank + n - step % n) % n;
    t.recv_chunk = (rank + 2 * n - step % n - 1) % n;
    t.reduce = true;
  } else {
    // All-gather step s: rank r owns the complete chunk (r + 1 - s).
    auto s = step - (n - 1);
    t.send_chunk = (rank + 1 + n - s % n) % n;
    t.recv_chunk = (rank + n - s % n) % n;
    t.reduce = false;
  }
  return t;
}

std::size_t ring_plan::elements_sent(std::size_t rank) const noexcept {
  std::size_t total = 0;
  for (std::size_t s = 0; s < steps(); ++s)
    total += chunks_[at(rank, s).send_chunk].size;
  return total;
}

template <class T>
void ring_allreduce(const ring_plan& plan, const std::vector<T*>& buffers) {
  if (buffers.size() != plan.ranks())
    throw std::invalid_argument(
        "ring_allreduce: " + std::to_string(buffers.size())
        + " buffers for a plan of " + std::to_string(plan.ranks()) + " ranks");
  // What each rank sends in a step is read before anyone writes, as if all
  // messages of the step were in flight at once.
  std::vector<std::vector<T>> in_flight(plan.ranks());
  for (std::size_t step = 0; step < plan.steps(); ++step) {
    for (std::size_t r = 0; r < plan.ranks(); ++r) {
      auto c = plan.chunk(plan.at(r, step).send_chunk);
      in_flight[r].assign(buffers[r] + c.offset,
                          buffers[r] + c.offset + c.size);
    }
    for (std::size_t r = 0; r < plan.ranks(); ++r) {
      auto t = plan.at(r, step);
      const auto& msg = in_flight[plan.left(r)];
      auto c = plan.chunk(t.recv_chunk);
      T* dst = buffers[r] + c.offset;
      if (t.reduce)
        for (std::size_t i = 0; i < c.size; ++i)
          dst[i] += msg[i];
      else
        std::copy(msg.begin(), msg.end(), dst);
    }
  }
}

template void ring_allreduce<float>(const ring_plan&,
                                    const std::vector<float*>&);
template void ring_allreduce<double>(const ring_plan&,
                                     const std::vector<double*>&);

} // namespace troupe::optim
