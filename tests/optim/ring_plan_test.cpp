// Ring all-reduce schedule (algorithms.md §12): the exact sum for n in
// {1, 2, 3, 8, 13} with N not divisible by n, bytes per rank, equal replicas.

#include <iostream>
#include <numeric>

#include <catch2/catch.hpp>

#include "optim/ring_plan.hpp"
#include "optim/rng.hpp"

using namespace troupe::optim;

TEST_CASE("ring all-reduce yields the exact sum on every rank") {
  std::size_t n = GENERATE(1, 2, 3, 8, 13);
  std::size_t len = GENERATE(13, 100, 1001);
  if (len < n)
    return;
  std::uint64_t seed = 100 + n * 7 + len;
  INFO("n " << n << ", N " << len << ", seed " << seed);
  std::cout << "ring n " << n << " N " << len << " seed " << seed << '\n';
  ring_plan plan{n, len};
  rng gen{seed};
  // Small integers: every partial sum is exact in float, so any order of
  // additions must give exactly the float64 sum.
  std::vector<std::vector<float>> data(n, std::vector<float>(len));
  std::vector<double> exact(len, 0.0);
  for (auto& buf : data)
    for (std::size_t i = 0; i < len; ++i) {
      buf[i] = static_cast<float>(static_cast<int>(gen.below(2001)) - 1000);
      exact[i] += buf[i];
    }
  std::vector<float*> ptrs;
  for (auto& buf : data)
    ptrs.push_back(buf.data());
  ring_allreduce(plan, ptrs);
  for (std::size_t r = 0; r < n; ++r)
    for (std::size_t i = 0; i < len; ++i)
      REQUIRE(static_cast<double>(data[r][i]) == exact[i]);
}

TEST_CASE("random floats: replicas bitwise equal, sum within rounding") {
  const std::size_t n = 8, len = 997;
  std::uint64_t seed = 77;
  std::cout << "ring float seed " << seed << '\n';
  ring_plan plan{n, len};
  rng gen{seed};
  std::vector<std::vector<float>> data(n, std::vector<float>(len));
  std::vector<double> exact(len, 0.0);
  for (auto& buf : data)
    for (std::size_t i = 0; i < len; ++i) {
      buf[i] = static_cast<float>(gen.normal());
      exact[i] += buf[i];
    }
  std::vector<float*> ptrs;
  for (auto& buf : data)
    ptrs.push_back(buf.data());
  ring_allreduce(plan, ptrs);
  for (std::size_t r = 1; r < n; ++r)
    CHECK(data[r] == data[0]);
  for (std::size_t i = 0; i < len; ++i)
    CHECK(data[0][i] == Approx(exact[i]).margin(1e-5));
}

TEST_CASE("each rank sends 2 (n - 1) / n of the vector") {
  std::size_t n = GENERATE(2, 3, 8, 13);
  const std::size_t len = 1000;
  ring_plan plan{n, len};
  CHECK(plan.steps() == 2 * (n - 1));
  std::size_t total = 0;
  for (std::size_t r = 0; r < n; ++r) {
    auto sent = plan.elements_sent(r);
    total += sent;
    // Chunk sizes differ by at most one, so each rank is within 2 (n - 1)
    // elements of the ideal 2 (n - 1) N / n.
    double ideal = 2.0 * static_cast<double>((n - 1) * len) / n;
    CHECK(std::abs(static_cast<double>(sent) - ideal) <= 2.0 * (n - 1));
  }
  CHECK(total == 2 * (n - 1) * len);
  // In each phase a rank receives n - 1 distinct chunks, each once.
  for (std::size_t r = 0; r < n; ++r) {
    std::vector<int> reduced(n, 0), gathered(n, 0);
    for (std::size_t s = 0; s < plan.steps(); ++s) {
      auto t = plan.at(r, s);
      (t.reduce ? reduced : gathered)[t.recv_chunk]++;
      // What r receives is what its left neighbour sends in that step.
      CHECK(t.recv_chunk == plan.at(plan.left(r), s).send_chunk);
    }
    CHECK(std::count(reduced.begin(), reduced.end(), 1) == long(n - 1));
    CHECK(std::count(gathered.begin(), gathered.end(), 1) == long(n - 1));
  }
}

TEST_CASE("ring plans refuse impossible shapes") {
  CHECK_THROWS_WITH(ring_plan(0, 10), Catch::Contains("0 ranks"));
  CHECK_THROWS_WITH(ring_plan(5, 3), Catch::Contains("5 ranks for 3"));
  ring_plan plan{2, 4};
  float a[4] = {}, b[4] = {};
  CHECK_THROWS_WITH(ring_allreduce<float>(plan, {a}),
                    Catch::Contains("1 buffers"));
  (void)b;
}
