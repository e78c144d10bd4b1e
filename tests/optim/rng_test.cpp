#include <cmath>
#include <cstdint>
#include <iostream>
#include <limits>
#include <vector>

#include <catch2/catch.hpp>

#include "optim/rng.hpp"

using troupe::optim::rng;

TEST_CASE("rng reproduces the reference xoshiro256** stream") {
  // Computed with an independent implementation of SplitMix64 seeding and
  // xoshiro256** (Blackman and Vigna's reference algorithms).
  rng zero{0};
  CHECK(zero.next() == 0x99ec5f36cb75f2b4ULL);
  CHECK(zero.next() == 0xbf6e1f784956452aULL);
  CHECK(zero.next() == 0x1a5f849d4933e6e0ULL);
  CHECK(zero.next() == 0x6aa594f1262d2d2cULL);
  rng answer{42};
  CHECK(answer.next() == 0x15780b2e0c2ec716ULL);
  CHECK(answer.next() == 0x6104d9866d113a7eULL);
  CHECK(answer.next() == 0xae17533239e499a1ULL);
  CHECK(answer.next() == 0xecb8ad4703b360a1ULL);
}

TEST_CASE("rng: same seed, same stream; other seed, other stream") {
  rng a{7};
  rng b{7};
  rng c{8};
  int differ = 0;
  for (int i = 0; i < 100; ++i) {
    const auto x = a.next();
    CHECK(x == b.next());
    differ += x != c.next();
  }
  CHECK(differ == 100);
}

TEST_CASE("rng::uniform lies in [0, 1) with the right moments") {
  const std::uint64_t seed = 123;
  std::cout << "rng_test: uniform seed " << seed << "\n";
  rng gen{seed};
  const int n = 200000;
  double sum = 0;
  double sum2 = 0;
  double lo = 1;
  double hi = 0;
  for (int i = 0; i < n; ++i) {
    const double u = gen.uniform();
    sum += u;
    sum2 += u * u;
    lo = std::min(lo, u);
    hi = std::max(hi, u);
  }
  CHECK(lo >= 0.0);
  CHECK(hi < 1.0);
  // Mean 1/2 and variance 1/12, each within ~5 standard errors.
  CHECK(std::abs(sum / n - 0.5) < 5 * std::sqrt(1.0 / 12 / n));
  CHECK(std::abs(sum2 / n - sum * sum / n / n - 1.0 / 12) < 0.002);
  CHECK(lo < 1e-4);
  CHECK(hi > 1 - 1e-4);
}

TEST_CASE("rng::uniform(lo, hi) stays in [lo, hi)") {
  rng gen{5};
  for (int i = 0; i < 10000; ++i) {
    const double x = gen.uniform(-0.25, 0.75);
    CHECK(x >= -0.25);
    CHECK(x < 0.75);
  }
  // A degenerate-width interval still returns a value below hi.
  const double hi = 1.0;
  const double lo = std::nextafter(hi, 0.0);
  for (int i = 0; i < 100; ++i)
    CHECK(gen.uniform(lo, hi) < hi);
}

TEST_CASE("rng::normal has mean 0 and variance 1") {
  const std::uint64_t seed = 99;
  std::cout << "rng_test: normal seed " << seed << "\n";
  rng gen{seed};
  const int n = 200000;
  double sum = 0;
  double sum2 = 0;
  int beyond3 = 0;
  for (int i = 0; i < n; ++i) {
    const double z = gen.normal();
    REQUIRE(std::isfinite(z));
    sum += z;
    sum2 += z * z;
    beyond3 += std::abs(z) > 3;
  }
  CHECK(std::abs(sum / n) < 5 / std::sqrt(double(n)));
  CHECK(std::abs(sum2 / n - 1) < 5 * std::sqrt(2.0 / n));
  // P(|Z| > 3) = 0.0027.
  CHECK(std::abs(beyond3 / double(n) - 0.0027) < 0.0006);
}

TEST_CASE("rng::below is in range and unbiased") {
  const std::uint64_t seed = 2024;
  std::cout << "rng_test: below seed " << seed << "\n";
  rng gen{seed};
  CHECK(gen.below(1) == 0);
  // Chi-square over 10 buckets: 9 degrees of freedom, 99.9% quantile 27.9.
  std::vector<int> counts(10, 0);
  const int n = 100000;
  for (int i = 0; i < n; ++i) {
    const auto x = gen.below(10);
    REQUIRE(x < 10);
    ++counts[x];
  }
  double chi2 = 0;
  for (int c : counts)
    chi2 += (c - n / 10.0) * (c - n / 10.0) / (n / 10.0);
  CHECK(chi2 < 27.9);
  // n = 3 * 2^62: plain modulo would map the top quarter of raw values onto
  // [0, 2^62), making it half of all draws; unbiased it is a third.
  const std::uint64_t n3 = 3 * (std::uint64_t{1} << 62);
  int low = 0;
  for (int i = 0; i < 9000; ++i) {
    const auto x = gen.below(n3);
    REQUIRE(x < n3);
    low += x < (std::uint64_t{1} << 62);
  }
  CHECK(std::abs(low - 3000) < 225); // ~5 standard deviations
}
