// A stop request reaches a busy cluster: every worker ends within one step
// of the moment the stop was sent, because the coordinator sends it with
// high priority and each step is one message. Also: a diverging worker ends
// the job with a clear error instead of a hang.

#include <atomic>
#include <chrono>
#include <cmath>
#include <iostream>
#include <thread>

#include <caf/all.hpp>
#include <catch2/catch.hpp>

#include "algos/registry.hpp"
#include "algos/sgp/sgp.hpp"
#include "harness.hpp"
#include "optim/replica_wrapper.hpp"

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

/// A replica whose loss stays finite while its gradient turns non-finite
/// from step `from` on: the shards reject every push, nothing else notices.
class nan_gradient_replica : public optim::replica_wrapper {
public:
  nan_gradient_replica(std::unique_ptr<optim::replica> inner,
                       std::uint64_t from)
      : replica_wrapper(std::move(inner)), from_(from) {}
  optim::step_result compute() override {
    auto r = inner_->compute();
    if (++steps_ >= from_)
      inner_->grads()[steps_ % size()] = std::nanf("");
    return r;
  }

private:
  std::uint64_t from_, steps_ = 0;
};

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
  // The coordinator on a thread of its own: on the two scheduler threads it
  // would queue behind the busy workers (each step blocks its thread for
  // 20 ms), and under a sanitizer on a loaded machine that wait, not the
  // stop's priority, decided how many steps went by before the stop left.
  auto coord = sys.spawn<caf::detached>(actors::coordinator, std::move(job));
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

TEST_CASE("a run of rejected non-finite pushes is divergence: the job ends "
          "with an error naming the worker, not 'steps done'") {
  // Worker 1's gradient turns NaN at its step 20 while its loss stays
  // finite; with 100000 steps to go the job used to run them all (every
  // push rejected, one log line each) and report success.
  auto job = test::lsq_job(problem(), 2, 2, "sgd", 0.01, 16, 100000, 1);
  auto make = job.make_replica;
  job.make_replica
      = [make](messages::worker_id w) -> std::unique_ptr<optim::replica> {
    if (w != 1)
      return make(w);
    return std::make_unique<nan_gradient_replica>(make(w), 20);
  };
  auto out = actors::run_job(std::move(job));
  INFO(out.dump().substr(0, 3000));
  REQUIRE(out.contains("error"));
  auto error = out["error"].get<std::string>();
  CHECK(error.find("worker 1: ") == 0);
  CHECK(error.find("diverged") != std::string::npos);
  CHECK(out["stop_reason"] == "worker failed");
  // It gave up after divergence_steps (8) rejected steps, long before the
  // budget.
  std::uint64_t rejected = 0;
  for (auto& r : out["rejected_pushes"])
    rejected += r["count"].get<std::uint64_t>();
  CHECK(rejected <= 2 * 8);
  CHECK(out["steps"].get<std::uint64_t>() < 100000);
  CHECK(out["steps_planned"].get<std::uint64_t>()
        == out["steps_done"].get<std::uint64_t>()
               + out["steps_lost"].get<std::uint64_t>());
}

TEST_CASE("no evaluation behind them: test accuracy and loss are null, "
          "not 0") {
  // SGP whose only worker diverges at once: the final evaluation has no
  // model to average.
  auto job = test::lsq_job(problem(), 1, 0, "sgd", 1, 16, 1000, 1);
  auto sgp = test::install<algos::sgp>(job);
  sgp->local.optimizer = {"sgd", 0, 0};
  sgp->local.lr = 1e30; // the loss is non-finite by the second step
  job.evaluate = [](const float*, std::size_t) {
    optim::evaluation e;
    e.accuracy = 0.5;
    e.loss = 1;
    return e;
  };
  auto out = actors::run_job(std::move(job));
  INFO(out.dump().substr(0, 3000));
  REQUIRE(out.contains("error"));
  CHECK(out["test_accuracy"].is_null());
  CHECK(out["test_loss"].is_null());
}
