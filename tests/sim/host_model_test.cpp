// The simulator's model of processes on one host (sim/scheduler.hpp,
// compute_options): a node's actor threads, the answering actor's copy of a
// fetch reply into a shared-memory segment, and the page faults of a fresh
// segment. Each costs what it says, and nothing when it is off.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <catch2/catch.hpp>

#include "actors/clock.hpp"
#include "messages/messages.hpp"
#include "messages/registry.hpp"
#include "sim/scheduler.hpp"
#include "sim_system.hpp"

using namespace troupe;
using sim::nanos;

namespace {

using host_system = test::sim_system;

/// Answers a word after `samples` samples of work.
caf::behavior worker(caf::event_based_actor* self, std::uint64_t samples) {
  return {[self, samples](const std::string& w) {
    actors::did_work(self, actors::work_kind::step, samples);
    return w;
  }};
}

/// Answers with `floats` values as a fetch reply, then tells `sink` (on its
/// node) that it did.
caf::behavior server(caf::event_based_actor* self, std::size_t floats,
                     caf::actor sink) {
  return {[self, floats, sink](const std::string&) {
    auto rp = self->make_response_promise();
    messages::params_msg p;
    p.values = messages::tensor{std::vector<float>(floats, 1.0f)};
    rp.deliver(std::move(p));
    self->send(sink, std::string{"answered"});
  }};
}

} // namespace

TEST_CASE("a node's actors wait for one of its threads") {
  auto finish = [](std::uint32_t threads) {
    sim::compute_options c;
    c.sample_seconds = 1e-3; // 100 samples: 0.1 s
    c.node_threads = threads;
    host_system s{2, c};
    s.sched.place_next(1);
    std::vector<caf::actor> ws;
    for (int i = 0; i < 3; ++i)
      ws.push_back(s.sys.spawn(worker, 100));
    s.sched.place_next(0);
    auto times = std::make_shared<std::vector<nanos>>();
    auto& sched = s.sched;
    s.sys.spawn([ws, times, &sched](caf::event_based_actor* self) {
      for (auto& w : ws)
        self->request(w, caf::infinite, std::string{"go"})
            .then([times, &sched](const std::string&) {
              times->push_back(sched.elapsed());
            });
    });
    s.sched.run([times] { return times->size() == 3; });
    REQUIRE(times->size() == 3);
    return *times;
  };
  // As many threads as actors: all three steps at once. Two threads: the
  // third step starts when one of the first two is done.
  auto all = finish(0), two = finish(2);
  for (auto t : all) {
    CHECK(t >= 100'000'000);
    CHECK(t < 100'000'000 + 100'000);
  }
  CHECK(two[0] < 100'000'000 + 100'000);
  CHECK(two[1] < 100'000'000 + 100'000);
  CHECK(two[2] >= 200'000'000);
  CHECK(two[2] < 200'000'000 + 100'000);
}

TEST_CASE("a fetch reply through shared memory: copied by the answering "
          "actor, and a fresh segment's pages cost their faults") {
  // 250,000 floats (1 MB) a reply; 8 Gb/s: a full copy pass takes 1 ms,
  // and through shared memory a side costs half (shm_share 0.5).
  const std::size_t floats = 250'000;
  struct outcome {
    std::vector<nanos> answered; // the server's handler over
    std::uint64_t serialize_ns;
  };
  auto serve = [floats](bool in_handler, double touch_gbps, int replies) {
    sim::compute_options c;
    c.serialize_gbps = 8;
    c.shared_memory = true;
    c.reply_copy_in_handler = in_handler;
    c.first_touch_gbps = touch_gbps;
    c.shm_segment_bytes = 2'500'000; // two replies and a half
    host_system s{3, c};
    auto answered = std::make_shared<std::vector<nanos>>();
    auto got = std::make_shared<int>(0);
    auto& sched = s.sched;
    s.sched.place_next(2); // the server's node: no broker between them
    auto sink = s.sys.spawn([answered, &sched](caf::event_based_actor*) {
      return caf::behavior{[answered, &sched](const std::string&) {
        answered->push_back(sched.elapsed());
      }};
    });
    s.sched.place_next(2);
    auto srv = s.sys.spawn(server, floats, sink);
    s.sched.place_next(1);
    s.sys.spawn([srv, got, replies](caf::event_based_actor* self) {
      for (int i = 0; i < replies; ++i)
        self->request(srv, caf::infinite, std::string{"fetch"})
            .then([got](const messages::params_msg&) { ++*got; });
    });
    s.sched.run([got, replies] { return *got == replies; });
    REQUIRE(*got == replies);
    return outcome{*answered, s.sched.stats().serialize_ns};
  };
  const double side = 0.5 * 1e6 * 8 / 8e9 * 1e9; // ns: half a 1 MB pass
  // The broker copies: the server's handler is over at once.
  auto broker = serve(false, 0, 1);
  REQUIRE(broker.answered.size() == 1);
  CHECK(broker.answered[0] < 10'000); // the request's few us
  // The server copies: its handler takes the copy's 0.5 ms, and what it
  // sends after the reply leaves after it.
  auto handler = serve(true, 0, 1);
  CHECK(handler.serialize_ns == broker.serialize_ns);
  auto later = handler.answered[0] - broker.answered[0];
  CHECK(later >= static_cast<nanos>(side));
  CHECK(later < static_cast<nanos>(side) + 1000); // and its header
  // Fresh pages at 16 Gb/s: 0.5 ms a MB on top, for the first 2.5 MB into
  // the segment: replies 1 and 2 whole, reply 3 half, reply 4 none.
  auto plain = serve(true, 0, 4), touched = serve(true, 16, 4);
  auto extra = static_cast<double>(touched.serialize_ns - plain.serialize_ns);
  CHECK(extra == Approx(2.5 * 0.5e6).epsilon(1e-4));
  REQUIRE(touched.answered.size() == 4);
  REQUIRE(plain.answered.size() == 4);
  // The fourth reply cost the server no more than without faults.
  CHECK(touched.answered[3] - touched.answered[2]
        == plain.answered[3] - plain.answered[2]);
  CHECK(touched.answered[1] - touched.answered[0]
        > plain.answered[1] - plain.answered[0]);
}
