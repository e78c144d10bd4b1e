// Who may call what, for the job's roles (docs/deployment.md): a peer on
// another node may not stop the coordinator or take its result. Two actor
// systems of this process (distinct CAF nodes) connected over 127.0.0.1.

#include <chrono>
#include <iostream>
#include <string>

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "actors/coordinator.hpp"
#include "harness.hpp"
#include "messages/errors.hpp"
#include "net/system.hpp"

using namespace troupe;
using namespace troupe::messages;
using namespace std::chrono_literals;

namespace {

struct config : net::link_config {
  config() : net::link_config(net::link_options{}, 2) {
    set("logger.console", caf::atom("none"));
  }
};

} // namespace

TEST_CASE("the coordinator obeys stop and result from its own process only",
          "[net][authz]") {
  const std::uint64_t seed = 7;
  std::cout << "seed " << seed << std::endl;
  // 2 workers x 200 steps of at least 2 ms: the job runs for 0.2 s or more.
  auto job
      = test::lsq_job(test::lsq_512x20(seed), 2, 1, "sgd", 0.01, 8, 200, seed);
  job.step_delays.assign(2, std::chrono::microseconds{2000});
  config cfg_a, cfg_b;
  caf::actor_system a{cfg_a}, b{cfg_b};
  REQUIRE(a.node() != b.node());
  auto coord = a.spawn(actors::coordinator, std::move(job));
  auto port = a.middleman().publish(coord, 0, "127.0.0.1");
  REQUIRE(port);
  auto remote = b.middleman().remote_actor<actors::coordinator_actor>(
      "127.0.0.1", *port);
  REQUIRE(remote);
  caf::scoped_actor stranger{b};
  stranger->send(*remote, stop_atom::value);
  // Answered after the stop (same link, in order): refused, no result.
  stranger->request(*remote, 10s, result_atom::value)
      .receive([&](std::string&) { FAIL("the result went to another node"); },
               [&](caf::error& err) {
                 INFO(b.render(err));
                 CHECK(err == errc::not_allowed);
                 CHECK_THAT(b.render(err), Catch::Contains("'result'"));
               });
  // The job ran to its end; its own process gets the result.
  caf::scoped_actor self{a};
  nlohmann::json out;
  self->request(coord, 60s, result_atom::value)
      .receive([&](std::string& text) { out = nlohmann::json::parse(text); },
               [&](caf::error& err) { FAIL("no result: " << a.render(err)); });
  INFO(out.dump());
  CHECK(out["stop_reason"] == "steps done");
}
