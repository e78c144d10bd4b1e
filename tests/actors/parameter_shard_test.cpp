// The parameter_shard actor on its own: duplicates dropped, malformed and
// non-finite pushes rejected with the parameters untouched and the sender
// named in the statistics, AdaGrad bookkeeping (algorithms.md §1 T2) through
// the actor, the SSP fetch gate (§11) and synchronous aggregation (§12).

#include <chrono>
#include <cmath>
#include <limits>

#include <caf/all.hpp>
#include <catch2/catch.hpp>

#include "actors/parameter_shard.hpp"
#include "messages/registry.hpp"
#include "optim/compress.hpp"
#include "test_config.hpp"
#include "tolerances.hpp"

using namespace troupe;
using namespace troupe::messages;
using namespace std::chrono_literals;

namespace {

using config = test::typed_config<>;

struct fixture {
  config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};

  actors::parameter_shard_actor
  shard(std::string opt, double lr, actors::shard_mode mode,
        std::optional<std::uint64_t> bound = std::nullopt,
        bool catch_up = false) {
    actors::parameter_shard_config c;
    c.catch_up = catch_up;
    c.range = {2, 4}; // coordinates [2, 6) of a vector of 8
    c.init = std::make_shared<const std::vector<float>>(
        std::vector<float>{0, 0, 1, 2, 3, 4, 0, 0});
    c.store.optimizer.name = std::move(opt);
    c.store.lr = lr;
    c.mode = mode;
    c.staleness_bound = bound;
    return sys.spawn(actors::parameter_shard, c);
  }

  push_msg push(worker_id w, std::uint64_t seq, std::vector<float> g,
                std::uint64_t offset = 2, std::uint64_t clock = 0) {
    push_msg p;
    p.worker = w;
    p.seq = seq;
    p.offset = offset;
    p.clock = clock;
    p.samples = 1;
    p.values = tensor{std::move(g)};
    return p;
  }

  /// Worker w's push for sync round r (its r-th, on the parameters of
  /// round r - 1).
  push_msg round_push(worker_id w, std::uint64_t r, std::vector<float> g) {
    auto p = push(w, r, std::move(g), 2, r);
    p.version = r - 1;
    return p;
  }

  /// Fetches with a timeout; nullopt if no answer within `wait`.
  std::optional<params_msg> fetch(const actors::parameter_shard_actor& s,
                                  worker_id w, std::uint64_t clock,
                                  caf::duration wait = caf::duration{5s}) {
    std::optional<params_msg> out;
    self->request(s, wait, fetch_msg{w, 2, 4, clock})
        .receive([&](params_msg& p) { out = std::move(p); },
                 [&](caf::error&) {});
    return out;
  }

  shard_stats stats(const actors::parameter_shard_actor& s) {
    shard_stats out;
    self->request(s, 5s, stats_atom::value)
        .receive([&](shard_stats& x) { out = std::move(x); },
                 [&](caf::error& e) { FAIL(sys.render(e)); });
    return out;
  }
};

} // namespace

TEST_CASE_METHOD(fixture, "a duplicate push is dropped") {
  auto s = shard("sgd", 0.5, actors::shard_mode::async);
  self->send(s, push(3, 1, {1, 1, 1, 1}));
  self->send(s, push(3, 1, {1, 1, 1, 1})); // retransmission
  auto p = fetch(s, 3, 0);
  REQUIRE(p);
  CHECK(p->version == 1);
  CHECK(p->values.values() == std::vector<float>{0.5f, 1.5f, 2.5f, 3.5f});
  auto st = stats(s);
  REQUIRE(st.workers.size() == 1);
  CHECK(st.workers[0].applied == 1);
  CHECK(st.workers[0].duplicates == 1);
}

TEST_CASE_METHOD(fixture, "NaN, inf and bad ranges are rejected and named") {
  auto s = shard("adagrad", 0.1, actors::shard_mode::async);
  auto before = fetch(s, 1, 0);
  REQUIRE(before);
  auto nan = std::numeric_limits<float>::quiet_NaN();
  auto inf = std::numeric_limits<float>::infinity();
  self->send(s, push(5, 1, {1, nan, 1, 1}));
  self->send(s, push(5, 2, {1, 1, -inf, 1}));
  self->send(s, push(6, 1, {1, 1, 1}));       // wrong size
  self->send(s, push(6, 2, {1, 1, 1, 1}, 0)); // wrong offset
  auto after = fetch(s, 1, 0);
  REQUIRE(after);
  CHECK(after->version == 0);
  CHECK(after->values == before->values); // bit for bit
  auto st = stats(s);
  REQUIRE(st.workers.size() == 2);
  CHECK(st.workers[0].worker == 5);
  CHECK(st.workers[0].non_finite == 2);
  CHECK(st.workers[1].worker == 6);
  CHECK(st.workers[1].bad_range == 2);
}

TEST_CASE_METHOD(fixture, "a compressed push applies as the gradient it "
                          "decodes to; a garbled one is rejected and named") {
  auto s = shard("sgd", 0.5, actors::shard_mode::async);
  optim::compress_options o;
  o.method = optim::codec::topk;
  o.density_fc = 0.5;
  optim::compressor c{o, {{0, 4, optim::layer_kind::fc}}};
  std::vector<float> g{4, -1, 0.5f, -8};
  compressed_push_msg m{3, 1, 0, 2, 0, 1, 4, c.compress(g.data(), 4)};
  auto garbled = m;
  garbled.seq = 2;
  garbled.packed.resize(garbled.packed.size() - 3); // truncated on the way
  auto wrong_size = m;
  wrong_size.seq = 3;
  wrong_size.size = 5;
  self->send(s, m);
  self->send(s, garbled);
  self->send(s, wrong_size);
  auto p = fetch(s, 3, 0);
  REQUIRE(p);
  CHECK(p->version == 1);
  // Top-2 of the 4 entries (4 and -8) at rate 0.5 on {1, 2, 3, 4}.
  CHECK(p->values.values() == std::vector<float>{-1.0f, 2.0f, 3.0f, 8.0f});
  auto st = stats(s);
  REQUIRE(st.workers.size() == 1);
  CHECK(st.workers[0].applied == 1);
  CHECK(st.workers[0].bad_range == 2);
}

TEST_CASE_METHOD(fixture, "T2: AdaGrad through the actor, sum of squares") {
  auto s = shard("adagrad", 0.1, actors::shard_mode::async);
  std::vector<std::vector<float>> grads{
      {1, -2, 0.5f, 0}, {0.25f, 1, -1, 3}, {-1, 0.5f, 2, 1}};
  std::vector<double> w{1, 2, 3, 4}, acc(4, 0.0);
  std::uint64_t seq = 0;
  for (auto& g : grads) {
    self->send(s, push(0, ++seq, g));
    for (std::size_t i = 0; i < 4; ++i) {
      acc[i] += double{g[i]} * g[i];
      w[i] -= 0.1 * g[i] / (std::sqrt(acc[i]) + 1e-8);
    }
  }
  auto p = fetch(s, 0, 0);
  REQUIRE(p);
  CHECK(p->version == 3);
  for (std::size_t i = 0; i < 4; ++i)
    CHECK(p->values[i] == Approx(w[i]).epsilon(test::float_step_rel));
}

TEST_CASE_METHOD(fixture, "SSP: a fetch waits until the slowest is within s") {
  auto s = shard("sgd", 0.1, actors::shard_mode::async, 1);
  self->send(s, track_atom::value, worker_id{0}, std::uint64_t{0});
  self->send(s, track_atom::value, worker_id{1}, std::uint64_t{0});
  // Worker 0 at clock 1 may go on (1 - 0 <= 1); at clock 2 it must wait.
  CHECK(fetch(s, 0, 1));
  CHECK_FALSE(fetch(s, 0, 2, caf::duration{200ms}));
  // Worker 1 reaching clock 1 releases it.
  CHECK(fetch(s, 1, 1));
  CHECK(fetch(s, 0, 2));
  // An untracked (finished or lost) worker no longer holds anyone back.
  self->send(s, untrack_atom::value, worker_id{1});
  CHECK(fetch(s, 0, 5));
  CHECK(stats(s).max_clock_gap == 1);
}

TEST_CASE_METHOD(fixture, "sync: one step from the weighted mean of a clock") {
  auto s = shard("sgd", 1.0, actors::shard_mode::sync);
  self->send(s, track_atom::value, worker_id{0}, std::uint64_t{0});
  self->send(s, track_atom::value, worker_id{1}, std::uint64_t{0});
  auto p0 = push(0, 1, {4, 0, 0, 0}, 2, 1);
  p0.samples = 1;
  auto p1 = push(1, 1, {0, 4, 0, 0}, 2, 1);
  p1.samples = 3;
  self->send(s, p0);
  // Step 1 is not applied until worker 1 has pushed: the fetch waits.
  CHECK_FALSE(fetch(s, 0, 1, caf::duration{200ms}));
  self->send(s, p1);
  auto p = fetch(s, 0, 1);
  REQUIRE(p);
  CHECK(p->version == 1);
  // mean = (1 * [4,0,0,0] + 3 * [0,4,0,0]) / 4 = [1, 3, 0, 0]
  CHECK(p->values.values() == std::vector<float>{0, -1, 3, 4});
  // A NaN push contributes nothing; the step still completes.
  auto bad
      = push(1, 2, {std::numeric_limits<float>::quiet_NaN(), 0, 0, 0}, 2, 2);
  self->send(s, push(0, 2, {1, 1, 1, 1}, 2, 2));
  self->send(s, bad);
  p = fetch(s, 0, 2);
  REQUIRE(p);
  CHECK(p->values.values() == std::vector<float>{-1, -2, 2, 3});
  CHECK(stats(s).workers[1].non_finite == 1);
}

// A sync shard restored from a checkpoint into a running job (its node was
// lost): the job is at a later round than its checkpoint's. The workers
// send it their last push again; it moves to that round, and a round some
// workers had gone past when it was lost is dropped for the later one.
TEST_CASE_METHOD(fixture, "sync: a restored shard catches up with the job") {
  auto s = shard("sgd", 1.0, actors::shard_mode::sync, std::nullopt, true);
  for (worker_id w : {0u, 1u})
    self->send(s, track_atom::value, w, std::uint64_t{0});
  SECTION("every worker was in the same round") {
    // Both workers' round-3 pushes (they fetched at round 2).
    auto p0 = round_push(0, 3, {2, 0, 0, 0});
    self->send(s, p0);
    // Round 3 waits for worker 1; its fetch of round 2 is answered at once.
    auto f = fetch(s, 1, 2);
    REQUIRE(f);
    CHECK(f->version == 2);
    CHECK_FALSE(fetch(s, 0, 3, caf::duration{200ms}));
    auto p1 = round_push(1, 3, {0, 2, 0, 0});
    self->send(s, p1);
    f = fetch(s, 0, 3);
    REQUIRE(f);
    CHECK(f->version == 3);
    CHECK(f->values.values() == std::vector<float>{0, 1, 3, 4});
  }
  SECTION("a worker had gone one round further") {
    // Worker 1 was in round 4 already (its round-3 push was applied by the
    // lost shard); worker 0's round-3 push comes first.
    auto p0 = round_push(0, 3, {2, 0, 0, 0});
    self->send(s, p0);
    auto p1 = round_push(1, 4, {0, 2, 0, 0});
    self->send(s, p1);
    // Round 3 is skipped here: worker 0's fetch of it is answered at once,
    // with the parameters unchanged.
    auto f = fetch(s, 0, 3);
    REQUIRE(f);
    CHECK(f->version == 3);
    CHECK(f->values.values() == std::vector<float>{1, 2, 3, 4});
    // Worker 0's round-4 push completes round 4 with worker 1's.
    auto q0 = round_push(0, 4, {2, 0, 0, 0});
    self->send(s, q0);
    f = fetch(s, 1, 4);
    REQUIRE(f);
    CHECK(f->version == 4);
    CHECK(f->values.values() == std::vector<float>{0, 1, 3, 4});
    // Worker 0's round-3 push sent again (a late copy) is a duplicate.
    self->send(s, p0);
    auto st = stats(s);
    REQUIRE(st.workers.size() == 2);
    CHECK(st.workers[0].applied == 1);
    CHECK(st.workers[1].applied == 1);
    CHECK(st.workers[0].duplicates == 1);
    CHECK(st.version == 4);
  }
}

// Without catch_up (a shard of a running job) a push for a later round
// than the next does not move it: the round waits.
TEST_CASE_METHOD(fixture, "sync: a shard of a running job does not skip") {
  auto s = shard("sgd", 1.0, actors::shard_mode::sync);
  self->send(s, track_atom::value, worker_id{0}, std::uint64_t{0});
  auto p0 = push(0, 1, {2, 0, 0, 0}, 2, 3);
  self->send(s, p0);
  CHECK_FALSE(fetch(s, 0, 2, caf::duration{200ms}));
  CHECK(stats(s).version == 0);
  // Its held fetch's promise keeps it alive: stopped, as a job stops it.
  self->send_exit(s, caf::exit_reason::user_shutdown);
}
