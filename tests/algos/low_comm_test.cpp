// The low-communication family through the actors, under seeded random
// interleavings: DiLoCo's synchronous rounds and its asynchronous variant
// reach x* on LSQ with one push a round; with H = 1, SGD inside and outer
// SGD at rate 1 it follows synchronous SGD. Parle's replicas reach x* and
// the shards hold their mean. Gaia's groups reach x* sending only their
// significant changes between groups.

#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>

#include <catch2/catch.hpp>

#include "algos/diloco/diloco.hpp"
#include "algos/gaia/gaia.hpp"
#include "algos/parle/parle.hpp"
#include "algos/sync/sync.hpp"
#include "harness.hpp"

using namespace troupe;

namespace {

/// An LSQ DiLoCo job: p workers, 2 shards, H local SGD steps at `lr`
/// (halved every steps / 6), the outer optimizer on the shards.
actors::job_config diloco_job(std::shared_ptr<const optim::lsq_problem> prob,
                              std::uint32_t p, std::uint64_t h,
                              std::uint64_t steps, double lr, bool async,
                              std::string outer, double outer_lr,
                              std::uint64_t seed,
                              std::shared_ptr<algos::diloco>& algo) {
  auto job = test::lsq_job(prob, p, 2, outer, outer_lr, 16, steps, seed);
  job.server.optimizer.momentum = 0.9;
  algo = test::install<algos::diloco>(job);
  algo->round_steps = h;
  algo->asynchronous = async;
  algo->local.optimizer = {"sgd", 0, 0};
  algo->local.lr = lr;
  algo->local.schedule = test::decay(lr, steps / 6);
  return job;
}

} // namespace

TEST_CASE("DiLoCo: 4 workers reach x* on LSQ in synchronous rounds (outer "
          "Nesterov 0.7, 0.9) and asynchronously (outer SGD 1/4, delayed "
          "Nesterov 0.7, 0.9, N 4), pushing once a round") {
  struct variant {
    bool async;
    std::uint64_t h;
    std::string outer;
    double outer_lr;
  };
  for (auto v :
       {variant{false, 8, "nesterov", 0.7}, variant{false, 1, "nesterov", 0.7},
        variant{true, 8, "sgd", 0.25},
        variant{true, 8, "delayed-nesterov", 0.7}}) {
    const std::uint64_t seed = 900 + v.h + (v.async ? 50 : 0);
    std::cout << "diloco: " << (v.async ? "asynchronous" : "synchronous")
              << ", H " << v.h << ", outer " << v.outer << ", seed " << seed
              << std::endl;
    auto prob = test::lsq_512x20(seed);
    const std::uint64_t steps = 603; // the last round is short (3 steps)
    std::shared_ptr<algos::diloco> algo;
    auto job = diloco_job(prob, 4, v.h, steps, v.async ? 0.05 : 0.02, v.async,
                          v.outer, v.outer_lr, seed, algo);
    job.server.optimizer.delay = 4; // delayed-nesterov's N: the workers
    auto final_params = job.final_params;
    auto out = test::run_seeded(std::move(job), seed);
    INFO(out.dump().substr(0, 3000));
    REQUIRE_FALSE(out.contains("error"));
    auto rounds = (steps + v.h - 1) / v.h;
    for (auto& w : out["worker_stats"]) {
      CHECK(w["steps"].get<std::uint64_t>() == steps);
      CHECK(w["pushes"].get<std::uint64_t>() == rounds);
    }
    // Every push applied once: a synchronous shard's version counts the
    // rounds, an asynchronous one's the pushes.
    for (auto& s : out["shard_stats"]) {
      CHECK(s["applied"].get<std::uint64_t>() == 4 * rounds);
      CHECK(s["version"].get<std::uint64_t>()
            == (v.async ? 4 * rounds : rounds));
    }
    auto gap = test::lsq_gap(*prob, *final_params);
    auto start = test::lsq_gap(*prob, std::vector<float>(20, 0.0f));
    std::cout << "  global model: f - f* = " << gap << " from " << start
              << std::endl;
    CHECK(gap < 1e-3 * start);
  }
}

TEST_CASE("DiLoCo with H = 1, SGD inside and outer SGD at rate 1 follows "
          "synchronous SGD") {
  const std::uint64_t seed = 931;
  std::cout << "diloco = sync: seed " << seed << std::endl;
  auto prob = test::lsq_512x20(seed);
  const std::uint64_t steps = 200;
  std::shared_ptr<algos::diloco> algo;
  auto job = diloco_job(prob, 4, 1, steps, 0.03, false, "sgd", 1.0, seed, algo);
  algo->local.schedule.reset();
  auto diloco_params = job.final_params;
  auto a = test::run_seeded(std::move(job), seed);
  REQUIRE_FALSE(a.contains("error"));
  // The same workers' batches, their mean gradient applied on the shards.
  auto sync_job = test::lsq_job(prob, 4, 2, "sgd", 0.03, 16, steps, seed);
  test::install<algos::sync>(sync_job);
  auto sync_params = sync_job.final_params;
  auto b = test::run_seeded(std::move(sync_job), seed);
  REQUIRE_FALSE(b.contains("error"));
  REQUIRE(diloco_params->size() == sync_params->size());
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < sync_params->size(); ++i) {
    diff = std::max(diff, std::abs(double{(*diloco_params)[i]}
                                   - double{(*sync_params)[i]}));
    norm = std::max(norm, std::abs(double{(*sync_params)[i]}));
  }
  std::cout << "  max |diloco - sync| = " << diff << " of max |x| " << norm
            << std::endl;
  CHECK(norm > 0.1);
  // (start - (start - lr g)) is lr g up to float rounding, 200 times.
  CHECK(diff < 1e-4 * norm);
}

TEST_CASE("DiLoCo refuses flags out of range with the reason") {
  algos::diloco d;
  algos::job_options o;
  o.workers = 4;
  d.round_steps = 0;
  CHECK_THROWS_WITH(d.check_flags(o, {}), Catch::Contains("--inner-steps"));
  d.round_steps = 4;
  d.outer_momentum = 1;
  CHECK_THROWS_WITH(d.check_flags(o, {}), Catch::Contains("--outer-momentum"));
  d.outer_momentum = -0.5;
  CHECK_THROWS_WITH(d.check_flags(o, {}), Catch::Contains("--outer-momentum"));
  d.outer_momentum = -1; // unset
  d.outer_optimizer = "lamb";
  CHECK_THROWS_WITH(d.check_flags(o, {}), Catch::Contains("--outer-optimizer")
                                              && Catch::Contains("lamb"));
  d.outer_optimizer.clear();
  CHECK_NOTHROW(d.check_flags(o, {}));
  d.outer_delay = 8;
  CHECK_THROWS_WITH(d.check_flags(o, {"outer-delay"}),
                    Catch::Contains("--outer-delay is delayed-nesterov's")
                        && Catch::Contains("this job's is nesterov"));
  d.outer_optimizer = "delayed-nesterov";
  CHECK_NOTHROW(d.check_flags(o, {"outer-delay"}));
  d.outer_activation = 1.5;
  CHECK_THROWS_WITH(d.check_flags(o, {"outer-activation"}),
                    Catch::Contains("--outer-activation must be in [0, 1]"));
  d.outer_activation = 0;
  d.outer_optimizer.clear();
  CHECK(algos::diloco_outer_lr(0, "nesterov", false, 4) == 0.7);
  CHECK(algos::diloco_outer_lr(0, "sgd", true, 4) == 0.25);
  CHECK(algos::diloco_outer_lr(0, "delayed-nesterov", true, 4) == 0.7);
  CHECK(algos::diloco_outer_optimizer("", true) == "sgd");
  CHECK(algos::diloco_outer_optimizer("", false) == "nesterov");
  CHECK(algos::diloco_outer_momentum(-1, "nesterov") == 0.9);
  CHECK(algos::diloco_outer_momentum(-1, "delayed-nesterov") == 0.5);
  CHECK(algos::diloco_outer_momentum(0.7, "delayed-nesterov") == 0.7);
}

TEST_CASE("Parle: 4 replicas reach x* on LSQ, the shards holding the mean of "
          "their anchors, one push a round") {
  const std::uint64_t seed = 961;
  std::cout << "parle: seed " << seed << std::endl;
  auto prob = test::lsq_512x20(seed);
  const std::uint64_t steps = 1200, l = 8;
  auto job = test::lsq_job(prob, 4, 2, "sgd", 1, 16, steps, seed);
  job.server.optimizer = {"sgd", 0, 0};
  auto algo = test::install<algos::parle>(job);
  algo->round_steps = l;
  algo->local.optimizer = {"nesterov", 0.9, 0};
  algo->local.lr = 0.03;
  algo->local.schedule = test::decay(0.03, steps / 5);
  algo->rounds_per_epoch = 128.0 / 16 / l; // 128 examples a worker
  auto final_params = job.final_params;
  auto lasts = test::record_workers(
      job, prob, std::vector<std::vector<float>>(4, std::vector<float>(20)),
      seed);
  auto out = test::run_seeded(std::move(job), seed);
  INFO(out.dump().substr(0, 3000));
  REQUIRE_FALSE(out.contains("error"));
  for (auto& w : out["worker_stats"])
    CHECK(w["pushes"].get<std::uint64_t>() == steps / l);
  auto gap = test::lsq_gap(*prob, *final_params);
  auto start = test::lsq_gap(*prob, std::vector<float>(20, 0.0f));
  std::cout << "  mean of the anchors: f - f* = " << gap << " from " << start
            << std::endl;
  CHECK(gap < 1e-3 * start);
  // Each worker's model ends at its anchor, and the shards' parameters are
  // their mean (the last round's pushes, outer SGD at 1).
  std::vector<double> mean(20, 0.0);
  for (auto& last : lasts) {
    REQUIRE(last->size() == 20);
    for (std::size_t i = 0; i < 20; ++i)
      mean[i] += (*last)[i] / 4.0;
    CHECK(test::lsq_gap(*prob, *last) < 1e-2 * start);
  }
  for (std::size_t i = 0; i < 20; ++i)
    CHECK((*final_params)[i] == Approx(mean[i]).margin(1e-5));
}

TEST_CASE("Gaia: 4 workers in 2 groups reach x* on LSQ; every push is "
          "applied by its group's server, and a higher threshold sends fewer "
          "changes between the groups") {
  const std::uint64_t seed = 977;
  auto prob = test::lsq_512x20(seed);
  auto start = test::lsq_gap(*prob, std::vector<float>(20, 0.0f));
  const std::uint64_t steps = 400;
  std::map<double, std::uint64_t> sent;
  for (double s : {0.0, 0.05, 0.05}) {
    bool bounded = sent.count(s) > 0; // the second 0.05: a mirror bound
    std::cout << "gaia: significance " << s << (bounded ? ", bound 1" : "")
              << ", seed " << seed << std::endl;
    auto job = test::lsq_job(prob, 4, 0, "sgd", 0.02, 16, steps, seed);
    job.server.lr_schedule = test::decay(0.02, steps / 2);
    auto algo = test::install<algos::gaia>(job);
    algo->significance = s;
    algo->mirror_bound = bounded ? 1 : -1;
    auto final_params = job.final_params;
    auto out = test::run_seeded(std::move(job), seed);
    INFO(out.dump().substr(0, 3000));
    REQUIRE_FALSE(out.contains("error"));
    for (auto& w : out["worker_stats"])
      CHECK(w["steps"].get<std::uint64_t>() == steps);
    const auto& g = out["gaia"];
    REQUIRE(g["servers"].size() == 2);
    std::uint64_t updates = 0, entries = 0;
    for (auto& server : g["servers"]) {
      updates += server["updates"].get<std::uint64_t>();
      entries += server["entries_sent"].get<std::uint64_t>();
      CHECK(server["refused_blocks"].get<std::uint64_t>() == 0);
    }
    CHECK(updates == 4 * steps);
    auto gap = test::lsq_gap(*prob, *final_params);
    std::cout << "  group 0's replica: f - f* = " << gap << " from " << start
              << "; changes sent " << entries << " of " << 20 * 4 * steps
              << std::endl;
    CHECK(gap < 1e-3 * start);
    if (!bounded)
      sent[s] = entries;
  }
  // At 0 every change crosses; at 5% far fewer do.
  CHECK(sent[0.0] > 20 * 4 * steps * 9 / 10);
  CHECK(sent[0.05] < sent[0.0] / 2);
}
