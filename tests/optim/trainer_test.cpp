// The shared training step and evaluation.

#include <iostream>
#include <numeric>

#include <catch2/catch.hpp>

#include "optim/synthetic.hpp"
#include "optim/trainer.hpp"

using namespace troupe::optim;

namespace {

std::vector<std::size_t> all_of(const dataset& d) {
  std::vector<std::size_t> idx(d.size());
  std::iota(idx.begin(), idx.end(), std::size_t{0});
  return idx;
}

dataset logreg_data(std::uint64_t seed) {
  logreg_options opts;
  opts.m = 2048;
  opts.d = 16;
  opts.seed = seed;
  return to_dataset(make_logreg(opts));
}

schedule constant_lr(double lr) {
  schedule_options s;
  s.base_lr = lr;
  return schedule{s};
}

} // namespace

TEST_CASE("evaluate counts correct arg-max predictions exactly") {
  std::uint64_t seed = 3;
  std::cout << "evaluate seed " << seed << '\n';
  auto data = logreg_data(seed);
  auto model = make_model<float>("logreg", data.sample_shape, data.classes);
  model.init(seed);
  auto eval = evaluate(model, data, 333); // chunk not dividing the size
  const auto& logits = model.forward(data.x);
  std::size_t correct = 0;
  double loss = 0;
  for (Eigen::Index j = 0; j < logits.cols(); ++j) {
    Eigen::Index arg;
    logits.col(j).maxCoeff(&arg);
    correct += arg == data.labels[static_cast<std::size_t>(j)];
    auto col = logits.col(j).cast<double>();
    auto lse
        = std::log((col.array() - col.maxCoeff()).exp().sum()) + col.maxCoeff();
    loss += lse - col(data.labels[static_cast<std::size_t>(j)]);
  }
  CHECK(eval.samples == data.size());
  CHECK(eval.accuracy == Approx(double(correct) / data.size()).epsilon(0));
  CHECK(eval.loss == Approx(loss / data.size()).epsilon(1e-5));
}

TEST_CASE("local_trainer learns a linearly separable-ish problem") {
  std::uint64_t seed = 5;
  std::cout << "trainer seed " << seed << '\n';
  auto data = logreg_data(seed);
  auto model = make_model<float>("logreg", data.sample_shape, data.classes);
  model.init(seed);
  auto before = evaluate(model, data);
  optimizer_options opt;
  opt.name = "momentum";
  local_trainer t{model, data, all_of(data), 32, opt, constant_lr(0.05), seed};
  while (t.epoch() < 5)
    t.step();
  auto after = evaluate(model, data);
  CHECK(t.steps() == 5 * t.batches_per_epoch());
  CHECK(after.loss < 0.8 * before.loss);
  // Labels are drawn from sigmoid(a . x_true) with margins of std ~2, so the
  // Bayes accuracy is about 0.8; a trained linear model must get close.
  CHECK(after.accuracy > 0.75);
}

TEST_CASE("local_trainer with the same seed is bitwise reproducible") {
  std::uint64_t seed = GENERATE(11, 12);
  std::cout << "reproducibility seed " << seed << '\n';
  auto data = logreg_data(1);
  auto run = [&] {
    auto model = make_model<float>("mlp", data.sample_shape, data.classes);
    model.init(seed);
    optimizer_options opt;
    opt.name = "adam";
    local_trainer t{model, data, all_of(data), 64, opt, constant_lr(1e-3),
                    seed};
    for (int i = 0; i < 100; ++i)
      t.step();
    return flat_storage<float>(model.params(), model.params() + model.size());
  };
  auto a = run();
  auto b = run();
  CHECK(std::equal(a.begin(), a.end(), b.begin()));
}

TEST_CASE("a non-finite loss throws before the update is applied") {
  auto data = logreg_data(2);
  auto model = make_model<float>("logreg", data.sample_shape, data.classes);
  model.init(2);
  data.x(0, 7) = std::numeric_limits<float>::quiet_NaN(); // poison examples
  data.x(0, 8) = std::numeric_limits<float>::infinity();
  flat_storage<float> before(model.params(), model.params() + model.size());
  optimizer_options opt;
  opt.name = "sgd";
  local_trainer t{model, data, {7, 8}, 2, opt, constant_lr(0.1), 2};
  CHECK_THROWS_AS(t.step(), std::domain_error);
  CHECK(t.steps() == 0);
  CHECK(std::equal(before.begin(), before.end(), model.params()));
}

TEST_CASE("local_trainer refuses data that does not fit the model") {
  auto data = logreg_data(2);
  auto model = make_model<float>("mlp"); // expects 28x28 images
  optimizer_options opt;
  CHECK_THROWS_WITH(
      local_trainer(model, data, all_of(data), 8, opt, constant_lr(0.1), 1),
      Catch::Contains("16 features") && Catch::Contains("784"));
  data.labels.clear();
  auto lin = make_model<float>("logreg", data.sample_shape, 2);
  CHECK_THROWS_WITH(
      local_trainer(lin, data, all_of(data), 8, opt, constant_lr(0.1), 1),
      Catch::Contains("no class labels") || Catch::Contains("has none"));
}
