#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "optim/optimizer.hpp"
#include "tolerances.hpp"

using namespace troupe::optim;
using troupe::test::hand_rel;

namespace {

optimizer_options named(const std::string& name) {
  optimizer_options opts;
  opts.name = name;
  return opts;
}

/// Runs steps on one scalar parameter starting at p0; returns the iterates.
std::vector<double> run_scalar(const optimizer_options& opts, double p0,
                               const std::vector<double>& grads, double lr) {
  auto opt = make_optimizer<double>(opts, 1);
  std::vector<double> result;
  double p = p0;
  for (double g : grads) {
    opt->step(&p, &g, 1, lr);
    result.push_back(p);
  }
  return result;
}

void check_iterates(const std::vector<double>& got,
                    const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("step " << i + 1);
    CHECK(got[i] == Approx(want[i]).epsilon(hand_rel));
  }
}

} // namespace

TEST_CASE("sgd: p -= lr * g, with coupled weight decay") {
  auto opt = make_optimizer<double>(named("sgd"), 2);
  CHECK(opt->name() == "sgd");
  std::vector<double> p{1.0, -2.0};
  std::vector<double> g{0.5, 0.25};
  opt->step(p.data(), g.data(), 2, 0.1);
  CHECK(p[0] == Approx(0.95).epsilon(hand_rel));
  CHECK(p[1] == Approx(-2.025).epsilon(hand_rel));
  auto opts = named("sgd");
  opts.weight_decay = 0.1;
  auto decayed = make_optimizer<double>(opts, 2);
  p = {1.0, -2.0};
  decayed->step(p.data(), g.data(), 2, 0.1);
  // g + wd * p = {0.6, 0.05}.
  CHECK(p[0] == Approx(0.94).epsilon(hand_rel));
  CHECK(p[1] == Approx(-2.005).epsilon(hand_rel));
}

TEST_CASE("momentum: buf = momentum * buf + g; p -= lr * buf") {
  // buf: 0.5, then 0.9 * 0.5 + 0.25 = 0.7, then 0.9 * 0.7 - 1 = -0.37.
  check_iterates(run_scalar(named("momentum"), 1.0, {0.5, 0.25, -1.0}, 0.1),
                 {0.95, 0.88, 0.917});
}

TEST_CASE("nesterov: p -= lr * (g + momentum * buf)") {
  // buf 0.5 -> update 0.5 + 0.45 = 0.95; buf 0.7 -> update 0.25 + 0.63 = 0.88.
  check_iterates(run_scalar(named("nesterov"), 1.0, {0.5, 0.25}, 0.1),
                 {0.905, 0.817});
}

TEST_CASE("adagrad: acc += g^2; p -= lr * g / (sqrt(acc) + eps)") {
  auto opts = named("adagrad");
  opts.eps = 0;
  // acc 0.25 -> p = 1 - 0.1 * 0.5 / 0.5; acc 0.3125 -> p -= 0.025 / sqrt(..).
  check_iterates(run_scalar(opts, 1.0, {0.5, 0.25}, 0.1),
                 {0.9, 0.8552786404500042});
}

TEST_CASE("adam: bias-corrected, first step moves every coordinate by lr") {
  SECTION("first step is lr * sign(g) whatever the scale of g") {
    auto opts = named("adam");
    opts.eps = 0;
    auto opt = make_optimizer<double>(opts, 3);
    std::vector<double> p{1.0, -2.0, 3.0};
    std::vector<double> g{0.5, -1e-3, 100.0};
    opt->step(p.data(), g.data(), 3, 0.01);
    CHECK(p[0] == Approx(0.99).epsilon(hand_rel));
    CHECK(p[1] == Approx(-1.99).epsilon(hand_rel));
    CHECK(p[2] == Approx(2.99).epsilon(hand_rel));
  }
  SECTION("two steps against the PyTorch recursion") {
    auto opts = named("adam");
    opts.eps = 0;
    // m2 = 0.07, v2 = 3.1225e-4, bias corrections 0.19 and 0.001999.
    check_iterates(run_scalar(opts, 1.0, {0.5, 0.25}, 0.01),
                   {0.99, 0.980678203611886});
  }
  SECTION("eps bounds the step for tiny gradients") {
    auto opt = make_optimizer<double>(named("adam"), 1);
    double p = 0;
    double g = 1e-8; // equal to eps: the first step is lr / 2
    opt->step(&p, &g, 1, 0.01);
    CHECK(p == Approx(-0.005).epsilon(1e-6));
  }
}

TEST_CASE("weight decay equals feeding g + wd * p, for every optimizer") {
  for (const auto& name : optimizer_names()) {
    INFO("optimizer " << name);
    if (name == "novograd")
      continue; // its decay joins the normalized gradient (test below)
    auto opts = named(name);
    opts.weight_decay = 0.05;
    auto with_wd = make_optimizer<double>(opts, 2);
    auto plain = make_optimizer<double>(named(name), 2);
    std::vector<double> p{1.0, -3.0};
    std::vector<double> q = p;
    for (int k = 0; k < 5; ++k) {
      std::vector<double> g{0.3 - 0.1 * k, 0.2 * k};
      std::vector<double> g_wd{g[0] + 0.05 * q[0], g[1] + 0.05 * q[1]};
      with_wd->step(p.data(), g.data(), 2, 0.1);
      plain->step(q.data(), g_wd.data(), 2, 0.1);
      CHECK(p[0] == Approx(q[0]).epsilon(hand_rel));
      CHECK(p[1] == Approx(q[1]).epsilon(hand_rel));
    }
    // With a zero gradient the decay alone pulls the parameters towards 0.
    auto decay_only = make_optimizer<double>(opts, 2);
    std::vector<double> r{1.0, -3.0};
    std::vector<double> zero{0.0, 0.0};
    decay_only->step(r.data(), zero.data(), 2, 0.1);
    CHECK(r[0] < 1.0);
    CHECK(r[0] > 0.0);
    CHECK(r[1] > -3.0);
  }
}

TEST_CASE("reset clears the state") {
  for (const auto& name : optimizer_names()) {
    INFO("optimizer " << name);
    auto opt = make_optimizer<double>(named(name), 1);
    double p = 1;
    double g = 0.5;
    opt->step(&p, &g, 1, 0.1);
    opt->step(&p, &g, 1, 0.1);
    opt->reset();
    double fresh_p = 2;
    double used_p = 2;
    auto fresh = make_optimizer<double>(named(name), 1);
    fresh->step(&fresh_p, &g, 1, 0.1);
    opt->step(&used_p, &g, 1, 0.1);
    CHECK(used_p == Approx(fresh_p).epsilon(hand_rel));
  }
}

TEST_CASE("float and double instantiations agree") {
  for (const auto& name : optimizer_names()) {
    INFO("optimizer " << name);
    auto opts = named(name);
    opts.weight_decay = 0.01;
    auto f = make_optimizer<float>(opts, 3);
    auto d = make_optimizer<double>(opts, 3);
    std::vector<float> pf{1.0f, -0.5f, 2.0f};
    std::vector<double> pd{1.0, -0.5, 2.0};
    for (int k = 0; k < 4; ++k) {
      std::vector<float> gf{0.25f, -0.5f * k, 1.0f};
      std::vector<double> gd{0.25, -0.5 * k, 1.0};
      f->step(pf.data(), gf.data(), 3, 0.05);
      d->step(pd.data(), gd.data(), 3, 0.05);
    }
    for (int i = 0; i < 3; ++i)
      CHECK(pf[i] == Approx(pd[i]).epsilon(troupe::test::float_step_rel));
  }
}

TEST_CASE("every optimizer converges on an ill-conditioned quadratic") {
  // f(x) = 1/2 sum h_i x_i^2, condition number 10, minimum at 0.
  const std::vector<double> h{1.0, 10.0, 3.0};
  auto f = [&](const std::vector<double>& x) {
    double sum = 0;
    for (std::size_t i = 0; i < x.size(); ++i)
      sum += 0.5 * h[i] * x[i] * x[i];
    return sum;
  };
  struct run {
    const char* name;
    double lr;
    int steps;
  };
  for (auto r : {run{"sgd", 0.1, 300}, run{"momentum", 0.02, 600},
                 run{"nesterov", 0.02, 600}, run{"adagrad", 0.3, 600},
                 run{"adam", 0.1, 3000}, run{"novograd", 0.1, 1000},
                 run{"delayed-nesterov", 0.02, 600}}) {
    INFO("optimizer " << r.name << ", lr " << r.lr);
    auto opt = make_optimizer<double>(named(r.name), 3);
    std::vector<double> x{1.0, -1.0, 0.5};
    auto f0 = f(x);
    std::vector<double> g(3);
    for (int k = 0; k < r.steps; ++k) {
      // Adam and NovoGrad (normalized steps) with a constant rate hover
      // at a distance ~lr; decay it.
      std::string name = r.name;
      double lr = name == "adam" || name == "novograd" ? r.lr / (1.0 + k / 50.0)
                                                       : r.lr;
      for (int i = 0; i < 3; ++i)
        g[i] = h[i] * x[i];
      opt->step(x.data(), g.data(), 3, lr);
    }
    CHECK(f(x) < troupe::test::quadratic_converged * f0);
  }
}

// NovoGrad by hand (layers {2, 1}, p0 = (1, -2, 0.5), lr 0.1, eps 0):
// step 1, g = (3, 4, -2): v = (25, 4), m = g / (5, 5, 2) = (0.6, 0.8, -1),
// p = (0.94, -2.08, 0.6); step 2, g = (0, 5, 1): v = (0.999 * 25 + 0.025,
// 0.999 * 4 + 0.001), m = 0.9 m + g / sqrt(v).
TEST_CASE("novograd: per-layer second moments of the gradient's norm") {
  auto opts = named("novograd");
  opts.eps = 0;
  opts.layers = {2, 1};
  auto opt = make_optimizer<double>(opts, 3);
  std::vector<double> p{1.0, -2.0, 0.5};
  std::vector<double> g1{3.0, 4.0, -2.0}, g2{0.0, 5.0, 1.0};
  opt->step(p.data(), g1.data(), 3, 0.1);
  CHECK(p[0] == Approx(0.94).epsilon(hand_rel));
  CHECK(p[1] == Approx(-2.08).epsilon(hand_rel));
  CHECK(p[2] == Approx(0.6).epsilon(hand_rel));
  opt->step(p.data(), g2.data(), 3, 0.1);
  CHECK(p[0] == Approx(0.886).epsilon(hand_rel));
  CHECK(p[1] == Approx(-2.252).epsilon(hand_rel));
  CHECK(p[2] == Approx(0.639981239446529).epsilon(hand_rel));
  SECTION("the decay is added to the normalized gradient") {
    opts.weight_decay = 0.5;
    auto d = make_optimizer<double>(opts, 3);
    std::vector<double> q{1.0, -2.0, 0.5};
    d->step(q.data(), g1.data(), 3, 0.1);
    d->step(q.data(), g2.data(), 3, 0.1);
    CHECK(q[0] == Approx(0.7465).epsilon(hand_rel));
    CHECK(q[1] == Approx(-1.963).epsilon(hand_rel));
    CHECK(q[2] == Approx(0.563731239446529).epsilon(hand_rel));
  }
  SECTION("a layer's gradient scaled by c moves it as before") {
    auto scaled = make_optimizer<double>(opts, 3);
    std::vector<double> q{1.0, -2.0, 0.5};
    std::vector<double> h1{300.0, 400.0, -2.0}, h2{0.0, 500.0, 1.0};
    scaled->step(q.data(), h1.data(), 3, 0.1);
    scaled->step(q.data(), h2.data(), 3, 0.1);
    for (int i = 0; i < 3; ++i)
      CHECK(q[static_cast<std::size_t>(i)]
            == Approx(p[static_cast<std::size_t>(i)]).epsilon(hand_rel));
  }
  SECTION("layers must add up to the parameters") {
    opts.layers = {2, 2};
    CHECK_THROWS_WITH(make_optimizer<double>(opts, 3),
                      Catch::Contains("layers of 4 parameters for 3"));
  }
}

// The delayed Nesterov update by hand (beta 0.5, lr 1, p0 = 0, gradients
// 1, 3, 2, 4), with N = 2: c = 0 moves p by g / 2 between the momentum's
// updates, and at them (m = 2, then 0.5 * 2 + 6 / 2 = 4) by beta m + g / 2:
// -0.5, -3, -4, -8; c = 0.25 adds c beta m = 0.125 m between them and
// applies (1 - c N + c) beta m = 0.375 m at them: -0.5, -2.75, -4, -7.5.
TEST_CASE("delayed-nesterov: the momentum moves once every N steps") {
  auto opts = named("delayed-nesterov");
  opts.momentum = 0.5;
  opts.delay = 2;
  check_iterates(run_scalar(opts, 0.0, {1, 3, 2, 4}, 1.0),
                 {-0.5, -3.0, -4.0, -8.0});
  opts.activation = 0.25;
  check_iterates(run_scalar(opts, 0.0, {1, 3, 2, 4}, 1.0),
                 {-0.5, -2.75, -4.0, -7.5});
  SECTION("N = 1 without activation is nesterov, to rounding") {
    // (Bits may differ: the compiler fuses the two rules' multiply-adds
    // in different places.)
    auto dn = named("delayed-nesterov");
    dn.weight_decay = 0.01;
    auto nag = named("nesterov");
    nag.weight_decay = 0.01;
    auto a = make_optimizer<double>(dn, 5), b = make_optimizer<double>(nag, 5);
    std::vector<double> p{1, -2, 3, 0.5, -0.25}, q = p, g(5);
    for (int k = 0; k < 20; ++k) {
      for (std::size_t i = 0; i < 5; ++i)
        g[i] = std::sin(3 * k + static_cast<int>(i));
      a->step(p.data(), g.data(), 5, 0.05);
      b->step(q.data(), g.data(), 5, 0.05);
    }
    for (std::size_t i = 0; i < 5; ++i)
      CHECK(p[i] == Approx(q[i]).epsilon(1e-13));
  }
  SECTION("without momentum every step applies g / N") {
    opts.momentum = 0;
    opts.delay = 4;
    check_iterates(run_scalar(opts, 1.0, {2, 2, 2, 2}, 0.5),
                   {0.75, 0.5, 0.25, 0.0});
  }
  SECTION("a delay of 0 and an activation outside [0, 1] are refused") {
    opts.delay = 0;
    CHECK_THROWS_WITH(make_optimizer<float>(opts, 3),
                      Catch::Contains("a delay of 0"));
    opts.delay = 2;
    opts.activation = 1.5;
    CHECK_THROWS_WITH(make_optimizer<float>(opts, 3),
                      Catch::Contains("activation must be in [0, 1]"));
  }
}

TEST_CASE("for_slice: a shard's parts of the model's layers") {
  auto opts = named("novograd");
  opts.layers = {3, 4, 5};
  CHECK(for_slice(opts, 2, 6).layers == std::vector<std::size_t>{1, 4, 1});
  CHECK(for_slice(opts, 0, 3).layers == std::vector<std::size_t>{3});
  CHECK(for_slice(opts, 7, 5).layers == std::vector<std::size_t>{5});
  CHECK(for_slice(named("adam"), 2, 6).layers.empty());
  // A shard's optimizer made from its slice takes its size.
  CHECK_NOTHROW(make_optimizer<float>(for_slice(opts, 2, 6), 6));
}

TEST_CASE("bad names, options and sizes are rejected") {
  try {
    make_optimizer<double>(named("rmsprop"), 4);
    FAIL("no exception for an unknown optimizer");
  } catch (const std::invalid_argument& e) {
    std::string what = e.what();
    CHECK_THAT(what, Catch::Contains("unknown optimizer 'rmsprop'"));
    for (const auto& name : optimizer_names())
      CHECK_THAT(what, Catch::Contains(name));
  }
  auto opts = named("momentum");
  opts.momentum = 1.5;
  CHECK_THROWS_WITH(make_optimizer<float>(opts, 4),
                    Catch::Contains("momentum must be in [0, 1)"));
  opts = named("sgd");
  opts.weight_decay = -1;
  CHECK_THROWS_WITH(make_optimizer<float>(opts, 4),
                    Catch::Contains("weight_decay"));
  opts = named("adam");
  opts.beta2 = 1.0;
  CHECK_THROWS_WITH(make_optimizer<float>(opts, 4), Catch::Contains("beta2"));
  auto opt = make_optimizer<double>(named("sgd"), 4);
  std::vector<double> p(3);
  std::vector<double> g(3);
  CHECK_THROWS_AS(opt->step(p.data(), g.data(), 3, 0.1), std::invalid_argument);
}
