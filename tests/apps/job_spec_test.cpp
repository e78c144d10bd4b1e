// The job spec a node reads (apps/job_spec.cpp): what it accepts, what it
// refuses, and that a spec written from accepted options reads back.

#include <stdexcept>
#include <string>

#include <caf/config_option_set.hpp>
#include <caf/config_value.hpp>
#include <catch2/catch.hpp>

#include "algos/downpour/downpour.hpp"
#include "algos/registry.hpp"
#include "apps/train_command.hpp"

using namespace troupe::apps;

TEST_CASE("a job spec round-trips through to_spec and from_spec") {
  train_options o;
  o.algo = "downpour";
  o.workers = 4;
  troupe::apps::algorithm_options<troupe::algos::downpour>(o).staleness_bound
      = 2;
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
  auto o = from_spec(R"({"algo": "downpour", "staleness_bound": -1, "lr": 1})");
  CHECK(algorithm_options<troupe::algos::downpour>(o).staleness_bound == -1);
  CHECK(o.lr == 1.0);
}

TEST_CASE("text that is not a JSON object is not a job spec") {
  for (std::string bad : {"", "[]", "7", "{", "null"})
    CHECK_THROWS_AS(from_spec(bad), std::invalid_argument);
}

namespace {

/// A value for an option unlike its default (by its current value's type).
caf::config_value changed(const caf::config_option& opt) {
  auto v = opt.get();
  REQUIRE(v);
  if (auto* i = caf::get_if<caf::config_value::integer>(&*v))
    return caf::config_value{*i + 3};
  if (auto* b = caf::get_if<caf::config_value::boolean>(&*v))
    return caf::config_value{!*b};
  if (auto* r = caf::get_if<caf::config_value::real>(&*v))
    return caf::config_value{*r + 0.375};
  if (auto* s = caf::get_if<caf::config_value::string>(&*v))
    return caf::config_value{*s + "x"};
  FAIL("an option of a type the spec cannot carry");
  return {};
}

} // namespace

TEST_CASE("every option of every algorithm travels in the job spec") {
  for (const auto& entry : troupe::algos::registered_algorithms()) {
    INFO(entry.name);
    train_options o;
    o.algo = entry.name;
    select_algorithm(o);
    // Every option the spec carries, changed from its default.
    option_parser p{"test"};
    add_job_flags(p, o);
    o.algorithm->bind(p.options());
    std::size_t options = 0;
    for (const auto& opt : p.options()) {
      if (std::string{opt.long_name().data(), opt.long_name().size()}
          == "config")
        continue;
      opt.store(changed(opt));
      ++options;
    }
    auto spec = to_spec(o);
    auto back = from_spec(spec);
    CHECK(back.algo == entry.name);
    CHECK(to_spec(back) == spec);
    // Read back option by option: every value as it was set.
    option_parser q{"test"};
    add_job_flags(q, back);
    back.algorithm->bind(q.options());
    std::size_t compared = 0;
    for (const auto& opt : p.options())
      for (const auto& other : q.options())
        if (opt.full_name() == other.full_name()
            && std::string{opt.long_name().data(), opt.long_name().size()}
                   != "config") {
          INFO(std::string(opt.full_name().data(), opt.full_name().size()));
          CHECK(*opt.get() == *other.get());
          ++compared;
        }
    CHECK(compared == options);
  }
}

TEST_CASE("a job spec naming an option the algorithm does not have is "
          "refused") {
  for (std::string bad :
       {R"({"algo": "downpour", "tau": 4})", R"({"algo": "easgd", "peers": 2})",
        R"({"algo": "gossip"})"}) {
    INFO(bad);
    try {
      from_spec(bad);
      FAIL("accepted");
    } catch (const std::invalid_argument& e) {
      CHECK(std::string{e.what()}.rfind("not a job spec", 0) == 0);
    }
  }
}
