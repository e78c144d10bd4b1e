// SGP, DS-Sync and ShadowSync through the actors: algorithms.md §5 T1 (z_i
// reach the exact average, weights conserved at quiescence) and T4
// (label-sorted LSQ), §7 T2 (exact average in q rounds) and T4, §6 T1 (MA,
// BMUF, S-EASGD conservation with paused trainers), the shadow workers'
// step rate, and 256 gossip peers on LOGREG.

#include <chrono>
#include <cmath>
#include <future>
#include <iostream>
#include <numeric>
#include <thread>

#include <caf/scoped_actor.hpp>
#include <catch2/catch.hpp>

#include "algos/dssync/dssync.hpp"
#include "algos/registry.hpp"
#include "algos/sgp/sgp.hpp"
#include "algos/shadow/shadow.hpp"
#include "algos/shadow/shadow_syncer.hpp"
#include "harness.hpp"

using namespace troupe;

namespace {

/// Random starts of norm ~ 3 around `center`.
std::vector<std::vector<float>> spread_starts(std::uint32_t workers,
                                              const optim::vector<double>& c,
                                              std::uint64_t seed) {
  optim::rng gen{seed};
  std::vector<std::vector<float>> starts(workers, std::vector<float>(c.size()));
  for (auto& s : starts)
    for (std::size_t i = 0; i < s.size(); ++i)
      s[i] = static_cast<float>(c[static_cast<Eigen::Index>(i)]
                                + 3.0 / std::sqrt(20.0) * gen.normal());
  return starts;
}

std::vector<double> mean_of(const std::vector<std::vector<float>>& xs) {
  std::vector<double> m(xs.at(0).size(), 0.0);
  for (auto& x : xs)
    for (std::size_t i = 0; i < m.size(); ++i)
      m[i] += x[i] / static_cast<double>(xs.size());
  return m;
}

double max_diff(const std::vector<float>& x, const std::vector<double>& y) {
  double d = 0;
  for (std::size_t i = 0; i < y.size(); ++i)
    d = std::max(d, std::abs(x.at(i) - y[i]));
  return d;
}

/// An LSQ job of algorithm A (made into `algo`, to set its settings)
/// without shards, its workers taking plain SGD steps at rate `lr`.
template <class A>
actors::job_config peer_job(std::shared_ptr<A>& algo,
                            std::shared_ptr<const optim::lsq_problem> prob,
                            std::uint32_t workers, std::uint64_t steps,
                            double lr, std::uint64_t seed) {
  auto job = test::lsq_job(prob, workers, 0, "sgd", 1, 16, steps, seed);
  algo = test::install<A>(job);
  algo->local.optimizer = {"sgd", 0, 0};
  algo->local.lr = lr;
  return job;
}

/// Runs `job` from x = 0 on a label-sorted split under the seeded scheduler;
/// checks that the evaluated mean model gets within 1e-3 of the starting
/// gap and every worker within 1e-2. Returns the final JSON.
nlohmann::json converge_non_iid(actors::job_config job,
                                std::shared_ptr<const optim::lsq_problem> prob,
                                std::uint64_t seed) {
  auto n = job.workers;
  std::vector<std::vector<float>> starts(n, std::vector<float>(20, 0.0f));
  auto lasts = test::record_workers(job, prob, starts, seed,
                                    test::sorted_parts(*prob, n));
  auto final_params = job.final_params;
  auto out = test::run_seeded(std::move(job), seed);
  INFO(out.dump().substr(0, 3000));
  REQUIRE_FALSE(out.contains("error"));
  auto start = test::lsq_gap(*prob, starts[0]);
  auto gap = test::lsq_gap(*prob, *final_params);
  std::cout << "  mean model: f - f* = " << gap << " from " << start
            << std::endl;
  CHECK(gap < 1e-3 * start);
  for (std::uint32_t w = 0; w < n; ++w) {
    INFO("worker " << w);
    CHECK(test::lsq_gap(*prob, *lasts[w]) < 1e-2 * start);
  }
  return out;
}

} // namespace

TEST_CASE("SGP T1 through the actors: with rate 0 every z_i reaches the "
          "average of the starts and the weights sum to n") {
  const std::uint64_t seed = 71;
  std::cout << "sgp T1: seed " << seed << std::endl;
  auto prob = test::lsq_512x20(seed);
  for (std::uint32_t peers : {1u, 2u}) {
    INFO("peers " << peers);
    const std::uint32_t n = 6; // not a power of two
    std::shared_ptr<algos::sgp> sgp;
    auto job = peer_job(sgp, prob, n, 80, 0.0, seed);
    sgp->settings.peers = peers;
    auto starts = spread_starts(n, prob->x_star, seed);
    auto lasts = test::record_workers(job, prob, starts, seed);
    auto final_params = job.final_params;
    auto out = test::run_seeded(std::move(job), seed + peers);
    INFO(out.dump().substr(0, 3000));
    REQUIRE_FALSE(out.contains("error"));
    auto mean = mean_of(starts);
    for (std::uint32_t w = 0; w < n; ++w) {
      INFO("worker " << w);
      CHECK(max_diff(*lasts[w], mean) < 1e-4);
      CHECK(out["worker_stats"][w]["mixes"].get<std::uint64_t>() > 0);
    }
    CHECK(max_diff(*final_params, mean) < 1e-4);
    // Every share was mixed by the end: the weights sum to n.
    CHECK(out["sgp"]["weight_sum"].get<double>() == Approx(n).margin(1e-9));
  }
}

TEST_CASE("SGP T4: 8 workers on a label-sorted LSQ split all reach x*, with "
          "1 peer and with 2 peers and overlap 1") {
  struct variant {
    std::uint32_t peers;
    std::uint64_t overlap;
  };
  for (auto v : {variant{1, 0}, variant{2, 1}}) {
    const std::uint64_t seed = 73 + v.peers;
    std::cout << "sgp T4: peers " << v.peers << ", overlap " << v.overlap
              << ", seed " << seed << std::endl;
    auto prob = test::lsq_512x20(seed);
    const std::uint64_t steps = 400;
    std::shared_ptr<algos::sgp> sgp;
    auto job = peer_job(sgp, prob, 8, steps, 0.05, seed);
    sgp->settings.peers = v.peers;
    sgp->settings.overlap = v.overlap;
    sgp->local.schedule = test::decay(0.05, steps / 5);
    auto out = converge_non_iid(std::move(job), prob, seed);
    CHECK(out["sgp"]["weight_sum"].get<double>() == Approx(8).margin(1e-9));
  }
}

TEST_CASE("DS-Sync T2 through the actors: with rate 0 the digit schedule "
          "gives the exact average in q = 2 rounds (16 workers, groups of "
          "4), and not in 1") {
  const std::uint64_t seed = 79;
  std::cout << "dssync T2: seed " << seed << std::endl;
  auto prob = test::lsq_512x20(seed);
  auto starts = spread_starts(16, prob->x_star, seed);
  auto mean = mean_of(starts);
  for (std::uint64_t rounds : {1u, 2u}) {
    INFO("rounds " << rounds);
    std::shared_ptr<algos::dssync> dssync;
    auto job = peer_job(dssync, prob, 16, rounds, 0.0, seed);
    dssync->settings.group_size = 4;
    auto lasts = test::record_workers(job, prob, starts, seed);
    auto out = test::run_seeded(std::move(job), seed + rounds);
    INFO(out.dump().substr(0, 3000));
    REQUIRE_FALSE(out.contains("error"));
    CHECK(out["dssync"]["schedule"] == "digit");
    double worst = 0;
    for (std::uint32_t w = 0; w < 16; ++w) {
      worst = std::max(worst, max_diff(*lasts[w], mean));
      CHECK(out["worker_stats"][w]["mixes"].get<std::uint64_t>() == rounds);
      CHECK(out["worker_stats"][w]["timeouts"].get<std::uint64_t>() == 0);
    }
    if (rounds == 1)
      CHECK(worst > 0.1); // one round averages only within groups
    else
      CHECK(worst < 1e-5);
  }
}

TEST_CASE("DS-Sync T4: 16 workers in groups of 4 on a label-sorted LSQ "
          "split all reach x*") {
  const std::uint64_t seed = 83;
  std::cout << "dssync T4: seed " << seed << std::endl;
  auto prob = test::lsq_512x20(seed);
  const std::uint64_t steps = 300;
  std::shared_ptr<algos::dssync> dssync;
  auto job = peer_job(dssync, prob, 16, steps, 0.05, seed);
  dssync->settings.group_size = 4;
  dssync->local.schedule = test::decay(0.05, steps / 5);
  converge_non_iid(std::move(job), prob, seed);
}

TEST_CASE("ShadowSync T1 with paused trainers (rate 0): MA and BMUF(0, 1) "
          "give every worker the mean; S-EASGD conserves center + workers") {
  const std::uint64_t seed = 89;
  std::cout << "shadow T1: seed " << seed << std::endl;
  auto prob = test::lsq_512x20(seed);
  auto starts = spread_starts(4, prob->x_star, seed);
  auto mean = mean_of(starts);
  for (std::string mode : {"ma", "bmuf", "easgd"}) {
    INFO("mode " << mode);
    std::shared_ptr<algos::shadow> shadow;
    auto job = peer_job(shadow, prob, 4, 200, 0.0, seed);
    shadow->settings.mode = mode;
    shadow->settings.block_momentum = 0;
    shadow->group_of = {0, 1, 2, 3}; // a syncer per worker
    if (mode == "easgd")
      job.shards = 2;
    auto lasts = test::record_workers(job, prob, starts, seed);
    auto final_params = job.final_params;
    auto out = test::run_seeded(std::move(job), seed);
    INFO(out.dump().substr(0, 3000));
    REQUIRE_FALSE(out.contains("error"));
    REQUIRE(out["shadow"]["syncers"].size() == 4);
    for (auto& s : out["shadow"]["syncers"])
      CHECK(s["rounds"].get<std::uint64_t>() >= 2);
    if (mode != "easgd") {
      for (std::uint32_t w = 0; w < 4; ++w) {
        INFO("worker " << w);
        CHECK(max_diff(*lasts[w], mean) < 1e-5);
      }
      continue;
    }
    // The center started at 0: center + sum of workers == sum of starts.
    std::vector<double> total(20, 0.0);
    for (std::size_t i = 0; i < 20; ++i) {
      total[i] = (*final_params)[i];
      for (auto& l : lasts)
        total[i] += (*l)[i];
    }
    double worst = 0;
    for (std::size_t i = 0; i < 20; ++i)
      worst = std::max(worst, std::abs(total[i] - 4 * mean[i]));
    CHECK(worst < 1e-4);
  }
}

TEST_CASE("ShadowSync: the workers never wait; syncing back to back they "
          "take every step of their budget without waiting once") {
  const std::uint64_t seed = 97;
  std::cout << "shadow never waits: seed " << seed << std::endl;
  auto prob = test::lsq_512x20(seed);
  // Two jobs side by side (same load): syncing back to back, and syncing
  // once an hour; 300 steps of 4 ms each. No wall-clock ratio is asserted:
  // the property is that a worker never waits for its syncer (its wait time
  // is 0 while corrections arrive) and takes every step of its budget.
  const std::uint64_t steps = 300;
  auto make = [&](std::chrono::milliseconds period) {
    std::shared_ptr<algos::shadow> shadow;
    auto job = peer_job(shadow, prob, 4, steps, 0.01, seed);
    shadow->settings.period = period;
    shadow->group_of = {0, 0, 1, 1};
    job.step_delays.assign(4, std::chrono::microseconds{4000});
    return job;
  };
  actors::runtime_options rt;
  rt.threads = 8; // sleeping steps hold their threads
  auto busy = std::async(std::launch::async, [&] {
    return actors::run_job(make(std::chrono::milliseconds{0}), rt);
  });
  auto idle = std::async(std::launch::async, [&] {
    return actors::run_job(make(std::chrono::hours{1}), rt);
  });
  auto a = busy.get(), b = idle.get();
  INFO(a.dump().substr(0, 2000));
  INFO(b.dump().substr(0, 2000));
  auto rounds = a["shadow"]["rounds"].get<double>();
  std::cout << "  steps with syncing " << a["steps"] << ", without "
            << b["steps"] << ", " << rounds << " rounds, sync gap "
            << a["shadow"]["sync_gap"] << std::endl;
  CHECK(a["stop_reason"] == "steps done");
  CHECK(a["steps"].get<std::uint64_t>() == 4 * steps);
  CHECK(b["steps"].get<std::uint64_t>() == 4 * steps);
  CHECK(rounds >= 2);
  CHECK(b["shadow"]["rounds"].get<double>() <= 2);
  std::uint64_t mixes = 0;
  for (auto& w : a["worker_stats"]) {
    CHECK(w["wait_seconds"].get<double>() == 0);
    mixes += w["mixes"].get<std::uint64_t>();
  }
  CHECK(mixes > 0); // corrections arrived while the workers kept stepping
}

TEST_CASE("256 SGP peers in one process train LOGREG to its optimum") {
  const std::uint64_t seed = 101;
  std::cout << "sgp 256 peers: seed " << seed << std::endl;
  optim::logreg_options lo;
  lo.m = 256 * 16;
  lo.d = 10;
  lo.mu = 1e-2;
  lo.seed = seed;
  auto prob
      = std::make_shared<const optim::logreg_problem>(optim::make_logreg(lo));
  actors::job_config job;
  job.algorithm = algos::make_algorithm("sgp");
  job.workers = 256;
  job.shards = 0;
  job.init = std::make_shared<const std::vector<float>>(lo.d, 0.0f);
  job.make_replica = [prob, seed](messages::worker_id w) {
    std::vector<std::size_t> part;
    for (std::size_t i = w; i < static_cast<std::size_t>(prob->y.size());
         i += 256)
      part.push_back(i);
    return std::make_unique<optim::synthetic_replica<optim::logreg_problem>>(
        prob, part, 16, seed + w);
  };
  const std::uint64_t steps = 200;
  job.steps_per_worker = steps;
  auto sgp = test::install<algos::sgp>(job);
  sgp->local.optimizer = {"sgd", 0, 0};
  sgp->local.lr = 0.5;
  sgp->local.schedule = test::decay(0.5, steps / 4);
  job.final_params = std::make_shared<std::vector<float>>();
  auto final_params = job.final_params;
  auto t0 = std::chrono::steady_clock::now();
  auto out = actors::run_job(std::move(job));
  double secs
      = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();
  INFO(out.dump().substr(0, 3000));
  REQUIRE_FALSE(out.contains("error"));
  std::vector<double> x(final_params->begin(), final_params->end());
  std::vector<double> zero(lo.d, 0.0);
  auto gap = optim::objective(*prob, x.data()) - prob->f_star;
  auto start = optim::objective(*prob, zero.data()) - prob->f_star;
  std::cout << "  f - f* = " << gap << " from " << start << "; "
            << out["messages"].get<double>() / secs << " messages/s over "
            << secs << " s" << std::endl;
  CHECK(gap < 1e-3 * start);
  CHECK(out["sgp"]["weight_sum"].get<double>() == Approx(256).margin(1e-6));
}

TEST_CASE("ShadowSync: a peer's sums that arrive before this syncer knows "
          "its peers are kept, so the first round does not wait out the "
          "timeout") {
  caf::actor_system_config cfg;
  messages::register_types(cfg);
  caf::actor_system sys{cfg};
  auto make = [&](std::uint32_t index) {
    algos::shadow_syncer_config c;
    c.index = index;
    c.workers = 2;
    c.init = std::make_shared<const std::vector<float>>(4, 0.0f);
    c.timeout = caf::duration{std::chrono::seconds{60}};
    return sys.spawn(algos::shadow_syncer, std::move(c)); // no members
  };
  auto a = make(0), b = make(1);
  std::vector<caf::actor> peers{caf::actor_cast<caf::actor>(a),
                                caf::actor_cast<caf::actor>(b)};
  caf::scoped_actor self{sys};
  auto rounds_of = [&](const algos::shadow_syncer_actor& s) {
    double r = -1;
    self->request(s, std::chrono::seconds{5}, messages::stats_atom::value)
        .receive(
            [&](const std::string& text) {
              r = nlohmann::json::parse(text)["rounds"].get<double>();
            },
            [&](caf::error&) {});
    return r;
  };
  // A starts its first round and sends B its sums before B has its peers.
  self->send(a, messages::peers_atom::value, peers);
  CHECK(rounds_of(a) == 0); // A handled its peers (and sent its sums)
  self->send(b, messages::peers_atom::value, peers);
  std::this_thread::sleep_for(std::chrono::milliseconds{300});
  auto ra = rounds_of(a), rb = rounds_of(b);
  std::cout << "shadow early sums: rounds " << ra << " and " << rb << " in "
            << "300 ms" << std::endl;
  CHECK(ra >= 5);
  CHECK(rb >= 5);
  self->send_exit(a, caf::exit_reason::user_shutdown);
  self->send_exit(b, caf::exit_reason::user_shutdown);
}
