// The consensus steps without actors (algorithms.md §3, §4): EASGD's
// conservation under any interleaving (T1) and its stability region (T2);
// LSGD's exact shrink toward the leader (T1), the pull as a descent
// direction on LOGREG (T2) and the election's determinism and ties (T3).

#include <algorithm>
#include <cmath>
#include <iostream>
#include <limits>
#include <vector>

#include <catch2/catch.hpp>

#include "optim/consensus.hpp"
#include "optim/optimizer.hpp"
#include "optim/rng.hpp"
#include "optim/synthetic.hpp"

using namespace troupe::optim;

namespace {

std::vector<float> random_vector(rng& gen, std::size_t n, double scale) {
  std::vector<float> v(n);
  for (auto& x : v)
    x = static_cast<float>(scale * gen.normal());
  return v;
}

/// One asynchronous EASGD exchange of worker x with the center c (eta = 0):
/// e = alpha (x - c); x -= e; c += e, as the worker and the shard do it.
void exchange(std::vector<float>& x, std::vector<float>& c, double alpha) {
  std::vector<float> e(x.size());
  elastic_difference(x.data(), c.data(), alpha, e.data(), x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    x[i] -= e[i];
    c[i] += e[i];
  }
}

} // namespace

TEST_CASE("EASGD T1: with eta = 0, x_c + sum x_i is invariant under any "
          "interleaving and everything meets at S / (p + 1)") {
  for (std::uint64_t seed : {1, 2, 3, 4, 5}) {
    for (std::size_t p : {1, 4, 8}) {
      INFO("seed " << seed << ", p = " << p);
      std::cout << "EASGD T1 seed " << seed << " p " << p << '\n';
      rng gen{seed};
      const std::size_t n = 16;
      std::vector<std::vector<float>> xs;
      for (std::size_t i = 0; i < p; ++i)
        xs.push_back(random_vector(gen, n, 3.0));
      auto c = random_vector(gen, n, 1.0);
      double alpha = 0.9 / static_cast<double>(p);
      auto sum = [&](std::size_t k) {
        double s = c[k];
        for (auto& x : xs)
          s += x[k];
        return s;
      };
      std::vector<double> s0(n);
      for (std::size_t k = 0; k < n; ++k)
        s0[k] = sum(k);
      // Workers exchange in a seeded random order (some several times in a
      // row): the asynchronous schedule.
      for (int round = 0; round < 4000; ++round) {
        exchange(xs[gen.next() % p], c, alpha);
        if (round % 97 == 0)
          for (std::size_t k = 0; k < n; ++k)
            REQUIRE(sum(k) == Approx(s0[k]).margin(1e-4));
      }
      for (std::size_t k = 0; k < n; ++k) {
        double mean = s0[k] / static_cast<double>(p + 1);
        CHECK(sum(k) == Approx(s0[k]).margin(1e-4));
        CHECK(c[k] == Approx(mean).margin(1e-4));
        for (auto& x : xs)
          CHECK(x[k] == Approx(mean).margin(1e-4));
      }
    }
  }
}

TEST_CASE("EASGD T2: the synchronous scheme on h x^2 / 2 diverges exactly "
          "where the Jury conditions fail") {
  // The pair (mean x_i, x_c) evolves by M = [[1 - eta h - alpha, alpha],
  // [beta, 1 - beta]]; it is stable iff |det M| < 1 and |tr M| < 1 + det M.
  // Simulated with the same elastic step the workers use, p = 4 workers.
  const std::size_t p = 4;
  int stable = 0, unstable = 0, skipped = 0;
  for (double eh = 0.05; eh < 4.0; eh += 0.15)
    for (double alpha = 0.02; alpha < 0.5; alpha += 0.04) {
      double beta = static_cast<double>(p) * alpha;
      double a = 1 - eh - alpha, b = alpha, cc = beta, d = 1 - beta;
      double det = a * d - b * cc, tr = a + d;
      double margin = std::min(1 - std::abs(det), 1 + det - std::abs(tr));
      if (std::abs(margin) < 0.02) {
        ++skipped; // too close to the boundary to decide in 400 steps
        continue;
      }
      bool jury = margin > 0;
      std::vector<std::vector<float>> xs(p, std::vector<float>{1.0f});
      std::vector<float> c{0.5f};
      for (int t = 0; t < 400; ++t) {
        // Everyone reads the same center, then moves (synchronous).
        std::vector<float> c_old = c;
        for (auto& x : xs) {
          std::vector<float> e(1);
          elastic_difference(x.data(), c_old.data(), alpha, e.data(), 1);
          x[0] -= static_cast<float>(eh) * x[0] + e[0];
          c[0] += e[0];
        }
      }
      double size = std::abs(c[0]);
      for (auto& x : xs)
        size = std::max(size, std::abs(double{x[0]}));
      INFO("eta h " << eh << " alpha " << alpha << " beta " << beta << " det "
                    << det << " trace " << tr);
      if (jury) {
        ++stable;
        CHECK(size < 1e-3);
      } else {
        ++unstable;
        CHECK(!(size < 1e3)); // grew without bound (or overflowed)
      }
    }
  std::cout << "EASGD T2: " << stable << " stable, " << unstable
            << " unstable, " << skipped << " at the boundary\n";
  CHECK(stable > 20);
  CHECK(unstable > 20);
}

TEST_CASE("LSGD T1: a pull shrinks the distance to the leader by exactly "
          "1 - lambda and leaves the leader as it was") {
  rng gen{11};
  std::cout << "LSGD T1 seed 11\n";
  for (double lambda : {0.0, 0.1, 0.5, 0.9, 1.0}) {
    auto leader = random_vector(gen, 257, 2.0);
    auto x = random_vector(gen, 257, 2.0);
    auto leader_before = leader;
    double before = distance(x.data(), leader.data(), x.size());
    double reported = pull_toward(x.data(), leader.data(), lambda, x.size());
    double after = distance(x.data(), leader.data(), x.size());
    INFO("lambda " << lambda);
    CHECK(reported == Approx(before).epsilon(1e-6)); // float differences
    CHECK(after == Approx((1 - lambda) * before).epsilon(1e-5).margin(1e-5));
    CHECK(leader == leader_before);
  }
  // The leader pulling toward itself does not move.
  auto leader = random_vector(gen, 32, 1.0);
  auto copy = leader;
  CHECK(pull_toward(copy.data(), leader.data(), 0.1, copy.size()) == 0.0);
  CHECK(copy == leader);
}

TEST_CASE("LSGD T2: on LOGREG the pull toward a better leader is a descent "
          "direction") {
  logreg_options o;
  o.m = 512;
  o.d = 16;
  o.seed = 3;
  auto p = make_logreg(o);
  rng gen{5};
  std::cout << "LSGD T2 seed 5 (problem seed 3)\n";
  auto d = o.d;
  int checked = 0;
  for (int trial = 0; trial < 200; ++trial) {
    auto xf = random_vector(gen, d, 1.0);
    auto lf = random_vector(gen, d, 1.0);
    std::vector<double> x(xf.begin(), xf.end()), l(lf.begin(), lf.end());
    double fx = objective(p, x.data()), fl = objective(p, l.data());
    if (!(fl < fx))
      std::swap(x, l), std::swap(fx, fl), std::swap(xf, lf);
    if (!(fl < fx))
      continue;
    std::vector<double> g(d);
    full_gradient(p, x.data(), g.data());
    double dir = 0;
    for (std::size_t i = 0; i < d; ++i)
      dir += g[i] * (l[i] - x[i]);
    INFO("trial " << trial << " f(x) " << fx << " f(leader) " << fl);
    // Convexity: grad f(x) . (x_L - x) <= f(x_L) - f(x) < 0.
    CHECK(dir <= fl - fx + 1e-9);
    // And the pulled point is no worse than the convex combination bound.
    double lambda = 0.1;
    pull_toward(xf.data(), lf.data(), lambda, d);
    std::vector<double> pulled(xf.begin(), xf.end());
    CHECK(objective(p, pulled.data())
          <= (1 - lambda) * fx + lambda * fl + 1e-5);
    ++checked;
  }
  CHECK(checked > 150);
}

TEST_CASE("LSGD T3: the election is the same in any order, ties go to the "
          "lowest rank, NaN never leads") {
  std::vector<leader_score> c{{0, 0.7},          {1, 0.3}, {2, 0.3},
                              {3, std::nan("")}, {4, 0.9}, {5, 0.3}};
  auto leader_of = [](std::vector<leader_score> v) {
    auto i = elect(v);
    REQUIRE(i < v.size());
    return v[i].rank;
  };
  rng gen{17};
  std::cout << "LSGD T3 seed 17\n";
  for (int i = 0; i < 50; ++i) {
    auto v = c;
    for (std::size_t k = v.size(); k > 1; --k)
      std::swap(v[k - 1], v[gen.next() % k]);
    CHECK(leader_of(v) == 1);
  }
  CHECK(leader_of({{3, std::nan("")}, {8, 5.0}}) == 8);
  CHECK(leader_of(
            {{3, std::nan("")}, {2, std::numeric_limits<double>::infinity()}})
        == 2);
  CHECK(leader_of({{7, 1.0}}) == 7);
  CHECK(elect({}) == 0);
}

TEST_CASE("the leader score is the running mean of the last losses") {
  loss_window w{3};
  CHECK(std::isnan(w.mean()));
  w.add(1);
  w.add(2);
  CHECK(w.mean() == Approx(1.5));
  w.add(std::nan(""));
  w.add(std::numeric_limits<double>::infinity());
  CHECK(w.size() == 2);
  w.add(3);
  w.add(10);
  CHECK(w.mean() == Approx(5.0)); // 2, 3, 10
  for (int i = 0; i < 5000; ++i)
    w.add(0.1 * (i % 7));
  // The last three: i = 4997, 4998, 4999 -> 6, 0, 1 (times 0.1).
  CHECK(w.mean() == Approx((0.6 + 0.0 + 0.1) / 3).epsilon(1e-12));
}

TEST_CASE("DiLoCo's outer step: SGD at rate 1 on the workers' mean "
          "pseudo-gradient gives the mean of their models; Nesterov is "
          "Algorithm 1's by hand over two rounds") {
  const std::uint64_t seed = 41;
  std::cout << "diloco outer step: seed " << seed << std::endl;
  rng gen{seed};
  const std::size_t n = 257, workers = 4;
  auto theta = random_vector(gen, n, 1.0);
  std::vector<std::vector<float>> local;
  for (std::size_t w = 0; w < workers; ++w) {
    auto moved = random_vector(gen, n, 0.1);
    for (std::size_t i = 0; i < n; ++i)
      moved[i] += theta[i];
    local.push_back(moved);
  }
  auto mean_delta = [&](const std::vector<float>& from) {
    std::vector<float> mean(n, 0.0f), d(n);
    for (auto& x : local) {
      pseudo_gradient(from.data(), x.data(), d.data(), n);
      for (std::size_t i = 0; i < n; ++i)
        mean[i] += d[i] / static_cast<float>(workers);
    }
    return mean;
  };
  // Federated averaging.
  auto avg = theta;
  auto sgd = make_optimizer<float>({"sgd", 0, 0}, n);
  sgd->step(avg.data(), mean_delta(theta).data(), n, 1.0);
  for (std::size_t i = 0; i < n; ++i) {
    double m = 0;
    for (auto& x : local)
      m += x[i] / static_cast<double>(workers);
    REQUIRE(avg[i] == Approx(m).margin(1e-6));
  }
  // Outer Nesterov (lr 0.7, momentum 0.9): v = 0.9 v + delta;
  // theta -= 0.7 (delta + 0.9 v), twice from the same local models.
  auto outer = theta;
  std::vector<double> ref(theta.begin(), theta.end()), v(n, 0.0);
  auto nesterov = make_optimizer<float>({"nesterov", 0.9, 0}, n);
  for (int round = 0; round < 2; ++round) {
    auto delta = mean_delta(outer);
    nesterov->step(outer.data(), delta.data(), n, 0.7);
    for (std::size_t i = 0; i < n; ++i) {
      double d = 0;
      for (auto& x : local)
        d += (ref[i] - x[i]) / static_cast<double>(workers);
      v[i] = 0.9 * v[i] + d;
      ref[i] -= 0.7 * (d + 0.9 * v[i]);
    }
    for (std::size_t i = 0; i < n; ++i)
      REQUIRE(outer[i] == Approx(ref[i]).margin(1e-5));
  }
}

TEST_CASE("Parle's steps by hand: scoping, the inner pull, the running mean, "
          "the anchor's gradient") {
  CHECK(parle_scope(0.01, 0.5, 1, 0, 10) == Approx(0.01).epsilon(1e-12));
  CHECK(parle_scope(0.01, 0.5, 1, 10, 10)
        == Approx(0.01 * std::pow(1.05, 10)).epsilon(1e-12));
  CHECK(parle_scope(0.01, 0.5, 1, 1e4, 10) == 1); // capped
  CHECK(parle_scope(0.3, 0.5, 1, 7, 0) == 0.3);   // no epochs: unscoped
  std::vector<float> g{1, -2}, y{3, 5}, anchor{1, 1}, z{0, 4}, ref{2, -1};
  parle_inner_gradient(g.data(), y.data(), anchor.data(), 0.5, 2);
  CHECK(g[0] == 1 + 0.5f * 2); // g + gamma (y - anchor)
  CHECK(g[1] == -2 + 0.5f * 4);
  running_average(z.data(), y.data(), 0.75, 2);
  CHECK(z[0] == 0.75f * 0 + 0.25f * 3);
  CHECK(z[1] == 0.75f * 4 + 0.25f * 5);
  std::vector<float> out(2);
  std::vector<float> zz{0, 4};
  parle_outer_gradient(anchor.data(), zz.data(), ref.data(), 2, out.data(), 2);
  CHECK(out[0] == (1 - 0) + 2 * (1 - 2)); // (x_a - z) + rho (x_a - x)
  CHECK(out[1] == (1 - 4) + 2 * (1 - (-1)));
}
