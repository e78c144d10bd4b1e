// Sandblaster L-BFGS in one process (algorithms.md §2): a driver (scalars
// only), K shards and R workers taking P portions, one of them slow (backup
// copies) and one dying mid-run (its portions re-issued), reaches the
// serial reference's point to 1e-9 in as many iterations (T1) for several
// K, R and P, every portion counted once per pass (T2).

#include <atomic>
#include <cmath>
#include <iostream>

#include <caf/duration.hpp>
#include <catch2/catch.hpp>

#include "actors/lbfgs_driver.hpp"
#include "harness.hpp"
#include "optim/synthetic.hpp"

using namespace troupe;

TEST_CASE("Sandblaster with a slow and a dying worker matches serial "
          "L-BFGS (T1) and counts each portion once per pass (T2)") {
  const std::uint64_t seed = 421;
  std::cout << "sandblaster driver: seed " << seed << std::endl;
  optim::logreg_options lo;
  lo.m = 1024;
  lo.d = 12;
  lo.mu = 1e-2;
  lo.seed = seed;
  auto prob
      = std::make_shared<const optim::logreg_problem>(optim::make_logreg(lo));
  optim::lbfgs_options options;
  options.memory = 4;
  options.max_iterations = 30;
  optim::objective_fn f
      = [&](const std::vector<double>& x, std::vector<double>& g) {
          g.resize(x.size());
          return optim::full_gradient(*prob, x.data(), g.data());
        };
  auto serial
      = optim::lbfgs_minimize(f, std::vector<double>(lo.d, 0.0), options);
  struct config {
    std::uint32_t shards, workers;
    std::size_t portions;
  };
  for (auto c : {config{1, 3, 4}, config{2, 3, 16}, config{3, 4, 33}}) {
    const std::size_t portions = c.portions;
    actors::lbfgs_job job;
    job.init = std::make_shared<const std::vector<float>>(lo.d, 0.0f);
    job.shards = c.shards;
    job.workers = c.workers;
    job.portions = portions;
    job.options = options;
    job.compute = [prob, portions](const double* x, std::size_t, std::size_t p,
                                   double* grad, std::uint64_t& samples) {
      return test::logreg_portion(*prob, portions, p, x, grad, samples);
    };
    // Worker 0 takes 20 ms per portion (its portions get backups); the last
    // worker dies on its first portion (which is re-issued).
    job.delays.assign(c.workers, {});
    job.delays[0] = std::chrono::microseconds{20000};
    job.die_after.assign(c.workers, 0);
    job.die_after.back() = 1;
    auto out = actors::run_lbfgs(job);
    INFO(out.dump().substr(0, 2000));
    REQUIRE_FALSE(out.contains("error"));
    auto x = out["x"].get<std::vector<double>>();
    double worst = 0;
    for (std::size_t i = 0; i < lo.d; ++i)
      worst = std::max(worst, std::abs(x[i] - serial.x[i]));
    std::cout << "  " << c.shards << " shards, " << c.workers << " workers, "
              << portions << " portions: " << out["iterations"]
              << " iterations (" << serial.iterations << " serial), "
              << out["passes"] << " passes, max |x - x_serial| = " << worst
              << ", backups " << out["backups"] << ", discarded "
              << out["duplicates_discarded"] << ", re-issued "
              << out["reissued"] << std::endl;
    CHECK(out["iterations"].get<std::size_t>() == serial.iterations);
    CHECK(worst < 1e-9);
    CHECK(out["portions_counted"].get<std::uint64_t>()
          == out["passes"].get<std::uint64_t>() * portions);
    CHECK(out["lost_workers"] == 1);
    CHECK(out["trace"].size() == serial.iterations + 1);
    CHECK(out["backups"].get<std::uint64_t>() > 0); // the slow worker's
  }
}

TEST_CASE("Sandblaster: a NaN gradient ends the run with an error naming "
          "the shard, and the last accepted point is kept") {
  const std::uint64_t seed = 422;
  std::cout << "sandblaster NaN: seed " << seed << std::endl;
  optim::logreg_options lo;
  lo.m = 256;
  lo.d = 6;
  lo.seed = seed;
  auto prob
      = std::make_shared<const optim::logreg_problem>(optim::make_logreg(lo));
  const std::size_t portions = 4;
  auto calls = std::make_shared<std::atomic<int>>(0);
  actors::lbfgs_job job;
  job.init = std::make_shared<const std::vector<float>>(lo.d, 0.0f);
  job.shards = 2;
  job.workers = 2;
  job.portions = portions;
  job.options.max_iterations = 50;
  // From the 9th portion on (the third pass), portion 1's gradient has a
  // NaN in the last coordinate (shard 1's slice).
  job.compute = [prob, calls](const double* x, std::size_t n, std::size_t p,
                              double* grad, std::uint64_t& samples) {
    auto loss = test::logreg_portion(*prob, portions, p, x, grad, samples);
    if (++*calls > 8 && p == 1)
      grad[n - 1] = std::nan("");
    return loss;
  };
  auto out = actors::run_lbfgs(job);
  INFO(out.dump());
  REQUIRE(out.contains("error"));
  CHECK_THAT(out["error"].get<std::string>(),
             Catch::Contains("shard 1 is missing portions"));
  // The point reached before is returned, finite, and better than x0.
  REQUIRE(out.contains("x"));
  auto x = out["x"].get<std::vector<double>>();
  CHECK(out["iterations"].get<std::size_t>() >= 1);
  std::vector<double> g(lo.d);
  std::vector<double> zero(lo.d, 0.0);
  CHECK(optim::full_gradient(*prob, x.data(), g.data())
        < optim::full_gradient(*prob, zero.data(), g.data()));
}

TEST_CASE("Sandblaster without backups gives up a worker that does not "
          "answer within the request timeout; the run ends at the serial "
          "point") {
  const std::uint64_t seed = 423;
  std::cout << "sandblaster silent worker: seed " << seed << std::endl;
  optim::logreg_options lo;
  lo.m = 512;
  lo.d = 8;
  lo.mu = 1e-2;
  lo.seed = seed;
  auto prob
      = std::make_shared<const optim::logreg_problem>(optim::make_logreg(lo));
  const std::size_t portions = 6;
  actors::lbfgs_job job;
  job.init = std::make_shared<const std::vector<float>>(lo.d, 0.0f);
  job.shards = 2;
  job.workers = 3;
  job.portions = portions;
  job.backups = false; // nobody else takes its portion unless it is given up
  job.options.memory = 4;
  job.options.max_iterations = 20;
  job.request_timeout = caf::duration{std::chrono::milliseconds{200}};
  job.compute = [prob](const double* x, std::size_t, std::size_t p,
                       double* grad, std::uint64_t& samples) {
    return test::logreg_portion(*prob, portions, p, x, grad, samples);
  };
  job.delays = {std::chrono::microseconds{1500000}, {}, {}};
  auto out = actors::run_lbfgs(job);
  INFO(out.dump().substr(0, 2000));
  REQUIRE_FALSE(out.contains("error"));
  optim::objective_fn f
      = [&](const std::vector<double>& x, std::vector<double>& g) {
          g.resize(x.size());
          return optim::full_gradient(*prob, x.data(), g.data());
        };
  auto serial
      = optim::lbfgs_minimize(f, std::vector<double>(lo.d, 0.0), job.options);
  auto x = out["x"].get<std::vector<double>>();
  double worst = 0;
  for (std::size_t i = 0; i < lo.d; ++i)
    worst = std::max(worst, std::abs(x[i] - serial.x[i]));
  CHECK(out["lost_workers"] == 1);
  CHECK(out["backups"] == 0);
  CHECK(worst < 1e-9);
  CHECK(out["portions_counted"].get<std::uint64_t>()
        == out["passes"].get<std::uint64_t>() * portions);
}
