// The job spec a node reads (apps/job_spec.cpp): what it accepts, what it
// refuses, and that a spec written from accepted options reads back.

#include <stdexcept>
#include <string>

#include <catch2/catch.hpp>

#include "apps/train_command.hpp"

using namespace troupe::apps;

TEST_CASE("a job spec round-trips through to_spec and from_spec") {
  train_options o;
  o.algo = "downpour";
  o.workers = 4;
  o.staleness_bound = 2;
  o.lr = 0.05;
  auto spec = to_spec(o);
  CHECK(to_spec(from_spec(spec)) == spec);
}

TEST_CASE("a job spec with a float or a negative number for a count is "
          "refused, naming the field") {
  // 1e30 in an unsigned field was cast without a check (undefined
  // behaviour; found by tests/fuzz/job_spec_fuzz.cpp under UBSan).
  for (std::string bad : {R"({"threads": 1e30})", R"({"workers": 2.5})",
                          R"({"batch": -1})", R"({"seed": "7"})"}) {
    INFO(bad);
    try {
      from_spec(bad);
      FAIL("accepted");
    } catch (const std::invalid_argument& e) {
      std::string what = e.what();
      CHECK(what.rfind("not a job spec", 0) == 0);
    }
  }
  try {
    from_spec(R"({"threads": 1e30})");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string{e.what()}.find("threads") != std::string::npos);
  }
  // Signed fields keep their negative values; integers fit double fields.
  auto o = from_spec(R"({"staleness_bound": -1, "lr": 1})");
  CHECK(o.staleness_bound == -1);
  CHECK(o.lr == 1.0);
}

TEST_CASE("text that is not a JSON object is not a job spec") {
  for (std::string bad : {"", "[]", "7", "{", "null"})
    CHECK_THROWS_AS(from_spec(bad), std::invalid_argument);
}
