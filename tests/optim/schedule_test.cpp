#include <cmath>
#include <stdexcept>
#include <string>

#include <catch2/catch.hpp>

#include "optim/schedule.hpp"
#include "tolerances.hpp"

using namespace troupe::optim;
using troupe::test::hand_rel;

namespace {

schedule_options named(const std::string& name, double base_lr) {
  schedule_options opts;
  opts.name = name;
  opts.base_lr = base_lr;
  return opts;
}

} // namespace

TEST_CASE("constant schedule") {
  schedule s{named("constant", 0.05)};
  CHECK(s.lr(0) == 0.05);
  CHECK(s.lr(1) == 0.05);
  CHECK(s.lr(1000000) == 0.05);
  CHECK(s.options().name == "constant");
}

TEST_CASE("step schedule: base * gamma^floor(step / step_size)") {
  auto opts = named("step", 0.1);
  opts.step_size = 10;
  opts.gamma = 0.5;
  schedule s{opts};
  CHECK(s.lr(0) == Approx(0.1).epsilon(hand_rel));
  CHECK(s.lr(9) == Approx(0.1).epsilon(hand_rel));
  CHECK(s.lr(10) == Approx(0.05).epsilon(hand_rel));
  CHECK(s.lr(19) == Approx(0.05).epsilon(hand_rel));
  CHECK(s.lr(25) == Approx(0.025).epsilon(hand_rel));
  CHECK(s.lr(100) == Approx(0.1 / 1024).epsilon(hand_rel));
}

TEST_CASE("cosine schedule: from base_lr down to min_lr at total_steps") {
  auto opts = named("cosine", 1.0);
  opts.min_lr = 0.1;
  opts.total_steps = 100;
  schedule s{opts};
  CHECK(s.lr(0) == Approx(1.0).epsilon(hand_rel));
  // 0.1 + 0.9 * (1 + cos(pi / 4)) / 2
  CHECK(s.lr(25) == Approx(0.8681980515339464).epsilon(hand_rel));
  CHECK(s.lr(50) == Approx(0.55).epsilon(hand_rel));
  CHECK(s.lr(100) == Approx(0.1).epsilon(hand_rel));
  CHECK(s.lr(1000) == Approx(0.1).epsilon(hand_rel));
  for (std::size_t t = 1; t <= 100; ++t)
    CHECK(s.lr(t) < s.lr(t - 1));
}

TEST_CASE("linear warm-up multiplies by (step + 1) / warmup_steps") {
  SECTION("constant") {
    auto opts = named("constant", 0.4);
    opts.warmup_steps = 4;
    schedule s{opts};
    CHECK(s.lr(0) == Approx(0.1).epsilon(hand_rel));
    CHECK(s.lr(1) == Approx(0.2).epsilon(hand_rel));
    CHECK(s.lr(2) == Approx(0.3).epsilon(hand_rel));
    CHECK(s.lr(3) == Approx(0.4).epsilon(hand_rel));
    CHECK(s.lr(4) == Approx(0.4).epsilon(hand_rel));
  }
  SECTION("on top of a step schedule") {
    auto opts = named("step", 1.0);
    opts.step_size = 2;
    opts.gamma = 0.1;
    opts.warmup_steps = 3;
    schedule s{opts};
    CHECK(s.lr(0) == Approx(1.0 / 3).epsilon(hand_rel));
    CHECK(s.lr(1) == Approx(2.0 / 3).epsilon(hand_rel));
    CHECK(s.lr(2) == Approx(0.1).epsilon(hand_rel)); // decayed, warm-up done
    CHECK(s.lr(3) == Approx(0.1).epsilon(hand_rel));
  }
  SECTION("on top of cosine") {
    auto opts = named("cosine", 1.0);
    opts.total_steps = 10;
    opts.warmup_steps = 2;
    schedule s{opts};
    auto cosine_1 = (1 + std::cos(3.14159265358979323846 / 10)) / 2;
    CHECK(s.lr(0) == Approx(0.5).epsilon(hand_rel));
    CHECK(s.lr(1) == Approx(cosine_1).epsilon(hand_rel));
  }
}

TEST_CASE("bad options are rejected, naming the option") {
  CHECK_THROWS_WITH(schedule{named("constant", -0.1)},
                    Catch::Contains("base_lr"));
  auto opts = named("step", 0.1);
  opts.step_size = 0;
  CHECK_THROWS_WITH(schedule{opts}, Catch::Contains("step_size"));
  opts = named("step", 0.1);
  opts.gamma = -2;
  CHECK_THROWS_WITH(schedule{opts}, Catch::Contains("gamma"));
  opts = named("cosine", 0.1);
  opts.total_steps = 0;
  CHECK_THROWS_WITH(schedule{opts}, Catch::Contains("total_steps"));
  opts = named("cosine", 0.1);
  opts.total_steps = 10;
  opts.min_lr = 0.2;
  CHECK_THROWS_WITH(schedule{opts}, Catch::Contains("min_lr"));
  try {
    schedule{named("exponential", 0.1)};
    FAIL("no exception for an unknown schedule");
  } catch (const std::invalid_argument& e) {
    std::string what = e.what();
    CHECK_THAT(what, Catch::Contains("unknown schedule 'exponential'"));
    for (const auto& name : schedule_names())
      CHECK_THAT(what, Catch::Contains(name));
  }
  // Options a schedule does not use are not checked.
  opts = named("constant", 0.1);
  opts.step_size = 0;
  opts.total_steps = 0;
  CHECK_NOTHROW(schedule{opts});
}
