// ShadowSync's bodies (algorithms.md §6 T1, T2) as pure functions.

#include <iostream>

#include <catch2/catch.hpp>

#include "optim/rng.hpp"
#include "optim/shadow.hpp"

using namespace troupe::optim;

namespace {

std::vector<float> random_vector(rng& gen, std::size_t n) {
  std::vector<float> v(n);
  for (auto& x : v)
    x = static_cast<float>(gen.normal());
  return v;
}

} // namespace

TEST_CASE("S-BMUF with eta_b = 0 and zeta = 1 is S-MA: every round moves "
          "the start point to the average") {
  const std::uint64_t seed = 61;
  std::cout << "bmuf = ma: seed " << seed << std::endl;
  rng gen{seed};
  auto init = random_vector(gen, 50);
  bmuf_state s{init};
  for (int round = 0; round < 5; ++round) {
    auto avg = random_vector(gen, 50);
    bmuf_update(s, avg, 0.0, 1.0);
    CHECK(s.start == avg);
    CHECK(s.global == avg);
  }
}

TEST_CASE("BMUF's block momentum: with a constant block gradient the step "
          "grows toward zeta G / (1 - eta_b)") {
  std::vector<float> init(3, 0.0f);
  bmuf_state s{init};
  double eta = 0.5, zeta = 1.0;
  // The trainers always end a block 1.0 past the start point: G = 1.
  double last_step = 0;
  for (int round = 0; round < 40; ++round) {
    std::vector<float> avg(3);
    for (std::size_t i = 0; i < 3; ++i)
      avg[i] = s.start[i] + 1.0f;
    auto before = s.global[0];
    bmuf_update(s, avg, eta, zeta);
    last_step = s.global[0] - before;
  }
  CHECK(last_step == Approx(zeta / (1 - eta)).epsilon(1e-6));
  // Nesterov: the next start is one momentum step ahead of the global model.
  CHECK(s.start[0] - s.global[0] == Approx(eta * s.momentum[0]));
  CHECK_THROWS_AS(bmuf_update(s, std::vector<float>(2), eta, zeta),
                  std::invalid_argument);
}

TEST_CASE("delta-apply keeps the increments a trainer made during the "
          "round (T2)") {
  const std::uint64_t seed = 62;
  std::cout << "delta-apply: seed " << seed << std::endl;
  rng gen{seed};
  const std::size_t n = 40;
  auto snapshot = random_vector(gen, n);
  auto target = random_vector(gen, n);
  auto local = random_vector(gen, n); // learned while the round ran
  std::vector<float> x(n), delta(n);
  for (std::size_t i = 0; i < n; ++i)
    x[i] = snapshot[i] + local[i];
  shadow_delta(target.data(), snapshot.data(), delta.data(), n);
  for (std::size_t i = 0; i < n; ++i)
    x[i] += delta[i];
  for (std::size_t i = 0; i < n; ++i) {
    INFO("coordinate " << i);
    CHECK(x[i] == Approx(target[i] + local[i]).margin(1e-5));
  }
  // Overwriting instead would have lost exactly `local`.
  std::vector<double> sum(n, 0.0);
  accumulate(sum, x.data(), n);
  accumulate(sum, delta.data(), n);
  CHECK(sum[0] == Approx(double{x[0]} + delta[0]));
  CHECK_THROWS_AS(accumulate(sum, x.data(), n - 1), std::invalid_argument);
}
