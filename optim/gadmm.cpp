#include "optim/gadmm.hpp"

#include <numeric>
#include <utility>

#include "optim/rng.hpp"

namespace troupe::optim {

std::vector<std::uint32_t> gadmm_chain(std::uint32_t n, std::uint64_t change,
                                       std::uint64_t seed) {
  std::vector<std::uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  if (change == 0)
    return order;
  rng gen{(seed ^ 0x6AD33A1Dull) * 0x9E3779B97F4A7C15ull + change};
  for (std::uint32_t i = n; i > 1; --i)
    std::swap(order[i - 1], order[gen.below(i)]);
  return order;
}

void gadmm_gradient(float* g, const float* x, const float* mu, const float* s,
                    std::size_t d, double rho, std::size_t n) noexcept {
  auto dd = static_cast<double>(d);
  for (std::size_t i = 0; i < n; ++i) {
    double v = static_cast<double>(g[i]) - mu[i];
    if (d > 0)
      v += rho * (dd * x[i] - s[i]);
    g[i] = static_cast<float>(v);
  }
}

void gadmm_dual(float* lambda, const float* left, const float* right,
                double rho, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i)
    lambda[i] = static_cast<float>(
        lambda[i] + rho * (static_cast<double>(left[i]) - right[i]));
}

std::vector<std::vector<float>>
gadmm_rebuild(const std::vector<const float*>& mu, std::size_t n) {
  std::vector<std::vector<float>> out;
  if (mu.size() < 2)
    return out;
  std::vector<double> acc(n, 0.0);
  for (std::size_t p = 0; p + 1 < mu.size(); ++p) {
    for (std::size_t i = 0; i < n; ++i)
      acc[i] -= mu[p][i];
    out.emplace_back(acc.begin(), acc.end());
  }
  return out;
}

} // namespace troupe::optim
