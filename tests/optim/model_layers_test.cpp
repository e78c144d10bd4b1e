// The layers and losses of issue [13]'s second part: dropout, batch norm,
// embedding, residual blocks, binary cross-entropy and mean squared error.
// Every parameter gradient of a model built from a description is checked
// against central differences in double precision, in the training pass the
// gradient belongs to (dropout's mask held by reseeding, batch norm on batch
// statistics).

#include <cmath>
#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include <Eigen/Dense>
#include <catch2/catch.hpp>

#include "grad_check.hpp"
#include "optim/loss.hpp"
#include "optim/model_spec.hpp"
#include "optim/sequential.hpp"
#include "optim/synthetic.hpp"
#include "optim/trainer.hpp"
#include "tolerances.hpp"

using namespace troupe::optim;
namespace tol = troupe::test;

namespace {

matrix<double> uniform_batch(std::size_t rows, int batch, rng& gen,
                             double lo = -1, double hi = 1) {
  matrix<double> x(static_cast<Eigen::Index>(rows), batch);
  for (Eigen::Index i = 0; i < x.size(); ++i)
    x.data()[i] = gen.uniform(lo, hi);
  return x;
}

/// Checks every parameter gradient of `m` (finalized, initialized) at `x`
/// against central differences of the training-pass loss; `noise` reseeds
/// the dropout masks before every pass so they stay the same.
void check_model(sequential<double>& m, const matrix<double>& x,
                 batch_targets t, std::uint64_t noise) {
  auto loss = [&] {
    m.seed_noise(noise);
    return m.loss_and_gradient(x, t);
  };
  loss();
  const std::vector<double> analytic(m.grads(), m.grads() + m.size());
  tol::grad_comparison cmp;
  for (std::size_t i = 0; i < m.size(); ++i)
    cmp.add("param[" + std::to_string(i) + "]", analytic[i],
            tol::central_difference(loss, m.params()[i]));
  INFO(cmp.report());
  CHECK(cmp.scale() > 0);
  CHECK(cmp.worst() < tol::layer_grad_rel);
}

} // namespace

TEST_CASE("gradients of models with the new layers and losses") {
  struct model_case {
    const char* description;
    shape input;
    int classes;
    bool ids; ///< inputs are ids in [0, 7)
  };
  const model_case cases[] = {
      // batch norm over features, a residual block holding dropout
      {R"({"layers": [{"type": "dense", "units": 6},
                      {"type": "batch_norm"}, {"type": "tanh"},
                      {"type": "residual", "layers": [
                        {"type": "dense", "units": 6}, {"type": "gelu"},
                        {"type": "dropout", "p": 0.3}]},
                      {"type": "dense", "units": "classes"}]})",
       shape{5, 1, 1}, 3, false},
      // batch norm over channels, a convolutional residual block
      {R"({"layers": [{"type": "conv2d", "out_channels": 3, "kernel": 3,
                       "padding": 1},
                      {"type": "batch_norm"}, {"type": "relu"},
                      {"type": "residual", "layers": [
                        {"type": "conv2d", "out_channels": 3, "kernel": 3,
                         "padding": 1},
                        {"type": "batch_norm", "momentum": 0.5}]},
                      {"type": "avg_pool2d", "kernel": 2},
                      {"type": "flatten"},
                      {"type": "dense", "units": "classes"}]})",
       shape{1, 4, 4}, 4, false},
      // an embedding of 4 ids per sample
      {R"({"layers": [{"type": "embedding", "vocabulary": 7, "dim": 3},
                      {"type": "dense", "units": 5}, {"type": "sigmoid"},
                      {"type": "dense", "units": "classes"}]})",
       shape{1, 1, 4}, 3, true},
      // binary cross-entropy
      {R"({"loss": "binary_cross_entropy",
           "layers": [{"type": "dense", "units": 4}, {"type": "tanh"},
                      {"type": "dense", "units": "classes"}]})",
       shape{3, 1, 1}, 2, false},
      // mean squared error, with batch norm and dropout
      {R"({"loss": "mse",
           "layers": [{"type": "dense", "units": 4}, {"type": "batch_norm"},
                      {"type": "dropout", "p": 0.5}, {"type": "relu"},
                      {"type": "dense", "units": "classes"}]})",
       shape{3, 1, 1}, 0, false},
  };
  std::uint64_t seed = 4100;
  for (const auto& c : cases) {
    ++seed;
    std::cout << "model_layers_test: gradient check, seed " << seed << "\n";
    INFO(c.description << "\nseed " << seed);
    auto m = build_model<double>(c.description, c.input, c.classes);
    m.init(seed);
    rng gen{seed};
    const int batch = 5;
    matrix<double> x = uniform_batch(c.input.size(), batch, gen);
    if (c.ids)
      for (Eigen::Index i = 0; i < x.size(); ++i)
        x.data()[i] = static_cast<double>(gen.below(7));
    std::vector<std::int32_t> labels(batch);
    std::vector<float> targets(batch);
    for (int j = 0; j < batch; ++j) {
      labels[j] = static_cast<std::int32_t>(
          gen.below(static_cast<std::uint64_t>(std::max(c.classes, 2))));
      targets[j] = static_cast<float>(gen.uniform(-2, 2));
    }
    // Gamma away from 1 and beta away from 0, so every term of batch norm's
    // gradient shows.
    for (const auto& r : m.ranges().ranges())
      if (r.name.find("batch_norm") != std::string::npos)
        for (std::size_t i = 0; i < r.size; ++i)
          m.params()[r.offset + i] += gen.uniform(-0.5, 0.5);
    check_model(m, x, batch_targets{labels.data(), targets.data()}, seed);
  }
}

TEST_CASE("embedding inputs are ids, refused otherwise") {
  auto m = build_model<double>(
      R"({"layers": [{"type": "embedding", "vocabulary": 4, "dim": 2},
                     {"type": "dense", "units": "classes"}]})",
      shape{1, 1, 2}, 2);
  m.init(1);
  matrix<double> x(2, 1);
  x << 3, 0;
  CHECK(m.forward(x).rows() == 2);
  x(1, 0) = 4;
  CHECK_THROWS_WITH(m.forward(x), Catch::Contains("input 1 of sample 0 is 4.0")
                                      && Catch::Contains("[0, 4)"));
  x(1, 0) = 1.5;
  CHECK_THROWS_WITH(m.forward(x), Catch::Contains("not an id"));
}

TEST_CASE("binary cross-entropy is cross-entropy on the logits (0, z)") {
  const std::uint64_t seed = 77;
  std::cout << "model_layers_test: bce against cross-entropy, seed " << seed
            << "\n";
  rng gen{seed};
  const int batch = 9;
  matrix<double> z(1, batch), pair(2, batch);
  std::vector<std::int32_t> y(batch);
  for (int j = 0; j < batch; ++j) {
    z(0, j) = gen.uniform(-30, 30);
    pair(0, j) = 0;
    pair(1, j) = z(0, j);
    y[j] = static_cast<std::int32_t>(gen.below(2));
  }
  matrix<double> dz, dpair;
  const double bce = binary_cross_entropy(z, y.data(), &dz);
  const double ce = softmax_cross_entropy(pair, y.data(), &dpair);
  CHECK(bce == Approx(ce).epsilon(tol::naive_rel));
  for (int j = 0; j < batch; ++j)
    CHECK(dz(0, j) == Approx(dpair(1, j)).margin(1e-15));
  // Far from 0 it stays finite: log(1 + e^1000) = 1000.
  matrix<double> far(1, 2);
  far << 1000, -1000;
  std::vector<std::int32_t> zeros{0, 0};
  CHECK(binary_cross_entropy(far, zeros.data(),
                             static_cast<matrix<double>*>(nullptr))
        == Approx(500.0));
  std::vector<std::int32_t> two{0, 2};
  CHECK_THROWS_WITH(binary_cross_entropy(far, two.data(),
                                         static_cast<matrix<double>*>(nullptr)),
                    Catch::Contains("label 2 of sample 1 is not 0 or 1"));
}

TEST_CASE("batch norm: batch statistics, running statistics, calibration") {
  auto m = build_model<double>(
      R"({"loss": "mse", "layers": [{"type": "batch_norm"}]})", shape{1, 1, 1},
      0);
  m.init(1);
  matrix<double> a(1, 4), b(1, 4);
  a << 1, 2, 3, 6;  // mean 3, biased variance 3.5
  b << -1, 0, 1, 0; // mean 0, biased variance 0.5
  std::vector<float> t(4, 0.f);
  m.loss_and_gradient(a, batch_targets{nullptr, t.data()});
  // Momentum 0.1 from (0, 1), the variance unbiased (x 4/3).
  CHECK(m.buffers()[0] == Approx(0.3));
  CHECK(m.buffers()[1] == Approx(0.9 + 0.1 * 3.5 * 4 / 3));
  // Calibration: the batches' statistics with equal weights.
  m.reset_buffers();
  m.calibrate(a);
  m.calibrate(b);
  CHECK(m.buffers()[0] == Approx(1.5));
  CHECK(m.buffers()[1] == Approx((3.5 * 4 / 3 + 0.5 * 4 / 3) / 2));
  // Inference reads them: (x - 1.5) / sqrt(var + eps).
  const auto& y = m.forward(a);
  CHECK(y(0, 3) == Approx((6 - 1.5) / std::sqrt(m.buffers()[1] + 1e-5)));
  CHECK(m.buffer_ranges().find("batch_norm1.running_var")->offset == 1);
}

TEST_CASE("dropout: off for inference, p of the values in training") {
  const std::uint64_t seed = 2024;
  std::cout << "model_layers_test: dropout, seed " << seed << "\n";
  auto m = build_model<double>(
      R"({"loss": "mse", "layers": [{"type": "dropout", "p": 0.25},
                                    {"type": "dense", "units": 1}]})",
      shape{4000, 1, 1}, 0);
  m.init(seed);
  // The dense layer reads the dropped values: weight 1, bias 0 sums them.
  for (std::size_t i = 0; i < m.size(); ++i)
    m.params()[i] = i + 1 < m.size() ? 1.0 : 0.0;
  matrix<double> x = matrix<double>::Ones(4000, 1);
  CHECK(m.forward(x)(0, 0) == Approx(4000));
  std::vector<float> t{0.f};
  m.seed_noise(seed);
  const double l1 = m.loss_and_gradient(x, batch_targets{nullptr, t.data()});
  // sum = kept / (1 - p): kept ~ Binomial(4000, 0.75), sd 27.
  const double kept = std::sqrt(l1) * 0.75;
  CHECK(std::abs(kept - 3000) < 150);
  m.seed_noise(seed);
  CHECK(m.loss_and_gradient(x, batch_targets{nullptr, t.data()}) == l1);
  CHECK(m.loss_and_gradient(x, batch_targets{nullptr, t.data()}) != l1);
}

TEST_CASE("a residual block adds its input") {
  auto m = build_model<double>(
      R"({"loss": "mse", "layers": [{"type": "residual", "layers": [
            {"type": "dense", "units": 2}]},
          {"type": "dense", "units": 1}]})",
      shape{2, 1, 1}, 0);
  CHECK(m.ranges().find("residual1.dense1.weight")->size == 4);
  CHECK(m.ranges().find("dense1.weight")->size == 2);
  // Inner W = [[1, 2], [3, 4]] (column-major), b = (0.5, -0.5); outer sums.
  const double p[] = {1, 3, 2, 4, 0.5, -0.5, 1, 1, 0};
  std::copy(std::begin(p), std::end(p), m.params());
  matrix<double> x(2, 1);
  x << 1, -1;
  // in + W in + b = (1, -1) + (-1, -1) + (0.5, -0.5) = (0.5, -2.5)
  CHECK(m.forward(x)(0, 0) == Approx(-2.0));
  CHECK_THROWS_WITH(
      build_model<double>(R"({"loss": "mse", "layers": [
          {"type": "residual", "layers": [{"type": "dense", "units": 3}]},
          {"type": "dense", "units": 1}]})",
                          shape{2, 1, 1}, 0),
      Catch::Contains("residual1: the block gives [3, 1, 1] per sample, not "
                      "its input's [2, 1, 1]"));
}

TEST_CASE("mse regression reaches the least-squares optimum") {
  lsq_options o;
  o.m = 512;
  o.d = 8;
  o.seed = 31;
  std::cout << "model_layers_test: mse on LSQ, seed " << o.seed << "\n";
  auto data = to_dataset(make_lsq(o));
  auto m = build_model<double>(
      R"({"loss": "mse", "layers": [{"type": "dense", "units": "classes"}]})",
      data.sample_shape, data.classes);
  m.init(o.seed);
  const matrix<double> x = data.x.cast<double>();
  // The optimum with an intercept: least squares on [A 1].
  Eigen::MatrixXd a(o.m, o.d + 1);
  a << x.transpose(), Eigen::VectorXd::Ones(static_cast<Eigen::Index>(o.m));
  Eigen::VectorXd b(o.m);
  for (std::size_t i = 0; i < o.m; ++i)
    b[static_cast<Eigen::Index>(i)] = data.targets[i];
  const Eigen::VectorXd best = a.colPivHouseholderQr().solve(b);
  const double best_mse = (a * best - b).squaredNorm() / o.m;
  batch_targets t{nullptr, data.targets.data()};
  double mse = 0;
  for (int step = 0; step < 3000; ++step) {
    mse = m.loss_and_gradient(x, t);
    for (std::size_t i = 0; i < m.size(); ++i)
      m.params()[i] -= 0.04 * m.grads()[i];
  }
  INFO("mse " << mse << ", optimum " << best_mse);
  CHECK(mse == Approx(best_mse).epsilon(tol::optimum_rel));
  for (std::size_t i = 0; i < m.size(); ++i)
    CHECK(m.params()[i]
          == Approx(best[static_cast<Eigen::Index>(i)]).margin(1e-3));
}

TEST_CASE("evaluation of a regression model reports R^2") {
  dataset d;
  d.name = "line";
  d.sample_shape = shape{1, 1, 1};
  d.x.resize(1, 4);
  d.x << 0, 1, 2, 3;
  d.targets = {1, 3, 5, 7};
  auto m = build_model<float>(
      R"({"loss": "mse", "layers": [{"type": "dense", "units": "classes"}]})",
      d.sample_shape, 0);
  m.params()[0] = 2;
  m.params()[1] = 1;
  auto e = evaluate(m, d);
  CHECK(e.loss == 0);
  CHECK(e.accuracy == 1);
  m.params()[1] = 2; // off by 1 everywhere: SSE 4, SST 20
  e = evaluate(m, d);
  CHECK(e.loss == Approx(1));
  CHECK(e.accuracy == Approx(0.8));
  d.labels = {0, 1, 0, 1};
  d.classes = 2;
  CHECK_THROWS_WITH(build_model<float>("logreg", d.sample_shape, 0),
                    Catch::Contains("use \"loss\": \"mse\""));
}
