// Synchronous all-reduce over the shards (algorithms.md §12): N workers with
// batch b give the parameters of one worker with batch N * b and the same
// seed, up to float rounding; the result does not depend on the order in
// which actors run (the shards sum in worker order).

#include <cmath>
#include <iostream>

#include <catch2/catch.hpp>

#include "algos/registry.hpp"
#include "harness.hpp"
#include "optim/trainer.hpp"

using namespace troupe;

namespace {

/// A labelled synthetic data set (LOGREG's features, two classes).
std::shared_ptr<const optim::dataset> data(std::uint64_t seed) {
  optim::logreg_options o;
  o.m = 480; // divisible by N * b for N in {2, 3}, b = 8
  o.d = 16;
  o.seed = seed;
  return std::make_shared<const optim::dataset>(
      optim::to_dataset(optim::make_logreg(o)));
}

actors::job_config sync_job(std::shared_ptr<const optim::dataset> d,
                            std::uint32_t workers, std::size_t batch,
                            std::uint64_t steps, std::uint64_t seed) {
  actors::job_config job;
  job.algorithm = algos::make_algorithm("sync");
  job.workers = workers;
  job.shards = 3;
  auto init = optim::make_model<float>("mlp", d->sample_shape, d->classes);
  init.init(seed);
  job.init = std::make_shared<const std::vector<float>>(
      init.params(), init.params() + init.size());
  std::vector<std::size_t> all(d->size());
  std::iota(all.begin(), all.end(), std::size_t{0});
  job.make_replica = [=](messages::worker_id w) {
    return optim::make_model_replica("mlp", d, all, batch, seed, seed,
                                     optim::batch_part{w, workers});
  };
  job.steps_per_worker = steps;
  job.server.optimizer.name = "momentum";
  job.server.lr = 0.05;
  job.final_params = std::make_shared<std::vector<float>>();
  return job;
}

} // namespace

TEST_CASE("sync: N workers x batch b equal 1 worker x batch N * b") {
  const std::uint64_t seed = 5, steps = 40;
  const std::size_t b = 8;
  std::cout << "sync: seed " << seed << std::endl;
  auto d = data(seed);
  for (std::uint32_t n : {2u, 3u}) {
    INFO("workers " << n);
    // The reference: one local trainer on the union batch.
    auto model = optim::make_model<float>("mlp", d->sample_shape, d->classes);
    model.init(seed);
    std::vector<std::size_t> all(d->size());
    std::iota(all.begin(), all.end(), std::size_t{0});
    optim::optimizer_options opt;
    opt.name = "momentum";
    optim::schedule_options sched;
    sched.base_lr = 0.05;
    optim::local_trainer serial{
        model, *d, all, n * b, opt, optim::schedule{sched}, seed};
    for (std::uint64_t i = 0; i < steps; ++i)
      serial.step();
    auto job = sync_job(d, n, b, steps, seed);
    auto params = job.final_params;
    auto out = test::run_seeded(std::move(job), seed);
    INFO(out.dump());
    REQUIRE_FALSE(out.contains("error"));
    CHECK(out["server_updates"] == steps * 3); // 3 shards
    REQUIRE(params->size() == model.size());
    double worst = 0, scale = 0;
    for (std::size_t i = 0; i < model.size(); ++i) {
      worst = std::max(
          worst, std::abs(double{(*params)[i]} - double{model.params()[i]}));
      scale = std::max(scale, std::abs(double{model.params()[i]}));
    }
    std::cout << "  workers " << n << ": max |difference| " << worst
              << " (largest parameter " << scale << ")" << std::endl;
    // Float rounding only: the mean of N means vs one mean of N * b terms.
    CHECK(worst <= 1e-5 * scale);
    CHECK(worst > 0); // not the same computation by accident
  }
}

TEST_CASE("sync: the result does not depend on the schedule") {
  auto d = data(9);
  std::string hash;
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    std::cout << "sync schedule: seed " << seed << std::endl;
    auto out = test::run_seeded(sync_job(d, 3, 8, 20, 9), seed);
    REQUIRE_FALSE(out.contains("error"));
    if (hash.empty())
      hash = out["param_hash"];
    CHECK(out["param_hash"] == hash);
  }
  auto threaded = actors::run_job(sync_job(d, 3, 8, 20, 9));
  CHECK(threaded["param_hash"] == hash);
}
