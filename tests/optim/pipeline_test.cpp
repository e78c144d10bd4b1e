// A model cut into pipeline stages computes what the whole model computes:
// bit-equal gradients with one micro-batch, the full batch's gradient summed
// over GPipe's micro-batches, and (1F1B) every backward on the weights its
// forward saw when weights are stashed.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "optim/model_spec.hpp"
#include "optim/pipeline.hpp"
#include "optim/pipeline_stage.hpp"
#include "optim/rng.hpp"

using namespace troupe::optim;
using Catch::Matchers::Contains;

namespace {

constexpr std::uint64_t seed = 20261127;
const shape image{1, 28, 28};

struct batch {
  matrix<double> x;
  std::vector<std::int32_t> y;
};

batch random_batch(int n, rng& gen) {
  batch b;
  b.x.resize(static_cast<Eigen::Index>(image.size()), n);
  for (Eigen::Index i = 0; i < b.x.size(); ++i)
    b.x.data()[i] = gen.uniform();
  for (int i = 0; i < n; ++i)
    b.y.push_back(static_cast<std::int32_t>(gen.below(10)));
  return b;
}

// The stages of `plan`, their weights copied from `whole`.
std::vector<pipeline_stage<double>>
make_stages(const std::string& model, const std::vector<stage_plan>& plan,
            const sequential<double>& whole, bool stash) {
  std::vector<pipeline_stage<double>> out;
  for (const auto& p : plan) {
    auto m = build_stage<double>(model, image, 10, p.first, p.last);
    REQUIRE(m.param_offset() == p.param_offset);
    REQUIRE(m.size() == p.param_size);
    std::copy_n(whole.params() + p.param_offset, p.param_size, m.params());
    out.emplace_back(std::move(m), stash, seed);
  }
  return out;
}

// The micro-batches of `b`: columns [i * n / m, (i + 1) * n / m).
std::vector<batch> split(const batch& b, std::size_t m) {
  std::vector<batch> out;
  const auto n = static_cast<std::size_t>(b.x.cols());
  for (std::size_t i = 0; i < m; ++i) {
    const auto lo = i * n / m;
    const auto hi = (i + 1) * n / m;
    batch part;
    part.x = b.x.middleCols(static_cast<Eigen::Index>(lo),
                            static_cast<Eigen::Index>(hi - lo));
    part.y.assign(b.y.begin() + lo, b.y.begin() + hi);
    out.push_back(std::move(part));
  }
  return out;
}

// Runs a step of `parts` through `stages`, scaled by each part's share of
// `total` samples; no update.
std::vector<double> run_step(std::vector<pipeline_stage<double>>& stages,
                             pipeline_schedule sched,
                             const std::vector<batch>& parts,
                             std::size_t total) {
  pipeline_feed<double> feed;
  feed.input
      = [&](std::size_t m) -> const matrix<double>& { return parts[m].x; };
  feed.targets = [&](std::size_t m) {
    return batch_targets{parts[m].y.data(), nullptr};
  };
  feed.scale = [&](std::size_t m) {
    return static_cast<double>(parts[m].x.cols()) / total;
  };
  feed.update = [](std::size_t) {};
  return run_pipeline(stages, sched, parts.size(), feed);
}

} // namespace

TEST_CASE("a stage keeps the whole model's names and slice", "[pipeline]") {
  auto whole = build_model<double>("lenet", image, 10);
  const auto layers = profile_layers("lenet", image, 10, 0);
  REQUIRE(layers.size() == whole.layers().size());
  for (std::size_t i = 0; i < layers.size(); ++i) {
    CHECK(layers[i].name == whole.names()[i]);
    auto m = build_stage<double>("lenet", image, 10, i, i + 1);
    CHECK(m.names().front() == whole.names()[i]);
    CHECK(m.param_offset() == layers[i].offset);
    CHECK(m.full_size() == whole.size());
    CHECK(m.ends_model() == (i + 1 == layers.size()));
    for (const auto& r : m.ranges().ranges()) {
      auto w = whole.ranges().find(r.name);
      REQUIRE(w);
      CHECK(w->offset == m.param_offset() + r.offset);
      CHECK(w->size == r.size);
    }
  }
  CHECK_THROWS_WITH(build_stage<double>("lenet", image, 10, 3, 3),
                    Contains("a stage of layers [3, 3)"));
  CHECK_THROWS_WITH(build_stage<double>("mlp", image, 10, 2, 9),
                    Contains("with 5 layers"));
}

TEST_CASE("cuts balance cost and respect the parameter budget", "[pipeline]") {
  const auto layers = profile_layers("mlp", image, 10, 0);
  // mlp: dense1 200960, relu1, dense2 32896, relu2, dense3 1290.
  REQUIRE(layers.size() == 5);
  const auto two = cut_balanced(layers, 2);
  REQUIRE(two.size() == 2);
  CHECK(two[0].first == 0);
  CHECK(two[0].last == 1);
  CHECK(two[1].param_offset == 200960);
  CHECK(two[1].in_values == 256);
  CHECK(describe_cut(layers, two) == "dense1 | relu1..dense3");
  // Every layer its own stage.
  const auto five = cut_balanced(layers, 5);
  for (std::size_t s = 0; s < 5; ++s)
    CHECK(five[s].last == s + 1);
  CHECK_THROWS_WITH(cut_balanced(layers, 6), Contains("5 layers into 6"));
  CHECK_THROWS_WITH(cut_balanced(layers, 2, 100000),
                    Contains("dense1 alone has 200960 parameters"));
  // 210000 fits dense1 with nothing after it except the relu.
  const auto fit = cut_balanced(layers, 2, 210000);
  CHECK(fit[0].param_size <= 210000);
  CHECK(fit[1].param_size <= 210000);
  CHECK_THROWS_WITH(cut_balanced(layers, 1, 210000),
                    Contains("no cut into 1 stages"));

  const auto at = cut_at(layers, {"relu1", "dense3"});
  REQUIRE(at.size() == 3);
  CHECK(describe_cut(layers, at) == "dense1 | relu1..relu2 | dense3");
  CHECK_THROWS_WITH(cut_at(layers, {"conv1"}),
                    Contains("no layer named \"conv1\"")
                        && Contains("dense1, relu1, dense2, relu2, dense3"));
  CHECK_THROWS_WITH(cut_at(layers, {"dense3", "relu1"}),
                    Contains("model's order"));
  CHECK_THROWS_WITH(cut_at(layers, {"dense1"}), Contains("first layer"));
  CHECK_THROWS_WITH(cut_at(layers, {"dense3"}, 100000),
                    Contains("stage 0 (dense1..relu2) would hold 233856"));

  // Measured costs: every layer costs something, and the cut still covers
  // the model once.
  const auto timed = profile_layers("lenet", image, 10, 8);
  for (const auto& l : timed)
    CHECK(l.cost > 0);
  const auto cut = cut_balanced(timed, 3);
  CHECK(cut.front().first == 0);
  CHECK(cut.back().last == timed.size());
  for (std::size_t s = 1; s < cut.size(); ++s)
    CHECK(cut[s].first == cut[s - 1].last);
}

TEST_CASE("one micro-batch through S stages: gradients bit-equal to the "
          "whole model",
          "[pipeline]") {
  std::cout << "pipeline_test seed " << seed << "\n";
  for (const std::string model : {"mlp", "lenet"}) {
    rng gen{seed};
    auto whole = build_model<double>(model, image, 10);
    whole.init(seed);
    const auto b = random_batch(16, gen);
    const double loss = whole.loss_and_gradient(b.x, b.y.data());
    const auto layers = profile_layers(model, image, 10, 0);
    for (std::size_t s = 1; s <= std::min<std::size_t>(layers.size(), 5); ++s) {
      for (auto sched :
           {pipeline_schedule::gpipe, pipeline_schedule::one_f_one_b}) {
        INFO(model << ", " << s << " stages, " << to_string(sched));
        const auto plan = cut_balanced(layers, s);
        auto stages = make_stages(model, plan, whole, false);
        const auto losses = run_step(stages, sched, {b}, 16);
        CHECK(losses.at(0) == loss);
        for (std::size_t i = 0; i < plan.size(); ++i) {
          double d = 0;
          for (std::size_t j = 0; j < plan[i].param_size; ++j)
            d = std::max(d,
                         std::abs(stages[i].grad_sum()[j]
                                  - whole.grads()[plan[i].param_offset + j]));
          INFO("stage " << i << " " << layers[plan[i].first].name << " diff "
                        << d);
          CHECK((plan[i].param_size == 0 // (a stage of a relu: no memcmp)
                 || std::memcmp(stages[i].grad_sum().data(),
                                whole.grads() + plan[i].param_offset,
                                plan[i].param_size * sizeof(double))
                        == 0));
        }
      }
    }
  }
}

TEST_CASE("GPipe: the micro-batches' summed gradient is the batch's",
          "[pipeline]") {
  rng gen{seed + 1};
  auto whole = build_model<double>("lenet", image, 10);
  whole.init(seed);
  const auto b = random_batch(24, gen);
  const double loss = whole.loss_and_gradient(b.x, b.y.data());
  double scale = 0;
  for (std::size_t i = 0; i < whole.size(); ++i)
    scale = std::max(scale, std::abs(whole.grads()[i]));
  const auto layers = profile_layers("lenet", image, 10, 0);
  for (std::size_t s : {2, 4}) {
    for (std::size_t m : {2, 5, 8}) {
      INFO(s << " stages, " << m << " micro-batches");
      const auto plan = cut_balanced(layers, s);
      auto stages = make_stages("lenet", plan, whole, false);
      const auto parts = split(b, m);
      const auto losses = run_step(stages, pipeline_schedule::gpipe, parts, 24);
      double mean = 0;
      for (std::size_t i = 0; i < m; ++i)
        mean += losses[i] * static_cast<double>(parts[i].x.cols()) / 24;
      CHECK(std::abs(mean - loss) < 1e-12);
      double worst = 0;
      for (std::size_t i = 0; i < plan.size(); ++i)
        for (std::size_t j = 0; j < plan[i].param_size; ++j)
          worst = std::max(worst,
                           std::abs(stages[i].grad_sum()[j]
                                    - whole.grads()[plan[i].param_offset + j]));
      CHECK(worst <= 1e-12 * std::max(1.0, scale));
      // Each stage but the last recomputes every forward but the one its
      // first backward follows directly (GPipe's re-materialization).
      for (std::size_t i = 0; i + 1 < plan.size(); ++i)
        CHECK(stages[i].recomputed() >= m - 1);
      CHECK(stages.back().recomputed() == 0);
    }
  }
}

namespace {

// A 1F1B run of `micros` micro-batches of 4 samples with an SGD update after
// every backward; for every micro-batch and stage, the gradient it gave and
// the versions its forward and backward ran on.
struct f1b_run {
  std::vector<std::vector<std::vector<double>>> weights; // [s][version]
  std::vector<std::vector<std::vector<double>>> grads;   // [s][micro]
  std::vector<std::vector<std::uint64_t>> forward;       // [s][micro]
  std::vector<std::vector<std::uint64_t>> backward;      // [s][micro]
};

f1b_run run_1f1b(const std::vector<batch>& parts,
                 const std::vector<stage_plan>& plan,
                 const sequential<double>& whole, bool stash) {
  auto stages = make_stages("mlp", plan, whole, stash);
  const std::size_t n = stages.size();
  f1b_run r;
  r.weights.resize(n);
  r.grads.resize(n);
  r.forward.resize(n);
  r.backward.resize(n);
  for (std::size_t s = 0; s < n; ++s) {
    auto& m = stages[s].model();
    r.weights[s].emplace_back(m.params(), m.params() + m.size());
  }
  pipeline_feed<double> feed;
  feed.input
      = [&](std::size_t m) -> const matrix<double>& { return parts[m].x; };
  feed.targets = [&](std::size_t m) {
    return batch_targets{parts[m].y.data(), nullptr};
  };
  feed.scale = [](std::size_t) { return 1.0; };
  feed.update = [&](std::size_t s) {
    auto& st = stages[s];
    r.grads[s].push_back(st.grad_sum());
    r.forward[s].push_back(st.last_forward_version());
    r.backward[s].push_back(st.last_backward_version());
    auto* p = st.model().params();
    for (std::size_t i = 0; i < st.grad_sum().size(); ++i)
      p[i] -= 0.05 * st.grad_sum()[i];
    st.clear_grads();
    st.bump_version();
    r.weights[s].emplace_back(p, p + st.model().size());
  };
  run_pipeline(stages, pipeline_schedule::one_f_one_b, parts.size(), feed);
  return r;
}

// The whole model's gradient on micro-batch `m` with every stage's weights
// at the version its forward saw.
std::vector<double> reference(const f1b_run& r, std::size_t m,
                              const std::vector<stage_plan>& plan,
                              const batch& part) {
  auto whole = build_model<double>("mlp", image, 10);
  for (std::size_t s = 0; s < plan.size(); ++s) {
    const auto& w = r.weights[s][r.forward[s][m]];
    std::copy(w.begin(), w.end(), whole.params() + plan[s].param_offset);
  }
  whole.loss_and_gradient(part.x, part.y.data());
  return {whole.grads(), whole.grads() + whole.size()};
}

} // namespace

TEST_CASE("1F1B with weight stashing: each backward on its forward's "
          "weights",
          "[pipeline]") {
  rng gen{seed + 2};
  auto whole = build_model<double>("mlp", image, 10);
  whole.init(seed);
  const auto parts = split(random_batch(40, gen), 10);
  const auto plan
      = cut_at(profile_layers("mlp", image, 10, 0), {"relu1", "dense3"});
  const std::size_t n = plan.size();

  const auto stashed = run_1f1b(parts, plan, whole, true);
  std::size_t stale = 0;
  for (std::size_t m = 0; m < parts.size(); ++m) {
    INFO("micro-batch " << m);
    for (std::size_t s = 0; s < n; ++s) {
      CHECK(stashed.backward[s][m] == stashed.forward[s][m]);
      // Updates (one per backward before) came between forward and backward.
      stale += stashed.forward[s][m] < m ? 1 : 0;
    }
    const auto ref = reference(stashed, m, plan, parts[m]);
    for (std::size_t s = 0; s < n; ++s)
      CHECK(std::memcmp(stashed.grads[s][m].data(),
                        ref.data() + plan[s].param_offset,
                        plan[s].param_size * sizeof(double))
            == 0);
  }
  // Stage 0 of 3 runs two micro-batches ahead: its weights moved under
  // most of them.
  CHECK(stale >= parts.size() - 2);

  // Without stashing a backward runs on newer weights than its forward, and
  // its gradient is not the one of the weights that made the loss.
  const auto plain = run_1f1b(parts, plan, whole, false);
  std::size_t mismatched = 0;
  std::size_t differ = 0;
  for (std::size_t m = 0; m < parts.size(); ++m) {
    const auto ref = reference(plain, m, plan, parts[m]);
    for (std::size_t s = 0; s < n; ++s) {
      if (plain.backward[s][m] == plain.forward[s][m])
        continue;
      ++mismatched;
      double worst = 0;
      for (std::size_t j = 0; j < plan[s].param_size; ++j)
        worst = std::max(worst, std::abs(plain.grads[s][m][j]
                                         - ref[plan[s].param_offset + j]));
      differ += worst > 1e-9 ? 1 : 0;
    }
  }
  CHECK(mismatched >= parts.size() - 2);
  CHECK(differ == mismatched);
}

TEST_CASE("a stage refuses what is not in flight", "[pipeline]") {
  auto whole = build_model<double>("mlp", image, 10);
  whole.init(seed);
  const auto plan = cut_balanced(profile_layers("mlp", image, 10, 0), 2);
  auto stages = make_stages("mlp", plan, whole, true);
  rng gen{seed};
  const auto b = random_batch(2, gen);
  matrix<double> dout = matrix<double>::Zero(256, 2);
  CHECK_THROWS_WITH(stages[0].backward(7, dout, nullptr),
                    Contains("micro-batch 7, which is not in flight"));
  stages[0].forward(7, b.x);
  CHECK_THROWS_WITH(stages[0].forward(7, b.x),
                    Contains("micro-batch 7 is already in flight"));
  matrix<double> wrong = matrix<double>::Zero(10, 2);
  CHECK_THROWS_WITH(stages[0].backward(7, wrong, nullptr),
                    Contains("output gradient of 10 x 2"));
  CHECK_THROWS_WITH(stages[0].forward(8, matrix<double>::Zero(3, 2)),
                    Contains("input has 3 rows"));
  CHECK(stages[0].in_flight() == 1);
  stages[0].drop_in_flight();
  CHECK(stages[0].in_flight() == 0);
  CHECK_THROWS_AS(parse_pipeline_schedule("pipedream"), std::invalid_argument);
  CHECK(parse_pipeline_schedule("1f1b") == pipeline_schedule::one_f_one_b);
}
