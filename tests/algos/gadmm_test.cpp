// GADMM through the actors under seeded random interleavings: 4 workers on a
// chain, each with a label-sorted quarter of LSQ (full batches), reach the
// exact optimum at a constant rate, where SGP at the same rate and steps
// stays at its bias; so do Dynamic GADMM (a new chain every 3 iterations,
// the duals passed down it) and GADMM with 4 local steps an iteration. A
// worker sends its model to its (at most two) neighbours an iteration.

#include <algorithm>
#include <cmath>
#include <iostream>
#include <numeric>

#include <catch2/catch.hpp>

#include "algos/gadmm/gadmm.hpp"
#include "algos/sgp/sgp.hpp"
#include "harness.hpp"

using namespace troupe;

namespace {

struct outcome {
  nlohmann::json out;
  /// f - f* of each worker's final model, and of the start.
  std::vector<double> gaps;
  double start = 0;
};

/// A job of algorithm A on 4 workers, plain SGD at `lr` on full batches of
/// a label-sorted split, from x = 0; `tune` sets A's settings.
template <class A, class Tune>
outcome run(std::shared_ptr<const optim::lsq_problem> prob, std::uint64_t steps,
            double lr, std::uint64_t seed, Tune tune) {
  const std::uint32_t n = 4;
  auto job = test::lsq_job(prob, n, 0, "sgd", 1, 128, steps, seed);
  auto algo = test::install<A>(job);
  algo->local.optimizer = {"sgd", 0, 0};
  algo->local.lr = lr;
  tune(*algo);
  auto parts = test::sorted_parts(*prob, n);
  std::vector<std::shared_ptr<std::vector<float>>> lasts;
  for (std::uint32_t w = 0; w < n; ++w)
    lasts.push_back(std::make_shared<std::vector<float>>());
  std::vector<float> zero(20, 0.0f);
  job.make_replica = [prob, parts, lasts, seed, zero](messages::worker_id w) {
    return std::make_unique<test::recorded_replica>(
        prob, parts[w], parts[w].size(), seed + w, zero, lasts[w]);
  };
  outcome o;
  o.out = test::run_seeded(std::move(job), seed);
  o.start = test::lsq_gap(*prob, zero);
  for (auto& l : lasts)
    o.gaps.push_back(l->empty() ? o.start : test::lsq_gap(*prob, *l));
  return o;
}

double worst(const outcome& o) {
  return *std::max_element(o.gaps.begin(), o.gaps.end());
}

} // namespace

TEST_CASE("GADMM: 4 workers on a chain reach LSQ's exact optimum at a "
          "constant rate, where SGP stays at its bias") {
  const std::uint64_t seed = 1201, steps = 800;
  std::cout << "gadmm: seed " << seed << std::endl;
  auto prob = test::lsq_512x20(seed);
  struct variant {
    const char* name;
    std::uint64_t inner, rechain;
  };
  double sgp_worst = 0;
  {
    auto o = run<algos::sgp>(prob, steps, 0.05, seed, [](algos::sgp&) {});
    INFO(o.out.dump().substr(0, 2000));
    REQUIRE_FALSE(o.out.contains("error"));
    sgp_worst = worst(o);
    std::cout << "  sgp: worst worker f - f* = " << sgp_worst << " from "
              << o.start << std::endl;
  }
  for (auto v : {variant{"gadmm", 1, 0}, variant{"dynamic gadmm", 1, 3},
                 variant{"gadmm, 4 local steps", 4, 0}}) {
    auto o = run<algos::gadmm>(prob, steps, 0.05, seed, [&](algos::gadmm& g) {
      g.settings.rho = 1;
      g.settings.round_steps = v.inner;
      g.settings.rechain = v.rechain;
      g.seed = seed;
    });
    INFO(v.name << ": " << o.out.dump().substr(0, 2000));
    REQUIRE_FALSE(o.out.contains("error"));
    std::cout << "  " << v.name << ": worst worker f - f* = " << worst(o)
              << std::endl;
    auto iterations = (steps + v.inner - 1) / v.inner;
    for (auto& w : o.out["worker_stats"]) {
      CHECK(w["steps"].get<std::uint64_t>() == steps);
      CHECK(w["timeouts"].get<std::uint64_t>() == 0);
    }
    // Each worker's model to its neighbours on this chain and the next (a
    // static chain of 4: 6 an iteration), a new chain's duals (3 a change),
    // a leave to each neighbour at the end.
    auto sent = o.out["messages"].get<std::uint64_t>();
    std::cout << "    " << sent << " messages in " << iterations
              << " iterations" << std::endl;
    CHECK(sent >= 6 * iterations);
    if (v.rechain == 0)
      CHECK(sent <= 6 * iterations + 6);
    else
      CHECK(sent <= 12 * iterations + 3 * (iterations / v.rechain) + 12);
    CHECK(worst(o) < 1e-7 * o.start);
    CHECK(worst(o) * 100 < sgp_worst);
  }
}

TEST_CASE("GADMM refuses flags out of range with the reason") {
  algos::gadmm g;
  algos::job_options o;
  o.workers = 4;
  g.settings.rho = 0;
  CHECK_THROWS_WITH(g.check_flags(o, {}), Catch::Contains("--rho"));
  g.settings.rho = 1;
  g.settings.round_steps = 0;
  CHECK_THROWS_WITH(g.check_flags(o, {}), Catch::Contains("--inner-steps"));
  g.settings.round_steps = 2;
  CHECK_NOTHROW(g.check_flags(o, {}));
}
