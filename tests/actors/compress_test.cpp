// Compressed pushes and shares through the actors (algorithms.md §8, §9):
// Downpour and sync with each compressor reach the LSQ optimum that the
// uncompressed run reaches, sync stays reproducible, and compressed SGP
// keeps the push-sum weights and converges.

#include <iostream>

#include <catch2/catch.hpp>

#include "algos/registry.hpp"
#include "algos/sgp/sgp.hpp"
#include "harness.hpp"
#include "optim/compress.hpp"

using namespace troupe;

namespace {

/// Runs an LSQ job and returns (final JSON, f - f* of the evaluated model).
std::pair<nlohmann::json, double> run(actors::job_config job,
                                      const optim::lsq_problem& prob,
                                      std::uint64_t seed) {
  auto params = job.final_params;
  auto out = test::run_seeded(std::move(job), seed);
  return {out, params->empty() ? 1e9 : test::lsq_gap(prob, *params)};
}

} // namespace

TEST_CASE("downpour and sync with AdaComp, top-k and 1-bit reach the LSQ "
          "optimum of the uncompressed run") {
  const std::uint64_t seed = 301;
  std::cout << "compressed downpour / sync: seed " << seed << std::endl;
  auto prob = test::lsq_512x20(seed);
  std::vector<float> zero(20, 0.0f);
  auto start = test::lsq_gap(*prob, zero);
  for (std::string algo : {"downpour", "sync"}) {
    for (auto c : {optim::codec::none, optim::codec::adacomp,
                   optim::codec::topk, optim::codec::onebit}) {
      INFO(algo << " " << optim::to_string(c));
      auto job = test::lsq_job(prob, 2, 2, "sgd", 0.05, 16, 600, seed);
      job.algorithm = algos::make_algorithm(algo);
      job.policy.compress.method = c;
      job.policy.compress.bin_fc = 4;
      job.policy.compress.density_fc = 0.25;
      job.server.lr_schedule = test::decay(0.05, 200);
      auto [out, gap] = run(std::move(job), *prob, seed);
      INFO(out.dump().substr(0, 2000));
      REQUIRE_FALSE(out.contains("error"));
      std::cout << "  " << algo << " " << optim::to_string(c)
                << ": f - f* = " << gap;
      CHECK(gap < 2e-3 * start);
      CHECK(out["rejected_pushes"].empty());
      if (c != optim::codec::none) {
        auto ratio = out["compression_ratio"]["fc"].get<double>();
        std::cout << ", ratio " << ratio << ", residual "
                  << out["residual_norm"];
        CHECK(ratio > 1.2); // 10-coordinate shards: headers weigh
        CHECK(out["residual_norm"].get<double>() > 0);
      }
      std::cout << std::endl;
    }
  }
}

TEST_CASE("sync with AdaComp is reproducible: the shards sum the decoded "
          "gradients in worker order") {
  const std::uint64_t seed = 302;
  std::cout << "compressed sync reproducibility: seed " << seed << std::endl;
  auto prob = test::lsq_512x20(seed);
  auto make = [&] {
    auto job = test::lsq_job(prob, 3, 2, "sgd", 0.05, 16, 60, seed);
    job.algorithm = algos::make_algorithm("sync");
    job.policy.compress.method = optim::codec::adacomp;
    job.policy.compress.bin_fc = 4;
    return job;
  };
  auto a = test::run_seeded(make(), seed);
  auto b = test::run_seeded(make(), seed + 1); // another interleaving
  CHECK(a["param_hash"] == b["param_hash"]);
}

TEST_CASE("compressed SGP keeps the push-sum weights and reaches x*") {
  const std::uint64_t seed = 303;
  std::cout << "compressed sgp: seed " << seed << std::endl;
  auto prob = test::lsq_512x20(seed);
  std::vector<float> zero(20, 0.0f);
  auto start = test::lsq_gap(*prob, zero);
  for (auto c :
       {optim::codec::adacomp, optim::codec::topk, optim::codec::onebit}) {
    INFO(optim::to_string(c));
    auto job = test::lsq_job(prob, 4, 0, "sgd", 1, 16, 600, seed);
    auto sgp = test::install<algos::sgp>(job);
    sgp->local.optimizer = {"sgd", 0, 0};
    sgp->local.lr = 0.05;
    sgp->local.schedule = test::decay(0.05, 200);
    sgp->settings.compress.method = c;
    sgp->settings.compress.bin_fc = 4;
    sgp->settings.compress.density_fc = 0.25;
    sgp->settings.gamma = c == optim::codec::topk ? 0.2 : 0.5;
    auto [out, gap] = run(std::move(job), *prob, seed);
    INFO(out.dump().substr(0, 2000));
    REQUIRE_FALSE(out.contains("error"));
    std::cout << "  " << optim::to_string(c) << ": f - f* = " << gap
              << ", ratio " << out["compression_ratio"]["overall"] << std::endl;
    CHECK(gap < 2e-3 * start);
    CHECK(out["sgp"]["weight_sum"].get<double>() == Approx(4).margin(1e-9));
  }
}
