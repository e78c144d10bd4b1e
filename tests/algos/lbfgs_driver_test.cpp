// Sandblaster L-BFGS in one process (algorithms.md §2): a driver (scalars
// only), K shards and R workers taking P portions, one of them slow (backup
// copies) and one dying mid-run (its portions re-issued), reaches the
// serial reference's point to 1e-9 in as many iterations (T1) for several
// K, R and P, every portion counted once per pass (T2).

#include <cmath>
#include <iostream>
#include <mutex>
#include <set>

#include <caf/duration.hpp>
#include <catch2/catch.hpp>

#include "algos/sandblaster/lbfgs_driver.hpp"
#include "harness.hpp"
#include "optim/synthetic.hpp"

using namespace troupe;

namespace {

using problem_ptr = std::shared_ptr<const optim::logreg_problem>;

problem_ptr logreg(std::uint64_t seed, std::size_t m, std::size_t d,
                   double mu) {
  optim::logreg_options lo;
  lo.m = m;
  lo.d = d;
  lo.mu = mu;
  lo.seed = seed;
  return std::make_shared<const optim::logreg_problem>(optim::make_logreg(lo));
}

/// A job over `prob` cut into `portions`, from x = 0.
algos::lbfgs_job job_of(problem_ptr prob, std::uint32_t shards,
                        std::uint32_t workers, std::size_t portions) {
  algos::lbfgs_job job;
  job.init = std::make_shared<const std::vector<float>>(
      static_cast<std::size_t>(prob->x_star.size()), 0.0f);
  job.shards = shards;
  job.workers = workers;
  job.portions = portions;
  job.compute = [prob, portions](const double* x, std::size_t, std::size_t p,
                                 double* grad, std::uint64_t& samples) {
    return test::logreg_portion(*prob, portions, p, x, grad, samples);
  };
  return job;
}

/// The serial reference from x = 0.
optim::lbfgs_result serial_of(problem_ptr prob,
                              const optim::lbfgs_options& options) {
  optim::objective_fn f
      = [prob](const std::vector<double>& x, std::vector<double>& g) {
          g.resize(x.size());
          return optim::full_gradient(*prob, x.data(), g.data());
        };
  return optim::lbfgs_minimize(
      f,
      std::vector<double>(static_cast<std::size_t>(prob->x_star.size()), 0.0),
      options);
}

double max_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, std::abs(a[i] - b[i]));
  return worst;
}

} // namespace

TEST_CASE("Sandblaster with a slow and a dying worker matches serial "
          "L-BFGS (T1) and counts each portion once per pass (T2)") {
  const std::uint64_t seed = 421;
  std::cout << "sandblaster driver: seed " << seed << std::endl;
  auto prob = logreg(seed, 1024, 12, 1e-2);
  optim::lbfgs_options options;
  options.memory = 4;
  options.max_iterations = 30;
  auto serial = serial_of(prob, options);
  struct config {
    std::uint32_t shards, workers;
    std::size_t portions;
  };
  for (auto c : {config{1, 3, 4}, config{2, 3, 16}, config{3, 4, 33}}) {
    const std::size_t portions = c.portions;
    auto job = job_of(prob, c.shards, c.workers, portions);
    job.options = options;
    // Worker 0 takes 20 ms per portion (its portions get backups); the last
    // worker dies on its first portion (which is re-issued).
    job.delays.assign(c.workers, {});
    job.delays[0] = std::chrono::microseconds{20000};
    job.die_after.assign(c.workers, 0);
    job.die_after.back() = 1;
    auto out = algos::run_lbfgs(job);
    INFO(out.dump().substr(0, 2000));
    REQUIRE_FALSE(out.contains("error"));
    auto worst = max_diff(out["x"].get<std::vector<double>>(), serial.x);
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
  auto prob = logreg(seed, 256, 6, 1e-3);
  const std::size_t portions = 4;
  auto job = job_of(prob, 2, 2, portions);
  job.options.max_iterations = 50;
  // At the third point evaluated (the third pass, whichever worker and
  // copy), portion 1's gradient has a NaN in the last coordinate (shard
  // 1's slice).
  struct seen_points {
    std::mutex mtx;
    std::set<std::vector<double>> points;
  };
  auto seen = std::make_shared<seen_points>();
  job.compute = [prob, seen](const double* x, std::size_t n, std::size_t p,
                             double* grad, std::uint64_t& samples) {
    auto loss = test::logreg_portion(*prob, portions, p, x, grad, samples);
    std::lock_guard<std::mutex> guard{seen->mtx};
    seen->points.insert(std::vector<double>(x, x + n));
    if (seen->points.size() >= 3 && p == 1)
      grad[n - 1] = std::nan("");
    return loss;
  };
  auto out = algos::run_lbfgs(job);
  INFO(out.dump());
  REQUIRE(out.contains("error"));
  CHECK_THAT(out["error"].get<std::string>(),
             Catch::Contains("shard 1 is missing portions"));
  // The point reached before is returned, finite, and better than x0.
  REQUIRE(out.contains("x"));
  auto x = out["x"].get<std::vector<double>>();
  CHECK(out["iterations"].get<std::size_t>() >= 1);
  std::vector<double> g(x.size());
  std::vector<double> zero(x.size(), 0.0);
  CHECK(optim::full_gradient(*prob, x.data(), g.data())
        < optim::full_gradient(*prob, zero.data(), g.data()));
}

TEST_CASE("Sandblaster without backups gives up a worker that does not "
          "answer within the request timeout; the run ends at the serial "
          "point") {
  const std::uint64_t seed = 423;
  std::cout << "sandblaster silent worker: seed " << seed << std::endl;
  auto prob = logreg(seed, 512, 8, 1e-2);
  const std::size_t portions = 6;
  auto job = job_of(prob, 2, 3, portions);
  job.backups = false; // nobody else takes its portion unless it is given up
  job.options.memory = 4;
  job.options.max_iterations = 20;
  job.request_timeout = caf::duration{std::chrono::milliseconds{200}};
  job.delays = {std::chrono::microseconds{1500000}, {}, {}};
  auto out = algos::run_lbfgs(job);
  INFO(out.dump().substr(0, 2000));
  REQUIRE_FALSE(out.contains("error"));
  auto serial = serial_of(prob, job.options);
  auto worst = max_diff(out["x"].get<std::vector<double>>(), serial.x);
  CHECK(out["lost_workers"] == 1);
  CHECK(out["backups"] == 0);
  CHECK(worst < 1e-9);
  CHECK(out["portions_counted"].get<std::uint64_t>()
        == out["passes"].get<std::uint64_t>() * portions);
}
