// A node agent's refusals arrive as typed errors (messages/errors.hpp): a
// second setup is errc::busy, a spec that cannot be built errc::invalid_job
// naming the reason, a spawn before setup errc::spawn_failed.

#include <chrono>
#include <stdexcept>
#include <string>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/io/middleman.hpp>
#include <caf/make_message.hpp>
#include <caf/scoped_actor.hpp>
#include <catch2/catch.hpp>

#include "actors/node_agent.hpp"
#include "messages/errors.hpp"
#include "messages/registry.hpp"
#include "test_config.hpp"

using namespace troupe;
using namespace troupe::messages;
using namespace std::chrono_literals;

namespace {

using config = test::node_test_config;

/// An agent obeying this process, whose build fails for the spec "bad".
actors::node_actor spawn_agent(caf::actor_system& sys) {
  actors::node_agent_config c;
  c.node_name = "agent-test:1";
  c.coordinator = sys.node();
  c.build = [](const std::string& spec) {
    if (spec == "bad")
      throw std::invalid_argument("unknown model 'bad'");
    return actors::built_job{{}, "fp"};
  };
  return sys.spawn(actors::node_agent, c);
}

/// The error answering a setup with `spec` (none if it succeeded).
caf::error setup(caf::scoped_actor& self, const actors::node_actor& agent,
                 const std::string& spec) {
  caf::error out;
  self->request(agent, 10s, setup_atom::value, spec)
      .receive([](std::string&) {},
               [&](caf::error& err) { out = std::move(err); });
  return out;
}

} // namespace

TEST_CASE("a node agent's refusals are typed errors") {
  config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  auto agent = spawn_agent(sys);
  caf::error spawn_error;
  self->request(agent, 10s, spawn_atom::value, std::string{"shard"},
                caf::make_message(std::uint32_t{0}))
      .receive([](caf::actor&) { FAIL("spawned a shard before setup"); },
               [&](caf::error& err) { spawn_error = std::move(err); });
  INFO(sys.render(spawn_error));
  CHECK(spawn_error == errc::spawn_failed);
  CHECK(context_of(spawn_error) == "spawn before setup");
  auto bad = setup(self, agent, "bad");
  INFO(sys.render(bad));
  CHECK(bad == errc::invalid_job);
  CHECK(sys.render(bad)
        == "troupe:invalid_job: cannot build the job: unknown model 'bad'");
  CHECK_FALSE(setup(self, agent, "good"));
  auto again = setup(self, agent, "good");
  INFO(sys.render(again));
  CHECK(again == errc::busy);
  CHECK(context_of(again) == "this node already takes part in a job");
  self->send_exit(agent, caf::exit_reason::user_shutdown);
}
