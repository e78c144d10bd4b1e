// The Byzantine-robust rules (optim/robust.hpp) on hand-built inputs: each
// rule's answer worked out by hand, their known breakdown points (bounded
// below, broken at and above), and what each returns when f workers send
// +-1e30, NaN or copies of one vector.

#include <algorithm>
#include <cmath>
#include <iostream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "optim/aggregate.hpp"
#include "optim/robust.hpp"
#include "optim/state_file.hpp"

using namespace troupe::optim;

namespace {

using vecs = std::vector<std::vector<float>>;

/// Runs `rule` on `xs` (worker k is xs[k]); the result.
std::vector<float> run(aggregation_rule& rule, const vecs& xs) {
  std::vector<contribution> cs;
  for (std::size_t k = 0; k < xs.size(); ++k)
    cs.push_back({static_cast<std::uint32_t>(k), 1, xs[k].data()});
  std::vector<float> out(xs.front().size(), -7.0f);
  rule.combine(cs.data(), cs.size(), out.size(), out.data());
  return out;
}

std::vector<float> run(const std::string& name, const vecs& xs,
                       rule_options o = {}) {
  auto rule = make_aggregation_rule(name, o);
  return run(*rule, xs);
}

/// n honest vectors of size d around `center` (spread 0.1), seed printed.
vecs honest(std::size_t n, std::size_t d, float center, unsigned seed) {
  INFO("seed " << seed);
  std::mt19937 gen{seed};
  std::normal_distribution<float> noise{0.0f, 0.1f};
  vecs out(n, std::vector<float>(d));
  for (auto& v : out)
    for (auto& x : v)
      x = center + noise(gen);
  return out;
}

/// Whether every coordinate of `y` lies within the honest ones' range.
bool within_honest(const std::vector<float>& y, const vecs& good) {
  for (std::size_t i = 0; i < y.size(); ++i) {
    float lo = good[0][i], hi = good[0][i];
    for (const auto& g : good) {
      lo = std::min(lo, g[i]);
      hi = std::max(hi, g[i]);
    }
    if (!(y[i] >= lo && y[i] <= hi))
      return false;
  }
  return true;
}

double norm(const std::vector<float>& x) {
  double s = 0;
  for (float v : x)
    s += double{v} * v;
  return std::sqrt(s);
}

const std::vector<std::string> robust_names{
    "median", "trimmed_mean", "krum", "multi_krum",
    "geomed", "cclip",        "cge",  "licm"};

} // namespace

TEST_CASE("coordinate-wise median and trimmed mean, by hand") {
  CHECK(run("median", {{1}, {2}, {100}}) == std::vector<float>{2});
  CHECK(run("median", {{1, 5}, {2, -5}, {100, 0}, {3, 1}})
        == std::vector<float>{2.5f, 0.5f});
  rule_options o;
  o.f = 1; // b = 1 of 5: the trimmed mean of -100, 1, 2, 3, 100 is 2
  CHECK(run("trimmed_mean", {{-100}, {1}, {2}, {3}, {100}}, o)
        == std::vector<float>{2});
}

TEST_CASE("Krum picks a point of the tight cluster; multi-Krum averages the "
          "cluster; CGE drops the largest norms") {
  vecs xs{{1, 1}, {1.1f, 0.9f}, {0.9f, 1.1f}, {1, 1.05f}, {50, -50}, {60, 60}};
  rule_options o;
  o.f = 2; // n = 6 > 2f + 2
  auto rule = make_aggregation_rule("krum", o);
  auto k = run(*rule, xs);
  bool honest_point = false;
  for (std::size_t i = 0; i < 4; ++i)
    honest_point = honest_point || k == xs[i];
  CHECK(honest_point);
  CHECK(rule->discarded().size() == 5);
  auto multi = make_aggregation_rule("multi_krum", o);
  auto m = run(*multi, xs); // m = n - f = 4: the four honest ones
  CHECK(m[0] == Approx(1.0).margin(1e-6));
  CHECK(m[1] == Approx(1.0125).margin(1e-6));
  CHECK(multi->discarded() == std::vector<std::uint32_t>{4, 5});
  auto cge = make_aggregation_rule("cge", o);
  auto c = run(*cge, xs);
  CHECK(cge->discarded() == std::vector<std::uint32_t>{4, 5});
  // Its output's norm is at most the largest honest norm.
  double top = 0;
  for (std::size_t i = 0; i < 4; ++i)
    top = std::max(top, norm(xs[i]));
  CHECK(norm(c) <= top);
}

TEST_CASE("the geometric median of points on a line is their median; with "
          "an outlier it stays with the majority") {
  auto g = run("geomed", {{0}, {1}, {10}});
  CHECK(g[0] == Approx(1.0).margin(1e-3));
  auto h = run("geomed", {{0, 0}, {1, 0}, {0, 1}, {1, 1}, {1e6f, 1e6f}});
  CHECK(h[0] > 0.4);
  CHECK(h[0] < 1.1);
  CHECK(h[1] > 0.4);
  CHECK(h[1] < 1.1);
}

TEST_CASE("centered clipping: a round within the radius is the mean; an "
          "outlier moves the center at most radius / n per iteration") {
  rule_options o;
  o.clip_radius = 10;
  o.clip_iterations = 1;
  auto a = run("cclip", {{1, 2}, {3, 4}}, o);
  CHECK(a[0] == Approx(2.0));
  CHECK(a[1] == Approx(3.0));
  o.clip_radius = 1;
  o.clip_iterations = 3;
  auto rule = make_aggregation_rule("cclip", o);
  auto b = run(*rule, {{0, 0}, {0, 0}, {0, 0}, {1e30f, -1e30f}});
  CHECK(norm(b) <= 3 * 1.0 / 4 + 1e-6);
  // The next round starts from that center.
  auto c = run(*rule, {{0, 0}, {0, 0}, {0, 0}, {0, 0}});
  CHECK(norm(c) < norm(b));
}

TEST_CASE("LICM keeps workers whose gradient changes no more than the "
          "median change, and takes their coordinate-wise median") {
  auto rule = make_aggregation_rule("licm");
  vecs first{{1, 1}, {1.2f, 0.8f}, {0.8f, 1.2f}, {1, 1}, {1.1f, 0.9f}};
  auto a = run(*rule, first); // no history: everyone kept
  CHECK(rule->discarded().empty());
  CHECK(a == std::vector<float>{1, 1});
  // Worker 4 jumps far from its last gradient: above the median change.
  // Those above the (lower) median change are left out: 2 of 5, the
  // attacker and the honest worker that changed most (worker 2).
  vecs second{{1.05f, 1}, {1.2f, 0.85f}, {0.8f, 1.3f}, {1, 1.02f}, {-40, 40}};
  auto b = run(*rule, second);
  CHECK(rule->discarded() == std::vector<std::uint32_t>{2, 4});
  CHECK(within_honest(b, {second.begin(), second.begin() + 4}));
}

TEST_CASE("below the breakdown point f huge vectors leave median, trimmed "
          "mean, Krum and multi-Krum within the honest range; the mean "
          "breaks") {
  for (float huge : {1e30f, -1e30f}) {
    auto good = honest(7, 16, 0.5f, 11);
    auto xs = good;
    for (int k = 0; k < 2; ++k) // f = 2 of 9
      xs.push_back(std::vector<float>(16, huge));
    rule_options o;
    o.f = 2;
    for (const char* name : {"median", "trimmed_mean", "krum", "multi_krum"}) {
      INFO(name << " against " << huge);
      CHECK(within_honest(run(name, xs, o), good));
    }
    auto geomed = run("geomed", xs, o);
    CHECK(std::abs(geomed[0] - 0.5f) < 0.5f);
    auto mean = run("mean", xs, o);
    CHECK(std::abs(mean[0]) > 1e28f);
  }
}

TEST_CASE("at the breakdown point the median and the trimmed mean follow "
          "the attackers") {
  auto good = honest(4, 8, 0.5f, 12);
  auto xs = good;
  for (int k = 0; k < 5; ++k) // 5 of 9: a majority
    xs.push_back(std::vector<float>(8, 1e30f));
  CHECK(run("median", xs)[0] > 1e29f);
  rule_options o;
  o.f = 2; // trims 2 a side: 3 of the 5 remain
  CHECK(run("trimmed_mean", xs, o)[0] > 1e29f);
}

TEST_CASE("NaN and infinite contributions are discarded by every robust "
          "rule, which then answers from the rest") {
  auto good = honest(7, 8, -0.25f, 13);
  auto xs = good;
  xs.push_back(std::vector<float>(8, std::numeric_limits<float>::quiet_NaN()));
  auto inf = std::vector<float>(8, 0.0f);
  inf[3] = std::numeric_limits<float>::infinity();
  xs.push_back(inf);
  rule_options o;
  o.f = 2;
  for (const auto& name : robust_names) {
    INFO(name);
    auto rule = make_aggregation_rule(name, o);
    auto out = run(*rule, xs);
    for (float v : out)
      CHECK(std::isfinite(v));
    auto gone = rule->discarded();
    CHECK(std::count(gone.begin(), gone.end(), 7u) == 1);
    CHECK(std::count(gone.begin(), gone.end(), 8u) == 1);
  }
  // Nothing finite at all: a zero step.
  auto rule = make_aggregation_rule("median");
  CHECK(run(*rule, {xs[7], xs[7]}) == std::vector<float>(8, 0.0f));
}

TEST_CASE("f colluding copies of one vector: the selection rules keep the "
          "honest cluster") {
  auto good = honest(7, 32, 1.0f, 14);
  auto xs = good;
  for (int k = 0; k < 2; ++k)
    xs.push_back(std::vector<float>(32, -3.0f)); // identical, far
  rule_options o;
  o.f = 2;
  for (const char* name : {"krum", "multi_krum", "median", "trimmed_mean"}) {
    INFO(name);
    CHECK(within_honest(run(name, xs, o), good));
  }
  auto rule = make_aggregation_rule("multi_krum", o);
  run(*rule, xs);
  CHECK(rule->discarded() == std::vector<std::uint32_t>{7, 8});
}

TEST_CASE("every robust rule is registered; bad settings are refused") {
  auto names = aggregation_rule_names();
  for (const auto& name : robust_names)
    CHECK(std::count(names.begin(), names.end(), name) == 1);
  rule_options o;
  o.clip_radius = 0;
  CHECK_THROWS_WITH(make_aggregation_rule("cclip", o),
                    Catch::Contains("--agg-clip-radius"));
  o = {};
  o.clip_iterations = 0;
  CHECK_THROWS_AS(make_aggregation_rule("cclip", o), std::invalid_argument);
}

TEST_CASE("a rule's state across rounds survives a checkpoint: cclip's "
          "center and LICM's last gradients") {
  for (const char* name : {"cclip", "licm"}) {
    INFO(name);
    rule_options o;
    o.clip_radius = 0.5;
    auto a = make_aggregation_rule(name, o);
    vecs r1{{1, 2, 3}, {1.2f, 2, 2.9f}, {0.9f, 2.1f, 3}, {40, -40, 40}};
    vecs r2{{1.1f, 2, 3}, {1, 2.2f, 3.1f}, {1, 2, 2.8f}, {-40, 40, -40}};
    run(*a, r1);
    state_writer w;
    a->save(w, "rule.");
    state_reader r{w.encode(), "test"};
    auto b = make_aggregation_rule(name, o);
    b->load(r, "rule.");
    auto fresh = make_aggregation_rule(name, o);
    auto want = run(*a, r2);
    CHECK(run(*b, r2) == want);
    // Without the state the round differs (the state matters).
    CHECK(run(*fresh, r2) != want);
    // A checkpoint without the rule's tensors restores a fresh rule.
    state_writer empty;
    empty.put_u64("x", 1);
    auto c = make_aggregation_rule(name, o);
    run(*c, r1);
    c->load(state_reader{empty.encode(), "old"}, "rule.");
    CHECK(run(*c, r2) == run(*make_aggregation_rule(name, o), r2));
  }
}

TEST_CASE("the coordinate-wise rules' sorting network gives the order "
          "statistics of a plain sort, bit for bit") {
  const unsigned seed = 11;
  std::cout << "sorting network: seed " << seed << std::endl;
  std::mt19937 gen{seed};
  std::normal_distribution<float> normal;
  // Block-sized and not; the network (<= 32) and the sort (> 32); ties.
  for (std::size_t count : {1u, 2u, 3u, 10u, 32u, 33u, 40u}) {
    for (std::size_t n : {1u, 64u, 150u}) {
      INFO(count << " x " << n);
      vecs xs(count, std::vector<float>(n));
      for (auto& x : xs)
        for (auto& v : x)
          v = std::round(normal(gen) * 4) / 4; // many ties
      rule_options o;
      o.f = static_cast<std::uint32_t>(count / 4);
      auto med = run("median", xs);
      auto trim = run("trimmed_mean", xs, o);
      auto b = std::min<std::size_t>(o.f, (count - 1) / 2);
      for (std::size_t i = 0; i < n; ++i) {
        std::vector<float> col;
        for (auto& x : xs)
          col.push_back(x[i]);
        std::sort(col.begin(), col.end());
        auto mid = count / 2;
        float want
            = count % 2
                  ? col[mid]
                  : static_cast<float>((double(col[mid - 1]) + col[mid]) / 2);
        REQUIRE(med[i] == want);
        double s = 0;
        for (std::size_t k = b; k < count - b; ++k)
          s += col[k];
        REQUIRE(trim[i] == static_cast<float>(s / double(count - 2 * b)));
      }
    }
  }
}
