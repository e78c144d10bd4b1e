// A stop from outside the actor system (troupe train's Ctrl-C) ends a job
// through the coordinator's stop path with the given reason: while it runs
// (the workers stop, the job evaluates once more and reports), and when it
// was asked for before the coordinator started (the job stops at once).

#include <atomic>
#include <chrono>
#include <iostream>
#include <thread>

#include <catch2/catch.hpp>

#include "actors/stop_request.hpp"
#include "harness.hpp"

using namespace troupe;
using namespace std::chrono_literals;

TEST_CASE("a stop request ends a running job with its reason") {
  std::cout << "seed 1" << std::endl;
  auto job
      = test::lsq_job(test::lsq_512x20(1), 2, 1, "sgd", 0.01, 16, 10000000, 1);
  auto counter = std::make_shared<std::atomic<std::uint64_t>>(0);
  job.step_counters
      = {counter, std::make_shared<std::atomic<std::uint64_t>>(0)};
  auto stop = std::make_shared<actors::stop_request>();
  job.stop = stop;
  std::thread asker{[&] {
    // Once the job trains.
    for (int i = 0; i < 6000 && counter->load() < 10; ++i)
      std::this_thread::sleep_for(10ms);
    CHECK(stop->request("interrupted (SIGINT)"));
    CHECK_FALSE(stop->request("interrupted (SIGTERM)"));
  }};
  auto out = actors::run_job(std::move(job));
  asker.join();
  INFO(out.dump());
  CHECK(out["stop_reason"] == "interrupted (SIGINT)");
  CHECK(out["steps"].get<std::uint64_t>() >= 10);
  CHECK(out["steps"].get<std::uint64_t>() < 20000000);
  // After the job: recorded, nothing sent.
  CHECK_FALSE(stop->request("late"));
  CHECK(stop->reason() == "interrupted (SIGINT)");
}

TEST_CASE("a stop asked for before the job starts stops it at once") {
  std::cout << "seed 2" << std::endl;
  auto job
      = test::lsq_job(test::lsq_512x20(1), 2, 1, "sgd", 0.01, 16, 10000000, 2);
  auto stop = std::make_shared<actors::stop_request>();
  CHECK(stop->request("interrupted (SIGTERM)"));
  job.stop = stop;
  auto out = actors::run_job(std::move(job));
  INFO(out.dump());
  CHECK(out["stop_reason"] == "interrupted (SIGTERM)");
  CHECK(out["steps"].get<std::uint64_t>() < 1000);
}
