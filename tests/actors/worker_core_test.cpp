// The worker's core and its policy's handlers: a policy contributes the
// handlers of its algorithm's own messages (here a user-defined one), a
// message that neither handles is reported (an error to a requester, a
// warning, the probe's count) and the worker goes on; LSGD's messages are
// handled by the LSGD policy only.

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include <caf/all.hpp>
#include <catch2/catch.hpp>

#include "actors/probe.hpp"
#include "actors/roles.hpp"
#include "actors/worker.hpp"
#include "algos/lsgd/lsgd_policy.hpp"
#include "harness.hpp"
#include "test_config.hpp"

using namespace troupe;
using namespace troupe::actors;
using namespace std::chrono_literals;

namespace {

/// A user's own message, handled by the user's own policy.
using twice_atom = caf::atom_constant<caf::atom("twice")>;

using config = test::typed_config<>;

/// A policy without communication whose handler answers (twice, x) with
/// 2 * x + the worker's id.
class twice_policy : public comm_policy {
public:
  void before_compute(worker_context&, std::function<void()> ready) override {
    ready();
  }
  void after_compute(worker_context&, std::uint32_t,
                     std::function<void()> done) override {
    done();
  }
  caf::message_handler handlers(worker_context& ctx) override {
    return {
        [&ctx](twice_atom, std::int32_t x) {
          auto scope = on_message(ctx.probe(), ctx.self(), msg_type::other,
                                  small_message_bytes);
          return 2 * x + static_cast<std::int32_t>(ctx.id());
        },
    };
  }
};

using release_atom = caf::atom_constant<caf::atom("release")>;
using flushed_atom = caf::atom_constant<caf::atom("flushed")>;

/// A policy whose step ends only when (release) arrives; counts the steps.
/// With `hold_quiesce`, a pause's quiesce ends only when (flushed) arrives
/// (a flush to a lost shard waiting out its timeout).
class held_policy : public comm_policy {
public:
  explicit held_policy(std::shared_ptr<std::atomic<int>> steps,
                       bool hold_quiesce = false)
      : steps_(std::move(steps)), hold_quiesce_(hold_quiesce) {}
  void quiesce(worker_context&, std::function<void()> done) override {
    if (hold_quiesce_)
      quiesced_ = std::move(done);
    else
      done();
  }
  void before_compute(worker_context&, std::function<void()> ready) override {
    ready();
  }
  void after_compute(worker_context&, std::uint32_t,
                     std::function<void()> done) override {
    ++*steps_;
    if (held_++ == 0) {
      done_ = std::move(done); // the first step waits for (release)
      return;
    }
    done();
  }
  caf::message_handler handlers(worker_context&) override {
    return {[this](release_atom) {
              if (done_)
                std::exchange(done_, nullptr)();
            },
            [this](flushed_atom) {
              if (quiesced_)
                std::exchange(quiesced_, nullptr)();
            }};
  }

private:
  std::shared_ptr<std::atomic<int>> steps_;
  bool hold_quiesce_;
  int held_ = 0;
  std::function<void()> done_, quiesced_;
};

/// Waits (at most 5 s) until `done()`.
template <class F>
void wait_until(F done) {
  for (int i = 0; i < 500 && !done(); ++i)
    std::this_thread::sleep_for(10ms);
}

/// Worker `id` of an LSQ job (seed printed by the caller), with `policy`.
worker_config
worker_with(std::uint32_t id, std::uint64_t seed,
            std::function<std::unique_ptr<comm_policy>(std::size_t)> policy) {
  auto p = test::lsq_512x20(seed);
  auto job = test::lsq_job(p, 4, 0, "sgd", 0.05, 16, 5, seed);
  worker_config wc;
  wc.id = id;
  wc.make_replica = [f = job.make_replica, id] { return f(id); };
  wc.make_policy = std::move(policy);
  wc.max_steps = 5;
  wc.linger = true;
  return wc;
}

/// The probe snapshot of the worker named `name` (throws if none).
messages::actor_metrics probe_of(const std::string& name) {
  messages::actor_metrics out;
  bool found = false;
  for (auto& a : snapshot_probes())
    if (a.name == name) {
      out = a;
      found = true;
    }
  REQUIRE(found);
  return out;
}

double gauge_of(const messages::actor_metrics& a, const std::string& name) {
  for (auto& g : a.gauges)
    if (g.name == name)
      return g.value.value;
  return -1;
}

/// A worker of held_policy, started and held inside its first step.
caf::actor start_held(caf::actor_system& sys, caf::scoped_actor& self,
                      std::uint64_t seed,
                      const std::shared_ptr<std::atomic<int>>& steps,
                      bool hold_quiesce) {
  auto w
      = sys.spawn(worker, worker_with(0, seed, [=](std::size_t) {
                    return std::make_unique<held_policy>(steps, hold_quiesce);
                  }));
  self->send(w, messages::start_atom::value, std::uint64_t{0});
  wait_until([&] { return *steps > 0; });
  REQUIRE(*steps == 1); // inside its first step, held
  return w;
}

} // namespace

TEST_CASE("a policy's own handler answers a user-defined message; a message "
          "nobody handles is reported and the worker goes on",
          "[actors][worker]") {
  const std::uint64_t seed = 11;
  INFO("seed " << seed);
  config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  auto w = sys.spawn(worker, worker_with(3, seed, [](std::size_t) {
                       return std::make_unique<twice_policy>();
                     }));
  // The policy's handler: 2 * 20 + 3.
  std::int32_t got = 0;
  self->request(w, 10s, twice_atom::value, std::int32_t{20})
      .receive([&](std::int32_t x) { got = x; },
               [&](caf::error& e) { FAIL(sys.render(e)); });
  CHECK(got == 43);
  // Nobody handles a string: a request gets an error naming the worker and
  // the message; a plain send is counted too.
  self->send(w, std::string{"lost"});
  caf::error err;
  self->request(w, 10s, std::string{"hello"})
      .receive([&](caf::message&) { FAIL("answered an unhandled message"); },
               [&](caf::error& e) { err = e; });
  CHECK(err == caf::sec::unexpected_message);
  auto text = sys.render(err);
  INFO(text);
  CHECK_THAT(text, Catch::Contains("worker 3 has no handler for"));
  CHECK_THAT(text, Catch::Contains("hello"));
  // The worker is alive and its core still answers (the typed handle).
  auto core = caf::actor_cast<worker_actor>(w);
  std::size_t values = 0;
  self->request(core, 10s, messages::fetch_msg{0, 0, 20, 0})
      .receive([&](messages::params_msg& p) { values = p.values.size(); },
               [&](caf::error& e) { FAIL(sys.render(e)); });
  CHECK(values == 20);
  auto m = probe_of("worker 3");
  CHECK(gauge_of(m, "unexpected") == 2);
  CHECK(m.errors == 2);
  std::uint64_t other = 0;
  for (auto& t : m.received)
    if (t.type == "other")
      other = t.count;
  CHECK(other == 3); // the user's message and the two unexpected ones
  self->send_exit(w, caf::exit_reason::user_shutdown);
}

TEST_CASE("LSGD's messages are the LSGD policy's: answered by an LSGD worker, "
          "unexpected at another",
          "[actors][worker]") {
  const std::uint64_t seed = 12;
  INFO("seed " << seed);
  config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  optim::optimizer_options sgd{"sgd", 0, 0};
  auto lsgd = sys.spawn(worker, worker_with(1, seed, [sgd](std::size_t n) {
                          return algos::make_lsgd_policy(sgd, 0.05, n, {}, 4);
                        }));
  auto local = sys.spawn(worker, worker_with(2, seed, [sgd](std::size_t n) {
                           return make_local_policy(sgd, 0.05, n);
                         }));
  // Run both workers' five steps, then ask for the score through LSGD's view.
  for (auto& w : {lsgd, local})
    self->send(caf::actor_cast<worker_actor>(w), messages::start_atom::value,
               std::uint64_t{0});
  auto steps_of = [&](const caf::actor& w) {
    std::uint64_t steps = 0;
    self->request(caf::actor_cast<worker_actor>(w), 10s,
                  messages::fetch_msg{0, 0, 1, 0})
        .receive([&](messages::params_msg& p) { steps = p.version; },
                 [&](caf::error& e) { FAIL(sys.render(e)); });
    return steps;
  };
  auto deadline = std::chrono::steady_clock::now() + 30s;
  while (steps_of(lsgd) < 5 || steps_of(local) < 5)
    REQUIRE(std::chrono::steady_clock::now() < deadline);
  messages::score_msg score;
  self->request(caf::actor_cast<algos::lsgd_member_actor>(lsgd), 10s,
                messages::score_atom::value)
      .receive([&](messages::score_msg& s) { score = s; },
               [&](caf::error& e) { FAIL(sys.render(e)); });
  CHECK(score.worker == 1);
  CHECK(score.steps == 5);
  CHECK(std::isfinite(score.score.value));
  caf::error err;
  self->request(caf::actor_cast<algos::lsgd_member_actor>(local), 10s,
                messages::score_atom::value)
      .receive([&](messages::score_msg&) { FAIL("a local worker scored"); },
               [&](caf::error& e) { err = e; });
  CHECK(err == caf::sec::unexpected_message);
  CHECK_THAT(sys.render(err), Catch::Contains("worker 2 has no handler"));
  CHECK(gauge_of(probe_of("worker 2"), "unexpected") == 1);
  for (auto& w : {lsgd, local})
    self->send_exit(w, caf::exit_reason::user_shutdown);
}

// A checkpoint the coordinator gave up (its pause request timed out while
// the worker was inside a long step) resumes the workers: a worker that had
// not reached its step boundary yet must not pause there, with nobody left
// to resume it.
TEST_CASE("a resume before the worker reached its pause cancels the pause",
          "[actors][worker]") {
  const std::uint64_t seed = 5;
  INFO("seed " << seed);
  config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  auto steps = std::make_shared<std::atomic<int>>(0);
  auto w = start_held(sys, self, seed, steps, false);
  // The pause waits for the step's end: the request times out.
  bool answered = false;
  self->request(w, caf::duration{200ms}, messages::pause_atom::value)
      .receive([&](std::string&) { answered = true; }, [](caf::error&) {});
  CHECK_FALSE(answered);
  self->send(w, messages::resume_atom::value);
  self->send(w, release_atom::value);
  // It goes on to its last step instead of pausing after the first.
  wait_until([&] { return *steps >= 5; });
  CHECK(*steps == 5);
  self->send_exit(w, caf::exit_reason::user_shutdown);
}

TEST_CASE("a resume while the pause's quiesce is under way ends the pause for "
          "good",
          "[actors][worker]") {
  // The coordinator's pause request timed out while the worker's policy
  // waited for its flush (a lost shard's): the resume must not leave the
  // pause pending, or the next step pauses again with nobody to resume it
  // (a checkpoint given up at a shard's loss stalled a job so).
  const std::uint64_t seed = 6;
  INFO("seed " << seed);
  config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  auto steps = std::make_shared<std::atomic<int>>(0);
  auto w = start_held(sys, self, seed, steps, true);
  // The pause, then the step's end: the worker pauses at the boundary and
  // its quiesce waits for (flushed), so the request times out.
  bool answered = false;
  auto pause
      = self->request(w, caf::duration{300ms}, messages::pause_atom::value);
  self->send(w, release_atom::value);
  pause.receive([&](std::string&) { answered = true; }, [](caf::error&) {});
  CHECK_FALSE(answered);
  CHECK(*steps == 1);
  self->send(w, messages::resume_atom::value);
  // It goes on to its last step; the late end of the quiesce answers
  // nothing and pauses nothing.
  wait_until([&] { return *steps >= 5; });
  CHECK(*steps == 5);
  self->send(w, flushed_atom::value);
  bool idle = false;
  self->request(w, 10s, messages::pause_atom::value)
      .receive([&](std::string&) { FAIL("a finished worker paused"); },
               [&](caf::error& e) {
                 idle = sys.render(e).find("finished") != std::string::npos;
                 INFO(sys.render(e));
               });
  CHECK(idle);
  self->send_exit(w, caf::exit_reason::user_shutdown);
}
