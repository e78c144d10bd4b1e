#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <stdexcept>
#include <vector>

#include <Eigen/Eigenvalues>
#include <catch2/catch.hpp>

#include "optim/optimizer.hpp"
#include "optim/rng.hpp"
#include "optim/synthetic.hpp"
#include "tolerances.hpp"

using namespace troupe::optim;
namespace tol = troupe::test;

namespace {

std::vector<std::size_t> all_indices(std::size_t m) {
  std::vector<std::size_t> result(m);
  for (std::size_t k = 0; k < m; ++k)
    result[k] = k;
  return result;
}

std::vector<std::size_t> random_batch(rng& gen, std::size_t m, std::size_t b) {
  std::vector<std::size_t> result(b);
  for (auto& k : result)
    k = static_cast<std::size_t>(gen.below(m));
  return result;
}

/// Central finite differences of batch_loss against batch_gradient at a
/// random point.
template <class Problem>
void check_gradient(const Problem& p, std::uint64_t seed) {
  INFO("seed " << seed);
  rng gen{seed};
  auto d = static_cast<std::size_t>(p.a.cols());
  auto batch = random_batch(gen, static_cast<std::size_t>(p.a.rows()), 17);
  std::vector<double> x(d);
  for (auto& v : x)
    v = gen.normal();
  std::vector<double> grad(d);
  auto loss = batch_gradient(p, x.data(), batch, grad.data());
  CHECK(loss == Approx(batch_loss(p, x.data(), batch)).epsilon(tol::hand_rel));
  for (std::size_t i = 0; i < d; ++i) {
    auto xp = x;
    auto xm = x;
    xp[i] += tol::fd_step;
    xm[i] -= tol::fd_step;
    auto numeric
        = (batch_loss(p, xp.data(), batch) - batch_loss(p, xm.data(), batch))
          / (2 * tol::fd_step);
    auto scale
        = std::max({std::abs(numeric), std::abs(grad[i]), tol::grad_check_abs});
    INFO("coordinate " << i << ": analytic " << grad[i] << ", numeric "
                       << numeric);
    CHECK(std::abs(numeric - grad[i]) / scale < tol::grad_check_rel);
  }
}

/// Runs `steps` optimizer steps from 0 with the rate eta0 / (1 + t / t0) and
/// minibatches of `b` examples drawn without replacement, reshuffled every
/// epoch as in training (the full gradient if b = 0); returns the relative
/// distance to x_star.
template <class Problem>
double run(const Problem& p, const char* name, std::size_t b, double eta0,
           double t0, std::size_t steps, std::uint64_t seed) {
  auto m = static_cast<std::size_t>(p.a.rows());
  auto d = static_cast<std::size_t>(p.a.cols());
  optimizer_options opts;
  opts.name = name;
  auto opt = make_optimizer<double>(opts, d);
  rng gen{seed};
  auto order = all_indices(m);
  std::size_t pos = m;
  std::vector<std::size_t> batch(b);
  std::vector<double> x(d, 0.0);
  std::vector<double> g(d);
  for (std::size_t t = 0; t < steps; ++t) {
    if (b == 0) {
      full_gradient(p, x.data(), g.data());
    } else {
      if (pos + b > m) {
        for (std::size_t i = m; i > 1; --i)
          std::swap(order[i - 1], order[gen.below(i)]);
        pos = 0;
      }
      std::copy(order.begin() + pos, order.begin() + pos + b, batch.begin());
      pos += b;
      batch_gradient(p, x.data(), batch, g.data());
    }
    auto lr = eta0 / (1.0 + static_cast<double>(t) / t0);
    opt->step(x.data(), g.data(), d, lr);
  }
  vector<double> diff
      = const_vector_map<double>{x.data(), p.a.cols()} - p.x_star;
  return diff.norm() / p.x_star.norm();
}

double condition_number(const matrix<double>& a) {
  matrix<double> h = a.transpose() * a / static_cast<double>(a.rows());
  Eigen::SelfAdjointEigenSolver<matrix<double>> eig{h, Eigen::EigenvaluesOnly};
  return eig.eigenvalues().maxCoeff() / eig.eigenvalues().minCoeff();
}

} // namespace

TEST_CASE("LSQ: shapes, known optimum and requested conditioning") {
  for (std::uint64_t seed : {1u, 7u, 2024u}) {
    for (double condition : {10.0, 100.0}) {
      std::cout << "LSQ seed " << seed << ", condition " << condition << "\n";
      INFO("seed " << seed << ", condition " << condition);
      lsq_options opts;
      opts.seed = seed;
      opts.condition = condition;
      auto p = make_lsq(opts);
      REQUIRE(p.a.rows() == 4096);
      REQUIRE(p.a.cols() == 32);
      REQUIRE(p.b.size() == 4096);
      REQUIRE(p.x_star.size() == 32);
      CHECK(condition_number(p.a)
            == Approx(condition).epsilon(tol::condition_rel));
      CHECK(p.lambda_max / p.lambda_min
            == Approx(condition).epsilon(tol::condition_rel));
      CHECK(p.lambda_min == Approx(1.0).epsilon(tol::condition_rel));
      // Stationary at x*, relative to the gradient's scale at 0.
      std::vector<double> zero(32, 0.0);
      std::vector<double> g0(32);
      std::vector<double> gs(32);
      full_gradient(p, zero.data(), g0.data());
      auto f_star = full_gradient(p, p.x_star.data(), gs.data());
      CHECK(const_vector_map<double>(gs.data(), 32).norm()
            < tol::exact_rel * const_vector_map<double>(g0.data(), 32).norm());
      CHECK(f_star == Approx(p.f_star).epsilon(tol::hand_rel));
      // The residual is the noise: f* ~ noise^2 / 2 (1 - d / m).
      CHECK(p.f_star == Approx(0.5 * 0.01).epsilon(0.1));
      CHECK(p.f_star < objective(p, p.x_true.data()));
    }
  }
}

TEST_CASE("LSQ: the same seed gives the same problem") {
  lsq_options opts;
  opts.seed = 99;
  auto p = make_lsq(opts);
  auto q = make_lsq(opts);
  CHECK(p.a == q.a);
  CHECK(p.b == q.b);
  opts.seed = 100;
  auto r = make_lsq(opts);
  CHECK(p.a != r.a);
}

TEST_CASE("LOGREG: Newton reaches the optimum") {
  for (std::uint64_t seed : {1u, 5u}) {
    std::cout << "LOGREG seed " << seed << "\n";
    INFO("seed " << seed);
    logreg_options opts;
    opts.seed = seed;
    auto p = make_logreg(opts);
    REQUIRE(p.a.rows() == 4096);
    REQUIRE(p.y.size() == 4096);
    CHECK(p.grad_norm < 1e-10);
    CHECK(p.newton_steps > 1);
    std::vector<double> g(32);
    full_gradient(p, p.x_star.data(), g.data());
    CHECK(const_vector_map<double>(g.data(), 32).norm() < 1e-10);
    auto positives = std::count(p.y.data(), p.y.data() + p.y.size(), 1.0);
    auto negatives = std::count(p.y.data(), p.y.data() + p.y.size(), -1.0);
    CHECK(positives + negatives == 4096);
    CHECK(positives > 1000);
    CHECK(negatives > 1000);
    std::vector<double> zero(32, 0.0);
    CHECK(objective(p, zero.data()) == Approx(std::log(2.0)).epsilon(1e-12));
    CHECK(p.f_star < objective(p, p.x_true.data()));
  }
}

TEST_CASE("minibatch gradients match finite differences") {
  check_gradient(make_lsq({}), 11);
  check_gradient(make_logreg({}), 12);
  logreg_options strong;
  strong.mu = 0.5;
  check_gradient(make_logreg(strong), 13);
}

TEST_CASE("full-batch gradients agree with batch_gradient; float with double") {
  auto lsq = make_lsq({});
  auto logreg = make_logreg({});
  auto all = all_indices(4096);
  rng gen{3};
  std::vector<double> x(32);
  for (auto& v : x)
    v = gen.normal();
  std::vector<float> xf(x.begin(), x.end());
  std::vector<double> full(32);
  std::vector<double> batch(32);
  std::vector<float> batch_f(32);
  auto check_all = [&](const auto& p) {
    auto f = full_gradient(p, x.data(), full.data());
    CHECK(f == Approx(objective(p, x.data())).epsilon(tol::hand_rel));
    CHECK(batch_gradient(p, x.data(), all, batch.data())
          == Approx(f).epsilon(tol::hand_rel));
    batch_gradient(p, xf.data(), all, batch_f.data());
    for (std::size_t i = 0; i < 32; ++i) {
      CHECK(batch[i] == Approx(full[i]).epsilon(tol::hand_rel).margin(1e-15));
      CHECK(batch_f[i]
            == Approx(full[i]).epsilon(tol::float_step_rel).margin(1e-6));
    }
  };
  check_all(lsq);
  check_all(logreg);
  CHECK_THROWS_AS(batch_loss(lsq, x.data(), {}), std::invalid_argument);
  CHECK_THROWS_AS(batch_loss(lsq, x.data(), {4096}), std::invalid_argument);
}

TEST_CASE("gradient descent converges to x*") {
  auto lsq = make_lsq({});
  auto gd_lsq = run(lsq, "sgd", 0, 1.0 / lsq.lambda_max, 1e300, 200, 0);
  CHECK(gd_lsq < tol::optimum_rel);
  auto logreg = make_logreg({});
  // The logistic Hessian is at most lambda_max(A^T A / m) / 4 + mu.
  Eigen::SelfAdjointEigenSolver<matrix<double>> eig{
      logreg.a.transpose() * logreg.a / 4096.0, Eigen::EigenvaluesOnly};
  auto l = eig.eigenvalues().maxCoeff() / 4 + logreg.mu;
  auto gd_logreg = run(logreg, "sgd", 0, 1.0 / l, 1e300, 200, 0);
  CHECK(gd_logreg < tol::optimum_rel);
  std::cout << "GD: LSQ error " << gd_lsq << ", LOGREG error " << gd_logreg
            << "\n";
}

TEST_CASE("SGD with a decaying step size converges to x*") {
  // eta0 * T0 is about 1 / mu (mu: smallest Hessian eigenvalue at x*, 1 for
  // LSQ and about 0.06 for LOGREG), the classic choice for eta0 / t decay.
  auto lsq = make_lsq({});
  auto logreg = make_logreg({});
  for (std::uint64_t seed : {31u, 32u}) {
    INFO("seed " << seed);
    auto sgd_lsq = run(lsq, "sgd", 32, 0.5 / lsq.lambda_max, 20, 20000, seed);
    CHECK(sgd_lsq < tol::optimum_rel);
    auto sgd_logreg = run(logreg, "sgd", 64, 4.0, 5, 40000, seed);
    CHECK(sgd_logreg < tol::optimum_rel);
    std::cout << "SGD seed " << seed << ": LSQ error " << sgd_lsq
              << ", LOGREG error " << sgd_logreg << "\n";
  }
}

TEST_CASE("conversion to a data set") {
  auto lsq = make_lsq({});
  auto a = to_dataset(lsq);
  CHECK(a.name == "synthetic-lsq");
  REQUIRE(a.size() == 4096);
  REQUIRE(a.x.rows() == 32);
  CHECK(a.sample_shape == shape{32, 1, 1});
  CHECK(a.classes == 0);
  CHECK(a.labels.empty());
  REQUIRE(a.targets.size() == 4096);
  CHECK(a.targets[17] == static_cast<float>(lsq.b[17]));
  CHECK(a.x(5, 17) == static_cast<float>(lsq.a(17, 5)));
  auto logreg = make_logreg({});
  auto b = to_dataset(logreg);
  CHECK(b.name == "synthetic-logreg");
  CHECK(b.classes == 2);
  CHECK(b.targets.empty());
  REQUIRE(b.labels.size() == 4096);
  for (std::size_t k = 0; k < 4096; ++k)
    REQUIRE(b.labels[k]
            == (logreg.y[static_cast<Eigen::Index>(k)] > 0 ? 1 : 0));
  CHECK(b.x(3, 9) == static_cast<float>(logreg.a(9, 3)));
}

TEST_CASE("bad options are rejected") {
  lsq_options lsq;
  lsq.d = 100;
  lsq.m = 50;
  CHECK_THROWS_AS(make_lsq(lsq), std::invalid_argument);
  lsq = {};
  lsq.condition = 0.5;
  CHECK_THROWS_WITH(make_lsq(lsq), Catch::Contains("condition"));
  lsq = {};
  lsq.noise = -1;
  CHECK_THROWS_WITH(make_lsq(lsq), Catch::Contains("noise"));
  logreg_options logreg;
  logreg.mu = 0;
  CHECK_THROWS_WITH(make_logreg(logreg), Catch::Contains("mu"));
}
