// Checkpoints of actor jobs (issue [11]), in one process: the coordinator
// pauses the workers at step boundaries, collects every role's state, and a
// job resumed from any of them ends where the uninterrupted job does — bit
// for bit for sync (the shards sum in worker order), with every worker's
// steps and samples adding up for downpour (with compressed pushes: the
// residuals travel too). All-reduce's workers pause after a step they agree
// on. A stop request writes a checkpoint first.

#include <functional>
#include <iostream>
#include <mutex>

#include <catch2/catch.hpp>

#include "actors/stop_request.hpp"
#include "algos/allreduce/allreduce.hpp"
#include "algos/diloco/diloco.hpp"
#include "algos/dssync/dssync.hpp"
#include "algos/gadmm/gadmm.hpp"
#include "algos/gaia/gaia.hpp"
#include "algos/parle/parle.hpp"
#include "algos/registry.hpp"
#include "harness.hpp"
#include "optim/param_hash.hpp"

using namespace troupe;

namespace {

std::shared_ptr<const optim::dataset> data(std::uint64_t seed) {
  optim::logreg_options o;
  o.m = 480;
  o.d = 16;
  o.seed = seed;
  return std::make_shared<const optim::dataset>(
      optim::to_dataset(optim::make_logreg(o)));
}

actors::job_config make_job(const std::string& algo,
                            std::shared_ptr<const optim::dataset> d,
                            std::uint32_t workers, std::uint64_t steps,
                            std::uint64_t seed) {
  actors::job_config job;
  job.algorithm = algos::make_algorithm(algo);
  job.workers = workers;
  job.shards = 3;
  auto init = optim::make_model<float>("mlp", d->sample_shape, d->classes);
  init.init(seed);
  job.init = std::make_shared<const std::vector<float>>(
      init.params(), init.params() + init.size());
  job.make_replica = [=](messages::worker_id w) {
    std::vector<std::size_t> mine;
    for (std::size_t i = w; i < d->size(); i += workers)
      mine.push_back(i);
    return optim::make_model_replica("mlp", d, mine, 8, seed + w, seed);
  };
  job.steps_per_worker = steps;
  job.server.optimizer.name = "adam";
  job.server.lr = 0.01;
  job.final_params = std::make_shared<std::vector<float>>();
  return job;
}

/// Checkpoints kept in memory, by the job's steps.
struct captured {
  std::mutex m;
  std::vector<std::pair<std::uint64_t, actors::resume_point>> points;
};

void capture_into(actors::job_config& job, std::shared_ptr<captured> c,
                  std::uint64_t every) {
  job.checkpoints.every_steps = every;
  job.checkpoints.write
      = [c](std::uint64_t steps, const actors::resume_point& s) {
          std::lock_guard<std::mutex> lock{c->m};
          c->points.emplace_back(steps, s);
          c->points.back().second.path = "memory@" + std::to_string(steps);
          return c->points.back().second.path;
        };
}

std::string hash(const std::vector<float>& p) {
  return optim::hash_params(p.data(), p.size());
}

/// Runs make()'s job plainly, then with a checkpoint every `every` steps,
/// then resumed from each checkpoint (at least `at_least` of them): every
/// run ends with the plain run's bits and examples; `also` checks each
/// resumed run's JSON further.
void resumes_bit_for_bit(const std::function<actors::job_config()>& make,
                         std::uint64_t seed, std::uint64_t every,
                         std::size_t at_least,
                         const std::function<void(const nlohmann::json&)>& also
                         = {}) {
  auto plain = make();
  auto plain_params = plain.final_params;
  auto a = test::run_seeded(std::move(plain), seed);
  REQUIRE_FALSE(a.contains("error"));
  auto with = make();
  auto points = std::make_shared<captured>();
  capture_into(with, points, every);
  auto with_params = with.final_params;
  auto b = test::run_seeded(std::move(with), seed);
  REQUIRE_FALSE(b.contains("error"));
  CHECK(hash(*with_params) == hash(*plain_params));
  REQUIRE(points->points.size() >= at_least);
  for (auto& [at, state] : points->points) {
    INFO("resumed from step " << at);
    auto job = make();
    job.resume = std::make_shared<const actors::resume_point>(state);
    auto params = job.final_params;
    auto r = test::run_seeded(std::move(job), seed);
    INFO(r.dump().substr(0, 400));
    REQUIRE_FALSE(r.contains("error"));
    CHECK(r["resumed_from"]["steps"] == at);
    CHECK(r["samples"] == a["samples"]);
    if (also)
      also(r);
    CHECK(hash(*params) == hash(*plain_params));
  }
}

} // namespace

TEST_CASE("a sync job resumed from any checkpoint ends bit for bit") {
  const std::uint64_t seed = 11, steps = 30;
  std::cout << "checkpoint sync: seed " << seed << std::endl;
  auto d = data(seed);
  auto plain = make_job("sync", d, 3, steps, seed);
  auto plain_params = plain.final_params;
  auto a = test::run_seeded(std::move(plain), seed);
  REQUIRE_FALSE(a.contains("error"));

  auto with = make_job("sync", d, 3, steps, seed);
  auto points = std::make_shared<captured>();
  capture_into(with, points, 10);
  auto with_params = with.final_params;
  auto b = test::run_seeded(std::move(with), seed);
  REQUIRE_FALSE(b.contains("error"));
  CHECK(hash(*with_params) == hash(*plain_params));
  REQUIRE(points->points.size() >= 5);
  CHECK(b["checkpoints"].size() == points->points.size());
  for (auto& [at, state] : points->points) {
    INFO("resumed from step " << at);
    CHECK(state.files.size() == 6); // 3 shards, 3 workers
    auto job = make_job("sync", d, 3, steps, seed);
    job.resume = std::make_shared<const actors::resume_point>(state);
    auto params = job.final_params;
    auto r = test::run_seeded(std::move(job), seed);
    INFO(r.dump().substr(0, 400));
    REQUIRE_FALSE(r.contains("error"));
    CHECK(r["resumed_from"]["steps"] == at);
    CHECK(r["steps"] == a["steps"]);
    CHECK(r["samples"] == a["samples"]);
    CHECK(hash(*params) == hash(*plain_params));
  }
}

TEST_CASE("diloco and parle jobs resumed from any checkpoint, inside a "
          "round too, end bit for bit") {
  const std::uint64_t seed = 14, steps = 30;
  for (std::string algo : {"diloco", "parle"}) {
    std::cout << "checkpoint " << algo << ": seed " << seed << std::endl;
    auto d = data(seed);
    auto make = [&] {
      auto job = make_job(algo, d, 3, steps, seed);
      // Rounds end at steps 4, 8, ...; 30 ends short.
      if (algo == "diloco") {
        auto a = test::install<algos::diloco>(job);
        a->round_steps = 4;
        a->local.optimizer = {"adam", 0, 0};
        a->local.lr = 0.005;
      } else {
        auto a = test::install<algos::parle>(job);
        a->round_steps = 4;
        a->local.lr = 0.05;
        a->rounds_per_epoch = 5;
        job.server.optimizer = {"sgd", 0, 0};
        job.server.lr = 1;
      }
      return job;
    };
    // 5 steps a worker: inside a round.
    resumes_bit_for_bit(make, seed, 15, 3, [](const nlohmann::json& r) {
      for (auto& w : r["worker_stats"])
        CHECK(w["pushes"] == 8); // ceil(30 / 4), before and after
    });
  }
}

TEST_CASE("gadmm jobs, on one chain and on changing chains, resumed from "
          "any checkpoint, inside an iteration too, end bit for bit") {
  const std::uint64_t seed = 15, steps = 30;
  for (std::uint64_t rechain : {0u, 2u}) {
    std::cout << "checkpoint gadmm, rechain " << rechain << ": seed " << seed
              << std::endl;
    auto d = data(seed);
    auto make = [&] {
      auto job = make_job("gadmm", d, 4, steps, seed);
      job.shards = 0;
      auto a = test::install<algos::gadmm>(job);
      a->settings.round_steps = 2; // iterations end at steps 2, 4, ...
      a->settings.rechain = rechain;
      a->settings.rho = 0.5;
      a->local.optimizer = {"momentum", 0.9, 0};
      a->local.lr = 0.05;
      a->seed = seed;
      return job;
    };
    resumes_bit_for_bit(make, seed, 17, 3); // inside iterations
  }
}

TEST_CASE("allreduce jobs (dense, ScaleCom, PowerSGD), their workers paused "
          "after one step agreed on the ring, resumed from any checkpoint "
          "end bit for bit") {
  const std::uint64_t seed = 18, steps = 30;
  for (std::string kind : {"dense", "scalecom", "powersgd"}) {
    std::cout << "checkpoint allreduce " << kind << ": seed " << seed
              << std::endl;
    auto d = data(seed);
    auto make = [&] {
      auto job = make_job("allreduce", d, 4, steps, seed);
      job.shards = 0;
      auto a = test::install<algos::allreduce>(job);
      a->local.optimizer = {"momentum", 0.9, 0};
      a->local.lr = 0.05;
      a->reduce.kind = kind;
      a->reduce.density = 0.05;
      a->reduce.rank = 2;
      a->reduce.seed = seed;
      auto model = optim::make_model<float>("mlp", d->sample_shape, d->classes);
      a->reduce.layers = model.ranges().ranges();
      return job;
    };
    // Every 7 steps a worker: the workers agree on a later step, so each
    // checkpoint is at a step of its own (its error feedback, PowerSGD's
    // warm start and the optimizer's momentum travel in it).
    resumes_bit_for_bit(make, seed, 7 * 4, 3, [](const nlohmann::json& r) {
      for (auto& w : r["worker_stats"])
        CHECK(w["steps"] == 30);
    });
  }
}

TEST_CASE("a dssync job in random groups (one shared handle table, markers "
          "to every worker) resumed from any checkpoint ends bit for bit") {
  const std::uint64_t seed = 16, steps = 30;
  std::cout << "checkpoint dssync random groups: seed " << seed << std::endl;
  auto d = data(seed);
  auto make = [&] {
    auto job = make_job("dssync", d, 6, steps, seed);
    job.shards = 0;
    auto a = test::install<algos::dssync>(job);
    a->settings.group_size = 4; // 6 workers: a group of 4 and one of 2
    a->settings.seed = seed;
    a->local.optimizer = {"momentum", 0.9, 0};
    a->local.lr = 0.05;
    REQUIRE(a->any_peer(job));
    return job;
  };
  resumes_bit_for_bit(make, seed, 7, 3);
}

TEST_CASE("a downpour job with compressed pushes resumes with every worker's "
          "steps and samples") {
  const std::uint64_t seed = 12, steps = 40;
  std::cout << "checkpoint downpour: seed " << seed << std::endl;
  auto d = data(seed);
  auto with = make_job("downpour", d, 3, steps, seed);
  with.policy.compress.method = optim::codec::topk;
  with.policy.compress.density_fc = 0.1;
  auto points = std::make_shared<captured>();
  capture_into(with, points, 25);
  auto b = test::run_seeded(std::move(with), seed);
  REQUIRE_FALSE(b.contains("error"));
  REQUIRE(points->points.size() >= 2);
  auto& [at, state] = points->points[points->points.size() / 2];
  auto job = make_job("downpour", d, 3, steps, seed);
  job.policy.compress.method = optim::codec::topk;
  job.policy.compress.density_fc = 0.1;
  job.resume = std::make_shared<const actors::resume_point>(state);
  auto r = test::run_seeded(std::move(job), seed);
  REQUIRE_FALSE(r.contains("error"));
  CHECK(r["resumed_from"]["steps"] == at);
  CHECK(r["steps"] == steps * 3);
  REQUIRE(r["worker_stats"].size() == 3);
  for (std::size_t w = 0; w < 3; ++w) {
    CHECK(r["worker_stats"][w]["steps"] == steps);
    CHECK(r["worker_stats"][w]["samples"] == b["worker_stats"][w]["samples"]);
  }
  // The shards' version counts every applied push, before and after.
  CHECK(r["server_updates"] == b["server_updates"]);
}

TEST_CASE("a gaia job resumes with both groups' servers, every push counted "
          "once") {
  const std::uint64_t seed = 15, steps = 40;
  std::cout << "checkpoint gaia: seed " << seed << std::endl;
  auto d = data(seed);
  auto make = [&] {
    auto job = make_job("gaia", d, 4, steps, seed);
    job.shards = 0; // the group servers are Gaia's own
    return job;
  };
  auto with = make();
  auto points = std::make_shared<captured>();
  capture_into(with, points, 30);
  auto b = test::run_seeded(std::move(with), seed);
  REQUIRE_FALSE(b.contains("error"));
  REQUIRE(points->points.size() >= 2);
  auto& [at, state] = points->points[points->points.size() / 2];
  CHECK(state.files.count("algo-gaia-server-0.state") == 1);
  CHECK(state.files.count("algo-gaia-server-1.state") == 1);
  auto job = make();
  job.resume = std::make_shared<const actors::resume_point>(state);
  auto r = test::run_seeded(std::move(job), seed);
  INFO(r.dump().substr(0, 600));
  REQUIRE_FALSE(r.contains("error"));
  CHECK(r["resumed_from"]["steps"] == at);
  for (std::size_t w = 0; w < 4; ++w)
    CHECK(r["worker_stats"][w]["steps"] == steps);
  // The servers' counts go on from the checkpoint: every push applied once.
  std::uint64_t updates = 0;
  for (auto& server : r["gaia"]["servers"])
    updates += server["updates"].get<std::uint64_t>();
  CHECK(updates == 4 * steps);
  // A checkpoint of two servers does not resume a job of three groups.
  auto three = make();
  auto algo = test::install<algos::gaia>(three);
  algo->groups = 3;
  algo->group_of = {0, 1, 2, 2};
  three.resume = std::make_shared<const actors::resume_point>(state);
  auto refused = test::run_seeded(std::move(three), seed);
  CHECK_THAT(refused.value("error", std::string{}),
             Catch::Contains("2 Gaia servers") && Catch::Contains("3"));
}

TEST_CASE("a stop request writes a checkpoint before the job ends") {
  const std::uint64_t seed = 13, steps = 100000;
  std::cout << "checkpoint stop: seed " << seed << std::endl;
  auto d = data(seed);
  auto job = make_job("sync", d, 2, steps, seed);
  auto points = std::make_shared<captured>();
  capture_into(job, points, 0);
  job.checkpoints.every_seconds = 1e6; // only the stop's
  auto stop = std::make_shared<actors::stop_request>();
  job.stop = stop;
  job.on_progress = [stop](const actors::job_progress& p, bool) {
    if (p.steps == 50)
      stop->request("test stop");
  };
  auto r = test::run_seeded(std::move(job), seed);
  REQUIRE_FALSE(r.contains("error"));
  CHECK(r["stop_reason"] == "test stop");
  REQUIRE(points->points.size() == 1);
  // The workers stay paused after it: the job's steps are the checkpoint's.
  CHECK(points->points[0].first == r["steps"].get<std::uint64_t>());
  CHECK(points->points[0].first >= 50);
}
