#include "optim/attack.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "optim/quote.hpp"

namespace troupe::optim {

namespace {

const std::vector<std::string>& names() {
  static const std::vector<std::string> n{
      "sign_flip", "gaussian", "label_flip", "alie", "ipm", "nan", "inf"};
  return n;
}

} // namespace

std::vector<std::string> attack_names() {
  return names();
}

attack_kind parse_attack(const std::string& name) {
  const auto& n = names();
  for (std::size_t i = 0; i < n.size(); ++i)
    if (n[i] == name)
      return static_cast<attack_kind>(i);
  std::string valid;
  for (const auto& x : n)
    valid += (valid.empty() ? "" : ", ") + x;
  throw std::invalid_argument("unknown attack " + quote(name)
                              + " (known: " + valid + ")");
}

std::string to_string(attack_kind k) {
  return names().at(static_cast<std::size_t>(k));
}

double normal_quantile(double p) {
  if (!(p > 0 && p < 1))
    throw std::invalid_argument("normal_quantile: p must be in (0, 1)");
  // Acklam's coefficients.
  static const double a[]
      = {-3.969683028665376e+01, 2.209460984245205e+02,  -2.759285104469687e+02,
         1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
  static const double b[]
      = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
         6.680131188771972e+01, -1.328068155288572e+01};
  static const double c[]
      = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
         -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
  static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01,
                             2.445134137142996e+00, 3.754408661907416e+00};
  const double low = 0.02425;
  double x;
  if (p < low) {
    double q = std::sqrt(-2 * std::log(p));
    x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5])
        / ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  } else if (p <= 1 - low) {
    double q = p - 0.5, r = q * q;
    x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5])
        * q
        / (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
  } else {
    double q = std::sqrt(-2 * std::log(1 - p));
    x = -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5])
        / ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  }
  // One Halley step on Phi(x) - p.
  double e = 0.5 * std::erfc(-x / std::sqrt(2.0)) - p;
  double u = e * std::sqrt(2 * M_PI) * std::exp(x * x / 2);
  return x - u / (1 + x * u / 2);
}

double alie_z(std::uint32_t n, std::uint32_t f) {
  if (n == 0)
    return 0;
  auto s = static_cast<std::int64_t>(n / 2 + 1) - static_cast<std::int64_t>(f);
  double p = static_cast<double>(static_cast<std::int64_t>(n) - s)
             / static_cast<double>(n);
  if (!(p > 0.5))
    return 0;
  if (p >= 1)
    p = 1 - 1e-12;
  return normal_quantile(p);
}

void validate(const attack_options& o) {
  if (!(std::isfinite(o.scale) && o.scale > 0 && o.scale <= 1e6))
    throw std::invalid_argument("--attack-scale must be in (0, 1e6]");
  if (!(std::isfinite(o.sigma) && o.sigma > 0 && o.sigma <= 1e12))
    throw std::invalid_argument("--attack-sigma must be in (0, 1e12]");
  if (o.scout_batches < 2 || o.scout_batches > 64)
    throw std::invalid_argument("--attack-batches must be in [2, 64]");
  if (o.byzantine >= o.workers && o.workers > 0)
    throw std::invalid_argument("--byzantine must be below --workers");
}

byzantine_replica::byzantine_replica(std::unique_ptr<replica> inner,
                                     std::unique_ptr<replica> scout,
                                     attack_options o, std::int32_t classes,
                                     std::uint32_t worker)
    : replica_wrapper(std::move(inner)), scout_(std::move(scout)), opts_(o),
      rng_(o.seed * 0x9e3779b97f4a7c15ULL + worker) {
  validate(o);
  if (o.kind == attack_kind::alie)
    z_ = alie_z(o.workers, o.byzantine);
  if ((o.kind == attack_kind::alie || o.kind == attack_kind::ipm)
      && (!scout_ || scout_->size() != inner_->size()))
    throw std::invalid_argument("attack " + to_string(o.kind)
                                + " needs a scout replica of the same model");
  if (o.kind == attack_kind::label_flip && !inner_->flip_labels(classes))
    throw std::invalid_argument("attack label_flip needs a replica with "
                                "class labels");
}

void byzantine_replica::estimate() {
  auto n = size();
  mu_.assign(n, 0.0);
  sd_.assign(n, 0.0);
  std::copy(params(), params() + n, scout_->params());
  auto k = opts_.scout_batches;
  // Welford's running mean and variance per coordinate.
  for (std::uint32_t j = 1; j <= k; ++j) {
    scout_->compute();
    const float* g = scout_->grads();
    for (std::size_t i = 0; i < n; ++i) {
      double d = g[i] - mu_[i];
      mu_[i] += d / j;
      sd_[i] += d * (g[i] - mu_[i]);
    }
  }
  for (std::size_t i = 0; i < n; ++i)
    sd_[i] = std::sqrt(sd_[i] / (k - 1));
}

step_result byzantine_replica::compute() {
  auto n = size();
  float* g = grads();
  step_result r;
  try {
    r = inner_->compute(); // the honest gradient (flipped labels: not)
    samples_ = r.samples;
    attack(g, n);
  } catch (const std::domain_error&) {
    // The attacker's own model is no longer finite (in gossip it steps with
    // its attack), so its gradient and its scout's are not either. That is
    // the attack, not a divergence that should stop the worker.
    std::fill(g, g + n, std::numeric_limits<float>::quiet_NaN());
    r.loss = std::numeric_limits<double>::quiet_NaN();
    r.samples = samples_;
  }
  return r;
}

void byzantine_replica::attack(float* g, std::size_t n) {
  switch (opts_.kind) {
  case attack_kind::sign_flip:
    for (std::size_t i = 0; i < n; ++i)
      g[i] = static_cast<float>(-opts_.scale * g[i]);
    break;
  case attack_kind::gaussian: {
    std::normal_distribution<double> noise{0.0, opts_.sigma};
    for (std::size_t i = 0; i < n; ++i)
      g[i] = static_cast<float>(noise(rng_));
    break;
  }
  case attack_kind::label_flip:
    break; // computed on flipped labels
  case attack_kind::alie:
    estimate();
    for (std::size_t i = 0; i < n; ++i)
      g[i] = static_cast<float>(mu_[i] - z_ * sd_[i]);
    break;
  case attack_kind::ipm:
    estimate();
    for (std::size_t i = 0; i < n; ++i)
      g[i] = static_cast<float>(-opts_.scale * mu_[i]);
    break;
  case attack_kind::nan:
    std::fill(g, g + n, std::numeric_limits<float>::quiet_NaN());
    break;
  case attack_kind::inf:
    std::fill(g, g + n, std::numeric_limits<float>::infinity());
    break;
  }
}

} // namespace troupe::optim
