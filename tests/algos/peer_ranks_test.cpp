// A peer-to-peer worker keeps state for its neighbours only: each
// algorithm's peer_ranks (sorted, itself left out, symmetric, small), and a
// peer policy's checkpoint of what it heard, in the per-neighbour format and
// in the older one-entry-per-worker format.

#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "actors/coordinator.hpp"
#include "algos/allreduce/allreduce.hpp"
#include "algos/dssync/dssync.hpp"
#include "algos/gadmm/gadmm.hpp"
#include "algos/peer_policy.hpp"
#include "algos/sgp/sgp.hpp"
#include "harness.hpp"
#include "optim/gossip.hpp"
#include "optim/rng.hpp"
#include "optim/state_file.hpp"

using namespace troupe;
using messages::worker_id;

namespace {

/// Checks `ranks_of(w)` for every rank of n: increasing, w absent, every
/// rank below n, symmetric, at most `bound` ranks; returns the largest
/// count.
template <class F>
std::size_t check_relation(std::uint32_t n, F ranks_of, std::size_t bound) {
  std::vector<std::vector<worker_id>> all(n);
  std::size_t most = 0;
  for (worker_id w = 0; w < n; ++w) {
    all[w] = ranks_of(w);
    INFO("n " << n << ", rank " << w);
    REQUIRE(std::is_sorted(all[w].begin(), all[w].end()));
    REQUIRE(std::adjacent_find(all[w].begin(), all[w].end()) == all[w].end());
    REQUIRE(std::count(all[w].begin(), all[w].end(), w) == 0);
    for (auto v : all[w])
      REQUIRE(v < n);
    REQUIRE(all[w].size() <= bound);
    most = std::max(most, all[w].size());
  }
  for (worker_id w = 0; w < n; ++w)
    for (auto v : all[w]) {
      INFO("n " << n << ": " << w << " lists " << v);
      REQUIRE(std::binary_search(all[v].begin(), all[v].end(), w));
    }
  return most;
}

actors::job_config job_of(std::uint32_t workers) {
  actors::job_config job;
  job.workers = workers;
  return job;
}

/// A peer policy with nothing of its own: its base's checkpoint, exposed.
class bare_policy : public algos::detail::peer_policy {
public:
  using peer_policy::peer_policy;
  void before_compute(actors::worker_context&,
                      std::function<void()> ready) override {
    ready();
  }
  void after_compute(actors::worker_context&, std::uint32_t,
                     std::function<void()> done) override {
    done();
  }
  void save_state(optim::state_writer& w, const std::string& p) const {
    save_base(w, p);
  }
  void load_state(const optim::state_reader& r, const std::string& p) {
    load_base(r, p);
  }
  std::uint64_t heard(worker_id r) const {
    return heard_of(r);
  }
  std::size_t neighbours() const {
    return peers_.size();
  }

protected:
  void recheck(actors::worker_context&) override {}
  std::string missing(actors::worker_context&) const override {
    return {};
  }
  void give_up(actors::worker_context&) override {}
};

actors::peer_policy_options options_of(std::uint32_t workers, worker_id rank) {
  actors::peer_policy_options o;
  o.workers = workers;
  o.optimizer = {"momentum", 0.9, 0};
  o.neighbours = optim::exponential_neighbours(rank, workers);
  return o;
}

} // namespace

TEST_CASE("each algorithm's peer ranks: sorted, symmetric, few") {
  algos::sgp sgp;
  algos::allreduce ring;
  for (std::uint32_t n : {1u, 2u, 3u, 7u, 16u, 100u, 1000u}) {
    auto job = job_of(n);
    auto bound = 2 * static_cast<std::size_t>(std::log2(std::max(n, 2u))) + 2;
    auto most = check_relation(
        n, [&](worker_id w) { return sgp.peer_ranks(job, w); }, bound);
    std::cout << "sgp, " << n << " workers: at most " << most
              << " neighbours\n";
    // Exactly the graph's in- and out-peers of every iteration.
    for (worker_id w = 0; w < std::min(n, 20u); ++w) {
      std::vector<worker_id> seen;
      for (std::uint64_t k = 0; k < 64; ++k)
        for (std::uint32_t p : {1u, 2u}) {
          for (auto j : optim::exponential_out_peers(w, k, n, p))
            seen.push_back(j);
          for (auto j : optim::exponential_in_peers(w, k, n, p))
            seen.push_back(j);
        }
      std::sort(seen.begin(), seen.end());
      seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
      seen.erase(std::remove(seen.begin(), seen.end(), w), seen.end());
      REQUIRE(sgp.peer_ranks(job, w) == seen);
    }
    check_relation(
        n, [&](worker_id w) { return ring.peer_ranks(job, w); }, 2);
  }
  CHECK(ring.peer_ranks(job_of(5), 0) == std::vector<worker_id>{1, 4});
  CHECK(ring.peer_ranks(job_of(2), 1) == std::vector<worker_id>{0});
  CHECK(ring.peer_ranks(job_of(1), 0).empty());
  algos::dssync ds;
  ds.settings.group_size = 4;
  // 64 = 4^3: the digit schedule, 3 (4 - 1) group mates.
  auto most = check_relation(
      64, [&](worker_id w) { return ds.peer_ranks(job_of(64), w); }, 9);
  CHECK(most == 9);
  // 12 is no power of 4: random groups, anyone.
  check_relation(
      12, [&](worker_id w) { return ds.peer_ranks(job_of(12), w); }, 11);
  CHECK(ds.peer_ranks(job_of(12), 3).size() == 11);
  // ... so its workers get one shared table instead of lists.
  CHECK(ds.any_peer(job_of(12)));
  CHECK_FALSE(ds.any_peer(job_of(64)));
  CHECK_FALSE(ds.any_peer(job_of(4))); // one group of all
  CHECK_FALSE(algos::sgp{}.any_peer(job_of(12)));
  // GADMM: a chain of ranks in order, two neighbours at most; changing
  // chains: anyone.
  algos::gadmm chain;
  for (std::uint32_t n : {1u, 2u, 5u, 1000u})
    check_relation(
        n, [&](worker_id w) { return chain.peer_ranks(job_of(n), w); }, 2);
  CHECK(chain.peer_ranks(job_of(5), 0) == std::vector<worker_id>{1});
  CHECK(chain.peer_ranks(job_of(5), 3) == std::vector<worker_id>{2, 4});
  chain.settings.rechain = 4;
  CHECK(chain.peer_ranks(job_of(5), 3).size() == 4);
  CHECK(chain.any_peer(job_of(5)));
  CHECK_FALSE(algos::gadmm{}.any_peer(job_of(5)));
}

TEST_CASE("a peer policy's checkpoint keeps what it heard per neighbour and "
          "still reads one entry per worker") {
  const std::uint32_t n = 16;
  const worker_id rank = 5;
  bare_policy a{options_of(n, rank), 4};
  REQUIRE(a.neighbours() == optim::exponential_neighbours(rank, n).size());
  std::vector<std::uint64_t> per_worker(n);
  for (std::uint32_t r = 0; r < n; ++r)
    per_worker[r] = 100 + r;
  optim::state_writer w;
  // The older format: one entry per worker, under "old.".
  optim::make_optimizer<float>({"momentum", 0.9, 0}, 4)->save(w, "old.opt.");
  w.put("old.heard", per_worker);
  // Too short for the job.
  optim::make_optimizer<float>({"momentum", 0.9, 0}, 4)->save(w, "short.opt.");
  w.put("short.heard", std::vector<std::uint64_t>(n - 1, 0));
  optim::state_reader r{w.encode(), "test.state"};
  a.load_state(r, "old.");
  for (auto j : optim::exponential_neighbours(rank, n))
    CHECK(a.heard(j) == 100 + j);
  // Rank 5's neighbours in 16 are 1 3 4 6 7 9 13: the others are not kept.
  CHECK(optim::exponential_neighbours(rank, n)
        == std::vector<worker_id>{1, 3, 4, 6, 7, 9, 13});
  CHECK(a.heard(rank) == 0);
  CHECK(a.heard(0) == 0);
  CHECK(a.heard(2) == 0);
  CHECK_THROWS_WITH(a.load_state(r, "short."),
                    Catch::Contains("not one entry per worker"));
  // The current format round-trips, and holds only the neighbours.
  bare_policy b{options_of(n, rank), 4};
  b.load_state(r, "old.");
  optim::state_writer w2;
  b.save_state(w2, "new.");
  optim::state_reader r2{w2.encode(), "test2.state"};
  CHECK(r2.u64("new.heard.ranks").size() == b.neighbours());
  CHECK(r2.u64("new.heard").size() == b.neighbours());
  bare_policy c{options_of(n, rank), 4};
  c.load_state(r2, "new.");
  for (worker_id j = 0; j < n; ++j)
    CHECK(c.heard(j) == b.heard(j));
  // A rank outside the job is refused by name.
  optim::state_writer w3;
  optim::make_optimizer<float>({"momentum", 0.9, 0}, 4)->save(w3, "bad.opt.");
  w3.put("bad.heard.ranks", std::vector<std::uint64_t>{1, 99});
  w3.put("bad.heard", std::vector<std::uint64_t>{1, 2});
  optim::state_reader r3{w3.encode(), "test3.state"};
  CHECK_THROWS_WITH(c.load_state(r3, "bad."),
                    Catch::Contains("rank 99 of a job of 16 workers"));
}

TEST_CASE("DS-Sync's random groups through one shared handle table: every "
          "round averages the groups optim's shuffle draws, bit for bit") {
  const std::uint64_t seed = 97;
  std::cout << "dssync random groups: seed " << seed << std::endl;
  auto prob = test::lsq_512x20(seed);
  const std::uint32_t n = 12, m = 5;
  const std::uint64_t rounds = 6;
  optim::rng gen{seed};
  std::vector<std::vector<float>> starts(n, std::vector<float>(20));
  for (auto& s : starts)
    for (auto& v : s)
      v = static_cast<float>(gen.normal());
  auto job = test::lsq_job(prob, n, 0, "sgd", 1, 16, rounds, seed);
  auto ds = test::install<algos::dssync>(job);
  ds->local.optimizer = {"sgd", 0, 0};
  ds->local.lr = 0; // pure averaging
  ds->settings.group_size = m;
  ds->settings.seed = seed;
  REQUIRE(ds->any_peer(job));
  auto lasts = test::record_workers(job, prob, starts, seed);
  auto out = test::run_seeded(std::move(job), seed);
  INFO(out.dump().substr(0, 3000));
  REQUIRE_FALSE(out.contains("error"));
  CHECK(out["dssync"]["schedule"] == "random");
  auto xs = starts;
  for (std::uint64_t k = 0; k < rounds; ++k)
    optim::average_groups(xs, optim::random_groups(n, m, k, seed));
  for (std::uint32_t w = 0; w < n; ++w) {
    INFO("worker " << w);
    CHECK(*lasts[w] == xs[w]);
    CHECK(out["worker_stats"][w]["mixes"].get<std::uint64_t>() == rounds);
    CHECK(out["worker_stats"][w]["timeouts"].get<std::uint64_t>() == 0);
  }
  // Averaging within groups keeps the sum; the workers drew together.
  double spread0 = 0, spread = 0;
  for (std::uint32_t w = 1; w < n; ++w)
    for (std::size_t i = 0; i < 20; ++i) {
      spread0
          = std::max<double>(spread0, std::abs(starts[w][i] - starts[0][i]));
      spread
          = std::max<double>(spread, std::abs((*lasts[w])[i] - (*lasts[0])[i]));
    }
  std::cout << "  spread " << spread0 << " -> " << spread << std::endl;
  CHECK(spread < 0.1 * spread0);
}
