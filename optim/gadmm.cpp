#include "optim/gadmm.hpp"

#include <stdexcept>
#include <string>
#include <utility>

#include "optim/gossip.hpp"

namespace troupe::optim {

namespace {

/// The chains' key: not DS-Sync's shuffle under the same seed.
std::uint64_t chain_seed(std::uint64_t seed) noexcept {
  return seed ^ 0x6AD33A1Dull;
}

} // namespace

std::uint32_t gadmm_place(std::uint32_t rank, std::uint32_t n,
                          std::uint64_t change, std::uint64_t seed) {
  if (change == 0) {
    if (rank >= n)
      throw std::invalid_argument("gadmm_place: rank " + std::to_string(rank)
                                  + " of " + std::to_string(n));
    return rank;
  }
  return shuffle_place(rank, n, change, chain_seed(seed));
}

std::uint32_t gadmm_rank_at(std::uint32_t place, std::uint32_t n,
                            std::uint64_t change, std::uint64_t seed) {
  if (change == 0) {
    if (place >= n)
      throw std::invalid_argument("gadmm_rank_at: place "
                                  + std::to_string(place) + " of "
                                  + std::to_string(n));
    return place;
  }
  return shuffle_rank(place, n, change, chain_seed(seed));
}

std::vector<std::uint32_t> gadmm_chain(std::uint32_t n, std::uint64_t change,
                                       std::uint64_t seed) {
  std::vector<std::uint32_t> order(n);
  for (std::uint32_t p = 0; p < n; ++p)
    order[p] = gadmm_rank_at(p, n, change, seed);
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
