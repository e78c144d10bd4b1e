// The join service's refusals arrive as errc::join_refused whose context is
// the reason the node prints (a wrong token, a node whose setup failed,
// with the agent's own typed error in it); an admitted node gets an ack.
// One process: the registrar and the node agent are local actors.

#include <chrono>
#include <stdexcept>
#include <string>

#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>
#include <catch2/catch.hpp>

#include "actors/node_agent.hpp"
#include "messages/errors.hpp"
#include "net/registrar.hpp"
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

hello_msg hello_with(std::string token) {
  net::link_options link;
  return {wire_version,        "join-test:1",    std::move(token), 1, 0,
          link.heartbeat_ms(), link.timeout_ms()};
}

/// The answer to a join: none if admitted, else the error.
caf::error join(caf::scoped_actor& self, const net::registrar_actor& reg,
                const hello_msg& hello, const caf::actor& agent) {
  caf::error out = caf::make_error(caf::sec::request_timeout);
  self->request(reg, 10s, join_atom::value, hello, agent)
      .receive([&](ack_atom) { out = caf::none; },
               [&](caf::error& err) { out = std::move(err); });
  return out;
}

} // namespace

TEST_CASE("a refused join is errc::join_refused with the reason") {
  config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  net::link_options link;
  net::registrar_config rc;
  rc.expect = 2;
  rc.token = "right";
  rc.heartbeat_ms = link.heartbeat_ms();
  rc.timeout_ms = link.timeout_ms();
  rc.spec = "the spec";
  rc.fingerprint = "fp";
  rc.setup_timeout = 10s;
  auto reg = sys.spawn(net::registrar, rc);
  // Agents of this process: one cannot build the job, one can.
  auto agent_for = [&](bool builds) {
    actors::node_agent_config c;
    c.node_name = "join-test:1";
    c.coordinator = sys.node();
    c.build = [builds](const std::string&) {
      if (!builds)
        throw std::runtime_error("no data at /nowhere");
      return actors::built_job{{}, "fp"};
    };
    return caf::actor_cast<caf::actor>(sys.spawn(actors::node_agent, c));
  };
  auto broken = agent_for(false);
  auto good = agent_for(true);
  auto wrong = join(self, reg, hello_with("guess"), good);
  INFO(sys.render(wrong));
  CHECK(wrong == errc::join_refused);
  CHECK(context_of(wrong) == "wrong join token");
  auto failed = join(self, reg, hello_with("right"), broken);
  INFO(sys.render(failed));
  CHECK(failed == errc::join_refused);
  CHECK(context_of(failed)
        == "the node could not set the job up: troupe:invalid_job: cannot "
           "build the job: no data at /nowhere");
  CHECK_FALSE(join(self, reg, hello_with("right"), good));
  for (auto& a : {broken, good})
    self->send_exit(a, caf::exit_reason::user_shutdown);
  self->send_exit(reg, caf::exit_reason::user_shutdown);
}
