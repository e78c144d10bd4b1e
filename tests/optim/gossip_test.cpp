// Push-sum and DS-Sync steps without actors (algorithms.md §5, §7): SGP T1
// (z reaches the exact average on a non-regular graph, x alone is biased),
// T2 (weight and mass conservation counting what is in flight), T3 (exact
// average after q steps on the exponential graph); DS-Sync T1 (the mean is
// kept), T2 (digit schedule exact in q rounds, random schedule shrinks the
// disagreement) and T3 (every rank computes the same partition).

#include <algorithm>
#include <cmath>
#include <deque>
#include <iostream>
#include <set>

#include <catch2/catch.hpp>

#include "optim/gossip.hpp"
#include "optim/rng.hpp"

using namespace troupe::optim;

namespace {

std::vector<push_sum_state> random_states(std::uint32_t n, std::size_t d,
                                          std::uint64_t seed) {
  rng gen{seed};
  std::vector<push_sum_state> s(n);
  for (auto& x : s) {
    x.x.resize(d);
    for (auto& v : x.x)
      v = static_cast<float>(gen.normal() * 2);
  }
  return s;
}

std::vector<double> mean_of(const std::vector<push_sum_state>& s) {
  std::vector<double> m(s[0].x.size(), 0.0);
  for (auto& x : s)
    for (std::size_t i = 0; i < m.size(); ++i)
      m[i] += x.x[i] / static_cast<double>(s.size());
  return m;
}

} // namespace

TEST_CASE("SGP T1: on a non-regular graph z = x / w reaches the exact "
          "average while x alone is biased") {
  const std::uint32_t n = 7;
  auto s = random_states(n, 5, 3);
  std::cout << "SGP T1 seed 3, n " << n << '\n';
  auto target = mean_of(s);
  // Node i sends to i + 1; even nodes also to i + 2 (column-stochastic).
  for (int k = 0; k < 300; ++k) {
    std::vector<std::vector<push_sum_share>> inbox(n);
    for (std::uint32_t i = 0; i < n; ++i) {
      std::vector<std::uint32_t> out{(i + 1) % n};
      if (i % 2 == 0)
        out.push_back((i + 2) % n);
      auto share = push_sum_split(s[i], out.size());
      for (auto j : out)
        inbox[j].push_back(share);
    }
    for (std::uint32_t i = 0; i < n; ++i)
      for (auto& sh : inbox[i])
        push_sum_mix(s[i], sh);
  }
  double worst_x = 0;
  std::vector<float> z(5);
  for (auto& x : s) {
    push_sum_debias(x, z.data());
    for (std::size_t i = 0; i < z.size(); ++i) {
      CHECK(z[i] == Approx(target[i]).margin(1e-4));
      worst_x = std::max(worst_x, std::abs(x.x[i] - target[i]));
    }
  }
  CHECK(worst_x > 0.05); // the numerators alone are not the average
}

TEST_CASE("SGP T2: weight and mass are conserved, counting what is in "
          "flight, under random delivery delays") {
  const std::uint32_t n = 8;
  const std::size_t d = 4;
  auto s = random_states(n, d, 5);
  std::cout << "SGP T2 seed 5\n";
  std::vector<double> mass0(d, 0.0);
  for (auto& x : s)
    for (std::size_t i = 0; i < d; ++i)
      mass0[i] += x.x[i];
  struct flight {
    std::uint32_t to;
    int due;
    push_sum_share share;
  };
  std::deque<flight> in_flight;
  rng gen{5};
  for (int k = 0; k < 200; ++k) {
    for (std::uint32_t i = 0; i < n; ++i) {
      auto out = exponential_out_peers(i, k, n, 2);
      auto share = push_sum_split(s[i], out.size());
      for (auto j : out)
        in_flight.push_back({j, k + static_cast<int>(gen.below(3)), share});
    }
    for (auto it = in_flight.begin(); it != in_flight.end();)
      if (it->due <= k) {
        push_sum_mix(s[it->to], it->share);
        it = in_flight.erase(it);
      } else {
        ++it;
      }
    double w = 0;
    std::vector<double> mass(d, 0.0);
    for (auto& x : s) {
      w += x.w;
      for (std::size_t i = 0; i < d; ++i)
        mass[i] += x.x[i];
    }
    for (auto& f : in_flight) {
      w += f.share.w;
      for (std::size_t i = 0; i < d; ++i)
        mass[i] += f.share.x[i];
    }
    REQUIRE(w == Approx(n).epsilon(1e-12));
    for (std::size_t i = 0; i < d; ++i)
      REQUIRE(mass[i] == Approx(mass0[i]).margin(1e-3));
  }
}

TEST_CASE("SGP T3: the 1-peer exponential graph on 2^q nodes averages "
          "exactly in q steps with w = 1 throughout") {
  for (std::uint32_t q : {1u, 3u, 5u}) {
    std::uint32_t n = 1u << q;
    auto s = random_states(n, 3, q);
    auto target = mean_of(s);
    for (std::uint64_t k = 0; k < q; ++k) {
      std::vector<push_sum_share> inbox(n);
      for (std::uint32_t i = 0; i < n; ++i) {
        auto out = exponential_out_peers(i, k, n, 1);
        REQUIRE(out.size() == 1);
        inbox[out[0]] = push_sum_split(s[i], 1);
      }
      for (std::uint32_t i = 0; i < n; ++i) {
        auto in = exponential_in_peers(i, k, n, 1);
        REQUIRE(in.size() == 1);
        REQUIRE(exponential_out_peers(in[0], k, n, 1)[0] == i);
        push_sum_mix(s[i], inbox[i]);
        CHECK(s[i].w == 1.0);
      }
    }
    for (auto& x : s)
      for (std::size_t i = 0; i < 3; ++i)
        CHECK(x.x[i] == Approx(target[i]).margin(1e-5));
  }
}

TEST_CASE("the exponential graph: offsets cycle, 2 peers are distinct, bad "
          "shares are refused") {
  CHECK(exponential_out_peers(0, 0, 8, 1) == std::vector<std::uint32_t>{1});
  CHECK(exponential_out_peers(0, 1, 8, 1) == std::vector<std::uint32_t>{2});
  CHECK(exponential_out_peers(0, 2, 8, 1) == std::vector<std::uint32_t>{4});
  CHECK(exponential_out_peers(0, 3, 8, 1) == std::vector<std::uint32_t>{1});
  CHECK(exponential_out_peers(5, 0, 8, 2) == std::vector<std::uint32_t>{6, 7});
  CHECK(exponential_out_peers(0, 0, 1, 1).empty());
  CHECK(exponential_out_peers(1, 7, 2, 2) == std::vector<std::uint32_t>{0});
  push_sum_state s{{1, 2}, 1};
  CHECK_THROWS_WITH(push_sum_mix(s, {{1}, 0.5}),
                    Catch::Contains("1 values for a model of 2"));
  CHECK_THROWS_WITH(push_sum_mix(s, {{1, std::nanf("")}, 0.5}),
                    Catch::Contains("non-finite"));
}

TEST_CASE("DS-Sync T1, T2: groups keep the mean; the digit schedule gives "
          "the exact average in q rounds") {
  const std::uint32_t n = 64, m = 4, q = 3;
  rng gen{9};
  std::cout << "DS-Sync T2 seed 9, n 64, m 4\n";
  std::vector<std::vector<float>> xs(n, std::vector<float>(6));
  std::vector<double> mean(6, 0.0);
  for (auto& x : xs)
    for (std::size_t i = 0; i < 6; ++i) {
      x[i] = static_cast<float>(gen.normal());
      mean[i] += x[i] / n;
    }
  for (std::uint64_t k = 0; k < q; ++k) {
    auto g = digit_groups(n, m, k);
    for (auto& members : group_members(g))
      CHECK(members.size() == m);
    average_groups(xs, g);
    std::vector<double> now(6, 0.0);
    for (auto& x : xs)
      for (std::size_t i = 0; i < 6; ++i)
        now[i] += x[i] / n;
    for (std::size_t i = 0; i < 6; ++i)
      CHECK(now[i] == Approx(mean[i]).margin(1e-5));
  }
  for (auto& x : xs)
    for (std::size_t i = 0; i < 6; ++i)
      CHECK(x[i] == Approx(mean[i]).margin(1e-5));
  CHECK_THROWS_WITH(digit_groups(48, 4, 0), Catch::Contains("power of 4"));
}

TEST_CASE("DS-Sync T2, T3: the random schedule shrinks the disagreement; "
          "every rank computes the same partitions") {
  const std::uint32_t n = 16, m = 4;
  rng gen{13};
  std::cout << "DS-Sync random seed 13\n";
  std::vector<std::vector<float>> xs(n, std::vector<float>(3));
  for (auto& x : xs)
    for (auto& v : x)
      v = static_cast<float>(gen.normal());
  auto disagreement = [&] {
    double mean[3] = {0, 0, 0}, sum = 0;
    for (auto& x : xs)
      for (int i = 0; i < 3; ++i)
        mean[i] += x[i] / n;
    for (auto& x : xs)
      for (int i = 0; i < 3; ++i)
        sum += (x[i] - mean[i]) * (x[i] - mean[i]);
    return sum;
  };
  double d0 = disagreement();
  for (std::uint64_t k = 0; k < 12; ++k)
    average_groups(xs, random_groups(n, m, k, 13));
  CHECK(disagreement() < 1e-4 * d0);
  for (std::uint64_t k = 0; k < 10000; ++k) {
    auto a = random_groups(n, m, k, 13);
    REQUIRE(a == random_groups(n, m, k, 13));
    for (auto& g : group_members(a))
      REQUIRE(g.size() == m);
    REQUIRE(digit_groups(n, m, k) == digit_groups(n, m, k));
  }
  CHECK(random_groups(n, m, 1, 13) != random_groups(n, m, 2, 13));
}

TEST_CASE("DS-Sync random groups from a rank's side: the shuffle is a "
          "permutation, a rank's members are its group, in O(m)") {
  std::cout << "shuffle seeds 7 and 8\n";
  for (std::uint32_t n : {1u, 2u, 3u, 5u, 17u, 64u, 100u, 1000u, 4099u}) {
    for (std::uint64_t k : {0ull, 1ull, 977ull}) {
      std::vector<char> hit(n, 0);
      for (std::uint32_t r = 0; r < n; ++r) {
        auto p = shuffle_place(r, n, k, 7);
        REQUIRE(p < n);
        REQUIRE(hit[p] == 0); // a permutation
        hit[p] = 1;
        REQUIRE(shuffle_rank(p, n, k, 7) == r); // and its inverse
      }
      for (std::uint32_t m : {2u, 3u, 10u}) {
        auto groups = random_groups(n, m, k, 7);
        auto members = group_members(groups);
        for (std::size_t g = 0; g < members.size(); ++g)
          REQUIRE(members[g].size() == std::min<std::size_t>(m, n - g * m));
        for (std::uint32_t r = 0; r < n; r += 1 + n / 50)
          REQUIRE(random_group_members(r, n, m, k, 7) == members[groups[r]]);
      }
    }
  }
  // Rounds and seeds give other shuffles; the partner of rank 0 over many
  // rounds is spread evenly over the ranks (64 ranks, 6300 rounds: 100
  // each expected, a standard deviation of 10; four Feistel rounds gave
  // one rank 213 here, eight give 84-124).
  CHECK(random_groups(100, 4, 1, 7) != random_groups(100, 4, 2, 7));
  CHECK(random_groups(100, 4, 1, 7) != random_groups(100, 4, 1, 8));
  std::vector<int> partner(64, 0);
  for (std::uint64_t k = 0; k < 6300; ++k)
    for (auto r : random_group_members(0, 64, 2, k, 7))
      ++partner[r];
  CHECK(partner[0] == 6300);
  for (std::uint32_t r = 1; r < 64; ++r) {
    CHECK(partner[r] > 50);
    CHECK(partner[r] < 150);
  }
  CHECK_THROWS_AS(shuffle_place(5, 5, 0, 7), std::invalid_argument);
  CHECK_THROWS_AS(shuffle_rank(9, 5, 0, 7), std::invalid_argument);
}

TEST_CASE("a peer's neighbours: every rank it exchanges with at any "
          "iteration, and no other (the exponential graph, digit groups)") {
  for (std::uint32_t n : {1u, 2u, 3u, 5u, 8u, 13u, 64u, 100u}) {
    for (std::uint32_t r = 0; r < n; ++r) {
      std::set<std::uint32_t> seen;
      for (std::uint32_t peers : {1u, 2u})
        for (std::uint64_t k = 0; k < 32; ++k) {
          for (auto j : exponential_out_peers(r, k, n, peers))
            seen.insert(j);
          for (auto j : exponential_in_peers(r, k, n, peers))
            seen.insert(j);
        }
      seen.erase(r);
      auto mine = exponential_neighbours(r, n);
      REQUIRE(mine == std::vector<std::uint32_t>(seen.begin(), seen.end()));
      for (auto j : mine) { // symmetric
        auto theirs = exponential_neighbours(j, n);
        REQUIRE(std::count(theirs.begin(), theirs.end(), r) == 1);
      }
    }
  }
  CHECK(exponential_neighbours(0, 10000).size() <= 2 * 14);
  for (auto [n, m] : {std::pair{8u, 2u}, {27u, 3u}, {64u, 4u}, {16u, 16u}}) {
    std::vector<std::set<std::uint32_t>> met(n);
    for (std::uint64_t k = 0; k < 12; ++k) {
      auto groups = group_members(digit_groups(n, m, k));
      for (std::uint32_t r = 0; r < n; ++r) {
        auto mine = digit_group_members(r, n, m, k);
        REQUIRE(mine == groups[digit_groups(n, m, k)[r]]);
        met[r].insert(mine.begin(), mine.end());
      }
    }
    for (std::uint32_t r = 0; r < n; ++r) {
      met[r].erase(r);
      REQUIRE(digit_neighbours(r, n, m)
              == std::vector<std::uint32_t>(met[r].begin(), met[r].end()));
    }
  }
  CHECK_THROWS_WITH(digit_group_members(0, 12, 4, 0),
                    Catch::Contains("12 ranks is not a power of 4"));
  CHECK_THROWS_WITH(digit_neighbours(0, 8, 1),
                    Catch::Contains("groups of at least 2"));
}
