#include "optim/robust.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "optim/state_file.hpp"

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

namespace {

/// Coordinates sorted a block at a time; up to `network_max` contributions
/// by an odd-even transposition network over whole rows (count rounds of
/// element-wise min and max, which vectorize), more by std::sort per
/// coordinate. Either gives the same sorted values.
constexpr std::size_t block = 64, network_max = 32;

/// rows[k * block + j] <- the k-th smallest value of coordinate i0 + j.
void sort_block(const contribution* xs, std::size_t count, std::size_t i0,
                std::size_t b, float* rows) {
  for (std::size_t k = 0; k < count; ++k)
    std::copy(xs[k].values + i0, xs[k].values + i0 + b, rows + k * block);
  for (std::size_t round = 0; round < count; ++round)
    for (std::size_t k = round % 2; k + 1 < count; k += 2) {
      float* lo = rows + k * block;
      float* hi = lo + block;
      for (std::size_t j = 0; j < b; ++j) {
        float a = lo[j], c = hi[j];
        lo[j] = a < c ? a : c;
        hi[j] = a < c ? c : a;
      }
    }
}

/// visit(i, sorted, stride): sorted[k * stride] is the k-th smallest value
/// of coordinate i, for every coordinate in order.
template <class Visit>
void sorted_columns(const contribution* xs, std::size_t count, std::size_t n,
                    Visit&& visit) {
  if (count <= network_max) {
    std::vector<float> rows(count * block);
    for (std::size_t i0 = 0; i0 < n; i0 += block) {
      auto b = std::min(block, n - i0);
      sort_block(xs, count, i0, b, rows.data());
      for (std::size_t j = 0; j < b; ++j)
        visit(i0 + j, rows.data() + j, block);
    }
    return;
  }
  std::vector<float> col(count);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t k = 0; k < count; ++k)
      col[k] = xs[k].values[i];
    std::sort(col.begin(), col.end());
    visit(i, col.data(), std::size_t{1});
  }
}

} // namespace

void median_of(const contribution* xs, std::size_t count, std::size_t n,
               float* out) {
  auto mid = count / 2;
  sorted_columns(
      xs, count, n, [&](std::size_t i, const float* s, std::size_t stride) {
        if (count % 2 == 1)
          out[i] = s[mid * stride];
        else
          out[i]
              = static_cast<float>((static_cast<double>(s[(mid - 1) * stride])
                                    + static_cast<double>(s[mid * stride]))
                                   / 2);
      });
}

void coordinate_median::run(const contribution* xs, std::size_t count,
                            std::size_t n, float* out) {
  median_of(xs, count, n, out);
}

void trimmed_mean::run(const contribution* xs, std::size_t count, std::size_t n,
                       float* out) {
  auto b = std::min<std::size_t>(opts_.f, (count - 1) / 2);
  auto kept = static_cast<double>(count - 2 * b);
  sorted_columns(xs, count, n,
                 [&](std::size_t i, const float* sorted, std::size_t stride) {
                   double s = 0;
                   for (std::size_t k = b; k < count - b; ++k)
                     s += sorted[k * stride];
                   out[i] = static_cast<float>(s / kept);
                 });
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

void centered_clipping::save(state_writer& w, const std::string& prefix) const {
  w.put(prefix + "center", center_);
}

void centered_clipping::load(const state_reader& r, const std::string& prefix) {
  center_.clear();
  if (r.has(prefix + "center"))
    center_ = r.f64(prefix + "center");
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

void lipschitz_median::save(state_writer& w, const std::string& prefix) const {
  std::vector<std::uint64_t> who;
  std::vector<float> values;
  for (const auto& [id, g] : last_) {
    who.insert(who.end(), {id, g.size()});
    values.insert(values.end(), g.begin(), g.end());
  }
  w.put(prefix + "last.workers", who);
  w.put(prefix + "last.values", values);
}

void lipschitz_median::load(const state_reader& r, const std::string& prefix) {
  last_.clear();
  if (!r.has(prefix + "last.workers"))
    return;
  auto who = r.u64(prefix + "last.workers");
  auto values = r.f32(prefix + "last.values");
  if (who.size() % 2 != 0)
    throw r.error(prefix + "last.workers", "not a worker and a size each");
  std::size_t at = 0;
  for (std::size_t i = 0; i < who.size(); i += 2) {
    if (who[i + 1] > values.size() - at)
      throw r.error(prefix + "last.values", "shorter than the sizes");
    last_[static_cast<std::uint32_t>(who[i])].assign(
        values.begin() + static_cast<std::ptrdiff_t>(at),
        values.begin() + static_cast<std::ptrdiff_t>(at + who[i + 1]));
    at += who[i + 1];
  }
  if (at != values.size())
    throw r.error(prefix + "last.values", "longer than the sizes");
}

} // namespace troupe::optim
