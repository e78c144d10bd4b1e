// The project's error codes (messages/errors.hpp): rendered by the actor
// system as "troupe:CODE: context", compared by code, each with its own
// name, and the same after a trip through CAF's serializer.

#include <set>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>
#include <caf/result.hpp>
#include <catch2/catch.hpp>

#include "messages/errors.hpp"
#include "messages/registry.hpp"

using namespace troupe::messages;

namespace {

struct config : caf::actor_system_config {
  config() {
    register_types(*this);
    set("logger.console", caf::atom("none"));
  }
};

const std::vector<errc> all_codes{
    errc::not_allowed,   errc::join_refused, errc::busy,  errc::invalid_job,
    errc::spawn_failed,  errc::bad_request,  errc::stale, errc::role_lost,
    errc::worker_failed, errc::diverged};

} // namespace

TEST_CASE("the actor system renders a troupe error as troupe:CODE: context") {
  config cfg;
  caf::actor_system sys{cfg};
  auto err = make_error(errc::join_refused, "wrong join token");
  CHECK(sys.render(err) == "troupe:join_refused: wrong join token");
  CHECK(sys.render(make_error(errc::not_allowed)) == "troupe:not_allowed");
  // caf::make_error and the error constructor work as in later CAF.
  CHECK(sys.render(caf::make_error(errc::busy, std::string{"in a job"}))
        == "troupe:busy: in a job");
  CHECK(context_of(err) == "wrong join token");
  CHECK(context_of(caf::make_error(caf::sec::runtime_error, "x")).empty());
}

TEST_CASE("a troupe error compares equal to its code only") {
  auto err = make_error(errc::role_lost, "every worker was lost");
  CHECK(err == errc::role_lost);
  CHECK(err != errc::stale);
  CHECK(err.category() == errc_category);
  CHECK(err
        != caf::make_error(caf::sec::runtime_error, "every worker was "
                                                    "lost"));
  caf::result<int> res{errc::stale};
  CHECK(res.flag == caf::rt_error);
  CHECK(res.err == errc::stale);
}

TEST_CASE("every code has its own name and keeps its code on the wire") {
  config cfg;
  caf::actor_system sys{cfg};
  std::set<std::string> names;
  for (auto code : all_codes) {
    auto name = to_string(code);
    INFO(name);
    CHECK(name.find("error") == std::string::npos);
    CHECK(names.insert(name).second);
    std::vector<char> buf;
    caf::binary_serializer sink{sys, buf};
    auto sent = make_error(code, "context of " + name);
    REQUIRE_FALSE(sink(sent));
    caf::error received;
    caf::binary_deserializer source{sys, buf};
    REQUIRE_FALSE(source(received));
    CHECK(received == code);
    CHECK(context_of(received) == "context of " + name);
  }
}
