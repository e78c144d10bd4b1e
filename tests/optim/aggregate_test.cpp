// The aggregation rules of a synchronous round (optim/aggregate.hpp): the
// weighted mean bit for bit against sums worked out by hand, uneven sample
// counts included, and the registry's refusal of an unknown name.

#include <cstring>
#include <vector>

#include <catch2/catch.hpp>

#include "optim/aggregate.hpp"

using namespace troupe::optim;

namespace {

/// Whether a and b hold the same bits.
bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size()
         && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::vector<float> combine(aggregation_rule& rule,
                           const std::vector<contribution>& xs, std::size_t n) {
  std::vector<float> out(n, -1.0f);
  rule.combine(xs.data(), xs.size(), n, out.data());
  return out;
}

} // namespace

TEST_CASE("the mean of equal sample counts is the plain mean") {
  auto rule = make_aggregation_rule("mean");
  CHECK(rule->name() == "mean");
  std::vector<float> a{1.0f, -2.0f, 0.5f}, b{3.0f, 2.0f, 0.25f};
  std::vector<contribution> xs{{0, 4, a.data()}, {1, 4, b.data()}};
  CHECK(same_bits(combine(*rule, xs, 3), {2.0f, 0.0f, 0.375f}));
}

TEST_CASE("the mean weighs each worker by its samples (exact weights)") {
  // 3, 5 and 8 of 16 examples: weights 3/16, 5/16, 1/2, all exact.
  auto rule = make_aggregation_rule("mean");
  std::vector<float> a{16.0f, 0.0f}, b{0.0f, 16.0f}, c{2.0f, -4.0f};
  std::vector<contribution> xs{
      {0, 3, a.data()}, {2, 5, b.data()}, {7, 8, c.data()}};
  // 3 + 0 + 1 = 4; 0 + 5 - 2 = 3.
  CHECK(same_bits(combine(*rule, xs, 2), {4.0f, 3.0f}));
}

TEST_CASE("the mean with weights that round: float weights, summed in "
          "order from zero") {
  // 1, 2 and 4 of 7 examples: the weights 1/7, 2/7, 4/7 computed in double
  // and rounded to float; the values are powers of two, so each product is
  // exact and only the sums round, in the order given.
  auto rule = make_aggregation_rule("mean");
  const float w0 = static_cast<float>(1.0 / 7.0);
  const float w1 = static_cast<float>(2.0 / 7.0);
  const float w2 = static_cast<float>(4.0 / 7.0);
  std::vector<float> a{1.0f, 8.0f, -0.5f}, b{2.0f, -1.0f, 0.25f},
      c{4.0f, 0.125f, 64.0f};
  std::vector<contribution> xs{
      {0, 1, a.data()}, {1, 2, b.data()}, {2, 4, c.data()}};
  std::vector<float> expected(3);
  for (std::size_t i = 0; i < 3; ++i) {
    float s = 0.0f;
    s = s + w0 * a[i];
    s = s + w1 * b[i];
    s = s + w2 * c[i];
    expected[i] = s;
  }
  // By hand, element 0: 1/7 + 4/7 + 16/7 = 3 up to rounding.
  CHECK(expected[0] == Approx(3.0).epsilon(1e-6));
  CHECK(same_bits(combine(*rule, xs, 3), expected));
}

TEST_CASE("one contribution is taken as it is") {
  auto rule = make_aggregation_rule("mean");
  std::vector<float> a{0.1f, -7.3f, 1e-30f};
  std::vector<contribution> xs{{5, 13, a.data()}};
  CHECK(same_bits(combine(*rule, xs, 3), a));
}

TEST_CASE("the registry lists its rules and refuses an unknown name, "
          "naming the valid ones") {
  auto names = aggregation_rule_names();
  REQUIRE_FALSE(names.empty());
  CHECK(names.front() == "mean");
  for (const auto& name : names)
    CHECK(make_aggregation_rule(name)->name() == name);
  CHECK_THROWS_AS(make_aggregation_rule("median?"), std::invalid_argument);
  CHECK_THROWS_WITH(make_aggregation_rule("median?"),
                    Catch::Contains("unknown aggregation rule 'median?'")
                        && Catch::Contains("known: mean"));
}
