// The check macro (optim/check.hpp): a failed check throws std::logic_error
// naming this file, the line, the condition and the message; a passing one
// does not evaluate the message.

#include <stdexcept>
#include <string>

#include <catch2/catch.hpp>

#include "optim/check.hpp"
#include "optim/lbfgs.hpp"

TEST_CASE("a failed check names the file, the line, the condition and the "
          "message") {
  int three = 3;
  int line = 0;
  std::string what;
  try {
    line = __LINE__ + 1;
    TROUPE_CHECK(three == 4, "three is " + std::to_string(three));
  } catch (const std::logic_error& e) {
    what = e.what();
  }
  CHECK(what
        == "optim/check_test.cpp:" + std::to_string(line)
               + ": check failed: three == 4: three is 3");
}

TEST_CASE("a passing check evaluates nothing but its condition") {
  int evaluated = 0;
  auto message = [&] {
    ++evaluated;
    return std::string{"never"};
  };
  TROUPE_CHECK(1 + 1 == 2, message());
  CHECK(evaluated == 0);
}

TEST_CASE("the project's invariant checks use the macro: a two-loop asked "
          "for its next command before the dot's result") {
  troupe::optim::lbfgs_history h;
  h.memory = 2;
  REQUIRE(h.push(1.0, 2.0, 1.0));
  troupe::optim::two_loop t{h};
  t.next(); // q = g
  t.next(); // a dot: its result is due
  try {
    t.next();
    FAIL("no check failed");
  } catch (const std::logic_error& e) {
    std::string what = e.what();
    CHECK_THAT(what, Catch::StartsWith("optim/lbfgs.cpp:")
                         && Catch::Contains(": check failed: !waiting_: "
                                            "two_loop: the dot's result is "
                                            "missing"));
  }
}
