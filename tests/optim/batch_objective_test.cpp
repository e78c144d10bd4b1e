// The full-batch objective Sandblaster minimizes: portion sums add up to the
// objective whatever the split, its gradient matches finite differences,
// and bad arguments are refused by name.

#include <cmath>
#include <iostream>

#include <catch2/catch.hpp>

#include "optim/batch_objective.hpp"
#include "optim/rng.hpp"
#include "optim/synthetic.hpp"

using namespace troupe::optim;

namespace {

std::shared_ptr<const dataset> small_data(std::uint64_t seed) {
  logreg_options lo;
  lo.m = 300;
  lo.d = 6;
  lo.seed = seed;
  return std::make_shared<const dataset>(to_dataset(make_logreg(lo)));
}

std::vector<double> random_point(std::size_t n, std::uint64_t seed) {
  rng r{seed};
  std::vector<double> x(n);
  for (auto& v : x)
    v = r.normal() * 0.5;
  return x;
}

} // namespace

TEST_CASE("batch objective: the portions add up to the whole, whatever "
          "the split") {
  const std::uint64_t seed = 17;
  std::cout << "batch objective: seed " << seed << std::endl;
  auto data = small_data(seed);
  batch_objective_options o;
  o.model = "mlp";
  o.l2 = 1e-3;
  o.portions = 1;
  o.chunk = 64;
  batch_objective one{data, o};
  auto x = random_point(one.size(), seed);
  std::vector<double> g1;
  double f1 = one.full(x, g1);
  for (std::size_t p : {2, 7, 300}) {
    o.portions = p;
    o.chunk = 5;
    batch_objective many{data, o};
    std::vector<double> g;
    double f = many.full(x, g);
    INFO(p << " portions");
    CHECK(std::abs(f - f1) <= 1e-12 * std::abs(f1));
    double worst = 0;
    for (std::size_t i = 0; i < g.size(); ++i)
      worst = std::max(worst, std::abs(g[i] - g1[i]));
    CHECK(worst < 1e-12);
    std::uint64_t total = 0;
    for (std::size_t q = 0; q < p; ++q) {
      auto [a, b] = many.bounds(q);
      total += b - a;
    }
    CHECK(total == data->size());
  }
}

TEST_CASE("batch objective: the gradient matches central differences, the "
          "penalty included") {
  auto data = small_data(3);
  batch_objective_options o;
  o.model = "logreg";
  o.l2 = 0.05;
  o.portions = 3;
  batch_objective f{data, o};
  auto x = random_point(f.size(), 4);
  std::vector<double> g;
  f.full(x, g);
  const double h = 1e-6;
  for (std::size_t i = 0; i < x.size(); ++i) {
    auto xp = x, xm = x;
    xp[i] += h;
    xm[i] -= h;
    std::vector<double> scratch;
    double fd = (f.full(xp, scratch) - f.full(xm, scratch)) / (2 * h);
    INFO("parameter " << i);
    CHECK(std::abs(fd - g[i]) < 1e-7 * std::max(1.0, std::abs(g[i])));
  }
}

TEST_CASE("batch objective: bad arguments are refused by name") {
  auto data = small_data(1);
  batch_objective_options o;
  o.model = "logreg";
  o.portions = 301;
  CHECK_THROWS_WITH(batch_objective(data, o), Catch::Contains("portions"));
  o.portions = 2;
  o.model = "resnet";
  CHECK_THROWS_AS(batch_objective(data, o), std::invalid_argument);
  o.model = "logreg";
  batch_objective f{data, o};
  std::vector<double> x(f.size(), 0.0), g(f.size());
  std::uint64_t samples = 0;
  CHECK_THROWS_WITH(f.portion(x.data(), x.size() - 1, 0, g.data(), samples),
                    Catch::Contains("values"));
  CHECK_THROWS_WITH(f.portion(x.data(), x.size(), 2, g.data(), samples),
                    Catch::Contains("portion"));
  x[0] = std::nan("");
  CHECK_THROWS_AS(f.portion(x.data(), x.size(), 0, g.data(), samples),
                  std::domain_error);
}
