// A node agent ends after its hosted roles, never before: the process tears
// its actor system down once the agent is gone, and a detached role still
// ending then can keep its thread waiting forever at shutdown (a down
// message from it left in the stopped BASP broker's mailbox holds it; the
// node of net/cluster_lbfgs hung so). A role that outlives the agent's stop
// grace is left behind, named in the log.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <caf/all.hpp>
#include <caf/io/middleman.hpp>
#include <catch2/catch.hpp>

#include "actors/node_agent.hpp"
#include "actors/role_registry.hpp"
#include "messages/errors.hpp"
#include "messages/registry.hpp"
#include "test_config.hpp"

using namespace troupe;
using namespace troupe::actors;
using namespace troupe::messages;
using namespace std::chrono_literals;

namespace {

using config = test::node_test_config;

/// A detached role that, asked (step, ms), is busy for `ms` milliseconds
/// (an exit waits until it is done), and asked (leave) fails.
caf::behavior busy_role(caf::event_based_actor* self) {
  return {
      [](step_atom, std::uint32_t ms) {
        std::this_thread::sleep_for(std::chrono::milliseconds{ms});
      },
      [self](leave_atom) {
        self->quit(make_error(errc::worker_failed, "a role that fails"));
      },
  };
}

/// A node agent obeying this process, set up with an empty job, whose only
/// role is "busy" (busy_role, detached like an L-BFGS worker).
node_actor spawn_agent(caf::actor_system& sys, std::chrono::milliseconds grace
                                               = std::chrono::seconds{30}) {
  auto roles = std::make_shared<role_registry>();
  roles->register_role<std::uint32_t>(
      "busy", [](role_context& ctx, const std::uint32_t&) {
        return ctx.host(ctx.self()->spawn<caf::detached>(busy_role));
      });
  node_agent_config c;
  c.node_name = "agent-stop-test:1";
  c.coordinator = sys.node();
  c.build = [](const std::string&) { return built_job{{}, "fp"}; };
  c.roles = std::move(roles);
  c.stop_grace = grace;
  auto agent = sys.spawn(node_agent, c);
  caf::scoped_actor self{sys};
  self->request(agent, 10s, setup_atom::value, std::string{"job"})
      .receive([](std::string&) {},
               [&](caf::error& err) { FAIL(sys.render(err)); });
  return agent;
}

/// A hosted "busy" role (monitored by `self`).
caf::actor spawn_busy(caf::scoped_actor& self, const node_actor& agent) {
  caf::actor out;
  self->request(agent, 10s, spawn_atom::value, std::string{"busy"},
                caf::make_message(std::uint32_t{0}))
      .receive([&](caf::actor& h) { out = std::move(h); },
               [&](caf::error& err) { FAIL(self->system().render(err)); });
  REQUIRE(out);
  self->monitor(out);
  return out;
}

/// The sources of the next `n` down messages `self` receives, in order.
std::vector<caf::actor_addr> downs(caf::scoped_actor& self, std::size_t n) {
  std::vector<caf::actor_addr> out;
  for (std::size_t i = 0; i < n; ++i)
    self->receive([&](caf::down_msg& d) { out.push_back(d.source); },
                  caf::after(30s) >> [&] { FAIL("no down message"); });
  return out;
}

} // namespace

TEST_CASE("a stopped node agent ends after its busy detached role") {
  config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  auto agent = spawn_agent(sys);
  auto role = spawn_busy(self, agent);
  self->monitor(agent);
  self->send(role, step_atom::value, std::uint32_t{400});
  self->send(agent, stop_atom::value, std::string{"the job is over"});
  // Still waiting for its role: it refuses new ones.
  caf::error refused;
  self->request(agent, 10s, spawn_atom::value, std::string{"busy"},
                caf::make_message(std::uint32_t{0}))
      .receive([](caf::actor&) { FAIL("spawned a role while stopping"); },
               [&](caf::error& err) { refused = std::move(err); });
  CHECK(refused == errc::spawn_failed);
  CHECK(context_of(refused) == "spawn while stopping");
  auto order = downs(self, 2);
  CHECK(order == std::vector<caf::actor_addr>{role.address(), agent.address()});
}

TEST_CASE("a node agent whose role fails ends after its other roles") {
  config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  auto agent = spawn_agent(sys);
  auto failing = spawn_busy(self, agent);
  auto busy = spawn_busy(self, agent);
  self->monitor(agent);
  self->send(busy, step_atom::value, std::uint32_t{400});
  self->send(failing, leave_atom::value);
  auto order = downs(self, 3);
  CHECK(order
        == std::vector<caf::actor_addr>{failing.address(), busy.address(),
                                        agent.address()});
}

TEST_CASE("a node agent ends without a role that outlives its stop grace") {
  config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  auto agent = spawn_agent(sys, std::chrono::milliseconds{100});
  auto role = spawn_busy(self, agent);
  self->monitor(agent);
  self->send(role, step_atom::value, std::uint32_t{2000});
  self->send(agent, stop_atom::value, std::string{"the job is over"});
  auto order = downs(self, 2);
  CHECK(order == std::vector<caf::actor_addr>{agent.address(), role.address()});
}
