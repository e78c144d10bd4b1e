// All-reduce SGD through the actors (algorithms.md "All-reduce SGD"), under
// the seeded scheduler: W = 1, 2, 3, 5 workers on one stream of LSQ global
// batches end with replicas equal bit for bit, equal to the steps replayed
// with optim::ring_allreduce's sums, within float rounding of one worker
// taking SGD steps on the same global batches (W x 16 examples), and the
// optimum's gap below 1e-3 of the start; each worker sends 2 (W - 1)
// messages of about d / W values per step; a worker that fails mid-job
// ends the job with an error naming it instead of a hang.

#include <cmath>
#include <cstring>
#include <iostream>
#include <numeric>
#include <stdexcept>

#include <catch2/catch.hpp>

#include "algos/allreduce/allreduce.hpp"
#include "harness.hpp"
#include "messages/allreduce.hpp"
#include "optim/optimizer.hpp"
#include "optim/ring_plan.hpp"

using namespace troupe;

namespace {

constexpr std::size_t batch = 16; ///< examples per worker per step
constexpr double lr = 0.05;

std::vector<std::size_t> all_examples() {
  std::vector<std::size_t> all(512);
  std::iota(all.begin(), all.end(), std::size_t{0});
  return all;
}

/// Worker w's part of the stream of global batches (W x 16 examples, one
/// shuffle per epoch from `seed`); leaves its last parameters in `last`,
/// and throws at its computation number `fail_at` (0: never).
class ring_replica : public optim::synthetic_replica<optim::lsq_problem> {
public:
  ring_replica(std::shared_ptr<const optim::lsq_problem> p, std::uint32_t w,
               std::uint32_t workers, std::uint64_t seed,
               std::shared_ptr<std::vector<float>> last, std::size_t fail_at)
      : synthetic_replica(std::move(p), all_examples(), batch, seed,
                          optim::batch_part{w, workers}),
        last_(std::move(last)), fail_at_(fail_at) {}
  ~ring_replica() override {
    *last_ = std::vector<float>(params(), params() + size());
  }
  optim::step_result compute() override {
    if (++computed_ == fail_at_)
      throw std::runtime_error("injected failure");
    return synthetic_replica::compute();
  }

private:
  std::shared_ptr<std::vector<float>> last_;
  std::size_t fail_at_, computed_ = 0;
};

struct ring_run {
  nlohmann::json out;
  std::vector<std::shared_ptr<std::vector<float>>> lasts;
  std::shared_ptr<std::vector<float>> final_params;
};

/// `steps` steps of all-reduce SGD (plain SGD, the rate halved every
/// steps / 5) by W workers from x = 0, under the scheduler seeded with
/// `seed`; worker `failing` throws at its step `fail_at` (if not 0).
ring_run run_ring(std::shared_ptr<const optim::lsq_problem> prob,
                  std::uint32_t workers, std::uint64_t steps,
                  std::uint64_t seed, std::uint32_t failing = 0,
                  std::size_t fail_at = 0) {
  auto job = test::lsq_job(prob, workers, 0, "sgd", lr, batch, steps, seed);
  auto a = test::install<algos::allreduce>(job);
  a->local.optimizer = {"sgd", 0, 0};
  a->local.lr = lr;
  a->local.schedule = test::decay(lr, steps / 5);
  ring_run r;
  for (std::uint32_t w = 0; w < workers; ++w)
    r.lasts.push_back(std::make_shared<std::vector<float>>());
  job.make_replica = [=, lasts = r.lasts](messages::worker_id w) {
    return std::make_unique<ring_replica>(prob, w, workers, seed, lasts[w],
                                          w == failing ? fail_at : 0);
  };
  r.final_params = job.final_params;
  r.out = test::run_seeded(std::move(job), seed + workers);
  return r;
}

/// One worker's SGD on the same global batches: W x 16 examples a step.
std::vector<float> single_worker(std::shared_ptr<const optim::lsq_problem> p,
                                 std::uint32_t workers, std::uint64_t steps,
                                 std::uint64_t seed) {
  optim::synthetic_replica<optim::lsq_problem> rep{p, all_examples(),
                                                   batch * workers, seed};
  auto opt = optim::make_optimizer<float>({"sgd", 0, 0}, rep.size());
  optim::schedule rate{test::decay(lr, steps / 5)};
  for (std::uint64_t k = 0; k < steps; ++k) {
    rep.compute();
    opt->step(rep.params(), rep.grads(), rep.size(), rate.lr(k));
  }
  return {rep.params(), rep.params() + rep.size()};
}

/// The same steps replayed in memory: each part's gradient times its
/// examples, summed by optim::ring_allreduce (in the order the workers
/// sum), over the step's examples: the update every worker applies.
std::vector<float> ring_replay(std::shared_ptr<const optim::lsq_problem> p,
                               std::uint32_t workers, std::uint64_t steps,
                               std::uint64_t seed) {
  using part = optim::synthetic_replica<optim::lsq_problem>;
  std::vector<std::unique_ptr<part>> parts;
  for (std::uint32_t w = 0; w < workers; ++w)
    parts.push_back(std::make_unique<part>(p, all_examples(), batch, seed,
                                           optim::batch_part{w, workers}));
  const std::size_t n = parts[0]->size();
  optim::ring_plan plan{workers, n};
  auto opt = optim::make_optimizer<float>({"sgd", 0, 0}, n);
  optim::schedule rate{test::decay(lr, steps / 5)};
  std::vector<float> x(n, 0.0f), mean(n);
  std::vector<std::vector<float>> sums(workers, std::vector<float>(n));
  std::vector<float*> buffers;
  for (auto& s : sums)
    buffers.push_back(s.data());
  for (std::uint64_t k = 0; k < steps; ++k) {
    std::uint64_t total = 0;
    for (std::uint32_t w = 0; w < workers; ++w) {
      std::copy(x.begin(), x.end(), parts[w]->params());
      auto r = parts[w]->compute();
      total += r.samples;
      const float* g = parts[w]->grads();
      for (std::size_t i = 0; i < n; ++i)
        sums[w][i] = workers == 1 ? g[i] : g[i] * static_cast<float>(r.samples);
    }
    optim::ring_allreduce(plan, buffers);
    for (std::size_t i = 0; i < n; ++i)
      mean[i]
          = workers == 1 ? sums[0][i] : sums[0][i] / static_cast<float>(total);
    opt->step(x.data(), mean.data(), n, rate.lr(k));
  }
  return x;
}

bool same_bits(const std::vector<float>& x, const std::vector<float>& y) {
  return x.size() == y.size()
         && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

} // namespace

TEST_CASE("all-reduce SGD: W = 1, 2, 3, 5 replicas end equal bit for bit, "
          "as one worker's SGD on the same global batches, near x*") {
  const std::uint64_t seed = 101, steps = 300;
  auto prob = test::lsq_512x20(seed);
  std::vector<float> zero(20, 0.0f);
  auto start = test::lsq_gap(*prob, zero);
  for (std::uint32_t workers : {1u, 2u, 3u, 5u}) {
    std::cout << "allreduce W=" << workers << ": problem seed " << seed
              << ", scheduler seed " << seed + workers << std::endl;
    INFO("W = " << workers);
    auto r = run_ring(prob, workers, steps, seed);
    INFO(r.out.dump().substr(0, 3000));
    REQUIRE_FALSE(r.out.contains("error"));
    for (std::uint32_t w = 0; w < workers; ++w) {
      INFO("worker " << w);
      CHECK(same_bits(*r.lasts[w], *r.lasts[0]));
      CHECK(r.out["worker_stats"][w]["steps"] == steps);
      CHECK(r.out["worker_stats"][w]["allreduces"]
            == (workers == 1 ? 0 : steps));
      CHECK(r.out["worker_stats"][w]["refused_chunks"] == 0);
    }
    // The evaluated mean of W equal models is that model.
    CHECK(same_bits(*r.final_params, *r.lasts[0]));
    // The ring's sums, replayed in memory: the same bits.
    CHECK(same_bits(*r.lasts[0], ring_replay(prob, workers, steps, seed)));
    // One worker's SGD on W x 16 examples a step: the same up to float
    // rounding (the sums' order differs), bit for bit with one worker.
    auto ref = single_worker(prob, workers, steps, seed);
    double worst = 0;
    for (std::size_t i = 0; i < ref.size(); ++i)
      worst = std::max(worst, double{std::abs((*r.lasts[0])[i] - ref[i])});
    std::cout << "  max |x - x_single| = " << worst << std::endl;
    if (workers == 1)
      CHECK(same_bits(*r.lasts[0], ref));
    CHECK(worst <= 1e-6); // a few float ulps (seen: 1.2e-7)
    auto gap = test::lsq_gap(*prob, *r.lasts[0]);
    std::cout << "  f - f* = " << gap << " from " << start << std::endl;
    CHECK(gap < 1e-3 * start);
  }
}

TEST_CASE("all-reduce SGD: each worker sends 2 (W - 1) messages a step, "
          "2 (W - 1) / W * d * 4 payload bytes up to the chunks' rounding") {
  const std::uint64_t seed = 103, steps = 20;
  auto prob = test::lsq_512x20(seed);
  const std::size_t d = 20;
  for (std::uint32_t workers : {2u, 3u, 4u, 7u}) {
    std::cout << "allreduce bytes W=" << workers << ": problem seed " << seed
              << ", scheduler seed " << seed + workers << std::endl;
    INFO("W = " << workers);
    auto r = run_ring(prob, workers, steps, seed);
    REQUIRE_FALSE(r.out.contains("error"));
    const double ideal = 2.0 * (workers - 1) / workers * d * 4;
    CHECK(r.out["allreduce"]["payload_bytes_per_step"].get<double>()
          == Approx(ideal));
    const auto header = messages::ring_chunk_header_bytes;
    CHECK(r.out["allreduce"]["header_bytes"] == header);
    optim::ring_plan plan{workers, d};
    for (std::uint32_t w = 0; w < workers; ++w) {
      INFO("worker " << w);
      const auto& s = r.out["worker_stats"][w];
      auto per_step = 2 * (workers - 1);
      CHECK(s["messages"].get<std::uint64_t>() == steps * per_step);
      auto bytes = s["bytes"].get<std::uint64_t>();
      REQUIRE(bytes % steps == 0);
      auto payload = bytes / steps - per_step * header;
      CHECK(payload == 4 * plan.elements_sent(w));
      // Two chunks (r + 1's and r + 2's) are not sent, each of d / W
      // values rounded down or up.
      CHECK(std::abs(static_cast<double>(payload) - ideal) <= 8.0);
    }
  }
}

TEST_CASE("all-reduce SGD: a worker that fails mid-job ends the job with "
          "an error, and its peers do not hang") {
  const std::uint64_t seed = 107;
  std::cout << "allreduce failure: problem seed " << seed << ", scheduler seed "
            << seed + 4 << std::endl;
  auto prob = test::lsq_512x20(seed);
  auto r = run_ring(prob, 4, 40, seed, 2, 10);
  INFO(r.out.dump().substr(0, 3000));
  REQUIRE(r.out.contains("error"));
  auto error = r.out["error"].get<std::string>();
  CHECK_THAT(error, Catch::Contains("injected failure")
                        || Catch::Contains("worker 2 left or died"));
  std::uint64_t most = 0;
  for (const auto& s : r.out["worker_stats"])
    most = std::max(most, s["steps"].get<std::uint64_t>());
  CHECK(most < 40);
}
