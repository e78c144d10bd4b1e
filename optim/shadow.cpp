#include "optim/shadow.hpp"

#include <stdexcept>

namespace troupe::optim {

bmuf_state::bmuf_state(const std::vector<float>& init)
    : global(init), momentum(init.size(), 0.0f), start(init) {}

void bmuf_update(bmuf_state& s, const std::vector<float>& average,
                 double block_momentum, double block_lr) {
  if (average.size() != s.start.size())
    throw std::invalid_argument(
        "bmuf_update: the average has " + std::to_string(average.size())
        + " values, the state " + std::to_string(s.start.size()));
  for (std::size_t i = 0; i < average.size(); ++i) {
    double g = static_cast<double>(average[i]) - s.start[i];
    double d = block_momentum * s.momentum[i] + block_lr * g;
    double wg = s.global[i] + d;
    s.momentum[i] = static_cast<float>(d);
    s.global[i] = static_cast<float>(wg);
    s.start[i] = static_cast<float>(wg + block_momentum * d);
  }
}

void shadow_delta(const float* target, const float* snapshot, float* delta,
                  std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)
    delta[i] = target[i] - snapshot[i];
}

void accumulate(std::vector<double>& sum, const float* x, std::size_t n) {
  if (sum.size() != n)
    throw std::invalid_argument("accumulate: sizes differ");
  for (std::size_t i = 0; i < n; ++i)
    sum[i] += x[i];
}

} // namespace troupe::optim
