// L-BFGS as Sandblaster's coordinator drives it (algorithms.md §2): the
// two-loop recursion as vector commands equals -H g of a dense BFGS
// reconstruction (T3), the history ring and its curvature safeguard, and
// the serial reference reaching the LOGREG optimum.

#include <cmath>
#include <iostream>

#include <catch2/catch.hpp>

#include "optim/lbfgs.hpp"
#include "optim/rng.hpp"
#include "optim/synthetic.hpp"

using namespace troupe::optim;

TEST_CASE("T3: the two-loop commands give d = -H g of the dense BFGS "
          "reconstruction (d = 8, memory 5, 7 pairs: the ring wraps)") {
  const std::uint64_t seed = 401;
  std::cout << "two-loop vs dense BFGS: seed " << seed << std::endl;
  rng gen{seed};
  const std::size_t n = 8, m = 5;
  // A fixed SPD matrix A: y = A s gives curvature pairs.
  std::vector<std::vector<double>> a(n, std::vector<double>(n, 0.0));
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      double v = 0;
      for (std::size_t k = 0; k < n; ++k)
        v += (i == k ? 2.0 : 0.3 * std::sin(double(i + k)))
             * (j == k ? 2.0 : 0.3 * std::sin(double(j + k)));
      a[i][j] = v;
    }
  dense_store store{n, m};
  lbfgs_history h;
  h.memory = m;
  std::vector<std::vector<double>> ss, ys;
  for (int p = 0; p < 7; ++p) {
    std::vector<double> s(n), y(n, 0.0);
    for (auto& v : s)
      v = gen.normal();
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < n; ++j)
        y[i] += a[i][j] * s[j];
    double sy = 0, yy = 0, s2 = 0;
    for (std::size_t i = 0; i < n; ++i)
      sy += s[i] * y[i], yy += y[i] * y[i], s2 += s[i] * s[i];
    auto pos = h.next_position();
    REQUIRE(h.push(sy, yy, s2));
    store.slot(slot_s(pos)) = s;
    store.slot(slot_y(pos)) = y;
    ss.push_back(s);
    ys.push_back(y);
  }
  REQUIRE(h.ring.size() == m);
  auto& g = store.slot(slot_g);
  for (auto& v : g)
    v = gen.normal();
  auto g0 = g;
  run_two_loop(h, store);
  // Dense: H0 = gamma I, then H <- (I - rho s y') H (I - rho y s') +
  // rho s s' for the last m pairs, oldest first.
  std::vector<std::vector<double>> hm(n, std::vector<double>(n, 0.0));
  for (std::size_t i = 0; i < n; ++i)
    hm[i][i] = h.gamma;
  for (std::size_t p = ss.size() - m; p < ss.size(); ++p) {
    auto &s = ss[p], &y = ys[p];
    double sy = 0;
    for (std::size_t i = 0; i < n; ++i)
      sy += s[i] * y[i];
    double rho = 1 / sy;
    std::vector<std::vector<double>> v(n, std::vector<double>(n)),
        t(n, std::vector<double>(n, 0.0)), next(n, std::vector<double>(n, 0.0));
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < n; ++j)
        v[i][j] = (i == j ? 1.0 : 0.0) - rho * y[i] * s[j]; // (I - rho y s')
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < n; ++j)
        for (std::size_t k = 0; k < n; ++k)
          t[i][j] += hm[i][k] * v[k][j];
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < n; ++j) {
        for (std::size_t k = 0; k < n; ++k)
          next[i][j] += v[k][i] * t[k][j]; // v' (H v)
        next[i][j] += rho * s[i] * s[j];
      }
    hm = next;
  }
  const auto& d = store.slot(slot_d);
  for (std::size_t i = 0; i < n; ++i) {
    double expect = 0;
    for (std::size_t j = 0; j < n; ++j)
      expect -= hm[i][j] * g0[j];
    INFO("coordinate " << i);
    CHECK(d[i] == Approx(expect).epsilon(1e-10).margin(1e-12));
  }
  // About 2m + 4 commands with m dots each way.
  two_loop t{h};
  std::size_t dots = 0, commands = 0;
  for (auto c = t.next(); c.kind != vector_command::op::done; c = t.next()) {
    ++commands;
    if (c.kind == vector_command::op::dot) {
      ++dots;
      t.result(0.0);
    }
  }
  CHECK(dots == 2 * m);
  CHECK(commands == 4 * m + 4);
}

TEST_CASE("the history keeps m pairs, refuses bad curvature, and the "
          "machine insists on each dot's result") {
  lbfgs_history h;
  h.memory = 2;
  CHECK(h.next_position() == 0);
  CHECK(h.push(1.0, 2.0, 1.0));
  CHECK(h.next_position() == 1);
  CHECK(h.push(2.0, 2.0, 1.0));
  CHECK(h.next_position() == 0); // full: the oldest's position is reused
  CHECK_FALSE(h.push(-1.0, 1.0, 1.0));
  CHECK_FALSE(h.push(1e-12, 1.0, 1.0));
  CHECK(h.ring.size() == 2);
  CHECK(h.push(4.0, 2.0, 1.0));
  CHECK(h.ring == std::vector<std::uint32_t>{1, 0});
  CHECK(h.gamma == 2.0);
  two_loop t{h};
  t.next();          // copy
  auto c = t.next(); // the first dot
  CHECK(c.kind == vector_command::op::dot);
  CHECK_THROWS_AS(t.next(), std::logic_error);
}

TEST_CASE("the serial reference reaches the LOGREG optimum (Newton's) in "
          "few iterations") {
  const std::uint64_t seed = 402;
  std::cout << "lbfgs on logreg: seed " << seed << std::endl;
  logreg_options lo;
  lo.m = 2048;
  lo.d = 20;
  lo.mu = 1e-2;
  lo.seed = seed;
  auto prob = make_logreg(lo);
  objective_fn f = [&](const std::vector<double>& x, std::vector<double>& g) {
    g.resize(x.size());
    return full_gradient(prob, x.data(), g.data());
  };
  lbfgs_options o;
  o.memory = 10;
  o.max_iterations = 200;
  auto r = lbfgs_minimize(f, std::vector<double>(lo.d, 0.0), o);
  std::cout << "  " << r.iterations << " iterations, " << r.evaluations
            << " evaluations, |g| = " << r.gradient_norm
            << ", f - f* = " << r.f - prob.f_star << std::endl;
  CHECK(r.gradient_norm < 1e-8);
  CHECK(r.f - prob.f_star < 1e-12);
  double dist = 0;
  for (std::size_t i = 0; i < lo.d; ++i)
    dist = std::max(
        dist, std::abs(r.x[i] - prob.x_star[static_cast<Eigen::Index>(i)]));
  CHECK(dist < 1e-6);
  CHECK(r.iterations < 60);
}
