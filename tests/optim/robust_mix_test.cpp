// Robust mixing for gossip (optim/robust_mix.hpp): ClippedGossip's step is
// the plain weighted mix when nothing is clipped, a neighbour moves a model
// by at most w tau whatever it sends, a non-finite neighbour is skipped;
// a group's robust mix stays inside the honest members' range where the
// mean does not.

#include <cmath>
#include <limits>
#include <vector>

#include <catch2/catch.hpp>

#include "optim/robust_mix.hpp"

using namespace troupe::optim;

namespace {

double distance(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    s += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
  return std::sqrt(s);
}

} // namespace

TEST_CASE("clipped_mix without clipping is the weighted mix") {
  std::vector<float> x{1, 2, 3}, y{3, 2, 1}, z{0, 0, 6};
  auto out = clipped_mix(x.data(), 3, {{1, y.data(), 0.25}, {2, z.data(), 0.5}},
                         std::numeric_limits<double>::infinity());
  CHECK(out.clipped == 0);
  CHECK(out.skipped == 0);
  // (1 - 0.75) x + 0.25 y + 0.5 z
  CHECK(x[0] == Approx(0.25 * 1 + 0.25 * 3 + 0.5 * 0));
  CHECK(x[1] == Approx(0.25 * 2 + 0.25 * 2 + 0.5 * 0));
  CHECK(x[2] == Approx(0.25 * 3 + 0.25 * 1 + 0.5 * 6));
}

TEST_CASE("clipped_mix: a neighbour moves x by at most w tau") {
  const double tau = 0.5;
  for (float big : {1e3f, 1e30f, -1e30f}) {
    INFO(big);
    std::vector<float> x{1, -1, 0.5f, 2}, before = x;
    std::vector<float> y(4, big);
    auto out = clipped_mix(x.data(), 4, {{7, y.data(), 0.5}}, tau);
    CHECK(out.clipped == 1);
    CHECK(distance(x, before) <= 0.5 * tau * (1 + 1e-6));
    CHECK(distance(x, before)
          >= 0.5 * tau * (1 - 1e-6)); // clipped, not dropped
  }
  // Within the radius nothing is clipped: the full weighted step.
  std::vector<float> x{0, 0}, y{0.3f, 0.4f}; // distance 0.5
  auto out = clipped_mix(x.data(), 2, {{1, y.data(), 0.5}}, 1.0);
  CHECK(out.clipped == 0);
  CHECK(x[0] == Approx(0.15));
  CHECK(x[1] == Approx(0.2));
}

TEST_CASE("clipped_mix skips a non-finite neighbour and refuses bad "
          "settings") {
  std::vector<float> x{1, 2}, nan{std::nanf(""), 0},
      inf{std::numeric_limits<float>::infinity(), 0}, y{3, 2};
  auto out = clipped_mix(
      x.data(), 2,
      {{1, nan.data(), 0.3}, {2, inf.data(), 0.3}, {3, y.data(), 0.25}}, 10);
  CHECK(out.skipped == 2);
  CHECK(x[0] == Approx(1.5)); // only y's quarter of the way
  CHECK(x[1] == Approx(2));
  CHECK_THROWS_WITH(clipped_mix(x.data(), 2, {{1, y.data(), 0.5}}, 0),
                    Catch::Contains("radius must be positive"));
  CHECK_THROWS_WITH(clipped_mix(x.data(), 2, {{1, y.data(), 1.5}}, 1),
                    Catch::Contains("outside [0, 1]"));
  CHECK_THROWS_WITH(
      clipped_mix(x.data(), 2, {{1, y.data(), 0.6}, {2, y.data(), 0.6}}, 1),
      Catch::Contains("above 1"));
}

TEST_CASE("group_mix: the median of a group holds against a minority, the "
          "mean does not") {
  // 5 members: 3 honest near 1, 2 sending +-1e30 (or both +1e30).
  for (float second : {-1e30f, 1e30f}) {
    INFO(second);
    std::vector<std::vector<float>> m{{1.0f, 0.9f},
                                      {1.1f, 1.0f},
                                      {0.95f, 1.05f},
                                      {1e30f, 1e30f},
                                      {second, second}};
    std::vector<neighbour_model> members;
    for (std::uint32_t r = 0; r < 5; ++r)
      members.push_back({r, m[r].data(), 0});
    std::vector<float> x = m[0];
    members[0].values = x.data(); // the member's own model, mixed in place
    auto median = make_aggregation_rule("median");
    group_mix(*median, x.data(), 2, members);
    for (float v : x) {
      CHECK(v >= 0.9f);
      CHECK(v <= 1.1f);
    }
    x = m[0];
    auto mean = make_aggregation_rule("mean");
    group_mix(*mean, x.data(), 2, members);
    CHECK_FALSE(std::abs(x[0]) < 10);
  }
  // A selection rule reports whom it left out.
  std::vector<std::vector<float>> m{{1, 1},    {1.1f, 1}, {1, 1.1f},
                                    {0.9f, 1}, {1, 0.9f}, {50, 50}};
  std::vector<neighbour_model> members;
  for (std::uint32_t r = 0; r < 6; ++r)
    members.push_back({r, m[r].data(), 0});
  rule_options o;
  o.f = 1;
  auto krum = make_aggregation_rule("multi_krum", o);
  std::vector<float> x = m[0];
  auto dropped = group_mix(*krum, x.data(), 2, members);
  CHECK(dropped == std::vector<std::uint32_t>{5});
  CHECK(x[0] < 1.2f);
  auto cclip = make_aggregation_rule("cclip");
  CHECK_THROWS_WITH(group_mix(*cclip, x.data(), 2, members),
                    Catch::Contains("clipped_mix"));
}
