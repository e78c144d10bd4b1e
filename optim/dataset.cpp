// shard_indices, batch_iterator and the standardizations of
// optim/dataset.hpp; the file readers live in idx_reader.cpp,
// libsvm_reader.cpp and csv_reader.cpp.

#include "optim/dataset.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <numeric>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>

#include "optim/rng.hpp"
#include "optim/state_file.hpp"

namespace troupe::optim {

namespace {

/// Fisher-Yates shuffle driven by optim::rng (portable, unlike std::shuffle).
void shuffle_with(std::vector<std::size_t>& xs, rng& gen) {
  for (std::size_t i = xs.size(); i > 1; --i) {
    auto j = static_cast<std::size_t>(gen.below(i));
    std::swap(xs[i - 1], xs[j]);
  }
}

} // namespace

std::vector<std::vector<std::size_t>>
shard_indices(const dataset& data, std::size_t n, shard_mode mode,
              std::uint64_t seed, std::size_t examples) {
  auto size = examples > 0 ? std::min(examples, data.size()) : data.size();
  if (n == 0 || n > size)
    throw std::invalid_argument(
        "shard_indices: need 1 <= n <= " + std::to_string(size)
        + " (examples in " + data.name + "), got n = " + std::to_string(n));
  std::vector<std::size_t> order(size);
  std::iota(order.begin(), order.end(), std::size_t{0});
  if (mode == shard_mode::iid) {
    rng gen{seed};
    shuffle_with(order, gen);
  } else if (data.labels.size() == size) {
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) {
                       return data.labels[a] < data.labels[b];
                     });
  } else if (data.targets.size() == size) {
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) {
                       return data.targets[a] < data.targets[b];
                     });
  } else if (data.x.rows() > 0) {
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) {
                       return data.x(0, static_cast<Eigen::Index>(a))
                              < data.x(0, static_cast<Eigen::Index>(b));
                     });
  }
  std::vector<std::vector<std::size_t>> shards(n);
  auto base = size / n;
  auto extra = size % n;
  auto first = order.begin();
  for (std::size_t i = 0; i < n; ++i) {
    auto len = static_cast<std::ptrdiff_t>(base + (i < extra ? 1 : 0));
    shards[i].assign(first, first + len);
    first += len;
  }
  return shards;
}

batch_iterator::batch_iterator(std::vector<std::size_t> indices,
                               std::size_t batch_size, std::uint64_t seed,
                               batch_part part)
    : batch_size_(batch_size), seed_(seed), part_(part) {
  if (part_.world == 0 || part_.rank >= part_.world)
    throw std::invalid_argument("batch_iterator: part "
                                + std::to_string(part_.rank) + " of "
                                + std::to_string(part_.world));
  if (indices.size() < std::max<std::size_t>(part_.world, 1))
    throw std::invalid_argument(
        indices.empty() ? "batch_iterator: no example indices"
                        : "batch_iterator: fewer examples than parts");
  if (batch_size_ == 0)
    throw std::invalid_argument("batch_iterator: batch_size must be >= 1");
  indices_ = detail::intern_indices(std::move(indices));
  shuffle();
}

std::size_t batch_iterator::batches_per_epoch() const noexcept {
  auto global = batch_size_ * part_.world;
  auto n = indices_->size();
  auto full = n / global;
  auto rest = n % global;
  return full + (rest >= part_.world ? 1 : 0);
}

void batch_iterator::shuffle() {
  // SplitMix64 seeding inside rng decorrelates neighbouring seeds, so a plain
  // odd-constant mix of (seed, epoch) gives independent epochs.
  order_ = detail::shared_order(indices_, seed_, epoch_, [this] {
    rng gen{seed_ ^ ((epoch_ + 1) * 0x9E3779B97F4A7C15ull)};
    auto order = *indices_;
    shuffle_with(order, gen);
    return order;
  });
}

void batch_iterator::add_indices(const std::vector<std::size_t>& extra) {
  if (extra.empty())
    return;
  auto indices = *indices_;
  indices.insert(indices.end(), extra.begin(), extra.end());
  std::vector<std::size_t> rest(
      order_->begin() + static_cast<std::ptrdiff_t>(pos_), order_->end());
  rest.insert(rest.end(), extra.begin(), extra.end());
  rng gen{seed_ ^ (indices.size() * 0xD1B54A32D192ED03ull)};
  shuffle_with(rest, gen);
  std::vector<std::size_t> order(
      order_->begin(), order_->begin() + static_cast<std::ptrdiff_t>(pos_));
  order.insert(order.end(), rest.begin(), rest.end());
  // This epoch's order is this iterator's own now; the next is shared.
  indices_ = detail::intern_indices(std::move(indices));
  order_ = std::make_shared<const std::vector<std::size_t>>(std::move(order));
}

std::vector<std::size_t> batch_iterator::cede(std::size_t count) {
  auto left = order_->size() - pos_;
  count = std::min(count, left > part_.world ? left - part_.world : 0);
  // This epoch's order is shuffled: its tail is a random choice of the
  // examples not drawn yet.
  auto keep = static_cast<std::ptrdiff_t>(order_->size() - count);
  std::vector<std::size_t> out(order_->begin() + keep, order_->end());
  order_ = std::make_shared<const std::vector<std::size_t>>(
      order_->begin(), order_->begin() + keep);
  // One copy of each ceded example leaves (an index may appear twice).
  std::unordered_map<std::size_t, std::size_t> gone;
  for (auto i : out)
    ++gone[i];
  std::vector<std::size_t> kept;
  kept.reserve(indices_->size() - count);
  for (auto i : *indices_) {
    auto it = gone.find(i);
    if (it != gone.end() && it->second > 0)
      --it->second;
    else
      kept.push_back(i);
  }
  indices_ = detail::intern_indices(std::move(kept));
  return out;
}

const std::vector<std::size_t>& batch_iterator::next_indices() {
  const auto& order = *order_;
  auto global = std::min(batch_size_ * part_.world, order.size() - pos_);
  auto first = pos_ + global * part_.rank / part_.world;
  auto last = pos_ + global * (part_.rank + 1) / part_.world;
  batch_.assign(order.begin() + static_cast<std::ptrdiff_t>(first),
                order.begin() + static_cast<std::ptrdiff_t>(last));
  pos_ += global;
  // Fewer examples left than parts: the epoch ends here (with world 1, only
  // when none is left).
  if (order.size() - pos_ < part_.world) {
    pos_ = 0;
    ++epoch_;
    shuffle();
  }
  return batch_;
}

void batch_iterator::save(state_writer& w, const std::string& prefix) const {
  w.put_u64(prefix + "seed", seed_);
  w.put_u64(prefix + "rank", part_.rank);
  w.put_u64(prefix + "world", part_.world);
  w.put_u64(prefix + "batch_size", batch_size_);
  w.put(prefix + "indices", *indices_);
  w.put(prefix + "order", *order_);
  w.put_u64(prefix + "pos", pos_);
  w.put_u64(prefix + "epoch", epoch_);
}

void batch_iterator::load(const state_reader& r, const std::string& prefix) {
  r.expect_u64(prefix + "seed", seed_);
  r.expect_u64(prefix + "rank", part_.rank);
  r.expect_u64(prefix + "world", part_.world);
  r.expect_u64(prefix + "batch_size", batch_size_);
  auto indices = r.u64(prefix + "indices");
  auto order = r.u64(prefix + "order");
  auto pos = r.u64_scalar(prefix + "pos");
  auto epoch = r.u64_scalar(prefix + "epoch");
  if (indices.size() < part_.world)
    throw r.error(prefix + "indices",
                  std::to_string(indices.size()) + " examples for "
                      + std::to_string(part_.world) + " parts");
  auto sorted_indices = indices;
  auto sorted_order = order;
  std::sort(sorted_indices.begin(), sorted_indices.end());
  std::sort(sorted_order.begin(), sorted_order.end());
  if (sorted_order != sorted_indices)
    throw r.error(prefix + "order",
                  "not a permutation of " + prefix + "indices");
  if (pos > order.size() - part_.world)
    throw r.error(prefix + "pos", std::to_string(pos) + " leaves fewer than "
                                      + std::to_string(part_.world) + " of "
                                      + std::to_string(order.size())
                                      + " examples");
  indices_ = detail::intern_indices({indices.begin(), indices.end()});
  // The saved order may be this iterator's own (after add_indices or
  // cede): it is not looked up.
  order_ = std::make_shared<const std::vector<std::size_t>>(order.begin(),
                                                            order.end());
  pos_ = static_cast<std::size_t>(pos);
  epoch_ = static_cast<std::size_t>(epoch);
}

std::size_t batch_iterator::next(const dataset& data, matrix<float>& x,
                                 std::vector<std::int32_t>& labels,
                                 std::vector<float>* targets) {
  const auto& batch = next_indices();
  auto b = batch.size();
  const auto* idx = batch.data();
  auto size = data.size();
  for (std::size_t i = 0; i < b; ++i)
    if (idx[i] >= size)
      throw std::out_of_range("batch_iterator: index " + std::to_string(idx[i])
                              + " is out of range for " + data.name + " with "
                              + std::to_string(size) + " examples");
  auto rows = data.x.rows();
  x.resize(rows, static_cast<Eigen::Index>(b));
  auto bytes = static_cast<std::size_t>(rows) * sizeof(float);
  for (std::size_t i = 0; i < b; ++i)
    std::memcpy(x.col(static_cast<Eigen::Index>(i)).data(),
                data.x.col(static_cast<Eigen::Index>(idx[i])).data(), bytes);
  if (data.labels.size() == size) {
    labels.resize(b);
    for (std::size_t i = 0; i < b; ++i)
      labels[i] = data.labels[idx[i]];
  } else {
    labels.clear();
  }
  if (targets != nullptr) {
    if (data.targets.size() == size) {
      targets->resize(b);
      for (std::size_t i = 0; i < b; ++i)
        (*targets)[i] = data.targets[idx[i]];
    } else {
      targets->clear();
    }
  }
  return b;
}

scaling standardize(train_test& data) {
  scaling result;
  const auto& x = data.train.x;
  if (x.size() == 0)
    return result;
  double sum = 0, sum_sq = 0;
  for (Eigen::Index j = 0; j < x.cols(); ++j) {
    auto col = x.col(j).cast<double>();
    sum += col.sum();
    sum_sq += col.squaredNorm();
  }
  auto n = static_cast<double>(x.size());
  auto mean = sum / n;
  auto var = std::max(sum_sq / n - mean * mean, 0.0);
  result.mean = static_cast<float>(mean);
  result.stddev = var > 0 ? static_cast<float>(std::sqrt(var)) : 1.0f;
  for (auto* d : {&data.train, &data.test})
    apply_scaling(result, d->x);
  return result;
}

scaling standardize_features(train_test& data) {
  scaling result;
  const auto& x = data.train.x;
  auto rows = static_cast<std::size_t>(x.rows());
  result.means.assign(rows, 0.0f);
  result.stddevs.assign(rows, 1.0f);
  if (x.cols() > 0) {
    // Two passes in double: a column of large values with a small spread
    // (timestamps, say) keeps its variance.
    auto n = static_cast<double>(x.cols());
    std::vector<double> mean(rows, 0.0), var(rows, 0.0);
    for (Eigen::Index j = 0; j < x.cols(); ++j)
      for (std::size_t i = 0; i < rows; ++i)
        mean[i] += x(static_cast<Eigen::Index>(i), j);
    for (auto& m : mean)
      m /= n;
    for (Eigen::Index j = 0; j < x.cols(); ++j)
      for (std::size_t i = 0; i < rows; ++i) {
        double d = x(static_cast<Eigen::Index>(i), j) - mean[i];
        var[i] += d * d;
      }
    for (std::size_t i = 0; i < rows; ++i) {
      result.means[i] = static_cast<float>(mean[i]);
      // A constant feature (or one whose spread float cannot hold) is only
      // centred.
      auto stddev = static_cast<float>(std::sqrt(var[i] / n));
      result.stddevs[i] = stddev > 0 && std::isfinite(stddev) ? stddev : 1.0f;
    }
  }
  for (auto* d : {&data.train, &data.test})
    apply_scaling(result, d->x);
  return result;
}

void apply_scaling(const scaling& s, matrix<float>& x) {
  if (!s.per_feature()) {
    x.array() = (x.array() - s.mean) / s.stddev;
    return;
  }
  auto rows = static_cast<std::size_t>(x.rows());
  if (s.means.size() != rows || s.stddevs.size() != rows)
    throw std::invalid_argument(
        "apply_scaling: a scaling of " + std::to_string(s.means.size())
        + " features for inputs of " + std::to_string(rows));
  for (Eigen::Index j = 0; j < x.cols(); ++j)
    for (std::size_t i = 0; i < rows; ++i) {
      auto& v = x(static_cast<Eigen::Index>(i), j);
      v = (v - s.means[i]) / s.stddevs[i];
    }
}

void assign_labels(dataset& data, const std::vector<double>& raw,
                   bool keep_targets) {
  const bool integral = std::all_of(raw.begin(), raw.end(), [](double v) {
    return v == std::floor(v) && std::abs(v) < 2147483647.0;
  });
  if (keep_targets || !integral)
    data.targets.assign(raw.begin(), raw.end());
  if (!integral)
    return;
  std::map<long long, std::int32_t> ids;
  for (auto v : raw)
    ids.emplace(static_cast<long long>(v), 0);
  std::int32_t next = 0;
  for (auto& kv : ids)
    kv.second = next++;
  data.labels.reserve(raw.size());
  for (auto v : raw)
    data.labels.push_back(ids[static_cast<long long>(v)]);
  data.classes = next;
}

} // namespace troupe::optim
