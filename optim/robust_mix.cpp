#include "optim/robust_mix.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace troupe::optim {

mix_outcome clipped_mix(float* x, std::size_t n,
                        const std::vector<neighbour_model>& neighbours,
                        double tau) {
  if (!(tau > 0))
    throw std::invalid_argument("clipped_mix: the radius must be positive, not "
                                + std::to_string(tau));
  double total = 0;
  for (const auto& nb : neighbours) {
    if (!(nb.weight >= 0 && nb.weight <= 1))
      throw std::invalid_argument(
          "clipped_mix: weight " + std::to_string(nb.weight) + " of "
          + std::to_string(nb.rank) + " is outside [0, 1]");
    total += nb.weight;
  }
  if (total > 1 + 1e-9)
    throw std::invalid_argument("clipped_mix: the weights sum to "
                                + std::to_string(total) + ", above 1");
  mix_outcome out;
  std::vector<double> step(n, 0.0);
  for (const auto& nb : neighbours) {
    double norm2 = 0;
    bool finite = true;
    for (std::size_t i = 0; i < n && finite; ++i) {
      double d = static_cast<double>(nb.values[i]) - x[i];
      finite = std::isfinite(d);
      norm2 += d * d;
    }
    if (!finite || !std::isfinite(norm2)) {
      ++out.skipped;
      continue;
    }
    double norm = std::sqrt(norm2);
    double scale = nb.weight;
    if (norm > tau) {
      scale *= tau / norm;
      ++out.clipped;
    }
    for (std::size_t i = 0; i < n; ++i)
      step[i] += scale * (static_cast<double>(nb.values[i]) - x[i]);
  }
  for (std::size_t i = 0; i < n; ++i)
    x[i] = static_cast<float>(x[i] + step[i]);
  return out;
}

std::vector<std::uint32_t>
group_mix(aggregation_rule& rule, float* x, std::size_t n,
          const std::vector<neighbour_model>& members) {
  if (members.empty())
    return {};
  if (rule.name() == "cclip")
    throw std::invalid_argument(
        "group_mix: cclip mixes by clipped_mix, around the member's model");
  std::vector<contribution> xs;
  xs.reserve(members.size());
  for (const auto& m : members)
    xs.push_back({m.rank, 1, m.values});
  std::vector<float> out(n);
  rule.combine(xs.data(), xs.size(), n, out.data());
  std::copy(out.begin(), out.end(), x);
  return rule.discarded();
}

} // namespace troupe::optim
