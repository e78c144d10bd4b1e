// The report's charts (apps/svg_plot.hpp): round ticks that cover the data,
// labels with the decimals their step needs, one point still on an axis.

#include <cmath>
#include <string>

#include <catch2/catch.hpp>

#include "apps/svg_plot.hpp"

using namespace troupe::apps;

namespace {

/// 1, 2 or 5 times a power of ten.
bool round_step(double step) {
  auto m = step / std::pow(10.0, std::floor(std::log10(step) + 1e-9));
  return std::abs(m - 1) < 1e-6 || std::abs(m - 2) < 1e-6
         || std::abs(m - 5) < 1e-6;
}

} // namespace

TEST_CASE("ticks are round steps that cover the data") {
  for (auto [lo, hi] : {std::pair{0.149619, 20.9714}, std::pair{0.7, 0.83},
                        std::pair{-3.2, 11.0}, std::pair{1234.0, 98765.0},
                        std::pair{0.0, 1e-4}}) {
    INFO(lo << " .. " << hi);
    auto t = nice_ticks(lo, hi);
    REQUIRE(t.size() >= 2);
    CHECK(t.size() <= 12);
    auto step = t[1] - t[0];
    CHECK(t.front() <= lo + step * 1e-9);
    CHECK(t.back() >= hi - step * 1e-9);
    CHECK(round_step(step));
    // No more than a step of slack on either side.
    CHECK(lo - t.front() < step * (1 + 1e-9));
    CHECK(t.back() - hi < step * (1 + 1e-9));
  }
  // The report's old "seconds 0.149619 .. 20.9714" axis: 0, 5, .., 25.
  CHECK(nice_ticks(0.149619, 20.9714)
        == std::vector<double>{0, 5, 10, 15, 20, 25});
}

TEST_CASE("one value still gets an axis around it, garbage a unit one") {
  auto t = nice_ticks(0.75, 0.75);
  REQUIRE(t.size() >= 2);
  CHECK(t.front() < 0.75);
  CHECK(t.back() > 0.75);
  t = nice_ticks(0, 0);
  CHECK(t.front() < 0);
  CHECK(t.back() > 0);
  CHECK(nice_ticks(NAN, 1) == std::vector<double>{0, 1});
  CHECK(nice_ticks(0, INFINITY) == std::vector<double>{0, 1});
}

TEST_CASE("tick labels have the decimals their step needs") {
  CHECK(tick_label(0.1, 0.02, 1) == "0.10");
  CHECK(tick_label(2, 0.5, 1) == "2.0");
  CHECK(tick_label(25, 5, 1) == "25");
  CHECK(tick_label(900000, 100000, scale_of(1e6)) == "900k");
  CHECK(tick_label(2.5e7, 5e6, scale_of(3e7)) == "25M");
  CHECK(tick_label(-1e-17, 0.1, 1) == "0.0");
}

TEST_CASE("a chart draws its axes, its points and their values") {
  plot p;
  p.title = "Test <accuracy>";
  p.x_label = "time (s)";
  p.y_label = "accuracy";
  p.lines.push_back({"a", "red", {{0, 0.5}, {10, 0.9}}});
  p.y_limits = std::make_pair(0.0, 1.0);
  auto svg = svg_group(p, 0, 0);
  CHECK_THAT(svg, Catch::Contains("Test &lt;accuracy&gt;")); // escaped
  CHECK_THAT(svg, Catch::Contains("<polyline"));
  CHECK_THAT(svg, Catch::Contains("<title>a: time (s) 10, accuracy 0.9"));
  // An empty chart says so instead of drawing nothing.
  plot empty;
  CHECK_THAT(svg_group(empty, 0, 0), Catch::Contains("no data"));
}
