#include "optim/robust.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace troupe::optim {

namespace {

bool finite(const float* x, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)
    if (!std::isfinite(x[i]))
      return false;
  return true;
}

double squared_distance(const float* x, const float* y, std::size_t n) {
  double s = 0;
  for (std::size_t i = 0; i < n; ++i) {
    double d = static_cast<double>(x[i]) - static_cast<double>(y[i]);
    s += d * d;
  }
  return s;
}

double squared_norm(const float* x, std::size_t n) {
  double s = 0;
  for (std::size_t i = 0; i < n; ++i)
    s += static_cast<double>(x[i]) * static_cast<double>(x[i]);
  return s;
}

/// The mean of the contributions `pick` into `out` (in double).
void mean_of(const contribution* xs, const std::vector<std::size_t>& pick,
             std::size_t n, float* out) {
  auto k = static_cast<double>(pick.size());
  for (std::size_t i = 0; i < n; ++i) {
    double s = 0;
    for (auto j : pick)
      s += xs[j].values[i];
    out[i] = static_cast<float>(s / k);
  }
}

/// Indices 0..count-1 ordered by `key`, ties by worker id.
std::vector<std::size_t> order_by(const contribution* xs, std::size_t count,
                                  const std::vector<double>& key) {
  std::vector<std::size_t> idx(count);
  std::iota(idx.begin(), idx.end(), std::size_t{0});
  std::sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) {
    return key[a] < key[b] || (key[a] == key[b] && xs[a].worker < xs[b].worker);
  });
  return idx;
}

} // namespace

void robust_rule::combine(const contribution* xs, std::size_t count,
                          std::size_t n, float* out) {
  discarded_.clear();
  finite_.clear();
  for (std::size_t k = 0; k < count; ++k) {
    if (finite(xs[k].values, n))
      finite_.push_back(xs[k]);
    else
      discard(xs[k].worker);
  }
  if (finite_.empty()) {
    // Nothing to trust: a zero step leaves the parameters as they are.
    std::fill(out, out + n, 0.0f);
    return;
  }
  run(finite_.data(), finite_.size(), n, out);
}

void median_of(const contribution* xs, std::size_t count, std::size_t n,
               float* out) {
  std::vector<float> col(count);
  auto mid = count / 2;
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t k = 0; k < count; ++k)
      col[k] = xs[k].values[i];
    std::nth_element(col.begin(), col.begin() + static_cast<long>(mid),
                     col.end());
    if (count % 2 == 1) {
      out[i] = col[mid];
    } else {
      auto lower = *std::max_element(col.begin(),
                                     col.begin() + static_cast<long>(mid));
      out[i] = static_cast<float>(
          (static_cast<double>(lower) + static_cast<double>(col[mid])) / 2);
    }
  }
}

void coordinate_median::run(const contribution* xs, std::size_t count,
                            std::size_t n, float* out) {
  median_of(xs, count, n, out);
}

void trimmed_mean::run(const contribution* xs, std::size_t count, std::size_t n,
                       float* out) {
  auto b = std::min<std::size_t>(opts_.f, (count - 1) / 2);
  std::vector<float> col(count);
  auto kept = static_cast<double>(count - 2 * b);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t k = 0; k < count; ++k)
      col[k] = xs[k].values[i];
    std::sort(col.begin(), col.end());
    double s = 0;
    for (std::size_t k = b; k < count - b; ++k)
      s += col[k];
    out[i] = static_cast<float>(s / kept);
  }
}

void krum::run(const contribution* xs, std::size_t count, std::size_t n,
               float* out) {
  if (count == 1) {
    std::copy(xs[0].values, xs[0].values + n, out);
    return;
  }
  std::vector<double> d(count * count, 0.0);
  for (std::size_t a = 0; a < count; ++a)
    for (std::size_t b = a + 1; b < count; ++b)
      d[a * count + b] = d[b * count + a]
          = squared_distance(xs[a].values, xs[b].values, n);
  // Neighbours scored: count - f - 2, within [1, count - 1].
  auto near = count > opts_.f + 2 ? count - opts_.f - 2 : std::size_t{1};
  near = std::min(near, count - 1);
  std::vector<double> score(count);
  std::vector<double> row;
  for (std::size_t a = 0; a < count; ++a) {
    row.clear();
    for (std::size_t b = 0; b < count; ++b)
      if (b != a)
        row.push_back(d[a * count + b]);
    std::partial_sort(row.begin(), row.begin() + static_cast<long>(near),
                      row.end());
    score[a] = std::accumulate(row.begin(),
                               row.begin() + static_cast<long>(near), 0.0);
  }
  auto idx = order_by(xs, count, score);
  std::size_t m = 1;
  if (multi_) {
    m = opts_.m > 0 ? opts_.m
                    : (count > opts_.f ? count - opts_.f : std::size_t{1});
    m = std::clamp<std::size_t>(m, 1, count);
  }
  std::vector<std::size_t> pick(idx.begin(),
                                idx.begin() + static_cast<long>(m));
  for (std::size_t k = m; k < count; ++k)
    discard(xs[idx[k]].worker);
  mean_of(xs, pick, n, out);
}

void geometric_median::run(const contribution* xs, std::size_t count,
                           std::size_t n, float* out) {
  std::vector<float> start(n);
  median_of(xs, count, n, start.data());
  std::vector<double> z(start.begin(), start.end()), next(n);
  std::vector<double> w(count);
  iterations_ = 0;
  for (std::uint32_t it = 0; it < opts_.geomed_iterations; ++it) {
    ++iterations_;
    double wsum = 0;
    for (std::size_t k = 0; k < count; ++k) {
      double s = 0;
      for (std::size_t i = 0; i < n; ++i) {
        double e = xs[k].values[i] - z[i];
        s += e * e;
      }
      w[k] = 1.0 / std::max(opts_.geomed_nu, std::sqrt(s));
      wsum += w[k];
    }
    double change = 0, size = 0;
    for (std::size_t i = 0; i < n; ++i) {
      double s = 0;
      for (std::size_t k = 0; k < count; ++k)
        s += w[k] * xs[k].values[i];
      next[i] = s / wsum;
      change += (next[i] - z[i]) * (next[i] - z[i]);
      size += next[i] * next[i];
    }
    z.swap(next);
    if (std::sqrt(change)
        <= opts_.geomed_tolerance * std::max(1.0, std::sqrt(size)))
      break;
  }
  for (std::size_t i = 0; i < n; ++i)
    out[i] = static_cast<float>(z[i]);
}

void centered_clipping::run(const contribution* xs, std::size_t count,
                            std::size_t n, float* out) {
  if (center_.size() != n)
    center_.assign(n, 0.0);
  std::vector<double> step(n);
  for (std::uint32_t it = 0; it < opts_.clip_iterations; ++it) {
    std::fill(step.begin(), step.end(), 0.0);
    for (std::size_t k = 0; k < count; ++k) {
      double s = 0;
      for (std::size_t i = 0; i < n; ++i) {
        double e = xs[k].values[i] - center_[i];
        s += e * e;
      }
      double dist = std::sqrt(s);
      double scale = dist > opts_.clip_radius ? opts_.clip_radius / dist : 1.0;
      for (std::size_t i = 0; i < n; ++i)
        step[i] += scale * (xs[k].values[i] - center_[i]);
    }
    for (std::size_t i = 0; i < n; ++i)
      center_[i] += step[i] / static_cast<double>(count);
  }
  for (std::size_t i = 0; i < n; ++i)
    out[i] = static_cast<float>(center_[i]);
}

void comparative_elimination::run(const contribution* xs, std::size_t count,
                                  std::size_t n, float* out) {
  std::vector<double> norm(count);
  for (std::size_t k = 0; k < count; ++k)
    norm[k] = squared_norm(xs[k].values, n);
  auto idx = order_by(xs, count, norm);
  auto keep = count > opts_.f ? count - opts_.f : std::size_t{1};
  std::vector<std::size_t> pick(idx.begin(),
                                idx.begin() + static_cast<long>(keep));
  for (std::size_t k = keep; k < count; ++k)
    discard(xs[idx[k]].worker);
  mean_of(xs, pick, n, out);
}

void lipschitz_median::run(const contribution* xs, std::size_t count,
                           std::size_t n, float* out) {
  // Each known worker's change of gradient; the median of those changes.
  std::vector<double> change(count, -1.0);
  std::vector<double> known;
  for (std::size_t k = 0; k < count; ++k) {
    auto i = last_.find(xs[k].worker);
    if (i != last_.end() && i->second.size() == n) {
      change[k]
          = std::sqrt(squared_distance(xs[k].values, i->second.data(), n));
      known.push_back(change[k]);
    }
  }
  std::vector<contribution> kept;
  double bar = 0;
  if (!known.empty()) {
    auto mid = known.begin() + static_cast<long>((known.size() - 1) / 2);
    std::nth_element(known.begin(), mid, known.end());
    bar = *mid; // the lower median: at least half are kept
  }
  for (std::size_t k = 0; k < count; ++k) {
    if (change[k] < 0 || change[k] <= bar)
      kept.push_back(xs[k]);
    else
      discard(xs[k].worker);
  }
  for (std::size_t k = 0; k < count; ++k)
    last_[xs[k].worker].assign(xs[k].values, xs[k].values + n);
  median_of(kept.data(), kept.size(), n, out);
}

} // namespace troupe::optim
