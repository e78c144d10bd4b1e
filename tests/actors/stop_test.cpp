// A stop request reaches a busy cluster: every worker ends within one step
// of the moment the stop was sent, because the coordinator sends it with
// high priority and each step is one message. Also: a diverging worker ends
// the job with a clear error instead of a hang.

#include <atomic>
#include <chrono>
#include <iostream>
#include <thread>

#include <caf/all.hpp>
#include <catch2/catch.hpp>

#include "harness.hpp"

using namespace troupe;
using namespace std::chrono_literals;

namespace {

struct config : caf::actor_system_config {
  config() {
    messages::register_types(*this);
    set("scheduler.max-threads", 2);
    set("scheduler.policy", caf::atom("sharing")); // as actors::run_job
  }
};

std::shared_ptr<const optim::lsq_problem> problem() {
  optim::lsq_options o;
  o.m = 256;
  o.d = 8;
  return std::make_shared<const optim::lsq_problem>(optim::make_lsq(o));
}

} // namespace

TEST_CASE("stop reaches a busy cluster within one step of each worker") {
  // Scheduled workers that fetch every step, and detached workers that
  // fetch every 4th step (they keep computing without waiting).
  const bool detached = GENERATE(false, true);
  std::cout << (detached ? "detached workers, n_fetch 4"
                         : "scheduled workers, n_fetch 1")
            << std::endl;
  const std::uint32_t workers = 4;
  auto job = test::lsq_job(problem(), workers, 2, "sgd", 0.01, 16, 1000000, 1);
  job.detached_workers = detached;
  job.policy.n_fetch = detached ? 4 : 1;
  for (std::uint32_t w = 0; w < workers; ++w) {
    job.step_counters.push_back(
        std::make_shared<std::atomic<std::uint64_t>>(0));
    job.step_delays.push_back(std::chrono::microseconds{20000}); // busy
  }
  auto counters = job.step_counters;
  config cfg;
  caf::actor_system sys{cfg};
  auto coord = sys.spawn(actors::coordinator, std::move(job));
  std::this_thread::sleep_for(300ms);
  caf::scoped_actor self{sys};
  std::vector<std::uint64_t> at_stop;
  for (auto& c : counters)
    at_stop.push_back(c->load());
  self->send(coord, messages::stop_atom::value);
  nlohmann::json out;
  self->request(coord, 10s, messages::result_atom::value)
      .receive([&](std::string& text) { out = nlohmann::json::parse(text); },
               [&](caf::error& e) { FAIL("no result: " << sys.render(e)); });
  INFO(out.dump());
  CHECK(out["stop_reason"] == "stop requested");
  auto& ws = out["worker_stats"];
  REQUIRE(ws.size() == workers);
  for (auto& w : ws) {
    auto id = w["worker"].get<std::size_t>();
    std::cout << "worker " << id << ": " << at_stop[id] << " steps at stop, "
              << w["steps"] << " at the end" << std::endl;
    CHECK(at_stop[id] > 0); // it was busy
    CHECK(w["steps"].get<std::uint64_t>() <= at_stop[id] + 1);
  }
}

TEST_CASE("a diverging worker ends the job with an error naming it") {
  auto job = test::lsq_job(problem(), 2, 1, "sgd", 50.0, 16, 100000, 1);
  auto out = actors::run_job(std::move(job));
  INFO(out.dump());
  REQUIRE(out.contains("error"));
  auto error = out["error"].get<std::string>();
  CHECK(error.find("worker ") == 0);
  CHECK(error.find("diverged") != std::string::npos);
  CHECK(out["stop_reason"] == "worker failed");
}

TEST_CASE("a job that cannot be built is refused with its reason") {
  auto job = test::lsq_job(problem(), 2, 1, "lbfgs", 0.1, 16, 10, 1);
  auto out = actors::run_job(std::move(job));
  INFO(out.dump());
  REQUIRE(out.contains("error"));
  CHECK_THAT(out["error"].get<std::string>(), Catch::Contains("lbfgs"));
  CHECK(out["steps"] == 0);
}
