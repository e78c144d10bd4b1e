// A model cut into pipeline stages computes what the whole model computes:
// bit-equal gradients with one micro-batch, whatever the cut (dropout
// included), and the full batch's gradient summed over GPipe's
// micro-batches. Weight stashing: pipeline_stash_test.cpp.

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
#include "pipeline_fixture.hpp"

using namespace troupe::optim;
using namespace troupe::test::pipeline;
using Catch::Matchers::Contains;

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

TEST_CASE("the cut does not change the result, dropout included",
          "[pipeline]") {
  // Dropout's masks are drawn per micro-batch and per layer as in the
  // whole model: any cut gives the same gradients, bit for bit.
  const std::string model
      = R"({"layers": [{"type": "dense", "units": 64}, {"type": "relu"},
           {"type": "dropout", "p": 0.5}, {"type": "dense", "units": 32},
           {"type": "relu"}, {"type": "dropout", "p": 0.25},
           {"type": "dense", "units": "classes"}]})";
  rng gen{seed + 3};
  auto whole = build_model<double>(model, image, 10);
  whole.init(seed);
  const auto parts = split(random_batch(24, gen), 3);
  const auto layers = profile_layers(model, image, 10, 0);
  std::vector<std::vector<double>> grads;
  for (std::size_t s : {1, 2, 3, 5, 7}) {
    std::vector<pipeline_stage<double>> stages;
    for (const auto& p : cut_balanced(layers, s)) {
      auto m = build_stage<double>(model, image, 10, p.first, p.last);
      std::copy_n(whole.params() + p.param_offset, p.param_size, m.params());
      stages.emplace_back(std::move(m), false, seed);
    }
    run_step(stages, pipeline_schedule::gpipe, parts, 24);
    std::vector<double> g;
    for (auto& st : stages)
      g.insert(g.end(), st.grad_sum().begin(), st.grad_sum().end());
    INFO(s << " stages");
    if (!grads.empty())
      CHECK(g == grads.front());
    grads.push_back(std::move(g));
  }
  // And the masks are live: another seed gives another gradient.
  std::vector<pipeline_stage<double>> other;
  for (const auto& p : cut_balanced(layers, 2)) {
    auto m = build_stage<double>(model, image, 10, p.first, p.last);
    std::copy_n(whole.params() + p.param_offset, p.param_size, m.params());
    other.emplace_back(std::move(m), false, seed + 1);
  }
  run_step(other, pipeline_schedule::gpipe, parts, 24);
  std::vector<double> g;
  for (auto& st : other)
    g.insert(g.end(), st.grad_sum().begin(), st.grad_sum().end());
  CHECK(g != grads.front());
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
