// All-reduce SGD's ring (algos/allreduce/ring.hpp over optim::ring_plan)
// and one worker of it among test actors: each message passes on the chunk
// the one before it brought; a worker takes only its predecessor's next
// chunk (a stranger's, its successor's, a stale or an out-of-order one is
// refused and the worker goes on), a garbled or non-finite chunk from its
// predecessor ends it with an error naming the chunk, and so does a lost
// predecessor.

#include <chrono>
#include <cmath>
#include <iostream>
#include <limits>
#include <optional>
#include <set>

#include <caf/all.hpp>
#include <catch2/catch.hpp>

#include "actors/worker.hpp"
#include "algos/allreduce/allreduce_policy.hpp"
#include "algos/allreduce/ring.hpp"
#include "harness.hpp"
#include "test_config.hpp"

using namespace troupe;
using namespace troupe::messages;
using namespace std::chrono_literals;

TEST_CASE("on the ring, each message passes on the chunk the message "
          "before it brought") {
  // A worker sends its message k + 1 once it took its predecessor's
  // message k; the chunk it sends must be the one that came.
  for (std::size_t w = 2; w <= 7; ++w) {
    INFO("W = " << w);
    optim::ring_plan plan{w, 101};
    for (std::size_t r = 0; r < w; ++r)
      for (std::size_t k = 0; k + 1 < plan.steps(); ++k) {
        CHECK(plan.at(r, k + 1).send_chunk == plan.at(r, k).recv_chunk);
        CHECK(plan.at(r, k).recv_chunk == plan.at(plan.left(r), k).send_chunk);
      }
    CHECK(algos::ring_position(plan, 0) == "reduce-scatter hop 0");
    CHECK(algos::ring_position(plan, w - 1) == "all-gather hop 0");
    CHECK(algos::ring_hop_of(plan, plan.steps() - 1) == w - 2);
  }
}

namespace {

/// The chunk worker 1 of 3 (d = 20: chunks of 7, 7, 6) takes as message k
/// of step 0 from worker 0, each value `v`.
ring_chunk_msg chunk_for(std::size_t k, float v = 1.0f) {
  optim::ring_plan plan{3, 20};
  auto c = plan.at(1, k).recv_chunk;
  return {0,
          0,
          static_cast<std::uint8_t>(algos::ring_phase_of(plan, k)),
          algos::ring_hop_of(plan, k),
          static_cast<std::uint32_t>(c),
          16 * (k < 2 ? k + 1 : 3),
          tensor{std::vector<float>(plan.chunk(c).size, v)}};
}

/// Waits at most `ms` for a ring chunk at `self`.
std::optional<ring_chunk_msg> next_chunk(caf::scoped_actor& self, int ms) {
  std::optional<ring_chunk_msg> got;
  self->receive([&](ring_chunk_msg& m) { got = std::move(m); },
                caf::after(std::chrono::milliseconds(ms)) >> [] {});
  return got;
}

/// The error the worker reports to `boss` when it fails (progress first).
std::string failure(caf::scoped_actor& boss) {
  std::string error;
  bool waiting = true;
  while (waiting && error.empty())
    boss->receive([](progress_msg&) {},
                  [&](done_atom, worker_stats& s) {
                    error = s.error.empty() ? "(done without error)" : s.error;
                  },
                  caf::after(10s) >> [&] { waiting = false; });
  return error;
}

} // namespace

TEST_CASE("a ring worker takes only its predecessor's next chunk; a garbled "
          "one or a lost predecessor ends it with an error") {
  const std::uint64_t seed = 109;
  std::cout << "allreduce ring worker: seed " << seed << std::endl;
  test::typed_config<> cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor boss{sys}, pred{sys}, succ{sys}, stranger{sys};
  auto prob = test::lsq_512x20(seed);
  auto job = test::lsq_job(prob, 3, 0, "sgd", 0.1, 16, 2, seed);
  actors::worker_config wc;
  wc.id = 1;
  wc.make_replica = [f = job.make_replica] { return f(1); };
  actors::peer_policy_options opts;
  opts.workers = 3;
  opts.neighbours = {0, 2};
  opts.optimizer = {"sgd", 0, 0};
  opts.lr = 0.1;
  wc.make_policy = [opts](std::size_t n) {
    return algos::make_allreduce_policy(opts, {}, n, 1);
  };
  wc.coordinator = caf::actor_cast<actors::coordinator_actor>(boss);
  wc.max_steps = 2;
  wc.linger = true;
  wc.request_timeout = caf::duration{30s};
  auto worker = sys.spawn(actors::worker, wc);
  boss->send(worker, peers_atom::value,
             peer_list_msg{{0, 2}, {pred, succ}, {}});
  boss->send(worker, start_atom::value, std::uint64_t{0});
  // Its own chunk 1 goes to its successor first.
  auto first = next_chunk(succ, 5000);
  REQUIRE(first);
  CHECK(first->sender == 1);
  CHECK(first->step == 0);
  CHECK(first->phase == 0);
  CHECK(first->hop == 0);
  CHECK(first->chunk == 1);
  CHECK(first->values.size() == 7);
  CHECK(first->samples == 16);

  SECTION("strangers, stale and out-of-order chunks are refused; the "
          "predecessor's next ones are taken and the step completes") {
    stranger->send(worker, chunk_for(0)); // says it is worker 0
    auto from_succ = chunk_for(0);
    from_succ.sender = 2;
    succ->send(worker, from_succ);
    auto stale = chunk_for(0);
    stale.step = 5;
    pred->send(worker, stale);
    pred->send(worker, chunk_for(2)); // ahead of its turn
    CHECK_FALSE(next_chunk(succ, 300));
    // The predecessor's: each taken one is passed on (summed, then whole).
    for (std::uint32_t k = 0; k < 3; ++k) {
      pred->send(worker, chunk_for(k));
      auto out = next_chunk(succ, 5000);
      REQUIRE(out);
      CHECK(out->chunk == chunk_for(k).chunk);
      CHECK(out->hop == (k == 0 ? 1u : k - 1));
      CHECK(out->samples == (k == 0 ? 32u : 48u));
      if (k == 2) // a whole sum, passed on as it came
        CHECK(out->values == chunk_for(k).values);
    }
    pred->send(worker, chunk_for(3));
    // Step 0 is complete: step 1's first chunk.
    auto next = next_chunk(succ, 5000);
    REQUIRE(next);
    CHECK(next->step == 1);
    CHECK(next->hop == 0);
    bool progressed = false;
    boss->receive([&](progress_msg& p) { progressed = p.steps == 1; },
                  caf::after(5s) >> [] {});
    CHECK(progressed);
  }
  SECTION("a chunk of the wrong size ends the worker, naming it") {
    auto m = chunk_for(0);
    m.values = tensor{std::vector<float>(5, 1.0f)};
    pred->send(worker, m);
    auto error = failure(boss);
    CHECK_THAT(error, Catch::Contains("5 values, not one per entry"));
    CHECK_THAT(error, Catch::Contains("ring_chunk_msg(from 0, step 0"));
  }
  SECTION("a non-finite chunk ends the worker, naming it") {
    pred->send(worker, chunk_for(0, std::numeric_limits<float>::quiet_NaN()));
    CHECK_THAT(failure(boss), Catch::Contains("a NaN or infinite value"));
  }
  SECTION("a lost predecessor ends the worker") {
    boss->send(worker, leave_atom::value, worker_id{0});
    CHECK_THAT(failure(boss), Catch::Contains("worker 0 left or died"));
  }
  boss->send_exit(worker, caf::exit_reason::user_shutdown);
}

TEST_CASE("ring chunk checks name what does not fit") {
  optim::ring_plan ring{3, 20};
  auto ok = chunk_for(1);
  CHECK(algos::ring_header_problem(ring, 1, 0, 1, ok).empty());
  CHECK(algos::ring_payload_problem(ring, ok, 1000).empty());
  auto other = ok;
  other.sender = 2;
  CHECK_THAT(algos::ring_header_problem(ring, 1, 0, 1, other),
             Catch::Contains("ring predecessor"));
  CHECK_THAT(algos::ring_header_problem(ring, 1, 1, 1, ok),
             Catch::Contains("not of step 1"));
  CHECK_THAT(algos::ring_header_problem(ring, 1, 0, 2, ok),
             Catch::Contains("all-gather hop 0"));
  other = ok;
  other.chunk = 1;
  CHECK_THAT(algos::ring_header_problem(ring, 1, 0, 1, other),
             Catch::Contains("not chunk"));
  CHECK_THAT(algos::ring_header_problem(ring, 1, 0, 4, ok),
             Catch::Contains("more messages"));
  CHECK_THAT(algos::ring_payload_problem(ring, ok, 10),
             Catch::Contains("more than 10"));
  other = ok;
  other.chunk = 7;
  CHECK_FALSE(algos::ring_payload_problem(ring, other, 1000).empty());
}
