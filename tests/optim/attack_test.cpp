// Byzantine workers' attacks (optim/attack.hpp): ALIE's z against the values
// the paper's formula gives, the normal quantile, and each attack's gradient
// against the honest one of a twin replica drawing the same batches.

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <stdexcept>
#include <vector>

#include <catch2/catch.hpp>

#include "optim/attack.hpp"
#include "optim/replica.hpp"
#include "optim/state_file.hpp"
#include "optim/worker_momentum.hpp"

using namespace troupe::optim;

namespace {

/// A 3-class data set of 8 features and 256 examples (seed printed).
std::shared_ptr<dataset> toy(bool flipped) {
  const unsigned seed = 21;
  INFO("seed " << seed);
  std::mt19937 gen{seed};
  std::normal_distribution<float> x{0.0f, 1.0f};
  auto d = std::make_shared<dataset>();
  d->name = flipped ? "toy-flipped" : "toy";
  d->x.resize(8, 256);
  for (Eigen::Index j = 0; j < d->x.cols(); ++j)
    for (Eigen::Index i = 0; i < d->x.rows(); ++i)
      d->x(i, j) = x(gen);
  d->classes = 3;
  d->sample_shape = {8};
  for (Eigen::Index j = 0; j < d->x.cols(); ++j) {
    int y = d->x(0, j) > 0.5f ? 2 : (d->x(1, j) > 0 ? 1 : 0);
    d->labels.push_back(flipped ? 2 - y : y);
  }
  return d;
}

std::vector<std::size_t> all(std::size_t n) {
  std::vector<std::size_t> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = i;
  return v;
}

std::unique_ptr<replica> honest(std::shared_ptr<dataset> d,
                                std::uint64_t seed = 5) {
  return make_model_replica("logreg", d, all(d->size()), 32, seed, 3);
}

attack_options opts(attack_kind k) {
  attack_options o;
  o.kind = k;
  o.workers = 10;
  o.byzantine = 2;
  o.seed = 9;
  return o;
}

} // namespace

TEST_CASE("ALIE's z is the paper's: Phi^-1((n - s) / n), s = floor(n/2 + 1) "
          "- f") {
  CHECK(alie_z(50, 12) == Approx(0.583).margin(1e-3));
  CHECK(alie_z(20, 4) == Approx(0.385).margin(1e-3));
  CHECK(alie_z(10, 2) == Approx(0.253).margin(1e-3));
  CHECK(alie_z(100, 20) == Approx(0.496).margin(1e-3));
  CHECK(alie_z(3, 0) == 0.0); // (3 - 2) / 3 < 1/2: the honest mean
  CHECK(normal_quantile(0.975) == Approx(1.959963984540054).epsilon(1e-12));
  CHECK(normal_quantile(0.001) == Approx(-3.090232306167813).epsilon(1e-10));
  CHECK_THROWS_AS(normal_quantile(1.0), std::invalid_argument);
}

TEST_CASE("attack names parse, and bad ones are refused naming the valid") {
  for (const auto& n : attack_names())
    CHECK(to_string(parse_attack(n)) == n);
  CHECK_THROWS_WITH(parse_attack("flip"), Catch::Contains("unknown attack")
                                              && Catch::Contains("sign_flip"));
  auto o = opts(attack_kind::gaussian);
  o.sigma = -1;
  CHECK_THROWS_WITH(validate(o), Catch::Contains("--attack-sigma"));
}

TEST_CASE("sign flip, NaN and inf replace the honest gradient as stated") {
  auto data = toy(false);
  auto twin = honest(data);
  auto o = opts(attack_kind::sign_flip);
  o.scale = 3;
  byzantine_replica b{honest(data), nullptr, o, 3, 1};
  for (int step = 0; step < 3; ++step) {
    twin->compute();
    b.compute();
    for (std::size_t i = 0; i < b.size(); ++i)
      REQUIRE(b.grads()[i] == static_cast<float>(-3.0 * twin->grads()[i]));
  }
  byzantine_replica n{honest(data), nullptr, opts(attack_kind::nan), 3, 1};
  n.compute();
  CHECK(std::isnan(n.grads()[0]));
  byzantine_replica f{honest(data), nullptr, opts(attack_kind::inf), 3, 1};
  f.compute();
  CHECK(std::isinf(f.grads()[b.size() - 1]));
}

TEST_CASE("Gaussian noise has the stated spread and no honest part") {
  auto data = toy(false);
  auto o = opts(attack_kind::gaussian);
  o.sigma = 200;
  byzantine_replica b{honest(data), nullptr, o, 3, 1};
  double s = 0, s2 = 0, n = 0;
  for (int step = 0; step < 40; ++step) { // 40 x 27 values
    b.compute();
    for (std::size_t i = 0; i < b.size(); ++i) {
      s += b.grads()[i];
      s2 += double{b.grads()[i]} * b.grads()[i];
      n += 1;
    }
  }
  double sd = std::sqrt(s2 / n - (s / n) * (s / n));
  CHECK(sd > 180);
  CHECK(sd < 220);
  CHECK(std::abs(s / n) < 20);
}

TEST_CASE("label flip computes the honest gradient of flipped labels") {
  auto twin = honest(toy(true));
  byzantine_replica b{honest(toy(false)), nullptr,
                      opts(attack_kind::label_flip), 3, 1};
  twin->compute();
  b.compute();
  for (std::size_t i = 0; i < b.size(); ++i)
    REQUIRE(b.grads()[i] == twin->grads()[i]);
}

TEST_CASE("ALIE sends mu - z sd and IPM -eps mu over the scout's batches at "
          "the attacker's parameters") {
  auto data = toy(false);
  auto o = opts(attack_kind::alie);
  o.scout_batches = 4;
  byzantine_replica b{honest(data), honest(data, 77), o, 3, 1};
  CHECK(b.z() == Approx(0.253).margin(1e-3));
  // Move the parameters off the start: the scout must follow them.
  for (std::size_t i = 0; i < b.size(); ++i)
    b.params()[i] = 0.01f * static_cast<float>(i % 7);
  b.compute();
  auto scout = honest(data, 77); // the same batches as the attacker's scout
  std::copy(b.params(), b.params() + b.size(), scout->params());
  std::vector<std::vector<float>> g;
  for (int j = 0; j < 4; ++j) {
    scout->compute();
    g.emplace_back(scout->grads(), scout->grads() + b.size());
  }
  for (std::size_t i = 0; i < b.size(); ++i) {
    double mu = 0;
    for (auto& v : g)
      mu += v[i];
    mu /= 4;
    double var = 0;
    for (auto& v : g)
      var += (v[i] - mu) * (v[i] - mu);
    double sd = std::sqrt(var / 3);
    REQUIRE(b.grads()[i]
            == Approx(mu - alie_z(10, 2) * sd).margin(1e-6).epsilon(1e-5));
  }
  auto q = opts(attack_kind::ipm);
  q.scale = 0.5;
  byzantine_replica p{honest(data), honest(data, 77), q, 3, 1};
  std::copy(b.params(), b.params() + b.size(), p.params());
  p.compute();
  for (std::size_t i = 0; i < b.size(); ++i) {
    double mu = (g[0][i] + g[1][i] + g[2][i] + g[3][i]) / 4;
    REQUIRE(p.grads()[i] == Approx(-0.5 * mu).margin(1e-6).epsilon(1e-5));
  }
  CHECK_THROWS_AS(
      (byzantine_replica{honest(data), nullptr, opts(attack_kind::ipm), 3, 1}),
      std::invalid_argument);
}

TEST_CASE("worker momentum sends beta m + (1 - beta) g, and its buffer is "
          "in the replica's state") {
  auto data = toy(false);
  auto twin = honest(data);
  momentum_replica m{honest(data), 0.75};
  std::vector<double> ref;
  for (int step = 0; step < 4; ++step) {
    twin->compute();
    m.compute();
    const float* g = twin->grads();
    if (ref.empty()) {
      ref.assign(g, g + m.size());
    } else {
      for (std::size_t i = 0; i < m.size(); ++i)
        ref[i] = static_cast<float>(0.75f * static_cast<float>(ref[i])
                                    + 0.25f * g[i]);
    }
    for (std::size_t i = 0; i < m.size(); ++i)
      REQUIRE(m.grads()[i] == Approx(ref[i]).epsilon(1e-6).margin(1e-9));
  }
  state_writer w;
  m.save_state(w, "w0.");
  momentum_replica back{honest(data), 0.75};
  state_reader r{w.encode(), "momentum state"};
  back.load_state(r, "w0.");
  twin->compute();
  m.compute();
  back.compute();
  for (std::size_t i = 0; i < m.size(); ++i)
    REQUIRE(back.grads()[i] == m.grads()[i]);
  CHECK_THROWS_AS((momentum_replica{honest(data), 1.0}), std::invalid_argument);
}

TEST_CASE("an attacker whose own model is no longer finite sends NaN and "
          "keeps running (in gossip it steps its model with its attack)") {
  auto data = toy(false);
  for (auto kind : {attack_kind::sign_flip, attack_kind::ipm}) {
    INFO(to_string(kind));
    auto o = opts(kind);
    o.scout_batches = 2;
    byzantine_replica b{honest(data),
                        kind == attack_kind::ipm ? honest(data, 77) : nullptr,
                        o, 3, 1};
    auto first = b.compute(); // finite: its batch size is known
    CHECK(first.samples == 32);
    std::fill(b.params(), b.params() + b.size(),
              std::numeric_limits<float>::quiet_NaN());
    step_result r;
    REQUIRE_NOTHROW(r = b.compute());
    CHECK(std::isnan(r.loss));
    CHECK(r.samples == 32);
    for (std::size_t i = 0; i < b.size(); ++i)
      REQUIRE(std::isnan(b.grads()[i]));
  }
  // An honest replica still stops at a non-finite loss.
  auto h = honest(data);
  std::fill(h->params(), h->params() + h->size(),
            std::numeric_limits<float>::quiet_NaN());
  CHECK_THROWS_AS(h->compute(), std::domain_error);
}
