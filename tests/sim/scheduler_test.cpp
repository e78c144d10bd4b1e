// The simulator's scheduler (sim/scheduler.hpp): real actors on simulated
// nodes in virtual time. Messages between nodes take the link model's time,
// reported compute keeps an actor busy, request timeouts fire in virtual
// time, order between two actors is kept, and a whole job is repeatable: the
// same seed gives the same trace.

#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <catch2/catch.hpp>

#include "../harness.hpp"
#include "actors/clock.hpp"
#include "messages/registry.hpp"
#include "sim/run.hpp"
#include "sim/scheduler.hpp"
#include "sim_system.hpp"

using namespace troupe;
using sim::nanos;

namespace {

/// The scheduler's tests' cluster: `nodes` nodes computing a sample in
/// `sample_seconds`, (de)serializing at `serialize_gbps`, on `host_cores`
/// shared cores (fairly if `fair`).
struct sim_system : test::sim_system {
  explicit sim_system(std::uint32_t nodes, double sample_seconds = 0,
                      double serialize_gbps = 0, std::uint32_t host_cores = 0,
                      bool fair = false)
      : test::sim_system(nodes, [&] {
          sim::compute_options c;
          c.sample_seconds = sample_seconds;
          c.serialize_gbps = serialize_gbps;
          c.host_cores = host_cores;
          c.fair_share = fair;
          return c;
        }()) {}
};

/// Answers a vector with its size, after `samples` samples of work.
caf::behavior echo(caf::event_based_actor* self, std::uint64_t samples) {
  return {[self, samples](const std::vector<float>& v) {
    if (samples > 0)
      actors::did_work(self, actors::work_kind::step, samples);
    return static_cast<std::uint64_t>(v.size());
  }};
}

} // namespace

TEST_CASE("a request across nodes takes the link's time both ways") {
  sim_system s{3};
  s.sched.place_next(2);
  auto server = s.sys.spawn(echo, 0);
  s.sched.place_next(1);
  auto answered = std::make_shared<nanos>(-1);
  auto& sched = s.sched;
  s.sys.spawn([server, answered, &sched](caf::event_based_actor* self) {
    self->request(server, caf::infinite, std::vector<float>(125000))
        .then([answered, &sched](std::uint64_t n) {
          CHECK(n == 125000);
          *answered = sched.elapsed();
        });
  });
  CHECK(s.sched.node_of(caf::actor_cast<caf::actor>(server).id()) == 2);
  s.sched.run([answered] { return *answered >= 0; });
  // 500 kB at 10 Gb/s = 400 us, and 5 us of latency each way.
  INFO("answered after " << *answered << " ns");
  CHECK(*answered >= 400'000 + 2 * 5'000);
  CHECK(*answered < 400'000 + 2 * 5'000 + 1'000);
  CHECK(s.sched.stats().remote == 2);
}

/// When a request of `floats` floats from node 1 to node 2 is answered.
nanos round_trip(sim_system& s, std::size_t floats) {
  s.sched.place_next(2);
  auto server = s.sys.spawn(echo, 0);
  s.sched.place_next(1);
  auto answered = std::make_shared<nanos>(-1);
  auto& sched = s.sched;
  s.sys.spawn([server, answered, floats, &sched](caf::event_based_actor* self) {
    self->request(server, caf::infinite, std::vector<float>(floats))
        .then(
            [answered, &sched](std::uint64_t) { *answered = sched.elapsed(); });
  });
  s.sched.run([answered] { return *answered >= 0; });
  return *answered;
}

TEST_CASE("(de)serialization busies the sender and the receiver's node") {
  sim_system none{3}, paid{3, 0, 2}; // 2 Gb/s: 500 kB take 2 ms a side
  auto base = round_trip(none, 125000), t = round_trip(paid, 125000);
  CHECK(none.sched.stats().serialize_ns == 0);
  // The request's 500 kB (+ its header), serialized and deserialized: at
  // least 2 x 2 ms more; the answer's few bytes add a few ns a side.
  auto ser = paid.sched.stats().serialize_ns;
  INFO(base << " " << t << " " << ser);
  CHECK(ser >= 2 * 2'000'000);
  CHECK(ser < 2 * 2'000'000 + 2'000);
  CHECK(t - base == static_cast<nanos>(ser));
  // Same deliveries, later: a different trace.
  CHECK(none.sched.stats().trace_hash != paid.sched.stats().trace_hash);
  sim_system zero{3, 0, 0};
  round_trip(zero, 125000);
  CHECK(zero.sched.stats().trace_hash == none.sched.stats().trace_hash);
}

TEST_CASE("a node's broker encodes what its actors send while they go on, "
          "and decodes what arrives, one message at a time") {
  // 2 Gb/s: 500 kB take 2 ms a side; 1 ms a sample of compute.
  sim_system s{3, 1e-3, 2};
  s.sched.place_next(2);
  auto sink = s.sys.spawn(echo, 0);
  s.sched.place_next(0);
  auto got = std::make_shared<std::vector<nanos>>();
  auto& sched = s.sched;
  auto timer = s.sys.spawn([got, &sched](caf::event_based_actor*) {
    return caf::behavior{
        [got, &sched](const std::string&) { got->push_back(sched.elapsed()); }};
  });
  s.sched.place_next(1);
  s.sys.spawn([sink, timer](caf::event_based_actor* self) {
    // 500 kB out, then 2 ms of compute, then a word to node 0: the compute
    // overlaps the encoding (the word leaves after both, not after 4 ms),
    // and the word waits for the broker, busy with the 500 kB until 2 ms.
    self->send(sink, std::vector<float>(125000));
    actors::did_work(self, actors::work_kind::step, 2);
    self->send(timer, std::string{"done"});
  });
  s.sched.run([got] { return !got->empty(); });
  REQUIRE(got->size() == 1);
  INFO("the word arrived after " << got->front() << " ns");
  // 2 ms of encoding, then node 1's link sends the 500 kB (0.4 ms at 10
  // Gb/s) before the word: about 2.4 ms, not 4 (the actor did not encode).
  CHECK(got->front() >= 2'400'000);
  CHECK(got->front() < 2'500'000);
}

TEST_CASE("nodes on one host share its cores") {
  struct outcome {
    std::uint64_t waited;
    std::vector<nanos> times;
  };
  auto finish = [](std::uint32_t cores, bool fair) {
    sim_system s{3, 1e-3, 0, cores, fair}; // 100 samples take 0.1 s
    s.sched.place_next(1);
    auto a = s.sys.spawn(echo, 100);
    s.sched.place_next(2);
    auto b = s.sys.spawn(echo, 100);
    s.sched.place_next(0);
    auto times = std::make_shared<std::vector<nanos>>();
    auto& sched = s.sched;
    s.sys.spawn([a, b, times, &sched](caf::event_based_actor* self) {
      for (auto& x : {a, b})
        self->request(x, caf::infinite, std::vector<float>(1))
            .then([times, &sched](std::uint64_t) {
              times->push_back(sched.elapsed());
            });
    });
    s.sched.run([times] { return times->size() == 2; });
    REQUIRE(times->size() == 2);
    CHECK(s.sched.stats().compute_ns == 200'000'000);
    return outcome{s.sched.stats().core_wait_ns, *times};
  };
  // Nodes of their own, or two cores: both steps at once, done after
  // 0.1 s (and the links' few us). One core: one step waits for the other
  // (first come, first served), or both share it and end together (fair).
  auto own = finish(0, false), two = finish(2, false), one = finish(1, false);
  auto two_fair = finish(2, true), one_fair = finish(1, true);
  auto t0 = own.times.back(), t2 = two.times.back(), t1 = one.times.back();
  INFO(t0 << " " << t2 << " " << t1);
  CHECK(t2 == t0);
  CHECK(two_fair.times == two.times);
  CHECK(own.waited == 0);
  CHECK(two.waited == 0);
  CHECK(two_fair.waited == 0);
  CHECK(t0 < 100'000'000 + 100'000);
  CHECK(one.times.front() < 100'000'000 + 100'000);
  CHECK(t1 >= 200'000'000);
  CHECK(t1 < 200'000'000 + 100'000);
  CHECK(one.waited >= 99'000'000);
  // Fair: neither answer leaves before both steps are done, and each step
  // spent 0.1 s beyond its work on the host.
  for (auto t : one_fair.times) {
    CHECK(t >= 200'000'000);
    CHECK(t < 200'000'000 + 100'000);
  }
  CHECK(one_fair.waited >= 199'000'000);
  CHECK(one_fair.waited <= 200'000'000);
}

TEST_CASE("fairly shared cores: what a handler sends after its compute "
          "leaves when that compute is done, not when it is given out") {
  // One core, 1 ms a sample. Node 1's actor sends a word, computes 2
  // samples, sends a second word; node 2's actor computes 2 samples at the
  // same instant. Fairly shared, each gets half the core: the second word
  // leaves at 4 ms, not 2 (first come, first served, it would be 2 ms for
  // one of them and 4 for the other).
  sim_system s{3, 1e-3, 0, 1, true};
  auto got = std::make_shared<std::vector<nanos>>();
  auto& sched = s.sched;
  s.sched.place_next(0);
  auto sink = s.sys.spawn([got, &sched](caf::event_based_actor*) {
    return caf::behavior{
        [got, &sched](const std::string&) { got->push_back(sched.elapsed()); }};
  });
  s.sched.place_next(2);
  s.sys.spawn([](caf::event_based_actor* self) {
    actors::did_work(self, actors::work_kind::step, 2);
  });
  s.sched.place_next(1);
  s.sys.spawn([sink](caf::event_based_actor* self) {
    self->send(sink, std::string{"before"});
    actors::did_work(self, actors::work_kind::step, 2);
    self->send(sink, std::string{"after"});
  });
  s.sched.run([got] { return got->size() == 2; });
  REQUIRE(got->size() == 2);
  INFO((*got)[0] << " " << (*got)[1]);
  CHECK((*got)[0] < 100'000); // the link's few us
  CHECK((*got)[1] >= 4'000'000);
  CHECK((*got)[1] < 4'000'000 + 100'000);
  CHECK(s.sched.stats().core_wait_ns >= 2 * 2'000'000 - 10);
}

TEST_CASE("reported compute keeps an actor busy: its next message waits") {
  sim_system s{3, 1e-3}; // 1 ms a sample: 100 samples take 0.1 s
  s.sched.place_next(2);
  auto server = s.sys.spawn(echo, 100);
  s.sched.place_next(1);
  auto times = std::make_shared<std::vector<nanos>>();
  auto& sched = s.sched;
  s.sys.spawn([server, times, &sched](caf::event_based_actor* self) {
    for (int i = 0; i < 2; ++i)
      self->request(server, caf::infinite, std::vector<float>(1))
          .then([times, &sched](std::uint64_t) {
            times->push_back(sched.elapsed());
          });
  });
  s.sched.run([times] { return times->size() == 2; });
  REQUIRE(times->size() == 2);
  auto first = (*times)[0], second = (*times)[1];
  INFO(first << " " << second);
  CHECK(first >= 100'000'000 + 10'000);
  CHECK(first < 100'000'000 + 11'000);
  // The second request arrived while the first was computed: it waited.
  CHECK(second - first >= 100'000'000);
  CHECK(second - first < 100'000'000 + 1'000);
  CHECK(s.sched.stats().compute_ns == 200'000'000);
}

TEST_CASE("a request timeout fires in virtual time, not real time") {
  sim_system s{3};
  s.sched.place_next(2);
  // Never answers.
  auto silent = s.sys.spawn([](caf::event_based_actor* self) -> caf::behavior {
    return {[self](const std::vector<float>&) {
      return self->make_response_promise<std::uint64_t>();
    }};
  });
  s.sched.place_next(1);
  auto failed = std::make_shared<nanos>(-1);
  auto& sched = s.sched;
  s.sys.spawn([silent, failed, &sched](caf::event_based_actor* self) {
    self->request(silent, std::chrono::seconds{30}, std::vector<float>(1))
        .then([](std::uint64_t) { FAIL("an answer from a silent actor"); },
              [failed, &sched](caf::error&) { *failed = sched.elapsed(); });
  });
  auto wall = std::chrono::steady_clock::now();
  s.sched.run([failed] { return *failed >= 0; });
  CHECK(*failed == 30'000'000'000);
  CHECK(std::chrono::steady_clock::now() - wall < std::chrono::seconds{10});
}

TEST_CASE("two actors' messages keep their order, whatever their sizes") {
  sim_system s{3};
  auto got = std::make_shared<std::vector<std::size_t>>();
  s.sched.place_next(2);
  auto sink = s.sys.spawn([got](caf::event_based_actor*) -> caf::behavior {
    return {[got](const std::vector<float>& v) { got->push_back(v.size()); }};
  });
  s.sched.place_next(1);
  s.sys.spawn([sink](caf::event_based_actor* self) {
    self->send(sink, std::vector<float>(250000));
    self->send(sink, std::vector<float>(1));
    self->send(sink, std::vector<float>(1000));
  });
  s.sched.run([got] { return got->size() == 3; });
  CHECK(*got == std::vector<std::size_t>{250000, 1, 1000});
}

TEST_CASE("a simulated job is repeatable: same seed, same trace") {
  auto seed = GENERATE(1u, 7u);
  std::cout << "seed " << seed << '\n';
  auto p = test::lsq_512x20(seed);
  auto run = [&](double straggle_p, bool fair = false) {
    // (Equal workers push in lockstep: 4 gradients of one version a round.)
    auto job = test::lsq_job(p, 4, 2, "sgd", 0.02, 16, 150, seed);
    auto params = job.final_params;
    sim::sim_options o;
    o.compute.sample_seconds = 1e-4;
    o.compute.straggle_p = straggle_p;
    o.compute.straggle_factor = 4;
    o.compute.seed = seed;
    if (fair) { // every node on a host of two cores
      o.compute.host_cores = 2;
      o.compute.fair_share = true;
    }
    auto out = sim::run_simulation(std::move(job), o);
    out["gap"] = test::lsq_gap(*p, *params);
    return out;
  };
  auto a = run(0), b = run(0), c = run(0.3);
  INFO(a.dump());
  CHECK(a["simulation"]["trace_hash"] == b["simulation"]["trace_hash"]);
  CHECK(a["simulation"]["events"] == b["simulation"]["events"]);
  CHECK(a["gap"] == b["gap"]);
  CHECK(a["seconds"] == b["seconds"]);
  CHECK(a["simulation"]["trace_hash"] != c["simulation"]["trace_hash"]);
  // The job trained: 600 steps of 16 samples.
  auto start = test::lsq_gap(*p, std::vector<float>(p->a.cols(), 0.0f));
  CHECK(a["gap"].get<double>() < 1e-2 * start);
  CHECK(a["steps"] == 600);
  // Every worker computed 150 steps of 16 samples at 0.1 ms a sample: at
  // least 0.24 s; stragglers make it longer.
  auto sec = a["simulation"]["simulated_seconds"].get<double>();
  CHECK(sec >= 150 * 16 * 1e-4);
  CHECK(c["simulation"]["simulated_seconds"].get<double>() > sec);
  CHECK(c["simulation"]["straggles"].get<int>() > 0);
  CHECK(a["simulation"]["nodes"] == 1 + 4 + 2);
  // On two fairly shared cores as well.
  auto f = run(0, true), g = run(0, true);
  CHECK(f["simulation"]["trace_hash"] == g["simulation"]["trace_hash"]);
  CHECK(f["gap"] == g["gap"]);
  CHECK(f["steps"] == 600);
  CHECK(f["simulation"]["trace_hash"] != a["simulation"]["trace_hash"]);
  CHECK(f["gap"].get<double>() < 1e-2 * start);
  // Four workers' 0.24 s of steps on two cores: at least 0.48 s.
  CHECK(f["simulation"]["simulated_seconds"].get<double>()
        >= 4 * 150 * 16 * 1e-4 / 2);
}

TEST_CASE("a step's jitter is log-normal with mean 1 and the asked spread") {
  // Over a grid of uniforms (deterministic): the factor's mean and
  // coefficient of variation are the ones asked for, and none is <= 0.
  for (double cv : {0.1, 0.3, 1.0}) {
    const int n = 2000;
    double sum = 0, sq = 0, least = 1e9;
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n / 20; ++j) {
        double u1 = (i + 0.5) / n, u2 = (j + 0.5) / (n / 20);
        double f = sim::lognormal_factor(u1, u2, cv);
        sum += f;
        sq += f * f;
        least = std::min(least, f);
      }
    double m = sum / (n * (n / 20)), var = sq / (n * (n / 20)) - m * m;
    INFO("cv " << cv);
    CHECK(m == Approx(1).epsilon(0.01));
    CHECK(std::sqrt(var) / m == Approx(cv).epsilon(cv < 1 ? 0.03 : 0.15));
    CHECK(least > 0);
  }
  CHECK(sim::lognormal_factor(0.3, 0.7, 0) == 1);
}
