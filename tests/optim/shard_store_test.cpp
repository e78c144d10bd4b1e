// A parameter shard's state without actors: algorithms.md §1 T1 (one worker
// through K shards equals serial AdaGrad SGD) and T2 (AdaGrad bookkeeping),
// duplicates, malformed pushes and staleness.

#include <cmath>
#include <iostream>
#include <limits>

#include <catch2/catch.hpp>

#include "optim/rng.hpp"
#include "optim/shard_store.hpp"
#include "optim/synthetic.hpp"
#include "tolerances.hpp"

using namespace troupe::optim;

namespace {

shard_store_options adagrad_opts(double gamma) {
  shard_store_options o;
  o.optimizer.name = "adagrad";
  o.optimizer.eps = 1e-8;
  o.lr = gamma;
  return o;
}

std::vector<slice> split(std::size_t d, std::size_t k) {
  range_table t;
  t.add("x", d, range_kind::weight);
  return t.balanced_split(k);
}

} // namespace

TEST_CASE("T1: one worker through K shards equals serial AdaGrad SGD") {
  std::size_t k = GENERATE(1, 2, 7);
  std::uint64_t seed = 17;
  std::cout << "T1 seed " << seed << ", K " << k << '\n';
  lsq_options lo;
  lo.m = 512;
  lo.d = 32;
  lo.seed = seed;
  auto p = make_lsq(lo);
  const std::size_t d = lo.d;
  const double gamma = 0.5;
  std::vector<double> x0(d, 0.0);
  std::vector<shard_store<double>> shards;
  for (auto s : split(d, k))
    shards.emplace_back(s, x0.data(), adagrad_opts(gamma));
  optimizer_options serial_opts = adagrad_opts(gamma).optimizer;
  auto serial = make_optimizer<double>(serial_opts, d);
  std::vector<double> xs = x0, xr(d), g(d), gs(d);
  rng gen{seed};
  for (std::uint64_t step = 1; step <= 300; ++step) {
    // FETCH: the replica overwrites its copy with every shard's slice.
    for (auto& sh : shards)
      std::copy(sh.params(), sh.params() + sh.range().size,
                xr.begin() + static_cast<std::ptrdiff_t>(sh.range().offset));
    std::vector<std::size_t> batch(16);
    for (auto& i : batch)
      i = gen.below(lo.m);
    batch_gradient(p, xr.data(), batch, g.data());
    batch_gradient(p, xs.data(), batch, gs.data());
    // PUSH: each shard gets its slice, computed on its current version.
    for (auto& sh : shards) {
      auto r = sh.push(0, step, sh.version(), sh.range().offset,
                       g.data() + sh.range().offset, sh.range().size);
      REQUIRE(r.status == push_status::applied);
      CHECK(r.staleness == 0);
    }
    serial->step(xs.data(), gs.data(), d, gamma);
  }
  for (auto& sh : shards)
    std::copy(sh.params(), sh.params() + sh.range().size,
              xr.begin() + static_cast<std::ptrdiff_t>(sh.range().offset));
  // AdaGrad is per coordinate, so sharding changes nothing but rounding.
  double diff = 0;
  for (std::size_t i = 0; i < d; ++i)
    diff = std::max(diff, std::abs(xr[i] - xs[i]));
  std::cout << "T1 K " << k << ": max |sharded - serial| = " << diff << '\n';
  CHECK(diff <= troupe::test::sharded_abs);
  // ... and it did train: closer to x* than the start.
  double err0 = p.x_star.norm();
  double err
      = (Eigen::Map<const vector<double>>(xr.data(), d) - p.x_star).norm();
  CHECK(err < 0.5 * err0);
}

TEST_CASE("T2: AdaGrad accumulates the squares of every pushed value") {
  std::uint64_t seed = 23;
  std::cout << "T2 seed " << seed << '\n';
  const std::size_t n = 5;
  const double gamma = 0.1, eps = 1e-8;
  std::vector<double> init(n, 1.0);
  shard_store<double> sh{{0, n}, init.data(), adagrad_opts(gamma)};
  rng gen{seed};
  std::vector<double> expected = init, acc(n, 0.0), g(n);
  for (std::uint64_t seq = 1; seq <= 50; ++seq) {
    for (auto& v : g)
      v = gen.normal() * (1.0 + static_cast<double>(seq % 7));
    sh.push(3, seq, sh.version(), 0, g.data(), n);
    for (std::size_t i = 0; i < n; ++i) {
      acc[i] += g[i] * g[i]; // the current value included
      expected[i] -= gamma * g[i] / (std::sqrt(acc[i]) + eps);
    }
  }
  for (std::size_t i = 0; i < n; ++i)
    CHECK(sh.params()[i]
          == Approx(expected[i]).epsilon(troupe::test::exact_rel));
  CHECK(sh.version() == 50);
  CHECK(sh.workers().at(3).applied == 50);
}

TEST_CASE("duplicates and malformed pushes leave the parameters untouched") {
  std::vector<float> init{1, 2, 3, 4, 5, 6};
  shard_store_options o;
  o.optimizer.name = "sgd";
  o.lr = 0.5;
  shard_store<float> sh{{2, 3}, init.data(), o}; // owns indices 2, 3, 4
  std::vector<float> g{1, 1, 1};
  CHECK(sh.push(7, 1, 0, 2, g.data(), 3).status == push_status::applied);
  std::vector<float> after(sh.params(), sh.params() + 3);
  CHECK(after == std::vector<float>{2.5f, 3.5f, 4.5f});
  auto expect_untouched = [&](push_result r, push_status status) {
    CHECK(r.status == status);
    CHECK(r.version == 1);
    CHECK(std::equal(after.begin(), after.end(), sh.params()));
  };
  expect_untouched(sh.push(7, 1, 0, 2, g.data(), 3), push_status::duplicate);
  expect_untouched(sh.push(7, 2, 0, 1, g.data(), 3), push_status::bad_range);
  expect_untouched(sh.push(7, 3, 0, 2, g.data(), 2), push_status::bad_range);
  expect_untouched(sh.push(7, 4, 9, 2, g.data(), 3), push_status::bad_range);
  for (float bad : {std::numeric_limits<float>::quiet_NaN(),
                    std::numeric_limits<float>::infinity(),
                    -std::numeric_limits<float>::infinity()}) {
    std::vector<float> poisoned{0.5f, bad, 0.5f};
    expect_untouched(sh.push(8, 1, 0, 2, poisoned.data(), 3),
                     push_status::non_finite);
  }
  CHECK(sh.workers().at(7).duplicates == 1);
  CHECK(sh.workers().at(7).rejected == 3);
  CHECK(sh.workers().at(8).rejected == 3);
  CHECK(sh.workers().at(8).applied == 0);
  // A rejected seq was not consumed: the worker's next valid push applies.
  CHECK(sh.push(8, 1, 1, 2, g.data(), 3).status == push_status::applied);
}

TEST_CASE("staleness counts the updates between fetch and apply") {
  std::vector<float> init(4, 0.0f);
  shard_store_options o;
  o.optimizer.name = "sgd";
  o.histogram_buckets = 3;
  shard_store<float> sh{{0, 4}, init.data(), o};
  std::vector<float> g(4, 0.25f);
  auto fetched_a = sh.version(); // worker 1 fetches at version 0
  for (std::uint64_t seq = 1; seq <= 4; ++seq)
    CHECK(sh.push(2, seq, sh.version(), 0, g.data(), 4).staleness == 0);
  auto r = sh.push(1, 1, fetched_a, 0, g.data(), 4);
  CHECK(r.status == push_status::applied);
  CHECK(r.staleness == 4);
  CHECK(r.version == 5);
  CHECK(sh.push(1, 2, 3, 0, g.data(), 4).staleness == 2);
  CHECK(sh.staleness_max() == 4);
  CHECK(sh.staleness_mean() == Approx(6.0 / 6));
  // Buckets 0, 1, and ">= 2".
  CHECK(sh.staleness_histogram() == std::vector<std::uint64_t>{4, 0, 2});
}
