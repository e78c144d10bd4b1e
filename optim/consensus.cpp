#include "optim/consensus.hpp"

#include <algorithm>
#include <cmath>

#include "optim/state_file.hpp"

namespace troupe::optim {

void elastic_difference(const float* x, const float* center, double alpha,
                        float* e, std::size_t n) noexcept {
  auto a = static_cast<float>(alpha);
  for (std::size_t i = 0; i < n; ++i)
    e[i] = a * (x[i] - center[i]);
}

void pseudo_gradient(const float* start, const float* x, float* delta,
                     std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i)
    delta[i] = start[i] - x[i];
}

double parle_scope(double c, double s, double cap, double rounds,
                   double per_epoch) noexcept {
  if (!(per_epoch > 0))
    return std::min(c, cap);
  return std::min(c * std::pow(1 + s / per_epoch, rounds), cap);
}

void parle_inner_gradient(float* g, const float* y, const float* anchor,
                          double gamma, std::size_t n) noexcept {
  auto k = static_cast<float>(gamma);
  for (std::size_t i = 0; i < n; ++i)
    g[i] += k * (y[i] - anchor[i]);
}

void running_average(float* z, const float* y, double alpha,
                     std::size_t n) noexcept {
  auto a = static_cast<float>(alpha), b = static_cast<float>(1 - alpha);
  for (std::size_t i = 0; i < n; ++i)
    z[i] = a * z[i] + b * y[i];
}

void parle_outer_gradient(const float* anchor, const float* z,
                          const float* reference, double rho, float* g,
                          std::size_t n) noexcept {
  auto k = static_cast<float>(rho);
  for (std::size_t i = 0; i < n; ++i)
    g[i] = (anchor[i] - z[i]) + k * (anchor[i] - reference[i]);
}

double pull_toward(float* x, const float* leader, double lambda,
                   std::size_t n) noexcept {
  auto l = static_cast<float>(lambda);
  double sq = 0;
  for (std::size_t i = 0; i < n; ++i) {
    float d = x[i] - leader[i];
    sq += double{d} * d;
    x[i] -= l * d;
  }
  return std::sqrt(sq);
}

double distance(const float* x, const float* y, std::size_t n) noexcept {
  double sq = 0;
  for (std::size_t i = 0; i < n; ++i) {
    double d = double{x[i]} - y[i];
    sq += d * d;
  }
  return std::sqrt(sq);
}

std::size_t elect(const std::vector<leader_score>& candidates) noexcept {
  std::size_t best = candidates.size();
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    if (best == candidates.size()) {
      best = i;
      continue;
    }
    const auto& c = candidates[i];
    const auto& b = candidates[best];
    bool cf = std::isfinite(c.score), bf = std::isfinite(b.score);
    bool better;
    if (cf != bf)
      better = cf;
    else if (cf && c.score != b.score)
      better = c.score < b.score;
    else
      better = c.rank < b.rank;
    if (better)
      best = i;
  }
  return best;
}

loss_window::loss_window(std::size_t window)
    : window_(window == 0 ? 1 : window) {
  // nop
}

void loss_window::add(double loss) {
  if (!std::isfinite(loss))
    return;
  losses_.push_back(loss);
  sum_ += loss;
  if (losses_.size() > window_) {
    sum_ -= losses_.front();
    losses_.pop_front();
  }
  // Re-sum now and then so rounding does not accumulate.
  if (++adds_ % 1024 == 0) {
    sum_ = 0;
    for (double l : losses_)
      sum_ += l;
  }
}

void loss_window::save(state_writer& w, const std::string& prefix) const {
  std::vector<double> kept(losses_.begin(), losses_.end());
  w.put(prefix + "losses", kept);
}

void loss_window::load(const state_reader& r, const std::string& prefix) {
  auto kept = r.f64(prefix + "losses");
  if (kept.size() > window_)
    throw r.error(prefix + "losses",
                  "more losses than the window of " + std::to_string(window_));
  losses_.assign(kept.begin(), kept.end());
  sum_ = 0;
  for (double l : losses_)
    sum_ += l;
  adds_ = 0;
}

double loss_window::mean() const noexcept {
  if (losses_.empty())
    return std::numeric_limits<double>::quiet_NaN();
  return sum_ / static_cast<double>(losses_.size());
}

} // namespace troupe::optim
