// 1F1B with weight stashing: each micro-batch's backward runs on the
// weights its forward saw, and gives the whole model's gradient at those
// weights; without stashing it does not. And a stage refuses a backward
// or forward out of turn.

#include <cstring>
#include <iostream>

#include <catch2/catch.hpp>

#include "pipeline_fixture.hpp"

using namespace troupe::optim;
using namespace troupe::test::pipeline;
using Catch::Matchers::Contains;

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
  std::cout << "pipeline stash test seed " << seed + 2 << "\n";
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
