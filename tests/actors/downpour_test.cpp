// Downpour SGD through the actors: algorithms.md §1 T1 (one worker equals
// serial AdaGrad for K in {1, 2, 7} shards) and T3 (LSQ with 1, 4 and 16
// workers converges under seeded random interleavings; the staleness
// histogram is recorded), and §11 (SSP: the clock gap of a computing worker
// never exceeds the bound, and a slow worker holds the others back).

#include <cmath>
#include <iostream>

#include <catch2/catch.hpp>

#include "algos/downpour/downpour.hpp"
#include "harness.hpp"
#include "optim/optimizer.hpp"
#include "tolerances.hpp"

using namespace troupe;

namespace {

std::uint64_t sum(const nlohmann::json& hist) {
  std::uint64_t s = 0;
  for (auto& x : hist)
    s += x.get<std::uint64_t>();
  return s;
}

/// Serial AdaGrad over the minibatch stream of a one-worker job. With
/// `prefetch`, step t's gradient is taken at the parameters before the
/// previous step's update (its fetch left when step t - 1 began): x_{t+1} =
/// x_t - update(g(x_{t-1})), and g(x_0) for the first step.
std::vector<float> serial_adagrad(std::shared_ptr<const optim::lsq_problem> p,
                                  double gamma, std::size_t batch,
                                  std::size_t steps, std::uint64_t seed,
                                  bool prefetch) {
  std::vector<std::size_t> all(p->a.rows());
  std::iota(all.begin(), all.end(), std::size_t{0});
  optim::synthetic_replica<optim::lsq_problem> serial{p, all, batch, seed};
  optim::optimizer_options ada;
  ada.name = "adagrad";
  auto n = serial.size();
  auto opt = optim::make_optimizer<float>(ada, n);
  std::vector<float> x(serial.params(), serial.params() + n), before = x;
  for (std::size_t t = 0; t < steps; ++t) {
    const auto& at = prefetch && t > 0 ? before : x;
    std::copy(at.begin(), at.end(), serial.params());
    serial.compute();
    before = x;
    opt->step(x.data(), serial.grads(), n, gamma);
  }
  return x;
}

} // namespace

TEST_CASE("T1: one Downpour worker equals serial AdaGrad for K in 1, 2, 7; "
          "with prefetch, serial AdaGrad one step stale") {
  const std::uint64_t seed = 11;
  INFO("seed " << seed);
  auto p = test::lsq_512x20(seed);
  const double gamma = 0.05;
  const std::size_t batch = 16, steps = 200;
  for (bool prefetch : {false, true}) {
    auto expected = serial_adagrad(p, gamma, batch, steps, seed, prefetch);
    for (std::uint32_t k : {1u, 2u, 7u}) {
      auto job = test::lsq_job(p, 1, k, "adagrad", gamma, batch, steps, seed);
      job.policy.prefetch = prefetch;
      auto final_params = job.final_params;
      auto out = actors::run_job(std::move(job));
      INFO("prefetch " << prefetch << ", shards " << k << ": " << out.dump());
      REQUIRE_FALSE(out.contains("error"));
      CHECK(out["server_updates"] == steps * k);
      // A push's staleness: the shard's version against the one the
      // gradient was computed on (one push older with prefetch).
      CHECK(out["staleness_max"] == (prefetch ? 1 : 0));
      REQUIRE(final_params->size() == expected.size());
      double worst = 0;
      for (std::size_t i = 0; i < expected.size(); ++i)
        worst = std::max(worst,
                         std::abs(double{(*final_params)[i]} - expected[i])
                             / std::max(1.0, std::abs(double{expected[i]})));
      CHECK(worst <= test::hand_rel);
    }
  }
}

TEST_CASE("T3: Downpour on LSQ converges with 1, 4 and 16 workers") {
  for (std::uint32_t workers : {1u, 4u, 16u}) {
    const std::uint64_t seed = 100 + workers;
    std::cout << "downpour T3: workers " << workers << ", seed " << seed
              << std::endl;
    auto p = test::lsq_512x20(seed);
    // Total updates fixed across worker counts; adagrad as in the paper.
    auto job = test::lsq_job(p, workers, 3, "adagrad", 0.5, 16, 3000 / workers,
                             seed);
    auto final_params = job.final_params;
    auto out = test::run_seeded(std::move(job), seed);
    INFO(out.dump());
    REQUIRE_FALSE(out.contains("error"));
    auto gap = test::lsq_gap(*p, *final_params);
    auto start = test::lsq_gap(*p, std::vector<float>(p->a.cols(), 0.0f));
    std::cout << "  f - f* = " << gap << " from " << start << std::endl;
    CHECK(gap < 1e-4 * start);
    // Every applied push is in the histogram; more workers, more staleness.
    CHECK(sum(out["staleness_histogram"]) == out["server_updates"]);
    if (workers == 1)
      CHECK(out["staleness_max"] == 0);
    else
      CHECK(out["staleness_mean"].get<double>() > 0.5);
  }
}

TEST_CASE("SSP: a computing worker is never more than s clocks ahead") {
  for (std::uint64_t s : {0u, 1u, 4u}) {
    const std::uint64_t seed = 300 + s;
    std::cout << "ssp: bound " << s << ", seed " << seed << std::endl;
    auto p = test::lsq_512x20(seed);
    auto job = test::lsq_job(p, 4, 2, "sgd", 0.05, 16, 300, seed);
    test::install<algos::downpour>(job)->staleness_bound
        = static_cast<std::int64_t>(s);
    auto final_params = job.final_params;
    auto out = test::run_seeded(std::move(job), seed);
    INFO(out.dump());
    REQUIRE_FALSE(out.contains("error"));
    CHECK(out["max_clock_gap"].get<std::uint64_t>() <= s);
    auto start = test::lsq_gap(*p, std::vector<float>(p->a.cols(), 0.0f));
    CHECK(test::lsq_gap(*p, *final_params) < 1e-3 * start);
  }
}

TEST_CASE("SSP: with one worker 10x slower the others wait at the bound") {
  const std::uint64_t s = 2, seed = 7;
  INFO("seed " << seed);
  auto p = test::lsq_512x20(seed);
  auto job = test::lsq_job(p, 3, 1, "sgd", 0.02, 16, 40, seed);
  test::install<algos::downpour>(job)->staleness_bound
      = static_cast<std::int64_t>(s);
  job.step_delays
      = {std::chrono::microseconds{20000}, std::chrono::microseconds{2000},
         std::chrono::microseconds{2000}};
  auto out = actors::run_job(std::move(job));
  INFO(out.dump());
  REQUIRE_FALSE(out.contains("error"));
  // The fast workers ran into the bound (gap exactly s) but never past it.
  CHECK(out["max_clock_gap"] == s);
  // Waiting dominated the fast workers' time.
  auto& ws = out["worker_stats"];
  REQUIRE(ws.size() == 3);
  CHECK(ws[1]["wait_seconds"].get<double>()
        > 2 * ws[1]["compute_seconds"].get<double>());
}
