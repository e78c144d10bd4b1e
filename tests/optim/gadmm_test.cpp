// GADMM's steps without actors (docs/algorithms.md "GADMM"): the augmented
// gradient and the dual step by hand, Dynamic GADMM's rebuild of the duals
// (every worker's net dual kept), the chains; and the paper's claim on LSQ:
// chain GADMM reaches the exact optimum where decentralized gradient
// descent on the same chain, at the same step, stalls at its bias.

#include <algorithm>
#include <cmath>
#include <iostream>
#include <vector>

#include <catch2/catch.hpp>

#include "optim/gadmm.hpp"
#include "optim/synthetic.hpp"

using namespace troupe::optim;

namespace {

using model = std::vector<float>;

/// Four workers, each with a contiguous quarter of an LSQ problem.
struct chain_problem {
  lsq_problem p;
  std::vector<std::vector<std::size_t>> parts;
  std::size_t d = 0;

  explicit chain_problem(std::uint64_t seed) {
    lsq_options o;
    o.m = 256;
    o.d = 10;
    o.condition = 10;
    o.seed = seed;
    p = make_lsq(o);
    d = o.d;
    parts.resize(4);
    for (std::size_t i = 0; i < o.m; ++i)
      parts[i * 4 / o.m].push_back(i);
  }

  void gradient(std::size_t w, const model& x, model& g) const {
    batch_gradient(p, x.data(), parts[w], g.data());
  }

  /// max_n ||x_n - x*||.
  double distance(const std::vector<model>& xs) const {
    double worst = 0;
    for (auto& x : xs) {
      double s = 0;
      for (std::size_t i = 0; i < d; ++i)
        s += (x[i] - p.x_star[static_cast<Eigen::Index>(i)])
             * (x[i] - p.x_star[static_cast<Eigen::Index>(i)]);
      worst = std::max(worst, std::sqrt(s));
    }
    return worst;
  }
};

/// `iterations` of GADMM on the chain (a new chain every `rechain` when
/// positive), one gradient step of rate `lr` an iteration (linearized);
/// the distance to x* after each.
std::vector<double> run_gadmm(const chain_problem& cp, double rho, double lr,
                              int iterations, std::uint64_t rechain) {
  const std::size_t n = 4, d = cp.d;
  std::vector<model> x(n, model(d, 0.0f));
  auto order = gadmm_chain(n, 0, 7);
  std::vector<model> lambda(n - 1, model(d, 0.0f)); // by edge of `order`
  std::vector<double> out;
  model g(d), mu(d), s(d);
  for (int k = 0; k < iterations; ++k) {
    if (rechain > 0 && k > 0 && k % rechain == 0) {
      std::vector<model> net(n, model(d, 0.0f));
      for (std::size_t p = 0; p < n; ++p)
        for (std::size_t i = 0; i < d; ++i)
          net[order[p]][i] = (p > 0 ? lambda[p - 1][i] : 0.0f)
                             - (p + 1 < n ? lambda[p][i] : 0.0f);
      order = gadmm_chain(n, static_cast<std::uint64_t>(k) / rechain, 7);
      std::vector<const float*> in_order;
      for (auto r : order)
        in_order.push_back(net[r].data());
      lambda = gadmm_rebuild(in_order, d);
    }
    for (std::size_t parity : {0u, 1u}) { // heads, then tails
      auto before = x;
      for (std::size_t p = parity; p < n; p += 2) {
        auto w = order[p];
        std::fill(s.begin(), s.end(), 0.0f);
        std::size_t deg = 0;
        for (std::size_t i = 0; i < d; ++i)
          mu[i] = (p > 0 ? lambda[p - 1][i] : 0.0f)
                  - (p + 1 < n ? lambda[p][i] : 0.0f);
        for (auto q : {p - 1, p + 1})
          if (q < n) {
            ++deg;
            for (std::size_t i = 0; i < d; ++i)
              s[i] += before[order[q]][i];
          }
        cp.gradient(w, x[w], g);
        gadmm_gradient(g.data(), x[w].data(), mu.data(), s.data(), deg, rho, d);
        for (std::size_t i = 0; i < d; ++i)
          x[w][i] -= static_cast<float>(lr) * g[i];
      }
    }
    for (std::size_t e = 0; e + 1 < n; ++e)
      gadmm_dual(lambda[e].data(), x[order[e]].data(), x[order[e + 1]].data(),
                 rho, d);
    out.push_back(cp.distance(x));
  }
  return out;
}

/// Decentralized gradient descent on the same chain: mix with the
/// neighbours (Metropolis weights 1/3), then the local gradient step.
std::vector<double> run_dgd(const chain_problem& cp, double lr,
                            int iterations) {
  const std::size_t n = 4, d = cp.d;
  std::vector<model> x(n, model(d, 0.0f));
  std::vector<double> out;
  model g(d);
  for (int k = 0; k < iterations; ++k) {
    auto before = x;
    for (std::size_t w = 0; w < n; ++w) {
      cp.gradient(w, before[w], g);
      for (std::size_t i = 0; i < d; ++i) {
        float self = 1.0f, mix = 0.0f;
        for (auto q : {w - 1, w + 1})
          if (q < n) {
            mix += before[q][i] / 3.0f;
            self -= 1.0f / 3.0f;
          }
        x[w][i] = self * before[w][i] + mix - static_cast<float>(lr) * g[i];
      }
    }
    out.push_back(cp.distance(x));
  }
  return out;
}

int first_below(const std::vector<double>& v, double eps) {
  for (std::size_t i = 0; i < v.size(); ++i)
    if (v[i] < eps)
      return static_cast<int>(i) + 1;
  return -1;
}

} // namespace

TEST_CASE("GADMM's augmented gradient and dual step, by hand") {
  float g[] = {1.0f, -2.0f};
  const float x[] = {0.5f, 1.0f}, mu[] = {0.25f, -1.0f}, s[] = {2.0f, 0.0f};
  // g - mu + rho (d x - s), rho 2, d 2.
  gadmm_gradient(g, x, mu, s, 2, 2.0, 2);
  CHECK(g[0] == Approx(1 - 0.25 + 2 * (1.0 - 2.0)));
  CHECK(g[1] == Approx(-2 + 1 + 2 * (2.0 - 0.0)));
  float h[] = {1.0f, 1.0f};
  gadmm_gradient(h, x, mu, nullptr, 0, 2.0, 2); // no neighbour
  CHECK(h[0] == Approx(0.75));
  CHECK(h[1] == Approx(2.0));
  float lambda[] = {1.0f, 0.0f};
  const float left[] = {3.0f, 1.0f}, right[] = {1.0f, 2.0f};
  gadmm_dual(lambda, left, right, 0.5, 2);
  CHECK(lambda[0] == Approx(2.0));
  CHECK(lambda[1] == Approx(-0.5));
}

TEST_CASE("Dynamic GADMM's rebuild keeps every worker's net dual") {
  // Net duals of 4 workers in the new chain's order; they sum to zero.
  const std::vector<float> a{1, -2}, b{0.5f, 3}, c{-4, 0}, e{2.5f, -1};
  auto lambda = gadmm_rebuild({a.data(), b.data(), c.data(), e.data()}, 2);
  REQUIRE(lambda.size() == 3);
  const std::vector<const std::vector<float>*> mu{&a, &b, &c, &e};
  for (std::size_t p = 0; p < 4; ++p)
    for (std::size_t i = 0; i < 2; ++i) {
      float left = p > 0 ? lambda[p - 1][i] : 0.0f;
      float right = p < 3 ? lambda[p][i] : 0.0f;
      CHECK(left - right == Approx((*mu[p])[i]));
    }
  CHECK(gadmm_rebuild({a.data()}, 2).empty());
}

TEST_CASE("GADMM's chains: the ranks in order first, then seeded "
          "permutations the same on every worker") {
  auto first = gadmm_chain(6, 0, 3);
  CHECK(first == std::vector<std::uint32_t>{0, 1, 2, 3, 4, 5});
  auto c1 = gadmm_chain(6, 1, 3), c2 = gadmm_chain(6, 2, 3);
  CHECK(c1 == gadmm_chain(6, 1, 3));
  CHECK(c1 != c2);
  auto sorted = c1;
  std::sort(sorted.begin(), sorted.end());
  CHECK(sorted == first);
}

TEST_CASE("GADMM on a chain reaches LSQ's exact optimum; decentralized "
          "gradient descent on the same chain stalls at its bias") {
  const std::uint64_t seed = 41;
  std::cout << "gadmm vs dgd: seed " << seed << std::endl;
  chain_problem cp(seed);
  const double lr = 0.05, rho = 1;
  const int k = 1500;
  auto gadmm = run_gadmm(cp, rho, lr, k, 0);
  auto dynamic = run_gadmm(cp, rho, lr, k, 5);
  auto dgd = run_dgd(cp, lr, k);
  std::cout << "  max ||x_n - x*|| after " << k << " iterations: gadmm "
            << gadmm.back() << ", dynamic gadmm " << dynamic.back() << ", dgd "
            << dgd.back() << "; iterations to 1e-3: gadmm "
            << first_below(gadmm, 1e-3) << ", dynamic "
            << first_below(dynamic, 1e-3) << ", dgd " << first_below(dgd, 1e-3)
            << std::endl;
  CHECK(gadmm.back() < 1e-4);
  CHECK(dynamic.back() < 1e-4);
  CHECK(dgd.back() > 1e-3);
  CHECK(first_below(dgd, 1e-3) == -1);
}
