#include <algorithm>
#include <cstdint>
#include <iostream>
#include <stdexcept>
#include <vector>

#include <catch2/catch.hpp>

#include "optim/dataset.hpp"
#include "optim/rng.hpp"

using namespace troupe::optim;

namespace {

/// m examples with x(:, k) = (k, k, k), labels from a seeded generator in
/// 0..classes-1 and targets k / 2.
dataset numbered(std::size_t m, int classes, std::uint64_t seed) {
  dataset data;
  data.name = "numbered";
  data.x.resize(3, static_cast<Eigen::Index>(m));
  rng gen{seed};
  for (std::size_t k = 0; k < m; ++k) {
    data.x.col(static_cast<Eigen::Index>(k)).setConstant(static_cast<float>(k));
    data.labels.push_back(static_cast<std::int32_t>(gen.below(classes)));
    data.targets.push_back(static_cast<float>(k) / 2);
  }
  data.classes = classes;
  data.sample_shape = shape{3, 1, 1};
  return data;
}

/// Checks that the shards partition 0..m-1 with sizes differing by at most 1.
void check_partition(const std::vector<std::vector<std::size_t>>& shards,
                     std::size_t m) {
  std::vector<int> seen(m, 0);
  std::size_t smallest = m;
  std::size_t largest = 0;
  for (const auto& shard : shards) {
    smallest = std::min(smallest, shard.size());
    largest = std::max(largest, shard.size());
    for (auto k : shard) {
      REQUIRE(k < m);
      ++seen[k];
    }
  }
  CHECK(largest - smallest <= 1);
  CHECK(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }));
}

/// One epoch of (index, label, target) triples decoded from the batches.
struct batch_log {
  std::vector<std::size_t> sizes;
  std::vector<std::size_t> order;
};

batch_log epoch_of(batch_iterator& it, const dataset& data) {
  batch_log log;
  matrix<float> x;
  std::vector<std::int32_t> labels;
  std::vector<float> targets;
  auto epoch = it.epoch();
  while (it.epoch() == epoch) {
    auto b = it.next(data, x, labels, &targets);
    REQUIRE(x.cols() == static_cast<Eigen::Index>(b));
    REQUIRE(x.rows() == 3);
    REQUIRE(labels.size() == b);
    REQUIRE(targets.size() == b);
    log.sizes.push_back(b);
    for (std::size_t i = 0; i < b; ++i) {
      auto k = static_cast<std::size_t>(x(0, static_cast<Eigen::Index>(i)));
      CHECK(x(2, static_cast<Eigen::Index>(i)) == static_cast<float>(k));
      CHECK(labels[i] == data.labels[k]);
      CHECK(targets[i] == data.targets[k]);
      log.order.push_back(k);
    }
  }
  return log;
}

} // namespace

TEST_CASE("shard_indices: iid shards partition the examples") {
  const std::uint64_t seed = 17;
  std::cout << "shard seed " << seed << "\n";
  INFO("seed " << seed);
  auto data = numbered(103, 5, seed);
  for (std::size_t n : {1u, 2u, 4u, 7u, 103u}) {
    INFO("n = " << n);
    auto shards = shard_indices(data, n, shard_mode::iid, seed);
    REQUIRE(shards.size() == n);
    check_partition(shards, 103);
  }
  auto a = shard_indices(data, 4, shard_mode::iid, seed);
  CHECK(a == shard_indices(data, 4, shard_mode::iid, seed));
  CHECK(a != shard_indices(data, 4, shard_mode::iid, seed + 1));
  // Shuffled: the first shard is not simply 0..25.
  CHECK(!std::is_sorted(a[0].begin(), a[0].end()));
  CHECK(a[0].size() == 26);
  CHECK(a[3].size() == 25);
}

TEST_CASE("shard_indices: sorted_by_label shards are sorted and stable") {
  const std::uint64_t seed = 18;
  INFO("seed " << seed);
  auto data = numbered(103, 5, seed);
  auto shards = shard_indices(data, 4, shard_mode::sorted_by_label, seed);
  check_partition(shards, 103);
  std::vector<std::size_t> all;
  for (const auto& shard : shards)
    all.insert(all.end(), shard.begin(), shard.end());
  for (std::size_t i = 1; i < all.size(); ++i) {
    auto prev = data.labels[all[i - 1]];
    auto cur = data.labels[all[i]];
    REQUIRE(prev <= cur);
    if (prev == cur)
      REQUIRE(all[i - 1] < all[i]); // stable
  }
  // Non-iid indeed: the first shard holds only the smallest labels.
  CHECK(data.labels[shards[0].front()] == 0);
  CHECK(data.labels[shards[3].back()] == 4);
  // The seed does not matter for a sorted split.
  CHECK(shards == shard_indices(data, 4, shard_mode::sorted_by_label, 99));
  // Regression data sorts by target (here decreasing in the index).
  data.labels.clear();
  for (std::size_t k = 0; k < 103; ++k)
    data.targets[k] = -static_cast<float>(k);
  auto by_target = shard_indices(data, 2, shard_mode::sorted_by_label, 0);
  CHECK(by_target[0].front() == 102);
  CHECK(by_target[1].back() == 0);
  CHECK(std::is_sorted(by_target[0].rbegin(), by_target[0].rend()));
}

TEST_CASE("shard_indices: n must be in 1..size") {
  auto data = numbered(10, 2, 1);
  CHECK_THROWS_AS(shard_indices(data, 0, shard_mode::iid, 1),
                  std::invalid_argument);
  CHECK_THROWS_AS(shard_indices(data, 11, shard_mode::sorted_by_label, 1),
                  std::invalid_argument);
  CHECK_NOTHROW(shard_indices(data, 10, shard_mode::iid, 1));
}

TEST_CASE("batch_iterator: every index once per epoch, last batch smaller") {
  const std::uint64_t seed = 5;
  std::cout << "batch seed " << seed << "\n";
  INFO("seed " << seed);
  auto data = numbered(10, 3, seed);
  std::vector<std::size_t> indices(10);
  for (std::size_t k = 0; k < 10; ++k)
    indices[k] = k;
  batch_iterator it{indices, 4, seed};
  CHECK(it.size() == 10);
  CHECK(it.batches_per_epoch() == 3);
  CHECK(it.epoch() == 0);
  auto first = epoch_of(it, data);
  CHECK(it.epoch() == 1);
  CHECK(first.sizes == std::vector<std::size_t>{4, 4, 2});
  auto second = epoch_of(it, data);
  CHECK(it.epoch() == 2);
  for (const auto* log : {&first, &second}) {
    auto sorted = log->order;
    std::sort(sorted.begin(), sorted.end());
    CHECK(sorted == indices);
  }
  CHECK(first.order != second.order); // reshuffled every epoch
  CHECK(first.order != indices);      // shuffled at all
  // Same seed, same batches; another seed, other batches.
  batch_iterator again{indices, 4, seed};
  CHECK(epoch_of(again, data).order == first.order);
  CHECK(epoch_of(again, data).order == second.order);
  batch_iterator other{indices, 4, seed + 1};
  CHECK(epoch_of(other, data).order != first.order);
}

TEST_CASE("batch_iterator: added examples join this epoch and every later "
          "one") {
  const std::uint64_t seed = 11;
  std::cout << "add_indices seed " << seed << "\n";
  std::vector<std::size_t> mine{0, 1, 2, 3, 4, 5}, lost{6, 7, 8, 9};
  batch_iterator it{mine, 2, seed};
  std::vector<std::size_t> seen;
  // Two batches into the epoch, a lost worker's examples arrive.
  for (int b = 0; b < 2; ++b)
    for (auto i : it.next_indices())
      seen.push_back(i);
  it.add_indices(lost);
  CHECK(it.size() == 10);
  CHECK(it.batches_per_epoch() == 5);
  while (it.epoch() == 0)
    for (auto i : it.next_indices())
      seen.push_back(i);
  // The rest of this epoch drew every example exactly once, old and new.
  std::sort(seen.begin(), seen.end());
  CHECK(seen == std::vector<std::size_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  // The next epoch covers all ten again.
  std::vector<std::size_t> next;
  while (it.epoch() == 1)
    for (auto i : it.next_indices())
      next.push_back(i);
  std::sort(next.begin(), next.end());
  CHECK(next == seen);
}

TEST_CASE("batch_iterator: a subset of indices, exact fit, regression data") {
  auto data = numbered(20, 4, 2);
  std::vector<std::size_t> subset{3, 7, 11, 19, 2, 5};
  batch_iterator it{subset, 3, 9};
  auto log = epoch_of(it, data);
  CHECK(log.sizes == std::vector<std::size_t>{3, 3});
  std::sort(log.order.begin(), log.order.end());
  CHECK(log.order == std::vector<std::size_t>{2, 3, 5, 7, 11, 19});
  // Without labels the label vector is left empty; targets still arrive.
  data.labels.clear();
  matrix<float> x;
  std::vector<std::int32_t> labels{1, 2, 3};
  std::vector<float> targets;
  CHECK(it.next(data, x, labels, &targets) == 3);
  CHECK(labels.empty());
  CHECK(targets.size() == 3);
}

TEST_CASE("batch_iterator: bad arguments") {
  CHECK_THROWS_AS(batch_iterator({}, 4, 1), std::invalid_argument);
  CHECK_THROWS_AS(batch_iterator({1, 2}, 0, 1), std::invalid_argument);
  auto data = numbered(5, 2, 1);
  batch_iterator it{{1, 9}, 2, 1};
  matrix<float> x;
  std::vector<std::int32_t> labels;
  CHECK_THROWS_AS(it.next(data, x, labels), std::out_of_range);
}

TEST_CASE("standardize uses the training set's statistics for both sets") {
  troupe::optim::train_test d;
  d.train.x.resize(2, 3);
  d.train.x << 1, 2, 3, 4, 5, 6; // mean 3.5, variance 35/12
  d.test.x.resize(2, 1);
  d.test.x << 3.5f, 10;
  auto s = troupe::optim::standardize(d);
  CHECK(s.mean == Approx(3.5));
  CHECK(s.stddev == Approx(std::sqrt(35.0 / 12)));
  CHECK(d.train.x.mean() == Approx(0).margin(1e-6));
  CHECK(std::sqrt(d.train.x.array().square().mean()) == Approx(1));
  CHECK(d.test.x(0, 0) == Approx(0).margin(1e-6));
  CHECK(d.test.x(1, 0) == Approx(6.5 / std::sqrt(35.0 / 12)));
  // A constant training set is centred only, never divided by zero.
  troupe::optim::train_test c;
  c.train.x = troupe::optim::matrix<float>::Constant(3, 2, 7.0f);
  c.test.x = troupe::optim::matrix<float>::Constant(3, 1, 8.0f);
  auto cs = troupe::optim::standardize(c);
  CHECK(cs.stddev == 1.0f);
  CHECK(c.test.x(0, 0) == Approx(1.0));
}
