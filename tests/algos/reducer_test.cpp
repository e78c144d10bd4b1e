// All-reduce SGD with summable compression (--reducer, docs/algorithms.md
// "PowerSGD and ScaleCom") through the actors, under the seeded scheduler,
// on an mlp over a LOGREG set: ScaleCom sending every entry is dense
// all-reduce bit for bit; PowerSGD and ScaleCom keep the replicas equal bit
// for bit, send two all-reduces a step of far fewer values, and train the
// model as the dense ring does, ScaleCom with its low-pass filter too.

#include <cmath>
#include <cstring>
#include <iostream>

#include <catch2/catch.hpp>

#include "algos/allreduce/allreduce.hpp"
#include "algos/allreduce/sfb_reducer.hpp"
#include "harness.hpp"
#include "optim/replica_wrapper.hpp"

using namespace troupe;

namespace {

/// A model replica that leaves its last parameters in `last`.
class recorded_model : public optim::replica_wrapper {
public:
  recorded_model(std::unique_ptr<optim::replica> r,
                 std::shared_ptr<std::vector<float>> last)
      : replica_wrapper(std::move(r)), last_(std::move(last)) {}
  ~recorded_model() override {
    *last_ = std::vector<float>(params(), params() + size());
  }

private:
  std::shared_ptr<std::vector<float>> last_;
};

std::shared_ptr<const optim::dataset> data(std::uint64_t seed) {
  optim::logreg_options o;
  o.m = 960;
  o.d = 32;
  o.seed = seed;
  return std::make_shared<const optim::dataset>(
      optim::to_dataset(optim::make_logreg(o)));
}

struct run_out {
  nlohmann::json out;
  std::vector<std::shared_ptr<std::vector<float>>> lasts;
  double loss = 0; ///< of the final model on the whole set
};

/// `steps` all-reduce steps of 4 workers (mlp, SGD at 0.1, batch 16 each)
/// with `reduce`.
run_out run(std::shared_ptr<const optim::dataset> d, algos::reducer_options r,
            std::uint64_t steps, std::uint64_t seed) {
  const std::uint32_t workers = 4;
  actors::job_config job;
  auto a = test::install<algos::allreduce>(job);
  job.workers = workers;
  job.shards = 0;
  auto model = optim::make_model<float>("mlp", d->sample_shape, d->classes);
  model.init(seed);
  job.init = std::make_shared<const std::vector<float>>(
      model.params(), model.params() + model.size());
  run_out o;
  for (std::uint32_t w = 0; w < workers; ++w)
    o.lasts.push_back(std::make_shared<std::vector<float>>());
  job.make_replica = [=, lasts = o.lasts](messages::worker_id w) {
    std::vector<std::size_t> mine;
    for (std::size_t i = w; i < d->size(); i += workers)
      mine.push_back(i);
    return std::make_unique<recorded_model>(
        optim::make_model_replica("mlp", d, mine, 16, seed + w, seed),
        lasts[w]);
  };
  job.steps_per_worker = steps;
  job.final_params = std::make_shared<std::vector<float>>();
  a->local.optimizer = {"sgd", 0, 0};
  a->local.lr = 0.1;
  r.layers = model.ranges().ranges();
  r.seed = seed;
  a->reduce = r;
  o.out = test::run_seeded(std::move(job), seed);
  if (!o.lasts[0]->empty()) {
    std::vector<std::size_t> all(d->size());
    for (std::size_t i = 0; i < all.size(); ++i)
      all[i] = i;
    auto whole
        = optim::make_model_replica("mlp", d, all, all.size(), seed, seed);
    std::copy(o.lasts[0]->begin(), o.lasts[0]->end(), whole->params());
    o.loss = whole->compute().loss;
  }
  return o;
}

bool same_bits(const std::vector<float>& x, const std::vector<float>& y) {
  return x.size() == y.size()
         && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

} // namespace

TEST_CASE("ScaleCom sending every entry is the dense all-reduce, bit for "
          "bit") {
  const std::uint64_t seed = 61, steps = 30;
  std::cout << "scalecom = dense: seed " << seed << std::endl;
  auto d = data(seed);
  auto dense = run(d, {}, steps, seed);
  REQUIRE_FALSE(dense.out.contains("error"));
  algos::reducer_options all;
  all.kind = "scalecom";
  all.density = 1;
  auto sc = run(d, all, steps, seed);
  INFO(sc.out.dump().substr(0, 2000));
  REQUIRE_FALSE(sc.out.contains("error"));
  CHECK(same_bits(*sc.lasts[0], *dense.lasts[0]));
}

TEST_CASE("PowerSGD and ScaleCom: equal replicas, two small all-reduces a "
          "step, training as the dense ring does") {
  const std::uint64_t seed = 67, steps = 240;
  std::cout << "reducers: seed " << seed << std::endl;
  auto d = data(seed);
  auto dense = run(d, {}, steps, seed);
  REQUIRE_FALSE(dense.out.contains("error"));
  auto dense_bytes = dense.out["bytes_sent"].get<double>();
  std::cout << "  dense: loss " << dense.loss << ", " << dense.out["bytes_sent"]
            << " bytes" << std::endl;
  for (std::string kind : {"powersgd", "scalecom"}) {
    algos::reducer_options r;
    r.kind = kind;
    r.rank = 4;
    r.density = 0.05;
    auto o = run(d, r, steps, seed);
    INFO(kind << ": " << o.out.dump().substr(0, 2000));
    REQUIRE_FALSE(o.out.contains("error"));
    for (std::size_t w = 1; w < o.lasts.size(); ++w)
      CHECK(same_bits(*o.lasts[w], *o.lasts[0]));
    for (auto& s : o.out["worker_stats"]) {
      CHECK(s["steps"] == steps);
      CHECK(s["allreduces"] == steps);
      CHECK(s["messages"] == steps * 2 * 2 * 3); // 2 exchanges, 2 (W - 1)
      CHECK(s["refused_chunks"] == 0);
    }
    auto bytes = o.out["bytes_sent"].get<double>();
    std::cout << "  " << kind << ": loss " << o.loss << ", " << bytes
              << " bytes (" << bytes / dense_bytes << " of dense)" << std::endl;
    CHECK(bytes < 0.2 * dense_bytes);
    // Trained as far as the dense ring, give or take 10%: error feedback
    // sends what a step held back later.
    CHECK(o.loss < 1.1 * dense.loss);
  }
}

TEST_CASE("ScaleCom's low-pass filter on the memory (--scalecom-beta "
          "below 1) keeps replicas equal and trains as the dense ring does") {
  const std::uint64_t seed = 67, steps = 240;
  std::cout << "scalecom beta: seed " << seed << std::endl;
  auto d = data(seed);
  auto dense = run(d, {}, steps, seed);
  REQUIRE_FALSE(dense.out.contains("error"));
  algos::reducer_options r;
  r.kind = "scalecom";
  r.density = 0.05;
  auto plain = run(d, r, steps, seed); // beta 1: plain error feedback
  REQUIRE_FALSE(plain.out.contains("error"));
  r.beta = 0.5;
  auto o = run(d, r, steps, seed);
  INFO(o.out.dump().substr(0, 2000));
  REQUIRE_FALSE(o.out.contains("error"));
  CHECK(o.out["allreduce"]["beta"] == 0.5);
  for (std::size_t w = 1; w < o.lasts.size(); ++w)
    CHECK(same_bits(*o.lasts[w], *o.lasts[0]));
  CHECK_FALSE(same_bits(*o.lasts[0], *plain.lasts[0])); // the filter acts
  std::cout << "  scalecom beta 0.5: loss " << o.loss << " (beta 1 "
            << plain.loss << ", dense " << dense.loss << ")" << std::endl;
  CHECK(o.loss < 1.1 * dense.loss);
}

TEST_CASE("SFB: one step's mean from every worker's factors is the dense "
          "mean, and every worker rebuilds the same one") {
  const std::uint64_t seed = 79;
  std::cout << "sfb step: seed " << seed << std::endl;
  auto d = data(seed);
  const std::uint32_t workers = 3;
  auto model = optim::make_model<float>("mlp", d->sample_shape, d->classes);
  model.init(seed);
  algos::reducer_options r;
  r.kind = "sfb";
  r.sfb_layers = "all";
  r.batch = 16;
  r.fc = optim::fc_layers(model);
  auto n = model.size();
  std::vector<std::unique_ptr<optim::replica>> reps;
  std::vector<std::unique_ptr<algos::reducer>> sfb, dense;
  algos::reducer_options plain;
  for (std::uint32_t w = 0; w < workers; ++w) {
    std::vector<std::size_t> mine;
    for (std::size_t i = w; i < d->size(); i += workers)
      mine.push_back(i);
    // The last worker's batch is short: its slot is padded with zeros.
    reps.push_back(optim::make_model_replica(
        "mlp", d, mine, w + 1 == workers ? 11 : 16, seed + w, seed));
    sfb.push_back(algos::make_reducer(r, n, workers, w));
    dense.push_back(algos::make_reducer(plain, n, workers, w));
  }
  REQUIRE(sfb[0]->exchanges() == 1);
  auto len = sfb[0]->length(0);
  // Every weight of the three dense layers travels as factors: the plain
  // part is the biases.
  std::size_t biases = 0, slots = 0;
  for (const auto& l : r.fc) {
    biases += l.out;
    slots += 16 * (l.out + l.in);
  }
  CHECK(len == biases + workers * slots);
  CHECK(algos::reducer_values(r, n, workers) == len);
  std::vector<float> sum(len, 0.0f), dense_sum(n, 0.0f), part(len), dpart(n);
  std::uint64_t total = 0;
  for (std::uint32_t w = 0; w < workers; ++w) {
    auto& rep = *reps[w];
    auto samples = static_cast<std::uint32_t>(rep.compute().samples);
    total += samples;
    auto pass = rep.last_pass();
    REQUIRE(pass.model != nullptr);
    REQUIRE(sfb[w]->wants_pass());
    sfb[w]->take_pass(*pass.model, *pass.batch);
    sfb[w]->begin(0, rep.grads(), samples, part.data());
    dense[w]->begin(0, rep.grads(), samples, dpart.data());
    for (std::size_t i = 0; i < len; ++i)
      sum[i] += part[i];
    for (std::size_t i = 0; i < n; ++i)
      dense_sum[i] += dpart[i];
  }
  CHECK(total == 16 + 16 + 11);
  std::vector<float> want(n), got(n), other(n);
  std::string problem;
  dense[0]->next(0, dense_sum.data(), total, nullptr, want.data(), problem);
  REQUIRE_FALSE(
      sfb[0]->next(0, sum.data(), total, nullptr, got.data(), problem));
  REQUIRE(problem.empty());
  double err = 0, scale = 0;
  for (std::size_t i = 0; i < n; ++i) {
    err = std::max(err, std::abs(double{got[i]} - double{want[i]}));
    scale = std::max(scale, std::abs(double{want[i]}));
  }
  std::cout << "  max |sfb - dense| " << err << " of " << scale << std::endl;
  CHECK(err <= 1e-6 * scale);
  // Another worker rebuilds from the same sum: the same bits.
  sfb[2]->next(0, sum.data(), total, nullptr, other.data(), problem);
  CHECK(same_bits(got, other));
}

TEST_CASE("SFB through the ring: equal replicas, Poseidon's layer, training "
          "as the dense ring does") {
  const std::uint64_t seed = 83, steps = 120;
  std::cout << "sfb ring: seed " << seed << std::endl;
  auto d = data(seed);
  auto dense = run(d, {}, steps, seed);
  REQUIRE_FALSE(dense.out.contains("error"));
  auto model = optim::make_model<float>("mlp", d->sample_shape, d->classes);
  algos::reducer_options r;
  r.kind = "sfb";
  r.batch = 16;
  r.fc = optim::fc_layers(model);
  // 32 -> 256 -> 128 -> 2 with batches of 16 on 4 workers: only the
  // middle layer's factors (4 x 16 x 384) are fewer than its matrix (32,768).
  auto chosen = algos::sfb_chosen(r, 4);
  REQUIRE(chosen.size() == 1);
  CHECK(chosen[0].out == 128);
  CHECK(chosen[0].in == 256);
  for (std::string layers : {"auto", "all"}) {
    r.sfb_layers = layers;
    auto o = run(d, r, steps, seed);
    INFO(layers << ": " << o.out.dump().substr(0, 2000));
    REQUIRE_FALSE(o.out.contains("error"));
    for (std::size_t w = 1; w < o.lasts.size(); ++w)
      CHECK(same_bits(*o.lasts[w], *o.lasts[0]));
    for (auto& s : o.out["worker_stats"]) {
      CHECK(s["steps"] == steps);
      CHECK(s["messages"] == steps * 2 * 3); // one exchange, 2 (W - 1)
    }
    auto ratio = o.out["bytes_sent"].get<double>()
                 / dense.out["bytes_sent"].get<double>();
    std::cout << "  sfb " << layers << ": loss " << o.loss << " (dense "
              << dense.loss << "), " << ratio << " of dense's bytes"
              << std::endl;
    // Exact in exact arithmetic: only the sums' rounding differs.
    CHECK(std::abs(o.loss - dense.loss) <= 1e-3 * dense.loss);
    double diff = 0;
    for (std::size_t i = 0; i < o.lasts[0]->size(); ++i)
      diff = std::max(
          diff, double{std::abs((*o.lasts[0])[i] - (*dense.lasts[0])[i])});
    CHECK(diff < 1e-3);
    if (layers == "auto")
      CHECK(ratio < 0.95); // the middle layer's 32,768 values as 24,576
    else
      CHECK(ratio > 1.0); // the first layer's factors cost more: no choice
  }
}

TEST_CASE("--reducer's flags are checked by name") {
  algos::reducer_options r;
  r.kind = "lowrank";
  CHECK_THROWS_WITH(algos::check_reducer(r), Catch::Contains("--reducer"));
  r.kind = "powersgd";
  r.rank = 0;
  CHECK_THROWS_WITH(algos::check_reducer(r),
                    Catch::Contains("--powersgd-rank"));
  r.rank = 4;
  r.kind = "scalecom";
  r.density = 0;
  CHECK_THROWS_WITH(algos::check_reducer(r),
                    Catch::Contains("--scalecom-density"));
  r.density = 0.05;
  for (double beta : {0.0, -0.5, 1.5, std::nan("")}) {
    r.beta = beta;
    INFO("beta " << beta);
    CHECK_THROWS_WITH(algos::check_reducer(r),
                      Catch::Contains("--scalecom-beta"));
  }
  r.beta = 0.1;
  CHECK_NOTHROW(algos::check_reducer(r));
  algos::allreduce a;
  algos::job_options o;
  CHECK_THROWS_WITH(a.check_flags(o, {"powersgd-rank"}),
                    Catch::Contains("--reducer=powersgd"));
  CHECK_THROWS_WITH(a.check_flags(o, {"scalecom-beta"}),
                    Catch::Contains("--reducer=scalecom"));
  CHECK_THROWS_WITH(a.check_flags(o, {"sfb-layers"}),
                    Catch::Contains("--reducer=sfb"));
  algos::reducer_options bad;
  bad.kind = "sfb";
  bad.sfb_layers = "some";
  CHECK_THROWS_WITH(algos::check_reducer(bad), Catch::Contains("--sfb-layers"));
}
