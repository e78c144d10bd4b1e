// Sandblaster L-BFGS shards (algorithms.md §2) driven by the test as the
// coordinator will drive them: the two-loop recursion as rounds of vector
// commands to K shards (only scalars come back), portion gradients counted
// once per pass (a backup's twin and a stale pass refused), the history
// pair formed on the shards; the result matches the serial reference to
// 1e-9 (T1) for K = 1 and 3 shards and 8 portions.

#include <chrono>
#include <cmath>
#include <iostream>

#include <caf/all.hpp>
#include <catch2/catch.hpp>

#include "algos/sandblaster/lbfgs_shard.hpp"
#include "harness.hpp"
#include "messages/registry.hpp"
#include "optim/synthetic.hpp"
#include "test_config.hpp"

using namespace troupe;
using namespace troupe::messages;
using namespace std::chrono_literals;

namespace {

using config = test::typed_config<>;

/// The test as Sandblaster's coordinator and workers over K shards.
struct driver {
  caf::scoped_actor& self;
  std::vector<algos::lbfgs_shard_actor> shards;
  std::vector<optim::slice> ranges;
  const optim::logreg_problem& prob;
  std::size_t portions;
  std::uint64_t pass = 0;
  std::uint64_t duplicates_refused = 0;

  double dot_all(const optim::vector_command& c) {
    double sum = 0; // shard order: reproducible
    for (auto& s : shards)
      self->request(s, 5s,
                    lbfgs_vec_msg{static_cast<std::uint8_t>(c.kind), c.a, c.b,
                                  real{c.alpha}})
          .receive([&](real r) { sum += r.value; },
                   [&](caf::error& e) { FAIL(self->system().render(e)); });
    return sum;
  }

  /// A pass at x + t d: the workers' part (read the point, one gradient
  /// sum per portion, each sent twice: the second is a backup's twin), then
  /// the sum on the shards. Returns f at the point.
  double pass_at(double t) {
    ++pass;
    for (auto& s : shards)
      self->request(s, 5s, point_atom::value, pass, real{t})
          .receive([](ack_atom) {},
                   [&](caf::error& e) { FAIL(self->system().render(e)); });
    std::vector<double> x(prob.x_star.size());
    for (std::size_t k = 0; k < shards.size(); ++k)
      self->request(shards[k], 5s, point_atom::value)
          .receive(
              [&](lbfgs_point_msg& point) {
                CHECK(point.pass == pass);
                auto v = unpack_doubles(point.values);
                std::copy(v.begin(), v.end(), x.begin() + ranges[k].offset);
              },
              [&](caf::error& e) { FAIL(self->system().render(e)); });
    auto m = static_cast<std::size_t>(prob.y.size());
    double f = 0;
    std::vector<double> g(x.size());
    for (std::size_t p = 0; p < portions; ++p) {
      std::uint64_t samples = 0;
      auto loss = test::logreg_portion(prob, portions, p, x.data(), g.data(),
                                       samples);
      f += loss / static_cast<double>(m);
      for (int copy = 0; copy < 2; ++copy)
        for (std::size_t k = 0; k < shards.size(); ++k)
          self->request(shards[k], 5s,
                        lbfgs_grad_msg{pass, std::uint64_t{p}, samples,
                                       pack_doubles(g.data() + ranges[k].offset,
                                                    ranges[k].size)})
              .receive(
                  [&](bool counted) {
                    CHECK(counted == (copy == 0));
                    duplicates_refused += counted ? 0 : 1;
                  },
                  [&](caf::error& e) { FAIL(self->system().render(e)); });
    }
    for (auto& s : shards)
      self->request(s, 5s, sum_atom::value, pass)
          .receive([&](std::uint64_t n) { CHECK(n == portions); },
                   [&](caf::error& e) { FAIL(self->system().render(e)); });
    return f;
  }

  std::vector<double> accept() {
    std::vector<double> dots(3, 0.0);
    for (auto& s : shards)
      self->request(s, 5s, accept_atom::value)
          .receive(
              [&](std::vector<real>& r) {
                for (std::size_t i = 0; i < 3; ++i)
                  dots[i] += r.at(i).value;
              },
              [&](caf::error& e) { FAIL(self->system().render(e)); });
    return dots;
  }

  /// L-BFGS as lbfgs_minimize, over the shards.
  std::vector<double> minimize(const optim::lbfgs_options& o,
                               std::size_t& iterations) {
    optim::lbfgs_history h;
    h.memory = o.memory;
    auto trial = algos::slot_trial_gradient(o.memory);
    double fx = pass_at(0.0);
    accept(); // g = grad f(x); no pair
    for (iterations = 0; iterations < o.max_iterations; ++iterations) {
      auto gg = dot_all(
          {optim::vector_command::op::dot, optim::slot_g, optim::slot_g, 0});
      if (std::sqrt(gg) < o.gradient_tolerance)
        break;
      optim::two_loop t{h};
      for (auto c = t.next(); c.kind != optim::vector_command::op::done;
           c = t.next()) {
        auto r = dot_all(c);
        if (c.kind == optim::vector_command::op::dot)
          t.result(r);
      }
      double slope = dot_all(
          {optim::vector_command::op::dot, optim::slot_g, optim::slot_d, 0});
      REQUIRE(slope < 0);
      double lo = 0, hi = std::numeric_limits<double>::infinity(), step = 1;
      double ft = fx;
      bool found = false;
      for (std::size_t ls = 0; ls < o.max_line_search; ++ls) {
        ft = pass_at(step);
        auto dslope = dot_all(
            {optim::vector_command::op::dot, trial, optim::slot_d, 0});
        if (!(ft <= fx + o.c1 * step * slope))
          hi = step;
        else if (dslope < o.c2 * slope)
          lo = step;
        else {
          found = true;
          break;
        }
        step = std::isinf(hi) ? 2 * lo : (lo + hi) / 2;
      }
      REQUIRE(found);
      auto pos = h.next_position();
      auto d = accept();
      if (h.push(d[0], d[1], d[2]))
        for (auto& s : shards)
          self->request(s, 5s, keep_atom::value, pos)
              .receive([](ack_atom) {},
                       [&](caf::error& e) { FAIL(self->system().render(e)); });
      fx = ft;
    }
    pass_at(0.0); // read x back
    std::vector<double> x(prob.x_star.size());
    for (std::size_t k = 0; k < shards.size(); ++k)
      self->request(shards[k], 5s, point_atom::value)
          .receive(
              [&](lbfgs_point_msg& point) {
                auto v = unpack_doubles(point.values);
                std::copy(v.begin(), v.end(), x.begin() + ranges[k].offset);
              },
              [&](caf::error& e) { FAIL(self->system().render(e)); });
    return x;
  }
};

} // namespace

TEST_CASE("L-BFGS over K shards by vector commands matches the serial "
          "reference to 1e-9 (T1), each portion counted once per pass (T2)") {
  const std::uint64_t seed = 411;
  std::cout << "sandblaster shards: seed " << seed << std::endl;
  optim::logreg_options lo;
  lo.m = 1024;
  lo.d = 12;
  lo.mu = 1e-2;
  lo.seed = seed;
  auto prob = optim::make_logreg(lo);
  optim::lbfgs_options o;
  o.memory = 4;
  o.max_iterations = 30;
  optim::objective_fn f
      = [&](const std::vector<double>& x, std::vector<double>& g) {
          g.resize(x.size());
          return optim::full_gradient(prob, x.data(), g.data());
        };
  auto serial = optim::lbfgs_minimize(f, std::vector<double>(lo.d, 0.0), o);
  for (std::uint32_t k : {1u, 3u}) {
    INFO(k << " shards");
    config cfg;
    caf::actor_system sys{cfg};
    caf::scoped_actor self{sys};
    auto init = std::make_shared<const std::vector<float>>(lo.d, 0.0f);
    driver drv{self, {}, optim::balanced_split(lo.d, k), prob, 8};
    for (std::uint32_t i = 0; i < k; ++i)
      drv.shards.push_back(
          sys.spawn(algos::lbfgs_shard,
                    algos::lbfgs_shard_config{i, drv.ranges[i], init, o.memory,
                                              self->address()}));
    std::size_t iterations = 0;
    auto x = drv.minimize(o, iterations);
    double worst = 0;
    for (std::size_t i = 0; i < lo.d; ++i)
      worst = std::max(worst, std::abs(x[i] - serial.x[i]));
    std::cout << "  " << k << " shards: " << iterations << " iterations ("
              << serial.iterations << " serial), max |x - x_serial| = " << worst
              << std::endl;
    CHECK(iterations == serial.iterations);
    CHECK(worst < 1e-9);
    CHECK(drv.duplicates_refused == drv.pass * 8 * k);
    // A stale pass and a garbled vector are refused.
    self->request(drv.shards[0], 5s,
                  lbfgs_grad_msg{drv.pass - 1, 0, 1, std::string(8, '\0')})
        .receive([](bool counted) { CHECK_FALSE(counted); },
                 [&](caf::error& e) { FAIL(sys.render(e)); });
    self->request(drv.shards[0], 5s,
                  lbfgs_grad_msg{drv.pass, 99, 1, std::string(7, '\0')})
        .receive([](bool counted) { CHECK_FALSE(counted); },
                 [&](caf::error& e) { FAIL(sys.render(e)); });
    for (auto& s : drv.shards)
      self->send_exit(s, caf::exit_reason::user_shutdown);
  }
}
