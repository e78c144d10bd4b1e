// A Sandblaster L-BFGS shard's checkpoint state (issue [11]): its driver
// gets the state file (x, g, every history slot, the pass) and a fresh
// shard loaded from it holds the same vectors bit for bit; anyone else is
// refused; a file of another shard, or not a state file, is refused naming
// the file.

#include <chrono>
#include <iostream>

#include <caf/all.hpp>
#include <catch2/catch.hpp>

#include "algos/sandblaster/lbfgs_shard.hpp"
#include "messages/errors.hpp"
#include "messages/registry.hpp"
#include "test_config.hpp"

using namespace troupe;
using namespace troupe::messages;
using namespace std::chrono_literals;

namespace {

using config = test::typed_config<>;

using vop = optim::vector_command::op;

/// Runs a vector command on `s` as `self`; the answer (a dot's sum).
double command(caf::scoped_actor& self, const algos::lbfgs_shard_actor& s,
               vop op, std::uint32_t a, std::uint32_t b, double alpha = 0) {
  double out = 0;
  self->request(s, 5s,
                lbfgs_vec_msg{static_cast<std::uint8_t>(op), a, b, real{alpha}})
      .receive([&](real r) { out = r.value; },
               [&](caf::error& e) { FAIL(self->system().render(e)); });
  return out;
}

/// The shard's answer to save, or the error's text.
std::string save(caf::scoped_actor& self, const algos::lbfgs_shard_actor& s,
                 bool& ok) {
  std::string out;
  self->request(s, 5s, save_atom::value)
      .receive(
          [&](std::string& bytes) {
            ok = true;
            out = std::move(bytes);
          },
          [&](caf::error& e) {
            ok = false;
            out = self->system().render(e);
          });
  return out;
}

/// The shard's answer to resume: empty, or the error's text.
std::string resume(caf::scoped_actor& self, const algos::lbfgs_shard_actor& s,
                   const std::string& bytes) {
  std::string out;
  self->request(s, 5s, resume_atom::value, bytes)
      .receive([](ack_atom) {},
               [&](caf::error& e) { out = self->system().render(e); });
  return out;
}

} // namespace

TEST_CASE("an L-BFGS shard's state goes to its driver alone and loads back "
          "bit for bit") {
  config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor driver{sys};
  caf::scoped_actor other{sys};
  auto init = std::make_shared<const std::vector<float>>(
      std::vector<float>{0.5f, -1.25f, 3.0f, 0.125f, -0.75f, 2.5f, 1.0f});
  const std::size_t memory = 2;
  auto make = [&](std::uint32_t index, optim::slice range) {
    algos::lbfgs_shard_config c;
    c.index = index;
    c.range = range;
    c.init = init;
    c.memory = memory;
    c.driver = driver->address();
    return sys.spawn(algos::lbfgs_shard, c);
  };
  auto a = make(0, {0, 4});
  // State of its own: g = x / 3, s_1 = x + g, y_0 = 7 g.
  command(driver, a, vop::copy, optim::slot_x, optim::slot_g);
  command(driver, a, vop::scale, optim::slot_g, 0, 1.0 / 3);
  command(driver, a, vop::copy, optim::slot_x, optim::slot_s(1));
  command(driver, a, vop::axpy, optim::slot_g, optim::slot_s(1), 1.0);
  command(driver, a, vop::axpy, optim::slot_g, optim::slot_y(0), 7.0);
  bool ok = false;
  auto refused = save(other, a, ok);
  CHECK_FALSE(ok);
  CHECK_THAT(refused, Catch::Contains("save") && Catch::Contains("its driver"));
  auto bytes = save(driver, a, ok);
  REQUIRE(ok);

  auto b = make(0, {0, 4});
  CHECK_THAT(resume(other, b, bytes), Catch::Contains("its driver"));
  REQUIRE(resume(driver, b, bytes).empty());
  using pair = std::pair<std::uint32_t, std::uint32_t>;
  for (auto [i, j] :
       {pair{optim::slot_x, optim::slot_x}, pair{optim::slot_g, optim::slot_g},
        pair{optim::slot_s(1), optim::slot_s(1)},
        pair{optim::slot_y(0), optim::slot_g},
        pair{optim::slot_s(0), optim::slot_s(0)}}) {
    INFO("slots " << i << " and " << j);
    CHECK(command(driver, b, vop::dot, i, j)
          == command(driver, a, vop::dot, i, j));
  }
  // Its point is x again, and the result is x.
  for (auto* s : {&a, &b}) {
    lbfgs_point_msg x, p;
    driver->request(*s, 5s, result_atom::value)
        .receive([&](lbfgs_point_msg& m) { x = m; },
                 [&](caf::error& e) { FAIL(sys.render(e)); });
    driver->request(*s, 5s, point_atom::value)
        .receive([&](lbfgs_point_msg& m) { p = m; },
                 [&](caf::error& e) { FAIL(sys.render(e)); });
    CHECK(x.values == p.values);
    CHECK(unpack_doubles(x.values)
          == std::vector<double>{0.5, -1.25, 3.0, 0.125});
  }

  // Another shard's file, and bytes that are no state file.
  auto c = make(1, {4, 3});
  auto theirs = save(driver, c, ok);
  REQUIRE(ok);
  auto why = resume(driver, b, theirs);
  std::cout << "another shard's file: " << why << std::endl;
  CHECK_THAT(why, Catch::Contains("shard-0.state")
                      && Catch::Contains("'index' is 1 in the file, 0 here"));
  why = resume(driver, b, "not a state file");
  CHECK_THAT(why, Catch::Contains("shard-0.state"));
  for (auto* s : {&a, &b, &c})
    caf::anon_send_exit(*s, caf::exit_reason::user_shutdown);
}
