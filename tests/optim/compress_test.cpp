// Gradient compression (algorithms.md §8 T1-T3, §9): round trips, the
// error-feedback invariant, AdaComp's selection on hand-built bins, the
// decoder against garbage, ratio against bin length, and SGD with each
// compressor reaching the LOGREG optimum. Gaia's significance filter: what
// it sends, and two replicas that exchange only significant changes stay
// within the threshold of each other.

#include <cmath>
#include <cstring>
#include <iostream>

#include <catch2/catch.hpp>

#include "optim/compress.hpp"
#include "optim/dataset.hpp"
#include "optim/gaia.hpp"
#include "optim/optimizer.hpp"
#include "optim/replica.hpp"
#include "optim/rng.hpp"
#include "optim/synthetic.hpp"

using namespace troupe::optim;

namespace {

std::vector<float> gaussian(rng& gen, std::size_t n, double sd = 1.0) {
  std::vector<float> v(n);
  for (auto& x : v)
    x = static_cast<float>(sd * gen.normal());
  return v;
}

compressor make(codec c, std::size_t n, std::size_t bin = 50,
                double density = 0.05) {
  compress_options o;
  o.method = c;
  o.bin_fc = o.bin_conv = bin;
  o.density_fc = o.density_conv = density;
  // Two segments of different kinds.
  return compressor{
      o, {{0, n / 2, layer_kind::conv}, {n / 2, n - n / 2, layer_kind::fc}}};
}

std::vector<float> decode(const std::string& packed, std::size_t n) {
  std::vector<float> out(n);
  decompress(packed, out.data(), n);
  return out;
}

} // namespace

TEST_CASE("every codec: decoded + new residual == gradient + old residual; "
          "the sums over 50 steps keep the invariant (T1)") {
  const std::uint64_t seed = 201;
  std::cout << "compression invariant: seed " << seed << std::endl;
  rng gen{seed};
  const std::size_t n = 1000;
  for (auto c : {codec::adacomp, codec::topk, codec::onebit}) {
    INFO(to_string(c));
    auto comp = make(c, n);
    std::vector<double> sum_g(n, 0.0), sum_sent(n, 0.0);
    for (int t = 0; t < 50; ++t) {
      auto g = gaussian(gen, n);
      auto old_r = comp.residual();
      auto sent = decode(comp.compress(g.data(), n), n);
      const auto& r = comp.residual();
      for (std::size_t i = 0; i < n; ++i) {
        // One float rounding of (old_r + g) separates the two sides.
        double lhs = double{sent[i]} + r[i], rhs = double{g[i]} + old_r[i];
        REQUIRE(std::abs(lhs - rhs) <= 1e-6 * (1 + std::abs(rhs)));
        sum_g[i] += g[i];
        sum_sent[i] += sent[i];
      }
    }
    const auto& r = comp.residual();
    double worst = 0;
    for (std::size_t i = 0; i < n; ++i)
      worst = std::max(worst, std::abs(sum_sent[i] + r[i] - sum_g[i]));
    CHECK(worst < 1e-4);
    CHECK(comp.residual_norm() > 0);
    CHECK(comp.stats().ratio() > 1);
  }
}

TEST_CASE("top-k sends its entries exactly; AdaComp sends sign * scale") {
  rng gen{202};
  const std::size_t n = 400;
  auto g = gaussian(gen, n);
  auto tk = make(codec::topk, n, 50, 0.05);
  auto sent = decode(tk.compress(g.data(), n), n);
  std::size_t nonzero = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (sent[i] != 0) {
      ++nonzero;
      CHECK(sent[i] == g[i]);
    }
  CHECK(nonzero == 20); // 5% of each 200-entry segment
  auto ac = make(codec::adacomp, n, 50);
  sent = decode(ac.compress(g.data(), n), n);
  // One scale per segment (layer).
  for (std::size_t seg = 0; seg < 2; ++seg) {
    float scale = 0;
    for (std::size_t i = seg * n / 2; i < (seg + 1) * n / 2; ++i)
      if (sent[i] != 0) {
        if (scale == 0)
          scale = std::abs(sent[i]);
        CHECK(std::abs(sent[i]) == scale);
        CHECK(std::signbit(sent[i]) == std::signbit(g[i]));
      }
    CHECK(scale > 0);
  }
}

TEST_CASE("AdaComp's selection on hand-built bins (T2)") {
  compress_options o;
  o.method = codec::adacomp;
  o.bin_fc = 4;
  compressor c{o, {{0, 16, layer_kind::fc}}};
  // Bin 0: one dominant element. Bin 1: flat. Bin 2: all zero. Bin 3: one
  // element.
  std::vector<float> g{0.1f, 5.0f,  0.1f, -0.1f, //
                       1.0f, -1.0f, 1.0f, -1.0f, //
                       0.0f, 0.0f,  0.0f, 0.0f,  //
                       4.0f, 0.0f,  0.0f, 0.0f};
  auto sent = decode(c.compress(g.data(), 16), 16);
  float s = (5.0f + 1.0f + 4.0f) / 3; // the mean of the non-zero bins' maxima
  CHECK(sent[1] == Approx(s));
  CHECK(sent[0] == 0);
  CHECK(sent[2] == 0);
  CHECK(sent[3] == 0);
  for (int k = 4; k < 8; ++k) { // flat: everything passes, signs kept
    CHECK(std::abs(sent[k]) == Approx(s));
    CHECK(std::signbit(sent[k]) == std::signbit(g[k]));
  }
  for (int k = 8; k < 12; ++k) // all zero: nothing
    CHECK(sent[k] == 0);
  CHECK(sent[12] == Approx(s));
  // Step 2: bin 3's residual is 4 - s = 0.67; a fresh -0.2 disagrees in
  // sign, so |H| = |0.47 - 0.2| < 0.47 = the bin's max: not sent. Bin 0's
  // max (residual 1.67, fresh 0: same sign) passes. Bin 2 stays silent.
  std::vector<float> g2(16, 0.0f);
  g2[12] = -0.2f;
  auto sent2 = decode(c.compress(g2.data(), 16), 16);
  CHECK(sent2[12] == 0);
  CHECK(sent2[1] > 0);
  for (int k = 8; k < 12; ++k)
    CHECK(sent2[k] == 0);
}

TEST_CASE("the decoder refuses garbage by name") {
  rng gen{203};
  const std::size_t n = 100;
  auto g = gaussian(gen, n);
  for (auto cd : {codec::adacomp, codec::topk, codec::onebit}) {
    INFO(to_string(cd));
    auto c = make(cd, n);
    auto packed = c.compress(g.data(), n);
    std::vector<float> out(n);
    CHECK_NOTHROW(decompress(packed, out.data(), n));
    CHECK_THROWS_WITH(
        decompress(packed.substr(0, packed.size() - 1), out.data(), n),
        Catch::Contains("truncated"));
    CHECK_THROWS_WITH(decompress(packed + "x", out.data(), n),
                      Catch::Contains("trailing"));
    CHECK_THROWS_AS(decompress(packed, out.data(), n + 1),
                    std::invalid_argument);
    auto bad = packed;
    bad[0] = 9;
    CHECK_THROWS_WITH(decompress(bad, out.data(), n),
                      Catch::Contains("unknown codec"));
  }
  CHECK_THROWS_AS(decompress("", nullptr, 0), std::invalid_argument);
  CHECK_THROWS_AS(parse_codec("gzip"), std::invalid_argument);
  compress_options o;
  o.method = codec::topk;
  o.density_fc = 0;
  CHECK_THROWS_AS((compressor{o, {{0, 4, layer_kind::fc}}}),
                  std::invalid_argument);
  compressor ok{compress_options{codec::onebit}, {{0, 4, layer_kind::fc}}};
  std::vector<float> nan(4, std::nanf(""));
  CHECK_THROWS_AS(ok.compress(nan.data(), 4), std::invalid_argument);
  CHECK(ok.residual_norm() == 0); // nothing changed
}

TEST_CASE("AdaComp's ratio grows with the bin length on Gaussian "
          "gradients (T3)") {
  const std::uint64_t seed = 204;
  std::cout << "adacomp ratio vs bin: seed " << seed << std::endl;
  const std::size_t n = 100000;
  double last = 0;
  for (std::size_t bin : {16u, 64u, 256u, 1024u}) {
    rng gen{seed};
    auto c = make(codec::adacomp, n, bin);
    for (int t = 0; t < 20; ++t) {
      auto g = gaussian(gen, n);
      c.compress(g.data(), n);
    }
    auto ratio = c.stats().ratio();
    std::cout << "  L_T " << bin << ": " << ratio << "x" << std::endl;
    CHECK(ratio > last);
    last = ratio;
  }
  CHECK(last > 100);
}

TEST_CASE("SGD with each compressor (error feedback) reaches the LOGREG "
          "optimum that SGD without reaches") {
  const std::uint64_t seed = 205;
  std::cout << "compressed sgd on logreg: seed " << seed << std::endl;
  logreg_options lo;
  lo.m = 2048;
  lo.d = 20;
  lo.mu = 1e-2;
  lo.seed = seed;
  auto prob = std::make_shared<const logreg_problem>(make_logreg(lo));
  std::vector<std::size_t> all(lo.m);
  for (std::size_t i = 0; i < lo.m; ++i)
    all[i] = i;
  auto run = [&](codec c) {
    synthetic_replica<logreg_problem> r{prob, all, 32, seed};
    compress_options o;
    o.method = c;
    o.bin_fc = 8;
    o.density_fc = 0.1;
    std::optional<compressor> comp;
    if (c != codec::none)
      comp.emplace(o, std::vector<segment_spec>{{0, r.size(), layer_kind::fc}});
    std::vector<float> g(r.size());
    for (int step = 0; step < 3000; ++step) {
      r.compute();
      const float* grad = r.grads();
      if (comp) {
        decompress(comp->compress(grad, r.size()), g.data(), r.size());
        grad = g.data();
      }
      double lr = step < 1500 ? 0.5 : (step < 2500 ? 0.1 : 0.02);
      for (std::size_t i = 0; i < r.size(); ++i)
        r.params()[i] -= static_cast<float>(lr) * grad[i];
    }
    std::vector<double> x(r.params(), r.params() + r.size());
    return objective(*prob, x.data()) - prob->f_star;
  };
  std::vector<double> zero(lo.d, 0.0);
  auto start = objective(*prob, zero.data()) - prob->f_star;
  auto plain = run(codec::none);
  std::cout << "  none: f - f* = " << plain << " from " << start << std::endl;
  CHECK(plain < 1e-3 * start);
  for (auto c : {codec::adacomp, codec::topk, codec::onebit}) {
    auto gap = run(c);
    std::cout << "  " << to_string(c) << ": f - f* = " << gap << std::endl;
    CHECK(gap < 1e-3 * start);
  }
}

TEST_CASE("Gaia's filter sends exactly the significant changes and marks them "
          "sent") {
  std::vector<float> w{1.0f, 1.0f, 0.0f, -2.0f, 5.0f};
  std::vector<float> base{0.995f, 0.9f, 0.0f, -2.5f, 5.0f};
  std::string packed;
  // |change| > 1% of |value|: entries 1 (0.1) and 3 (0.5); 0 is 0.5%.
  auto n = take_significant(w.data(), base.data(), w.size(), 0.01, packed);
  REQUIRE(n == 2);
  REQUIRE(significant_entries(packed) == 2);
  CHECK(base[1] == 1.0f);
  CHECK(base[3] == -2.0f);
  CHECK(base[0] == 0.995f);
  // Another replica takes them: its values and its base move alike.
  std::vector<float> v(5, 0.0f), vb(5, 0.0f);
  apply_significant(packed, v.data(), vb.data(), 5);
  CHECK(v[1] == Approx(0.1f));
  CHECK(v[3] == Approx(0.5f));
  CHECK(vb[1] == v[1]);
  CHECK(v[0] == 0.0f);
  // Threshold 0: every changed entry; nothing left: nothing sent.
  packed.clear();
  CHECK(take_significant(w.data(), base.data(), 5, 0.0, packed) == 1);
  packed.clear();
  CHECK(take_significant(w.data(), base.data(), 5, 0.0, packed) == 0);
  CHECK(packed.empty());
  CHECK(significance_at(0.01, 0.05, 0.1) == Approx(0.005));
  CHECK(significance_at(0.01, 0.05, 0.0) == 0.01);
}

TEST_CASE("Gaia's filter refuses a hostile block whole") {
  std::vector<float> w(4, 1.0f), base(4, 1.0f);
  auto entry = [](std::uint32_t i, float x) {
    std::string e(8, '\0');
    std::memcpy(e.data(), &i, 4);
    std::memcpy(e.data() + 4, &x, 4);
    return e;
  };
  auto good = entry(1, 0.5f);
  CHECK_THROWS_AS(apply_significant(good + "x", w.data(), base.data(), 4),
                  data_error);
  CHECK_THROWS_WITH(
      apply_significant(good + entry(4, 1.0f), w.data(), base.data(), 4),
      Catch::Contains("index 4"));
  CHECK_THROWS_WITH(apply_significant(good + entry(2, std::nanf("")), w.data(),
                                      base.data(), 4),
                    Catch::Contains("not finite"));
  // Nothing of the refused blocks was applied.
  CHECK(w == std::vector<float>(4, 1.0f));
}

TEST_CASE("Two Gaia replicas exchanging only significant changes agree on "
          "what was sent and differ only by what was not; at threshold 0 "
          "they agree") {
  for (double s : {0.0, 0.05}) {
    const std::uint64_t seed = 4242;
    std::cout << "gaia replicas: threshold " << s << ", seed " << seed
              << std::endl;
    rng gen{seed};
    const std::size_t n = 300;
    auto init = gaussian(gen, n);
    std::vector<float> w0 = init, w1 = init, b0 = init, b1 = init;
    std::vector<double> total(init.begin(), init.end());
    std::size_t sent = 0;
    double unsent_excess = 0;
    for (int round = 0; round < 200; ++round) {
      for (int side = 0; side < 2; ++side) {
        auto& w = side ? w1 : w0;
        auto& b = side ? b1 : b0;
        auto step = gaussian(gen, n, 0.01);
        for (std::size_t j = 0; j < n; ++j) {
          w[j] += step[j];
          total[j] += step[j];
        }
        std::string packed;
        sent += take_significant(w.data(), b.data(), n, s, packed);
        // What stays unsent is within the threshold.
        for (std::size_t j = 0; j < n; ++j)
          unsent_excess
              = std::max(unsent_excess, std::abs(double{w[j]} - double{b[j]})
                                            - s * std::abs(double{w[j]}));
        auto& v = side ? w0 : w1;
        auto& vb = side ? b0 : b1;
        apply_significant(packed, v.data(), vb.data(), n);
      }
    }
    double shared = 0, excess = 0, drift = 0;
    for (std::size_t j = 0; j < n; ++j) {
      shared = std::max(shared, std::abs(double{b0[j]} - double{b1[j]}));
      double gap = std::abs(double{w0[j]} - double{w1[j]});
      double unsent = std::abs(double{w0[j]} - double{b0[j]})
                      + std::abs(double{w1[j]} - double{b1[j]});
      excess = std::max(excess, gap - unsent);
      drift = std::max(drift, std::abs(double{w0[j]} - total[j]));
    }
    std::cout << "  entries sent " << sent << " of " << 400 * n
              << "; max |base0 - base1| " << shared << std::endl;
    CHECK(unsent_excess < 1e-6);
    CHECK(shared < 1e-5); // both hold every change sent
    CHECK(excess < 1e-5); // they differ by the unsent changes only
    if (s == 0) {
      // Every change (one that rounds away to nothing in float is none).
      CHECK(sent > 400 * n * 99 / 100);
      CHECK(drift < 1e-4); // every change of both sides, up to rounding
    } else {
      CHECK(sent < 400 * n / 2);
    }
  }
}
